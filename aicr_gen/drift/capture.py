"""An AICR-format snapshot (``kind: Snapshot``, aicr.run/v1 or, for AICR <= 0.21, aicr.run/v1alpha2) built
from what ``aicr_gen.edges.kube`` reads through the Kubernetes API (GET only; ``Cluster.inventory``):

- ``/version``: ``K8s.server`` (version, platform, goVersion);
- ``/api/v1/nodes``: ``K8s.node`` (os-image, kernel-version, container-runtime-version, kubelet-version),
  ``NodeTopology`` (summary, label, taint) and ``GPU.hardware`` from the GPU Feature Discovery labels
  ``nvidia.com/gpu.product`` and ``nvidia.com/gpu.count``;
- ``/api/v1/secrets?labelSelector=owner=helm``: Helm 3 release Secrets (``helm.sh/release.v1``) ->
  ``K8s.helm`` (``<release>.chart``, ``.version``, ``.namespace``);
- ``/api/v1/pods``: ``K8s.image`` (repository -> tag) from container specs and statuses.

Encoding choices (AICR's own agent measures more - OS, SystemD - from inside a node; an API-only capture
cannot, so those types are absent):

- ``NodeTopology.label`` and ``.taint``: AICR's ``value|node1,node2`` / ``effect|value|node1,node2``. A key
  with several distinct values keeps ONE entry whose value lists each distinct value, ``;``-separated and
  sorted (``a|n1,n2;b|n3``): label and taint values cannot contain ``|``, ``,`` or ``;``, so it is
  unambiguous, and the key (``NodeTopology.label.<key>``) stays stable for diff/constraints. The per-node
  ``kubernetes.io/hostname`` label is left out (it only repeats the node names). Node names are sorted.
- ``K8s.node``: a value shared by every node is written bare, otherwise the same ``value|nodes;...`` form.
- ``K8s.helm``: per release name and namespace, the highest deployed revision; a release with no deployed
  revision is reported from its latest revision with an extra ``<release>.status``. A release name found in
  several namespaces is keyed ``<namespace>/<release>``.
- ``K8s.image``: ``docker.io/library/`` and ``docker.io/`` prefixes are dropped so a spec image and its
  normalised status image are one; the value is the tag (``latest`` when none), ``tag@digest`` or the
  digest; several tags of one repository are ``,``-joined, sorted.
- ``GPU.hardware``: gpu-present, gpu-count (per GPU node; the largest when nodes differ), model (the
  product label; ``;``-joined when nodes differ), detection-source ``node-labels``; driver-loaded only
  when GPU Feature Discovery's CUDA driver labels show it.

``metadata.timestamp`` (from the ``now`` parameter) is the only field that changes between two captures
of an unchanged cluster; everything else is sorted.
"""

from __future__ import annotations

import base64
import binascii
import datetime
import json
import zlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

from aicr_gen import __version__
from aicr_gen.drift.snapshot import API_VERSION, SNAPSHOT_KIND, validate_snapshot
from aicr_gen.yaml import dump, load_text

HELM_SECRET_TYPE = "helm.sh/release.v1"
GPU_PRODUCT = "nvidia.com/gpu.product"
GPU_COUNT = "nvidia.com/gpu.count"
DRIVER_LABELS = ("nvidia.com/cuda.driver-version.full", "nvidia.com/cuda.driver.major")
SKIPPED_LABELS = frozenset({"kubernetes.io/hostname"})
MAX_RELEASE_BYTES = 32 * 1024 * 1024
SOURCE = "aicr-gen"


# ------------------------------------------------------------------------------------------- building


