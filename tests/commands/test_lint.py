"""``aicr-gen lint`` (the pre-commit hook) refuses everything ``sync`` refuses about a spec, without Git, and
``--format json`` of ``lint`` and ``verify`` has the documented shape."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
RULES = ROOT / "tests" / "fixtures" / "rules"
GOOD_RULES = """\
ruleSets:
  - name: XID 79
    match:
      all:
        - kind: HealthEvent
          expression: "event.agent == 'syslog-health-monitor' && '79' in event.errorCode"
    cordon: {shouldCordon: true}
"""
POLICY = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Policy
metadata:
  name: anything-goes
spec:
  description: a valid policy that finds nothing
  severity: error
  target: spec
  rule: "true"
  path: spec
  message: never
"""
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is required")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "gitops"
    (folder / "clusters").mkdir(parents=True)
    _git(folder, "init", "-q")
    _git(folder, "commit", "-q", "--allow-empty", "-m", "init")
    return folder


def _spec(folder: Path, edit: Callable[[dict[str, Any]], None] | None = None) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text())
    if edit:
        edit(data["spec"])
    path = folder / "x.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def _quarantine(**fields: Any) -> Callable[[dict[str, Any]], None]:
    def edit(spec: dict[str, Any]) -> None:
        spec["sentinel"].update(mode="quarantine", breaker={"percentage": 10}, **fields)

    return edit


