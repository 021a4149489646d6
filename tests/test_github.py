"""The GitHub files: the project's CI workflow and the composite action users call."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, tool

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
ACTION = ROOT / "action.yml"


def _load(path: Path) -> dict[str, Any]:
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(data, dict), path
    return data


def _steps(path: Path) -> list[dict[str, Any]]:
    data = _load(path)
    if path == ACTION:
        return list(data["runs"]["steps"])
    return [step for job in data["jobs"].values() for step in job.get("steps", [])]


def _scripts() -> list[tuple[str, str]]:
    return [(f"{path.relative_to(ROOT)}: {step.get('name', index)}", step["run"])
            for path in (WORKFLOW, ACTION) for index, step in enumerate(_steps(path)) if "run" in step]


@pytest.mark.parametrize(("path", "schema"), [(WORKFLOW, "vendor.github-workflows"),
                                              (ACTION, "vendor.github-actions")])
def test_schema(path: Path, schema: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_action_is_composite_with_documented_inputs() -> None:
    action = _load(ACTION)
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"specs", "policies", "baseline", "target", "kubeconfig", "fail-on-drift",
                                     "version"}
    assert action["inputs"]["specs"]["default"] == "clusters/*.yaml"
    assert action["inputs"]["fail-on-drift"]["default"] == "true"


def test_workflow_is_minimal_and_does_not_require_reference() -> None:
    workflow = _load(WORKFLOW)
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is True
    assert "github.ref" in workflow["concurrency"]["group"]
    job = workflow["jobs"]["test"]
    assert job["timeout-minutes"] > 0
    assert "AICR_GEN_REQUIRE_REFERENCE" not in WORKFLOW.read_text(encoding="utf-8")
    assert any(step.get("run", "").strip() == "bash scripts/test.sh -q" for step in job["steps"])


def test_no_expressions_in_run_scripts() -> None:
    """Inputs reach scripts through env: only; ${{ }} inside run: is script injection."""
    scripts = _scripts()
    assert scripts
    for name, script in scripts:
        assert "${{ inputs." not in script, name
        assert not re.search(r"\$\{\{", script), name


def test_run_scripts_pass_shellcheck(tmp_path: Path) -> None:
    shellcheck = tool("shellcheck")
    for index, (name, script) in enumerate(_scripts()):
        file = tmp_path / f"step{index}.sh"
        file.write_text(f"#!/usr/bin/env bash\n{script}", encoding="utf-8")
        proc = subprocess.run([shellcheck, "--shell=bash", str(file)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{name}\n{proc.stdout}{proc.stderr}"
