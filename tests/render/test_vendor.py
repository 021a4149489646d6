"""``bundle --vendor-charts``: a chart repository on this machine serves a chart packaged by the real ``helm``;
every deployer's bundle carries it as a local wrapper chart that renders what the upstream chart renders, and
AICR's binary vendors the same recipe into the same charts, values and provenance."""

from __future__ import annotations

import functools
import hashlib
import http.server
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.mirror import pull
from aicr_gen.render.argocd_helm import value_key
from tests.conftest import Result
from tests.consumers import helm_template, tool_path

Cli = Any
DEPLOYERS = ("helm", "helmfile", "argocd", "argocd-helm", "flux")
REPO = "https://example.com/stack.git"
COMPONENTS = {"cert-manager": "v1.2.3", "nfd": "1.2.3"}  # a 'v' the chart's own version lacks, and none
CHART = {
    "Chart.yaml": "apiVersion: v2\nname: demo\nversion: 1.2.3\nappVersion: '1.0'\n",
    "values.yaml": "replicas: 1\nfullnameOverride: ''\n",
    "templates/configmap.yaml": (
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n"
        "  name: {{ .Values.fullnameOverride | default .Release.Name }}\n"
        "data:\n  values: |\n    {{- toYaml (omit .Values \"global\") | nindent 4 }}\n"),
}


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(autouse=True)
def helm_on_path(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``helm`` (helm 4 of the test tools) on PATH, as ``--vendor-charts`` (and AICR) look for it."""
    folder = tmp_path_factory.mktemp("helm-bin")
    (folder / "helm").symlink_to(tool_path("helm4"))
    monkeypatch.setenv("PATH", f"{folder}:{Path('/usr/bin')}:{Path('/bin')}")
    return folder / "helm"


def _serve(folder: Path, address: str) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer((address, 0), functools.partial(_Quiet, directory=str(folder)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://{address}:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def _packaged(folder: Path, helm: Path) -> Path:
    """The demo chart packaged into ``folder`` by the real helm."""
    source = folder.parent / "demo-src"
    for rel, text in CHART.items():
        (source / rel).parent.mkdir(parents=True, exist_ok=True)
        (source / rel).write_text(text)
    folder.mkdir(parents=True, exist_ok=True)
    subprocess.run([str(helm), "package", str(source), "-d", str(folder)], check=True, capture_output=True)
    return folder / "demo-1.2.3.tgz"


def _index(folder: Path, url: str, helm: Path) -> None:
    subprocess.run([str(helm), "repo", "index", str(folder), "--url", url], check=True, capture_output=True)


@pytest.fixture
def chart_repo(tmp_path: Path, helm_on_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A chart repository on 127.0.0.1 (let through the address check as an allowed host)."""
    folder = tmp_path / "repo"
    _packaged(folder, helm_on_path)
    monkeypatch.setenv(pull.ALLOWED_HOSTS, "127.0.0.1")
    for url in _serve(folder, "127.0.0.1"):
        _index(folder, url, helm_on_path)
        yield url


def _recipe(cli: Cli, folder: Path, url: str, versions: dict[str, str] = COMPONENTS, *,
            aicr: Path | None = None) -> Path:
    """The eks training recipe (aicr-gen's, or the one ``aicr`` writes) cut to cert-manager and nfd, both
    installing the demo chart from ``url``."""
    full, criteria = folder / "full.yaml", ("--service", "eks", "--intent", "training", "-o", str(folder / "full.yaml"))
    if aicr is None:
        assert cli("recipe", *criteria).code == 0
    else:
        subprocess.run([str(aicr), "recipe", *criteria], check=True, capture_output=True, timeout=300)
    recipe = yaml.safe_load(full.read_text())
    recipe["componentRefs"] = [ref for ref in recipe["componentRefs"] if ref["name"] in versions]
    for ref in recipe["componentRefs"]:
        ref.update(source=url, chart="demo", version=versions[ref["name"]])
        ref.pop("dependencyRefs", None)
    recipe["deploymentOrder"] = list(versions)
    path = folder / "recipe.yaml"
    path.write_text(yaml.safe_dump(recipe, sort_keys=False))
    return path


def _bundle(cli: Cli, recipe: Path, out: Path, deployer: str, *extra: str) -> Result:
    return cli("bundle", "--recipe", str(recipe), "--deployer", deployer, "--repo", REPO, "-o", str(out), *extra)


def _chart_folder(out: Path, deployer: str, component: str) -> Path:
    """Where the deployer keeps the component's local chart."""
    (folder,) = out.glob(f"[0-9][0-9][0-9]-{component}")
    return folder / "chart" if deployer == "flux" else folder


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text())


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_every_deployer_installs_the_vendored_chart_from_the_bundle(cli: Cli, tmp_path: Path, chart_repo: str,
                                                                     deployer: str, helm_on_path: Path) -> None:
    """Each component becomes a wrapper chart over charts/demo-1.2.3.tgz (the repository's bytes), its values
    nested under the chart name; no deploy file points at the chart repository any more; provenance.yaml says
    what came from where; and `helm template` of the wrapper renders the objects of the upstream chart with
    the values of the bundle that was not vendored."""
    recipe = _recipe(cli, tmp_path, chart_repo)
    result = _bundle(cli, recipe, tmp_path / "vendored", deployer, "--vendor-charts")
    assert result.code == 0, result.err
    assert _bundle(cli, recipe, tmp_path / "plain", "helm").code == 0
    tarball = (tmp_path / "repo" / "demo-1.2.3.tgz").read_bytes()
    out = tmp_path / "vendored"
    for component in COMPONENTS:
        folder = _chart_folder(out, deployer, component)
        chart = _load(folder / "Chart.yaml")
        assert (chart["name"], chart["dependencies"]) == (
            component, [{"name": "demo", "version": "1.2.3", "repository": ""}])
        assert (folder / "charts" / "demo-1.2.3.tgz").read_bytes() == tarball
        (plain,) = (tmp_path / "plain").glob(f"[0-9][0-9][0-9]-{component}")
        upstream = _load(plain / "values.yaml")
        assert _load(folder / "values.yaml") == {"demo": upstream}
        assert helm_template(folder, helm_on_path, [folder / "values.yaml"], release=component) == helm_template(
            tmp_path / "repo" / "demo-1.2.3.tgz", helm_on_path, [plain / "values.yaml"], release=component)
    deploy_files = [path for path in out.rglob("*") if path.is_file() and path.suffix in (".yaml", ".sh")
                    and path.name not in ("Chart.yaml", "provenance.yaml", "recipe.yaml", "bundle-info.yaml")]
    assert [path for path in deploy_files if chart_repo in path.read_text()] == []
    provenance = _load(out / "provenance.yaml")
    assert (provenance["apiVersion"], provenance["kind"]) == ("aicr.run/v1alpha2", "BundleProvenance")
    assert [(item["name"], item["chart"], item["version"], item["repository"], item["tarballName"])
            for item in provenance["vendoredCharts"]] == [
        (name, "demo", version, chart_repo, "demo-1.2.3.tgz") for name, version in sorted(COMPONENTS.items())]
    assert {item["sha256"] for item in provenance["vendoredCharts"]} == {hashlib.sha256(tarball).hexdigest()}
    assert "provenance.yaml" in (out / "checksums.txt").read_text()


