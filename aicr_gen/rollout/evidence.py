"""What one cluster proves, from the objects read back from it or exported from it (pure: documents in, an
``Evidence`` out).

Objects are told apart by apiVersion group and kind; anything else is ignored (``kubectl get all -o yaml`` is a
fine export):

- ``Certification`` (``nvcre.nvidia.com``) that our jobs made (label ``app.kubernetes.io/managed-by=aicr-gen``, as a
  live read lists them; anybody else's is ignored): a ``Run`` with the stack it certifies (annotation
  ``aicr-gen.dev/stack-digest``), its pool and trigger labels, NVCRE's result (``Certification.result``), when it
  was created and when it finished (the ``lastTransitionTime`` of its True ``Succeeded``/``Failed`` condition), the
  thresholds of its spec and what was measured. NVCRE keeps no measured value in a Certification's status: the
  value is followed Certification -> ``categoryStatuses[].workflowRef`` -> ``Workflow``
  ``status.orchestration.groups[].jobRef`` -> ``BandwidthMeasurement`` whose ``spec.jobRef`` names that Job, and is
  the largest ``status.results[].busBW`` (GB/s), which is what NVCRE compares with ``busBandwidthGBps``.
- Argo CD ``Application`` / Flux ``Kustomization``: a ``Deployed`` (the revision it applied, whether it is in sync
  and healthy, and when it applied). Argo CD: ``status.sync`` and ``status.health``, the time
  ``status.operationState.finishedAt`` of a ``Succeeded`` operation; Flux: the ``Ready`` condition (current only when
  ``status.observedGeneration`` is the object's generation), ``lastAppliedRevision`` (``<branch>@sha1:<hex>``) and
  ``Stalled``.
- ``Node``: NVSentinel's fault-quarantine marks a node it quarantines with the annotation ``quarantineHealthEvent``
  (its own lifecycle manager tests that key); only GPU nodes (label ``nvidia.com/gpu.present=true``) count. No
  Node read is no evidence (exported: no Node in the files), unless the GPU nodes were listed (live): then none is
  0 GPU nodes, as an export of a cluster without GPU-labelled nodes says.
- ConfigMap ``circuit-breaker``: ``data.status`` TRIPPED means NVSentinel stopped quarantining cluster-wide. Its
  namespace is NVSentinel's release namespace, so every ConfigMap of that name is read, and one TRIPPED wins: a
  ConfigMap of that name elsewhere (another application's) never hides a tripped breaker.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from aicr_gen.certify.cron import STACK_DIGEST, TRIGGER_LABEL
from aicr_gen.certify.nvcre import MANAGED_BY, POOL_LABEL
from aicr_gen.yaml import Document, FieldPath

QUARANTINE = "quarantineHealthEvent"
GPU_LABEL = "nvidia.com/gpu.present"
BREAKER = "circuit-breaker"
UNITS = {"busBandwidthGBps": "GB/s", "algBandwidthGBps": "GB/s", "avgTFLOPsPerGPU": "TFLOPS",
         "avgStepTimeSec": "s"}
"""The unit a threshold key's value prints with."""


class Run(NamedTuple):
    """One Certification run, as the ``certified`` gate reads it."""

    name: str
    pool: str
    """``aicr-gen.dev/pool``; "" for a cluster-wide run."""
    trigger: str
    digest: str
    """The stack it certifies (``aicr-gen.dev/stack-digest``); "" when not stamped."""
    created: str
    result: str
    """PASSED, FAILED, RUNNING or INCOMPLETE (``Certification.result``)."""
    reasons: tuple[str, ...]
    finished: str
    thresholds: tuple[tuple[str, str], ...]
    """(key, CEL expression) of the spec, global ones then categories' (first of a key wins)."""
    measured: tuple[tuple[str, float], ...]
    failed_nodes: tuple[str, ...]


class Deployed(NamedTuple):
    """The deployer's object applying the cluster's tree and what it reports."""

    kind: str
    """``Application`` (Argo CD) or ``Kustomization`` (Flux)."""
    namespace: str
    name: str
    revision: str
    """The commit it applied ("" when none yet)."""
    state: str
    """``healthy``, ``progressing`` or ``failed``."""
    detail: str
    applied: str
    """When it applied ``revision`` (RFC 3339; "" when unknown)."""


