"""``aicr-gen validate``: readiness constraints against a snapshot, version-aware comparison, CTRF output."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from aicr_gen.drift.constraints import evaluate, split_path
from aicr_gen.errors import InvalidInputError
from aicr_gen.text import versions
from aicr_gen.yaml import dump
from tests.conftest import AICR_CATALOG, REFERENCE, needs

MOCK_SNAPSHOT = REFERENCE / "aicr" / "tests" / "chainsaw" / "cli" / "cuj1-training" / "mock-snapshot.yaml"

SNAPSHOT: dict[str, Any] = {
    "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.0"}}]},
        {"type": "OS", "subtypes": [
            {"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
            {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1015-aws"}},
        ]},
    ],
}

# The CTRF fields aicr-gen emits (https://ctrf.io), closed where we own the shape.
CTRF_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["results"],
    "additionalProperties": False,
    "properties": {"results": {
        "type": "object",
        "required": ["tool", "summary", "tests"],
        "additionalProperties": False,
        "properties": {
            "tool": {"type": "object", "required": ["name"], "properties": {"name": {"const": "aicr-gen"}}},
            "summary": {
                "type": "object",
                "required": ["tests", "passed", "failed", "skipped", "pending", "other", "start", "stop"],
                "additionalProperties": False,
                "properties": {key: {"type": "integer", "minimum": 0} for key in
                               ("tests", "passed", "failed", "skipped", "pending", "other", "start", "stop")},
            },
            "tests": {"type": "array", "items": {
                "type": "object",
                "required": ["name", "status", "duration", "suite", "stdout"],
                "additionalProperties": False,
                "properties": {
                    "name": {"type": "string", "minLength": 1},
                    "status": {"enum": ["passed", "failed", "skipped", "pending", "other"]},
                    "duration": {"type": "integer", "minimum": 0},
                    "suite": {"const": ["readiness"]},
                    "message": {"type": "string"},
                    "stdout": {"type": "array", "items": {"type": "string"}},
                    "extra": {
                        "type": "object",
                        "required": ["expected", "actual", "severity"],
                        "properties": {"expected": {"type": "string"}, "actual": {"type": ["string", "null"]},
                                       "severity": {"enum": ["error", "warning"]}},
                    },
                },
            }},
        },
    }},
}


def _write_recipe(path: Path, constraints: list[dict[str, Any]]) -> Path:
    recipe = {"kind": "RecipeResult", "apiVersion": "aicr.run/v1alpha2",
              "criteria": {"service": "eks"}, "constraints": constraints,
              "componentRefs": [], "deploymentOrder": []}
    if not constraints:
        del recipe["constraints"]
    path.write_text(dump(recipe), encoding="utf-8")
    return path


def _write_snapshot(path: Path, snapshot: dict[str, Any] | None = None) -> Path:
    path.write_text(dump(snapshot or SNAPSHOT), encoding="utf-8")
    return path


# ------------------------------------------------------------------ version comparison


@pytest.mark.parametrize(("actual", "value", "expected"), [
    ("v1.33.0", ">= 1.34", False),
    ("v1.33.0", "> 1.32.4", True),
    ("1.32.4", "< v1.33.0", True),
    ("v1.33.0", ">= 1.33", True),
    ("v1.33.0", "== 1.33", True),
    ("v1.33.0", "1.33.0", True),
    ("6.8.0-1015-aws", ">= 6.8", True),
    ("6.8.0-1015-aws", "> 6.8", False),
    ("6.8.0-1015-aws", "< 6.8.0-1020-aws", True),
    ("6.7.12", ">= 6.8", False),
    ("6.10.0", ">= 6.8", True),  # numeric, not lexical
    ("24.04", "24.04", True),
    ("24.04", "== 24.04", True),
    ("22.04", "24.04", False),
    ("24.04", "!= 22.04", True),
    ("24.04", ">= 22.04", True),
    ("1.34.0-rc.1", ">= 1.34", False),  # a pre-release is below its release
    ("1.34.0-rc.2", "> 1.34.0-rc.1", True),
    ("v1.33.5-eks-3025e55", ">= 1.33", True),
    ("ubuntu", "ubuntu", True),
    ("ubuntu", "== rhel", False),
    ("ubuntu", "!= rhel", True),
    ("ubuntu", ">= 1.0", None),  # not a version: an ordering operator cannot decide
])
def test_version_table(actual: str, value: str, expected: bool | None) -> None:
    assert versions.satisfies(actual, versions.parse_expectation(value)) is expected


def test_parse_version_rules() -> None:
    assert versions.parse_version("v1.33.0") == versions.Version((1, 33, 0))
    assert versions.parse_version("6.8.0-1015-aws") == versions.Version((6, 8, 0), "1015-aws")
    assert versions.parse_version("24.04") == versions.Version((24, 4))
    assert versions.parse_version("ubuntu") is None
    assert versions.parse_version("") is None
    assert versions.compare("1.34", "v1.34.0") == 0
    assert versions.compare("v1.33.0", "1.32.4") == 1


@pytest.mark.parametrize(("value", "operator", "operand"), [
    (">= 1.34", ">=", "1.34"), (">=1.34", ">=", "1.34"), ("  <  2 ", "<", "2"), ("!= x", "!=", "x"),
    ("ubuntu", "", "ubuntu"), ("!gke-label", "", "!gke-label"),
])
def test_parse_expectation(value: str, operator: str, operand: str) -> None:
    assert versions.parse_expectation(value) == versions.Expectation(operator, operand)


@pytest.mark.parametrize("value", ["", "   ", ">=", "=> 1.34", "~= 1.2", "= 1.2", "=== 1", "<> 1", "^1.2"])
def test_parse_expectation_refuses(value: str) -> None:
    with pytest.raises(versions.ExpectationError):
        versions.parse_expectation(value)


# ------------------------------------------------------------------ constraints


def test_split_path_keeps_dots_and_slashes_in_key() -> None:
    assert split_path("OS.sysctl./proc/sys/kernel/osrelease") == ("OS", "sysctl", "/proc/sys/kernel/osrelease")
    assert split_path("K8s.helm.gpu-operator.version") == ("K8s", "helm", "gpu-operator.version")


def test_missing_measurement_fails_for_error_and_skips_for_warning() -> None:
    results = evaluate([{"name": "GPU.hardware.model", "value": "H100"},
                        {"name": "GPU.hardware.count", "value": ">= 8", "severity": "warning"},
                        {"name": "K8s.server.version", "value": ">= 1.34", "severity": "warning"}], SNAPSHOT)
    assert [(r.status, r.blocking) for r in results] == [("failed", True), ("skipped", False), ("failed", False)]
    assert "not found in snapshot" in results[0].message


def test_non_version_actual_with_ordering_operator_fails() -> None:
    (result,) = evaluate([{"name": "OS.release.ID", "value": ">= 1.0"}], SNAPSHOT)
    assert result.status == "failed" and "not a version" in result.message


# ------------------------------------------------------------------ the CLI


@needs(AICR_CATALOG, MOCK_SNAPSHOT)
def test_cuj2_recipe_against_mock_snapshot(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = tmp_path / "r.yaml"
    made = cli("recipe", "--catalog", str(AICR_CATALOG), "--service", "eks", "--accelerator", "h100",
               "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo", "-o", str(recipe))
    assert made.code == 0, made.err
    report = tmp_path / "ctrf.json"
    res = cli("validate", "--recipe", str(recipe), "--snapshot", str(MOCK_SNAPSHOT), "--format", "json",
              "-o", str(report))
    assert res.code == 1, res.err
    assert "K8s.server.version" in res.err
    data = json.loads(report.read_text(encoding="utf-8"))
    jsonschema.validate(data, CTRF_SCHEMA)
    statuses = {test["name"]: test["status"] for test in data["results"]["tests"]}
    assert statuses == {
        "K8s.server.version": "failed",  # v1.33.0 vs >= 1.34
        "OS.release.ID": "passed",  # ubuntu
        "OS.release.VERSION_ID": "passed",  # "24.04"
        "OS.sysctl./proc/sys/kernel/osrelease": "passed",  # 6.8.0-1015-aws >= 6.8
    }
    assert data["results"]["summary"] == {"tests": 4, "passed": 3, "failed": 1, "skipped": 0, "pending": 0,
                                          "other": 0, "start": 0, "stop": 0}
    failed = data["results"]["tests"][0]
    assert failed["extra"] == {"expected": ">= 1.34", "actual": "v1.33.0", "severity": "error"}

    table = cli("validate", "--recipe", str(recipe), "--snapshot", str(MOCK_SNAPSHOT))
    assert table.code == 1
    lines = table.out.splitlines()
    assert lines[0].split() == ["NAME", "EXPECTED", "ACTUAL", "RESULT"]
    assert lines[1].split() == ["K8s.server.version", ">=", "1.34", "v1.33.0", "failed"]
    assert "4 constraints: 3 passed, 1 failed, 0 skipped" in table.out


def test_all_pass_exits_0_and_json_is_deterministic(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = _write_recipe(tmp_path / "r.yaml", [
        {"name": "K8s.server.version", "value": ">= 1.32.4"},
        {"name": "OS.release.VERSION_ID", "value": "24.04"},
        {"name": "OS.sysctl./proc/sys/kernel/osrelease", "value": ">= 6.8", "unit": "kernel"},
        {"name": "GPU.hardware.model", "value": "H100", "severity": "warning", "remediation": "label GPU nodes"},
    ])
    snapshot = _write_snapshot(tmp_path / "s.yaml")
    first = cli("validate", "--recipe", str(recipe), "--snapshot", str(snapshot), "--format", "json")
    second = cli("validate", "--recipe", str(recipe), "--snapshot", str(snapshot), "--format", "json")
    assert first.code == 0, first.err
    assert first.out == second.out
    data = json.loads(first.out)
    jsonschema.validate(data, CTRF_SCHEMA)
    assert [t["status"] for t in data["results"]["tests"]] == ["passed", "passed", "passed", "skipped"]
    assert data["results"]["tests"][3]["extra"]["remediation"] == "label GPU nodes"
    table = cli("validate", "--recipe", str(recipe), "--snapshot", str(snapshot))
    assert table.code == 0
    assert "<not found>" in table.out and "remediation for GPU.hardware.model" in table.out


def test_warning_failure_does_not_fail_the_run(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = _write_recipe(tmp_path / "r.yaml", [{"name": "K8s.server.version", "value": ">= 1.34",
                                                  "severity": "warning"}])
    res = cli("validate", "--recipe", str(recipe), "--snapshot", str(_write_snapshot(tmp_path / "s.yaml")))
    assert res.code == 0, res.err
    assert "failed (warning)" in res.out


def test_recipe_without_constraints_passes(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = _write_recipe(tmp_path / "r.yaml", [])
    res = cli("validate", "--recipe", str(recipe), "--snapshot", str(_write_snapshot(tmp_path / "s.yaml")),
              "--format", "json")
    assert res.code == 0, res.err
    assert json.loads(res.out)["results"]["summary"]["tests"] == 0


@pytest.mark.parametrize(("constraint", "words"), [
    ({"name": "K8s.server.version", "value": "=> 1.34"}, "unknown operator"),
    ({"name": "K8s.server.version", "value": "~= 1.34"}, "unknown operator"),
    ({"name": "K8s.server.version", "value": ""}, "empty"),
    ({"name": "K8s.server.version", "value": ">="}, "no operand"),
    ({"name": "K8s.server.version", "value": ">= latest"}, "version operand"),
    ({"name": "K8s.server", "value": ">= 1.34"}, "Type.subtype.key"),
    ({"name": "K8s", "value": ">= 1.34"}, "Type.subtype.key"),
    ({"name": "K8s..version", "value": ">= 1.34"}, "Type.subtype.key"),
    ({"name": "K8s.server.version", "value": "1", "severity": "fatal"}, "severity"),
])
def test_hostile_constraints_exit_2_naming_the_constraint(cli, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                          constraint: dict[str, Any], words: str) -> None:
    recipe = _write_recipe(tmp_path / "r.yaml", [{"name": "OS.release.ID", "value": "ubuntu"}, constraint])
    res = cli("validate", "--recipe", str(recipe), "--snapshot", str(_write_snapshot(tmp_path / "s.yaml")))
    if res.code == 2 and "severity" in words and "fatal" in res.err:
        return  # the recipe model itself refuses an unknown severity
    assert res.code == 2, (res.out, res.err)
    assert repr(constraint["name"]) in res.err
    assert words in res.err
    assert res.out == ""


def test_bad_constraint_is_reported_before_the_snapshot_is_read(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = _write_recipe(tmp_path / "r.yaml", [{"name": "K8s.server", "value": "1"}])
    res = cli("validate", "--recipe", str(recipe), "--snapshot", str(tmp_path / "missing.yaml"))
    assert res.code == 2 and "'K8s.server'" in res.err


def test_invalid_inputs_exit_2(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    recipe = _write_recipe(tmp_path / "r.yaml", [{"name": "K8s.server.version", "value": ">= 1.30"}])
    snapshot = _write_snapshot(tmp_path / "s.yaml")
    assert cli("validate", "--recipe", str(tmp_path / "nope.yaml"), "--snapshot", str(snapshot)).code == 2
    bad_recipe = tmp_path / "bad.yaml"
    bad_recipe.write_text("kind: RecipeResult\nconstraints: 7\n", encoding="utf-8")
    assert cli("validate", "--recipe", str(bad_recipe), "--snapshot", str(snapshot)).code == 2
    bad_snapshot = tmp_path / "bad-snap.yaml"
    bad_snapshot.write_text("measurements: nope\n", encoding="utf-8")
    assert cli("validate", "--recipe", str(recipe), "--snapshot", str(bad_snapshot)).code == 2
    assert cli("validate", "--recipe", str(recipe), "--snapshot", str(tmp_path / "missing.yaml")).code == 2
    assert cli("validate", "--recipe", str(recipe), "--snapshot", str(snapshot), "-o",
               str(snapshot / "dir" / "x.json")).code == 2  # under a file: -o creates missing folders only


def test_constraints_api_refuses_bad_snapshot_shape() -> None:
    with pytest.raises(InvalidInputError, match="measurements"):
        evaluate([{"name": "K8s.server.version", "value": "1"}], {"measurements": "x"})
