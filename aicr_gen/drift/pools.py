"""A snapshot as one GPU node pool sees it (pure): the nodes a pool's ``nodeSelector`` selects, and the
measurements narrowed to them, so a pool's recipe constraints are evaluated against that pool's nodes only.

What a snapshot records per node (AICR's format, and ``drift/capture.py``'s): ``NodeTopology.label`` and
``.taint`` values ``[effect|]value|node1,node2`` (several values of one key ``;``-joined), and ``K8s.node``
values in the same form where nodes differ (bare when every node shares one). The pool view keeps, of each
such value, only the entries of the pool's nodes (bare when they share one, left out when none has it);
``NodeTopology.summary`` counts the pool's nodes; ``GPU.hardware`` model and count come from the pool's GPU
Feature Discovery labels when the snapshot has them. The other measurements (``OS``, ``SystemD``, ``GPU``,
``NetworkTopology``) are taken by the agent on one node, ``metadata.source-node``: they count for the pool
only when that node is one of its own (or the snapshot does not say which node it was), and are left out
otherwise, so a constraint on them reports "not found" for that pool rather than another pool's reading.

``pool_drift`` is ``aicr-gen diff --spec`` of a pooled spec: Helm releases are the cluster's (compared once),
while a pool's own components and its nodes' driver versions (GPU Feature Discovery's ``nvidia.com/cuda.driver*``
labels, the only per-node driver reading a snapshot has) are the pool's.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

SINGLE_NODE_TYPES = ("OS", "SystemD", "GPU", "NetworkTopology")
"""Measurement types the agent takes on the node it runs on."""
PRODUCT_LABEL = "nvidia.com/gpu.product"
COUNT_LABEL = "nvidia.com/gpu.count"
PRESENT_LABEL = "nvidia.com/gpu.present"


class PoolView(NamedTuple):
    """The pool's nodes in the snapshot, the snapshot narrowed to them, and what was left out and why."""

    nodes: tuple[str, ...]
    snapshot: dict[str, Any]
    notes: tuple[str, ...]


def _entries(raw: Any) -> list[tuple[str, frozenset[str]]] | None:
    """``[(value, nodes)]`` of a per-node value, or None when ``raw`` is not one."""
    if not isinstance(raw, str) or "|" not in raw:
        return None
    found = []
    for part in raw.split(";"):
        value, sep, nodes = part.rpartition("|")
        if not sep:
            return None
        found.append((value, frozenset(node for node in nodes.split(",") if node)))
    return found


def _encode(entries: list[tuple[str, frozenset[str]]]) -> str:
    return ";".join(f"{value}|{','.join(sorted(nodes))}" for value, nodes in sorted(entries))


def _subtype(snapshot: Mapping[str, Any], kind: str, name: str) -> Mapping[str, Any]:
    for measurement in snapshot.get("measurements") or []:
        if isinstance(measurement, Mapping) and measurement.get("type") == kind:
            for sub in measurement.get("subtypes") or []:
                if isinstance(sub, Mapping) and sub.get("subtype") == name and isinstance(sub.get("data"), Mapping):
                    data: Mapping[str, Any] = sub["data"]
                    return data
    return {}


def labelled(snapshot: Mapping[str, Any]) -> dict[str, dict[str, str]]:
    """Node -> its labels, as ``NodeTopology.label`` records them."""
    nodes: dict[str, dict[str, str]] = {}
    for key, raw in _subtype(snapshot, "NodeTopology", "label").items():
        for value, members in _entries(raw) or []:
            for node in members:
                nodes.setdefault(node, {})[str(key)] = value
    return nodes


def pool_nodes(snapshot: Mapping[str, Any], selector: Mapping[str, str]) -> tuple[str, ...]:
    """The snapshot's nodes whose labels match every entry of ``selector``, sorted."""
    return tuple(sorted(node for node, labels in labelled(snapshot).items()
                        if all(labels.get(key) == value for key, value in selector.items())))


