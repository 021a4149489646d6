"""Running git: a work tree and the git commands run in it, as plain subprocesses. GitPython was only a command
runner here, and importing it (which also runs ``git version``) took longer than all of ``sync --check``'s own
git work.

As GitPython did, commands run in the work tree with the caller's environment (so a hook's ``GIT_INDEX_FILE``
still applies) plus ``LC_ALL=C`` and ``LANGUAGE=C``, so git's messages are the English ones ``sync`` parses; text
output is UTF-8 (undecodable bytes kept as surrogates) without its final newline.
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Mapping
from pathlib import Path

_LOCALE = {"LANGUAGE": "C", "LC_ALL": "C"}


class GitError(Exception):
    """A git command exited non-zero; ``stdout`` and ``stderr`` are its output (final newline removed)."""

    def __init__(self, args: tuple[str, ...], status: int, stdout: str, stderr: str) -> None:
        super().__init__(f"'git {' '.join(args)}' exited {status}: {stderr.strip() or stdout.strip()}")
        self.status = status
        self.stdout = stdout
        self.stderr = stderr


class Repo:
    """A Git work tree (``working_tree_dir``, absolute, symlinks kept) and its commands."""

    def __init__(self, working_tree_dir: str) -> None:
        self.working_tree_dir = working_tree_dir

    def run_bytes(self, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None,
                  check: bool = True) -> bytes:
        """``git ARGS`` (``stdin`` on its standard input, ``env`` over the environment): its output, unchanged.
        A non-zero exit raises GitError, unless ``check`` is false."""
        proc = subprocess.run(["git", *args], cwd=self.working_tree_dir, env={**os.environ, **_LOCALE, **(env or {})},
                              input=stdin, stdin=None if stdin is not None else subprocess.DEVNULL,
                              capture_output=True, check=False)
        if check and proc.returncode:
            raise GitError(args, proc.returncode, _text(proc.stdout), _text(proc.stderr))
        return proc.stdout

    def run(self, *args: str, env: Mapping[str, str] | None = None, stdin: bytes | None = None,
            check: bool = True) -> str:
        """As ``run_bytes``, decoded, without the final newline."""
        return _text(self.run_bytes(*args, env=env, stdin=stdin, check=check))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape").removesuffix("\n")


def is_git_dir(folder: Path) -> bool:
    """Whether ``folder`` is a repository's own folder (a ``.git`` folder, or a bare repository)."""
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()


def work_tree(folder: Path) -> Path | None:
    """The Git work tree ``folder`` is in (the nearest folder holding ``.git``), or None."""
    return next((candidate for candidate in (folder, *folder.parents) if (candidate / ".git").exists()), None)
