"""The Git edge of ``aicr-gen sync``: put a rendered tree at one path of a repository as exactly one commit,
together with the spec (and its input files) it was rendered from when they live in the repository, so the
commit is self-consistent: ``sync --check`` passes at it.

The commit is built off to the side: the blobs are written to the object store (``git hash-object``, so SHA-1
and SHA-256 repositories alike), a temporary index (``GIT_INDEX_FILE``) starts from the base commit's tree, only
the managed path and the inputs are replaced, and ``write-tree`` / ``commit-tree`` make the commit. The base is
HEAD, or with ``--branch B`` the tip of B when it exists (the commit is appended to it; a new B forks from HEAD).
Nothing the user sees changes until the single ``update-ref``, which fails if the ref moved meanwhile; only then,
on the checked-out branch, are the index entries and work-tree files under the managed path brought in line (and
on a failure there the ref, index and files are put back). Everything else is untouched.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import NamedTuple

from aicr_gen.errors import FindingsError, InvalidInputError, UnreachableError
from aicr_gen.gitops.git import GitError, Repo, is_git_dir, work_tree
from aicr_gen.gitops.objects import blob_name, blob_names, committed, files_at


class Result(NamedTuple):
    """What a sync did: ``commit`` is None when the tree was up to date; ``changed`` lists the repository paths
    the commit changed."""

    commit: str | None
    ref: str
    message: str = ""
    changed: tuple[str, ...] = ()


def open_repo(folder: str) -> Repo:
    """The repository whose work tree holds ``folder`` (its root, from anywhere inside it)."""
    path = Path(os.path.abspath(folder))  # noqa: PTH100 - normalised, symlinks kept: the folder as the user named it
    if path.exists() and is_git_dir(path) and path.name != ".git":
        raise InvalidInputError(f"--repo {folder}: a bare repository has no work tree; give a clone's folder")
    root = work_tree(path) if path.exists() else None
    if root is None:
        raise InvalidInputError(f"--repo {folder}: not inside a Git work tree (run 'git init' there first)")
    return Repo(str(root))


def _head(repo: Repo) -> str:
    try:
        sha = repo.run("rev-parse", "--verify", "-q", "HEAD^{commit}")
    except GitError:
        raise InvalidInputError(f"{repo.working_tree_dir}: HEAD has no commit yet; commit something first "
                                "(e.g. a README)") from None
    return sha


def stale(have: Mapping[str, str], tree: Mapping[str, bytes], path: str) -> list[str]:
    """Files below ``path`` where ``have`` (relative path -> blob name) differs from ``tree``, as
    'stale|missing|extra PATH' sorted by path."""
    out = [f"stale   {path}/{name}" for name, data in tree.items()
           if name in have and blob_name(data, have[name]) != have[name]]
    out += [f"missing {path}/{name}" for name in tree if name not in have]
    out += [f"extra   {path}/{name}" for name in have if name not in tree]
    return sorted(out, key=lambda line: line.split()[-1])


def check_managed(repo: Repo, path: str, rev: str = "HEAD") -> None:
    """Refuse a managed ``path`` that is (or passes through) a symlink in the work tree or in ``rev``: writing
    there would land outside the managed folder."""
    parts = path.split("/")
    root = Path(repo.working_tree_dir)
    for end in range(1, len(parts) + 1):
        prefix = "/".join(parts[:end])
        listed = repo.run("ls-tree", rev, "--", prefix, check=False)
        if (root / prefix).is_symlink() or listed.startswith("120000 "):
            raise InvalidInputError(f"managed path {path!r}: {prefix} is a symlink in the repository; aicr-gen "
                                    "never writes through links; point the path at a real folder")


def dirty(repo: Repo, path: str) -> list[str]:
    """Uncommitted changes (staged, unstaged, untracked) below ``path``, as ``git status --porcelain`` lines."""
    out = repo.run("status", "--porcelain", "--untracked-files=all", "--", f"{path}/")
    return [line for line in out.splitlines() if line.strip()]


def _write_tree(repo: Repo, base: str, tree: Mapping[str, bytes], path: str, inputs: Mapping[str, bytes]) -> str:
    """The tree of ``base`` with ``path`` replaced by ``tree`` and the ``inputs`` (repository paths) set, built in a
    temporary index."""
    import tempfile

    handle, index = tempfile.mkstemp(prefix="aicr-gen-index-")
    os.close(handle)
    Path(index).unlink()
    env = {"GIT_INDEX_FILE": index}
    files = {**{f"{path}/{name}": data for name, data in tree.items()}, **inputs}
    try:
        repo.run("read-tree", base, env=env)
        repo.run("rm", "-r", "-q", "--cached", "--ignore-unmatch", "--", f"{path}/", env=env)
        names = blob_names(repo, files, write=True)
        lines = "".join(f"100644 {names[name]}\t{name}\n" for name in files)
        repo.run("update-index", "--index-info", env=env, stdin=lines.encode())
        return repo.run("write-tree", env=env)
    finally:
        Path(index).unlink(missing_ok=True)


def _commit(repo: Repo, tree_sha: str, parent: str, message: str) -> str:
    return repo.run("commit-tree", tree_sha, "-p", parent, stdin=message.encode())


def _current_branch(repo: Repo) -> str | None:
    try:
        return repo.run("symbolic-ref", "-q", "HEAD")
    except GitError:
        return None


def _prune(folder: Path) -> None:
    """Remove the folders below ``folder`` (and it) that became empty."""
    if not folder.is_dir():
        return
    for sub in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: len(p.parts), reverse=True):
        if not any(sub.iterdir()):
            sub.rmdir()
    if not any(folder.iterdir()):
        folder.rmdir()


def _align_worktree(repo: Repo, new: str, path: str, old_files: Mapping[str, str], tree: Mapping[str, bytes], *,
                    inputs: Mapping[str, bytes]) -> None:
    """Index and work tree below ``path`` as in commit ``new`` (files aicr-gen did not write are kept), and
    the inputs' index entries as committed (their files are as they were)."""
    root = Path(repo.working_tree_dir)
    repo.run("reset", "-q", new, "--", f"{path}/", *inputs)
    for name in old_files:
        if name not in tree:
            (root / path / name).unlink(missing_ok=True)
    _prune(root / path)
    repo.run("checkout", new, "--", f"{path}/")


