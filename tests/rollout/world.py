"""A cluster's rollout evidence on a real API server, written the way the controllers that own it write it.

What the rollout gates read (``/work/notes/rollout-contract.md``, issue 28): NVCRE Certifications with the
Workflow and BandwidthMeasurement behind each, the Argo CD Application or Flux Kustomization of the stack, GPU
Nodes as NVSentinel marks them, and NVSentinel's circuit breaker. Each writer puts one piece on an envtest
control plane (``tests/cluster/envtest.py``) through ``tests.cluster.converge.Api``; ``export`` writes them back
out as ``kubectl get -o yaml`` would, for the exported-evidence mode.

Rules the writers keep, because a reader must cope with exactly what a cluster holds:

- Status goes where its controller puts it. NVCRE's three kinds and Flux's Kustomization have a status
  subresource, which drops a ``status`` sent with the object: NVCRE replaces it with a PUT of the whole object
  on ``/status`` (controller-runtime's ``Status().Update``), kustomize-controller with a merge patch of
  ``/status`` (so ``lastAppliedRevision`` keeps the last good revision when a newer one fails). Argo CD's
  Application CRD has no subresource: the application controller writes status with the object.
- Objects are created by server-side apply under the field manager of whoever creates them (the certification
  job, NVCRE, kubelet, NVSentinel's fault-quarantine, Argo CD, Flux): calling a writer again re-applies, and a
  mark the new call leaves out is removed (a node released from quarantine loses its annotation, label and
  cordon, unless another manager still holds them).
- Times are given by the test as RFC 3339 UTC text (``finished_at``, ``at``), never read from the clock, so
  soaks can be tested; only ``metadata.creationTimestamp`` is the API server's own.
- The Certification is the one aicr-gen's jobs create (``aicr_gen.certify.nvcre.certification``: the catalog's
  category, the default GPU selector, global thresholds), with their labels and stack-digest annotation; the
  threshold verdict text is aicr-gen's mirror of NVCRE's (``aicr_gen.certify.thresholds.evaluate``).
"""

from __future__ import annotations

import datetime
import json
import time
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import yaml

from aicr_gen.certify.cron import FLUX_SOURCE, STACK, STACK_DIGEST, TRIGGER_LABEL
from aicr_gen.certify.nvcre import API_VERSION, CATALOG, POOL_LABEL, target
from aicr_gen.certify.nvcre import certification as certification_object
from aicr_gen.certify.thresholds import compile_thresholds, evaluate
from aicr_gen.gitops.trees.render_tree import DEFAULT_SELECTOR
from aicr_gen.render.options import default_app_name
from tests.cluster.converge import ARGOCD_MANAGER, FLUX_MANAGER, Api

ARGOCD_ROOT = default_app_name("argocd")
"""The root Application of a cluster's argocd tree (AICR's name, ``nvidia-stack``)."""
CRD_FOLDER = Path(__file__).resolve().parents[1] / "cluster" / "crds" / "nvcre"
"""NVCRE's CRDs as test fixtures, written from its Go types (the folder's README says from which commit)."""
SERVED_SECONDS = 30.0

Outcome = Literal["Succeeded", "Failed", "InProgress"]
BUS_BANDWIDTH = "busBandwidthGBps"
DEFAULT_CATEGORY = "communication/nccl-all-reduce"
RUN = datetime.timedelta(minutes=20)
"""How long before ``finished_at`` a run started (Workflow group and BandwidthMeasurement start times)."""

JOB_MANAGER = "kubectl-create"
"""The certification job creates its Certification with ``kubectl create`` (``aicr_gen.certify.cron``)."""
NVCRE_MANAGER = "manager"
"""controller-runtime names its field manager after the binary; NVCRE's manager binary is ``manager``."""
KUBELET_MANAGER = "kubelet"
QUARANTINE_MANAGER = "fault-quarantine"
CORDON_MANAGER = "kubectl-cordon"

GPU_LABEL, GPU_VALUE = next(iter(DEFAULT_SELECTOR.items()))
QUARANTINE_ANNOTATION = "quarantineHealthEvent"
CORDON_BY = "k8saas.nvidia.com/cordon-by"
"""NVSentinel's default ``labelPrefix`` (``k8saas.nvidia.com/``) + ``cordon-by``."""
BREAKER = "circuit-breaker"

