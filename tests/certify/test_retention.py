"""The retention rule of the Certifications our jobs create (``certify/retention.py``, pure): which of one
namespace's Certifications, as the API lists them, are deleted and why each is kept. The edge that lists and deletes
them runs against a real API server in tests/cluster/test_retention_real.py."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from aicr_gen.certify.retention import Plan, plan
from aicr_gen.errors import InvalidInputError

D = "sha256:" + "d" * 64  # a stack a wave still runs
E = "sha256:" + "e" * 64  # the stack after a bump
TERMINAL = {"passed": [("Succeeded", "True")], "failed": [("Failed", "True")],
            "violated": [("Succeeded", "True"), ("ValidationFailed", "True")],
            "running": [("InProgress", "True")], "new": [], "stopped": [("Succeeded", "False"), ("Failed", "False")]}


def cert(name: str, minute: int, state: str = "passed", *, trigger: str | None = "schedule", pool: str | None = None,
         digest: str | None = None, ours: bool = True, going: bool = False, second: int = 0) -> dict[str, Any]:
    """A Certification as the API lists it, created at 10:MINUTE:SECOND."""
    labels = {"app.kubernetes.io/managed-by": "aicr-gen"} if ours else {"app.kubernetes.io/managed-by": "someone"}
    labels |= {"aicr-gen.dev/trigger": trigger} if trigger else {}
    labels |= {"aicr-gen.dev/pool": pool} if pool else {}
    meta: dict[str, Any] = {"name": name, "namespace": "nvcre-system", "uid": f"uid-{name}", "labels": labels,
                            "creationTimestamp": f"2026-12-02T10:{minute:02d}:{second:02d}Z"}
    if digest:
        meta["annotations"] = {"aicr-gen.dev/stack-digest": digest}
    if going:
        meta["deletionTimestamp"] = "2026-12-02T11:00:00Z"
        meta["finalizers"] = ["nvcre.nvidia.com/certification-finalizer"]
    conditions = [{"type": kind, "status": status, "reason": kind, "message": "",
                   "lastTransitionTime": "2026-12-02T10:59:00Z"} for kind, status in TERMINAL[state]]
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": meta,
            "spec": {"categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]},
            **({"status": {"conditions": conditions}} if state != "new" else {})}


def deleted(found: Plan) -> list[str]:
    return sorted(victim.name for victim in found.victims)


def why(found: Plan) -> dict[str, tuple[str, str]]:
    return {decision.name: (decision.action, decision.reason) for decision in found.decisions}


CASES = {
    "the newest keep of one job": (
        [cert("a", 1), cert("b", 2), cert("c", 3, "failed"), cert("d", 4)], 2, set(), ["a", "b"]),
    "keep counts each job and each pool apart": (
        [cert("s1", 1), cert("s2", 2), cert("p1", 1, trigger="post-sync"), cert("p2", 3, trigger="post-sync"),
         cert("h1", 1, pool="h100"), cert("h2", 4, pool="h100"), cert("g1", 5, pool="gb200")], 1, set(),
        ["h1", "p1", "s1"]),
    "one second, two runs: the name breaks the tie": (
        [cert("run-b", 1), cert("run-a", 1), cert("run-c", 0, second=59)], 1, set(), ["run-a", "run-c"]),
    "a running one is never deleted, nor counted": (
        [cert("old", 1), cert("last", 2, "failed"), cert("now", 3, "running"), cert("queued", 4, "new"),
         cert("stopped", 5, "stopped")], 1, set(), ["old"]),
    "one being deleted is neither counted nor deleted again": (
        [cert("a", 1), cert("b", 2), cert("c", 3, going=True)], 1, set(), ["a"]),
    "foreign and hand-made ones are kept": (
        [cert("theirs", 1, ours=False), cert("by-hand", 2, trigger=None), cert("a", 3), cert("b", 4)], 1, set(),
        ["a"]),
    "a protected stack keeps its newest pass and its newest result": (
        [cert("d-pass-old", 1, digest=D), cert("d-pass", 2, digest=D), cert("d-fail", 3, "failed", digest=D),
         cert("d-violated", 4, "violated", digest=D), cert("e-1", 5, digest=E), cert("e-2", 6, digest=E)], 1, {D},
        ["d-fail", "d-pass-old", "e-1"]),
    "unprotected stacks keep nothing beyond keep": (
        [cert("d-pass", 2, digest=D), cert("d-fail", 3, "failed", digest=D), cert("e-1", 5, digest=E)], 1, {E},
        ["d-fail", "d-pass"]),
    "protection is per pool": (
        [cert("h-d", 1, pool="h100", digest=D), cert("g-d", 1, pool="gb200", digest=D),
         cert("h-e", 2, pool="h100", digest=E), cert("g-e", 2, pool="gb200", digest=E)], 1, {D}, []),
    "protection spans the jobs of a pool": (
        [cert("sched-d", 1, digest=D), cert("sync-d", 2, trigger="post-sync", digest=D),
         cert("sched-e", 3, digest=E), cert("sync-e", 4, trigger="post-sync", digest=E)], 1, {D}, ["sched-d"]),
    "when a protected one is already going, the one before stands in": (
        [cert("d-old", 1, digest=D), cert("d-new", 2, digest=D, going=True), cert("e", 3, digest=E)], 1, {D}, []),
}


@pytest.mark.parametrize(("items", "keep", "protected", "victims"), list(CASES.values()), ids=list(CASES))
def test_what_is_deleted(items: list[dict[str, Any]], keep: int, protected: set[str], victims: list[str]) -> None:
    found = plan(items, keep, protected)
    assert deleted(found) == victims
    assert sorted(decision.name for decision in found.decisions) == sorted(item["metadata"]["name"] for item in items)
    assert deleted(plan(reversed(items), keep, protected)) == victims  # the order of the list does not matter


def test_each_decision_says_why() -> None:
    found = plan(CASES["a running one is never deleted, nor counted"][0] + [cert("going", 6, going=True),
                                                                           cert("theirs", 0, ours=False)], 1)
    assert why(found) == {
        "going": ("going", "already being deleted"),
        "stopped": ("keep", "running (no Succeeded or Failed condition True yet)"),
        "queued": ("keep", "running (no Succeeded or Failed condition True yet)"),
        "now": ("keep", "running (no Succeeded or Failed condition True yet)"),
        "last": ("keep", "newest finished #1 of its job (keeps 1)"),
        "old": ("delete", "older than the 1 newest finished of its job"),
        "theirs": ("keep", "not made by an aicr-gen job")}
    assert [decision.name for decision in found.decisions] == ["going", "stopped", "queued", "now", "last", "old",
                                                               "theirs"]  # ours newest first, then others
    protected = plan(CASES["a protected stack keeps its newest pass and its newest result"][0], 1, {D})
    assert why(protected)["d-pass"] == ("keep", f"newest passed of protected stack {D[:19]}")
    assert why(protected)["d-violated"] == ("keep", f"newest result of protected stack {D[:19]}")
    (victim,) = plan([cert("a", 1, pool="h100", trigger="post-sync", digest=E), cert("b", 2, pool="h100",
                                                                                    trigger="post-sync")], 1).victims
    assert (victim.name, victim.uid, victim.pool, victim.trigger, victim.digest, victim.state, victim.created) == (
        "a", "uid-a", "h100", "post-sync", E, "passed", "2026-12-02T10:01:00Z")


def test_the_plan_is_frozen() -> None:
    found = plan([cert("a", 1), cert("b", 2)], 1, {D})
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.keep = 2  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        found.decisions[0].action = "delete"  # type: ignore[misc]
    assert found.protected == frozenset({D}) and isinstance(found.decisions, tuple)


@pytest.mark.parametrize(("items", "keep", "fragment"), [
    ([cert("a", 1)], 0, "at least 1 Certification of each job, not 0"),
    ([{**cert("a", 1), "metadata": {**cert("a", 1)["metadata"], "creationTimestamp": "yesterday"}}], 1,
     "Certification nvcre-system/a: metadata.creationTimestamp 'yesterday' is not an RFC 3339 time"),
    ([{**cert("a", 1), "metadata": {**cert("a", 1)["metadata"], "name": None}}], 1, "has no metadata.name"),
])
def test_what_cannot_be_planned(items: list[dict[str, Any]], keep: int, fragment: str) -> None:
    with pytest.raises(InvalidInputError, match=fragment):
        plan(items, keep)


def test_foreign_objects_need_nothing_we_read() -> None:
    """Someone else's object may lack what ours always have: it is kept, never read further."""
    found = plan([{"metadata": {"name": "x", "labels": {"app": "other"}}}, {"metadata": None}, cert("a", 1)], 1)
    assert deleted(found) == [] and [decision.action for decision in found.decisions] == ["keep"] * 3


def test_namespaces_never_share_a_group() -> None:
    def elsewhere(item: dict[str, Any]) -> dict[str, Any]:
        return {**item, "metadata": {**item["metadata"], "namespace": "gpu-certify"}}

    found = plan([cert("a", 1), cert("b", 2), elsewhere(cert("a", 3)), elsewhere(cert("b", 4))], 1, {D})
    assert [(victim.namespace, victim.name) for victim in found.victims] == [("gpu-certify", "a"),
                                                                             ("nvcre-system", "a")]
