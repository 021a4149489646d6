"""The GitHub files: the project's CI workflow, the composite action users call, and the example workflow and
Renovate preset of the pull-request loop."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
import yaml

from tests.conftest import ROOT, tool

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
ACTION = ROOT / "action.yml"
EXAMPLE_WORKFLOW = ROOT / "examples" / "github" / "plan.yml"
RENOVATE = ROOT / "examples" / "renovate.json"
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
            for path in (WORKFLOW, ACTION, EXAMPLE_WORKFLOW) for index, step in enumerate(_steps(path))
            if "run" in step]


@pytest.mark.parametrize(("path", "schema"), [(WORKFLOW, "vendor.github-workflows"),
                                              (ACTION, "vendor.github-actions"),
                                              (EXAMPLE_WORKFLOW, "vendor.github-workflows"),
                                              (RENOVATE, "vendor.renovate")])
def test_schema(path: Path, schema: str) -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", schema, str(path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_action_is_composite_with_documented_inputs() -> None:
    action = _load(ACTION)
    assert action["runs"]["using"] == "composite"
    assert set(action["inputs"]) == {"specs", "policies", "sync-check", "repo", "plan", "base", "token", "baseline",
                                     "target", "kubeconfig", "fail-on-drift", "fleet-drift", "snapshots", "version",
                                     "fail-on-blocked", "charts", "offline", "rollout", "fleet", "evidence"}
    assert action["inputs"]["fail-on-blocked"]["default"] == "true"
    assert action["inputs"]["offline"]["default"] == "false"
    assert action["inputs"]["plan"]["default"] == "true" and action["inputs"]["token"]["default"] == ""
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
    for name, intent, platform in (("a", "inference", "any"), ("b", "training", "kubeflow")):  # kubeflow: NVCRE
        subprocess.run([sys.executable, "-m", "aicr_gen", "spec", "init", "--service", "eks", "--accelerator", "h100",
                        "--intent", intent, "--os", "ubuntu", "--platform", platform, "-o", f"clusters/{name}.yaml"],
                       cwd=repo, check=True, capture_output=True, env=env)
        spec = repo / "clusters" / f"{name}.yaml"
        spec.write_text(re.sub(r"(?m)^(\s+url:).*$", r"\1 https://github.com/example/gitops.git", spec.read_text(),
                               count=1))
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


PLAN_STEP = "Plan"
COMMENT_STEP = "Comment the plan on the pull request"
MARKER = "<!-- aicr-gen-plan -->"


def _pull_request(tmp_path: Path) -> tuple[Path, str]:
    """The gitops repository with a pull request's commit on top: clusters/a.yaml pins gpu-operator one minor
    newer (its tree not synced yet). Returns the repository and the base commit."""
    repo = _gitops_repo(tmp_path)
    base = subprocess.run(["git", "-C", str(repo), "rev-parse", "HEAD"], check=True, capture_output=True,
                          text=True).stdout.strip()
    spec = repo / "clusters" / "a.yaml"
    spec.write_text(spec.read_text().replace("  versions: {}", "  versions:\n    gpu-operator: v26.4.0", 1))
    subprocess.run(["git", "commit", "-q", "-am", "bump gpu-operator"], cwd=repo, check=True,
                   env={**os.environ, **GIT_ENV})
    return repo, base


def _plan_step(repo: Path, base: str, tmp_path: Path,
               body: str = "") -> tuple[subprocess.CompletedProcess[str], Path, Path]:
    summary, output, temp = tmp_path / "summary.md", tmp_path / "plan-output", tmp_path / "runner-temp"
    summary.write_text("")
    output.write_text("")
    temp.mkdir(exist_ok=True)
    files = _spec_files(repo, "clusters/*.yaml", tmp_path)
    proc = _run_step(PLAN_STEP, {"SPEC_FILES": files, "REPO": ".", "BASE": base, "GITHUB_STEP_SUMMARY": str(summary),
                                 "GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(temp), "FAIL_ON_BLOCKED": "true",
                                 "CHARTS": "", "OFFLINE": "true", "PR_BODY": body}, repo)
    return proc, summary, output


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_plan_step_writes_the_plan_against_the_base_to_the_job_summary(tmp_path: Path) -> None:
    step = _step(PLAN_STEP)
    assert "github.event_name == 'pull_request'" in step["if"] and "inputs.plan == 'true'" in step["if"]
    assert step["env"]["BASE"] == "${{ inputs.base || github.event.pull_request.base.sha }}"
    repo, base = _pull_request(tmp_path)
    proc, summary, output = _plan_step(repo, base, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    text = summary.read_text()
    assert text.startswith(f"## aicr-gen plan\n\nAgainst `{base[:12]}`: 1 of 2 clusters change")
    assert "- bumped gpu-operator v26.3.3 -> v26.4.0" in text and "Unchanged (1): `" in text
    written = dict(line.split("=", 1) for line in output.read_text().splitlines())
    assert Path(written["full"]).read_text() == text and written["status"] == "0"
    assert Path(written["file"]).read_text().startswith("## aicr-gen plan\n")

    # a shallow clone (actions/checkout's default depth) lacks the base commit: the step fetches it
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth=1", f"file://{repo}", str(clone)], check=True)
    shallow = tmp_path / "shallow"
    shallow.mkdir()
    proc, summary, _output = _plan_step(clone, base, shallow)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "- bumped gpu-operator v26.3.3 -> v26.4.0" in summary.read_text()


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_plan_step_reads_acknowledgements_from_the_description_and_nothing_else(tmp_path: Path) -> None:
    """Only 'aicr-gen allow-blocked:' lines of the description count; a name that is no component name is
    refused with a warning, never run, never globbed."""
    repo, base = _pull_request(tmp_path)
    (repo / "pwned").unlink(missing_ok=True)
    body = ("Bump.\r\naicr-gen allow-blocked: gpu-operator, *\r\n  aicr-gen allow-blocked: $(touch pwned)\n"
            "aicr-gen allow-blocked: `touch pwned` ../x\nsomething aicr-gen allow-blocked: nvsentinel\n")
    trace = tmp_path / "trace"
    trace.write_text("")
    wrapper = tmp_path / "bin"
    wrapper.mkdir()
    (wrapper / "aicr-gen").write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {trace}\n'
                                      f'exec {sys.executable} -m aicr_gen "$@"\n')
    (wrapper / "aicr-gen").chmod(0o755)
    summary, output, temp = tmp_path / "summary.md", tmp_path / "out", tmp_path / "temp"
    for path in (summary, output):
        path.write_text("")
    temp.mkdir()
    env = {"SPEC_FILES": _spec_files(repo, "clusters/*.yaml", tmp_path), "REPO": ".", "BASE": base,
           "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_OUTPUT": str(output), "RUNNER_TEMP": str(temp),
           "FAIL_ON_BLOCKED": "true", "CHARTS": "", "OFFLINE": "true", "PR_BODY": body,
           "PATH": os.pathsep.join([str(wrapper), str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    proc = subprocess.run(["bash", "-c", _step(PLAN_STEP)["run"]], cwd=repo, capture_output=True, text=True,
                          check=False, env={**os.environ, **GIT_ENV, **env})
    assert proc.returncode == 0, proc.stdout + proc.stderr
    args = trace.read_text().splitlines()
    allowed = [args[index + 1] for index, arg in enumerate(args) if arg == "--allow-blocked"]
    assert allowed == ["gpu-operator", "*"]
    assert args[args.index("--fail-on"):args.index("--fail-on") + 2] == ["--fail-on", "blocked"]
    assert "--offline" in args and not (repo / "pwned").exists()
    assert proc.stdout.count("::warning::aicr-gen allow-blocked:") == 5  # $(touch, pwned), `touch, pwned`, ../x


class _FakeGitHub(BaseHTTPRequestHandler):
    """The issue-comment endpoints of GitHub's REST API and GraphQL's ``viewer`` (the token's identity,
    ``viewer``), in memory; every request is recorded."""

    comments: list[dict[str, Any]]
    requests: list[tuple[str, str, dict[str, str], Any]]
    viewer = "github-actions[bot]"

    def _reply(self, status: int, data: Any) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _record(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        data = json.loads(self.rfile.read(length)) if length else None
        self.requests.append((self.command, self.path, dict(self.headers), data))
        return data

    def do_GET(self) -> None:
        self._record()
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        size, page = int(query["per_page"][0]), int(query["page"][0])
        assert url.path == "/repos/octo/gitops/issues/7/comments"
        self._reply(200, self.comments[(page - 1) * size:page * size])

    def do_POST(self) -> None:
        data = self._record()
        if self.path == "/graphql":
            assert data == {"query": "query { viewer { login } }"}
            self._reply(200, {"data": {"viewer": {"login": self.viewer}}})
            return
        assert self.path == "/repos/octo/gitops/issues/7/comments"
        comment = {"id": 9000 + len(self.comments), "body": data["body"],
                   "user": {"login": self.viewer, "type": "Bot" if self.viewer.endswith("[bot]") else "User"}}
        self.comments.append(comment)
        self._reply(201, comment)

    def do_PATCH(self) -> None:
        data = self._record()
        comment = next(item for item in self.comments
                       if self.path == f"/repos/octo/gitops/issues/comments/{item['id']}")
        comment["body"] = data["body"]
        self._reply(200, comment)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the test reads the recorded requests."""


