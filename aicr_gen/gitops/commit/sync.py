"""The Git edge of ``aicr-gen sync``: put rendered trees at their paths of a repository as exactly one commit
(one tree or a thousand), together with the specs (and their input files) they were rendered from when those
live in the repository, so the commit is self-consistent: ``sync --check`` passes at it.

The commit is built off to the side: the caller has stored the blobs (``objects.store``, so SHA-1 and SHA-256
repositories alike), a temporary index (``GIT_INDEX_FILE``) starts from the base commit's tree, only the
managed files and the inputs are replaced, and ``write-tree`` / ``commit-tree`` make the commit (none when every
entry is already the base's: an up-to-date sync writes nothing, so it works in a read-only checkout). The base is
HEAD, or with ``--branch B`` the tip of B when it exists (the commit is appended to it; a new B forks from HEAD); in
a new repository, whose branch has no commit yet, the empty tree (the sync makes the root commit). Nothing the user
sees changes until the single ``update-ref``, which fails if the ref moved meanwhile (exit 3: another sync or a
commit won the race; rerun); on the checked-out branch it moves with its index and work tree as one step from the
repository's point of view (``advance.checkout``: a journal, a lock, deferred signals; an interrupted move is
finished by the next sync or ``sync --repair``). Everything else is untouched.

Managed paths are each tree's folder (everything below it is the tree's) and single files beside the trees
(their inputs records): ``Folder`` holds one of either.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import NamedTuple

from aicr_gen.edges.files import work_tree
from aicr_gen.edges.git import GitError, Repo, is_git_dir, writing
from aicr_gen.edges.git_objects import blob_name
from aicr_gen.errors import FindingsError, InvalidInputError, UnreachableError
from aicr_gen.gitops.commit import advance, journal
from aicr_gen.gitops.commit.advance import current_branch
from aicr_gen.gitops.commit.journal import Entry
from aicr_gen.gitops.commit.settle import Move, settle


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


def open_repo(folder: str | None) -> Repo:
    """The repository whose work tree holds ``folder`` (None: the current folder; its root, from anywhere inside
    it), once git agrees to work in it (a repository another user owns is refused by git's ``safe.directory``
    rule, as CI containers often meet it)."""
    path = Path(os.path.abspath(folder or "."))  # noqa: PTH100 - normalised, symlinks kept: as the user named it
    label = f"--repo {folder}" if folder is not None else f"the current folder {path} (no --repo given)"
    if path.exists() and is_git_dir(path) and path.name != ".git":
        raise InvalidInputError(f"{label}: a bare repository has no work tree; give a clone's folder")
    root = work_tree(path) if path.exists() else None
    if root is None:
        raise InvalidInputError(f"{label}: not inside a Git work tree (run 'git init' there first, or give "
                                "--repo DIR)")
    repo = Repo(str(root))
    try:
        repo.run("rev-parse", "--git-dir")
    except GitError as err:
        if "dubious ownership" in err.stderr:
            raise InvalidInputError(f"{label}: git refuses to work in {root}, which another user owns "
                                    "(safe.directory); if you trust it: git config --global --add safe.directory "
                                    f"{root}") from None
        said = [line.removeprefix("fatal: ") for line in err.stderr.splitlines() if line.startswith("fatal:")]
        raise InvalidInputError(f"{label}: git cannot read the repository at {root} "
                                f"({said[0] if said else err.stderr.strip()})") from None
    return repo


def _head(repo: Repo) -> str:
    """HEAD's commit, or the empty tree while its branch has no commit (a new repository): what a sync builds
    on (its first commit is the root commit) and ``sync --check`` compares with."""
    return repo.run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or advance.empty_tree(repo)


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


def _write_tree(repo: Repo, base: str, lines: Mapping[str, Entry | None]) -> str:
    """The tree of ``base`` with each path set to its entry (or removed: None), built in a temporary index."""
    import tempfile

    zero = "0" * len(base)
    listed = b"".join(f"{mode} {sha}\t{name}\0".encode()
                      for name, (mode, sha) in sorted((name, entry or ("0", zero)) for name, entry in lines.items()))
    handle, index = tempfile.mkstemp(prefix="aicr-gen-index-")
    os.close(handle)
    Path(index).unlink()
    env = {"GIT_INDEX_FILE": index}
    try:
        repo.run("read-tree", base, env=env)
        repo.run("update-index", "-z", "--index-info", env=env, stdin=listed)
        return repo.run("write-tree", env=env)
    finally:
        Path(index).unlink(missing_ok=True)


def _commit(repo: Repo, base: str, lines: Mapping[str, Entry | None], message: str) -> str:
    parent = ["-p", base] if advance.tip(repo, base) else []  # none on the empty tree: the root commit
    return repo.run("commit-tree", _write_tree(repo, base, lines), *parent, stdin=message.encode())


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
    current = current_branch(repo)
    if branch is None and current is None:
        raise InvalidInputError(f"{repo.working_tree_dir}: HEAD is detached (no branch is checked out), so a commit "
                                "would belong to no branch; give --branch NAME to commit on a branch, or check "
                                "one out")
    ref = _branch_ref(repo, branch) if branch else str(current)
    existing = repo.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    return Target(ref, existing or head, existing, ref == current)


def require_identity(repo: Repo) -> None:
    """Refuse, before anything is rendered, a machine where git has no identity to commit as (``git var``
    answers as ``commit-tree`` will: config in any scope, GIT_AUTHOR_*/GIT_COMMITTER_*, EMAIL)."""
    for who in ("GIT_AUTHOR_IDENT", "GIT_COMMITTER_IDENT"):
        try:
            repo.run("var", who)
        except GitError as err:
            said = [line for line in err.stderr.splitlines() if line.startswith("fatal:")]
            reason = said[-1].removeprefix("fatal: ") if said else "no identity"
            raise InvalidInputError(
                f"git has no identity to commit as ({reason}); set one with git config --global user.name 'NAME' "
                "and git config --global user.email 'EMAIL' (or in the repository, without --global), or set "
                "GIT_AUTHOR_NAME, GIT_AUTHOR_EMAIL, GIT_COMMITTER_NAME and GIT_COMMITTER_EMAIL") from None


class _Change(NamedTuple):
    """What a sync changes: the managed paths' entries at the base (``old``) and after it (``new``), the inputs'
    entries as ``given`` and at the base."""

    managed: Sequence[Folder]
    old: dict[str, Entry]
    new: dict[str, Entry]
    given: dict[str, Entry]
    given_at_base: dict[str, Entry]

    def lines(self) -> dict[str, Entry | None]:
        """Each path the commit sets, to its entry (None: removed)."""
        return {**{name: None for name in self.old if name not in self.new}, **self.new, **self.given}

    def nothing(self) -> bool:
        """Whether every path is already as the base has it: no commit."""
        at_base = {**self.old, **self.given_at_base}
        return all(at_base.get(name) == entry for name, entry in self.lines().items())

    def refuse_dirty(self, repo: Repo, *, force: bool) -> None:
        """Refuse uncommitted changes under the managed paths (unless ``force``) and files there the last sync did
        not write (always)."""
        changes = dirty(repo, self.managed)
        if changes and not force:
            raise FindingsError(f"{len(changes)} uncommitted change(s) under the managed paths; commit or discard "
                                "them, or rerun with --force:\n" + "\n".join(f"  {line}" for line in changes))
        overwritten = [line for line in changes if line[3:] in {*self.old, *self.new}]
        if overwritten:  # --force: every file it replaces is named, so no hand edit disappears unseen
            sys.stderr.write(f"aicr-gen: --force: replacing {len(overwritten)} uncommitted change(s) with the synced "
                             "files:\n" + "".join(f"  {line}\n" for line in overwritten))
        theirs = _not_ours(repo, self.old, self.new)
        if theirs:
            raise FindingsError(f"the new trees would overwrite {len(theirs)} file(s) the last sync did not write; "
                                "move them out of the managed folders and sync again:\n"
                                + "\n".join(f"  {name}" for name in theirs))

    def ready(self, repo: Repo, base: str, *, force: bool) -> list[Move]:
        """In the critical section, once the branch is known not to have moved: the dirty paths refused, the moves
        read."""
        self.refuse_dirty(repo, force=force)
        return self.moves(repo, base, force=force)

    def moves(self, repo: Repo, base: str, *, force: bool) -> list[Move]:
        """The paths to settle in the checkout, with the index entries they have now: the managed ones that
        change (``force``: all of them) and the inputs (their index entries only)."""
        before = entries(repo, base, [*self.managed, *(Folder(name, {}, single=True) for name in self.given)],
                         index=True)
        moves = [Move(name, before.get(name), self.old.get(name), self.new.get(name))
                 for name in sorted({*self.old, *self.new}) if force or self.old.get(name) != self.new.get(name)]
        return moves + [Move(name, before.get(name), self.given_at_base.get(name), entry, files=False)
                        for name, entry in sorted(self.given.items())]


def sync(repo: Repo, where: Target, managed: Sequence[Folder], message: str, *,
         inputs: Mapping[str, str] | None = None, force: bool = False, push: bool = False) -> Result:
    """Commit the ``managed`` paths as given, with the ``inputs`` (repository path -> stored blob name: the
    specs and their files) on ``where``. No commit when nothing changed. Refuses dirty managed paths unless
    ``force``, which overwrites only what the last sync wrote."""
    base = where.base
    check_managed(repo, [item.path for item in managed], base)
    given = {name: ("100644", sha) for name, sha in (inputs or {}).items()}
    change = _Change(managed, entries(repo, base, managed),
                     {name: ("100644", sha) for item in managed for name, sha in item.entries().items()},
                     given, entries(repo, base, [Folder(name, {}, single=True) for name in given]))
    with writing(repo):
        if change.nothing():
            if where.on_checkout:
                change.refuse_dirty(repo, force=force)
                if force:
                    settle(repo, change.moves(repo, base, force=True), forward=True, force=True)
            if push and where.existing:  # an earlier sync may have been stopped before its push
                _push(repo, where.ref, where.existing)
            return Result(None, where.ref)
        sha = _commit(repo, base, change.lines(), message)
        journal.pause("committed")
        if where.on_checkout:
            left = advance.checkout(repo, where.ref, base, sha, lambda: change.ready(repo, base, force=force),
                                    force=force)
            if left:
                sys.stderr.write(f"aicr-gen: warning: {len(left)} file(s) changed while syncing were left as they "
                                 "are: " + ", ".join(left) + "\n")
        else:
            advance.branch(repo, where.ref, where.existing, sha)
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
