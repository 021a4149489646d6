"""Rendered objects a merge changes (``review/releases``, ``objects``, ``rendered``): units read as each deployer
reads them from a real synced tree, noise filtered, secrets redacted, renames and moves paired."""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

import pytest
import yaml

from aicr_gen.gitops.review import objects
from aicr_gen.gitops.review.releases import Release, releases
from aicr_gen.gitops.review.rendered import Review, kube_version
from tests.conftest import REFERENCE, ROOT, use_reference
from tests.gitops.test_sync import ENV, init_repo

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
MANAGED = "clusters/h100-eks-ubuntu-inference-dynamo"
DEPLOYERS = ("argocd", "flux", "helm", "helmfile", "argocd-helm")


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The example's tree for every deployer, as ``aicr-gen sync`` commits it."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in ENV.items():
            patch.setenv(key, value)
        repo = init_repo(tmp_path_factory.mktemp("objects") / "gitops")
    spec = yaml.safe_load(EXAMPLE.read_text())
    spec["spec"]["deployers"] = list(DEPLOYERS)
    (repo / "spec.yaml").write_text(yaml.safe_dump(spec))
    done = subprocess.run([sys.executable, "-m", "aicr_gen", "sync", "spec.yaml"], cwd=repo, capture_output=True,
                          text=True, check=False, env={**os.environ, **ENV})
    assert done.returncode == 0, done.stderr
    root = repo / MANAGED
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def only(tree: dict[str, bytes], deployer: str) -> dict[str, bytes]:
    return {name: data for name, data in tree.items()
            if name.split("/", 1)[0] == deployer or name.split("/", 1)[0] not in DEPLOYERS}


def by_name(units: list[Release]) -> dict[tuple[str, str], Release]:
    return {(unit.kind, unit.name): unit for unit in units}


def test_every_deployer_deploys_the_recipes_charts_at_their_versions(tree: dict[str, bytes]) -> None:
    recipe = yaml.safe_load(tree["recipe.yaml"])
    wanted = {ref["name"]: (ref["chart"], ref["version"].removeprefix("v")) for ref in recipe["componentRefs"]
              if ref.get("chart") and ref.get("source")}
    for deployer in ("argocd", "flux", "helm"):
        found = {unit.component: (unit.chart.name, unit.chart.version.removeprefix("v"))
                 for unit in releases(only(tree, deployer), MANAGED) if unit.chart and not unit.chart.local}
        assert found == wanted, deployer


def test_argocd_units_name_release_namespace_values_and_the_root(tree: dict[str, bytes]) -> None:
    units = by_name(releases(only(tree, "argocd"), MANAGED))
    gpu = units[("Application", "gpu-operator")]
    assert (gpu.release, gpu.namespace, gpu.chart and gpu.chart.repository) == (
        "gpu-operator", "gpu-operator", "https://helm.ngc.nvidia.com/nvidia")
    assert gpu.values == tree["argocd/012-gpu-operator/values.yaml"].decode()  # $values/<repo path> read
    gateway = units[("Application", "agentgateway")]  # oci://host/path/chart with path "."
    assert gateway.chart and (gateway.chart.repository, gateway.chart.name) == ("oci://cr.agentgateway.dev/charts",
                                                                               "agentgateway")
    post = units[("Application", "agentgateway-post")]
    assert post.chart and post.chart.local and post.component == "agentgateway"
    root = units[("Application", "nvidia-stack")]
    assert root.root and all(name.endswith("/application.yaml") for name in root.manifests)
    assert units[("Application", "snapshot-agent")].manifests  # a kustomize folder's resources


def test_flux_names_releases_target_namespace_dash_name(tree: dict[str, bytes]) -> None:
    """helm-controller: the release name defaults to [targetNamespace-]name."""
    units = by_name(releases(only(tree, "flux"), MANAGED))
    gpu = units[("HelmRelease", "gpu-operator")]
    assert (gpu.release, gpu.namespace) == ("gpu-operator-gpu-operator", "gpu-operator")
    assert yaml.safe_load(gpu.values)["driver"]["enabled"] is True
    sentinel = units[("HelmRelease", "nvsentinel")]  # chartRef to an OCIRepository
    assert sentinel.chart and (sentinel.chart.repository, sentinel.chart.name) == ("oci://ghcr.io/nvidia",
                                                                                   "nvsentinel")
    assert units[("Kustomization", "flux-system")].root
    assert units[("HelmRelease", "agentgateway-post")].chart.local  # type: ignore[union-attr]


