"""``aicr-gen plan`` end to end on charts served on loopback (OCI by docker-registry, an HTTP Helm repository):
a spec bumps ``widget-operator`` from 1.0.0 to a version carrying one upgrade hazard, and the plan shows the
objects that change, the verdict and its reasons; a blocked upgrade fails ``--fail-on blocked`` until acknowledged;
the cache renders a fleet's shared chart once; the comment stays within GitHub's limit."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT
from tests.consumers import tool_path
from tests.gitops.chart_sites import ChartSite
from tests.gitops.test_sync import ENV, git, init_repo

COMMENT_LIMIT = 65_536
EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"


def write_catalog(folder: Path, site: ChartSite) -> None:
    registry_ = {"apiVersion": "aicr.run/v1alpha2", "kind": "ComponentRegistry",
                 "components": [{"name": "widget-operator", "helm": site.helm_block("1.0.0"),
                                 "healthCheck": {"assertFile": "checks/widget-operator.yaml"}}]}
    (folder / "checks").mkdir(parents=True)
    allowed = yaml.safe_load((ROOT / "policies" / "allowed-sources.yaml").read_text())
    allowed["spec"]["rule"] = "component.source.startsWith('http://127.0.0.1:') || " \
                              "component.source.startsWith('oci://127.0.0.1:')"
    (folder / "allowed-sources.yaml").write_text(yaml.safe_dump(allowed))
    (folder / "checks" / "widget-operator.yaml").write_text("widget-operator: healthy\n")
    (folder / "overlays").mkdir(parents=True)
    (folder / "registry.yaml").write_text(yaml.safe_dump(registry_))
    (folder / "overlays" / "base.yaml").write_text(yaml.safe_dump({
        "kind": "RecipeMetadata", "apiVersion": "aicr.run/v1alpha2", "metadata": {"name": "base"},
        "spec": {"componentRefs": []}}))
    (folder / "overlays" / "eks.yaml").write_text(yaml.safe_dump({
        "kind": "RecipeMetadata", "apiVersion": "aicr.run/v1alpha2", "metadata": {"name": "eks"},
        "spec": {"criteria": {"service": "eks"}, "componentRefs": [{"name": "widget-operator"}]}}))


def write_spec(repo: Path, name: str, deployers: list[str], version: str | None = None) -> Path:
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["metadata"]["name"] = name
    spec["spec"]["catalogs"] = ["../catalog"]
    spec["spec"]["criteria"] = {"service": "eks"}
    spec["spec"]["policies"] = ["../catalog/allowed-sources.yaml"]  # the loopback site is the allowed source
    for key in ("sentinel", "certification", "snapshot"):
        spec["spec"].pop(key, None)
    spec["spec"]["deployers"] = deployers
    spec["spec"]["repo"]["path"] = f"clusters/{name}"
    spec["spec"]["versions"] = {"widget-operator": version} if version else {}
    path = repo / "specs" / f"{name}.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def aicr_gen(repo: Path, *args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aicr_gen", *args], cwd=repo, capture_output=True, text=True,
                          check=False, env={**os.environ, **ENV, **env}, timeout=600)


@pytest.fixture
def helm_env(tmp_path: Path) -> dict[str, str]:
    """``helm`` on PATH (Helm 3, as Argo CD and Flux embed it) and a chart cache of the test's own."""
    folder = tmp_path / "helm-bin"
    folder.mkdir()
    (folder / "helm").symlink_to(tool_path("helm3"))
    return {"PATH": os.pathsep.join([str(folder), os.environ.get("PATH", "")]), "AICR_GEN_CACHE_DIR":
            str(tmp_path / "cache"), "HOME": str(tmp_path / "home")}