def test_install_time_values_are_nested_too(cli: Cli, tmp_path: Path, chart_repo: str, helm_on_path: Path) -> None:
    """--dynamic moves the path into cluster-values.yaml under the chart name; the wrapper with both files
    renders what the upstream chart renders with the component's values."""
    recipe = _recipe(cli, tmp_path, chart_repo)
    dynamic = ("--dynamic", "cert-manager:fullnameOverride")
    assert _bundle(cli, recipe, tmp_path / "v", "helm", "--vendor-charts", *dynamic).code == 0
    folder = _chart_folder(tmp_path / "v", "helm", "cert-manager")
    assert _load(folder / "cluster-values.yaml") == {"demo": {"fullnameOverride": "cert-manager"}}
    assert "fullnameOverride" not in _load(folder / "values.yaml")["demo"]
    objects = helm_template(folder, helm_on_path, [folder / "values.yaml", folder / "cluster-values.yaml"])
    assert [item["metadata"]["name"] for item in objects] == ["cert-manager"]
    assert _bundle(cli, recipe, tmp_path / "ah", "argocd-helm", "--vendor-charts", *dynamic).code == 0
    key = value_key("cert-manager")
    assert _load(tmp_path / "ah" / "values.yaml")[key] == {"fullnameOverride": "cert-manager"}
    child = (tmp_path / "ah" / "templates" / "cert-manager.yaml").read_text()
    assert f'dict "demo" (index .Values "{key}"' in child  # install-time values reach the subchart