def build_snapshot(version: Mapping[str, Any], nodes: list[dict[str, Any]], secrets: list[dict[str, Any]],
                   pods: list[dict[str, Any]], now: datetime.datetime, *,
                   api_version: str = API_VERSION) -> dict[str, Any]:
    """The snapshot of the given API objects (pure: the same inputs and ``now`` give the same result), with
    header ``api_version`` (one of ``API_VERSIONS``)."""
    k8s = [_subtype("server", server_data(version)), _subtype("node", node_data(nodes)),
           _subtype("image", image_data(pods)), _subtype("helm", helm_data(secrets))]
    snapshot = {
        "kind": SNAPSHOT_KIND,
        "apiVersion": api_version,
        "metadata": {"timestamp": timestamp(now), "version": __version__, "source": SOURCE},
        "measurements": [
            {"type": "K8s", "subtypes": [s for s in k8s if s["data"]]},
            {"type": "GPU", "subtypes": [_subtype("hardware", gpu_data(nodes))]},
            {"type": "NodeTopology", "subtypes": [_subtype("summary", summary_data(nodes)),
                                                  _subtype("label", label_data(nodes)),
                                                  _subtype("taint", taint_data(nodes))]},
        ],
    }
    return validate_snapshot(load_text(dump(snapshot), "<captured snapshot>"))


def timestamp(now: datetime.datetime) -> str:
    """RFC 3339 in UTC, whole seconds (a naive ``now`` is taken as UTC)."""
    aware = now if now.tzinfo else now.replace(tzinfo=datetime.UTC)
    return aware.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _subtype(name: str, data: dict[str, Any]) -> dict[str, Any]:
    return {"subtype": name, "data": data}


