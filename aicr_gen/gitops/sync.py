"""The Git edge of ``aicr-gen sync``: put a rendered tree at one path of a repository as exactly one commit.

The commit is built off to the side: the blobs are written to the object store, a temporary index
(``GIT_INDEX_FILE``) starts from HEAD's tree, only the managed path is replaced, and ``write-tree`` /
``commit-tree`` make the commit. Nothing the user sees changes until the single ``update-ref``; only then,
without ``--branch``, are the index entries and work-tree files under the managed path brought in line
(and on a failure there the ref, index and files are put back). Everything outside the path is untouched.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from io import BytesIO
from pathlib import Path
from typing import Any

from aicr_gen.errors import FindingsError, InvalidInputError, UnreachableError

EMPTY_SHA = "0" * 40


@dataclass(frozen=True)
class Result:
    """What a sync did: ``commit`` is None when the tree was up to date."""

    commit: str | None
    ref: str
    message: str = ""
    changed: list[str] = field(default_factory=list)


def open_repo(folder: str) -> Any:
    import git

    try:
        return git.Repo(folder)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        raise InvalidInputError(f"--repo {folder}: not a Git repository (run 'git init' there first)") from None


def _head(repo: Any) -> str:
    try:
        sha: str = repo.git.rev_parse("--verify", "-q", "HEAD^{commit}")
    except Exception:
        raise InvalidInputError(f"{repo.working_tree_dir}: HEAD has no commit yet; commit something first "
                                "(e.g. a README)") from None
    return sha


def blob_sha(data: bytes) -> str:
    """Git's object name of a blob with ``data``."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def committed(repo: Any, rev: str, path: str) -> dict[str, str]:
    """``rev``'s files below ``path``: path relative to it -> blob sha (empty when absent)."""
    out: str = repo.git.ls_tree("-r", "-z", rev, "--", f"{path}/")
    return _listing(out, path, sha_column=2)


def indexed(repo: Any, path: str) -> dict[str, str]:
    """The index's (staged) files below ``path``: path relative to it -> blob sha."""
    out: str = repo.git.ls_files("-s", "-z", "--", f"{path}/")
    return _listing(out, path, sha_column=1)


def _listing(out: str, path: str, sha_column: int) -> dict[str, str]:
    """``ls-tree``/``ls-files -s`` output (``-z``): blob entries below ``path`` -> their sha."""
    files: dict[str, str] = {}
    for entry in filter(None, out.split("\0")):
        meta, _, name = entry.partition("\t")
        fields = meta.split()
        if fields[1] != "commit" and name.startswith(f"{path}/"):
            files[name[len(path) + 1:]] = fields[sha_column]
    return files


def stale(have: Mapping[str, str], tree: Mapping[str, bytes], path: str) -> list[str]:
    """Files below ``path`` where ``have`` (relative path -> blob sha) differs from ``tree``, as
    'stale|missing|extra PATH' sorted by path."""
    out = [f"stale   {path}/{name}" for name, data in tree.items() if name in have and have[name] != blob_sha(data)]
    out += [f"missing {path}/{name}" for name in tree if name not in have]
    out += [f"extra   {path}/{name}" for name in have if name not in tree]
    return sorted(out, key=lambda line: line.split()[-1])


def check_managed(repo: Any, path: str) -> None:
    """Refuse a managed ``path`` that is (or passes through) a symlink in the work tree or in HEAD: writing
    there would land outside the managed folder."""
    parts = path.split("/")
    root = Path(repo.working_tree_dir)
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        listed: str = repo.git.ls_tree("HEAD", "--", prefix, with_exceptions=False)
        if (root / prefix).is_symlink() or listed.startswith("120000 "):
            raise InvalidInputError(f"managed path {path!r}: {prefix} is a symlink in the repository; aicr-gen "
                                    "never writes through links; point the path at a real folder")


def dirty(repo: Any, path: str) -> list[str]:
    """Uncommitted changes (staged, unstaged, untracked) below ``path``, as ``git status --porcelain`` lines."""
    out: str = repo.git.status("--porcelain", "--untracked-files=all", "--", f"{path}/")
    return [line for line in out.splitlines() if line.strip()]


def _store(repo: Any, data: bytes) -> str:
    from gitdb import IStream  # type: ignore[import-untyped]

    stream = repo.odb.store(IStream("blob", len(data), BytesIO(data)))
    return str(stream.hexsha.decode() if isinstance(stream.hexsha, bytes) else stream.hexsha)


def _feed(repo: Any, data: bytes, *args: str, env: Mapping[str, str] | None = None) -> str:
    """``git ARGS`` with ``data`` on its standard input (GitPython needs a real file there)."""
    with tempfile.TemporaryFile() as stdin:
        stdin.write(data)
        stdin.seek(0)
        out: str = repo.git.execute(["git", *args], istream=stdin, env=dict(env or {}))
    return out