class Quarantine(NamedTuple):
    """NVSentinel's marks on the cluster's GPU nodes; ``nodes`` None when no Node was read."""

    nodes: int | None
    quarantined: tuple[str, ...]
    breaker: str
    """``TRIPPED``, ``CLOSED`` or "" when no breaker ConfigMap was read."""


class Evidence(NamedTuple):
    """Everything read back from one cluster."""

    runs: tuple[Run, ...]
    deployed: tuple[Deployed, ...]
    quarantine: Quarantine


def objects(doc: Document) -> list[tuple[FieldPath, dict[str, Any]]]:
    """The objects of a loaded document: itself, or the items of a ``List``."""
    data = doc.data
    if not isinstance(data, dict):
        return []
    kind = data.get("kind")
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        return [(("items", index), item) for index, item in enumerate(data["items"]) if isinstance(item, dict)]
    return [((), data)]


def _group(obj: Mapping[str, Any]) -> str:
    api = obj.get("apiVersion")
    return api.rpartition("/")[0] if isinstance(api, str) else ""


def _get(data: Any, *path: str) -> Any:
    for part in path:
        if not isinstance(data, dict):
            return None
        data = data.get(part)
    return data


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def evidence(docs: Sequence[Document], *, gpu_nodes_listed: bool = False) -> Evidence:
    """The evidence in ``docs`` (documents read from one cluster; ``gpu_nodes_listed``: they hold every GPU Node
    of the cluster, even none); a Certification that is not one is an input error naming its file and field."""
    from aicr_gen.certify.nvcre_status import certification_at

    found: dict[tuple[str, str], list[tuple[Document, FieldPath, dict[str, Any]]]] = {}
    for doc in docs:
        for path, obj in objects(doc):
            found.setdefault((_group(obj), _text(obj.get("kind"))), []).append((doc, path, obj))
    jobs = _jobs_of_workflows([obj for _d, _p, obj in found.get(("nvcre.nvidia.com", "Workflow"), [])])
    measured = _measured([obj for _d, _p, obj in found.get(("nvcre.nvidia.com", "BandwidthMeasurement"), [])])
    runs = []
    for doc, path, obj in found.get(("nvcre.nvidia.com", "Certification"), []):
        if not MANAGED_BY.items() <= (_get(obj, "metadata", "labels") or {}).items():
            continue  # not one our jobs made (live reads list only ours)
        cert = certification_at(doc, path, obj)
        result, reasons = cert.result()
        workflows = [_text(_get(item, "workflowRef", "name")) for item in _get(obj, "status", "categoryStatuses")
                     or [] if isinstance(item, dict)]
        values = [measured[job] for flow in workflows for job in jobs.get(flow, ()) if job in measured]
        terminal = [cond.changed for cond in cert.conditions if cond.type in ("Succeeded", "Failed")
                    and cond.status == "True"]
        runs.append(Run(cert.name, cert.labels.get(POOL_LABEL, ""), cert.labels.get(TRIGGER_LABEL, ""),
                        cert.annotations.get(STACK_DIGEST, ""), cert.created, result, reasons,
                        max(terminal, default=""), _thresholds(cert.spec),
                        (("busBandwidthGBps", max(values)),) if values else (),
                        tuple(row.name for row in cert.failed_nodes)))
    deployed = [_argo(obj) for _d, _p, obj in found.get(("argoproj.io", "Application"), [])]
    deployed += [_flux(obj) for _d, _p, obj in found.get(("kustomize.toolkit.fluxcd.io", "Kustomization"), [])]
    return Evidence(tuple(sorted(runs, key=lambda run: (run.created, run.name), reverse=True)), tuple(deployed),
                    _quarantine([obj for _d, _p, obj in found.get(("", "Node"), [])],
                                [obj for _d, _p, obj in found.get(("", "ConfigMap"), [])], gpu_nodes_listed))