def synced(tmp_path: Path, site: ChartSite, env: dict[str, str], names: list[str],
           deployers: list[str]) -> tuple[Path, str]:
    """A repository with the catalog and the specs synced at 1.0.0 on main: (repo, base commit)."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in ENV.items():
            patch.setenv(key, value)
        repo = init_repo(tmp_path / "gitops")
    write_catalog(repo / "catalog", site)
    specs = [write_spec(repo, name, deployers) for name in names]
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "specs")
    done = aicr_gen(repo, "sync", *(str(spec.relative_to(repo)) for spec in specs), env=env)
    assert done.returncode == 0, done.stderr
    return repo, git(repo, "rev-parse", "HEAD").strip()


def planned(repo: Path, base: str, env: dict[str, str], *args: str) -> tuple[subprocess.CompletedProcess[str],
                                                                           dict[str, Any]]:
    out = repo.parent / "plan.json"
    done = aicr_gen(repo, "plan", "--base", base, "--format", "json", "-o", str(out), *args, "specs/*.yaml",
                    env=env)
    return done, json.loads(out.read_text()) if out.exists() else {}


EXPECTED = {  # version -> (verdict, reason codes the plan must name)
    "1.1.0": ("safe", set()),
    "2.0.0": ("manual", {"renamed", "namespace-moved"}),
    "3.0.0": ("blocked", {"crd-storage-version-dropped"}),
    "4.0.0": ("blocked", {"immutable-field", "transition-rule"}),
    "5.0.0": ("blocked", {"crd-removed", "namespace-dropped"}),
}


@pytest.mark.network
@pytest.mark.parametrize("version", sorted(EXPECTED))
def test_each_upgrade_gets_its_verdict_from_the_rendered_charts(chart_site: ChartSite, helm_env: dict[str, str],
                                                                tmp_path: Path, version: str) -> None:
    repo, base = synced(tmp_path, chart_site, helm_env, ["gpu-a"], ["argocd", "flux"])
    write_spec(repo, "gpu-a", ["argocd", "flux"], version)
    assert aicr_gen(repo, "sync", "specs/gpu-a.yaml", env=helm_env).returncode == 0
    done, plan = planned(repo, base, helm_env, "--fail-on", "blocked")
    verdict, codes = EXPECTED[version]
    (cluster,) = plan["clusters"]
    (upgrade,) = [item for item in cluster["upgrades"] if item["component"] == "widget-operator"]
    assert upgrade["verdict"] == verdict and codes <= {reason["code"] for reason in upgrade["reasons"]}
    units = {(unit["kind"], unit["name"]): unit for unit in cluster["applications"]}
    for kind in ("Application", "HelmRelease"):  # argocd is read: the first deployer of the tree
        if (kind, "widget-operator") in units:
            assert units[(kind, "widget-operator")]["rendered"] is True
            assert units[(kind, "widget-operator")]["source"].startswith(f"widget-operator 1.0.0 -> {version}")
    assert done.returncode == (1 if verdict == "blocked" else 0), done.stderr
    if verdict == "blocked":
        assert "blocked upgrade(s): widget-operator in gpu-a" in done.stderr
        acknowledged, again = planned(repo, base, helm_env, "--fail-on", "blocked", "--allow-blocked",
                                      "widget-operator")
        assert acknowledged.returncode == 0, acknowledged.stderr
        assert again["unacknowledged"] == 0 and again["blocked"] == 1
    text = aicr_gen(repo, "plan", "--base", base, "specs/gpu-a.yaml", env=helm_env).stdout
    assert len(text) < COMMENT_LIMIT and "### Rendered objects" in text
    if verdict != "safe":
        assert f"**{verdict}**" in text and "`widget-operator`" in text


@pytest.mark.network
def test_the_cache_renders_a_shared_chart_once_and_serves_an_offline_plan(http_chart_site: ChartSite,
                                                                          helm_env: dict[str, str],
                                                                          tmp_path: Path) -> None:
    names = [f"gpu-{index}" for index in range(6)]
    repo, base = synced(tmp_path, http_chart_site, helm_env, names, ["argocd"])
    for name in names:
        write_spec(repo, name, ["argocd"], "4.0.0")
    assert aicr_gen(repo, "sync", "specs/*.yaml", env=helm_env).returncode == 0
    done, plan = planned(repo, base, helm_env, "--jobs", "1")
    assert done.returncode == 0, done.stderr
    cache = Path(helm_env["AICR_GEN_CACHE_DIR"], "charts")
    assert len(list((cache / "charts").glob("*.tgz"))) == 2  # 1.0.0 and 4.0.0, pulled once for six clusters
    assert len(list((cache / "renders").glob("*.yaml"))) == 2
    assert plan["blocked"] == 6
    offline, again = planned(repo, base, {**helm_env, "PATH": "/usr/bin:/bin"}, "--offline", "--jobs", "1")
    assert offline.returncode == 0 and again == plan  # from the cache alone: no helm, no network
    markdown = aicr_gen(repo, "plan", "--base", base, "--offline", "--full", str(tmp_path / "full.md"),
                        "specs/*.yaml", env=helm_env).stdout
    assert markdown.count("<summary>Application widget-operator") == 1 and "on 6 clusters" in markdown
    assert (tmp_path / "full.md").read_text().startswith("## aicr-gen plan")


@pytest.mark.network
def test_a_chart_that_cannot_be_had_is_named_not_rendered_and_blocks_nothing(http_chart_site: ChartSite,
                                                                             helm_env: dict[str, str],
                                                                             tmp_path: Path) -> None:
    repo, base = synced(tmp_path, http_chart_site, helm_env, ["gpu-a"], ["argocd"])
    write_spec(repo, "gpu-a", ["argocd"], "9.9.9")
    assert aicr_gen(repo, "sync", "specs/gpu-a.yaml", env=helm_env).returncode == 0
    done, plan = planned(repo, base, helm_env, "--fail-on", "blocked")
    assert done.returncode == 0, done.stderr
    (unit,) = [unit for unit in plan["clusters"][0]["applications"] if unit["name"] == "widget-operator"]
    assert unit["rendered"] is False and "no index entry matching pinned version '9.9.9'" in unit["note"]


@pytest.mark.parametrize(("args", "fragment"), [
    (["--kube-version", "1.34"], "--kube-version 1.34: give a version as X.Y.Z"),
    (["--api-versions", "monitoring.coreos.com v1"], "--api-versions monitoring.coreos.com v1: give GROUP/VERSION"),
    (["--api-versions=--set=x/v1"], "--api-versions --set=x/v1: give GROUP/VERSION"),
    (["--charts", "no-such-folder"], "--charts no-such-folder: not a folder"),
])
def test_bad_render_options_are_input_errors_before_anything_is_read(cli: Any, args: list[str],
                                                                     fragment: str) -> None:
    result = cli("plan", "no-such-spec.yaml", *args)
    assert result.code == 2 and fragment in result.err


FLUX_CRDS = {  # version -> (verdict, codes the plan names, codes it must not name)
    "3.0.0": ("manual", {"crd-not-upgraded"}, {"crd-storage-version-dropped"}),
    "5.0.0": ("manual", {"namespace-dropped"}, {"crd-removed"}),
}


@pytest.mark.network
@pytest.mark.parametrize("version", sorted(FLUX_CRDS))
def test_flux_never_updates_a_charts_crds_folder_so_the_crd_reasons_say_so(
        http_chart_site: ChartSite, helm_env: dict[str, str], tmp_path: Path, version: str) -> None:
    """helm-controller's upgrade.crds defaults to Skip: a CRD of crds/ changed never arrives (manual: apply it),
    and one removed stays in the cluster (nothing is deleted)."""
    repo, base = synced(tmp_path, http_chart_site, helm_env, ["gpu-a"], ["flux"])
    write_spec(repo, "gpu-a", ["flux"], version)
    assert aicr_gen(repo, "sync", "specs/gpu-a.yaml", env=helm_env).returncode == 0
    done, plan = planned(repo, base, helm_env, "--fail-on", "blocked")
    (upgrade,) = [item for item in plan["clusters"][0]["upgrades"] if item["component"] == "widget-operator"]
    found = {reason["code"] for reason in upgrade["reasons"]}
    verdict, codes, absent = FLUX_CRDS[version]
    assert (upgrade["verdict"], done.returncode) == (verdict, 0) and codes <= found and not absent & found
    if version == "3.0.0":
        (reason,) = [item for item in upgrade["reasons"] if item["code"] == "crd-not-upgraded"]
        assert reason["object"] == "CustomResourceDefinition widgets.example.com"
        assert reason["text"].startswith("Flux does not update CRDs of a chart's crds/ folder")
