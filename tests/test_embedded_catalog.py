"""Our embedded catalog (overlays/): complete, pinned, consistent, and resolvable leaf by leaf."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jmespath
import pytest
import yaml

from aicr_gen.catalog.load import embedded_root, load
from aicr_gen.resolve import recipe
from aicr_gen.resolve.criteria import normalise
from aicr_gen.resolve.refs import is_enabled

CATALOG = embedded_root()
EXACT_VERSION = re.compile(r"^v?\d+\.\d+\.\d+(-[0-9A-Za-z.]+)?$")


@pytest.fixture(scope="module")
def leaves() -> list[dict[str, Any]]:
    from aicr_gen.commands.recipe import leaf_rows

    return leaf_rows(load([CATALOG]))


@pytest.fixture(scope="module")
def recipes(leaves: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    catalog = load([CATALOG])
    return {row["name"]: recipe.resolve(catalog, normalise(row["criteria"])) for row in leaves}


def test_catalog_is_the_one_in_the_source_tree() -> None:
    assert Path(__file__).resolve().parent.parent / "overlays" == CATALOG


def test_at_least_40_leaves_cover_the_required_matrix(leaves: list[dict[str, Any]]) -> None:
    assert len(leaves) >= 40
    seen = {dim: {row["criteria"].get(dim) for row in leaves} for dim in ("service", "accelerator", "intent",
                                                                           "platform")}
    assert {"eks", "gke", "aks", "oke", "kind"} <= seen["service"]
    assert {"h100", "h200", "gb200", "b200", "a100", "l40s"} <= seen["accelerator"]
    assert {"training", "inference"} <= seen["intent"]
    assert {"dynamo", "kubeflow", "nim"} <= seen["platform"]


def test_every_leaf_resolves_with_itself_applied_last(recipes: dict[str, dict[str, Any]]) -> None:
    for name, result in recipes.items():
        assert result["metadata"]["appliedOverlays"][-1] == name


def test_every_dependency_exists_and_every_enabled_component_is_ordered(recipes: dict[str, dict[str, Any]]) -> None:
    for name, result in recipes.items():
        names = {ref["name"] for ref in result["componentRefs"]}
        for ref in result["componentRefs"]:
            assert set(ref.get("dependencyRefs", [])) <= names, (name, ref["name"])
        enabled = sorted(ref["name"] for ref in result["componentRefs"] if is_enabled(ref))
        assert sorted(result["deploymentOrder"]) == enabled, name


def test_no_floating_versions(recipes: dict[str, dict[str, Any]]) -> None:
    registry = yaml.safe_load((CATALOG / "registry.yaml").read_text())
    for component in registry["components"]:
        version = (component.get("helm") or {}).get("defaultVersion")
        if (component.get("helm") or {}).get("defaultRepository"):
            assert version and EXACT_VERSION.match(version), component["name"]
    for name, result in recipes.items():
        for ref in result["componentRefs"]:
            if ref["source"]:
                assert EXACT_VERSION.match(ref["version"]), (name, ref["name"], ref["version"])


def test_every_pin_names_its_source() -> None:
    lines = (CATALOG / "registry.yaml").read_text().splitlines()
    for index, line in enumerate(lines):
        if "defaultVersion:" in line:
            nearby = " ".join(lines[max(0, index - 3):index + 1])
            assert "pin:" in nearby, f"registry.yaml:{index + 1} has no '# pin: <source>' comment"


def test_overlays_never_pin_versions() -> None:
    for path in sorted((CATALOG / "overlays").glob("*.yaml")) + sorted((CATALOG / "mixins").glob("*.yaml")):
        for ref in (yaml.safe_load(path.read_text())["spec"].get("componentRefs") or []):
            assert "version" not in ref, f"{path.name}: {ref['name']} pins a version; pin it in registry.yaml"


def test_nvsentinel_and_nvcre_are_components(recipes: dict[str, dict[str, Any]]) -> None:
    everything = {ref["name"]: ref for result in recipes.values() for ref in result["componentRefs"]}
    assert everything["nvsentinel"]["source"] == "oci://ghcr.io/nvidia"
    nvcre = everything["nvcre"]
    assert f"{nvcre['source']}/{nvcre['chart']}" == "oci://ghcr.io/nvidia/cluster-readiness-engine"
    assert all("nvsentinel" in result["deploymentOrder"] for result in recipes.values())


def _keys(node: Any) -> list[str]:
    if isinstance(node, dict):
        return [key for key, value in node.items() for key in [key, *_keys(value)]]
    if isinstance(node, list):
        return [key for item in node for key in _keys(item)]
    return []


def test_every_component_has_a_read_only_chainsaw_health_check() -> None:
    registry = yaml.safe_load((CATALOG / "registry.yaml").read_text())
    for component in registry["components"]:
        check = yaml.safe_load((CATALOG / component["healthCheck"]["assertFile"]).read_text())
        assert (check["apiVersion"], check["kind"]) == ("chainsaw.kyverno.io/v1alpha1", "Test"), component["name"]
        steps = check["spec"]["steps"]
        assert steps, component["name"]
        for step in steps:
            for operation in step["try"]:
                assert set(operation) <= {"assert", "error"}, (component["name"], step["name"])
        for key in _keys(check["spec"]):
            if key.startswith("(") and key.endswith(")"):
                jmespath.compile(key[1:-1])


def test_recipe_list_json_is_name_and_criteria(cli: Any) -> None:
    result = cli("recipe", "list", "--format", "json")
    rows = json.loads(result.out)
    assert result.code == 0 and rows
    assert all(set(row) == {"name", "criteria"} for row in rows)
