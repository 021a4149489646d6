"""Fixtures of the gitops tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.gitops.chart_sites import (  # noqa: F401  (charts on loopback sites, for every gitops test)
    chart_site,
    http_chart_site,
    http_site,
    oci_chart_site,
    oci_site,
    widget_charts,
    widget_renders,
)
from tests.mirror.test_registry import registry  # noqa: F401  (the docker-registry behind oci_site)


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