def _restore_worktree(repo: Repo, old: str, path: str, tree: Mapping[str, bytes], had_path: bool, *,
                      inputs: Mapping[str, bytes]) -> None:
    root = Path(repo.working_tree_dir)
    repo.run("reset", "-q", old, "--", f"{path}/", *inputs)
    old_files = committed(repo, old, path)
    for name in tree:
        if name not in old_files:
            (root / path / name).unlink(missing_ok=True)
    _prune(root / path)
    if had_path:
        repo.run("checkout", old, "--", f"{path}/")


def _branch_ref(repo: Repo, branch: str) -> str:
    try:
        repo.run("check-ref-format", "--branch", branch)
    except GitError:
        raise InvalidInputError(f"--branch {branch!r}: not a valid branch name (git check-ref-format); use e.g. "
                                "aicr-gen/gpu-operator-v26.3") from None
    return f"refs/heads/{branch}"


def _not_ours(repo: Repo, path: str, old_files: Mapping[str, str], tree: Mapping[str, bytes]) -> list[str]:
    """Files in the work tree below ``path`` that the new tree would overwrite although the last sync did not
    write them (untracked or only staged by the user)."""
    root = Path(repo.working_tree_dir)
    found = [name for name, data in tree.items() if name not in old_files and (root / path / name).is_file()
             and (root / path / name).read_bytes() != data]
    return sorted(f"{path}/{name}" for name in found)


