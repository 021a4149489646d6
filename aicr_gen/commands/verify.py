"""``aicr-gen verify DIR``: closed-world check of a bundle folder against its checksums.txt."""

from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path

from aicr_gen.errors import OK, FindingsError, InvalidInputError


def verify_command(folder: str) -> int:
    """Exit 0 when every file is listed and unchanged; 1 listing missing, changed or unlisted files."""
    from aicr_gen.render.bundle import CHECKSUMS, parse_checksums

    root = Path(folder)
    sums = root / CHECKSUMS
    if not sums.is_file():
        raise InvalidInputError(f"{folder}: no {CHECKSUMS}; this is not an aicr-gen bundle folder")
    listed = parse_checksums(sums.read_text(encoding="utf-8"), str(sums))
    present: dict[str, Path] = {}
    findings: list[str] = []
    for parent, dirs, names in os.walk(root):
        for name in sorted([*dirs, *names]):
            full = Path(parent) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                findings.append(f"symlink: {rel}")
            elif name in names and rel != CHECKSUMS:
                present[rel] = full
    for rel in sorted(set(listed) | set(present)):
        if rel not in present:
            findings.append(f"missing: {rel}")
        elif rel not in listed:
            findings.append(f"unlisted: {rel}")
        elif hashlib.sha256(present[rel].read_bytes()).hexdigest() != listed[rel]:
            findings.append(f"changed: {rel}")
    if findings:
        raise FindingsError(f"{folder}: {len(findings)} finding(s):\n  " + "\n  ".join(sorted(findings)))
    sys.stdout.write(f"{folder}: {len(listed)} files verified\n")
    return OK