EXPORTED = (("nvcre.nvidia.com/v1alpha1", "Certification"), ("nvcre.nvidia.com/v1alpha1", "Workflow"),
            ("nvcre.nvidia.com/v1alpha1", "BandwidthMeasurement"), ("argoproj.io/v1alpha1", "Application"),
            ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"), ("v1", "Node"), ("v1", "ConfigMap"))
"""The kinds ``export`` writes, each to ``<plural>.yaml`` (those the API server does not serve are left out)."""

_EXCLUSIVE = ("InProgress", "Succeeded", "Failed")
"""NVCRE's lifecycle conditions: the current one True, the other two False (``setExclusiveStatusCondition``)."""
_CERTIFICATION_REASONS = {"InProgress": ("WorkflowRunning", "Certification in progress"),
                          "Succeeded": ("AllWorkflowsSucceeded", "All certification categories completed successfully"),
                          "Failed": ("WorkflowFailed", "One or more certification categories failed")}
_WORKFLOW_REASONS = {"InProgress": ("JobRunning", "Job group-0 running"),
                     "Succeeded": ("JobCompleted", "All jobs completed successfully"),
                     "Failed": ("JobFailed", "Job group-0 failed")}
_GROUP_PHASES = {"InProgress": "Running", "Succeeded": "Succeeded", "Failed": "Failed"}
_MESSAGE_SIZES = tuple(2**shift for shift in range(20, 35, 2))
"""nccl-tests message sizes, 1 MiB to 16 GiB; bus bandwidth climbs with size and peaks at the largest."""
_RANKS = 16
"""all-reduce on 16 ranks: busBW = algBW * 2(n-1)/n."""


# ---------------------------------------------------------------------------------------------- plumbing


def nvcre_crds() -> list[dict[str, Any]]:
    """The three NVCRE CRDs of ``CRD_FOLDER``."""
    return [yaml.safe_load(path.read_text(encoding="utf-8")) for path in sorted(CRD_FOLDER.glob("*.yaml"))]


def install_nvcre_crds(api: Api) -> None:
    """Apply NVCRE's CRDs and wait until each is Established and in discovery."""
    crds = nvcre_crds()
    for crd in crds:
        api.apply(crd, "aicr-gen-tests")
    deadline = time.monotonic() + SERVED_SECONDS
    pending = crds
    while pending:
        pending = [crd for crd in pending if not _served(api, crd)]
        if pending and time.monotonic() > deadline:
            raise AssertionError(f"NVCRE CRDs not served within {SERVED_SECONDS:g}s: "
                                 f"{[crd['metadata']['name'] for crd in pending]}")
        if pending:
            time.sleep(0.05)


def _served(api: Api, crd: Mapping[str, Any]) -> bool:
    live = api.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
    established = any(condition.get("type") == "Established" and condition.get("status") == "True"
                      for condition in (live.get("status") or {}).get("conditions") or [])
    version = crd["spec"]["versions"][0]["name"]
    return established and api.resource(f"{crd['spec']['group']}/{version}", crd["spec"]["names"]["kind"]) is not None


def _path(api: Api, api_version: str, kind: str, name: str, namespace: str | None) -> str:
    found = api.resource(api_version, kind)
    assert found is not None, f"{kind} ({api_version}) is not served"
    plural, namespaced = found
    return api.path(api_version, plural, namespace if namespaced else None, name)


def _namespace(api: Api, name: str) -> None:
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, "aicr-gen-tests")


def put_status(api: Api, obj: Mapping[str, Any], status: Mapping[str, Any], manager: str) -> dict[str, Any]:
    """``Status().Update``: the stored object with ``status`` replaced, PUT to ``/status`` (its resourceVersion
    makes it an optimistic-concurrency update, as custom resources require)."""
    meta = obj["metadata"]
    path = _path(api, obj["apiVersion"], obj["kind"], meta["name"], meta.get("namespace")) + "/status"
    live: dict[str, Any] = api.call("GET", path)
    live["status"] = dict(status)
    written: dict[str, Any] = api.call("PUT", f"{path}?{urllib.parse.urlencode({'fieldManager': manager})}", live)
    return written


def _instant(text: str) -> datetime.datetime:
    moment = datetime.datetime.fromisoformat(text)
    if moment.tzinfo is None:
        raise ValueError(f"{text!r}: give a UTC time, e.g. 2026-12-01T10:00:00Z")
    return moment.astimezone(datetime.UTC)


