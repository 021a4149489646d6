"""Fixtures of the gitops tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest


@pytest.fixture
def renders(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The managed folders rendered in this process (use --jobs 1)."""
    from aicr_gen.gitops.trees import render_tree
    real, seen = render_tree.render_tree, []

    def counted(cluster: Any, base: Path, path: str | None = None, recipe: Any = None, **options: Any) -> Any:
        seen.append(str(path))
        return real(cluster, base, path, recipe, **options)

    monkeypatch.setattr(render_tree, "render_tree", counted)
    return seen
