"""Where the shipped policies are, without loading the policy engine (a sync --check answered by the inputs
records needs only the folder)."""

from __future__ import annotations

from pathlib import Path


def shipped_root() -> Path:
    """The shipped policies: inside the installed wheel, or ``policies/`` of a source checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_policies"
    return packaged if packaged.is_dir() else here.parent / "policies"
