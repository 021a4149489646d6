"""Mixed GPU pools (``spec.pools``): one recipe per pool, one merged stack, one NVIDIADriver per pool.

The story: an EKS training cluster with an H100 and a GB200 pool syncs into one tree whose GPU Operator runs in
NVIDIADriver mode with two drivers on disjoint selectors; the same spec on AKS (the node images own the driver)
emits none. Applying the tree to a real API server is in tests/cluster/test_converge_pools.py.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.render.nvidia_driver import documents
from aicr_gen.spec.load import load_spec
from aicr_gen.spec.pools import disjoint
from tests.conftest import REFERENCE, ROOT, assert_refused, use_reference

EXAMPLE = ROOT / "examples" / "pools" / "eks-h100-gb200.yaml"
H100 = {"node.kubernetes.io/instance-type": "p5.48xlarge"}
GB200 = {"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}
CRD = REFERENCE / "crds" / "gpu-operator" / "nvidia.com_nvidiadrivers.yaml"


def example() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    return loaded


def write(tmp_path: Path, data: dict[str, Any], name: str = "cluster.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    rules = EXAMPLE.parent / "gb200-rules.yaml"  # the example's spec.sentinel.rules, beside it
    (tmp_path / rules.name).write_bytes(rules.read_bytes())
    return path


def variant(tmp_path: Path, change: Any) -> Path:
    data = copy.deepcopy(example())
    change(data["spec"])
    return write(tmp_path, data)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, text=True).stdout


def synced(cli: Any, tmp_path: Path, spec: Path) -> dict[str, str]:
    """``spec`` synced into a new repository: its committed files under clusters/training-mixed."""
    repo = tmp_path / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "i")
    result = cli("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    prefix = "clusters/training-mixed/"
    return {path[len(prefix):]: git(repo, "show", f"HEAD:{path}")
            for path in git(repo, "ls-tree", "-r", "--name-only", "HEAD").split() if path.startswith(prefix)}


def drivers_in(files: dict[str, str], deployer: str) -> list[dict[str, Any]]:
    found = [path for path in files if path.startswith(f"{deployer}/") and path.endswith("/nvidia-drivers.yaml")]
    assert len(found) <= 1, found
    return [doc for doc in yaml.safe_load_all(files[found[0]]) if doc] if found else []


# ------------------------------------------------------------------------------------------- the spec


def test_selectors_are_disjoint_only_when_a_shared_key_differs() -> None:
    assert disjoint(H100, GB200)
    assert disjoint({"a": "1", "b": "x"}, {"a": "2"})
    assert not disjoint({"a": "1"}, {"b": "2"})  # a node can carry both labels
    assert not disjoint({"a": "1"}, {"a": "1", "b": "2"})
    assert not disjoint({}, H100)


def test_overlapping_selectors_are_refused_naming_both_pools(cli: Any, tmp_path: Path) -> None:
    def overlap(spec: dict[str, Any]) -> None:
        spec["pools"][1]["nodeSelector"] = {"nvidia.com/gpu.family": "blackwell"}

    result = cli("lint", str(variant(tmp_path, overlap)))
    assert_refused(result, "cluster.yaml:", "spec.pools[1].nodeSelector", "'h100'", "'gb200'",
                   "can select the same node")


@pytest.mark.parametrize(("change", "fragments"), [
    (lambda spec: spec["criteria"].update(accelerator="h100"),
     ("spec.criteria.accelerator", "each pool names its accelerator")),
    (lambda spec: spec["pools"][1].update(name="h100"), ("spec.pools[1].name", "named twice")),
    (lambda spec: spec["pools"][0].update(name="H100_pool"), ("spec.pools[0].name", "does not match")),
    (lambda spec: spec["pools"][0].update(nodeSelector={}), ("spec.pools[0].nodeSelector",)),
    (lambda spec: spec["pools"][0].update(nodeSelector={"nvidia.com/gpu-operator.driver.owner": "x"}),
     ("rejects selectors on it",)),
    (lambda spec: spec["pools"][0].update(overrides={"set": ["no-colon"]}), ("spec.pools[0].overrides.set[0]",)),
    (lambda spec: spec["pools"][1].update(tolerations=["nvidia.com/gpu"]),
     ("spec.pools[1].tolerations[0]", "key=value:effect or key:effect")),
    (lambda spec: spec.update(scheduling={"acceleratedNodeSelector": {"nvidia.com/gpu-operator.driver.owner": "x"}}),
     ("spec.scheduling.acceleratedNodeSelector", "rejects selectors on it")),
], ids=["accelerator-and-pools", "duplicate-name", "not-a-dns-label", "empty-selector", "owner-label",
        "bad-override", "bad-toleration", "owner-label-cluster-wide"])
def test_bad_pools_are_refused_at_their_line(cli: Any, tmp_path: Path, change: Any, fragments: tuple[str, ...]) -> None:
    assert_refused(cli("lint", str(variant(tmp_path, change))), *fragments)


def test_a_spec_without_pools_resolves_as_before(tmp_path: Path) -> None:
    from aicr_gen.gitops.trees.recipes import resolve_spec
    single = example()
    single["spec"].pop("pools")
    single["spec"].pop("sentinel")  # its ruleSetPools name the pools
    single["spec"]["criteria"]["accelerator"] = "h100"
    recipe = resolve_spec(load_spec(write(tmp_path, single)))
    assert recipe["criteria"]["accelerator"] == "h100"
    operator = next(ref for ref in recipe["componentRefs"] if ref["name"] == "gpu-operator")
    assert "nvidiaDriverCRD" not in json.dumps(operator.get("overrides", {}))


# ------------------------------------------------------------------------------------------- the tree


def test_h100_and_gb200_sync_into_one_tree_with_a_driver_per_pool(cli: Any, tmp_path: Path) -> None:
    files = synced(cli, tmp_path, EXAMPLE)
    merged = yaml.safe_load(files["recipe.yaml"])
    assert "accelerator" not in merged["criteria"]
    assert merged["criteria"]["nodes"] == 34
    operator = next(ref for ref in merged["componentRefs"] if ref["name"] == "gpu-operator")
    assert operator["overrides"]["driver"] == {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}
    assert operator["preManifestFiles"] == ["components/gpu-operator/manifests/gb200-kernel-module-params.yaml"]
    floors = {c["name"]: c["value"] for c in merged["validation"]["deployment"]["constraints"]}
    assert floors["Deployment.gpu-operator.version"] == ">= v25.10.0"  # the GB200 floor beats the H100 one
    assert "performance" not in merged["validation"]  # NCCL floors differ per GPU: in the pools' recipes only
    for pool, accelerator in (("h100", "h100"), ("gb200", "gb200")):
        own = yaml.safe_load(files[f"pools/{pool}/recipe.yaml"])
        assert own["criteria"]["accelerator"] == accelerator
        assert own["validation"]["performance"]["constraints"]
    assert "| gb200 | gb200 |" in files["pools/README.md"]

    drivers = drivers_in(files, "argocd")
    assert [doc["metadata"]["name"] for doc in drivers] == ["h100", "gb200"]
    by_pool = {doc["metadata"]["name"]: doc["spec"] for doc in drivers}
    assert by_pool["h100"]["nodeSelector"] == H100
    assert by_pool["gb200"]["nodeSelector"] == GB200
    assert disjoint(by_pool["h100"]["nodeSelector"], by_pool["gb200"]["nodeSelector"])
    assert by_pool["gb200"]["kernelModuleConfig"] == {"name": "nvidia-kernel-module-params"}
    assert "kernelModuleConfig" not in by_pool["h100"]
    for spec in by_pool.values():
        assert spec["version"] == "580.173.02"
        assert spec["kernelModuleType"] == "open"  # the values' useOpenKernelModules: true
        assert spec["gdrcopy"] == {"enabled": True}
        assert "default" not in spec  # v26.3.3's CRD has no such field
    for deployer in ("flux",):
        assert drivers_in(files, deployer) == []  # the example renders argocd only
    folders = sorted({path.split("/")[1] for path in files if path.startswith("argocd/0")})
    for component in ("gpu-operator", "nfd", "cert-manager", "kube-prometheus-stack"):
        assert sum(folder.split("-", 1)[1] == component for folder in folders) == 1  # shared: rendered once
    assert [folder.split("-", 1)[1] for folder in folders if "gpu-operator" in folder] == [
        "gpu-operator-pre", "gpu-operator", "gpu-operator-post"]
    values = yaml.safe_load(next(text for path, text in files.items()
                                 if path.startswith("argocd/") and path.endswith("-gpu-operator/values.yaml")))
    assert values["driver"]["nvidiaDriverCRD"] == {"enabled": True, "deployDefaultCR": False}


def test_every_deployer_applies_the_drivers_after_the_chart(cli: Any, tmp_path: Path) -> None:
    files = synced(cli, tmp_path, variant(tmp_path, lambda spec: spec.update(
        deployers=["argocd", "argocd-helm", "flux", "helm", "helmfile"])))
    for deployer in ("argocd", "flux", "helm", "helmfile"):
        assert [doc["metadata"]["name"] for doc in drivers_in(files, deployer)] == ["h100", "gb200"], deployer
    dra = yaml.safe_load(next(text for path, text in files.items()
                              if path.startswith("flux/") and path.endswith("nvidia-dra-driver-gpu/helmrelease.yaml")))
    assert {"name": "gpu-operator-post"} in dra["spec"]["dependsOn"]  # dependents wait for the drivers


def test_a_cloud_owned_driver_emits_no_nvidiadriver(cli: Any, tmp_path: Path) -> None:
    spec = variant(tmp_path, lambda spec: spec["criteria"].update(service="aks"))
    files = synced(cli, tmp_path, spec)
    assert all(not path.endswith("nvidia-drivers.yaml") for path in files)
    operator = next(ref for ref in yaml.safe_load(files["recipe.yaml"])["componentRefs"]
                    if ref["name"] == "gpu-operator")
    assert "nvidiaDriverCRD" not in json.dumps(operator.get("overrides", {}))
    assert "the node images own the driver" in files["pools/README.md"]
    shown = cli("spec", "show", str(spec))
    assert shown.code == 0, shown
    assert "# driver: the node images own the driver" in shown.out
    assert "no NVIDIADriver is emitted" in shown.out


def test_spec_show_tells_which_pool_brought_what(cli: Any) -> None:
    shown = cli("spec", "show", str(EXAMPLE))
    assert shown.code == 0, shown
    lines = shown.out.splitlines()
    assert "# The pools, resolved:" in lines
    assert any(line.startswith("# gpu-operator preManifestFiles") and "gb200: [\"components/gpu-operator/manifests/"
               in line for line in lines)
    assert any("Deployment.gpu-operator.version = >= v25.10.0, the highest floor" in line for line in lines)
    assert any(line.startswith("# NVIDIADriver gb200:") and "kernelModuleConfig" in line for line in lines)
    as_json = json.loads(cli("spec", "show", str(EXAMPLE), "--format", "json").out)
    assert as_json["pools"][0].startswith("driver: the GPU Operator installs the driver")


# ------------------------------------------------------------------------------------------- disagreements


def test_a_cluster_wide_disagreement_names_component_key_pools_and_fix(cli: Any, tmp_path: Path) -> None:
    def diverge(spec: dict[str, Any]) -> None:
        spec["pools"][0]["overrides"] = {"set": ["nfd:topologyUpdater.enable=false"]}

    spec = variant(tmp_path, diverge)
    result = cli("lint", str(spec))
    assert_refused(result, "spec.pools", "component 'nfd'", "key 'topologyUpdater.enable'", "h100: False",
                   "gb200: True", 'spec.overrides.set: ["nfd:topologyUpdater.enable=VALUE"]')

    def decided(spec: dict[str, Any]) -> None:
        diverge(spec)
        spec["overrides"] = {"set": ["nfd:topologyUpdater.enable=false"]}

    assert cli("lint", str(variant(tmp_path, decided))).code == 0


def test_a_version_disagreement_is_fixed_by_a_versions_pin(cli: Any, tmp_path: Path) -> None:
    def diverge(spec: dict[str, Any]) -> None:
        spec["pools"][1]["versions"] = {"nfd": "0.18.3"}

    assert_refused(cli("lint", str(variant(tmp_path, diverge))), "component 'nfd'", "key 'version'",
                   "spec.versions: {nfd: VERSION}")

    def pinned(spec: dict[str, Any]) -> None:
        spec["versions"] = {"nfd": "0.18.3"}

    assert cli("lint", str(variant(tmp_path, pinned))).code == 0
    bad = variant(tmp_path, lambda spec: spec["pools"][0].update(versions={"no-such": "1.0"}))
    assert_refused(cli("lint", str(bad)), "spec.pools[0].versions.no-such", "has no component 'no-such'")


def test_a_pool_override_sets_that_pools_driver_only(tmp_path: Path) -> None:
    from aicr_gen.gitops.trees.recipes import resolve_pools
    spec = variant(tmp_path, lambda spec: spec["pools"][0].update(
        overrides={"set": ["gpuoperator:driver.version=570.195.03"]}))  # a registry alias works too
    resolution = resolve_pools(load_spec(spec))
    assert resolution.drivers["h100"]["version"] == "570.195.03"
    assert resolution.drivers["gb200"]["version"] == "580.173.02"
    assert any(d.key == "driver.version" and d.rule.startswith("per pool") for d in resolution.decisions)


def test_a_pools_driver_runs_where_the_cluster_schedules_gpu_pods_unless_the_pool_says(tmp_path: Path) -> None:
    """A pool's nodes are accelerated nodes: its NVIDIADriver takes spec.scheduling's GPU selector and
    tolerations; a pool's own tolerations refine them."""
    from aicr_gen.gitops.trees.recipes import resolve_pools
    def schedule(spec: dict[str, Any]) -> None:
        spec["scheduling"] = {"acceleratedNodeSelector": {"nvidia.com/gpu.present": "true"},
                              "acceleratedNodeTolerations": ["nvidia.com/gpu=present:NoSchedule"]}
        spec["pools"][1]["tolerations"] = ["nvidia.com/gpu:NoSchedule", "gb200:NoExecute"]

    drivers = resolve_pools(load_spec(variant(tmp_path, schedule))).drivers
    assert drivers["h100"]["nodeSelector"] == {"nvidia.com/gpu.present": "true", **H100}
    assert drivers["h100"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Equal", "value": "present",
                                               "effect": "NoSchedule"}]
    assert drivers["gb200"]["tolerations"] == [
        {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},
        {"key": "gb200", "operator": "Exists", "effect": "NoExecute"}]
    plain = resolve_pools(load_spec(variant(tmp_path, lambda spec: None))).drivers
    assert plain["h100"]["tolerations"] == [{"operator": "Exists"}] and plain["h100"]["nodeSelector"] == H100