def _line(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _refused_alike(cli: Any, spec: Path, repo: Path, *fragments: str) -> str:
    """lint and sync both exit 2 with the same one-line message holding every fragment: sync's
    ``file:line: path: message`` is lint's ``file:line:col: error [input] path: message`` on stdout."""
    lint = cli("lint", str(spec))
    sync = cli("sync", str(spec), "--repo", str(repo))
    assert lint.code == 2 and sync.code == 2, (lint, sync)
    message = sync.err.removeprefix("aicr-gen: error: ")
    file, line, rest = message.split(":", 2)
    assert re.search(rf"^{re.escape(file)}:{line}:\d+: error \[input\]{re.escape(rest)}", lint.out, re.M), (
        lint.out, sync.err)
    assert lint.err == ""
    for fragment in fragments:
        assert fragment in message, message
    assert "Traceback" not in lint.err + sync.err
    return message


ESCAPES: list[tuple[str, Callable[[Path], Callable[[dict[str, Any]], None]], str, str]] = [
    ("rules climbing out", lambda _: _quarantine(rules="../../../../etc/passwd"), "rules:", "spec.sentinel.rules"),
    ("policy climbing out", lambda _: lambda spec: spec.update(policies=["../../outside.yaml"]), "- ../../outside",
     "spec.policies[0]"),
    ("catalog climbing out", lambda _: lambda spec: spec.update(catalogs=["../../catalog"]), "- ../../catalog",
     "spec.catalogs[0]"),
    ("absolute policy", lambda root: lambda spec: spec.update(policies=[str(root.parent / "outside.yaml")]),
     "outside.yaml", "spec.policies[0]"),
    ("rules through a symlink", lambda _: _quarantine(rules="link/rules.yaml"), "rules:", "spec.sentinel.rules"),
]


@pytest.mark.parametrize(("edit", "marker", "field"), [case[1:] for case in ESCAPES], ids=[c[0] for c in ESCAPES])
def test_files_a_spec_reads_stay_in_its_repository(cli: Any, repo: Path, edit: Any, marker: str,
                                                    field: str) -> None:
    outside = repo.parent  # valid files there: before the fix, lint passed and sync read them
    (outside / "outside.yaml").write_text(POLICY)
    (outside / "catalog").symlink_to(ROOT / "overlays")
    (repo / "clusters" / "link").symlink_to(outside)
    (outside / "rules.yaml").write_text(GOOD_RULES)
    spec = _spec(repo / "clusters", edit(repo))
    where = f"{spec}:{_line(spec, marker)}: {field}: "
    message = _refused_alike(cli, spec, repo, where)
    assert "absolute" in message or "leads out of the Git repository the spec is in" in message


def test_a_path_through_git_is_refused(cli: Any, repo: Path) -> None:
    spec = _spec(repo / "clusters", lambda spec: spec.update(policies=["../.git/config"]))
    _refused_alike(cli, spec, repo, f"{spec}:{_line(spec, '.git/config')}: spec.policies[0]: ", "goes through .git")


def test_files_inside_the_repository_are_read(cli: Any, repo: Path) -> None:
    shared = repo / "shared"
    shared.mkdir()
    (shared / "rules.yaml").write_text(GOOD_RULES)
    spec = _spec(repo / "clusters", _quarantine(rules="../shared/rules.yaml"))
    result = cli("lint", str(spec))
    assert result.code == 0, result


def test_outside_a_repository_the_rules_file_must_still_parse(cli: Any, repo: Path, tmp_path: Path) -> None:
    folder = tmp_path / "loose"
    folder.mkdir()
    spec = _spec(folder, _quarantine(rules="../../../../../../../../etc/passwd"))
    _refused_alike(cli, spec, repo, "passwd")


def test_a_rules_file_that_does_not_parse_is_refused(cli: Any, repo: Path) -> None:
    shutil.copy(RULES / "broken.yaml", repo / "clusters" / "rules.yaml")
    spec = _spec(repo / "clusters", _quarantine(rules="rules.yaml"))
    _refused_alike(cli, spec, repo, f"{repo / 'clusters' / 'rules.yaml'}:6: ruleSets[0].match.all[0].expression: "
                                    "invalid CEL")


def test_what_rendering_refuses_is_refused(cli: Any, repo: Path) -> None:
    spec = _spec(repo / "clusters", lambda spec: spec["overrides"].update(set=["no-such-component:x=1"]))
    _refused_alike(cli, spec, repo, "no-such-component")


def test_lint_json_has_the_documented_shape(cli: Any, tmp_path: Path) -> None:
    for name in ("good", "policy", "bad"):
        (tmp_path / name).mkdir()
    good = _spec(tmp_path / "good")
    policy = _spec(tmp_path / "policy", lambda spec: (spec["sentinel"].update(mode="quarantine"),
                                                      spec["repo"].update(path="clusters/policy")))
    policy.write_text(policy.read_text().replace("name: h100-eks-ubuntu-inference-dynamo", "name: policy", 1))
    bad = tmp_path / "bad" / "x.yaml"
    bad.write_text(EXAMPLE.read_text().replace("    postChange: false", "    postChnage: false"))
    result = cli("lint", str(good), str(policy), str(bad), "--format", "json")
    assert result.code == 2 and result.err == ""
    data = json.loads(result.out)
    assert data["ok"] is False
    assert [(entry["file"], entry["ok"]) for entry in data["files"]] == [(str(good), True), (str(policy), False),
                                                                         (str(bad), False)]
    keys = ["file", "line", "message", "path", "policy"]
    assert data["files"][0]["errors"] == []
    assert data["files"][0]["warnings"] == []
    [finding] = data["files"][1]["errors"]
    assert sorted(finding) == keys
    assert finding["policy"] == "sentinel-monitor-unless-opted-in" and finding["path"] == "spec.sentinel.mode"
    assert finding["line"] == _line(policy, "mode: quarantine") and finding["file"] == str(policy)
    [error] = data["files"][2]["errors"]
    assert sorted(error) == keys and error["policy"] is None
    assert (error["file"], error["path"]) == (str(bad), "spec.certification.postChnage")
    assert error["line"] == _line(bad, "postChnage")
    assert "did you mean 'postChange'" in error["message"]
    only_policy = cli("lint", str(good), str(policy), "--format", "json")
    assert only_policy.code == 1


def test_verify_json_names_checksums_txt_the_line_and_the_file(cli: Any, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    assert cli("recipe", "--service", "kind", "--accelerator", "h100", "--intent", "inference", "-o",
               str(recipe)).code == 0
    out = tmp_path / "bundle"
    assert cli("bundle", "--recipe", str(recipe), "--deployer", "helm", "-o", str(out)).code == 0
    ok = cli("verify", str(out), "--format", "json")
    assert ok.code == 0 and json.loads(ok.out) == {"ok": True, "files": [
        {"file": str(out), "ok": True, "errors": [], "warnings": []}]}
    (out / "README.md").write_text("changed\n")
    (out / "extra.txt").write_text("x")
    result = cli("verify", str(out), str(tmp_path), "--format", "json")
    assert result.code == 2  # the second folder is no bundle
    data = json.loads(result.out)
    sums = out / "checksums.txt"
    changed, unlisted = data["files"][0]["errors"]
    assert changed == {"file": str(sums), "line": _line(sums, "  README.md"), "path": "README.md",
                       "message": "changed: its sha256 differs from checksums.txt", "policy": None}
    assert unlisted["path"] == "extra.txt" and unlisted["line"] is None and unlisted["message"].startswith("unlisted")
    [missing] = data["files"][1]["errors"]
    assert missing["file"] == str(tmp_path / "checksums.txt") and "not an aicr-gen bundle folder" in missing["message"]
    text = cli("verify", str(out))
    assert text.code == 1 and "changed: README.md" in text.err and "unlisted: extra.txt" in text.err


def test_specs_sharing_a_path_or_a_name_are_refused_naming_both(cli: Any, tmp_path: Path) -> None:
    def spec(name: str, cluster: str, path: str) -> Path:
        data = yaml.safe_load(EXAMPLE.read_text())
        data["metadata"]["name"] = cluster
        data["spec"]["repo"]["path"] = path
        target = tmp_path / f"{name}.yaml"
        target.write_text(yaml.safe_dump(data, sort_keys=False))
        return target

    first = spec("a", "one", "clusters/one")
    twin = spec("b", "two", "clusters/one")
    result = cli("lint", str(first), str(twin), "--format", "json")
    assert result.code == 1
    report = json.loads(result.out)
    assert [item["ok"] for item in report["files"]] == [True, False]
    (clash,) = report["files"][1]["errors"]
    assert (clash["path"], clash["line"]) == ("spec.repo.path", _line(twin, "path: clusters/one"))
    assert f"{first} and {twin} have the same managed path 'clusters/one'" in clash["message"]
    namesake = spec("c", "one", "clusters/elsewhere")
    result = cli("lint", str(first), str(namesake))
    assert result.code == 1
    assert (f"{namesake}:{_line(namesake, 'name: one')}:3: error [input] metadata.name: {first} and {namesake} have "
            "the same cluster name 'one'") in result.out, result
