"""The GitHub files: the project's CI workflow and the composite action users call."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, tool

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
ACTION = ROOT / "action.yml"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
SYNC_STEP = "Check rendered trees are in sync"


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
    assert set(action["inputs"]) == {"specs", "policies", "sync-check", "repo", "baseline", "target", "kubeconfig",
                                     "fail-on-drift", "version"}
    assert action["inputs"]["specs"]["default"] == "clusters/*.yaml"
    assert action["inputs"]["fail-on-drift"]["default"] == "true"
    assert action["inputs"]["sync-check"]["default"] == "true"
    assert action["inputs"]["repo"]["default"] == "."


def test_action_checks_sync_against_the_commit_checked_out() -> None:
    step = _step(SYNC_STEP)
    assert step["if"] == "inputs.sync-check == 'true'"
    assert step["env"]["SPEC_FILES"] == "${{ steps.specs.outputs.files }}"
    assert "aicr-gen sync --check" in step["run"]
    assert "--staged" not in step["run"]  # CI checks the commit (HEAD), pre-commit the index


def test_workflow_is_minimal_and_does_not_require_reference() -> None:
    workflow = _load(WORKFLOW)
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is True
    assert "github.ref" in workflow["concurrency"]["group"]
    job = workflow["jobs"]["test"]
    assert job["timeout-minutes"] > 0
    assert "AICR_GEN_REQUIRE_REFERENCE" not in WORKFLOW.read_text(encoding="utf-8")
    assert any(step.get("run", "").strip() == "bash scripts/test.sh -q" for step in job["steps"])


def test_workflow_runs_the_action_on_the_examples() -> None:
    steps = _load(WORKFLOW)["jobs"]["action"]["steps"]
    action = next(step for step in steps if step.get("uses") == "./")
    assert action["with"] == {"specs": "examples/*.yaml", "sync-check": "false"}
    assert sorted(ROOT.glob("examples/*.yaml"))


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


def _step(name: str) -> dict[str, Any]:
    return next(step for step in _steps(ACTION) if step.get("name") == name)


def _run_step(name: str, env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """One run: step of the action under bash, its env: given directly, aicr-gen from this environment."""
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(["bash", "-c", _step(name)["run"]], cwd=cwd, capture_output=True, text=True,
                          check=False, env={**os.environ, **GIT_ENV, "PATH": path, **env})


def _spec_files(repo: Path, specs: str, tmp_path: Path) -> str:
    """The files output of the action's Find ClusterSpecs step for the ``specs`` input."""
    output = tmp_path / "github-output"
    output.write_text("")
    proc = _run_step("Find ClusterSpecs", {"SPECS": specs, "GITHUB_OUTPUT": str(output)}, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    match = re.fullmatch(r"files<<(\w+)\n(.*)\n\1\n", output.read_text(), re.DOTALL)
    assert match, output.read_text()
    return match.group(2)


def _gitops_repo(tmp_path: Path) -> Path:
    """Two ClusterSpecs under clusters/, each with its tree committed by ``aicr-gen sync``."""
    repo = tmp_path / "gitops"
    (repo / "clusters").mkdir(parents=True)
    env = {**os.environ, **GIT_ENV}
    subprocess.run(["git", "init", "-q"], cwd=repo, check=True, env=env)
    for name, intent in (("a", "inference"), ("b", "training")):
        subprocess.run([sys.executable, "-m", "aicr_gen", "spec", "init", "--service", "eks", "--accelerator", "h100",
                        "--intent", intent, "--os", "ubuntu", "-o", f"clusters/{name}.yaml"],
                       cwd=repo, check=True, capture_output=True, env=env)
        spec = repo / "clusters" / f"{name}.yaml"
        spec.write_text(spec.read_text().replace("    thresholds: {}\n",
                                                 '    thresholds:\n      busBandwidthGBps: "value >= 300"\n'))
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-q", "-m", "specs"], cwd=repo, check=True, env=env)
    for name in ("a", "b"):
        subprocess.run([sys.executable, "-m", "aicr_gen", "sync", f"clusters/{name}.yaml", "--repo", "."],
                       cwd=repo, check=True, capture_output=True, env=env)
    return repo


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_action_lints_and_sync_checks_specs_and_annotates_a_stale_one(tmp_path: Path) -> None:
    repo = _gitops_repo(tmp_path)
    files = _spec_files(repo, "clusters/*.yaml", tmp_path)
    assert files.splitlines() == ["clusters/a.yaml", "clusters/b.yaml"]
    lint = _run_step("Lint ClusterSpecs", {"SPEC_FILES": files, "POLICIES": ""}, repo)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    proc = _run_step(SYNC_STEP, {"SPEC_FILES": files, "REPO": "."}, repo)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "::error" not in proc.stdout

    spec = repo / "clusters" / "b.yaml"
    spec.write_text(spec.read_text().replace("    set: []", '    set: ["gpu-operator:driver.enabled=false"]', 1))
    subprocess.run(["git", "commit", "-q", "-am", "override without a sync"], cwd=repo, check=True,
                   env={**os.environ, **GIT_ENV})
    proc = _run_step(SYNC_STEP, {"SPEC_FILES": files, "REPO": "."}, repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert re.search(r"stale +clusters/[^/]+/argocd/\d+-gpu-operator/values\.yaml", proc.stderr), proc.stderr
    errors = [line for line in proc.stdout.splitlines() if line.startswith("::error")]
    assert errors == ["::error file=clusters/b.yaml::the tree rendered from clusters/b.yaml differs from the commit "
                      "(stale files above); run 'aicr-gen sync clusters/b.yaml --repo .' and push the commit"]
