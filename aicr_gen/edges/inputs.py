"""Reading one input file named on the command line: bounded, regular files only, one clear error."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml import MAX_BYTES


def read_input(path: str, label: str, limit: int = MAX_BYTES) -> bytes:
    """The bytes of ``path`` (``-``: standard input) given as ``label`` (a flag or field name). Missing,
    unreadable, folder, FIFO/device and oversized inputs are input errors; nothing reads past ``limit``."""
    if path == "-":
        data = sys.stdin.buffer.read(limit + 1)
    else:
        file = Path(path)
        try:
            if file.is_dir():
                raise InvalidInputError(f"{label} {path}: is a folder; give a file")
            if file.exists() and not stat.S_ISREG(file.stat().st_mode):
                raise InvalidInputError(f"{label} {path}: not a regular file; give a file")
            with file.open("rb") as handle:
                data = handle.read(limit + 1)
        except OSError as err:
            raise InvalidInputError(f"{label} {path}: cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise InvalidInputError(f"{label} {path}:1: file is over the {limit} byte limit; split it")
    return data
