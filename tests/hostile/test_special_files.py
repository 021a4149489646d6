"""``-o`` naming a device or a FIFO is written into, never replaced: an atomic write (temp file + rename) to
``/dev/null`` as root would turn the machine's ``/dev/null`` into a regular file, and git, the shell and every
later job would read the recipe back from it."""

from __future__ import annotations

import os
import stat
import threading
from pathlib import Path
from typing import Any


def test_o_dev_null_leaves_the_device_a_device(cli: Any) -> None:
    before = Path("/dev/null").stat()
    result = cli("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                 "-o", "/dev/null")
    assert result.code == 0, result.err
    after = Path("/dev/null").stat()
    assert stat.S_ISCHR(after.st_mode) and after.st_rdev == before.st_rdev and after.st_ino == before.st_ino


def test_o_a_fifo_is_written_into(cli: Any, tmp_path: Path) -> None:
    fifo = tmp_path / "recipe.fifo"
    os.mkfifo(fifo)
    read: list[bytes] = []
    reader = threading.Thread(target=lambda: read.append(fifo.read_bytes()))
    reader.start()
    result = cli("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                 "-o", str(fifo))
    reader.join(30)
    assert result.code == 0, result.err
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and b"componentRefs" in read[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["recipe.fifo"]  # no temp file left beside it
