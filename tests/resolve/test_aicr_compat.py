"""AICR's own catalog, read unchanged, resolves exactly as AICR resolves it.

Oracles: AICR's UAT expectation for eks/h100/ubuntu/inference/dynamo, AICR's registry pins, AICR's
coverage golden entries (criteria -> outcome, uncovered dimensions, valid completions) and the error
texts of AICR's resolver.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
import yaml

from tests.conftest import AICR_CATALOG, REFERENCE, needs_reference

pytestmark = needs_reference

CUJ2 = ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo")


def _recipe(cli: Any, *args: str) -> dict[str, Any]:
    result = cli("recipe", "--catalog", str(AICR_CATALOG), *args, "--format", "json")
    assert result.code == 0, result.err
    recipe: dict[str, Any] = json.loads(result.out)
    return recipe


def _error(cli: Any, *args: str) -> str:
    result = cli("recipe", "--catalog", str(AICR_CATALOG), *args)
    assert result.code == 2, result.out
    assert "Traceback" not in result.err
    return str(result.err)


def test_cuj2_matches_aicr_uat_expectation(cli: Any) -> None:
    expected = yaml.safe_load((REFERENCE / "aicr/tests/uat/aws/tests/cuj2-inference/assert-recipe.yaml").read_text())
    recipe = _recipe(cli, *CUJ2, "--api-version", "aicr.run/v1alpha2")  # the generation AICR wrote it in
    assert recipe["kind"] == expected["kind"]
    assert recipe["apiVersion"] == expected["apiVersion"]
    assert {k: v for k, v in recipe["criteria"].items() if k in expected["criteria"]} == expected["criteria"]
    assert recipe["constraints"] == expected["constraints"]
    assert [ref["name"] for ref in recipe["componentRefs"]] == [ref["name"] for ref in expected["componentRefs"]]
    assert recipe["deploymentOrder"] == expected["deploymentOrder"]
    assert recipe["metadata"]["appliedOverlays"] == [
        "base", "monitoring-hpa", "h100-any", "eks", "eks-inference", "h100-eks-inference",
        "h100-eks-ubuntu-inference", "h100-eks-ubuntu-inference-dynamo"]


def test_cuj2_versions_and_namespaces_come_from_the_registry(cli: Any) -> None:
    registry = {c["name"]: c for c in yaml.safe_load((AICR_CATALOG / "registry.yaml").read_text())["components"]}
    recipe = _recipe(cli, *CUJ2)
    for ref in recipe["componentRefs"]:
        helm = registry[ref["name"]]["helm"]
        assert ref["namespace"] == helm["defaultNamespace"], ref["name"]
        if helm.get("defaultVersion"):
            assert ref["version"] == helm["defaultVersion"], ref["name"]
            assert ref["chart"] == helm["defaultChart"].rsplit("/", 1)[-1]
    by_name = {ref["name"]: ref for ref in recipe["componentRefs"]}
    assert (by_name["gpu-operator"]["version"], by_name["gpu-operator"]["namespace"]) == ("v26.3.3", "gpu-operator")
    assert by_name["nvsentinel"]["source"] == "oci://ghcr.io/nvidia"
    assert by_name["nodewright-customizations"]["source"] == ""  # manifest-only: source is always written


def test_health_checks_are_hydrated_verbatim(cli: Any) -> None:
    recipe = _recipe(cli, *CUJ2)
    gpu = next(ref for ref in recipe["componentRefs"] if ref["name"] == "gpu-operator")
    assert gpu["healthCheckAsserts"] == (AICR_CATALOG / "checks/gpu-operator/health-check.yaml").read_text()


def _leaves(cli: Any) -> list[dict[str, Any]]:
    result = cli("recipe", "list", "--catalog", str(AICR_CATALOG), "--format", "json")
    assert result.code == 0, result.err
    rows: list[dict[str, Any]] = json.loads(result.out)
    return rows


def test_recipe_list_shows_aicr_45_leaves(cli: Any) -> None:
    rows = _leaves(cli)
    assert len(rows) == 45
    assert {"name": "h100-eks-ubuntu-inference-dynamo", "criteria": {
        "service": "eks", "accelerator": "h100", "intent": "inference", "os": "ubuntu", "platform": "dynamo"}} in rows
    table = cli("recipe", "list", "--catalog", str(AICR_CATALOG))
    assert table.out.splitlines()[0].split() == ["NAME", "SERVICE", "ACCELERATOR", "INTENT", "OS", "PLATFORM"]
    assert len(table.out.splitlines()) == 46


def assert_dependencies_first(recipe: dict[str, Any]) -> None:
    """Every enabled component is ordered exactly once, after each of its enabled dependencies."""
    enabled = {ref["name"]: ref for ref in recipe["componentRefs"]
               if (ref.get("overrides") or {}).get("enabled") is not False
               and (ref.get("overrides") or {}).get("install") is not False}
    order = recipe["deploymentOrder"]
    assert sorted(order) == sorted(enabled)
    position = {name: index for index, name in enumerate(order)}
    for name, ref in enabled.items():
        for dep in ref.get("dependencyRefs", []):
            assert dep not in enabled or position[dep] < position[name], (name, dep)


def test_every_aicr_leaf_resolves_from_its_own_criteria(cli: Any) -> None:
    """As AICR's catalog parity test does it: each leaf with its own criteria, through the library (the
    CLI, like AICR's, refuses a query whose criteria are all wildcards, such as monitoring-hpa's)."""
    from aicr_gen.catalog.load import load
    from aicr_gen.resolve import recipe
    from aicr_gen.resolve.criteria import normalise

    catalog = load([AICR_CATALOG])
    for row in _leaves(cli):
        result = recipe.resolve(catalog, normalise(row["criteria"]))
        assert row["name"] in result["metadata"]["appliedOverlays"], row["name"]
        assert_dependencies_first(result)
        args = [item for dim, value in row["criteria"].items() if value != "any" for item in (f"--{dim}", value)]
        if args:
            assert _recipe(cli, *args) == json.loads(json.dumps(result)), row["name"]


# AICR coverage golden entries: (service, accelerator, intent, os, platform) -> None for success, or the
# uncovered dimensions with their valid completions; "OS" means the OS guard fired.
GOLDEN: list[tuple[tuple[str, ...], Any]] = [
    (("", "", "", "", "slurm"), {"platform": [
        "service=kind, accelerator=h100, intent=training", "service=aks, accelerator=h100, intent=training, os=ubuntu",
        "service=eks, accelerator=gb200, intent=training, os=ubuntu",
        "service=eks, accelerator=h100, intent=training, os=ubuntu",
        "service=gke, accelerator=h100, intent=training, os=cos"]}),
    (("", "", "", "ol", ""), {"os": ["service=oke"]}),
    (("aks", "", "", "", ""), None),
    (("aks", "", "", "", "kubeflow"), {"platform": [
        "accelerator=a100, intent=training, os=ubuntu", "accelerator=h100, intent=training, os=ubuntu"]}),
    (("aks", "", "", "ubuntu", "dynamo"), {
        "os": ["accelerator=a100, intent=training", "accelerator=h100, intent=inference",
               "accelerator=h100, intent=training"],
        "platform": ["accelerator=h100, intent=inference"]}),
    (("aks", "a100", "training", "", "kubeflow"), {"platform": ["os=ubuntu"]}),
    (("aks", "a100", "training", "ubuntu", "kubeflow"), None),
    (("gke", "", "", "", ""), "OS"),
    (("gke", "", "", "cos", ""), None),
    (("gke", "", "training", "cos", "slurm"), {"platform": ["accelerator=h100"]}),
    (("gke", "a100", "training", "", "kubeflow"), "OS"),
    (("gke", "h100", "", "cos", "dynamo"), {"platform": ["intent=inference"]}),
    (("kind", "", "training", "", "kubeflow"), {"intent": ["accelerator=h100"], "platform": ["accelerator=h100"]}),
    (("kind", "h100", "training", "", "slurm"), None),
    (("lke", "", "", "ubuntu", ""), {"os": [
        "accelerator=rtx-pro-6000, intent=inference", "accelerator=rtx-pro-6000, intent=training"]}),
    (("", "h100", "", "", ""), None),
    (("eks", "h100", "", "", ""), None),
    (("eks", "", "", "", ""), None),
    (("oke", "gb200", "inference", "ubuntu", "dynamo"), None),
]
DIMS = ("service", "accelerator", "intent", "os", "platform")


@pytest.mark.parametrize(("criteria", "outcome"), GOLDEN, ids=["/".join(c) for c, _ in GOLDEN])
def test_coverage_matches_aicr_golden(cli: Any, criteria: tuple[str, ...], outcome: Any) -> None:
    from aicr_gen.catalog.load import load
    from aicr_gen.resolve import coverage, recipe
    from aicr_gen.resolve.criteria import normalise

    query = normalise(dict(zip(DIMS, criteria, strict=True)))
    catalog = load([AICR_CATALOG])
    if outcome is None:
        recipe.resolve(catalog, query)
        return
    with pytest.raises(Exception) as caught:
        recipe.resolve(catalog, query)
    if outcome == "OS":
        assert "specify an OS" in str(caught.value)
        return
    assert isinstance(caught.value, coverage.CoverageError)
    assert caught.value.completions == outcome


@pytest.mark.parametrize(("args", "message"), [
    (("--service", "eks", "--accelerator", "h100", "--os", "ubuntu"),
     "os 'ubuntu' for criteria(service=eks, accelerator=h100, os=ubuntu) requires intent (valid: inference, training)"),
    (("--service", "gke"), "service 'gke' has no OS-agnostic recipe for accelerator ''; specify an OS (valid: cos)"),
    (("--service", "oke", "--accelerator", "gb200", "--intent", "training"),
     "service 'oke' has no OS-agnostic recipe for accelerator 'gb200'; specify an OS (valid: ol, ubuntu)"),
    (("--service", "gke", "--os", "ubuntu"),
     "no recipe provides service 'gke' for criteria(service=gke, os=ubuntu); "
     "no recipe provides os 'ubuntu' for criteria(service=gke, os=ubuntu)"),
    (("--service", "aks", "--platform", "dynamo"),
     "platform 'dynamo' requires additional criteria; supported combinations: "
     "(accelerator=h100, intent=inference, os=ubuntu)"),
    (("--service", "kind", "--intent", "training"),
     "intent 'training' for criteria(service=kind, intent=training) requires accelerator (valid: h100)"),
    (("--accelerator", "gb300"), "no recipe provides accelerator 'gb300' for criteria(accelerator=gb300)"),
    (("--service", "ocp", "--platform", "nim"),
     "platform 'nim' for criteria(service=ocp, platform=nim) requires intent (valid: inference)"),
    (("--intent", "training"),
     "intent 'training' requires additional criteria; supported combinations: (service=aks), (service=bcm), "
     "(service=eks), (service=lke), (service=ocp), (service=gke, os=cos), (service=kind, accelerator=h100), "
     "(service=oke, os=ol), (service=oke, accelerator=a100, os=ubuntu), (service=oke, accelerator=gb200, os=ubuntu)"),
])
def test_rejections_name_the_valid_completions(cli: Any, args: tuple[str, ...], message: str) -> None:
    assert message in _error(cli, *args)


def test_service_eks_alone_resolves_the_generic_eks_recipe(cli: Any) -> None:
    recipe = _recipe(cli, "--service", "eks")
    assert recipe["metadata"]["appliedOverlays"] == ["base", "monitoring-hpa", "eks"]
    assert recipe["criteria"] == {"service": "eks", "accelerator": "any", "intent": "any", "os": "any",
                                  "platform": "any"}


def test_aks_applies_the_default_profile(cli: Any) -> None:
    recipe = _recipe(cli, "--service", "aks", "--accelerator", "h100", "--intent", "training")
    assert recipe["apiVersion"] == "aicr.run/v1beta2"
    assert recipe["metadata"]["selectedProfile"] == {
        "name": "gpuStack", "value": "azure-managed", "ownedPaths": {
            "gpu-operator": ["driver.enabled", "enabled", "operator.runtimeClass", "toolkit.enabled"],
            "nvidia-dra-driver-gpu": ["enabled", "nvidiaDriverRoot"],
            "nvsentinel": ["enabled", "labeler.assumeDriverInstalled", "metadata-collector.runtimeClassName"]}}
    assert [c["name"] for c in recipe["constraints"]] == ["K8s.aks-gpu-pools.gpu-driver", "K8s.server.version"]
    gpu = next(ref for ref in recipe["componentRefs"] if ref["name"] == "gpu-operator")
    assert gpu["overrides"]["driver"] == {"enabled": False}
    assert recipe["deploymentOrder"] == [
        "cert-manager", "nfd", "network-operator", "nodewright-operator", "nodewright-customizations",
        "prometheus-operator-crds", "kube-prometheus-stack", "gpu-operator", "k8s-ephemeral-storage-metrics",
        "kai-scheduler", "nvidia-dra-driver-gpu", "nvsentinel", "prometheus-adapter"]


def test_profile_selection_switches_value(cli: Any) -> None:
    recipe = _recipe(cli, "--service", "aks", "--accelerator", "h100", "--intent", "training",
                     "--profile", "gpuStack=operator-managed")
    gpu = next(ref for ref in recipe["componentRefs"] if ref["name"] == "gpu-operator")
    assert gpu["overrides"]["driver"] == {"enabled": True}
    message = _error(cli, "--service", "aks", "--profile", "gpuStack=unknown")
    assert "has no value 'unknown'" in message and "azure-managed, operator-managed" in message


def test_gke_default_profile_advertiser_is_external(cli: Any) -> None:
    recipe = _recipe(cli, "--service", "gke", "--os", "cos")
    assert recipe["metadata"]["selectedProfile"]["value"] == "gke-default"
    assert recipe["metadata"]["selectedProfile"]["advertiser"] == "external"


def test_slurm_accounting_defaults_to_disabled(cli: Any) -> None:
    recipe = _recipe(cli, "--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                     "--platform", "slurm")
    assert recipe["apiVersion"] == "aicr.run/v1beta2"
    assert recipe["configuration"] == {"slurm": {"accounting": {"mode": "disabled"}}}
    names = {ref["name"]: ref for ref in recipe["componentRefs"]}
    for trio in ("mariadb-operator-crds", "mariadb-operator", "slurm-accounting-mariadb"):
        assert names[trio]["overrides"]["install"] is False
        assert trio not in recipe["deploymentOrder"]
    provided = _recipe(cli, "--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                       "--platform", "slurm", "--slurm-accounting-mode", "aicr-provided")
    assert "mariadb-operator" in provided["deploymentOrder"]


def test_ocp_keeps_disabled_components_out_of_the_order(cli: Any) -> None:
    recipe = _recipe(cli, "--service", "ocp", "--intent", "inference", "--platform", "nim")
    disabled = [ref["name"] for ref in recipe["componentRefs"] if (ref.get("overrides") or {}).get("enabled") is False]
    assert "cert-manager" in disabled
    assert not set(disabled) & set(recipe["deploymentOrder"])
    assert recipe["deploymentOrder"][:2] == ["nfd-ocp-olm", "nfd-ocp"]


def test_validation_phases_merge_and_clear(cli: Any) -> None:
    recipe = _recipe(cli, *CUJ2)
    assert recipe["validation"]["deployment"]["checks"] == [
        "operator-health", "expected-resources", "gpu-operator-version", "check-nvidia-smi"]
    slurm = _recipe(cli, "--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                    "--platform", "slurm")
    assert slurm["validation"]["performance"] == {}
