"""A sync's commit put on its branch, the way git's own commands guard a ref and a checkout: ``update-ref`` with
the old value (the branch moves only from the commit the sync read it at, or, new, only while it does not exist;
otherwise exit 3: another sync or a commit won the race, rerun) and, for the checked-out branch, with its index
and work tree as one step from the repository's point of view (``checkout``).

That step is a critical section (``journal.critical``: one sync of a work tree at a time, SIGINT/SIGTERM/SIGHUP
deferred to its end): the branch and the index are looked at again (a sync that lost a race says so, never that
the winner's files are uncommitted changes), a journal in the git folder records the move, the ref moves, the
index entries and files of the paths that change follow it (``settle``: atomic per file, never over a change the
user made) and the journal is removed. A failure there moves all three back; whatever stops the process
(SIGKILL, a full disk during the roll-back), the journal lets the next sync, or ``sync --repair``, finish the
move without --force (``finish_interrupted``), as ``git rebase --continue`` picks up what its sequencer
recorded.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

from aicr_gen.edges.git import GitError, Repo, explain, lock_held, writing
from aicr_gen.errors import UnreachableError
from aicr_gen.gitops.commit import journal
from aicr_gen.gitops.commit.settle import Move, settle


def empty_tree(repo: Repo) -> str:
    """The name of the empty tree in the repository's object format: the base of a branch that has no commit yet
    (a new repository), whose first sync makes the root commit."""
    return repo.run("hash-object", "-t", "tree", "--stdin", stdin=b"")


def tip(repo: Repo, base: str) -> str:
    """What the branch holds while it is at ``base``: that commit, or nothing (no ref yet) at the empty tree."""
    return "" if base == empty_tree(repo) else base


def current_branch(repo: Repo) -> str | None:
    """The checked-out branch (refs/heads/...), None when HEAD is detached."""
    try:
        return repo.run("symbolic-ref", "-q", "HEAD")
    except GitError:
        return None


def branch(repo: Repo, ref: str, existing: str, sha: str) -> None:
    """Move ``ref`` to ``sha`` only from ``existing`` (empty: only while ``ref`` does not exist): never drop a
    commit."""
    try:
        repo.run("update-ref", "-m", "aicr-gen sync", ref, sha, existing)
    except GitError as err:
        if "but expected" in err.stderr or "reference already exists" in err.stderr:
            raise _moved(repo, ref, existing) from None
        raise


def _moved(repo: Repo, ref: str, existing: str) -> UnreachableError:
    now = repo.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    was = f"at {existing[:12]}" if existing else "absent"
    moved = f"at {now[:12]}" if now else "gone"
    return UnreachableError(f"{ref} moved while syncing (another sync, or a commit?): it was {was} and is "
                            f"{moved} now; nothing was changed: rerun the sync")


def checkout(repo: Repo, ref: str, base: str, sha: str, ready: Callable[[], Sequence[Move]], *,
             force: bool) -> list[str]:
    """Move the checked-out branch ``ref`` from ``base`` to ``sha`` with its index and work tree, in the critical
    section; ``ready`` (called there, once the branch is known to be at ``base``) refuses what must be refused and
    gives the paths to move. Returns the paths left because the user changed them meanwhile."""
    git_dir = repo.git_dir()
    old = tip(repo, base)
    with journal.critical(git_dir) as section:
        journal.pause("locked")
        _still_at(repo, ref, old, git_dir)
        moves = ready()
        journal.write(git_dir, journal.Record(ref, base, sha,
                                              {move.name: move.before for move in moves if not move.files}))
        journal.pause("recorded")
        try:
            branch(repo, ref, old, sha)
        except BaseException:
            journal.remove(git_dir)
            raise
        section.note = f"{ref} is at the new commit {sha[:12]}, and so are its index and files"
        journal.pause("moved")
        try:
            left = settle(repo, moves, forward=True, force=force)
        except BaseException as err:
            section.note = _roll_back(repo, journal.Record(ref, base, sha, {}), moves, err)
            raise
        journal.remove(git_dir)
    return left


def _still_at(repo: Repo, ref: str, old: str, git_dir: Path) -> None:
    """Refuse (exit 3) when the checked-out branch moved since the sync read it at ``old`` (empty: it had no
    commit), or another git process holds the index."""
    now = repo.run("rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False)
    if now != old or current_branch(repo) != ref:
        raise _moved(repo, ref, old)
    if (git_dir / "index.lock").exists():
        raise lock_held(repo.working_tree_dir, git_dir / "index.lock")


def _roll_back(repo: Repo, record: journal.Record, moves: Sequence[Move], err: BaseException) -> str:
    """Put the branch, index and files back after ``err`` stopped them half-way; says what it did, or raises
    ``err`` explained with the way to finish when it cannot."""
    root = repo.working_tree_dir
    try:
        journal.pause("rolling-back")
        old = tip(repo, record.base)
        if old:
            repo.run("update-ref", "-m", "aicr-gen sync: rolled back", record.ref, old, record.commit)
        else:  # the root commit: the branch had none
            repo.run("update-ref", "-d", record.ref, record.commit)
        settle(repo, moves, forward=False)
        journal.remove(repo.git_dir())
    except (GitError, OSError):
        found = explain(err, root)
        if found is None:
            raise err from None
        raise type(found)(f"{found}; the sync stopped half-way (its journal is {repo.git_dir() / journal.NAME}): "
                          f"once that is fixed, rerun it, or run 'aicr-gen sync --repair --repo {root}' to finish "
                          "it") from None
    return f"rolled back: {record.ref}, its index and files are as before"


def finish_interrupted(repo: Repo) -> str | None:
    """Finish a sync of the checked-out branch that was interrupted (its journal is there): the index and work
    tree follow the branch to its commit when it got there, or back to the state before when it did not; paths
    the user changed since are left. Says what it did; None when there was nothing to finish."""
    git_dir = repo.git_dir()
    if not journal.exists(git_dir):
        return None
    with writing(repo), journal.critical(git_dir) as section:
        record = journal.read(git_dir)
        if record is None:  # its own sync finished it meanwhile
            return None
        now = repo.run("rev-parse", "--verify", "-q", f"{record.ref}^{{commit}}", check=False)
        if current_branch(repo) != record.ref or now not in (tip(repo, record.base), record.commit):
            journal.remove(git_dir)
            return (f"an interrupted sync of {record.ref} was found, but the branch or the checkout moved since; "
                    "left the index and work tree as they are")
        forward = now == record.commit
        left = settle(repo, _journal_moves(repo, record), forward=forward)
        journal.remove(git_dir)
        section.note = "finished the interrupted sync" if forward else "undid the interrupted sync"
    done = (f"finished an interrupted sync: the index and files follow {record.ref} at {record.commit[:12]}"
            if forward else f"undid an interrupted sync: {record.ref}, its index and files are as before")
    return done + (f"; left {len(left)} file(s) changed since: {', '.join(left)}" if left else "")


def _journal_moves(repo: Repo, record: journal.Record) -> list[Move]:
    """The paths the journal's commit changed, as moves (the index alone for the inputs it lists)."""
    listed = iter(repo.run("diff-tree", "-r", "-z", "--no-renames", record.base, record.commit).split("\0"))
    moves = []
    for meta in listed:
        if not meta:
            continue
        name = next(listed)
        old_mode, new_mode, old_sha, new_sha, _status = meta.lstrip(":").split()
        base = (old_mode, old_sha) if set(old_mode) != {"0"} else None
        new = (new_mode, new_sha) if set(new_mode) != {"0"} else None
        if name in record.inputs:
            moves.append(Move(name, record.inputs[name], base, new, files=False))
        else:
            moves.append(Move(name, base, base, new))
    return moves