@contextmanager
def fake_github() -> Iterator[tuple[str, type[_FakeGitHub]]]:
    """A fake GitHub API on 127.0.0.1 whose pull request 7 already has 100 comments by people (so the plan
    comment is on the second page)."""
    handler = type("Handler", (_FakeGitHub,), {
        "comments": [{"id": number, "body": f"looks good {number}", "user": {"login": "someone"}}
                     for number in range(1, 101)],
        "requests": []})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", handler
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def github_api() -> Iterator[tuple[str, type[_FakeGitHub]]]:
    with fake_github() as api:
        yield api


@pytest.mark.skipif(shutil.which("curl") is None or shutil.which("jq") is None, reason="curl and jq are required")
def test_plan_comment_is_created_once_then_updated_in_place(tmp_path: Path,
                                                           github_api: tuple[str, type[_FakeGitHub]]) -> None:
    url, server = github_api
    step = _step(COMMENT_STEP)
    assert step["if"] == "steps.plan.outcome == 'success' && inputs.token != ''"
    assert step["env"]["API_URL"] == "${{ github.api_url }}"
    assert step["env"]["GRAPHQL_URL"] == "${{ github.graphql_url }}"
    temp = tmp_path / "runner-temp"
    temp.mkdir()
    plan = tmp_path / "plan.md"
    env = {"GH_TOKEN": "test-token", "PLAN_FILE": str(plan), "API_URL": url, "REPOSITORY": "octo/gitops",
           "PR_NUMBER": "7", "RUNNER_TEMP": str(temp), "NO_PROXY": "127.0.0.1", "no_proxy": "127.0.0.1",
           "GRAPHQL_URL": f"{url}/graphql"}
    env.update(dict.fromkeys(("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"), ""))

    plan.write_text("## aicr-gen plan\n\nfirst push\n")
    proc = _run_step(COMMENT_STEP, env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "commented the plan on pull request 7" in proc.stdout
    (created,) = [item for item in server.comments if item["body"].startswith(MARKER)]
    assert created["body"] == f"{MARKER}\n## aicr-gen plan\n\nfirst push\n"

    plan.write_text("## aicr-gen plan\n\nsecond push\n")
    proc = _run_step(COMMENT_STEP, env, tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert f"updated the plan comment {created['id']} on pull request 7" in proc.stdout
    ours = [item for item in server.comments if item["body"].startswith(MARKER)]
    assert ours == [created] and created["body"].endswith("second push\n")  # the same comment, edited
    assert len(server.comments) == 101

    methods = [(method, urlsplit(path).path) for method, path, _headers, _data in server.requests]
    listing, edit = "/repos/octo/gitops/issues/7/comments", f"/repos/octo/gitops/issues/comments/{created['id']}"
    assert methods == [("POST", "/graphql"), ("GET", listing), ("GET", listing),  # who am I; two pages of 100,
                       ("POST", listing),  # then create
                       ("POST", "/graphql"), ("GET", listing), ("GET", listing),  # found on page 2:
                       ("PATCH", edit)]  # edited in place
    assert all(headers["Authorization"] == "Bearer test-token" for _m, _p, headers, _d in server.requests)


def test_example_workflow_syncs_renovate_branches_then_comments_the_plan() -> None:
    workflow = _load(EXAMPLE_WORKFLOW)
    sync, plan = workflow["jobs"]["sync"], workflow["jobs"]["plan"]
    assert "renovate[bot]" in sync["if"] and sync["permissions"] == {"contents": "write"}
    assert sync["steps"][0]["with"]["ref"] == "${{ github.head_ref }}"
    script = next(step["run"] for step in sync["steps"] if "run" in step and "aicr-gen sync" in step["run"])
    assert 'git push origin "HEAD:refs/heads/$HEAD_REF"' in script
    assert plan["needs"] == "sync" and "!cancelled()" in plan["if"]
    assert plan["permissions"] == {"contents": "read", "pull-requests": "write"}
    action = next(step for step in plan["steps"] if step.get("uses", "").split("@")[0].endswith("/aicr-gen"))
    assert action["with"] == {"specs": "clusters/*.yaml", "token": "${{ github.token }}"}
    paths = workflow[True]["pull_request"]["paths"]  # PyYAML: `on` is True; every input kind: tests/gates/test_inputs
    assert "**/clusters/**" in paths and "**/fleet*.yaml" in paths and "**/policies/**" in paths


def _recursive(patterns: list[str], text: str) -> list[str]:
    """Renovate's recursive matchStrings strategy (each pattern runs inside the previous one's matches), with
    JavaScript's named groups in Python's spelling; the currentValue of each final match."""
    matches = [text]
    for pattern in patterns:
        regex = re.compile(pattern.replace("(?<", "(?P<"))
        found = [match for part in matches for match in regex.finditer(part)]
        if regex.groupindex:
            return [match.group("currentValue") for match in found]
        matches = [match.group(0) for match in found]
    return []


def test_renovate_preset_tracks_each_catalog_component_in_its_helm_repository() -> None:
    registry = yaml.safe_load((ROOT / "overlays" / "registry.yaml").read_text(encoding="utf-8"))
    expected = {}
    for component in registry["components"]:
        helm = component.get("helm") or {}
        repository, chart = helm.get("defaultRepository"), helm.get("defaultChart")
        if repository and chart:
            expected[component["name"]] = (
                ("docker", f"{repository.removeprefix('oci://')}/{chart}", None) if repository.startswith("oci://")
                else ("helm", chart.rsplit("/", 1)[-1], repository))
    preset = json.loads(RENOVATE.read_text(encoding="utf-8"))
    managers = {manager["depNameTemplate"]: manager for manager in preset["customManagers"]}
    assert {name: (manager["datasourceTemplate"], manager["packageNameTemplate"], manager.get("registryUrlTemplate"))
            for name, manager in managers.items()} == expected
    assert "gpu-operator" in managers and managers["gpu-operator"]["registryUrlTemplate"] == \
        "https://helm.ngc.nvidia.com/nvidia"

    spec = (ROOT / "examples" / "eks-h100-inference-dynamo.yaml").read_text(encoding="utf-8")
    pinned = spec.replace("  versions: {}  # e.g. gpu-operator: v26.3.3\n",
                          "  versions:\n    gpu-operator: v26.4.0  # bumped by Renovate\n"
                          "    \"nvsentinel\": 'v1.25.0'\n\n    # a comment\n    nfd: 0.19.0\n", 1)
    assert pinned != spec
    for name, value in (("gpu-operator", "v26.4.0"), ("nvsentinel", "v1.25.0"), ("nfd", "0.19.0"),
                        ("cert-manager", None)):
        assert _recursive(managers[name]["matchStrings"], pinned) == ([value] if value else [])
        assert _recursive(managers[name]["matchStrings"], spec) == []  # versions: {} pins nothing
    assert all(re.compile(pattern.strip("/")).search("clusters/prod/a.yaml")
               for manager in managers.values() for pattern in manager["managerFilePatterns"])
    # the set: overrides and a rendered tree's files are no pins
    tree_file = "apiVersion: argoproj.io/v1alpha1\nkind: Application\nspec:\n  versions:\n    nfd: 1.0.0\n"
    overrides = pinned.replace("    set: []", "    set:\n      - gpu-operator:driver.version=1")
    assert _recursive(managers["nfd"]["matchStrings"], tree_file) == []
    assert _recursive(managers["gpu-operator"]["matchStrings"], overrides) == ["v26.4.0"]


def test_renovate_bumps_the_pins_of_fleet_files_too() -> None:
    managers = {item["depNameTemplate"]: item for item in json.loads(RENOVATE.read_text())["customManagers"]}
    fleet = (ROOT / "examples" / "fleet" / "fleet.yaml").read_text()
    assert _recursive(managers["gpu-operator"]["matchStrings"], fleet) == ["v26.3.3"]
    assert _recursive(managers["nfd"]["matchStrings"], fleet) == []
    patterns = [re.compile(pattern.strip("/")) for pattern in managers["gpu-operator"]["managerFilePatterns"]]
    for path, tracked in (("fleet.yaml", True), ("examples/fleet/fleet.yaml", True), ("fleets/prod.yml", True),
                          ("clusters/a.yaml", True), ("fleet/argocd/applicationset.yaml", False),
                          ("values.yaml", False)):
        assert any(pattern.search(path) for pattern in patterns) == tracked, path
    other = fleet.replace("kind: Fleet", "kind: Policy")
    assert _recursive(managers["gpu-operator"]["matchStrings"], other) == []  # neither a spec nor a fleet