def test_a_unit_whose_inputs_do_not_change_is_not_rendered(tree: dict[str, bytes]) -> None:
    class Refuse:
        def remote(self, *args: Any, **kwargs: Any) -> tuple[str | None, str]:
            raise AssertionError("rendered an unchanged chart")

        local = remote

    apps, verdicts = Review(Refuse()).review(tree, dict(tree), MANAGED)
    assert (apps, verdicts) == ([], [])


def test_a_local_manifest_rename_is_paired_and_judged_manual(tree: dict[str, bytes]) -> None:
    name = "argocd/007-agentgateway-post/templates/inference-gateway.yaml"
    new = {**tree, name: tree[name].replace(b"name: inference-gateway\n  namespace", b"name: gateway\n  namespace", 1)}
    apps, verdicts = Review(None).review(only(tree, "argocd"), only(new, "argocd"), MANAGED)
    (app,) = apps
    assert (app.kind, app.name, app.rendered) == ("Application", "agentgateway-post", True)
    (change,) = app.objects
    assert (change.change, change.name, change.was) == ("renamed", "gateway", "agentgateway-system/inference-gateway")
    (verdict,) = verdicts
    assert (verdict.component, verdict.verdict, [r.code for r in verdict.reasons]) == ("agentgateway", "manual",
                                                                                        ["renamed"])


def test_a_remote_chart_without_a_renderer_is_listed_not_rendered(tree: dict[str, bytes]) -> None:
    name = "argocd/012-gpu-operator/values.yaml"
    new = {**tree, name: tree[name] + b"extra: 1\n"}
    apps, verdicts = Review(None).review(only(tree, "argocd"), only(new, "argocd"), MANAGED)
    assert [(app.name, app.rendered, app.note) for app in apps] == [
        ("gpu-operator", False, "base: charts are not rendered (--no-render); merge: charts are not rendered "
                                "(--no-render)")]
    assert verdicts == []


def test_the_kubernetes_version_is_the_lowest_the_recipe_allows(tree: dict[str, bytes]) -> None:
    assert kube_version(tree) == "1.34.0"
    assert kube_version({}) == ""


def deployment(name: str = "d", namespace: str = "n", **extra: Any) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": namespace,
            "labels": {"helm.sh/chart": "x-1.0.0", "app.kubernetes.io/version": "1.0", "app": "d"}},
            "spec": {"selector": {"matchLabels": {"app": "d"}}, "template": {"metadata": {
                "annotations": {"checksum/config": "abc"}, "labels": {"app": "d", "helm.sh/chart": "x-1.0.0"}},
                "spec": {"containers": [{"name": "c", "image": "img:1"}]}}}, **extra}


def test_noise_is_filtered_and_what_is_left_compared() -> None:
    old = objects.keyed([deployment()], "default")
    noisy = deployment()
    noisy["metadata"]["labels"].update({"helm.sh/chart": "x-2.0.0", "app.kubernetes.io/version": "2.0"})
    noisy["spec"]["template"]["metadata"]["annotations"]["checksum/config"] = "def"
    assert objects.changes(old, objects.keyed([noisy], "default")) == []
    real = deployment()
    real["spec"]["template"]["spec"]["containers"][0]["image"] = "img:2"
    (change,) = objects.changes(old, objects.keyed([real], "default"))
    assert change.change == "changed" and "-          image: img:1\n+          image: img:2\n" in change.diff
    assert "helm.sh/chart" not in change.diff and change.lines == 2


def test_secrets_are_redacted_and_a_change_to_one_is_still_shown() -> None:
    def secret(value: str) -> dict[str, Any]:
        return {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"},
                "data": {"keep": "a2VlcA==", "rotate": value}, "stringData": {"plain": "hunter2"}}

    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "n"},
              "data": {"apiToken": "t0p", "mode": "on"}}
    (change,) = objects.changes(objects.keyed([secret("b2xk"), config], "n"),
                                objects.keyed([secret("bmV3"), {**config, "data": {"apiToken": "t0p2", "mode": "on"}}],
                                              "n"))[:1]
    everything = "".join(item.diff for item in objects.changes(
        objects.keyed([secret("b2xk"), config], "n"),
        objects.keyed([secret("bmV3"), {**config, "data": {"apiToken": "t0p2", "mode": "on"}}], "n")))
    for leaked in ("b2xk", "bmV3", "hunter2", "a2VlcA==", "t0p"):
        assert leaked not in everything
    assert "+  rotate: <redacted, changed>" in everything and "+  apiToken: <redacted, changed>" in everything
    assert "keep" not in change.diff.split("@@")[-1].replace("keep: <redacted>", "")  # unchanged: context only