def _rfc3339(moment: datetime.datetime) -> str:
    return moment.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True)
class _Run:
    """One certification run: how it ended (or not yet), when, and the threshold verdict if it failed one."""

    outcome: Outcome
    started_at: str
    finished_at: str
    violation: str | None

    @property
    def completed_at(self) -> str | None:
        return None if self.outcome == "InProgress" else self.finished_at


def _condition(kind: str, status: bool, said: tuple[str, str], at: str, generation: int) -> dict[str, Any]:
    """A ``metav1.Condition``; ``said`` is its (reason, message)."""
    return {"type": kind, "status": "True" if status else "False", "reason": said[0], "message": said[1],
            "lastTransitionTime": at, "observedGeneration": generation}


def _conditions(run: _Run, reasons: Mapping[str, tuple[str, str]], generation: int) -> list[dict[str, Any]]:
    """The exclusive triple as NVCRE leaves it: the current condition True since ``finished_at``; InProgress
    False since then once the run ended; a condition never True False since the start, reason NotApplicable.
    Then ValidationFailed, True, when the run violated its threshold."""
    conditions = []
    for kind in _EXCLUSIVE:
        if kind == run.outcome:
            conditions.append(_condition(kind, True, reasons[kind], run.finished_at, generation))
        else:
            since = run.finished_at if kind == "InProgress" else run.started_at
            conditions.append(_condition(kind, False, ("NotApplicable", ""), since, generation))
    if run.violation:
        conditions.append(_condition("ValidationFailed", True, ("ThresholdViolation", run.violation),
                                     run.finished_at, generation))
    return conditions


def _gpu_nodes(api: Api) -> tuple[list[str], list[str]]:
    """The GPU nodes the run would target: (schedulable, cordoned), by name; NVCRE excludes cordoned nodes."""
    selector = urllib.parse.urlencode({"labelSelector": f"{GPU_LABEL}={GPU_VALUE}"})
    nodes = api.call("GET", f"/api/v1/nodes?{selector}")["items"]
    names = sorted(node["metadata"]["name"] for node in nodes if not (node.get("spec") or {}).get("unschedulable"))
    cordoned = sorted(node["metadata"]["name"] for node in nodes if (node.get("spec") or {}).get("unschedulable"))
    return names, cordoned


# ---------------------------------------------------------------------------------------------- NVCRE


def certification(api: Api, *, name: str, namespace: str, stack_digest: str | None,
                  trigger: str = "post-change", pool: str | None = None, outcome: Outcome = "Succeeded",
                  bus_bw: float | None, threshold: str = "value >= 300", finished_at: str,
                  category: str = DEFAULT_CATEGORY) -> dict[str, Any]:
    """One certification run, as the job that creates the Certification and NVCRE's controllers leave it; returns
    the Certification as stored.

    - the Certification (``aicr-gen.dev/trigger``, ``aicr-gen.dev/pool`` when given, annotation
      ``aicr-gen.dev/stack-digest`` unless ``stack_digest`` is None: Argo CD PostSync and scheduled runs carry none)
      with the catalog ``category`` and global thresholds ``{busBandwidthGBps: threshold}``;
    - its Workflow ``<name>-<domain>-<variant>`` (owned by it, NVCRE's labels) whose one group ``group-0`` ran
      on the schedulable GPU nodes present now (cordoned ones in ``excludedNodes``), ``jobRef`` naming Job
      ``<workflow>-group-0``;
    - when ``bus_bw`` is measured, the BandwidthMeasurement of that Job (``spec.jobRef``) with a result per
      message size whose largest ``busBW`` is ``bus_bw``, and, once terminal, ``ValidationFailed`` True on the
      Workflow and the Certification (reason ``ThresholdViolation``, NVCRE's ``Threshold "busBandwidthGBps"
      violated: measured <x>, expression: <expr>``) when ``bus_bw`` fails ``threshold``, whatever ``outcome``
      says (the condition is independent of the lifecycle ones); no ValidationFailed when it passes;
    - statuses through ``/status``, lifecycle conditions exclusive, ``finished_at`` the True one's
      ``lastTransitionTime`` (for InProgress: the time of the write), the run started ``RUN`` before it.
    """
    _namespace(api, namespace)
    entry = CATALOG[category]
    labels = {TRIGGER_LABEL: trigger, **({POOL_LABEL: pool} if pool else {})}
    body = certification_object(name, namespace, target_spec=target(DEFAULT_SELECTOR, [], []), entries=[entry],
                                global_options={}, category_options={}, global_thresholds={BUS_BANDWIDTH: threshold},
                                category_thresholds={}, labels=labels)
    if stack_digest is not None:
        body["metadata"]["annotations"] = {STACK_DIGEST: stack_digest}
    cert = api.apply(body, JOB_MANAGER)
    verdict = (evaluate(compile_thresholds({BUS_BANDWIDTH: threshold}, name), {BUS_BANDWIDTH: bus_bw})[0]
               if bus_bw is not None else None)
    violation = (verdict.message if verdict is not None and verdict.passed is False and outcome != "InProgress"
                 else None)
    run = _Run(outcome, _rfc3339(_instant(finished_at) - RUN), finished_at, violation)
    workflow_name = f"{name}-{entry.domain}-{entry.variant}"
    job = f"{workflow_name}-group-0"
    if bus_bw is not None:
        _measurement(api, run, namespace, job, bus_bw)
    _workflow(api, cert, workflow_name, job, run)
    status = {"conditions": _conditions(run, _CERTIFICATION_REASONS, cert["metadata"]["generation"]),
              "categoryStatuses": [{"domain": entry.domain, "variant": entry.variant,
                                    "workflowRef": {"name": workflow_name, "namespace": namespace},
                                    "status": outcome}]}
    return put_status(api, cert, status, NVCRE_MANAGER)


