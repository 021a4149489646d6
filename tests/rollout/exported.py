"""Exported evidence of a cluster as ``kubectl get -o yaml`` writes it (Lists of objects as the controllers leave
them, and an AICR Snapshot), for ``rollout status --evidence``: the tests' and the bench's fixtures."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

DIGEST = re.compile(r"aicr-gen\.dev/stack-digest:\s*['\"]?(sha256:[0-9a-f]{64})")
NVCRE = "nvcre.nvidia.com/v1alpha1"


def stack_digest(repo: Path, path: str) -> str:
    """The stack digest the cluster's committed tree at ``path`` stamps on its certification."""
    for file in sorted((repo / path / "certification").rglob("*.yaml")):
        found = DIGEST.search(file.read_text())
        if found:
            return found.group(1)
    raise AssertionError(f"no stack digest under {path}/certification")


def certification(name: str, digest: str, *, outcome: str = "Succeeded", bus_bw: float | None = 412.0,
                  threshold: str = "value >= 300", created: str = "2026-12-01T10:00:00Z",
                  finished: str = "2026-12-01T11:00:00Z", pool: str | None = None) -> list[dict[str, Any]]:
    """A Certification the post-change job created, as NVCRE's controller leaves it, with its Workflow and the
    BandwidthMeasurement of its one Job."""
    labels = {"app.kubernetes.io/managed-by": "aicr-gen", "aicr-gen.dev/trigger": "post-change",
              **({"aicr-gen.dev/pool": pool} if pool else {})}
    conditions = [{"type": outcome, "status": "True", "reason": outcome, "message": f"certification {outcome}",
                   "lastTransitionTime": finished}] if outcome != "InProgress" else \
        [{"type": "InProgress", "status": "True", "reason": "Running", "message": "running",
          "lastTransitionTime": created}]
    if outcome == "Failed" and bus_bw is not None:
        conditions.append({"type": "ValidationFailed", "status": "True", "reason": "ThresholdViolated",
                           "message": f'Threshold "busBandwidthGBps" violated: measured {bus_bw:.4f}, expression: '
                                      f"{threshold}", "lastTransitionTime": finished})
    state = {"Succeeded": "Succeeded", "Failed": "Failed"}.get(outcome, "InProgress")
    cert = {"apiVersion": NVCRE, "kind": "Certification",
            "metadata": {"name": name, "namespace": "nvcre-system", "creationTimestamp": created, "labels": labels,
                         "annotations": {"aicr-gen.dev/stack-digest": digest}},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                     "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}],
                     "thresholds": {"busBandwidthGBps": threshold}},
            "status": {"conditions": conditions,
                       "categoryStatuses": [{"domain": "communication", "variant": "nccl-all-reduce", "status": state,
                                             "workflowRef": {"name": f"{name}-wf"}}]}}
    flow = {"apiVersion": NVCRE, "kind": "Workflow", "metadata": {"name": f"{name}-wf", "namespace": "nvcre-system"},
            "status": {"orchestration": {"groups": [{"name": "g0", "phase": "Succeeded",
                                                     "jobRef": {"name": f"{name}-job-0"}}]}}}
    out = [cert, flow]
    if bus_bw is not None:
        out.append({"apiVersion": NVCRE, "kind": "BandwidthMeasurement",
                    "metadata": {"name": f"{name}-bw", "namespace": "nvcre-system"},
                    "spec": {"jobRef": {"name": f"{name}-job-0"}},
                    "status": {"results": [{"sizeBytes": 1 << 20, "busBW": f"{bus_bw / 3:.2f}"},
                                           {"sizeBytes": 1 << 30, "busBW": f"{bus_bw:.2f}"}]}})
    return out


def application(revision: str, *, name: str = "nvidia-stack", synced: bool = True, health: str = "Healthy",
                finished: str = "2026-12-01T09:30:00Z") -> dict[str, Any]:
    """The root Application (the argocd tree's: ``nvidia-stack``) as Argo CD's controller leaves it after syncing
    ``revision``."""
    return {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
            "metadata": {"name": name, "namespace": "argocd"},
            "status": {"sync": {"status": "Synced" if synced else "OutOfSync", "revision": revision},
                       "health": {"status": health},
                       "operationState": {"phase": "Succeeded", "startedAt": finished, "finishedAt": finished,
                                          "syncResult": {"revision": revision}}}}


def nodes(count: int, quarantined: Sequence[int] = ()) -> list[dict[str, Any]]:
    """GPU nodes; those at ``quarantined`` carry NVSentinel's quarantine marks."""
    out = []
    for index in range(count):
        meta: dict[str, Any] = {"name": f"gpu-{index}", "labels": {"nvidia.com/gpu.present": "true"}}
        spec: dict[str, Any] = {}
        if index in quarantined:
            meta["annotations"] = {"quarantineHealthEvent": '[{"checkName":"GpuXidError"}]'}
            meta["labels"]["k8saas.nvidia.com/cordon-by"] = "nvsentinel"
            spec["unschedulable"] = True
        out.append({"apiVersion": "v1", "kind": "Node", "metadata": meta, "spec": spec})
    return out


def snapshot(refs: Sequence[Mapping[str, Any]], *, live: Mapping[str, str] | None = None,
             timestamp: str = "2026-12-01T12:00:00Z") -> dict[str, Any]:
    """An AICR snapshot whose Helm releases are the recipe's (``live``: component -> the version running
    instead)."""
    data: dict[str, str] = {}
    for ref in refs:
        if ref.get("type", "Helm") != "Helm" or ref.get("enabled") is False:
            continue
        name = ref["name"]
        data[f"{name}.chart"] = ref.get("chart") or name
        data[f"{name}.version"] = (live or {}).get(name, ref.get("version") or "")
        data[f"{name}.namespace"] = ref.get("namespace") or name
    return {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2",
            "metadata": {"timestamp": timestamp, "version": "v0.12.0", "source-node": "gpu-0"},
            "measurements": [{"type": "K8s", "subtypes": [{"subtype": "helm", "data": data}]}]}


def recipe_refs(repo: Path, path: str) -> list[dict[str, Any]]:
    return list(yaml.safe_load((repo / path / "recipe.yaml").read_text()).get("componentRefs") or [])


def write(folder: Path, cluster: str, objects: Sequence[Mapping[str, Any]],
          snap: Mapping[str, Any] | None = None) -> Path:
    """``folder/<cluster>/`` holding the objects as one List per kind and the snapshot."""
    place = folder / cluster
    place.mkdir(parents=True, exist_ok=True)
    kinds: dict[str, list[Mapping[str, Any]]] = {}
    for item in objects:
        kinds.setdefault(str(item["kind"]).lower(), []).append(item)
    for kind, items in kinds.items():
        (place / f"{kind}s.yaml").write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "List",
                                                             "items": list(items)}, sort_keys=False))
    if snap is not None:
        (place / "snapshot.yaml").write_text(yaml.safe_dump(dict(snap), sort_keys=False))
    return place