def test_a_move_to_another_namespace_is_paired_and_unrelated_objects_are_not() -> None:
    old = objects.keyed([deployment("d", "a"), deployment("other", "a", extra={"x": 1})], "default")
    new = objects.keyed([deployment("d", "b"), {"apiVersion": "v1", "kind": "Service",
                                                  "metadata": {"name": "other", "namespace": "a"}}], "default")
    found = {(item.kind, item.change, item.name, item.was) for item in objects.changes(old, new)}
    assert ("Deployment", "moved", "d", "a/d") in found
    assert ("Deployment", "removed", "other", None) in found and ("Service", "added", "other", None) in found


def test_lists_unroll_helm_test_hooks_and_generated_names_drop_and_cluster_kinds_lose_namespaces() -> None:
    text = """\
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: ConfigMap
    metadata: {name: listed}
---
apiVersion: v1
kind: Pod
metadata:
  name: test-connection
  annotations: {helm.sh/hook: test}
---
apiVersion: batch/v1
kind: Job
metadata: {generateName: run-}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: r, namespace: ignored}
"""
    assert sorted(objects.keyed(objects.parse([text]), "rel")) == [
        ("", "ConfigMap", "rel", "listed"), ("rbac.authorization.k8s.io", "ClusterRole", "", "r")]


POOLS = ROOT / "examples" / "pools" / "eks-h100-gb200.yaml"
NVIDIADRIVER = REFERENCE / "crds" / "gpu-operator" / "nvidia.com_nvidiadrivers.yaml"
DRIVERS = "argocd/010-gpu-operator-post/templates/nvidia-drivers.yaml"