def _name(obj: Mapping[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _grouped(by_value: Mapping[str, Iterable[str]]) -> str:
    """``value|node1,node2`` per distinct value, sorted, ``;``-joined."""
    return ";".join(f"{value}|{','.join(sorted(set(names)))}" for value, names in sorted(by_value.items()))


def server_data(version: Mapping[str, Any]) -> dict[str, Any]:
    keys = (("version", "gitVersion"), ("platform", "platform"), ("goVersion", "goVersion"))
    return {key: str(version[field]) for key, field in keys if version.get(field)}


def node_data(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    fields = (("os-image", "osImage"), ("kernel-version", "kernelVersion"),
              ("container-runtime-version", "containerRuntimeVersion"), ("kubelet-version", "kubeletVersion"))
    data: dict[str, Any] = {}
    for key, field in fields:
        by_value: dict[str, list[str]] = defaultdict(list)
        for node in nodes:
            value = ((node.get("status") or {}).get("nodeInfo") or {}).get(field)
            if value:
                by_value[str(value)].append(_name(node))
        if len(by_value) == 1:
            data[key] = next(iter(by_value))
        elif by_value:
            data[key] = _grouped(by_value)
    return data


def _labels(node: Mapping[str, Any]) -> dict[str, str]:
    labels = (node.get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()} if isinstance(labels, dict) else {}


def _gpu_count(node: Mapping[str, Any]) -> int:
    text = _labels(node).get(GPU_COUNT, "")
    return int(text) if text.isdigit() else 0


def _is_gpu(node: Mapping[str, Any]) -> bool:
    return _gpu_count(node) > 0 or GPU_PRODUCT in _labels(node)


def summary_data(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    return {"node-count": len(nodes), "gpu-node-count": sum(1 for node in nodes if _is_gpu(node))}


def label_data(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for node in nodes:
        for key, value in _labels(node).items():
            if key not in SKIPPED_LABELS:
                found[key][value].append(_name(node))
    return {key: _grouped(found[key]) for key in sorted(found)}


def taint_data(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    found: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for node in nodes:
        for taint in (node.get("spec") or {}).get("taints") or []:
            if isinstance(taint, dict) and taint.get("key"):
                effect_value = f"{taint.get('effect') or ''}|{taint.get('value') or ''}"
                found[str(taint["key"])][effect_value].append(_name(node))
    return {key: _grouped(found[key]) for key in sorted(found)}


def gpu_data(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    gpu_nodes = sorted((node for node in nodes if _is_gpu(node)), key=_name)
    if not gpu_nodes:
        return {"gpu-present": False, "gpu-count": 0, "detection-source": "node-labels"}
    data: dict[str, Any] = {"gpu-present": True, "gpu-count": max(_gpu_count(node) for node in gpu_nodes)}
    if any(label in _labels(node) for node in gpu_nodes for label in DRIVER_LABELS):
        data["driver-loaded"] = True
    data["detection-source"] = "node-labels"
    products = sorted({_labels(node)[GPU_PRODUCT] for node in gpu_nodes if GPU_PRODUCT in _labels(node)})
    if products:
        data["model"] = ";".join(products)
    return data


# ------------------------------------------------------------------------------------------- Helm


def decode_release(secret: Mapping[str, Any]) -> dict[str, Any] | None:
    """The release JSON of a Helm 3 Secret: the API's base64 of Helm's base64 of gzip'ed JSON (Helm also
    reads uncompressed JSON). None when the Secret is not a readable release (nor one nested too deep, or
    inflating past ``MAX_RELEASE_BYTES``)."""
    raw = (secret.get("data") or {}).get("release")
    if secret.get("type") != HELM_SECRET_TYPE or not isinstance(raw, str):
        return None
    try:
        payload = base64.b64decode(base64.b64decode(raw, validate=True), validate=True)
        if payload[:2] == b"\x1f\x8b":
            inflater = zlib.decompressobj(wbits=31)
            payload = inflater.decompress(payload, MAX_RELEASE_BYTES)
            if inflater.unconsumed_tail or not inflater.eof:
                return None
        release = json.loads(payload)
    except (binascii.Error, ValueError, zlib.error, RecursionError):  # RecursionError: JSON nested too deep
        return None
    return release if isinstance(release, dict) else None


def helm_data(secrets: list[dict[str, Any]]) -> dict[str, Any]:
    latest: dict[tuple[str, str], tuple[bool, int, dict[str, Any]]] = {}
    for secret in secrets:
        release = decode_release(secret)
        if release is None or not release.get("name"):
            continue
        namespace = str(release.get("namespace") or (secret.get("metadata") or {}).get("namespace") or "")
        key = (str(release["name"]), namespace)
        revision = release.get("version")
        rank = (str((release.get("info") or {}).get("status") or "") == "deployed",
                revision if isinstance(revision, int) else 0)
        if key not in latest or rank > latest[key][:2]:
            latest[key] = (*rank, release)
    namespaces: dict[str, int] = defaultdict(int)
    for name, _ in latest:
        namespaces[name] += 1
    data: dict[str, Any] = {}
    for (name, namespace), (_, _, release) in sorted(latest.items()):
        prefix = name if namespaces[name] == 1 else f"{namespace}/{name}"
        chart = ((release.get("chart") or {}).get("metadata") or {})
        data[f"{prefix}.chart"] = str(chart.get("name") or "")
        data[f"{prefix}.version"] = str(chart.get("version") or "")
        data[f"{prefix}.namespace"] = namespace
        status = str((release.get("info") or {}).get("status") or "")
        if status != "deployed":
            data[f"{prefix}.status"] = status or "unknown"
    return data


# ------------------------------------------------------------------------------------------- images


def normalize_image(image: str) -> str:
    for prefix in ("docker.io/library/", "index.docker.io/library/", "docker.io/", "index.docker.io/"):
        if image.startswith(prefix):
            return image[len(prefix):]
    return image


def split_image(image: str) -> tuple[str, str]:
    """``(repository, tag|tag@digest|digest)``; no tag and no digest means ``latest``."""
    name, _, digest = image.partition("@")
    slash = name.rfind("/")
    colon = name.rfind(":")
    repo, tag = (name[:colon], name[colon + 1:]) if colon > slash else (name, "")
    if digest:
        return repo, f"{tag}@{digest}" if tag else digest
    return repo, tag or "latest"


def images(pods: list[dict[str, Any]]) -> list[str]:
    """Sorted unique images of all containers (init, ephemeral too), from specs and statuses."""
    found: set[str] = set()
    for pod in pods:
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        for field in ("containers", "initContainers", "ephemeralContainers"):
            found.update(str(c["image"]) for c in spec.get(field) or [] if isinstance(c, dict) and c.get("image"))
        for field in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
            found.update(str(c["image"]) for c in status.get(field) or []
                         if isinstance(c, dict) and c.get("image"))
    return sorted({normalize_image(image) for image in found})


def image_data(pods: list[dict[str, Any]]) -> dict[str, Any]:
    tags: dict[str, set[str]] = defaultdict(set)
    for image in images(pods):
        repo, tag = split_image(image)
        tags[repo].add(tag)
    return {repo: ",".join(sorted(tags[repo])) for repo in sorted(tags)}