def _thresholds(spec: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    found: dict[str, str] = {}
    sources = [spec.get("thresholds"), *(_get(item, "options", "thresholds") for item in spec.get("categories")
                                         or [] if isinstance(item, dict))]
    for mapping in sources:
        for key, expression in (mapping.items() if isinstance(mapping, dict) else ()):
            if isinstance(expression, str):
                found.setdefault(str(key), expression)
    return tuple(sorted(found.items()))


def _jobs_of_workflows(workflows: Sequence[Mapping[str, Any]]) -> dict[str, tuple[str, ...]]:
    return {_text(_get(flow, "metadata", "name")): tuple(
        _text(_get(group, "jobRef", "name")) for group in _get(flow, "status", "orchestration", "groups") or []
        if isinstance(group, dict)) for flow in workflows}


def _measured(measurements: Sequence[Mapping[str, Any]]) -> dict[str, float]:
    """Job name -> the largest busBW (GB/s) its BandwidthMeasurement recorded."""
    out: dict[str, float] = {}
    for item in measurements:
        values = []
        for row in _get(item, "status", "results") or []:
            try:
                values.append(float(_get(row, "busBW")))
            except (TypeError, ValueError):
                continue
        job = _text(_get(item, "spec", "jobRef", "name"))
        if values and job:
            out[job] = max(values + ([out[job]] if job in out else []))
    return out


def _condition(obj: Mapping[str, Any], kind: str) -> Mapping[str, Any]:
    return next((cond for cond in _get(obj, "status", "conditions") or []
                 if isinstance(cond, dict) and cond.get("type") == kind), {})


def _argo(obj: Mapping[str, Any]) -> Deployed:
    sync, health = _get(obj, "status", "sync") or {}, _get(obj, "status", "health") or {}
    operation = _get(obj, "status", "operationState") or {}
    revision = _text(sync.get("revision"))
    status, said = _text(health.get("status")), _text(health.get("message"))
    if sync.get("status") == "Synced" and status == "Healthy":
        state, detail = "healthy", "Synced, Healthy"
    elif status == "Degraded":
        state, detail = "failed", f"Degraded: {said}".rstrip(": ")
    elif operation.get("phase") in ("Failed", "Error"):
        state, detail = "failed", f"sync {operation['phase']}: {_text(operation.get('message'))}".rstrip(": ")
    else:
        state, detail = "progressing", f"{sync.get('status') or 'Unknown'}, {status or 'Unknown'}"
    applied = _text(operation.get("finishedAt")) if operation.get("phase") == "Succeeded" and \
        _text(_get(operation, "syncResult", "revision")) in ("", revision) else ""
    meta = obj.get("metadata") or {}
    return Deployed("Application", _text(meta.get("namespace")), _text(meta.get("name")), revision, state,
                    detail, applied)


def _flux(obj: Mapping[str, Any]) -> Deployed:
    meta = obj.get("metadata") or {}
    ready, stalled = _condition(obj, "Ready"), _condition(obj, "Stalled")
    current = _get(obj, "status", "observedGeneration") == meta.get("generation")
    revision = _text(_get(obj, "status", "lastAppliedRevision")).rpartition(":")[2]
    if stalled.get("status") == "True":
        state, detail = "failed", f"Stalled: {_text(stalled.get('message'))}"
    elif ready.get("status") == "True" and current:
        state, detail = "healthy", "Ready"
    elif ready.get("status") == "False" and current:
        state, detail = "progressing", f"not Ready ({_text(ready.get('reason'))}): {_text(ready.get('message'))}"
    else:
        state, detail = "progressing", "reconciling"
    applied = _text(ready.get("lastTransitionTime")) if state == "healthy" else ""
    return Deployed("Kustomization", _text(meta.get("namespace")), _text(meta.get("name")), revision, state,
                    detail, applied)


def _quarantine(nodes: Sequence[Mapping[str, Any]], configmaps: Sequence[Mapping[str, Any]],
                listed: bool) -> Quarantine:
    gpu = [node for node in nodes if (_get(node, "metadata", "labels") or {}).get(GPU_LABEL) == "true"]
    marked = sorted(_text(_get(node, "metadata", "name")) for node in gpu
                    if QUARANTINE in (_get(node, "metadata", "annotations") or {}))
    states = {_text(_get(item, "data", "status")).upper() for item in configmaps
              if _get(item, "metadata", "name") == BREAKER}
    breaker = next((state for state in ("TRIPPED", "CLOSED") if state in states), "")
    return Quarantine(len(gpu) if nodes or listed else None, tuple(marked), breaker)