def sync(repo: Repo, tree: Mapping[str, bytes], path: str, message: Callable[[Mapping[str, bytes]], str], *,
         inputs: Mapping[str, bytes] | None = None, branch: str | None = None, force: bool = False,
         push: bool = False) -> Result:
    """Commit ``tree`` at ``path`` with the ``inputs`` (repository path -> content: the spec and its files) on
    HEAD's branch, or (``branch``) on that branch without touching the checkout: appended to its tip, or forked
    from HEAD when it does not exist. ``message`` gets the managed folder's files at the base. No commit when
    nothing changed. Refuses a dirty ``path`` unless ``force``, which overwrites only what the last sync wrote."""
    inputs = dict(inputs or {})
    head = _head(repo)
    current = _current_branch(repo)
    if branch is None and current is None:
        raise InvalidInputError(f"{repo.working_tree_dir}: HEAD is detached (no branch is checked out), so a commit "
                                "would belong to no branch; give --branch NAME to commit on a branch, or check "
                                "one out")
    target = _branch_ref(repo, branch) if branch else str(current)
    existing = repo.run("rev-parse", "--verify", "-q", f"{target}^{{commit}}", check=False)
    base = existing or head
    on_checkout = target == current
    check_managed(repo, path, base)
    old_files = committed(repo, base, path)
    if on_checkout:
        changes = dirty(repo, path)
        if changes and not force:
            raise FindingsError(f"{path} has uncommitted changes; commit or discard them, or rerun with --force:\n"
                                + "\n".join(f"  {line}" for line in changes))
        theirs = _not_ours(repo, path, old_files, tree)
        if theirs:
            raise FindingsError(f"{path}: the new tree would overwrite {len(theirs)} file(s) the last sync did not "
                                "write; move them out of the managed folder and sync again:\n"
                                + "\n".join(f"  {name}" for name in theirs))
    new_tree = _write_tree(repo, base, tree, path, inputs)
    if new_tree == repo.run("rev-parse", f"{base}^{{tree}}"):
        if on_checkout and force:
            _align_worktree(repo, base, path, old_files, tree, inputs=inputs)
        return Result(None, target)
    text = message(files_at(repo, base, path))
    sha = _commit(repo, new_tree, base, text)
    # The ref must still be where it was read (or, for a new branch, still not exist): never drop a commit.
    repo.run("update-ref", "-m", "aicr-gen sync", target, sha, existing or "")
    if on_checkout:
        try:
            _align_worktree(repo, sha, path, old_files, tree, inputs=inputs)
        except BaseException:
            repo.run("update-ref", "-m", "aicr-gen sync: rolled back", target, base, sha)
            _restore_worktree(repo, base, path, tree, bool(old_files), inputs=inputs)
            raise
    if push:
        _push(repo, target, sha)
    listed = repo.run("diff-tree", "-r", "--name-only", "-z", base, sha)
    return Result(sha, target, text, tuple(sorted(filter(None, listed.split("\0")))))


def _push(repo: Repo, target: str, sha: str) -> None:
    """Push ``target`` to origin; a refusal or an unreachable remote is exit 3 (the commit stays local)."""
    branch = target.removeprefix("refs/heads/")
    try:
        repo.run("push", "--porcelain", "origin", f"{target}:{target}")
    except GitError as err:
        lines = [line.strip() for line in err.stderr.splitlines()]
        lines += [line.strip() for line in err.stdout.splitlines() if line.startswith("!")]
        kept = f"committed {sha[:12]} on {target}, but pushing it to origin failed"
        if any("non-fast-forward" in line or "fetch first" in line for line in lines):
            raise UnreachableError(
                f"{kept}: origin's {branch} has commits this one does not (non-fast-forward: someone else pushed "
                f"to it); the commit is kept locally. Bring them in and push again: git fetch origin {branch} && "
                f"git rebase origin/{branch} {branch} && git push origin {branch} (or reset the branch to theirs "
                f"with git branch -f {branch} origin/{branch} and run this sync again)") from None
        reason = next((line for line in lines if line.startswith(("fatal:", "error:", "!"))),
                      next((line for line in lines if line), "no reason given"))
        raise UnreachableError(f"{kept} ({reason}); the commit is kept locally: "
                               f"fix the remote and run 'git push origin {target}'") from None
