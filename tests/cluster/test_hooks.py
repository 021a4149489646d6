"""Hooks in a local chart, applied as Argo CD and as Flux's helm-controller apply them (tests/cluster/hooks.py has
the rules and their sources): small hand-made charts in a repository, each delivered both ways to a real API
server."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.converge import Api, Outcome, converge_argocd, converge_flux, empty_applications
from tests.cluster.envtest import ControlPlane

REPO_URL = "https://github.com/example/hooks.git"
Converge = Callable[[ControlPlane, Path, str, str], Outcome]
DEPLOYERS: dict[str, Converge] = {"argocd": converge_argocd, "flux": converge_flux}


def job(name: str, annotations: dict[str, str], *, valid: bool = True) -> dict[str, Any]:
    """A Job; an invalid one (no containers) is refused by the API server, as a failing hook fails."""
    containers = [{"name": "main", "image": "busybox:1.36", "command": ["true"]}] if valid else []
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name, "annotations": annotations},
            "spec": {"template": {"spec": {"restartPolicy": "Never", "containers": containers}}}}


def config_map(name: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": name, **({"annotations": annotations} if annotations else {})}, "data": {"k": "v"}}


def hook(events: str, weight: int | None = None, delete: str | None = None) -> dict[str, str]:
    return {"helm.sh/hook": events, **({"helm.sh/hook-weight": str(weight)} if weight is not None else {}),
            **({"helm.sh/hook-delete-policy": delete} if delete else {})}


def repository(root: Path, charts: dict[str, list[dict[str, Any]]],
               test: dict[str, Any] | None = None) -> Path:
    """A checkout with one local chart per entry (plain YAML templates), an Argo CD app-of-apps with one
    Application per chart (namespace = chart name) and a Flux tree with one HelmRelease per chart."""
    root.mkdir(parents=True, exist_ok=True)
    apps: list[str] = []
    flux = ["gitrepository.yaml"]
    for name, objects in charts.items():
        chart = root / "charts" / name
        (chart / "templates").mkdir(parents=True)
        (chart / "Chart.yaml").write_text(yaml.safe_dump({"apiVersion": "v2", "name": name, "version": "0.1.0"}))
        (chart / "templates" / "objects.yaml").write_text(yaml.safe_dump_all(objects) if objects else "")
        apps.append(yaml.safe_dump(
            {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", "metadata": {"name": name,
                                                                                     "namespace": "argocd"},
             "spec": {"project": "default",
                      "source": {"repoURL": REPO_URL, "path": f"charts/{name}", "targetRevision": "main"},
                      "destination": {"server": "https://kubernetes.default.svc", "namespace": name},
                      "syncPolicy": {"automated": {"prune": True}, "syncOptions": ["CreateNamespace=true"]}}}))
        release: dict[str, Any] = {
            "apiVersion": "helm.toolkit.fluxcd.io/v2", "kind": "HelmRelease",
            "metadata": {"name": name, "namespace": "flux-system"},
            "spec": {"interval": "10m", "releaseName": name, "targetNamespace": name,
                     "chart": {"spec": {"chart": f"./charts/{name}",
                                        "sourceRef": {"kind": "GitRepository", "name": "hooks"}}},
                     "install": {"createNamespace": True}, **({"test": test} if test else {})}}
        (root / "flux").mkdir(exist_ok=True)
        (root / "flux" / f"{name}.yaml").write_text(yaml.safe_dump(release))
        flux.append(f"{name}.yaml")
    (root / "argocd" / "apps").mkdir(parents=True)
    for text in apps:
        (root / "argocd" / "apps" / f"{yaml.safe_load(text)['metadata']['name']}.yaml").write_text(text)
    (root / "argocd" / "app-of-apps.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
         "metadata": {"name": "root", "namespace": "argocd"},
         "spec": {"project": "default",
                  "source": {"repoURL": REPO_URL, "path": "argocd/apps", "directory": {"recurse": True}},
                  "destination": {"server": "https://kubernetes.default.svc", "namespace": "argocd"},
                  "syncPolicy": {"automated": {}}}}))
    (root / "flux" / "gitrepository.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
         "metadata": {"name": "hooks", "namespace": "flux-system"},
         "spec": {"interval": "1m", "url": REPO_URL, "ref": {"branch": "main"}}}))
    (root / "flux" / "kustomization.yaml").write_text(yaml.safe_dump(
        {"apiVersion": "kustomize.config.k8s.io/v1beta1", "kind": "Kustomization", "resources": flux}))
    return root


def converge(plane: ControlPlane, checkout: Path, deployer: str) -> Outcome:
    return DEPLOYERS[deployer](plane, checkout, deployer, REPO_URL)


def stored(plane: ControlPlane, kind: str, namespace: str) -> dict[str, dict[str, Any]]:
    api_version = "batch/v1" if kind == "Job" else "v1"
    return {item["metadata"]["name"]: item for item in Api(plane).items(api_version, kind, namespace)}


def ordered(outcome: Outcome, namespace: str) -> list[str]:
    """The objects of one namespace in the order they were applied (``Kind name``)."""
    return [line.replace(f"{namespace}/", "") for line in outcome.applied if f" {namespace}/" in line]


# ------------------------------------------------------------------------------------------ applies nothing


def test_an_application_of_only_hooks_applies_nothing_and_the_tree_is_refused(
        tmp_path: Path, cluster_with_crds: ControlPlane) -> None:
    checkout = repository(tmp_path / "repo", {
        "only-hooks": [job("migrate", hook("pre-install,pre-upgrade")), job("smoke", hook("test")),
                       config_map("settings", {"argocd.argoproj.io/hook": "PostSync"})],
        "nothing": [],
        "fine": [config_map("settings"), job("migrate", hook("pre-install"))]})
    outcome = converge(cluster_with_crds, checkout, "argocd")
    refused = "\n".join(outcome.refused)
    assert "Application only-hooks applies nothing" in refused
    assert "Job only-hooks/migrate" in refused and "ConfigMap only-hooks/settings" in refused
    assert "Application nothing applies nothing: its sources render no objects" in refused
    assert len(outcome.refused) == 2, refused
    # what Argo CD does with such an Application: nothing, not even its namespace
    assert not ordered(outcome, "only-hooks") and not ordered(outcome, "nothing")
    assert "only-hooks" not in outcome.namespaces
    assert {"ConfigMap fine/settings", "Job fine/migrate"} <= set(outcome.applied)
    # the same check without an API server, as any test of a synced tree can run it
    static = empty_applications(checkout, REPO_URL)
    assert [line.split(":")[0] for line in static] == ["argocd/apps/nothing.yaml", "argocd/apps/only-hooks.yaml"]


def test_the_check_for_empty_applications_needs_no_api_server(tmp_path: Path) -> None:
    checkout = repository(tmp_path / "repo", {"only-tests": [job("smoke", hook("test"))],
                                              "fine": [config_map("settings")]})
    (empty,) = empty_applications(checkout, REPO_URL)
    assert empty.startswith("argocd/apps/only-tests.yaml: Application only-tests applies nothing")
    assert "Job only-tests/smoke (a hook of no sync phase (test): Argo CD ignores it)" in empty


def test_helm_runs_the_hooks_of_a_release_that_has_nothing_else(tmp_path: Path,
                                                                cluster_with_crds: ControlPlane) -> None:
    """Under Flux, Helm installs the release: its pre-install hook runs, its test hook does not."""
    checkout = repository(tmp_path / "repo", {"only-hooks": [job("migrate", hook("pre-install,pre-upgrade")),
                                                             job("smoke", hook("test"))]})
    outcome = converge(cluster_with_crds, checkout, "flux")
    assert not outcome.refused, outcome.refused
    assert outcome.hooks == ["Job only-hooks/migrate"]
    assert set(stored(cluster_with_crds, "Job", "only-hooks")) == {"migrate"}


# ------------------------------------------------------------------------------------------ order


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_pre_hooks_then_the_release_then_post_hooks_each_by_weight(tmp_path: Path, cluster_with_crds: ControlPlane,
                                                                    deployer: str) -> None:
    checkout = repository(tmp_path / "repo", {"mixed": [
        config_map("b-resource"), config_map("a-resource"),
        job("post-late", hook("post-install,post-upgrade", weight=5)),
        job("post-early", hook("post-install", weight=-5)),
        job("pre-z-light", hook("pre-install", weight=-1)),
        job("pre-a-heavy", hook("pre-install", weight=3)),
        config_map("pre-config", hook("pre-install", weight=3)),
        # an Argo CD hook annotation wins over the Helm one in Argo CD; Helm only reads its own
        job("argo-post", {**hook("pre-install", weight=0), "argocd.argoproj.io/hook": "PostSync"})]})
    outcome = converge(cluster_with_crds, checkout, deployer)
    assert not outcome.refused, outcome.refused
    if deployer == "argocd":  # phase, then wave (= hook weight), then kind, then name
        assert ordered(outcome, "mixed") == [
            "Job pre-z-light", "ConfigMap pre-config", "Job pre-a-heavy",
            "ConfigMap a-resource", "ConfigMap b-resource",
            "Job post-early", "Job argo-post", "Job post-late"]
    else:  # each event's hooks by weight then name; the release's objects in kind order, as rendered
        assert ordered(outcome, "mixed") == [
            "Job pre-z-light", "Job argo-post", "Job pre-a-heavy", "ConfigMap pre-config",
            "ConfigMap b-resource", "ConfigMap a-resource",
            "Job post-early", "Job post-late"]
    assert set(outcome.hooks) == {line for line in outcome.applied if "Job " in line or "pre-config" in line}


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_a_failed_pre_hook_stops_the_release(tmp_path: Path, cluster_with_crds: ControlPlane, deployer: str) -> None:
    checkout = repository(tmp_path / "repo", {"broken": [
        config_map("resource"), job("post", hook("post-install")),
        config_map("on-failure", {"argocd.argoproj.io/hook": "SyncFail"}),
        config_map("first", hook("pre-install", weight=0, delete="hook-failed")),
        job("second", hook("pre-install", weight=1, delete="hook-failed"), valid=False)]})
    outcome = converge(cluster_with_crds, checkout, deployer)
    refused = "\n".join(outcome.refused)
    assert "Job broken/second" in refused and "spec.template.spec.containers: Required value" in refused
    configs = stored(cluster_with_crds, "ConfigMap", "broken")
    assert "resource" not in configs and "post" not in stored(cluster_with_crds, "Job", "broken")
    if deployer == "argocd":
        # a failed sync deletes every hook with HookFailed (gitops-engine), and says what it never applied
        assert "sync failed in phase PreSync wave 1; never applied: ConfigMap resource, Job post" in refused
        assert "first" not in configs
        assert "ConfigMap broken/first (HookFailed)" in outcome.deleted
        assert "on-failure" in configs  # SyncFail hooks run once the sync failed
    else:
        # Helm deletes only the failed hook with hook-failed; an earlier one that succeeded stays
        assert "HelmRelease broken: pre-install hook Job broken/second failed" in refused
        assert "first" in configs
        assert not outcome.deleted
        assert "on-failure" not in configs  # a plain object of the release, which never got applied


# ------------------------------------------------------------------------------------------ delete policies


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_delete_policies(tmp_path: Path, cluster_with_crds: ControlPlane, deployer: str) -> None:
    checkout = repository(tmp_path / "repo", {"policies": [
        config_map("resource"),
        job("succeeded", hook("post-install", delete="hook-succeeded")),
        job("failed-only", hook("post-install", delete="hook-failed")),
        job("default", hook("pre-install")),
        job("argo-succeeded", {"argocd.argoproj.io/hook": "Sync",
                               "argocd.argoproj.io/hook-delete-policy": "HookSucceeded"})]})
    outcome = converge(cluster_with_crds, checkout, deployer)
    assert not outcome.refused, outcome.refused
    jobs = set(stored(cluster_with_crds, "Job", "policies"))
    if deployer == "argocd":
        assert jobs == {"failed-only", "default"}
        assert sorted(outcome.deleted) == ["Job policies/argo-succeeded (HookSucceeded)",
                                           "Job policies/succeeded (HookSucceeded)"]
    else:  # Helm knows no argocd.argoproj.io annotation: that Job is a plain object of the release
        assert jobs == {"failed-only", "default", "argo-succeeded"}
        assert outcome.deleted == ["Job policies/succeeded (hook-succeeded)"]
        assert "Job policies/argo-succeeded" not in outcome.hooks


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_hooks_are_created_again_on_every_sync_or_upgrade(tmp_path: Path, cluster_with_crds: ControlPlane,
                                                          deployer: str) -> None:
    """before-hook-creation (the default) deletes the previous run's hook and creates it anew; a hook without it is
    applied over the one left in place. Under Flux the second reconciliation is an upgrade: a hook of pre-install
    only does not run again."""
    checkout = repository(tmp_path / "repo", {"again": [
        config_map("resource"),
        job("recreated", hook("pre-install,pre-upgrade")),
        job("kept", hook("pre-install,pre-upgrade", delete="hook-failed")),
        job("install-only", hook("pre-install"))]})
    first = converge(cluster_with_crds, checkout, deployer)
    assert not first.refused, first.refused
    uids = {name: item["metadata"]["uid"] for name, item in stored(cluster_with_crds, "Job", "again").items()}
    second = converge(cluster_with_crds, checkout, deployer)
    assert not second.refused, second.refused
    again = {name: item["metadata"]["uid"] for name, item in stored(cluster_with_crds, "Job", "again").items()}
    assert again["recreated"] != uids["recreated"]
    assert again["kept"] == uids["kept"]
    assert "Job again/recreated (before-hook-creation)" in second.deleted
    if deployer == "argocd":  # a sync has no install/upgrade: pre-install and pre-upgrade are both PreSync
        assert again["install-only"] != uids["install-only"]
    else:
        assert again["install-only"] == uids["install-only"]
        assert "Job again/install-only" not in second.hooks


# ------------------------------------------------------------------------------------------ test hooks


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_test_hooks_are_never_applied_by_a_sync_or_an_install(tmp_path: Path, cluster_with_crds: ControlPlane,
                                                              deployer: str) -> None:
    checkout = repository(tmp_path / "repo", {"tested": [
        config_map("resource"), job("smoke", hook("test")), job("legacy", hook("test-success")),
        config_map("cleanup", {"argocd.argoproj.io/hook": "PostDelete"}),
        config_map("skipped", {"argocd.argoproj.io/hook": "Skip"})]})
    outcome = converge(cluster_with_crds, checkout, deployer)
    assert not outcome.refused, outcome.refused
    assert not stored(cluster_with_crds, "Job", "tested")
    skipped = "\n".join(outcome.skipped)
    assert "Job tested/smoke" in skipped or "Job smoke" in skipped
    if deployer == "argocd":
        assert set(stored(cluster_with_crds, "ConfigMap", "tested")) >= {"resource"}
        assert "cleanup" not in stored(cluster_with_crds, "ConfigMap", "tested")
        assert "skipped" not in stored(cluster_with_crds, "ConfigMap", "tested")
        assert "PostDelete" in skipped and "Skip" in skipped
    else:  # plain ConfigMaps to Helm
        assert {"resource", "cleanup", "skipped"} <= set(stored(cluster_with_crds, "ConfigMap", "tested"))
        assert "run only by helm test" in skipped


def test_flux_runs_test_hooks_after_the_release_when_tests_are_enabled(tmp_path: Path,
                                                                      cluster_with_crds: ControlPlane) -> None:
    checkout = repository(tmp_path / "repo", {"tested": [
        config_map("resource"), job("smoke", hook("test", delete="hook-succeeded")), job("kept", hook("test")),
        job("excluded", hook("test"))]}, test={"enable": True, "filters": [{"name": "excluded", "exclude": True}]})
    outcome = converge(cluster_with_crds, checkout, "flux")
    assert not outcome.refused, outcome.refused
    assert ordered(outcome, "tested") == ["ConfigMap resource", "Job kept", "Job smoke"]
    assert outcome.deleted == ["Job tested/smoke (hook-succeeded)"]
    assert set(stored(cluster_with_crds, "Job", "tested")) == {"kept"}