def test_the_highest_operator_version_wins(tmp_path: Path) -> None:
    from aicr_gen.gitops.trees.recipes import resolve_pools
    spec = variant(tmp_path, lambda spec: spec["pools"][0].update(versions={"gpu-operator": "v25.10.1"}))
    resolution = resolve_pools(load_spec(spec))
    assert resolution.operator_version == "v26.3.3"
    operator = next(ref for ref in resolution.merged["componentRefs"] if ref["name"] == "gpu-operator")
    assert operator["version"] == "v26.3.3"
    old = variant(tmp_path, lambda spec: spec.update(versions={"gpu-operator": "v23.6.2"}))
    with pytest.raises(Exception, match="has no NVIDIADriver"):
        resolve_pools(load_spec(old))


# ------------------------------------------------------------------------------------------- the CRD


def _schema() -> dict[str, Any]:
    from tests.consumers import _crd_version_schema

    crd = yaml.safe_load(use_reference(CRD).read_text(encoding="utf-8"))
    version = crd["spec"]["versions"][0]
    return _crd_version_schema(version["schema"]["openAPIV3Schema"], f"nvidia.com/{version['name']}", "NVIDIADriver")


def test_drivers_validate_against_the_nvidiadriver_crd_schema(tmp_path: Path) -> None:
    """The reference CRD is v26.7.0's (spec.default required, upgradePolicy per CR): pinned to it, the documents
    carry both and pass; on the catalog's v26.3.3 they carry neither (that CRD has no such fields)."""
    from aicr_gen.gitops.trees.recipes import resolve_pools
    from tests.consumers import validate_objects

    schema = _schema()
    spec = variant(tmp_path, lambda spec: spec.update(versions={"gpu-operator": "v26.7.0"}))
    resolution = resolve_pools(load_spec(spec))
    docs = documents(resolution.drivers, resolution.operator_version)
    assert validate_objects(docs, extra_schemas={("nvidia.com/v1alpha1", "NVIDIADriver"): schema}) == 2
    assert all(doc["spec"]["default"] is False for doc in docs)
    assert docs[0]["spec"]["upgradePolicy"] == {"maxParallelUpgrades": 3}
    current = resolve_pools(load_spec(EXAMPLE))
    older = {**schema, "properties": {**schema["properties"], "spec": {
        **schema["properties"]["spec"], "required": ["driverType", "image"]}}}  # v26.3.x requires these two
    assert validate_objects(documents(current.drivers, current.operator_version),
                            extra_schemas={("nvidia.com/v1alpha1", "NVIDIADriver"): older}) == 2


@pytest.mark.parametrize("generation", ["aicr.run/v1", "aicr.run/v1alpha2"])
def test_each_pools_recipe_has_the_header_of_the_clusters(cli: Any, tmp_path: Path, generation: str) -> None:
    files = synced(cli, tmp_path, variant(tmp_path, lambda spec: spec.update(aicrApiVersion=generation)))
    headers = {path: yaml.safe_load(text)["apiVersion"] for path, text in files.items()
               if path == "recipe.yaml" or (path.startswith("pools/") and path.endswith("/recipe.yaml"))}
    assert set(headers) == {"recipe.yaml", "pools/h100/recipe.yaml", "pools/gb200/recipe.yaml"}
    assert set(headers.values()) == {generation}
