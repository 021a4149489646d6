"""``aicr-gen policy check``: shipped CEL policies, user policy folders, broken policies, output shapes."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.policy import load_policies, shipped_root
from tests.conftest import ROOT

EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
REPO_URL = "https://github.com/example/gitops.git"
SHIPPED = ["allowed-sources", "certification-needs-nvcre", "health-check-everywhere", "pinned-semver-versions",
           "pool-certification-needs-nvcre", "sentinel-monitor-unless-opted-in", "training-needs-thresholds",
           "training-pools-need-thresholds"]


def _policy(folder: Path, name: str, body: str, filename: str | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / (filename or f"{name}.yaml")
    path.write_text(f"apiVersion: aicr-gen.dev/v1alpha1\nkind: Policy\nmetadata:\n  name: {name}\nspec:\n{body}")
    return path


def _init(cli: Any, tmp_path: Path, *criteria: str) -> Path:
    service, intent, os_, platform = criteria
    out = tmp_path / "spec.yaml"
    result = cli("spec", "init", "--service", service, "--accelerator", "h100", "--intent", intent,
                 "--os", os_, "--platform", platform, "--repo-url", REPO_URL, "-o", str(out))
    assert result.code == 0, result
    return out


def _without_thresholds(spec: Path) -> Path:
    text = spec.read_text()
    bare = re.sub(r"    thresholds:\n      busBandwidthGBps: .*\n", "    thresholds: {}\n", text)
    assert bare != text
    spec.write_text(bare)
    return spec


def test_shipped_policies_load() -> None:
    assert [p.name for p in load_policies([shipped_root()])] == SHIPPED


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_examples_pass(cli: Any, example: Path) -> None:
    result = cli("policy", "check", str(example))
    assert result.code == 0, result
    assert "0 error(s)" in result.out


def test_spec_init_inference_passes(cli: Any, tmp_path: Path) -> None:
    spec = _init(cli, tmp_path, "eks", "inference", "ubuntu", "dynamo")
    result = cli("policy", "check", str(spec))
    assert result.code == 0, result


def test_spec_init_training_passes(cli: Any, tmp_path: Path) -> None:
    spec = _init(cli, tmp_path, "gke", "training", "cos", "kubeflow")
    result = cli("policy", "check", str(spec))
    assert result.code == 0, result


def test_training_without_thresholds_fails(cli: Any, tmp_path: Path) -> None:
    spec = _without_thresholds(_init(cli, tmp_path, "gke", "training", "cos", "kubeflow"))
    result = cli("policy", "check", str(spec))
    assert result.code == 1, result
    assert "error training-needs-thresholds spec.certification.thresholds: " in result.out
    assert result.out.count("\nerror ") + result.out.startswith("error ") == 1


def test_quarantine_without_breaker_fails(cli: Any, tmp_path: Path) -> None:
    text = (ROOT / "examples" / "gke-h100-training-kubeflow.yaml").read_text()
    head, _, tail = text.partition("    breaker:\n")
    tail = tail.split("\n", 3)[3]  # drop the three breaker fields
    spec = tmp_path / "spec.yaml"
    spec.write_text(head + tail)
    result = cli("policy", "check", str(spec))
    assert result.code == 1, result
    assert "error sentinel-monitor-unless-opted-in spec.sentinel.mode: " in result.out


def test_user_policy_dir_adds_and_replaces(cli: Any, tmp_path: Path) -> None:
    users = tmp_path / "mine"
    _policy(users, "no-kai", "  severity: warning\n  target: component\n  rule: \"component.name != 'kai-scheduler'\"\n"
                             "  message: '{name} is not wanted'\n")
    _policy(users, "allowed-sources",
            "  target: component\n  match: has(component.source)\n"
            "  rule: \"component.source.startsWith('https://helm.ngc.nvidia.com/')\"\n"
            "  path: 'recipe.componentRefs[{name}].source'\n  message: \"source '{source}' is not NGC\"\n")
    example = ROOT / "examples" / "gke-h100-training-kubeflow.yaml"
    result = cli("policy", "check", str(example), "--policies", str(users))
    assert result.code == 1, result
    assert "warning no-kai recipe.componentRefs[kai-scheduler]: kai-scheduler is not wanted" in result.out
    assert ("error allowed-sources recipe.componentRefs[cert-manager].source: "
            "source 'https://charts.jetstack.io' is not NGC") in result.out
    assert "gpu-operator].source" not in result.out


def test_warning_only_exits_zero(cli: Any, tmp_path: Path) -> None:
    users = tmp_path / "mine"
    _policy(users, "always-warn", "  severity: warning\n  target: recipe\n  rule: 'false'\n  message: hello\n")
    result = cli("policy", "check", str(EXAMPLES[0]), "--policies", str(users))
    assert result.code == 0, result
    assert "warning always-warn recipe: hello" in result.out


@pytest.mark.parametrize("body, line, key", [
    ("  target: spec\n  rule: 'spec.spec.criteria.intent =='\n  message: m\n", 7, "spec.rule"),
    ("  target: spec\n  match: 'component.name == \"x\"'\n  rule: 'true'\n  message: m\n", 7, "spec.match"),
    ("  target: cluster\n  rule: 'true'\n  message: m\n", 6, "spec.target"),
])
def test_broken_policy_exits_2_with_file_line(cli: Any, tmp_path: Path, body: str, line: int, key: str) -> None:
    path = _policy(tmp_path / "bad", "broken", body)
    result = cli("policy", "check", str(EXAMPLES[0]), "--policies", str(tmp_path / "bad"))
    assert result.code == 2, result
    assert f"{path}:{line}: {key}" in result.err


def test_runtime_error_is_a_finding(cli: Any, tmp_path: Path) -> None:
    users = tmp_path / "mine"
    _policy(users, "missing-field", "  target: spec\n  rule: 'spec.spec.nope == 1'\n  message: m\n")
    result = cli("policy", "check", str(EXAMPLES[0]), "--policies", str(users))
    assert result.code == 1, result
    assert "error missing-field spec: evaluation failed:" in result.out


def test_duplicate_names_in_one_folder_refused(cli: Any, tmp_path: Path) -> None:
    users = tmp_path / "mine"
    _policy(users, "twice", "  target: recipe\n  rule: 'true'\n  message: m\n", "a.yaml")
    _policy(users, "twice", "  target: recipe\n  rule: 'true'\n  message: m\n", "b.yaml")
    result = cli("policy", "check", str(EXAMPLES[0]), "--policies", str(users))
    assert result.code == 2 and "twice" in result.err


def test_missing_policy_folder_refused(cli: Any, tmp_path: Path) -> None:
    result = cli("policy", "check", str(EXAMPLES[0]), "--policies", str(tmp_path / "none"))
    assert result.code == 2 and "not a folder" in result.err


def test_json_output_shape_and_determinism(cli: Any, tmp_path: Path) -> None:
    spec = _without_thresholds(_init(cli, tmp_path, "gke", "training", "cos", "kubeflow"))
    first = cli("policy", "check", str(spec), "--format", "json")
    second = cli("policy", "check", str(spec), "--format", "json")
    assert first.code == 1 and first.out == second.out
    data = json.loads(first.out)
    assert sorted(data) == ["errors", "findings", "policies", "spec", "warnings"]
    assert data["policies"] == SHIPPED
    assert data["errors"] == 1 and data["warnings"] == 0
    assert data["findings"] == [{"message": data["findings"][0]["message"], "path": "spec.certification.thresholds",
                                 "policy": "training-needs-thresholds", "severity": "error"}]


@pytest.mark.parametrize(("example", "refused"), [("eks-h100-inference-dynamo", True),
                                                  ("gke-h100-training-kubeflow", False)])
def test_certification_without_nvcre_is_an_error(cli: Any, tmp_path: Path, example: str, refused: bool) -> None:
    """Inference recipes carry no nvcre component: their certification jobs would create Certifications
    that nothing acts on."""
    spec = tmp_path / "spec.yaml"
    spec.write_text((ROOT / "examples" / f"{example}.yaml").read_text().replace(
        "    categories: []", "    categories: [communication/nccl-all-reduce]"))
    result = cli("policy", "check", str(spec))
    assert result.code == int(refused), result
    assert ("error certification-needs-nvcre spec.certification.categories" in result.out) is refused