@pytest.fixture(scope="module")
def pools_tree(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """The mixed-pools example's tree: one NVIDIADriver per pool in gpu-operator's -post chart folder."""
    with pytest.MonkeyPatch.context() as patch:
        for key, value in ENV.items():
            patch.setenv(key, value)
        repo = init_repo(tmp_path_factory.mktemp("pools") / "gitops")
    (repo / "spec.yaml").write_text(POOLS.read_text())
    (repo / "gb200-rules.yaml").write_text((POOLS.parent / "gb200-rules.yaml").read_text())
    done = subprocess.run([sys.executable, "-m", "aicr_gen", "sync", "spec.yaml"], cwd=repo, capture_output=True,
                          text=True, check=False, env={**os.environ, **ENV})
    assert done.returncode == 0, done.stderr
    root = repo / yaml.safe_load(POOLS.read_text())["spec"]["repo"]["path"]
    return {str(path.relative_to(root)): path.read_bytes() for path in root.rglob("*") if path.is_file()}


class GpuOperatorChart:
    """A renderer whose gpu-operator chart holds the real NVIDIADriver CRD (the rest of the chart does not
    matter here; helm itself is exercised in tests/mirror/test_chart_render.py)."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def remote(self, repository: str, chart: str, version: str, **_: Any) -> tuple[str | None, str]:
        self.asked.append(chart)
        if chart != "gpu-operator":
            return None, "not in this test"
        return use_reference(NVIDIADRIVER).read_text(), ""

    def local(self, files: Any, **_: Any) -> tuple[str | None, str]:
        return None, "not in this test"


def test_a_pool_driver_bump_is_safe_and_a_driver_type_change_blocked_by_the_crd_of_another_chart(
        pools_tree: dict[str, bytes]) -> None:
    path = yaml.safe_load(POOLS.read_text())["spec"]["repo"]["path"]
    bumped = {**pools_tree, DRIVERS: pools_tree[DRIVERS].replace(b'version: "580.173.02"', b'version: "590.44.01"', 1)}
    apps, verdicts = Review(None).review(pools_tree, bumped, path)
    (app,) = apps
    assert [(item.kind, item.name, item.change) for item in app.objects] == [("NVIDIADriver", "h100", "changed")]
    (verdict,) = verdicts
    assert (verdict.verdict, verdict.unchecked) == ("safe", ["NVIDIADriver h100"])  # no CRD: say so, not "safe"
    if not NVIDIADRIVER.exists():
        pytest.skip(f"reference data {NVIDIADRIVER} not found (set AICR_GEN_REFERENCE)")
    chart = GpuOperatorChart()
    (verdict,) = Review(chart).review(pools_tree, bumped, path)[1]
    assert (verdict.verdict, verdict.unchecked, "gpu-operator" in chart.asked) == ("safe", [], True)
    retyped = {**pools_tree, DRIVERS: pools_tree[DRIVERS].replace(b"driverType: gpu", b"driverType: vgpu", 1)}
    (verdict,) = Review(GpuOperatorChart()).review(pools_tree, retyped, path)[1]
    assert verdict.verdict == "blocked"
    assert [(reason.code, reason.object) for reason in verdict.reasons] == [("transition-rule", "NVIDIADriver h100")]
    assert "driverType is an immutable field" in verdict.reasons[0].text


def test_a_driver_bump_tells_the_reviewer_how_the_nodes_roll(pools_tree: dict[str, bytes]) -> None:
    from aicr_gen.gitops.review.plan import cluster_plan

    path = yaml.safe_load(POOLS.read_text())["spec"]["repo"]["path"]
    bumped = {**pools_tree, DRIVERS: pools_tree[DRIVERS].replace(b'version: "580.173.02"', b'version: "590.44.01"', 1)}
    found = cluster_plan("training-mixed", "spec.yaml", path, old=pools_tree, new=bumped, findings=[])
    rollout = [item.text for item in found.onMerge if item.kind == "driver-rollout"]
    assert len(rollout) == 1 and rollout[0].startswith("GPU driver h100 580.173.02 -> 590.44.01: the GPU operator "
                                                        "replaces the driver node by node")
    assert cluster_plan("training-mixed", "spec.yaml", path, old=pools_tree, new=dict(pools_tree),
                        findings=[]).onMerge == []


def test_clusters_named_apart_share_one_comparison_and_get_the_same_answer(tree: dict[str, bytes]) -> None:
    """A shared Argo CD hub names each release after its cluster: the second cluster reuses the first's object
    changes and verdict with its own name put back, exactly what comparing it afresh gives."""
    class Chart:
        def __init__(self) -> None:
            self.rendered = 0

        def remote(self, repository: str, chart: str, version: str, *, release: str, **_: Any) -> tuple[str, str]:
            self.rendered += 1
            selector = "a" if version == "26.3.3" else "b"  # the new version changes an immutable selector
            return (f"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: {release}-operator\n"
                    f"  namespace: gpu-operator\nspec:\n  selector:\n    matchLabels:\n      app: {selector}\n"
                    f"  template:\n    spec:\n      containers:\n        - image: op:{version}\n"), ""

        def local(self, *args: Any, **kwargs: Any) -> tuple[None, str]:
            return None, "not here"

    def cluster(name: str) -> tuple[dict[str, bytes], dict[str, bytes]]:
        app = "argocd/012-gpu-operator/application.yaml"
        old = {**only(tree, "argocd"), app: tree[app].replace(b"name: gpu-operator\n", f"name: {name}\n".encode(),
                                                              1)}
        return old, {**old, app: old[app].replace(b'targetRevision: "26.3.3"', b'targetRevision: "26.4.0"')}

    shared, fresh = Review(Chart()), Review(Chart())
    shared.review(*cluster("gpu-a-gpu-operator"), MANAGED)
    reused = shared.review(*cluster("gpu-b-gpu-operator"), MANAGED)
    alone = fresh.review(*cluster("gpu-b-gpu-operator"), MANAGED)
    assert reused == alone and len(shared._by_shape) == 1
    (app,) = [unit for unit in reused[0] if unit.name == "gpu-b-gpu-operator"]
    assert [item.name for item in app.objects] == ["gpu-b-gpu-operator-operator"]
    (verdict,) = reused[1]
    assert verdict.verdict == "blocked"
    assert verdict.reasons[0].object == "Deployment gpu-operator/gpu-b-gpu-operator-operator"
