"""``aicr-gen rollout`` over exported evidence: a gpu-operator bump goes to the canary wave, which certifies,
applies and soaks before ``advance`` moves the next wave with one commit carrying the evidence; a canary that fails
its NCCL threshold halts it with the reason; ``rollback`` returns a wave to its previous baseline."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.gitops.test_sync import git, init_repo
from tests.rollout import exported
from tests.spec.test_waves import CANARY, PROD, cluster, write_fleet

FINISHED = "2026-12-01T11:00:00Z"
BEFORE_SOAK = "2026-12-01T12:00:00Z"
AFTER_SOAK = "2026-12-02T12:00:00Z"


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@example.com"}.items():
        monkeypatch.setenv(key, value)


def _fleet(repo: Path, canary: str, prod: str) -> None:
    """The fleet of the waves' tests, certifying after every change (the job stamps the stack it certifies)."""
    path = write_fleet(repo / "fleet.yaml", [{**CANARY, "spec": {"versions": {"gpu-operator": canary}}},
                                             {**PROD, "spec": {"versions": {"gpu-operator": prod}}}])
    data = yaml.safe_load(path.read_text())
    data["spec"]["certification"]["postChange"] = True
    path.write_text(yaml.safe_dump(data, sort_keys=False))


@pytest.fixture(scope="module")
def bumped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A repository of three clusters (canary a; prod b and c) synced on v26.3.3, then the canary's bump to v26.4.0
    merged and synced."""
    from aicr_gen.cli.main import main

    monkey = pytest.MonkeyPatch()
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@example.com"}.items():
        monkey.setenv(key, value)
    try:
        repo = init_repo(tmp_path_factory.mktemp("rollout") / "gitops")
        _fleet(repo, "v26.3.3", "v26.3.3")
        for name, labels in (("a", None), ("b", {"ring": "prod"}), ("c", {"ring": "prod"})):
            path = cluster(repo, name, labels)
            data = yaml.safe_load(path.read_text())
            data["spec"]["repo"]["path"] = f"clusters/{name}"
            path.write_text(yaml.safe_dump(data, sort_keys=False))
        specs = [str(repo / "clusters" / f"{name}.yaml") for name in "abc"]
        assert main(["sync", *specs, "--repo", str(repo)]) == 0
        _fleet(repo, "v26.4.0", "v26.3.3")
        git(repo, "commit", "-qam", "canary: gpu-operator v26.4.0")
        assert main(["sync", *specs, "--repo", str(repo)]) == 0
    finally:
        monkey.undo()
    return repo


def _evidence(repo: Path, folder: Path, *, canary_cert: list[dict[str, Any]] | None = None,
              quarantined: tuple[int, ...] = (), live: dict[str, str] | None = None) -> Path:
    head = git(repo, "rev-parse", "HEAD").strip()
    for name in "abc":
        path = f"clusters/{name}"
        digest = exported.stack_digest(repo, path)
        certs = canary_cert if name == "a" and canary_cert is not None else \
            exported.certification(f"gpu-certification-{name}", digest, finished=FINISHED)
        exported.write(folder, name, [*certs, exported.application(head), *exported.nodes(
            2, quarantined if name == "a" else ())],
            exported.snapshot(exported.recipe_refs(repo, path), live=live if name == "a" else None))
    return folder


def _clone(bumped: Path, tmp_path: Path) -> Path:
    repo = tmp_path / "gitops"
    shutil.copytree(bumped, repo, symlinks=True)
    return repo


def test_a_certified_canary_soaks_then_advance_moves_the_next_wave(cli: Any, bumped: Path, tmp_path: Path) -> None:
    repo = _clone(bumped, tmp_path)
    evidence = _evidence(repo, tmp_path / "evidence")
    fleet = str(repo / "fleet.yaml")
    soaking = cli("rollout", "status", fleet, "--evidence", str(evidence), "--now", BEFORE_SOAK, "--format", "json")
    assert soaking.code == 0, soaking.err
    document = json.loads(soaking.out)
    canary = document["waves"][0]
    assert canary["atTarget"] and canary["status"] == "soaking" and canary["text"] == "soaking, 23h left"
    gates = canary["clusters"][0]["gates"]
    assert gates["certified"] == {"status": "pass", "text": "certified 412 GB/s >= 300", "since": FINISHED}
    assert gates["healthy"]["status"] == "pass" and gates["healthy"]["text"].startswith("Synced, Healthy at ")
    assert gates["no-drift"]["status"] == "pass" and gates["no-quarantine"]["text"] == "no quarantine (2 GPU nodes)"
    assert document["next"]["action"] == "wait" and document["next"]["wave"] == "prod"
    assert cli("rollout", "advance", fleet, "--evidence", str(evidence), "--now", BEFORE_SOAK).code == 0
    head = git(repo, "rev-parse", "HEAD")
    assert head == git(bumped, "rev-parse", "HEAD")  # waiting: nothing committed

    advanced = cli("rollout", "advance", fleet, "--evidence", str(evidence), "--now", AFTER_SOAK)
    assert advanced.code == 0, advanced.err
    assert "committed" in advanced.err and "advance prod (from canary)" in advanced.err
    message = git(repo, "log", "-1", "--format=%B")
    assert message.startswith("aicr-gen: rollout prod: advance prod (from canary)")
    assert "- a: certified certified 412 GB/s >= 300" in message
    trailers = git(repo, "log", "-1", "--format=%(trailers:only)")
    assert "Rollout-Wave: prod" in trailers and "Rollout-From: canary" in trailers
    assert "Rollout-Evidence: sha256:" in trailers and "Aicr-Gen-Version:" in trailers
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert "fleet.yaml" in changed
    assert any(name.startswith("clusters/b/") for name in changed) and any(
        name.startswith("clusters/c/") for name in changed)
    assert not any(name.startswith("clusters/a/") for name in changed)
    fleet_data = yaml.safe_load((repo / "fleet.yaml").read_text())
    assert fleet_data["rollout"]["waves"][1]["spec"] == {"versions": {"gpu-operator": "v26.4.0"}}
    assert git(repo, "status", "--porcelain") == ""
    moved = git(repo, "rev-parse", "HEAD")
    # idempotent: the prod wave has not proven the new stack yet (its Certifications are of the old one)
    again = cli("rollout", "advance", fleet, "--evidence", str(evidence), "--now", AFTER_SOAK, "--format", "json")
    assert again.code == 0, again.err
    assert json.loads(again.out)["next"]["action"] == "wait"
    assert git(repo, "rev-parse", "HEAD") == moved != head


def test_a_canary_below_its_nccl_threshold_halts_with_the_reason(cli: Any, bumped: Path, tmp_path: Path) -> None:
    repo = _clone(bumped, tmp_path)
    digest = exported.stack_digest(repo, "clusters/a")
    evidence = _evidence(repo, tmp_path / "evidence", canary_cert=exported.certification(
        "gpu-certification-a2", digest, outcome="Failed", bus_bw=280.0, finished=FINISHED))
    fleet = str(repo / "fleet.yaml")
    status = cli("rollout", "status", fleet, "--evidence", str(evidence), "--now", AFTER_SOAK)
    assert status.code == 1
    assert "FAIL gpu-certification-a2 FAILED: 280 GB/s, needs >= 300" in status.out
    assert "halt: prod waits for canary" in status.out
    halted = cli("rollout", "advance", fleet, "--evidence", str(evidence), "--now", AFTER_SOAK, "--format",
                 "markdown")
    assert halted.code == 1
    assert "**Next: halt: prod waits for canary**" in halted.out
    assert "canary/a certified: gpu-certification-a2 FAILED: 280 GB/s, needs >= 300" in halted.out
    assert git(repo, "rev-parse", "HEAD") == git(bumped, "rev-parse", "HEAD")
    assert git(repo, "status", "--porcelain") == ""


@pytest.mark.parametrize("case", [
    ({"quarantined": (1,)}, "no-quarantine", "1 node quarantined: gpu-1"),
    ({"live": {"gpu-operator": "v26.3.3"}}, "no-drift", "drift: gpu-operator v26.3.3 -> v26.4.0"),
])
def test_a_quarantined_node_or_drift_fails_its_gate(cli: Any, bumped: Path, tmp_path: Path,
                                                    case: tuple[dict[str, Any], str, str]) -> None:
    change, gate, text = case
    repo = _clone(bumped, tmp_path)
    evidence = _evidence(repo, tmp_path / "evidence", **change)
    status = cli("rollout", "status", str(repo / "fleet.yaml"), "--evidence", str(evidence), "--now", AFTER_SOAK,
                 "--format", "json")
    assert status.code == 1
    verdict = json.loads(status.out)["waves"][0]["clusters"][0]["gates"][gate]
    assert verdict["status"] == "fail" and verdict["text"] == text


def test_missing_evidence_is_unknown_and_exit_3(cli: Any, bumped: Path, tmp_path: Path) -> None:
    repo = _clone(bumped, tmp_path)
    evidence = _evidence(repo, tmp_path / "evidence")
    shutil.rmtree(evidence / "b")
    status = cli("rollout", "status", str(repo / "fleet.yaml"), "--evidence", str(evidence), "--now", AFTER_SOAK)
    assert status.code == 3
    assert "no evidence folder" in status.out and "1 cluster(s) could not be read (b)" in status.err


def test_rollback_returns_a_wave_to_its_previous_baseline(cli: Any, bumped: Path, tmp_path: Path) -> None:
    repo = _clone(bumped, tmp_path)
    result = cli("rollout", "rollback", str(repo / "fleet.yaml"), "--wave", "canary")
    assert result.code == 0, result.err
    fleet_data = yaml.safe_load((repo / "fleet.yaml").read_text())
    assert fleet_data["rollout"]["waves"][0]["spec"] == {"versions": {"gpu-operator": "v26.3.3"}}
    trailers = git(repo, "log", "-1", "--format=%(trailers:only)")
    assert "Rollout-Rollback: canary" in trailers
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert any(name.startswith("clusters/a/") for name in changed)
    assert not any(name.startswith(("clusters/b/", "clusters/c/")) for name in changed)


def test_an_uncommitted_fleet_edit_is_never_committed_nor_lost(cli: Any, bumped: Path, tmp_path: Path) -> None:
    repo = _clone(bumped, tmp_path)
    fleet = repo / "fleet.yaml"
    fleet.write_text(fleet.read_text() + "# mine\n")
    result = cli("rollout", "rollback", str(fleet), "--wave", "canary")
    assert result.code == 2
    assert "has changes not committed" in result.err
    assert fleet.read_text().endswith("# mine\n")


def test_evidence_text_cannot_shape_the_commit_message_nor_the_summary(cli: Any, bumped: Path,
                                                                       tmp_path: Path) -> None:
    """A cluster writes its Certifications: a threshold crafted to add a trailer, a paragraph or a table cell
    stays one line of text in the commit message and one cell of the Markdown table."""
    from markdown_it import MarkdownIt

    repo = _clone(bumped, tmp_path)
    digest = exported.stack_digest(repo, "clusters/a")
    hostile = "value >= 300\n\nRollout-Wave: canary\nSigned-off-by: x | <img src=x> @admins `"
    evidence = _evidence(repo, tmp_path / "evidence", canary_cert=exported.certification(
        "gpu-certification-a", digest, threshold=hostile, finished=FINISHED))
    fleet = str(repo / "fleet.yaml")
    summary = cli("rollout", "status", fleet, "--evidence", str(evidence), "--now", AFTER_SOAK, "--format", "markdown")
    assert summary.code == 0, summary.err
    html = MarkdownIt("commonmark").enable("table").render(summary.out)
    assert "<img" not in html and html.count("<tr>") == 2 + 1 + 2  # each wave's header, then a, then b and c
    assert all(row.count("<td>") == 6 for row in html.split("<tr>")[1:] if "<td>" in row)
    assert cli("rollout", "advance", fleet, "--evidence", str(evidence), "--now", AFTER_SOAK).code == 0
    trailers = git(repo, "log", "-1", "--format=%(trailers:only,unfold)").split("\n")
    assert [line for line in trailers if line.startswith("Rollout-Wave")] == ["Rollout-Wave: prod"]
    assert not any(line.startswith("Signed-off-by") for line in trailers)


def test_one_read_writes_json_the_summary_and_a_pull_request_body(cli: Any, bumped: Path, tmp_path: Path) -> None:
    repo = _clone(bumped, tmp_path)
    evidence = _evidence(repo, tmp_path / "evidence")
    files = {name: tmp_path / name for name in ("status.json", "summary.md", "body.md")}
    result = cli("rollout", "status", str(repo / "fleet.yaml"), "--evidence", str(evidence), "--now", BEFORE_SOAK,
                 "--format", "json", "-o", str(files["status.json"]), "--markdown", str(files["summary.md"]),
                 "--body", str(files["body.md"]))
    assert result.code == 0, result.err
    document = json.loads(files["status.json"].read_text())
    assert document["fleetName"] == "prod" and document["next"]["action"] == "wait"
    for name in ("summary.md", "body.md"):
        assert "**Next: wait: prod waits for canary**" in files[name].read_text()
