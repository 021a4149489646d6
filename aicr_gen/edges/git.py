"""Running git: a work tree and the git commands run in it, as plain subprocesses. GitPython was only a command
runner here, and importing it (which also runs ``git version``) took longer than all of ``sync --check``'s own
git work.

As GitPython did, commands run in the work tree with the caller's environment (so a hook's ``GIT_INDEX_FILE``
still applies) plus ``LC_ALL=C`` and ``LANGUAGE=C``, so git's messages are the English ones ``sync`` parses; text
output is UTF-8 (undecodable bytes kept as surrogates) without its final newline.

``explain`` (and ``writing``, around what writes to the repository) says what a failure of the repository's file
system means (no space, read-only, no permission) and
when another git process holds the index lock, in one line; any other failure is a bug and stays one.
"""

from __future__ import annotations

import errno
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from aicr_gen.errors import AicrGenError, InvalidInputError, UnreachableError

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

    def git_dir(self) -> Path:
        """The repository's own folder of this work tree (a linked worktree's own one: its index lives there)."""
        return Path(self.run("rev-parse", "--absolute-git-dir"))


def _text(raw: bytes) -> str:
    return raw.decode("utf-8", "surrogateescape").removesuffix("\n")


def is_git_dir(folder: Path) -> bool:
    """Whether ``folder`` is a repository's own folder (a ``.git`` folder, or a bare repository)."""
    return (folder / "HEAD").is_file() and (folder / "objects").is_dir() and (folder / "refs").is_dir()


_FILE_SYSTEM = (
    ((errno.ENOSPC, errno.EDQUOT), ("No space left on device", "Disk quota exceeded"),
     "no space left on the device (or quota exceeded); free some space and rerun"),
    ((errno.EROFS,), ("Read-only file system",),
     "the file system is read-only; sync needs a writable clone"),
    ((errno.EACCES, errno.EPERM), ("Permission denied", "insufficient permission"),
     "permission denied; run as a user who can write the repository, or give a clone you own"),
)


def lock_held(root: str, lock: Path) -> UnreachableError:
    """Another git process holds ``lock`` (exit 3: rerun)."""
    return UnreachableError(f"{root}: another git process is writing the repository (it holds {lock}); rerun when "
                            "it is done, or remove that file if no git process is running")


def explain(err: BaseException, root: str) -> AicrGenError | None:
    """One clear error for a file-system failure in the repository at ``root`` (git's or our own: no space,
    read-only, no permission) or git's index lock held by another process; None for anything else."""
    if isinstance(err, GitError):
        said = err.stderr.strip() or err.stdout.strip()
        detail = next((line for line in said.splitlines() if line.startswith(("fatal:", "error:"))),
                      said.splitlines()[0] if said else "")
        held = re.search(r"Unable to create '([^']+[.]lock)': File exists", said)
        if held:
            return lock_held(root, Path(held.group(1)))
        for _codes, texts, fix in _FILE_SYSTEM:
            if any(text in said for text in texts):
                return InvalidInputError(f"{root}: {fix} (git: {detail})")
        return None
    if isinstance(err, OSError):
        for codes, _texts, fix in _FILE_SYSTEM:
            if err.errno in codes:
                return InvalidInputError(f"{root}: {fix} ({err.strerror}: {err.filename})")
    return None


@contextmanager
def writing(repo: Repo) -> Iterator[None]:
    """Turn a file-system failure while writing to the repository (no space, read-only, no permission, a lock
    another git process holds) into one clear error (``explain``); anything else stays a bug."""
    try:
        yield
    except (GitError, OSError) as err:
        found = explain(err, repo.working_tree_dir)
        if found is None:
            raise
        raise found from None