def _write_tree(repo: Any, base: str, tree: Mapping[str, bytes], path: str) -> str:
    """The tree of ``base`` with ``path`` replaced by ``tree`` (built in a temporary index)."""
    handle, index = tempfile.mkstemp(prefix="aicr-gen-index-")
    os.close(handle)
    Path(index).unlink()
    env = {"GIT_INDEX_FILE": index}
    try:
        repo.git.read_tree(base, env=env)
        repo.git.rm("-r", "-q", "--cached", "--ignore-unmatch", "--", f"{path}/", env=env)
        lines = "".join(f"100644 {_store(repo, data)}\t{path}/{name}\n" for name, data in tree.items())
        _feed(repo, lines.encode(), "update-index", "--index-info", env=env)
        sha: str = repo.git.write_tree(env=env)
        return sha
    finally:
        Path(index).unlink(missing_ok=True)


def _commit(repo: Any, tree_sha: str, parent: str, message: str) -> str:
    return _feed(repo, message.encode(), "commit-tree", tree_sha, "-p", parent)


def _current_branch(repo: Any) -> str | None:
    try:
        name: str = repo.git.symbolic_ref("-q", "HEAD")
    except Exception:
        return None
    return name


def _prune(folder: Path) -> None:
    """Remove the folders below ``folder`` (and it) that became empty."""
    if not folder.is_dir():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(sub.iterdir()):
            sub.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()


def _align_worktree(repo: Any, new: str, path: str, old_files: Mapping[str, str], tree: Mapping[str, bytes],
                    *, force: bool) -> None:
    """Index and work tree below ``path`` as in commit ``new``."""
    root = Path(repo.working_tree_dir)
    repo.git.reset("-q", new, "--", f"{path}/")
    for name in old_files:
        if name not in tree:
            (root / path / name).unlink(missing_ok=True)
    _prune(root / path)
    if force:
        repo.git.clean("-fdq", "--", f"{path}/")
    repo.git.checkout(new, "--", f"{path}/")


def _restore_worktree(repo: Any, old: str, path: str, tree: Mapping[str, bytes], had_path: bool) -> None:
    root = Path(repo.working_tree_dir)
    repo.git.reset("-q", old, "--", f"{path}/")
    old_files = committed(repo, old, path)
    for name in tree:
        if name not in old_files:
            (root / path / name).unlink(missing_ok=True)
    _prune(root / path)
    if had_path:
        repo.git.checkout(old, "--", f"{path}/")


def sync(repo: Any, tree: Mapping[str, bytes], path: str, message: Callable[[list[str]], str], *,
         branch: str | None = None,
         force: bool = False, push: bool = False) -> Result:
    """Commit ``tree`` at ``path``: on HEAD's branch, or (``branch``) on a branch forked from HEAD without
    touching the checkout. No commit when nothing changed. Refuses a dirty ``path`` unless ``force``."""
    head = _head(repo)
    check_managed(repo, path)
    current = _current_branch(repo)
    target = f"refs/heads/{branch}" if branch else (current or "HEAD")
    on_checkout = branch is None or target == current
    if on_checkout:
        changes = dirty(repo, path)
        if changes and not force:
            raise FindingsError(f"{path} has uncommitted changes; commit or discard them, or rerun with --force:\n"
                                + "\n".join(f"  {line}" for line in changes))
    old_files = committed(repo, head, path)
    new_tree = _write_tree(repo, head, tree, path)
    head_tree: str = repo.git.rev_parse(f"{head}^{{tree}}")
    if not on_checkout:
        existing = repo.git.rev_parse("--verify", "-q", target, with_exceptions=False)
        if existing and repo.git.rev_parse(f"{existing}^{{tree}}") == new_tree and \
                repo.git.rev_parse("-q", "--verify", f"{existing}^", with_exceptions=False) == head:
            return Result(None, target)
    if new_tree == head_tree:
        if on_checkout and force:
            _align_worktree(repo, head, path, old_files, tree, force=force)
        return Result(None, target)
    changed = stale(old_files, tree, path)
    text = message(changed)
    sha = _commit(repo, new_tree, head, text)
    if not on_checkout:
        repo.git.update_ref("-m", "aicr-gen sync", target, sha)
    else:
        repo.git.update_ref("-m", "aicr-gen sync", target, sha, head)
        try:
            _align_worktree(repo, sha, path, old_files, tree, force=force)
        except BaseException:
            repo.git.update_ref("-m", "aicr-gen sync: rolled back", target, head, sha)
            _restore_worktree(repo, head, path, tree, bool(old_files))
            raise
    if push:
        _push(repo, target, sha)
    return Result(sha, target, text, changed)


def _push(repo: Any, target: str, sha: str) -> None:
    """Push ``target`` to origin; a refusal or an unreachable remote is exit 3 (the commit stays local)."""
    import git

    try:
        repo.git.push("--porcelain", "origin", f"{target}:{target}")
    except git.GitCommandError as err:
        lines = [line.strip().removeprefix("stderr:").strip(" '") for line in str(err.stderr).splitlines()]
        lines += [line.strip() for line in str(err.stdout).splitlines() if line.startswith("!")]
        reason = next((line for line in lines if line.startswith(("fatal:", "error:", "!"))),
                      next((line for line in lines if line), "no reason given"))
        raise UnreachableError(f"committed {sha[:12]} on {target}, but pushing it to origin failed ({reason}); "
                               "the commit is kept locally: "
                               f"fix the remote and run 'git push origin {target}'") from None