def _workflow(api: Api, cert: Mapping[str, Any], name: str, job: str, run: _Run) -> dict[str, Any]:
    meta = cert["metadata"]
    entry = cert["spec"]["categories"][0]
    thresholds = cert["spec"].get("thresholds") or {}
    body = {"apiVersion": API_VERSION, "kind": "Workflow",
            "metadata": {"name": name, "namespace": meta["namespace"],
                         "labels": {"app.kubernetes.io/managed-by": "nvcre",
                                    "nvcre.nvidia.com/certification": meta["name"],
                                    "nvcre.nvidia.com/category-domain": entry["domain"],
                                    "nvcre.nvidia.com/category-variant": entry["variant"]},
                         "ownerReferences": [{"apiVersion": API_VERSION, "kind": "Certification", "name": meta["name"],
                                              "uid": meta["uid"], "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"jobTemplate": {"spec": {"workload": {"trainJob": {"runtimeRef": {"name": entry["variant"]}}},
                                              "bandwidthMeasurement": {"logProfileRef": "nccl-tests",
                                                                       "testType": "all_reduce"},
                                              "thresholds": thresholds}},
                     "orchestration": {"target": cert["spec"]["target"]},
                     "validation": {"performance": {"enabled": True, "plugin": "nccl-tests",
                                                    "thresholds": {"thresholds": thresholds}}}}}
    workflow = api.apply(body, NVCRE_MANAGER)
    nodes, cordoned = _gpu_nodes(api)
    group: dict[str, Any] = {"name": "group-0", "nodes": nodes, "phase": _GROUP_PHASES[run.outcome],
                             "jobRef": {"apiVersion": API_VERSION, "kind": "Job", "name": job,
                                        "namespace": meta["namespace"]},
                             "startTime": run.started_at}
    if run.completed_at:
        group["completionTime"] = run.completed_at
    orchestration: dict[str, Any] = {"totalNodes": len(nodes), "nodesPerJob": len(nodes), "totalGroups": 1,
                                     "currentIteration": 1, "completedIterations": int(bool(run.completed_at)),
                                     "groups": [group]}
    if cordoned:
        orchestration |= {"excludedNodes": cordoned, "exclusionReason": "cordoned (spec.unschedulable)"}
    status = {"conditions": _conditions(run, _WORKFLOW_REASONS, workflow["metadata"]["generation"]),
              "namespace": meta["namespace"], "orchestration": orchestration}
    return put_status(api, workflow, status, NVCRE_MANAGER)


