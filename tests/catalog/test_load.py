"""Loading a catalog: each test breaks one thing in the tiny catalog (tests/tiny_catalog.py) and checks what the user
sees: exit 2, the file, line and field path, the fix, and never a traceback, a hang or an "internal error"."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.tiny_catalog import (
    BASE,
    LEAF,
    LEAF_SPEC,
    MIXIN,
    MIXIN_HEAD,
    REGISTRY,
    REGISTRY_TEXT,
    Run,
    aicr_gen_process,
    at,
    make,
    overlay,
    recipe,
    ref_named,
    refused,
    resolved,
)


def _kind_cases() -> list[Any]:
    cases = []
    for rel, kind in ((LEAF, "RecipeMetadata"), (REGISTRY, "ComponentRegistry"), (MIXIN, "RecipeMixin")):
        for bad in ("[a]", "{a: 1}"):
            cases.append(pytest.param(rel, kind, bad, id=f"{rel.split('/')[0]}-{bad}"))
    return cases


@pytest.mark.parametrize(("rel", "kind", "bad"), _kind_cases())
def test_a_kind_that_is_a_list_or_a_map_is_refused(cli: Run, tmp_path: Path, rel: str, kind: str,
                                                   bad: str) -> None:
    mixin = MIXIN_HEAD + "  constraints:\n    - name: K8s.server.version\n      value: '>= 1.30'\n"
    catalog = make(tmp_path / "catalog", {MIXIN: mixin})
    path = catalog / rel
    path.write_text(path.read_text(encoding="utf-8").replace(f"kind: {kind}", f"kind: {bad}"), encoding="utf-8")

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, rel, 'kind:')}: kind: value ",
            "is not allowed", f"use one of '{kind}'")


def test_overrides_nested_150_levels_deep_are_refused(cli: Run, tmp_path: Path) -> None:
    deep = "{k: " * 150 + "1" + "}" * 150
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", LEAF_SPEC + f"      overrides: {deep}\n")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / LEAF}:", "nesting deeper than 100 levels",
            "flatten the data")


def test_a_fifo_in_overlays_is_refused_without_hanging(catalog: Path) -> None:
    os.mkfifo(catalog / "overlays/zz.yaml")

    proc = aicr_gen_process("recipe", "--catalog", str(catalog), "--service", "eks")

    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "internal error" not in err and "Traceback" not in err
    assert f"{catalog / 'overlays/zz.yaml'}: not a regular file" in err


def test_a_file_name_that_is_not_utf8_under_checks_does_not_crash(cli: Run, catalog: Path) -> None:
    (catalog / "checks" / os.fsdecode(b"\xe9.yaml")).write_bytes(b"x: 1\n")  # Latin-1 'é.yaml'

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert data["deploymentOrder"] == ["a", "b"]


def test_a_catalog_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    catalog = make(tmp_path / os.fsdecode(b"caf\xe9"))  # Latin-1 'café'
    folder = os.fsencode(catalog)

    works = aicr_gen_process("recipe", "--catalog", folder, "--service", "eks")
    assert works.returncode == 0, works.stderr
    assert works.stderr == b""
    assert yaml.safe_load(works.stdout)["deploymentOrder"] == ["a", "b"]

    (catalog / REGISTRY).unlink()
    fails = aicr_gen_process("recipe", "--catalog", folder, "--service", "eks")
    assert fails.returncode == 2
    assert fails.stderr.startswith(b"aicr-gen: error: ")
    assert b"no registry.yaml in any catalog layer" in fails.stderr
    assert b"internal error" not in fails.stderr and b"Traceback" not in fails.stderr


def test_criteria_nodes_in_an_overlay_is_refused(cli: Run, tmp_path: Path) -> None:
    leaf = overlay("eks", LEAF_SPEC.replace("    service: eks\n", "    service: eks\n    nodes: 4\n"))
    catalog = make(tmp_path / "catalog", {LEAF: leaf})

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, LEAF, 'nodes: 4')}: spec.criteria.nodes",
            "not used to select overlays", "remove it")


def test_a_registry_component_named_deployer_is_refused(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {REGISTRY: REGISTRY_TEXT.replace("name: c", "name: deployer")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, REGISTRY, 'name: deployer')}: components[2].name",
            "'deployer' is reserved", "rename it")


@pytest.mark.parametrize("key", ["Criteria", "x[0]"])
def test_an_odd_unknown_key_is_reported_at_its_own_path(cli: Run, tmp_path: Path, key: str) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", f"  {key}: 1\n" + LEAF_SPEC)})

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, LEAF, f'{key}: 1')}: spec.{key}: unknown field {key!r}")


def test_an_empty_spec_asks_for_a_mapping(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", "")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / LEAF}:5: spec", "write a mapping")


def test_an_upper_case_name_gets_the_pattern_hint(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("EKS", LEAF_SPEC)})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / LEAF}:4: metadata.name", "'EKS'",
            "does not match ^[a-z0-9]", "use a value that does")


@pytest.mark.parametrize("line", [
    pytest.param(f"      overrides:\n        replicas: {'9' * 5000}\n", id="unquoted-number"),
    pytest.param(f"      version: ['{'9' * 5000}']\n", id="quoted-number-in-a-string-field"),
])
def test_a_5000_digit_value_is_shortened_in_the_message(cli: Run, tmp_path: Path, line: str) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", LEAF_SPEC + line)})

    result = recipe(cli, catalog, "--service", "eks")

    refused(result, f"{catalog / LEAF}:")
    assert len(result.err) < 400, f"{len(result.err)} characters"


def test_registry_manifest_files_climbing_out_are_blamed_on_the_registry(cli: Run, tmp_path: Path) -> None:
    registry = REGISTRY_TEXT.replace("      defaultNamespace: ns-b\n",
                                     "      defaultNamespace: ns-b\n    manifestFiles:\n      - ../x\n")
    catalog = make(tmp_path / "catalog", {REGISTRY: registry})

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, REGISTRY, 'manifestFiles:')}: components[1].manifestFiles", "'../x' climbs out with '..'")


def test_an_assert_file_starting_with_dot_slash_works(cli: Run, tmp_path: Path) -> None:
    registry = REGISTRY_TEXT.replace("assertFile: checks/b.yaml", "assertFile: ./checks/b.yaml")
    catalog = make(tmp_path / "catalog", {REGISTRY: registry})

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert ref_named(data, "b")["healthCheckAsserts"] == "b: healthy\n"


def test_a_base_overlay_with_another_name_is_refused(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {BASE: overlay("root", "  componentRefs:\n    - name: a\n")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / BASE}:4: metadata.name",
            "the root overlay is overlays/base.yaml named 'base'", "rename overlays/base.yaml or its metadata.name")
