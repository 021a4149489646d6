"""The chart sites serve what a deployer fetches: every version of ``widget-operator``, pulled with the real helm
from the OCI registry and from the HTTP repository, is the package ``helm package`` wrote, and renders (``helm
template --include-crds`` straight from the site) the same objects; aicr-gen's own puller fetches it too, with
loopback allowed by the fixture."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.mirror.pull import ALLOWED_HOSTS, pull
from tests.gitops.chart_sites import (  # noqa: F401  (the site fixtures)
    ChartSite,
    chart_site,
    helm_pull,
    http_site,
    oci_site,
    widget_charts,
    widget_renders,
)
from tests.gitops.upgrade_charts import CHART, SCENARIOS, helm_path
from tests.mirror.test_registry import registry  # noqa: F401  (the loopback registry fixture)


@pytest.mark.parametrize("version", [entry.version for entry in SCENARIOS])
def test_helm_pulls_and_renders_every_version_from_the_site(chart_site: ChartSite, version: str,  # noqa: F811
                                                            widget_renders: dict[str, list[dict[str, Any]]],  # noqa: F811
                                                            tmp_path: Path) -> None:
    package = helm_pull(chart_site, version, tmp_path)
    assert package.read_bytes() == chart_site.charts.packages[version].read_bytes()
    assert chart_site.render(version) == widget_renders[version]


def test_aicr_gen_pulls_from_the_site_with_loopback_allowed(chart_site: ChartSite) -> None:  # noqa: F811
    assert os.environ[ALLOWED_HOSTS] == "127.0.0.1"
    vendored = pull(str(helm_path()), "widget-operator", CHART, "2.0.0", chart_site.repository)
    assert vendored.tarball == f"{CHART}-2.0.0.tgz"
    assert vendored.data == chart_site.charts.packages["2.0.0"].read_bytes()
