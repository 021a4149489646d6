"""Errors a user can act on, and nothing of theirs thrown away (issue 25): ``lint`` prints every problem of every
file in one format on one stream, at the offending key; out-of-range numbers and missing files are exit 2 at the
file and line that wrote them; ``sync`` names every file ``--force`` replaces, finds the repository from the
current folder and makes the root commit of a new repository, even when killed half-way."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, Result
from tests.hostile.test_sync_interrupt import TIMEOUT, paused

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
POOLS = ROOT / "examples" / "pools"
MANAGED = "clusters/h100-eks-ubuntu-inference-dynamo"
LINE = re.compile(r"^(?P<file>.+):(?P<line>\d+):(?P<col>\d+): (?P<severity>error|warning) \[(?P<policy>[\w-]+)\] "
                  r"(?:(?P<path>[\w.\[\]/-]+): )?(?P<message>.+)$")
"""lint's one format: ``file:line:col: severity [policy] path: message``."""


def run(*args: str, cwd: Path = ROOT, env: dict[str, str] | None = None) -> Result:
    """``aicr-gen ARGS`` as a real process, as hooks and users run it."""
    proc = subprocess.run([sys.executable, "-m", "aicr_gen", *args], capture_output=True, text=True,
                          env={**os.environ, **(env or {})}, cwd=cwd, check=False, timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def line_of(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def col_of(path: Path, line: int, text: str) -> int:
    return path.read_text().splitlines()[line - 1].index(text) + 1


def reported(result: Result) -> list[dict[str, str]]:
    """lint's problem lines, parsed; every line but the last count must be one."""
    *lines, count = result.out.splitlines()
    assert re.fullmatch(r"\d+ error\(s\), \d+ warning\(s\) in \d+ file\(s\)", count), result.out
    found = [LINE.match(line) for line in lines]
    assert all(found), result.out
    return [match.groupdict() for match in found if match]


def assert_clean(result: Result) -> None:
    """No traceback, no internal error."""
    both = result.out + result.err
    assert "Traceback" not in both and "internal error" not in both, result


def write_spec(folder: Path, text: str, name: str = "x.yaml") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text(text)
    return path


def example(edit: Any = None) -> str:
    data = yaml.safe_load(EXAMPLE.read_text())
    if edit is not None:
        edit(data["spec"])
    return yaml.safe_dump(data, sort_keys=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "gitops"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    return folder


# ------------------------------------------------------------------------------------------------- lint


def test_lint_reports_every_schema_error_of_a_file_at_its_key_on_stdout(tmp_path: Path) -> None:
    text = (POOLS / "eks-h100-gb200.yaml").read_text()
    text = (text.replace("      nodes: 16\n", "      nodes: -1\n      bogus: 1\n")
            .replace("mode: quarantine", "mode: nope").replace("percentage: 10", "percentage: 1000"))
    spec = write_spec(tmp_path, text)
    result = run("lint", str(spec))
    assert result.code == 2 and result.err == "", result
    assert_clean(result)
    found = reported(result)
    expected = [("nodes: -1", "spec.pools[0].nodes", "-1 is under the least allowed value 0; give at least 0"),
                ("bogus: 1", "spec.pools[0].bogus", "unknown field 'bogus'; allowed fields: accelerator, "),
                ("mode: nope", "spec.sentinel.mode", "value 'nope' is not allowed; use one of 'monitor' or "),
                ("percentage: 1000", "spec.sentinel.breaker.percentage", "1000 is over the limit of 100; give at "
                                                                          "most 100")]
    assert len(found) == len(expected), found
    for problem, (marker, path, message) in zip(found, expected, strict=True):
        line = line_of(spec, marker)
        key = marker.split(":")[0]
        assert (problem["file"], int(problem["line"]), int(problem["col"])) == (str(spec), line,
                                                                                col_of(spec, line, key))
        assert (problem["severity"], problem["policy"], problem["path"]) == ("error", "input", path)
        assert problem["message"].startswith(message), problem
    assert result.out.endswith("4 error(s), 0 warning(s) in 1 file(s)\n")


@pytest.mark.parametrize(("written", "message"), [
    ('busBandwidthGBps: "value >>"', 'threshold: busBandwidthGBps="value >>": syntax error'),
    ('busBandwdthGBps: "value >= 300"', "unknown threshold key(s) [busBandwdthGBps] (did you mean busBandwidthGBps?)"),
])
def test_a_bad_threshold_is_reported_at_its_key_not_at_thresholds(tmp_path: Path, written: str, message: str) -> None:
    text = (POOLS / "eks-h100-gb200.yaml").read_text().replace('busBandwidthGBps: "value >= 500"', written)
    spec = write_spec(tmp_path, text)
    (tmp_path / "gb200-rules.yaml").write_text((POOLS / "gb200-rules.yaml").read_text())
    result = run("lint", str(spec))
    assert result.code == 2, result
    (problem,) = reported(result)
    line = line_of(spec, written)
    key = written.split(":", maxsplit=1)[0]
    assert (problem["line"], problem["col"]) == (str(line), str(col_of(spec, line, key)))
    assert problem["path"] == f"spec.pools[1].certification.thresholds.{key}"
    assert message in problem["message"], problem


def test_a_key_holding_dots_is_pointed_at_whole(tmp_path: Path) -> None:
    text = (POOLS / "eks-h100-gb200.yaml").read_text().replace("gpusPerNode: 8", 'resources.limits.cpuu: "1"')
    spec = write_spec(tmp_path, text)
    (tmp_path / "gb200-rules.yaml").write_text((POOLS / "gb200-rules.yaml").read_text())
    (problem,) = reported(run("lint", str(spec)))
    line = line_of(spec, "cpuu")
    assert (problem["line"], problem["col"]) == (str(line), str(col_of(spec, line, "resources.limits.cpuu")))
    assert problem["path"] == "spec.pools[0].certification.options.resources.limits.cpuu"


def test_sync_names_every_schema_error_too(tmp_path: Path, repo: Path) -> None:
    spec = write_spec(repo / "clusters", example(lambda spec: (spec["sentinel"].update(mode="nope"),
                                                               spec["certification"].update(postChnage=True))))
    result = run("sync", str(spec), "--repo", str(repo))
    assert result.code == 2 and result.out == "", result
    assert_clean(result)
    lines = result.err.removeprefix("aicr-gen: error: ").splitlines()
    assert lines == [f"{spec}:{line_of(spec, 'postChnage')}: spec.certification.postChnage: unknown field "
                     "'postChnage'; did you mean 'postChange'?",
                     f"{spec}:{line_of(spec, 'mode: nope')}: spec.sentinel.mode: value 'nope' is not allowed; use "
                     "one of 'monitor' or 'quarantine'"], result.err
    assert git(repo, "rev-list", "--all") == ""  # nothing committed


def test_policy_findings_and_input_errors_share_one_format_and_stream(tmp_path: Path) -> None:
    policy = write_spec(tmp_path / "a", example(lambda spec: spec["sentinel"].update(mode="quarantine")))
    bad = write_spec(tmp_path / "b", example(lambda spec: spec["repo"].update(branch=7)))
    result = run("lint", str(policy), str(bad))
    assert result.code == 2 and result.err == "", result
    found = reported(result)
    by_policy = {problem["policy"]: problem for problem in found}
    mode = line_of(policy, "mode: quarantine")
    assert by_policy["sentinel-monitor-unless-opted-in"] | {"message": ""} == {
        "file": str(policy), "line": str(mode), "col": str(col_of(policy, mode, "mode")), "severity": "error",
        "policy": "sentinel-monitor-unless-opted-in", "path": "spec.sentinel.mode", "message": ""}
    branch = line_of(bad, "branch: 7")
    assert by_policy["input"] | {"message": ""} == {
        "file": str(bad), "line": str(branch), "col": str(col_of(bad, branch, "branch")), "severity": "error",
        "policy": "input", "path": "spec.repo.branch", "message": ""}
    assert [problem["file"] for problem in found] == sorted(problem["file"] for problem in found)  # per file


def test_lint_json_keeps_its_shape_with_one_entry_per_error(tmp_path: Path) -> None:
    spec = write_spec(tmp_path, example(lambda spec: (spec["sentinel"].update(mode="nope", lifecycle="x"))))
    result = run("lint", "--format", "json", str(spec))
    assert result.code == 2 and result.err == "", result
    (entry,) = json.loads(result.out)["files"]
    assert [sorted(error) for error in entry["errors"]] == [["file", "line", "message", "path", "policy"]] * 2
    assert [(error["path"], error["line"]) for error in entry["errors"]] == [
        ("spec.sentinel.mode", line_of(spec, "mode: nope")), ("spec.sentinel.lifecycle", line_of(spec, "lifecycle"))]


OUT_OF_RANGE = [
    ("pool nodes", POOLS / "eks-h100-gb200.yaml", ("nodes: 16", "nodes: 99999999999999999999999999"),
     "spec.pools[0].nodes", "over the limit of 1000000"),
    ("criteria nodes", EXAMPLE, ('platform: "dynamo"', 'platform: "dynamo"\n    nodes: 18446744073709551616'),
     "spec.criteria.nodes", "over the limit of 1000000"),
    ("breaker maxNodes", POOLS / "eks-h100-gb200.yaml", ("percentage: 10", "maxNodes: 1e400"),
     "spec.sentinel.breaker.maxNodes", "a finite number (got inf); write a whole number"),
    ("breaker maxNodes huge", POOLS / "eks-h100-gb200.yaml", ("percentage: 10", "maxNodes: 9223372036854775808"),
     "spec.sentinel.breaker.maxNodes", "over the limit of 1000000"),
    ("certification option", EXAMPLE, ("options: {}", "options: {gpusPerNode: 99999999999999999999999999}"),
     "spec.certification.options.gpusPerNode", "over the limit of 9223372036854775807"),
    ("negative option", EXAMPLE, ("options: {}", "options: {gpusPerNode: -99999999999999999999999999}"),
     "spec.certification.options.gpusPerNode", "under the least allowed value -9223372036854775808"),
]


@pytest.mark.parametrize(("source", "change", "path", "message"), [case[1:] for case in OUT_OF_RANGE],
                         ids=[case[0] for case in OUT_OF_RANGE])
def test_out_of_range_numbers_are_exit_2_at_their_line(repo: Path, source: Path, change: tuple[str, str], path: str,
                                                       message: str) -> None:
    text = source.read_text()
    assert change[0] in text
    spec = write_spec(repo / "clusters", text.replace(change[0], change[1], 1))
    (repo / "clusters" / "gb200-rules.yaml").write_text((POOLS / "gb200-rules.yaml").read_text())
    line = line_of(spec, change[1].split("\n")[-1].split(":")[0].strip() + ":")
    lint = run("lint", str(spec))
    assert lint.code == 2 and lint.err == "", lint
    assert_clean(lint)
    (problem,) = reported(lint)
    assert (problem["line"], problem["path"]) == (str(line), path), problem
    assert message in problem["message"], problem
    sync = run("sync", str(spec), "--repo", str(repo))
    assert sync.code == 2, sync
    assert_clean(sync)
    assert sync.err.startswith(f"aicr-gen: error: {spec}:{line}: {path}: ") and message in sync.err, sync.err


# --------------------------------------------------------------------------------------------- missing files


MISSING = [
    ("rules", lambda spec: spec["sentinel"].update(mode="quarantine", breaker={"percentage": 10},
                                                   rules="no-rules.yaml"), "rules: no-rules.yaml",
     "spec.sentinel.rules", "file 'no-rules.yaml' not found"),
    ("policy", lambda spec: spec.update(policies=["policies/none.yaml"]), "- policies/none.yaml",
     "spec.policies[0]", "file 'policies/none.yaml' not found"),
    ("catalog", lambda spec: spec.update(catalogs=["no-catalog"]), "- no-catalog", "spec.catalogs[0]",
     "catalog folder 'no-catalog' not found"),
]


@pytest.mark.parametrize(("edit", "marker", "path", "message"), [case[1:] for case in MISSING],
                         ids=[case[0] for case in MISSING])
def test_a_missing_file_is_named_at_the_spec_line_that_names_it(repo: Path, edit: Any, marker: str, path: str,
                                                                message: str) -> None:
    spec = write_spec(repo / "clusters", example(edit))
    line = line_of(spec, marker)
    where = f"{spec}:{line}: {path}: {message} ({repo / 'clusters'}/"
    lint = run("lint", str(spec))
    assert lint.code == 2 and lint.err == "", lint
    (problem,) = [problem for problem in reported(lint) if problem["severity"] == "error"]
    assert (problem["line"], problem["path"]) == (str(line), path)
    assert problem["message"].startswith(message) and "create it or fix the path" in problem["message"]
    # every command that reads the file: a check renders and evaluates no policy, policy check renders nothing
    check = [("sync", "--check", str(spec), "--repo", str(repo))] if path != "spec.policies[0]" else []
    policies = [("policy", "check", str(spec))] if path != "spec.sentinel.rules" else []
    for command in (("sync", str(spec), "--repo", str(repo)), *check, *policies):
        result = run(*command)
        assert result.code == 2, (command, result)
        assert_clean(result)
        assert result.err.startswith(f"aicr-gen: error: {where}"), (command, result.err)


def test_a_missing_folder_a_fleet_names_is_reported_at_the_fleet_and_the_spec_extending_it(repo: Path) -> None:
    fleet = write_spec(repo, "apiVersion: aicr-gen.dev/v1alpha1\nkind: Fleet\nmetadata:\n  name: f\nspec:\n"
                             "  catalogs:\n    - shared-catalog\n", "fleet.yaml")
    spec = write_spec(repo / "clusters", example(lambda spec: (spec.update(extends="../fleet.yaml"),
                                                               spec.pop("catalogs"))))
    result = run("lint", str(spec))
    assert result.code == 2, result
    (problem,) = reported(result)
    assert (problem["file"], problem["line"], problem["path"]) == (str(fleet), str(line_of(fleet, "- shared")),
                                                                   "spec.catalogs[0]"), problem
    assert problem["message"].startswith("'shared-catalog': no such file or folder beside the fleet")
    assert f"named by {spec}:{line_of(spec, 'extends:')}: spec.extends" in problem["message"]


# ------------------------------------------------------------------------------------------------------ sync


def synced(repo: Path) -> Path:
    spec = write_spec(repo / "specs", EXAMPLE.read_text().replace("https://github.com/example/gitops.git",
                                                                  "https://github.com/o/g.git"))
    (repo / "README.md").write_text("hello\n")
    git(repo, "add", "README.md")
    git(repo, "commit", "-q", "-m", "init")
    result = run("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    return spec


def test_sync_force_names_every_file_it_replaces(repo: Path) -> None:
    spec = synced(repo)
    edited = sorted(git(repo, "ls-files", MANAGED).split())[:2]
    (repo / edited[0]).write_text("# hand edit\n")
    (repo / edited[1]).unlink()
    (repo / MANAGED / "mine.txt").write_text("untracked, kept\n")
    before = git(repo, "rev-parse", "HEAD")
    refused = run("sync", str(spec), "--repo", str(repo))
    assert refused.code == 1 and "rerun with --force" in refused.err, refused
    forced = run("sync", str(spec), "--repo", str(repo), "--force")
    assert forced.code == 0, forced
    assert forced.err == ("aicr-gen: --force: replacing 2 uncommitted change(s) with the synced files:\n"
                          f"   M {edited[0]}\n   D {edited[1]}\n"), forced.err
    assert forced.out == f"aicr-gen: {MANAGED} is up to date on refs/heads/main; nothing to commit\n"
    assert git(repo, "rev-parse", "HEAD") == before
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == f"?? {MANAGED}/mine.txt\n"


def test_sync_and_plan_without_repo_use_the_work_tree_of_the_current_folder(repo: Path, tmp_path: Path) -> None:
    spec = synced(repo)
    spec.write_text(spec.read_text().replace("dryRun: false", "dryRun: true"))
    result = run("sync", spec.name, cwd=spec.parent)
    assert result.code == 0, result
    assert result.out.startswith("aicr-gen: committed ")
    assert git(repo, "status", "--porcelain") == ""
    check = run("sync", "--check", str(spec), cwd=repo / MANAGED)
    assert check.code == 0, check
    plan = run("plan", str(spec), "--format", "json", cwd=repo / MANAGED)
    assert plan.code == 0 and json.loads(plan.out)["changedClusters"] == 0, plan
    outside = tmp_path / "elsewhere"
    outside.mkdir()
    refused = run("sync", str(spec), cwd=outside)
    assert refused.code == 2, refused
    assert refused.err == (f"aicr-gen: error: the current folder {outside} (no --repo given): not inside a Git work "
                           "tree (run 'git init' there first, or give --repo DIR)\n")


def test_sync_into_an_empty_repository_makes_the_root_commit(repo: Path) -> None:
    spec = write_spec(repo / "specs", EXAMPLE.read_text())
    (repo / "notes.txt").write_text("mine, staged before any commit\n")
    git(repo, "add", "notes.txt")
    check = run("sync", "--check", str(spec), "--repo", str(repo))
    assert check.code == 1 and "missing" in check.out + check.err, check  # nothing committed yet: stale
    result = run("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    assert_clean(result)
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(repo, "rev-list", "--parents", "-n1", "HEAD").split()[1:] == []  # the root commit
    assert git(repo, "status", "--porcelain") == "A  notes.txt\n"  # the user's staged file stays theirs
    assert run("sync", "--check", str(spec), "--repo", str(repo)).code == 0
    again = run("sync", str(spec), "--repo", str(repo))
    assert again.out.endswith("nothing to commit\n"), again


@pytest.mark.parametrize("step", ["committed", "recorded", "moved", "writing"])
def test_a_root_commit_killed_half_way_is_finished_by_the_next_sync(repo: Path, tmp_path: Path, step: str) -> None:
    spec = write_spec(repo / "specs", EXAMPLE.read_text())
    marker = tmp_path / "paused"
    proc = subprocess.Popen([sys.executable, "-m", "aicr_gen", "sync", str(spec), "--repo", str(repo)],
                            env={**os.environ, "AICR_GEN_TEST_PAUSE_AT": step, "AICR_GEN_TEST_PAUSE_FILE": str(marker)},
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, process_group=0)
    paused(proc, marker)
    proc.kill()
    assert proc.wait(TIMEOUT) == -signal.SIGKILL
    proc.communicate()
    moved = step in ("moved", "writing")
    born = subprocess.run(["git", "-C", str(repo), "rev-parse", "-q", "--verify", "HEAD"], capture_output=True,
                          check=False).returncode == 0
    assert born == moved
    result = run("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    assert_clean(result)
    assert ("finished an interrupted sync" in result.out) == moved, result.out
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert not (repo / ".git" / "aicr-gen-sync").exists() and not list(repo.rglob(".aicr-gen-tmp-*"))
    subprocess.run(["git", "-C", str(repo), "fsck", "--no-dangling", "--no-progress"], check=True,
                   capture_output=True)
    assert run("sync", "--check", str(spec), "--repo", str(repo)).code == 0


def test_a_root_commit_that_cannot_be_written_is_rolled_back_to_no_commit(repo: Path) -> None:
    """The branch moves to the root commit, then a file cannot be written (EPERM even for root): the branch is
    deleted again (it had no commit), the index and files are as before, one message."""
    if os.geteuid() != 0:
        pytest.skip("an immutable folder (chattr +i) needs root")
    spec = write_spec(repo / "specs", EXAMPLE.read_text())
    folder = repo / MANAGED / "sentinel"  # written after other files of the tree (sorted)
    folder.mkdir(parents=True)
    if subprocess.run(["chattr", "+i", str(folder)], capture_output=True, check=False).returncode:
        pytest.skip(f"chattr +i is not supported on the file system of {repo}")
    try:
        result = run("sync", str(spec), "--repo", str(repo))
    finally:
        subprocess.run(["chattr", "-i", str(folder)], check=True)
    assert result.code == 2, result
    assert_clean(result)
    assert result.err.startswith(f"aicr-gen: error: {repo}: permission denied; run as a user who can"), result.err
    assert subprocess.run(["git", "-C", str(repo), "rev-parse", "-q", "--verify", "HEAD"], capture_output=True,
                          check=False).returncode != 0  # still no commit
    assert git(repo, "ls-files") == "" and not (repo / ".git" / "aicr-gen-sync").exists()
    assert sorted(path.name for path in (repo / MANAGED).iterdir()) == ["sentinel"]
    folder.rmdir()
    assert run("sync", str(spec), "--repo", str(repo)).code == 0  # nothing half-done stands in the way
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "1"
