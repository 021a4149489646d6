"""Index entries and work-tree files of a sync's paths moved between the state before the sync and the state
of its commit (``settle``), so that an interrupted move can be finished, or undone, by running it again.

Rules, after git's own checkout (``unpack-trees``: a path whose index or file differs from both sides is the
user's and is left, unless forced): each path moves only from one of its two known states to the other, so a
path changed since the sync began is never touched (it is returned instead); the index changes in one
``update-index`` (git's ``index.lock``, renamed into place), then each file is written to a temporary file beside
it and renamed over it (POSIX ``rename(2)`` is atomic: a reader, or a kill, sees the old file or the new one, never
half of one; a temporary file left by a kill is removed by the next move); last, the stat data of the files
written are refreshed in the index (``add --refresh``), as checkout does, so ``git status`` need not hash them.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from aicr_gen.edges.git import Repo
from aicr_gen.edges.git_objects import blob_name, read_blobs
from aicr_gen.gitops.commit.journal import Entry, pause

TEMPORARY = ".aicr-gen-tmp-"
"""How the temporary files written beside their target begin."""


class Move(NamedTuple):
    """One path of a sync: its index entry ``before`` the sync, its file at the ``base`` commit (what the work
    tree held) and in the ``new`` one (None: absent). ``files`` false: only the index entry moves (a spec and
    its inputs: the file is the user's)."""

    name: str
    before: Entry | None
    base: Entry | None
    new: Entry | None
    files: bool = True


def settle(repo: Repo, moves: Sequence[Move], *, forward: bool, force: bool = False) -> list[str]:
    """Move the paths to the new commit's state (``forward``) or back to the state before; ``force`` moves
    paths the user changed too. Returns the paths left because the user changed them."""
    if not moves:
        return []
    like = next(entry[1] for move in moves for entry in (move.before, move.base, move.new) if entry)
    index = _index(repo, [move.name for move in moves])
    lines: dict[str, Entry | None] = {}
    left: set[str] = set()
    for move in moves:
        want, have = (move.new if forward else move.before), index.get(move.name)
        if have != want:
            if force or have in (move.before, move.new):
                lines[move.name] = want
            else:
                left.add(move.name)
    if lines:
        repo.run("update-index", "-z", "--index-info", stdin=_index_lines(lines, "0" * len(like)))
    pause("indexed")
    root = Path(repo.working_tree_dir)
    _remove_temporary(root, [move.name for move in moves if move.files])
    writes: dict[str, Entry] = {}
    deletes: list[str] = []
    for move in moves:
        if not move.files:
            continue
        goal, found = (move.new if forward else move.base), _file(root / move.name, like)
        if found == (goal[1] if goal else None):
            continue
        if found == "" or not (force or found in {entry[1] if entry else None for entry in (move.base, move.new)}):
            left.add(move.name)
        elif goal is None:
            deletes.append(move.name)
        else:
            writes[move.name] = goal
    for name in deletes:
        (root / name).unlink()
    _prune(root, deletes)
    contents = read_blobs(repo, [sha for _mode, sha in writes.values()])
    for number, (name, (mode, sha)) in enumerate(sorted(writes.items())):
        _write(root / name, contents[sha], mode)
        if number == 0 and len(writes) > 1:
            pause("writing")
    pause("written")
    if writes:  # their stat data only (a failure costs speed, not truth)
        repo.run("--literal-pathspecs", "add", "--refresh", "--pathspec-from-file=-", "--pathspec-file-nul",
                 stdin=b"".join(f"{name}\0".encode() for name in writes), check=False)
    return sorted(left)


def _index(repo: Repo, names: Sequence[str]) -> dict[str, Entry]:
    """The index's (stage 0) entries of ``names``."""
    if not names:
        return {}
    wanted = set(names)
    listed = repo.run("ls-files", "-s", "-z", "--", *sorted({name.split("/", 1)[0] for name in names}))
    found: dict[str, Entry] = {}
    for entry in filter(None, listed.split("\0")):
        meta, _, name = entry.partition("\t")
        mode, sha, stage = meta.split()
        if name in wanted and stage == "0":
            found[name] = (mode, sha)
    return found


def _index_lines(lines: dict[str, Entry | None], zero: str) -> bytes:
    """``update-index -z --index-info`` input: each path set to its entry, or removed (None: mode 0)."""
    return b"".join(f"{mode} {sha}\t{name}\0".encode()
                    for name, (mode, sha) in sorted((name, entry or ("0", zero)) for name, entry in lines.items()))


def _file(path: Path, like: str) -> str | None:
    """The blob name (in the object format of ``like``) of the file or symlink at ``path``, None when absent, ''
    for anything else (a folder)."""
    try:
        data = os.fsencode(path.readlink()) if path.is_symlink() else path.read_bytes()
    except FileNotFoundError:
        return None
    except (IsADirectoryError, NotADirectoryError):
        return ""
    return blob_name(data, like)


def _write(path: Path, data: bytes, mode: str) -> None:
    """Replace ``path`` by a file (``mode`` 100644 or 100755) or symlink (120000) holding ``data``, atomically."""
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f"{TEMPORARY}{secrets.token_hex(6)}")
    try:
        if mode == "120000":
            temp.symlink_to(os.fsdecode(data))
        else:
            # the mode as git's checkout gives it: 666 or 777 less the umask (applied by open itself)
            handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o777 if mode == "100755" else 0o666)
            with os.fdopen(handle, "wb") as out:
                out.write(data)
            pause("temporary")
        temp.replace(path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise


def _remove_temporary(root: Path, names: Iterable[str]) -> None:
    """Remove the temporary files a killed move left beside ``names``."""
    for folder in sorted({(root / name).parent for name in names}):
        if folder.is_dir() and not folder.is_symlink():
            for stray in folder.glob(f"{TEMPORARY}*"):
                stray.unlink()


def _prune(root: Path, names: Iterable[str]) -> None:
    """Remove the folders of ``names`` (and their parents, up to ``root``) that became empty."""
    folders = {Path(name).parent for name in names}
    for folder in sorted({parent for item in folders for parent in (item, *item.parents) if parent != Path()},
                         key=lambda item: len(item.parts), reverse=True):
        full = root / folder
        if full.is_dir() and not full.is_symlink() and not any(full.iterdir()):
            full.rmdir()
