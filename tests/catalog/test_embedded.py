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
    assert Path(__file__).resolve().parents[2] / "overlays" == CATALOG


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


# ------------------------------------------------------------------ criteria errors name what resolves


DIMS = ("service", "accelerator", "intent", "os", "platform")


def test_a_criteria_error_lists_the_values_that_resolve_with_the_others(cli: Any) -> None:
    result = cli("recipe", "--service", "eks", "--accelerator", "b200", "--intent", "inference", "--os", "ubuntu",
                 "--platform", "nim")
    assert result.code == 2 and "Traceback" not in result.err
    assert result.err == (
        "aicr-gen: error: no recipe provides platform 'nim' for criteria(service=eks, accelerator=b200, "
        "intent=inference, os=ubuntu, platform=nim); platform values that resolve with service=eks, "
        "accelerator=b200, intent=inference, os=ubuntu: dynamo, any\n")
    result = cli("recipe", "--service", "aks", "--accelerator", "b200")
    assert result.err.endswith("; accelerator values that resolve with service=aks: any; leaves with service=aks "
                               "have accelerator a100, gb200, h100, h200 (give their other criteria too; 'aicr-gen "
                               "recipe list')\n"), result.err
    result = cli("recipe", "--service", "kind", "--accelerator", "b300")
    assert "unknown accelerator 'b300'; use one of h100, h200, gb200, b200, a100, l40s or any; no accelerator " \
           "value resolves with service=kind; leaves with service=kind have accelerator h100" in result.err


def _named(message: str, query: dict[str, str]) -> list[dict[str, str]]:
    """Every query the message suggests: AICR's completions, the values that resolve as is, the leaves' values."""
    suggested: list[dict[str, str]] = []
    for dim, values in re.findall(r"(\w+) values that resolve (?:with [^:]*|without other criteria): ([^;]*)",
                                  message):
        suggested += [{**query, dim: value} for value in values.split(", ")]
    for missing, values in re.findall(r"requires (\w+) \(valid: ([^)]*)\)", message):
        suggested += [{**query, missing: value} for value in values.split(", ")]
    for combos in re.findall(r"supported combinations: ((?:\([^)]*\)(?:, )?)+)", message):
        for combo in re.findall(r"\(([^)]*)\)", combos):
            suggested.append({**query, **dict(pair.split("=") for pair in combo.split(", "))})
    return suggested


def _leaf_values(message: str, query: dict[str, str], leaves: list[dict[str, str]]) -> list[dict[str, str]]:
    """For each value a 'leaves ... have DIM a, b' hint names, a resolving leaf that has it and agrees with the
    query's other stated criteria."""
    found = []
    for dim, values in re.findall(r"have (\w+) ([^(]*) \(give their other criteria", message):
        for value in values.split(", "):
            fitting = [leaf for leaf in leaves if leaf[dim] == value and all(
                leaf[d] == query[d] for d in DIMS if d != dim and query[d] != "any")]
            assert fitting, (message, dim, value)
            found.append(fitting[0])
    return found


def test_criteria_errors_never_suggest_a_value_that_cannot_resolve() -> None:
    """Every failing criteria combination of the embedded catalog (one in six, for time): everything the
    message suggests resolves."""
    import itertools

    from aicr_gen.errors import InvalidInputError
    from aicr_gen.resolve.criteria import catalog_values

    catalog = load([CATALOG])
    values = catalog_values(catalog.overlays.values())
    leaves = [normalise(catalog.overlays[name]["spec"]["criteria"]) for name in recipe.leaf_overlays(catalog)]
    combos = list(itertools.product(*[[*sorted(values[dim]), "any"] for dim in DIMS]))[::6]
    failed = checked = 0
    for combo in combos:
        query = dict(zip(DIMS, combo, strict=True))
        try:
            recipe.resolve(catalog, query)
            continue
        except InvalidInputError as err:
            message = str(err)
        failed += 1
        for suggestion in [*_named(message, query), *_leaf_values(message, query, leaves)]:
            checked += 1
            recipe.resolve(catalog, suggestion)  # raises if the suggestion does not resolve
    assert failed > 200 and checked > 300, (failed, checked)