def _narrowed(kind: str, raw: Any, nodes: frozenset[str]) -> tuple[bool, Any]:
    """(keep, value) of one data value for the pool's ``nodes``."""
    entries = _entries(raw)
    if entries is None:
        return True, raw
    kept = [(value, members & nodes) for value, members in entries if members & nodes]
    if not kept:
        return False, None
    if kind != "NodeTopology" and len(kept) == 1 and kept[0][1] == nodes:
        return True, kept[0][0]
    return True, _encode(kept)


def _gpu_hardware(labels: Mapping[str, Mapping[str, str]], nodes: frozenset[str]) -> dict[str, Any]:
    products = sorted({labels[node][PRODUCT_LABEL] for node in nodes if PRODUCT_LABEL in labels.get(node, {})})
    counts = [int(labels[node][COUNT_LABEL]) for node in nodes
              if labels.get(node, {}).get(COUNT_LABEL, "").isdigit()]
    found: dict[str, Any] = {"model": ";".join(products)} if products else {}
    if counts:
        found["gpu-count"] = max(counts)
    if products or counts:
        found["gpu-present"] = True
    return found


def pool_view(snapshot: Mapping[str, Any], selector: Mapping[str, str]) -> PoolView:
    """``snapshot`` narrowed to the nodes ``selector`` selects (see the module docstring)."""
    labels = labelled(snapshot)
    nodes = frozenset(pool_nodes(snapshot, selector))
    source = (snapshot.get("metadata") or {}).get("source-node") if isinstance(snapshot, Mapping) else None
    foreign = isinstance(source, str) and bool(source) and source not in nodes
    notes = [f"{', '.join(SINGLE_NODE_TYPES)} measurements were taken on node {source}, not of this pool: take a "
             "snapshot on one of its nodes (aicr snapshot --node-selector) to check them"] if foreign else []
    view = copy.deepcopy(dict(snapshot))
    measurements = []
    for measurement in view.get("measurements") or []:
        kind = measurement.get("type") if isinstance(measurement, Mapping) else None
        if kind in SINGLE_NODE_TYPES and foreign:
            continue
        for sub in measurement.get("subtypes") or []:
            data = sub.get("data") if isinstance(sub, Mapping) else None
            if not isinstance(data, dict):
                continue
            if kind == "NodeTopology" and sub.get("subtype") == "summary":
                gpu = [node for node in nodes if labels.get(node, {}).get(PRESENT_LABEL, "").lower() == "true"]
                data.update({"node-count": len(nodes), "gpu-node-count": len(gpu)})
                continue
            if kind == "GPU" and sub.get("subtype") == "hardware":
                data.update(_gpu_hardware(labels, nodes))
                continue
            for key in list(data):
                keep, value = _narrowed(str(kind), data[key], nodes)
                if keep:
                    data[key] = value
                else:
                    del data[key]
        measurements.append(measurement)
    view["measurements"] = measurements
    return PoolView(tuple(sorted(nodes)), view, tuple(notes))


# ------------------------------------------------------------------------------------------- drift per pool

DRIVER_FULL_LABEL = "nvidia.com/cuda.driver-version.full"
DRIVER_PART_LABELS = (("nvidia.com/cuda.driver-version.major", "nvidia.com/cuda.driver-version.minor",
                       "nvidia.com/cuda.driver-version.revision"),
                      ("nvidia.com/cuda.driver.major", "nvidia.com/cuda.driver.minor", "nvidia.com/cuda.driver.rev"))
"""GPU Feature Discovery's driver labels, newer then older names; a node has them once its driver is loaded."""
DRIVER_PATH = "NVIDIADriver"


def driver_version(labels: Mapping[str, str]) -> str | None:
    """The driver version a node's GFD labels record (the full one, else ``major[.minor[.rev]]``), or None."""
    if labels.get(DRIVER_FULL_LABEL):
        return labels[DRIVER_FULL_LABEL]
    for names in DRIVER_PART_LABELS:
        parts: list[str] = []
        for name in names:
            if not labels.get(name):
                break
            parts.append(labels[name])
        if parts:
            return ".".join(parts)
    return None


