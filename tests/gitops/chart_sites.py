"""Fixtures serving the ``widget-operator`` chart (``upgrade_charts.py``) the two ways a deployer fetches a remote
chart, both on loopback: an OCI registry (Debian's docker-registry, ``tests/mirror/test_registry.py``, filled with
the real ``helm push``) and a plain HTTP Helm repository (``index.yaml`` from ``helm repo index`` and the packages,
served by ``http.server`` on 127.0.0.1).

A test takes ``chart_site`` (both kinds, one after the other) or ``oci_chart_site`` / ``http_chart_site``; each
allows loopback hosts for aicr-gen's chart pulls (``AICR_GEN_VENDOR_ALLOWED_HOSTS``, ``aicr_gen.mirror.pull``) for
that test. Tests skip naming what is missing when helm or docker-registry is absent.
"""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.mirror.pull import ALLOWED_HOSTS
from tests.gitops.upgrade_charts import CHART, NAMESPACE, SCENARIOS, Charts, build_charts, helm, render
from tests.mirror.test_registry import Registry, registry  # noqa: F401  (the loopback registry fixture)

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class ChartSite:
    """Where the chart's versions (``charts``) are served: ``repository`` is what a component's repository names
    (``oci://127.0.0.1:PORT/charts`` or ``http://127.0.0.1:PORT/charts``); ``kind`` "oci" or "http"."""

    kind: str
    repository: str
    chart: str
    charts: Charts

    def pull_args(self, version: str) -> list[str]:
        """The chart reference and flags of ``helm pull`` / ``helm template`` for ``version`` from this site."""
        if self.kind == "oci":
            return [f"{self.repository}/{self.chart}", "--version", version, "--plain-http"]
        return [self.chart, "--repo", self.repository, "--version", version]

    def helm_block(self, version: str) -> dict[str, str]:
        """The ``helm:`` block of a ComponentRegistry entry that deploys ``version`` from this site."""
        return {"defaultRepository": self.repository, "defaultChart": self.chart, "defaultVersion": version,
                "defaultNamespace": NAMESPACE}

    def render(self, version: str) -> list[dict[str, Any]]:
        """``helm template --include-crds`` of ``version`` fetched from this site."""
        reference, *flags = self.pull_args(version)
        return render(reference, *flags)


@pytest.fixture(scope="session")
def widget_charts(tmp_path_factory: pytest.TempPathFactory) -> Charts:
    """Every version of ``widget-operator`` written and packaged with the real ``helm package``."""
    return build_charts(tmp_path_factory.mktemp("widget-charts"))


@pytest.fixture(scope="session")
def widget_renders(widget_charts: Charts) -> dict[str, list[dict[str, Any]]]:
    """``helm template --include-crds`` of each packaged version into ``upgrade_charts.NAMESPACE``, by version."""
    return {entry.version: render(widget_charts.packages[entry.version]) for entry in SCENARIOS}


@pytest.fixture(scope="session")
def oci_site(registry: Registry, widget_charts: Charts) -> ChartSite:  # noqa: F811
    """Every version pushed with ``helm push`` to ``oci://127.0.0.1:PORT/charts`` on the loopback registry."""
    repository = f"oci://{registry.host}/charts"
    for package in widget_charts.packages.values():
        helm("push", str(package), repository, "--plain-http")
    return ChartSite("oci", repository, CHART, widget_charts)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


@pytest.fixture(scope="session")
def http_site(widget_charts: Charts, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ChartSite]:
    """A Helm repository at ``http://127.0.0.1:PORT/charts``: the packages and the ``index.yaml`` that
    ``helm repo index --url`` writes for them, served by ``http.server``."""
    root = tmp_path_factory.mktemp("helm-repo")
    folder = root / "charts"
    folder.mkdir()
    for package in widget_charts.packages.values():
        (folder / package.name).write_bytes(package.read_bytes())
    server = http.server.ThreadingHTTPServer((LOOPBACK, 0), functools.partial(_Quiet, directory=str(root)))
    server.daemon_threads = True
    repository = f"http://{LOOPBACK}:{server.server_address[1]}/charts"
    helm("repo", "index", str(folder), "--url", repository)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield ChartSite("http", repository, CHART, widget_charts)
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def oci_chart_site(oci_site: ChartSite, monkeypatch: pytest.MonkeyPatch) -> ChartSite:
    """``oci_site``, with loopback hosts allowed for aicr-gen's pulls in this test."""
    monkeypatch.setenv(ALLOWED_HOSTS, LOOPBACK)
    return oci_site


@pytest.fixture
def http_chart_site(http_site: ChartSite, monkeypatch: pytest.MonkeyPatch) -> ChartSite:
    """``http_site``, with loopback hosts allowed for aicr-gen's pulls in this test."""
    monkeypatch.setenv(ALLOWED_HOSTS, LOOPBACK)
    return http_site


@pytest.fixture(params=["oci", "http"])
def chart_site(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> ChartSite:
    """Each site in turn (the test runs once per kind), loopback hosts allowed for aicr-gen's pulls."""
    site: ChartSite = request.getfixturevalue(f"{request.param}_site")
    monkeypatch.setenv(ALLOWED_HOSTS, LOOPBACK)
    return site


def helm_pull(site: ChartSite, version: str, destination: Path) -> Path:
    """``helm pull`` of ``version`` from ``site`` into ``destination``; the package it wrote."""
    destination.mkdir(parents=True, exist_ok=True)
    helm("pull", *site.pull_args(version), "--destination", str(destination))
    (package,) = destination.glob(f"{site.chart}-{version}.tgz")
    return package

