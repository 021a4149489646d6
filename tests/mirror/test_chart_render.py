"""``plan``'s chart renders (``mirror/chart_render``) with the real helm: local chart folders, vendored packages
found by either version spelling, the cache serving a second run without helm, and every failure a note."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from aicr_gen.mirror.chart_render import ChartRenderer
from tests.consumers import tool_path

CHART = {
    "Chart.yaml": b"apiVersion: v2\nname: widget\nversion: 1.2.0\n",
    "values.yaml": b"size: 1\n",
    "templates/cm.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n"
                         b"  namespace: {{ .Release.Namespace }}\ndata:\n  size: {{ .Values.size | quote }}\n"
                         b"  kube: {{ .Capabilities.KubeVersion.Version | quote }}\n",
    "templates/monitor.yaml": b'{{- if .Capabilities.APIVersions.Has "monitoring.coreos.com/v1" }}\n'
                              b"apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata:\n"
                              b"  name: {{ .Release.Name }}\n{{- end }}\n",
    "crds/widgets.yaml": b"apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\n"
                         b"metadata:\n  name: widgets.example.com\n",
}


@pytest.fixture(params=["helm3", "helm4"])
def helm(request: pytest.FixtureRequest) -> str:
    """Argo CD and Flux embed Helm 3 today; Helm 4 is where they go."""
    return str(tool_path(request.param))


def docs(text: str | None) -> list[dict[str, object]]:
    assert text is not None
    return [doc for doc in yaml.safe_load_all(text) if doc]


def test_a_local_chart_renders_with_release_namespace_values_crds_and_version(helm: str, tmp_path: Path) -> None:
    renderer = ChartRenderer(cache_dir=tmp_path / "cache", helm=helm)
    text, why = renderer.local(CHART, release="rel", namespace="ns", values="size: 3\n", kube_version="1.34.0")
    assert why == ""
    found = {doc["kind"]: doc for doc in docs(text)}
    assert found["ConfigMap"]["metadata"] == {"name": "rel-cm", "namespace": "ns"}  # type: ignore[comparison-overlap]
    assert found["ConfigMap"]["data"] == {"size": "3", "kube": "v1.34.0"}  # type: ignore[comparison-overlap]
    assert "CustomResourceDefinition" in found  # --include-crds, as Argo CD renders
    again = ChartRenderer(cache_dir=tmp_path / "cache", helm="/nonexistent/helm")
    assert again.local(CHART, release="rel", namespace="ns", values="size: 3\n", kube_version="1.34.0") == (text, "")
    assert again.local(CHART, release="rel", namespace="ns", values="size: 4\n", kube_version="1.34.0")[0] is None


def test_the_clusters_api_versions_reach_the_chart(helm: str) -> None:
    """A chart that renders a ServiceMonitor only where the cluster serves its API (Argo CD passes them)."""
    kinds = [{doc["kind"] for doc in docs(ChartRenderer(helm=helm, api_versions=served).local(
        CHART, release="rel", namespace="ns", values="", kube_version="")[0])}
        for served in ((), ("monitoring.coreos.com/v1",))]
    assert "ServiceMonitor" not in kinds[0] and "ServiceMonitor" in kinds[1]


def package(helm: str, folder: Path, version: str) -> Path:
    chart = folder / "src"
    for name, data in CHART.items():
        (chart / name).parent.mkdir(parents=True, exist_ok=True)
        (chart / name).write_bytes(data.replace(b"1.2.0", version.encode()))
    subprocess.run([helm, "package", str(chart), "-d", str(folder)], check=True, capture_output=True)
    return folder / f"widget-{version}.tgz"


def test_vendored_charts_are_found_by_either_version_spelling_without_network(helm: str, tmp_path: Path) -> None:
    package(helm, tmp_path, "1.2.0")
    renderer = ChartRenderer(charts_dir=tmp_path, cache_dir=tmp_path / "cache", offline=True, helm=helm)
    for version in ("1.2.0", "v1.2.0"):
        text, why = renderer.remote("https://charts.invalid", "widget", version, release="w", namespace="n",
                                    values="", kube_version="")
        assert why == "" and any(doc["kind"] == "ConfigMap" for doc in docs(text))


def test_what_cannot_be_rendered_is_a_note_not_an_error(helm: str, tmp_path: Path) -> None:
    offline = ChartRenderer(cache_dir=tmp_path / "cache", offline=True, helm=helm)
    assert offline.remote("https://charts.invalid", "widget", "9.9.9", release="w", namespace="n", values="",
                          kube_version="") == (None, "widget 9.9.9 is not in --charts or the cache (--offline)")
    broken = {**CHART, "templates/bad.yaml": b"{{ .Values.size.nosuch.field }}\n"}
    text, why = ChartRenderer(helm=helm).local(broken, release="w", namespace="n", values="", kube_version="")
    assert text is None and why.startswith("helm template failed: ")
    nohelm = ChartRenderer(helm="/nonexistent/helm")
    text, why = nohelm.local(CHART, release="w", namespace="n", values="", kube_version="")
    assert text is None and "cannot run /nonexistent/helm" in why


def test_a_chart_file_outside_its_folder_is_refused(helm: str) -> None:
    text, why = ChartRenderer(helm=helm).local({**CHART, "../escape.yaml": b"x: 1\n"}, release="w", namespace="n",
                                               values="", kube_version="")
    assert (text, why) == (None, "chart file '../escape.yaml' is outside its folder")
