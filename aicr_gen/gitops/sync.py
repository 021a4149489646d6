"""The Git edge of ``aicr-gen sync``: put rendered trees at their paths of a repository as exactly one commit
(one tree or a thousand), together with the specs (and their input files) they were rendered from when those
live in the repository, so the commit is self-consistent: ``sync --check`` passes at it.

The commit is built off to the side: the caller has stored the blobs (``objects.store``, so SHA-1 and SHA-256
repositories alike), a temporary index (``GIT_INDEX_FILE``) starts from the base commit's tree, only the
managed files and the inputs are replaced, and ``write-tree`` / ``commit-tree`` make the commit. The base is
HEAD, or with ``--branch B`` the tip of B when it exists (the commit is appended to it; a new B forks from HEAD).
Nothing the user sees changes until the single ``update-ref``, which fails if the ref moved meanwhile; only then,
on the checked-out branch, are the index entries and work-tree files of the managed paths that changed brought
in line (and on a failure there the ref, index and files are put back). Everything else is untouched.

Managed paths are each tree's folder (everything below it is the tree's) and single files beside the trees
(their inputs records): ``Folder`` holds one of either.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from aicr_gen.errors import FindingsError, InvalidInputError, UnreachableError
from aicr_gen.gitops.git import GitError, Repo, is_git_dir, work_tree
from aicr_gen.gitops.objects import blob_name


class Folder(NamedTuple):
    """A managed path and what it holds after the commit: a folder's files (relative path -> name of a stored
    blob), or with ``single`` one file (its blob name under the key "")."""

    path: str
    files: Mapping[str, str]
    single: bool = False

    def entries(self) -> dict[str, str]:
        """Repository path -> blob name."""
        if self.single:
            return {self.path: self.files[""]} if "" in self.files else {}
        return {f"{self.path}/{name}": sha for name, sha in self.files.items()}


class Target(NamedTuple):
    """Where a sync commits: ``ref`` (refs/heads/...), the ``base`` commit the new one goes on, the ref's tip
    when the branch exists (``existing``; empty for a new branch) and whether it is the checked-out branch."""

    ref: str
    base: str
    existing: str
    on_checkout: bool


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


def check_managed(repo: Repo, paths: Sequence[str], rev: str = "HEAD") -> None:
    """Refuse a managed path that is (or passes through) a symlink in the work tree or in ``rev``: writing
    there would land outside the managed folder."""
    prefixes = sorted({"/".join(path.split("/")[:end]) for path in paths for end in range(1, path.count("/") + 2)})
    root = Path(repo.working_tree_dir)
    listed = repo.run("ls-tree", "-z", rev, "--", *prefixes, check=False) if prefixes else ""
    links = {entry.partition("\t")[2] for entry in listed.split("\0") if entry.startswith("120000 ")}
    for prefix in prefixes:
        if prefix in links or (root / prefix).is_symlink():
            owner = next(path for path in paths if path == prefix or path.startswith(f"{prefix}/"))
            raise InvalidInputError(f"managed path {owner!r}: {prefix} is a symlink in the repository; aicr-gen "
                                    "never writes through links; point the path at a real folder")


def _tops(paths: Iterable[str]) -> list[str]:
    """The top-level names of ``paths``: what one git command is limited to before filtering."""
    return sorted({path.split("/", 1)[0] for path in paths})


def _within(folders: set[str], files: set[str]) -> Callable[[str], bool]:
    """Whether a repository path is a managed file or lies below a managed folder."""
    def inside(name: str) -> bool:
        if name in files:
            return True
        parts = name.split("/")
        return any("/".join(parts[:end]) in folders for end in range(1, len(parts)))
    return inside


def entries(repo: Repo, rev: str, managed: Sequence[Folder], *, index: bool = False) -> dict[str, tuple[str, str]]:
    """``rev``'s (``index``: the index's) entries of the managed paths: repository path -> (mode, blob name)."""
    if not managed:
        return {}
    inside = _within({item.path for item in managed if not item.single}, {item.path for item in managed if item.single})
    tops = _tops(item.path for item in managed)
    out = repo.run("ls-files", "-s", "-z", "--", *tops) if index else repo.run("ls-tree", "-r", "-z", rev, "--", *tops)
    found: dict[str, tuple[str, str]] = {}
    for entry in filter(None, out.split("\0")):
        meta, _, name = entry.partition("\t")
        fields = meta.split()
        if fields[1] != "commit" and inside(name):
            found[name] = (fields[0], fields[1] if index else fields[2])
    return found


def dirty(repo: Repo, managed: Sequence[Folder]) -> list[str]:
    """Uncommitted changes (staged, unstaged, untracked) of the managed paths, as ``git status --porcelain``
    lines."""
    inside = _within({item.path for item in managed if not item.single}, {item.path for item in managed if item.single})
    out = repo.run("status", "--porcelain", "-z", "--untracked-files=all", "--", *_tops(item.path for item in managed))
    lines, items = [], iter(out.split("\0"))
    for item in items:
        if not item:
            continue
        if item[0] in "RC":
            next(items, None)  # a rename's source
        if inside(item[3:]):
            lines.append(item)
    return lines


def _zero(repo_sha: str) -> str:
    return "0" * len(repo_sha)


def _index_lines(entries: Mapping[str, tuple[str, str] | None], zero: str) -> bytes:
    """``update-index -z --index-info`` input: each path set to (mode, blob name), or removed (None)."""
    mode_sha = {name: found or ("0", zero) for name, found in entries.items()}
    return b"".join(f"{mode} {sha}\t{name}\0".encode() for name, (mode, sha) in sorted(mode_sha.items()))


def _write_tree(repo: Repo, base: str, lines: bytes) -> str:
    """The tree of ``base`` with the index lines applied, built in a temporary index."""
    import tempfile

    handle, index = tempfile.mkstemp(prefix="aicr-gen-index-")
    os.close(handle)
    Path(index).unlink()
    env = {"GIT_INDEX_FILE": index}
    try:
        repo.run("read-tree", base, env=env)
        repo.run("update-index", "-z", "--index-info", env=env, stdin=lines)
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


def _prune(root: Path, names: Iterable[str]) -> None:
    """Remove the folders of ``names`` (and their parents, up to ``root``) that became empty."""
    folders = {Path(name).parent for name in names}
    for folder in sorted({parent for item in folders for parent in (item, *item.parents) if parent != Path()},
                         key=lambda item: len(item.parts), reverse=True):
        full = root / folder
        if full.is_dir() and not full.is_symlink() and not any(full.iterdir()):
            full.rmdir()


def _write_files(repo: Repo, old: Mapping[str, tuple[str, str]], new: Mapping[str, tuple[str, str]],
                 written: Iterable[str]) -> None:
    """Work-tree files of the managed paths from the index: those in ``old`` but not ``new`` deleted, the
    ``written`` ones checked out (``checkout-index``, which also refreshes their index entries)."""
    root = Path(repo.working_tree_dir)
    gone = [name for name in old if name not in new]
    for name in gone:
        (root / name).unlink(missing_ok=True)
    _prune(root, gone)
    listed = b"".join(f"{name}\0".encode() for name in sorted(written))
    if listed:
        repo.run("checkout-index", "-f", "-u", "-z", "--stdin", stdin=listed)


def _align_worktree(repo: Repo, old: Mapping[str, tuple[str, str]], new: Mapping[str, tuple[str, str]],
                    inputs: Mapping[str, tuple[str, str]], zero: str, *, everything: bool) -> None:
    """Index entries and work-tree files of the managed paths as in the new commit (the ones that changed;
    ``everything``: all of them, --force), and the inputs' index entries as committed (their files are as
    they were). Files aicr-gen did not write are kept."""
    changed = {name: found for name, found in new.items() if everything or old.get(name) != found}
    lines = {**{name: None for name in old if name not in new}, **changed, **inputs}
    repo.run("update-index", "-z", "--index-info", stdin=_index_lines(lines, zero))
    _write_files(repo, old, new, changed)


def _restore_worktree(repo: Repo, before: Mapping[str, tuple[str, str]], old: Mapping[str, tuple[str, str]],
                      new: Mapping[str, tuple[str, str]], inputs: Mapping[str, tuple[str, str]], *, zero: str) -> None:
    """Put back the index entries ``before`` (the index's entries of the managed paths and inputs before the
    sync) and the managed files as they were at the base."""
    paths = {*old, *new, *inputs}
    repo.run("update-index", "-z", "--index-info",
             stdin=_index_lines({name: before.get(name) for name in paths}, zero))
    _write_files(repo, new, old, [name for name in old if name in before and new.get(name) != old[name]])


def _branch_ref(repo: Repo, branch: str) -> str:
    try:
        repo.run("check-ref-format", "--branch", branch)
    except GitError:
        raise InvalidInputError(f"--branch {branch!r}: not a valid branch name (git check-ref-format); use e.g. "
                                "aicr-gen/gpu-operator-v26.3") from None
    return f"refs/heads/{branch}"


def _not_ours(repo: Repo, old: Mapping[str, tuple[str, str]], new: Mapping[str, tuple[str, str]]) -> list[str]:
    """Files in the work tree that the new trees would overwrite although the last sync did not write them
    (untracked or only staged by the user)."""
    root = Path(repo.working_tree_dir)
    return sorted(name for name, (_mode, sha) in new.items() if name not in old and (root / name).is_file()
                  and blob_name((root / name).read_bytes(), sha) != sha)


def target(repo: Repo, branch: str | None) -> Target:
    """Where a sync commits: HEAD's branch, or (``branch``) that branch without touching the checkout:
    appended to its tip, or forked from HEAD when it does not exist."""
    head = _head(repo)
    current = _current_branch(repo)
    if branch is None and current is None:
        raise InvalidInputError(f"{repo.working_tree_dir}: HEAD is detached (no branch is checked out), so a commit "
                                "would belong to no branch; give --branch NAME to commit on a branch, or check "
                                "one out")
    ref = _branch_ref(repo, branch) if branch else str(current)
    existing = repo.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return Target(ref, existing or head, existing, ref == current)


def sync(repo: Repo, where: Target, managed: Sequence[Folder], message: str, *,
         inputs: Mapping[str, str] | None = None, force: bool = False, push: bool = False) -> Result:
    """Commit the ``managed`` paths as given, with the ``inputs`` (repository path -> stored blob name: the
    specs and their files) on ``where``. No commit when nothing changed. Refuses dirty managed paths unless
    ``force``, which overwrites only what the last sync wrote."""
    base = where.base
    check_managed(repo, [item.path for item in managed], base)
    old = entries(repo, base, managed)
    new = {name: ("100644", sha) for item in managed for name, sha in item.entries().items()}
    given = {name: ("100644", sha) for name, sha in (inputs or {}).items()}
    if where.on_checkout:
        changes = dirty(repo, managed)
        if changes and not force:
            raise FindingsError(f"{len(changes)} uncommitted change(s) under the managed paths; commit or discard "
                                "them, or rerun with --force:\n" + "\n".join(f"  {line}" for line in changes))
        theirs = _not_ours(repo, old, new)
        if theirs:
            raise FindingsError(f"the new trees would overwrite {len(theirs)} file(s) the last sync did not write; "
                                "move them out of the managed folders and sync again:\n"
                                + "\n".join(f"  {name}" for name in theirs))
    zero = _zero(base)
    lines = _index_lines({**{name: None for name in old if name not in new}, **new, **given}, zero)
    new_tree = _write_tree(repo, base, lines)
    if new_tree == repo.run("rev-parse", f"{base}^{{tree}}"):
        if where.on_checkout and force:
            _align_worktree(repo, old, new, given, zero, everything=True)
        return Result(None, where.ref)
    sha = _commit(repo, new_tree, base, message)
    before = entries(repo, base, [*managed, *(Folder(name, {}, single=True) for name in given)], index=True) \
        if where.on_checkout else {}
    # The ref must still be where it was read (or, for a new branch, still not exist): never drop a commit.
    repo.run("update-ref", "-m", "aicr-gen sync", where.ref, sha, where.existing or "")
    if where.on_checkout:
        try:
            _align_worktree(repo, old, new, given, zero, everything=force)
        except BaseException:
            repo.run("update-ref", "-m", "aicr-gen sync: rolled back", where.ref, base, sha)
            _restore_worktree(repo, before, old, new, given, zero=zero)
            raise
    if push:
        _push(repo, where.ref, sha)
    listed = repo.run("diff-tree", "-r", "--name-only", "-z", base, sha)
    return Result(sha, where.ref, message, tuple(sorted(filter(None, listed.split("\0")))))


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
