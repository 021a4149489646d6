"""Reading a file of a catalog, or one a user names (a recipe, a criteria file): bytes of a regular file that
really lives inside its folder. Without pathlib: ``validate`` reads a recipe through here, and importing
pathlib (~8 ms) would be most of what its cached reading costs."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

from aicr_gen.errors import InvalidInputError
from aicr_gen.text import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path


def walk_entries(root: str) -> Iterator[tuple[str, os.DirEntry[str]]]:
    """Every entry under ``root`` as (path relative to it with ``/``, directory entry), a folder's entries
    before those of its subfolders. A symlink is yielded, never entered: the caller refuses it or resolves it.
    The types come from the directory entries, no further system call; an unreadable folder is skipped, as
    ``os.walk`` does."""
    pending = [("", root)]
    while pending:
        prefix, folder = pending.pop()
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except OSError:
            continue
        for entry in entries:
            rel = prefix + entry.name
            if entry.is_dir(follow_symlinks=False):
                pending.append((rel + "/", entry.path))
            yield rel, entry


def read_file(path: str | os.PathLike[str], root: str | os.PathLike[str], rel: str, *, inside: bool = False) -> bytes:
    """Bytes of a regular catalog file that really lives inside ``root`` (no FIFOs, devices, escapes).
    ``inside``: the caller found it as a regular file in ``root`` (``Layer.plain``), so its real path need
    not be resolved, nor its type checked before opening it."""
    if not inside:
        paths.check_inside(path, root, rel)
        check_regular(os.stat(path), path)  # before opening: opening a FIFO would wait for a writer
    fd = os.open(path, os.O_RDONLY)
    try:
        info = os.fstat(fd)
        check_regular(info, path)
        chunks = [os.read(fd, info.st_size + 1)]  # one read and the empty one at the end, for a file that stays put
        while chunks[-1]:
            chunks.append(os.read(fd, 1 << 16))
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_named(path: str, flag: str, missing: str) -> bytes:
    """Bytes of the file a user named with ``flag`` (checked as a catalog file in its own folder); ``missing``
    is the fix the message gives for a file that is not there."""
    if not os.path.isfile(path):
        raise InvalidInputError(f"{flag} {path}: no such file; {missing}")
    return read_file(path, os.path.dirname(path) or ".", os.path.basename(path))


def check_regular(info: os.stat_result, path: str | os.PathLike[str]) -> None:
    """A regular file within the byte limit, else the input error naming ``path``."""
    from aicr_gen.yaml import MAX_BYTES

    if not stat.S_ISREG(info.st_mode):
        raise InvalidInputError(f"{path}: not a regular file; catalogs hold regular files only")
    if info.st_size > MAX_BYTES:
        raise InvalidInputError(f"{path}:1: file is {info.st_size} bytes, over the {MAX_BYTES} byte limit; split it")


MAX_SNAPSHOT_BYTES = 64 * 1024 * 1024
"""Bound on a snapshot's (decompressed) size: large clusters outgrow AICR's 1 MiB ConfigMap cap."""
GZIP_MAGIC = b"\x1f\x8b"


def gunzip(raw: bytes, source: str) -> bytes:
    """Decompress gzip, refusing more than ``MAX_SNAPSHOT_BYTES`` of output (gzip bombs)."""
    import zlib

    inflater = zlib.decompressobj(wbits=31)
    try:
        out = inflater.decompress(raw, MAX_SNAPSHOT_BYTES + 1)
    except zlib.error as err:
        raise InvalidInputError(f"{source}:1: corrupt gzip data ({err}); re-create the file") from None
    if len(out) > MAX_SNAPSHOT_BYTES:
        raise InvalidInputError(f"{source}:1: gzip data expands beyond the {MAX_SNAPSHOT_BYTES // (1024 * 1024)} "
                                "MiB snapshot limit; refusing it")
    if not inflater.eof:
        raise InvalidInputError(f"{source}:1: gzip data is truncated; re-create the file")
    return out


def work_tree(folder: Path) -> Path | None:
    """The Git work tree ``folder`` is in (the nearest folder holding ``.git``), or None."""
    return next((candidate for candidate in (folder, *folder.parents) if (candidate / ".git").exists()), None)
