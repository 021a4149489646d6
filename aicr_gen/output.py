"""The one place that writes a single output file: atomically, or to standard output."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from aicr_gen.errors import InvalidInputError


def write_text(target: str | None, text: str) -> None:
    """Write ``text`` to ``target`` (``-`` or None: stdout) via a temp file and rename, so readers never
    see a half-written file and a failure leaves nothing behind."""
    if target in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    path = Path(str(target))
    if path.is_dir():
        raise InvalidInputError(f"{path}: is a folder; give a file name for -o")
    folder = path.parent if str(path.parent) else Path()
    if not folder.is_dir():
        raise InvalidInputError(f"{path}: folder {folder} does not exist; create it first")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        Path(tmp).chmod(0o666 & ~umask)
        Path(tmp).replace(path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