# ------------------------------------------------------------------ failures


def test_repository_down_is_exit_3(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv(pull.ALLOWED_HOSTS, "127.0.0.1")
    result = _bundle(cli, _recipe(cli, tmp_path, f"http://127.0.0.1:{port}"), tmp_path / "o", "helm",
                     "--vendor-charts")
    assert result.code == 3, result.err
    assert "cannot reach the host (connection refused)" in result.err
    assert not (tmp_path / "o").exists()


def test_missing_chart_version_is_exit_3_as_in_aicr(cli: Cli, tmp_path: Path, chart_repo: str) -> None:
    result = _bundle(cli, _recipe(cli, tmp_path, chart_repo, {"cert-manager": "9.9.9"}), tmp_path / "o", "helm",
                     "--vendor-charts")
    assert result.code == 3, result.err
    assert "no index entry matching pinned version '9.9.9'" in result.err


def test_no_helm_is_exit_2(cli: Cli, tmp_path: Path, chart_repo: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    result = _bundle(cli, _recipe(cli, tmp_path, chart_repo), tmp_path / "o", "helm", "--vendor-charts")
    assert result.code == 2, result.err
    assert "helm CLI not found on PATH" in result.err


def test_loopback_repository_is_refused_as_aicr_refuses_it(cli: Cli, tmp_path: Path, chart_repo: str,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(pull.ALLOWED_HOSTS)
    result = _bundle(cli, _recipe(cli, tmp_path, chart_repo), tmp_path / "o", "helm", "--vendor-charts")
    assert result.code == 2, result.err
    assert "disallowed address 127.0.0.1 (loopback)" in result.err


def test_a_silent_server_is_bounded_in_time(cli: Cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that accepts and never answers: the index read gives up after its timeout (exit 3)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        sock.listen(4)
        monkeypatch.setattr(pull, "INDEX_TIMEOUT", 1.0)
        monkeypatch.setenv(pull.ALLOWED_HOSTS, "127.0.0.1")
        url = f"http://127.0.0.1:{sock.getsockname()[1]}"
        result = _bundle(cli, _recipe(cli, tmp_path, url), tmp_path / "o", "helm", "--vendor-charts")
    assert result.code == 3, result.err
    assert "timed out" in result.err


def test_a_chart_over_the_limit_is_refused(cli: Cli, tmp_path: Path, chart_repo: str,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pull, "CHART_LIMIT", 100)
    result = _bundle(cli, _recipe(cli, tmp_path, chart_repo), tmp_path / "o", "helm", "--vendor-charts")
    assert result.code == 2, result.err
    assert "over the 100-byte limit" in result.err


def test_the_address_policy_is_aicrs() -> None:
    """Go's ranges, not Python's is_private: TEST-NET addresses pass, as in AICR; NAT64 carries its IPv4."""
    assert [pull.refused_reason(address) for address in (
        "127.0.0.1", "10.1.2.3", "172.20.0.1", "192.168.1.1", "100.64.0.1", "169.254.169.254", "169.254.1.1",
        "0.0.0.0", "240.0.0.1", "::1", "fd00::1", "64:ff9b::a00:1", "192.0.2.2", "8.8.8.8")] == [
        "loopback", "private", "private", "private", "private", "cloud-metadata", "link-local", "unspecified",
        "martian", "loopback", "private", "private", "", ""]


# AICR itself is not run side by side here: it refuses loopback and private chart repositories (its egress
# policy has no exemption), and tests here serve only on loopback. The facts compared (wrapper dependency,
# tarball name, nested values, provenance fields) come from its localformat/vendor*.go at 8703d8cf.