def _measurement(api: Api, run: _Run, namespace: str, job: str, bus_bw: float) -> dict[str, Any]:
    """The BandwidthMeasurement NVCRE's Job controller makes for an NCCL Job, with its running averages."""
    body = {"apiVersion": API_VERSION, "kind": "BandwidthMeasurement",
            "metadata": {"name": f"{job}-bandwidth", "namespace": namespace,
                         "labels": {"app.kubernetes.io/managed-by": "nvcre"}},
            "spec": {"jobRef": {"apiGroup": "nvcre.nvidia.com", "kind": "Job", "name": job},
                     "logProfileRef": "nccl-tests", "testType": "all_reduce"}}
    measurement = api.apply(body, NVCRE_MANAGER)
    shares = (0.05, 0.15, 0.35, 0.6, 0.8, 0.92, 0.98, 1.0)
    results = []
    for size, share in zip(_MESSAGE_SIZES, shares, strict=True):
        bus = bus_bw if share == 1.0 else round(bus_bw * share, 2)
        results.append({"sizeBytes": size, "algBW": repr(round(bus * _RANKS / (2 * (_RANKS - 1)), 2)),
                        "busBW": repr(float(bus)), "samples": 10})
    generation = measurement["metadata"]["generation"]
    status: dict[str, Any] = {"results": results, "startTime": run.started_at,
                              "conditions": [_condition("Measuring", True, ("JobRunning", f"Job {job} is running"),
                                                        run.started_at, generation)]}
    if run.completed_at:
        said = ("JobCompleted", f"Job {job} reached a terminal state")
        status |= {"completionTime": run.completed_at,
                   "conditions": [_condition("Complete", True, said, run.completed_at, generation)]}
    return put_status(api, measurement, status, NVCRE_MANAGER)


# ---------------------------------------------------------------------------------------------- deployers


def argo_application(api: Api, *, name: str = ARGOCD_ROOT, namespace: str = "argocd", revision: str,
                     synced: bool = True, health: str = "Healthy", finished_at: str) -> dict[str, Any]:
    """The stack's Argo CD Application after a sync to ``revision`` that finished at ``finished_at``: synced, it
    is ``Synced`` at ``revision`` with a Succeeded operation and a history entry; not synced, the comparison is
    ``OutOfSync`` at ``revision`` and the operation to it Failed. Status goes with the object (the CRD has no
    status subresource); returns the Application as stored."""
    _namespace(api, namespace)
    started_at = _rfc3339(_instant(finished_at) - datetime.timedelta(minutes=2))
    source = {"repoURL": "https://git.example.invalid/fleet.git", "path": "argocd", "targetRevision": "main"}
    destination = {"server": "https://kubernetes.default.svc", "namespace": namespace}
    operation = {"phase": "Succeeded" if synced else "Failed",
                 "message": "successfully synced (all tasks run)" if synced else "one or more objects failed to apply",
                 "startedAt": started_at, "finishedAt": finished_at,
                 "operation": {"sync": {"revision": revision}, "initiatedBy": {"automated": True}},
                 "syncResult": {"revision": revision, "source": source}}
    status: dict[str, Any] = {"sync": {"status": "Synced" if synced else "OutOfSync", "revision": revision,
                                       "comparedTo": {"source": source, "destination": destination}},
                              "health": {"status": health, "lastTransitionTime": finished_at},
                              "operationState": operation, "reconciledAt": finished_at, "sourceType": "Directory"}
    if synced:
        status["history"] = [{"id": 0, "revision": revision, "deployStartedAt": started_at,
                              "deployedAt": finished_at, "source": source}]
    body = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"project": "default", "source": source, "destination": destination}, "status": status}
    return api.apply(body, ARGOCD_MANAGER)


