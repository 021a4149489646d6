"""The retention's edge (``certify.retention.prune`` through ``edges.kube.client``) against a real API server:
Certifications of a CRD with a status subresource (statuses written through ``/status``, as NVCRE's controller
writes them) and NVCRE's finalizer, so a delete leaves the object with a ``deletionTimestamp`` until the finalizer
goes (no controller here: the test strips it, as NVCRE's would once the Workflows are gone).

The CRD is a minimal one of this file's own (group, kind, status subresource, conditions keyed by type), on a
control plane of its own, so that no other test's Certification CRD meets it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from aicr_gen.certify.retention import LIST_PATH, OBJECT_PATH, prune
from aicr_gen.edges.kube.client import Cluster, connect
from aicr_gen.errors import UnreachableError
from tests.cluster.envtest import ControlPlane, apply_json, binaries_or_skip, start
from tests.kubeapi import without_proxies

NAMESPACE, ELSEWHERE = "nvcre-system", "gpu-certify"
FINALIZER = "nvcre.nvidia.com/certification-finalizer"
D = "sha256:" + "d" * 64
E = "sha256:" + "e" * 64
OURS = {"app.kubernetes.io/managed-by": "aicr-gen"}
CONDITION = {"type": "object", "required": ["type", "status"],
             "properties": {key: {"type": "string"} for key in ("type", "status", "reason", "message",
                                                                "lastTransitionTime")}}
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "certifications.nvcre.nvidia.com"},
       "spec": {"group": "nvcre.nvidia.com", "scope": "Namespaced",
                "names": {"kind": "Certification", "listKind": "CertificationList", "plural": "certifications",
                          "singular": "certification"},
                "versions": [{"name": "v1alpha1", "served": True, "storage": True, "subresources": {"status": {}},
                              "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                  "spec": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                                  "status": {"type": "object", "properties": {"conditions": {
                                      "type": "array", "items": CONDITION, "x-kubernetes-list-type": "map",
                                      "x-kubernetes-list-map-keys": ["type"]}}}}}}}]}}
PASSED = [{"type": "Succeeded", "status": "True", "reason": "Succeeded", "message": "",
           "lastTransitionTime": "2026-12-02T10:00:00Z"}]
FAILED = [{"type": "Failed", "status": "True", "reason": "Failed", "message": "",
           "lastTransitionTime": "2026-12-02T10:00:00Z"}]


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    plane = start(tmp_path_factory.mktemp("retention"), binaries_or_skip())
    try:
        apply_json(plane, [CRD, *({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                                  for name in (NAMESPACE, ELSEWHERE))])
        plane.kubectl("wait", "--for=condition=Established", "--timeout=60s", f"crd/{CRD['metadata']['name']}")
        yield plane
    finally:
        plane.stop()


def create(cluster: Cluster, name: str, labels: dict[str, str], conditions: list[dict[str, str]] | None = None,
           digest: str = "", *, namespace: str = NAMESPACE) -> dict[str, Any]:
    """A Certification as a job creates it, then its status as the controller writes it (``/status``)."""
    meta: dict[str, Any] = {"name": name, "namespace": namespace, "labels": labels, "finalizers": [FINALIZER]}
    meta |= {"annotations": {"aicr-gen.dev/stack-digest": digest}} if digest else {}
    body = {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification", "metadata": meta,
            "spec": {"categories": [{"domain": "communication", "variant": "nccl-all-reduce"}]}}
    created = cluster.request("POST", LIST_PATH.replace("{namespace}", namespace), f"create {name}", body=body,
                              content_type="application/json")
    if conditions is not None:
        created = cluster.request("PATCH", f"{OBJECT_PATH}/status", f"status of {name}",
                                  params={"namespace": namespace, "name": name},
                                  body={"status": {"conditions": conditions}},
                                  content_type="application/merge-patch+json")
    return created


def listed(cluster: Cluster, namespace: str = NAMESPACE) -> dict[str, dict[str, Any]]:
    items = cluster.list_items(LIST_PATH.replace("{namespace}", namespace), "certifications")
    return {item["metadata"]["name"]: item["metadata"] for item in items}


def release(cluster: Cluster, names: list[str], namespace: str = NAMESPACE) -> None:
    """What NVCRE's controller does once a Certification's Workflows are gone: drop its finalizer."""
    for name in names:
        cluster.request("PATCH", OBJECT_PATH, f"release {name}", params={"namespace": namespace, "name": name},
                        body={"metadata": {"finalizers": None}}, content_type="application/merge-patch+json")


def test_prune_deletes_only_what_the_plan_says_and_waits_for_nobody(plane: ControlPlane) -> None:
    schedule, post_sync = {**OURS, "aicr-gen.dev/trigger": "schedule"}, {**OURS, "aicr-gen.dev/trigger": "post-sync",
                                                                        "aicr-gen.dev/pool": "h100"}
    with connect(str(plane.kubeconfig), "admin") as cluster:
        # created one after another: creation times never go back, and a tie is broken by these ascending names
        for name, conditions, digest in (("sched-1", PASSED, D), ("sched-2", PASSED, D), ("sched-3", FAILED, D),
                                         ("sched-4", PASSED, E), ("sched-5", None, E)):
            create(cluster, name, schedule, conditions, digest)
        for name in ("sync-1", "sync-2", "sync-3"):
            create(cluster, name, post_sync, PASSED, E)
        create(cluster, "gpu-certification", OURS, PASSED)  # the bundle's one-off, created by hand
        create(cluster, "theirs", {"team": "infra"}, PASSED)
        create(cluster, "elsewhere-1", schedule, PASSED, namespace=ELSEWHERE)
        create(cluster, "elsewhere-2", schedule, PASSED, namespace=ELSEWHERE)
        before = listed(cluster)

        dry = prune(cluster, NAMESPACE, 1, {D}, dry_run=True)
        assert [victim.name for victim in dry.victims] == ["sched-1", "sync-2", "sync-1"]
        assert listed(cluster) == before
        # only ours are listed (a label selector): the one-off and someone else's are not even read
        assert sorted(decision.name for decision in dry.decisions) == [
            *(f"sched-{n}" for n in range(1, 6)), *(f"sync-{n}" for n in range(1, 4))]
        reasons = {decision.name: decision.reason for decision in dry.decisions}
        assert reasons["sched-3"] == f"newest result of protected stack {D[:19]}"
        assert reasons["sched-2"] == f"newest passed of protected stack {D[:19]}"
        assert reasons["sched-5"].startswith("running")

        done = prune(cluster, NAMESPACE, 1, {D})
        assert done == dry
        after = listed(cluster)
        assert sorted(after) == sorted(before)  # the finalizer holds them: the deletes returned without waiting
        going = sorted(name for name, meta in after.items() if "deletionTimestamp" in meta)
        assert going == ["sched-1", "sync-1", "sync-2"]
        # Background propagation: no foregroundDeletion or orphan finalizer was added
        assert {tuple(after[name]["finalizers"]) for name in going} == {(FINALIZER,)}
        assert all(after[name] == before[name] for name in after if name not in going)

        again = prune(cluster, NAMESPACE, 1, {D})
        assert again.victims == ()
        assert sorted(decision.name for decision in again.decisions if decision.action == "going") == going

        release(cluster, going)
        assert sorted(listed(cluster)) == ["gpu-certification", "sched-2", "sched-3", "sched-4", "sched-5", "sync-3",
                                           "theirs"]
        assert sorted(listed(cluster, ELSEWHERE)) == ["elsewhere-1", "elsewhere-2"]  # one namespace at a time


def test_delete_of_one_object(plane: ControlPlane) -> None:
    path, params = OBJECT_PATH, {"namespace": ELSEWHERE, "name": "lone"}
    with connect(str(plane.kubeconfig), "admin") as cluster:
        assert cluster.delete(path, "Certification lone", params=params) is None  # already gone: nothing to do
        uid = create(cluster, "lone", OURS, PASSED, namespace=ELSEWHERE)["metadata"]["uid"]
        with pytest.raises(UnreachableError, match=r"HTTP 409 for Certification lone: .*[Pp]recondition"):
            cluster.delete(path, "Certification lone", params=params, uid="not-its-uid")
        answer = cluster.delete(path, "Certification lone", params=params, uid=uid)
        assert answer is not None and answer["metadata"]["deletionTimestamp"]
        release(cluster, ["lone"], ELSEWHERE)
        assert "lone" not in listed(cluster, ELSEWHERE)


def test_a_refused_delete_says_how_far_the_prune_got(plane: ControlPlane) -> None:
    """A user who may list but not delete (RBAC): one line, exit 3, naming the refusal and what was done."""
    namespace = "refused"
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
            "metadata": {"name": "list-certifications", "namespace": namespace},
            "rules": [{"apiGroups": ["nvcre.nvidia.com"], "resources": ["certifications"], "verbs": ["list"]}]}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
               "metadata": {"name": "nobody-lists", "namespace": namespace},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "list-certifications"},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "nobody"}]}
    apply_json(plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}, role, binding])
    labels = {**OURS, "aicr-gen.dev/trigger": "schedule"}
    with connect(str(plane.kubeconfig), "admin") as cluster:
        for name in ("a-old", "b-new"):  # in one second, most likely: the names order them
            create(cluster, name, labels, PASSED, namespace=namespace)
    with connect(str(plane.kubeconfig), "nobody") as nobody:
        with pytest.raises(UnreachableError) as refused:
            prune(nobody, namespace, 1)
        with pytest.raises(UnreachableError, match=r"forbidden \(403\) for Certification list of namespace other"):
            prune(nobody, "other", 1)
    message = str(refused.value)
    assert "\n" not in message and refused.value.exit_code == 3
    for fragment in ("forbidden (403) for Certification refused/a-old", 'cannot delete resource "certifications"',
                     "0 of the 1 Certifications to prune were deleted before"):
        assert fragment in message, message
