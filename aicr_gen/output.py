"""The one place that writes a single output file: atomically, or to standard output."""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

from aicr_gen.errors import InvalidInputError


def write_text(target: str | None, text: str) -> None:
    """Write ``text`` to ``target`` (``-`` or None: stdout) via a temp file and rename, so readers never
    see a half-written file and a failure leaves nothing behind. A symlink at ``target`` is replaced,
    never written through."""
    if target in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    name = str(target)
    if not name or name.endswith(("/", os.sep)) or Path(name).is_dir():
        raise InvalidInputError(f"-o {name!r}: not a file name; give a file path such as out/recipe.yaml")
    path = Path(name)
    if not path.parent.is_dir():
        raise InvalidInputError(f"-o {name}: folder {path.parent} does not exist; create it first")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        raise InvalidInputError(f"-o {name}: cannot write in {path.parent}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        Path(tmp).chmod(0o666 & ~umask)
        Path(tmp).replace(path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        raise InvalidInputError(f"-o {name}: cannot write: {err.strerror or err}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
