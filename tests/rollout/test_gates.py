"""The gates' rules, pure: each verdict from evidence as the controllers leave it (tests/rollout/exported.py), the
wave's soak and the next step."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from aicr_gen.rollout import gates
from aicr_gen.rollout.evidence import evidence
from aicr_gen.yaml import Document
from tests.rollout import exported

STACK = "sha256:" + "ab" * 32
OTHER = "sha256:" + "cd" * 32
HEAD = "1" * 40


def expected(name: str = "a", wave: str = "canary", *, deployer: str = "argocd", pools: tuple[str, ...] = ("",),
             stack: str = STACK) -> gates.Expected:
    return gates.Expected(name, f"clusters/{name}.yaml", wave, f"clusters/{name}", deployer, stack, pools,
                          ("nvidia-stack",) if deployer == "argocd" else ("aicr-stack",))


def read(*objects: dict[str, Any]) -> Any:
    return evidence([Document("evidence", {"kind": "List", "items": list(objects)}, {})])


def flux(revision: str, *, ready: str = "True", stalled: bool = False, generation: int = 2,
         observed: int = 2) -> dict[str, Any]:
    conditions = [{"type": "Ready", "status": ready, "reason": "ReconciliationSucceeded" if ready == "True" else
                   "ProgressingWithRetry", "message": "applied", "lastTransitionTime": "2026-12-01T09:00:00Z"}]
    if stalled:
        conditions.append({"type": "Stalled", "status": "True", "reason": "BuildFailed", "message": "kustomize build"})
    return {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": "aicr-stack", "namespace": "flux-system", "generation": generation},
            "status": {"observedGeneration": observed, "lastAppliedRevision": f"main@sha1:{revision}",
                       "conditions": conditions}}


@pytest.mark.parametrize(("runs", "status", "text"), [
    ([], "wait", f"no Certification of stack {STACK[:19]} yet"),
    ([exported.certification("c1", OTHER)], "wait", f"no Certification of stack {STACK[:19]} yet"),
    ([exported.certification("c1", STACK, outcome="InProgress", bus_bw=None)], "wait", "certifying (c1 running)"),
    ([exported.certification("c1", STACK)], "pass", "certified 412 GB/s >= 300"),
    ([exported.certification("c1", STACK, bus_bw=None)], "pass", "certified (c1)"),
    ([exported.certification("c1", STACK, outcome="Failed", bus_bw=250.0)], "fail",
     "c1 FAILED: 250 GB/s, needs >= 300"),
    # the newest finished run decides; a newer one still running does not hide it
    ([exported.certification("c1", STACK, outcome="Failed", bus_bw=250.0, created="2026-12-01T08:00:00Z"),
      exported.certification("c2", STACK, created="2026-12-01T09:00:00Z"),
      exported.certification("c3", STACK, outcome="InProgress", bus_bw=None, created="2026-12-01T10:00:00Z")],
     "pass", "certified 412 GB/s >= 300"),
])
def test_certified_is_the_newest_finished_run_of_the_trees_stack(runs: list[list[dict[str, Any]]], status: str,
                                                                 text: str) -> None:
    verdict = gates.certified(expected(), read(*(item for run in runs for item in run)))
    assert (verdict.status, verdict.text) == (status, text)


def test_every_pool_of_the_tree_must_certify() -> None:
    found = read(*exported.certification("c1", STACK), *exported.certification("c2", STACK, pool="gb200"))
    both = gates.certified(expected(pools=("", "gb200", "h100")), found)
    assert both == gates.Verdict("wait", f"pool h100: no Certification of stack {STACK[:19]} yet")
    assert gates.certified(expected(pools=("", "gb200")), found).text == \
        "certified 412 GB/s >= 300; pool gb200: certified 412 GB/s >= 300"


def test_a_tree_without_a_stamped_certification_job_cannot_pass() -> None:
    assert gates.certified(expected(pools=()), read()).status == "fail"
    assert "postChange: true" in gates.certified(expected(stack=""), read()).text


@pytest.mark.parametrize(("deployed", "trees", "status", "text"), [
    ([], {}, "wait", "no Application nvidia-stack yet"),
    ([exported.application(HEAD)], {HEAD: True}, "pass", f"Synced, Healthy at {HEAD[:12]}"),
    ([exported.application(HEAD)], {HEAD: False}, "wait", f"Application nvidia-stack at {HEAD[:12]}, not yet at this "
                                                           "tree"),
    ([exported.application(HEAD)], {HEAD: None}, "wait", f"Application nvidia-stack at {HEAD[:12]}, which this "
                                                          "repository lacks (git fetch)"),
    ([exported.application(HEAD, health="Progressing")], {HEAD: True}, "wait",
     f"Application nvidia-stack at {HEAD[:12]}: Synced, Progressing"),
    ([exported.application(HEAD, health="Degraded")], {HEAD: True}, "fail",
     f"Application nvidia-stack at {HEAD[:12]}: Degraded"),
    ([exported.application(HEAD, name="a-nvidia-stack")], {HEAD: True}, "wait", "no Application nvidia-stack yet"),
])
def test_healthy_argocd(deployed: list[dict[str, Any]], trees: dict[str, bool | None], status: str,
                        text: str) -> None:
    verdict = gates.healthy(expected(), read(*deployed), trees)
    assert (verdict.status, verdict.text) == (status, text)


@pytest.mark.parametrize(("kustomization", "status", "text"), [
    (flux(HEAD), "pass", f"Ready at {HEAD[:12]}"),
    (flux(HEAD, ready="False"), "wait", f"Kustomization aicr-stack at {HEAD[:12]}: not Ready (ProgressingWithRetry): "
                                        "applied"),
    (flux(HEAD, observed=1), "wait", f"Kustomization aicr-stack at {HEAD[:12]}: reconciling"),  # status is stale
    (flux(HEAD, ready="False", stalled=True), "fail", f"Kustomization aicr-stack at {HEAD[:12]}: Stalled: kustomize "
                                                      "build"),
])
def test_healthy_flux(kustomization: dict[str, Any], status: str, text: str) -> None:
    verdict = gates.healthy(expected(deployer="flux"), read(kustomization), {HEAD: True})
    assert (verdict.status, verdict.text) == (status, text)
    if status == "pass":
        assert verdict.since == "2026-12-01T09:00:00Z"


def test_helm_has_no_deployer_status() -> None:
    assert gates.healthy(expected(deployer="helm"), read(), {}).status == "fail"


def _row(status: str = "drifted") -> dict[str, Any]:
    cell = {"component": "gpu-operator", "status": status, "desired": {"version": "v26.4.0"},
            "live": {"version": "v26.3.3"}}
    return {"status": "drifted" if status != "ok" else "ok", "error": None, "components": [cell]}


@pytest.mark.parametrize(("row", "applied", "snapshot", "status", "suffix"), [
    (_row("ok"), gates.Verdict("pass", "", "2026-12-01T09:00:00Z"), "2026-12-01T10:00:00Z", "pass", ""),
    (_row(), gates.Verdict("pass", "", "2026-12-01T09:00:00Z"), "2026-12-01T10:00:00Z", "fail", ""),
    (_row(), gates.Verdict("wait", ""), "2026-12-01T10:00:00Z", "wait", "; the change is still arriving"),
    (_row(), gates.Verdict("pass", "", "2026-12-01T11:00:00Z"), "2026-12-01T10:00:00Z", "wait",
     "; snapshot 2026-12-01T10:00:00Z is older than the apply"),
    (None, gates.Verdict("pass", ""), "", "unknown", ""),
])
def test_drift_fails_only_once_the_change_has_arrived(row: dict[str, Any] | None, applied: gates.Verdict,
                                                      snapshot: str, status: str, suffix: str) -> None:
    verdict = gates.no_drift(row, applied, snapshot)
    assert verdict.status == status
    if status in ("fail", "wait"):
        assert verdict.text == f"drift: gpu-operator v26.3.3 -> v26.4.0{suffix}"


def test_quarantine_and_the_breaker() -> None:
    breaker = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "circuit-breaker"},
               "data": {"status": "TRIPPED"}}
    assert gates.no_quarantine(read(*exported.nodes(3))).text == "no quarantine (3 GPU nodes)"
    assert gates.no_quarantine(read(*exported.nodes(3, (0, 2)))).text == "2 nodes quarantined: gpu-0, gpu-2"
    assert gates.no_quarantine(read(*exported.nodes(3), breaker)) == \
        gates.Verdict("fail", "NVSentinel circuit breaker TRIPPED")
    assert gates.no_quarantine(read()).status == "unknown"
    cpu = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu", "annotations": {
        "quarantineHealthEvent": "[]"}}}
    assert gates.no_quarantine(read(*exported.nodes(1), cpu)).text == "no quarantine (1 GPU node)"


def _observed(certified_at: str, applied_at: str) -> gates.Observed:
    found = read(*exported.certification("c", STACK, created=applied_at, finished=certified_at),
                 exported.application(HEAD, finished=applied_at), *exported.nodes(1))
    return gates.Observed(found, "", {HEAD: True}, _row("ok"), "2026-12-01T12:00:00Z")


WAVES = [{"name": "canary", "soak": "24h", "spec": {"versions": {"gpu-operator": "v26.4.0"}}},
         {"name": "prod", "soak": "0s", "spec": {"versions": {"gpu-operator": "v26.3.3"}}}]


def _status(now: str, members: list[tuple[gates.Expected, gates.Observed]],
            waves: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    from aicr_gen.cel.durations import seconds

    moment = gates.when(now)
    assert moment is not None
    return gates.status("fleet.yaml", waves or WAVES, members, moment,
                        lambda wave: seconds(str(wave.get("soak", "0s"))) or 0.0)


def test_a_wave_soaks_from_its_latest_proof_then_the_next_wave_advances() -> None:
    members = [(expected("a"), _observed("2026-12-01T11:00:00Z", "2026-12-01T09:00:00Z")),
               (expected("b"), _observed("2026-12-01T14:00:00Z", "2026-12-01T13:30:00Z")),
               (expected("p", "prod"), _observed("2026-12-01T10:00:00Z", "2026-12-01T09:00:00Z"))]
    soaking = _status("2026-12-02T10:00:00Z", members)
    assert soaking["waves"][0]["text"] == "soaking, 4h left"  # from b's certification at 14:00
    assert soaking["next"] == {"action": "wait", "wave": "prod", "from": "canary",
                               "reasons": ["canary: soaking, 4h left"]}
    done = _status("2026-12-02T14:00:00Z", members)
    assert done["waves"][0]["text"] == "passed, soaked 1d"
    assert done["waves"][1]["text"] == "passed (on the previous baseline)"
    assert done["next"]["action"] == "advance"
    assert gates.evidence_digest(done) == gates.evidence_digest(_status("2026-12-03T00:00:00Z", members))


def test_a_failure_in_any_wave_at_the_target_halts_and_unknown_halts_too() -> None:
    good = _observed("2026-12-01T11:00:00Z", "2026-12-01T09:00:00Z")
    waves = [WAVES[0], {**WAVES[0], "name": "ring1"}, WAVES[1]]
    bad = gates.Observed(read(*exported.certification("c", STACK, outcome="Failed", bus_bw=1.0),
                              exported.application(HEAD), *exported.nodes(1)), "", {HEAD: True}, _row("ok"))
    halted = _status("2026-12-09T00:00:00Z", [(expected("a"), bad), (expected("r", "ring1"), good),
                                              (expected("p", "prod"), good)], waves)
    assert halted["next"]["action"] == "halt" and halted["next"]["wave"] == "prod"
    assert halted["next"]["reasons"] == ["canary/a certified: c FAILED: 1 GB/s, needs >= 300"]
    gone = gates.Observed(None, "no evidence folder E/a")
    unknown = _status("2026-12-09T00:00:00Z", [(expected("a"), gone), (expected("p", "prod"), good)])
    assert unknown["next"]["action"] == "halt"
    assert unknown["waves"][0]["clusters"][0]["gates"]["certified"]["text"] == "no evidence folder E/a"


def test_complete_only_when_the_last_wave_proved_the_baseline() -> None:
    good = _observed("2026-12-01T11:00:00Z", "2026-12-01T09:00:00Z")
    waves = [WAVES[0], {**WAVES[1], "spec": WAVES[0]["spec"]}]
    waiting = gates.Observed(read(exported.application(HEAD), *exported.nodes(1)), "", {HEAD: True}, _row("ok"))
    assert _status("2026-12-09T00:00:00Z", [(expected("a"), good), (expected("p", "prod"), waiting)],
                   waves)["next"]["action"] == "wait"
    assert _status("2026-12-09T00:00:00Z", [(expected("a"), good), (expected("p", "prod"), good)],
                   waves)["next"] == {"action": "complete", "wave": None, "from": None, "reasons": []}


@pytest.mark.parametrize(("seconds", "text"), [(0.2, "1s"), (59, "59s"), (60, "1m"), (3600, "1h"), (5400, "1h30m"),
                                               (86400, "1d"), (90000, "1d1h")])
def test_span(seconds: float, text: str) -> None:
    assert gates.span(seconds) == text


def test_now_is_an_aware_time() -> None:
    assert gates.when("2026-12-01T10:00:00Z") == datetime(2026, 12, 1, 10, tzinfo=UTC)
    assert gates.when("yesterday") is None


def test_a_certification_created_before_the_apply_certified_the_old_stack() -> None:
    early = exported.certification("early", STACK, created="2026-12-01T08:00:00Z", finished="2026-12-01T08:30:00Z")
    found = read(*early, exported.application(HEAD, finished="2026-12-01T09:00:00Z"))
    assert gates.certified(expected(), found).status == "pass"
    assert gates.certified(expected(), found, "2026-12-01T09:00:00Z").status == "wait"
    verdicts = gates.cluster_verdicts(expected(), gates.Observed(found, "", {HEAD: True}), ["certified", "healthy"])
    assert verdicts["certified"].text == f"no Certification of stack {STACK[:19]} yet"


def test_only_certifications_our_jobs_made_count() -> None:
    foreign = exported.certification("theirs", STACK)
    foreign[0]["metadata"]["labels"] = {"team": "ml"}
    foreign[0]["spec"] = "not a spec"  # nor is anybody else's read: it cannot fail the read either
    assert gates.certified(expected(), read(*foreign)).status == "wait"