class PoolDesired(NamedTuple):
    """What a pool wants that a snapshot can show: its selector, the components it alone brought (the other
    Helm releases are the cluster's) and its NVIDIADriver version (None: the node images own the driver)."""

    name: str
    selector: Mapping[str, str]
    refs: tuple[Mapping[str, Any], ...]
    driver: str | None


def _summary(changes: list[dict[str, Any]]) -> dict[str, int]:
    counts = {kind: sum(1 for entry in changes if entry["kind"] == kind) for kind in ("added", "removed", "modified")}
    return {**counts, "total": len(changes)}


def _pool_part(pool: PoolDesired, snapshot: Mapping[str, Any], labels: Mapping[str, Mapping[str, str]]
               ) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """A pool's entry of the drift document and its changes: its own components' releases (what is missing or
    differs; a release nobody's recipe names is the cluster's), then each node's driver."""
    from aicr_gen.drift.diff import change, diff_recipe
    from aicr_gen.text.versions import same_driver

    changes = [entry for entry in diff_recipe({"componentRefs": list(pool.refs)}, snapshot)["changes"]
               if entry["kind"] != "added"]
    nodes = pool_nodes(snapshot, pool.selector)
    live = {node: driver_version(labels.get(node, {})) for node in nodes}
    notes: list[str] = []
    if pool.driver is None:
        notes.append("the node images own the driver (no NVIDIADriver): driver versions not compared")
    else:
        for node, have in live.items():
            if have is not None and not same_driver(pool.driver, have):
                changes.append(change("modified", f"{DRIVER_PATH}.{pool.name}.version[{node}]", baseline=pool.driver,
                                      target=have))
        unread = [node for node, have in live.items() if have is None]
        if unread:
            notes.append(f"no driver version recorded for {', '.join(unread)} (GPU Feature Discovery labels "
                         f"{DRIVER_FULL_LABEL} or nvidia.com/cuda.driver.major appear once the driver is loaded)")
    if not nodes:
        notes.append("no node of the snapshot has the pool's labels")
    changes = [{**entry, "pool": pool.name} for entry in changes]
    part = {"name": pool.name, "nodeSelector": dict(pool.selector), "nodes": list(nodes),
            "components": sorted(str(ref.get("name")) for ref in pool.refs),
            "driver": {"desired": pool.driver, "nodes": live}, "notes": notes, "summary": _summary(changes)}
    return part, changes


def pool_drift(merged: Mapping[str, Any], pools: Sequence[PoolDesired], snapshot: Mapping[str, Any],
               baseline_source: str, target_source: str) -> dict[str, Any]:
    """A pooled spec (its merged recipe and ``pools``) against a snapshot, in ``diff``'s result shape plus a
    ``shared`` and a ``pools`` part: Helm releases are cluster-wide, so the components every pool shares are
    compared once, from the merged recipe (the GPU Operator at the version that was deployed, the highest of
    the pools'), and a release no recipe names is the cluster's too; each pool then has its own components and
    its nodes' driver versions. Changes of a pool carry ``pool``."""
    from aicr_gen.drift.diff import diff_recipe, sort

    own = {str(ref.get("name")) for pool in pools for ref in pool.refs}
    shared_refs = [ref for ref in merged.get("componentRefs") or [] if isinstance(ref, Mapping)
                   and str(ref.get("name")) not in own]
    shared = [entry for entry in diff_recipe({"componentRefs": shared_refs}, snapshot)["changes"]
              if not (entry["kind"] == "added" and entry["path"].removeprefix("K8s.helm.") in own)]
    labels = labelled(snapshot)
    parts, changes = [], list(shared)
    for pool in pools:
        part, found = _pool_part(pool, snapshot, labels)
        parts.append(part)
        changes += found
    ordered = sort(changes)
    return {"baselineSource": baseline_source, "targetSource": target_source, "changes": ordered,
            "summary": _summary(ordered),
            "shared": {"components": sorted(str(ref.get("name")) for ref in shared_refs),
                       "summary": _summary(shared)},
            "pools": parts}