def flux_kustomization(api: Api, *, name: str = STACK, namespace: str = "flux-system", revision: str,
                       ready: bool = True, at: str, branch: str = "main") -> dict[str, Any]:
    """The stack's Flux Kustomization after reconciling ``<branch>@sha1:<revision>`` at ``at``: ``Ready`` True
    with ``lastAppliedRevision`` that revision, or ``Ready`` False with only ``lastAttemptedRevision`` moved (a
    merge patch of ``/status``, so an earlier good ``lastAppliedRevision`` stays); ``observedGeneration`` the
    object's generation. Returns the Kustomization as stored."""
    _namespace(api, namespace)
    body: dict[str, Any] = {"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"interval": "10m", "path": "./flux", "prune": True,
                     "sourceRef": {"kind": "GitRepository", "name": FLUX_SOURCE}}}
    kustomization = api.apply(body, FLUX_MANAGER)
    generation = kustomization["metadata"]["generation"]
    applied = f"{branch}@sha1:{revision}"
    said = (("ReconciliationSucceeded", f"Applied revision: {applied}") if ready
            else ("ReconciliationFailed", f"Reconciliation of revision {applied} failed"))
    condition = _condition("Ready", ready, said, at, generation)
    status = {"observedGeneration": generation, "lastAttemptedRevision": applied,
              **({"lastAppliedRevision": applied} if ready else {}), "conditions": [condition]}
    path = _path(api, body["apiVersion"], "Kustomization", name, namespace) + "/status"
    query = urllib.parse.urlencode({"fieldManager": FLUX_MANAGER})
    written: dict[str, Any] = api.call("PATCH", f"{path}?{query}", {"status": status}, "application/merge-patch+json")
    return written


# ---------------------------------------------------------------------------------------------- NVSentinel


def gpu_node(api: Api, name: str, *, quarantined: bool = False, cordoned: bool = False) -> dict[str, Any]:
    """A GPU node (``nvidia.com/gpu.present=true``, as kubelet and GPU feature discovery label it). Quarantined:
    NVSentinel's fault-quarantine marks, annotation ``quarantineHealthEvent`` (a JSON list of the events it
    tracks), label ``k8saas.nvidia.com/cordon-by=nvsentinel`` and ``spec.unschedulable``. Cordoned: only
    ``spec.unschedulable``, as ``kubectl cordon`` leaves it. Returns the Node as stored."""
    api.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {GPU_LABEL: GPU_VALUE}}},
              KUBELET_MANAGER)
    marks: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    if quarantined:
        event = {"agent": "gpu-health-monitor", "checkName": "GpuXidError", "componentClass": "GPU",
                 "isFatal": True, "errorCode": ["79"], "message": "GPU has fallen off the bus", "nodeName": name}
        marks = {**marks, "metadata": {"name": name, "labels": {CORDON_BY: "nvsentinel"},
                                       "annotations": {QUARANTINE_ANNOTATION: json.dumps([event])}},
                 "spec": {"unschedulable": True}}
    api.apply(marks, QUARANTINE_MANAGER)
    cordon: dict[str, Any] = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}}
    return api.apply({**cordon, "spec": {"unschedulable": True}} if cordoned else cordon, CORDON_MANAGER)


def circuit_breaker(api: Api, namespace: str = "nvsentinel", *, tripped: bool) -> dict[str, Any]:
    """NVSentinel's fault-quarantine circuit breaker: ConfigMap ``circuit-breaker``, ``data.status`` TRIPPED or
    CLOSED. Returns the ConfigMap as stored."""
    _namespace(api, namespace)
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": BREAKER, "namespace": namespace},
            "data": {"status": "TRIPPED" if tripped else "CLOSED"}}
    return api.apply(body, QUARANTINE_MANAGER)


# ---------------------------------------------------------------------------------------------- export


def listed(api: Api, api_version: str, kind: str) -> list[dict[str, Any]]:
    """Every object of a served kind in every namespace as ``kubectl get -A -o yaml`` shows it (``apiVersion``
    and ``kind`` on each item, no ``managedFields``)."""
    items = api.items(api_version, kind)
    for item in items:
        item["apiVersion"], item["kind"] = api_version, kind
        item["metadata"].pop("managedFields", None)
    return items


def export(api: Api, folder: Path, kinds: Sequence[tuple[str, str]] = EXPORTED) -> list[Path]:
    """Write each served kind of ``kinds`` to ``folder/<plural>.yaml`` as the List ``kubectl get <plural> -A -o
    yaml`` prints; returns the files written."""
    folder.mkdir(parents=True, exist_ok=True)
    written = []
    for api_version, kind in kinds:
        found = api.resource(api_version, kind)
        if found is None:
            continue
        path = folder / f"{found[0]}.yaml"
        document = {"apiVersion": "v1", "items": listed(api, api_version, kind), "kind": "List",
                    "metadata": {"resourceVersion": ""}}
        path.write_text(yaml.safe_dump(document, default_flow_style=False), encoding="utf-8")
        written.append(path)
    return written
