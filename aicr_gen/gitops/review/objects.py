"""The Kubernetes objects a merge changes in one deployer unit, as a reviewer reads them (pure: the objects of the
base and of the merge in, ``ObjectChange`` values out).

Objects are matched by (API group, kind, namespace, name); a namespaced object with no namespace gets the unit's
namespace, as ``helm template -n`` and the deployer's destination give it. Before they are compared, what would
change on every render or says nothing about the change is filtered out, and secrets are redacted (each rule is
listed in docs/pull-requests.md, "Plan: rendered objects"):

- labels ``helm.sh/chart``, ``app.kubernetes.io/version`` and ``chart`` (a chart's version stamped on every object;
  the change shows where the version is used: the image);
- annotations ``checksum/*`` (a digest of another template, changed whenever that one is),
  ``kubectl.kubernetes.io/last-applied-configuration`` and ``deployment.kubernetes.io/revision``;
- ``caBundle`` values and objects named by ``generateName`` (generated on every render and apply);
- Helm test hooks (``helm.sh/hook: test``, never applied by Argo CD or Flux);
- redacted: every value of a Secret's ``data`` and ``stringData`` and every value under a key that looks secret
  (``password``, ``token``, ``key``...: the words of ``changes.SECRET_WORDS``): shown as ``<redacted>``, or
  ``<redacted, changed>`` on the merge side when the value changes.

An object removed and one added of the same kind in one unit are a rename (same namespace) or a move (same name),
paired when their filtered bodies are similar (``SIMILAR``) — a reviewer must see that Argo CD or Flux deletes the
old object and creates the new one, not two unrelated changes.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from aicr_gen.modelcheck import Strict

NOISE_LABELS = frozenset({"helm.sh/chart", "app.kubernetes.io/version", "chart"})
NOISE_ANNOTATIONS = frozenset({"kubectl.kubernetes.io/last-applied-configuration", "deployment.kubernetes.io/revision"})
SIMILAR = 0.6  # difflib ratio of two bodies above which a removed and an added object are one renamed or moved
CONTEXT = 3  # lines of context around each change in an object's diff
REDACTED, CHANGED = "<redacted>", "<redacted, changed>"
CLUSTER_SCOPED = frozenset({
    "Namespace", "Node", "PersistentVolume", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding",
    "StorageClass", "CSIDriver", "CSINode", "VolumeAttachment", "PriorityClass", "RuntimeClass", "IngressClass",
    "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
    "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "MutatingAdmissionPolicy",
    "MutatingAdmissionPolicyBinding", "CertificateSigningRequest", "FlowSchema", "PriorityLevelConfiguration",
    "DeviceClass", "ResourceSlice", "GatewayClass", "ClusterIssuer", "VolumeSnapshotClass", "ClusterPolicy",
    "NVIDIADriver", "NodeFeatureRule", "NicClusterPolicy"})
"""Kinds without a namespace: Kubernetes' own, and the cluster-scoped custom kinds of the catalog's charts (a
CustomResourceDefinition in the render adds its kinds by its ``spec.scope``)."""


ChangeKind = Literal["added", "removed", "changed", "renamed", "moved"]


class ObjectChange(Strict, frozen=True):
    """One object added, removed, changed, renamed or moved by the merge."""

    apiVersion: str = Field(description="apiVersion after the merge (before, when removed)")
    kind: str = Field(description="Object kind")
    namespace: str = Field(description="Namespace; empty for a cluster-scoped object")
    name: str = Field(description="metadata.name after the merge (before, when removed)")
    change: ChangeKind = Field(
        description="renamed: deleted under its old name and created under this one; moved: the same name in "
                    "another namespace")
    was: str | None = Field(description="namespace/name at the base, for renamed and moved")
    diff: str = Field(description="Unified diff of the filtered, redacted object as YAML (base -> merge)")
    lines: int = Field(description="Lines the diff adds or removes")

    @property
    def ref(self) -> str:
        """``Kind namespace/name`` (``Kind name`` when cluster-scoped)."""
        return f"{self.kind} {self.namespace}/{self.name}" if self.namespace else f"{self.kind} {self.name}"


Key = tuple[str, str, str, str]  # API group, kind, namespace, name


def group_of(api_version: str) -> str:
    return api_version.rpartition("/")[0] if "/" in api_version else ""


def scoped_kinds(objects: Iterable[Mapping[str, Any]]) -> frozenset[str]:
    """``CLUSTER_SCOPED`` and the cluster-scoped kinds the CustomResourceDefinitions among ``objects`` define."""
    extra = {str(((item.get("spec") or {}).get("names") or {}).get("kind", "")) for item in objects
             if item.get("kind") == "CustomResourceDefinition" and (item.get("spec") or {}).get("scope") == "Cluster"}
    return CLUSTER_SCOPED | extra


def keyed(objects: Iterable[Mapping[str, Any]], namespace: str,
          cluster_scoped: frozenset[str] = CLUSTER_SCOPED) -> dict[Key, Mapping[str, Any]]:
    """The objects a deployer applies, by key, as rendered (``changes`` filters the noise; the upgrade checks
    need everything: a checksum annotation in a Job's template is an immutable change); later duplicates replace
    earlier ones as ``kubectl apply`` would apply both in order."""
    out: dict[Key, Mapping[str, Any]] = {}
    for item in objects:
        if not isinstance(item, Mapping) or not item.get("kind"):
            continue
        meta = item.get("metadata") or {}
        hook = str((meta.get("annotations") or {}).get("helm.sh/hook", ""))
        if "test" in hook.split(",") or hook.startswith("test") or (meta.get("generateName") and not meta.get("name")):
            continue
        kind = str(item["kind"])
        space = "" if kind in cluster_scoped else str(meta.get("namespace") or namespace)
        out[(group_of(str(item.get("apiVersion", ""))), kind, space, str(meta.get("name", "")))] = item
    return out


def filtered(item: Mapping[str, Any]) -> dict[str, Any]:
    """``item`` without the noise the module docstring lists (a new value; ``item`` is left as it is, and parts
    with no noise in them are shared, not copied)."""
    out = _quiet(item)
    return out if isinstance(out, dict) else dict(out)


def _quiet(value: Any) -> Any:
    """``value`` less its noise, rebuilding only the mappings and lists that hold some."""
    if isinstance(value, Mapping):
        out: dict[str, Any] | None = None
        for key, item in value.items():
            now = _quiet_meta(item) if key == "metadata" else \
                "<generated>" if key == "caBundle" and isinstance(item, str) else _quiet(item)
            if now is not item:
                out = dict(value) if out is None else out
                out[key] = now
        return value if out is None else out
    if isinstance(value, list):
        items = [_quiet(item) for item in value]
        return value if all(now is item for now, item in zip(items, value, strict=True)) else items
    return value


def _quiet_meta(meta: Any) -> Any:
    """Object metadata less its noisy labels and annotations (a field left empty is dropped)."""
    if not isinstance(meta, Mapping):
        return _quiet(meta)
    out: dict[str, Any] | None = None
    for field, noise in (("labels", NOISE_LABELS), ("annotations", NOISE_ANNOTATIONS)):
        found = meta.get(field)
        if isinstance(found, Mapping) and any(key in noise or str(key).startswith("checksum/") for key in found):
            kept = {key: item for key, item in found.items()
                    if key not in noise and not str(key).startswith("checksum/")}
            out = dict(meta) if out is None else out
            if kept:
                out[field] = kept
            else:
                del out[field]
    return meta if out is None else out


def redact(item: Mapping[str, Any], other: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """``item`` with its secrets replaced (module docstring); with ``other`` (the same object at the other side), a
    secret that differs there shows as ``<redacted, changed>``."""
    from aicr_gen.gitops.review.changes import secret_key

    def walk(value: Any, against: Any, secret: bool) -> Any:
        if isinstance(value, dict):
            return {key: walk(item, against.get(key) if isinstance(against, dict) else None,
                              secret or (isinstance(key, str) and secret_key(key))) for key, item in value.items()}
        if isinstance(value, list):
            return [walk(item, against[index] if isinstance(against, list) and index < len(against) else None,
                         secret) for index, item in enumerate(value)]
        if secret and not isinstance(value, bool) and value not in (None, "", {}, []):
            return CHANGED if other is not None and against != value else REDACTED
        return value

    out: dict[str, Any] = {}
    for key, value in item.items():
        against = other.get(key) if other is not None else None
        secret = item.get("kind") == "Secret" and key in ("data", "stringData")
        out[key] = walk(value, against, secret) if key not in ("apiVersion", "kind") else value
    return out


def _text(item: Mapping[str, Any]) -> list[str]:
    from aicr_gen.yaml.dump import dump

    return dump(dict(item)).splitlines(keepends=True)


def _diff(old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, label: str) -> tuple[str, int]:
    before = _text(redact(old, None)) if old is not None else []
    after = _text(redact(new, old)) if new is not None else []
    lines = list(difflib.unified_diff(before, after, f"a/{label}", f"b/{label}", n=CONTEXT))
    text = "".join(line if line.endswith("\n") else f"{line}\n" for line in lines)
    return text, sum(1 for line in lines if line[:1] in "+-" and not line.startswith(("+++", "---")))


def _body(item: Mapping[str, Any]) -> str:
    """An object without its name and namespace, to compare a removed with an added one."""
    meta = {key: value for key, value in (item.get("metadata") or {}).items() if key not in ("name", "namespace")}
    return "".join(_text({**item, "metadata": meta}))


def _paired(gone: Mapping[Key, Mapping[str, Any]],
            came: Mapping[Key, Mapping[str, Any]]) -> list[tuple[Key, Key]]:
    """Removed and added objects of one kind that are one object renamed or moved, most similar first."""
    pairs: list[tuple[float, Key, Key]] = []
    for old_key, old in gone.items():
        for new_key, new in came.items():
            if old_key[:2] != new_key[:2] or (old_key[2] != new_key[2] and old_key[3] != new_key[3]):
                continue
            ratio = difflib.SequenceMatcher(None, _body(old), _body(new), autojunk=False).ratio()
            if ratio >= SIMILAR:
                pairs.append((-ratio, old_key, new_key))
    taken: set[Key] = set()
    out: list[tuple[Key, Key]] = []
    for _ratio, old_key, new_key in sorted(pairs):
        if old_key not in taken and new_key not in taken:
            taken |= {old_key, new_key}
            out.append((old_key, new_key))
    return out


def changes(old: Mapping[Key, Mapping[str, Any]], new: Mapping[Key, Mapping[str, Any]]) -> list[ObjectChange]:
    """What differs between two keyed object sets (``keyed``) once the noise is filtered, biggest diffs first,
    then by kind and name."""
    out: list[ObjectChange] = []
    same = {key for key in old.keys() & new.keys() if old[key] == new[key]}  # equal as rendered: equal filtered
    old = {key: filtered(value) for key, value in old.items() if key not in same}
    new = {key: filtered(value) for key, value in new.items() if key not in same}
    gone = {key: value for key, value in old.items() if key not in new}
    came = {key: value for key, value in new.items() if key not in old}
    for old_key, new_key in _paired(gone, came):
        was, now = gone.pop(old_key), came.pop(new_key)
        kind: ChangeKind = "moved" if old_key[3] == new_key[3] else "renamed"
        out.append(_change(new_key, was, now, kind, f"{old_key[2]}/{old_key[3]}" if old_key[2] else old_key[3]))
    for key in sorted(set(old) & set(new)):
        if old[key] != new[key]:
            out.append(_change(key, old[key], new[key], "changed", None))
    out += [_change(key, value, None, "removed", None) for key, value in sorted(gone.items())]
    out += [_change(key, None, value, "added", None) for key, value in sorted(came.items())]
    return ordered(out)


def ordered(found: Iterable[ObjectChange]) -> list[ObjectChange]:
    """Object changes biggest diff first, then by kind, namespace, name and change."""
    return sorted(found, key=lambda item: (-item.lines, item.kind, item.namespace, item.name, item.change))


def _change(key: Key, old: Mapping[str, Any] | None, new: Mapping[str, Any] | None, change: ChangeKind,
            was: str | None) -> ObjectChange:
    shown = new if new is not None else old
    assert shown is not None
    label = f"{key[1]}/{key[2]}/{key[3]}" if key[2] else f"{key[1]}/{key[3]}"
    diff, lines = _diff(old, new, label)
    return ObjectChange(apiVersion=str(shown.get("apiVersion", "")), kind=key[1], namespace=key[2], name=key[3],
                        change=change, was=was, diff=diff, lines=lines)


def parse(texts: Sequence[str | bytes]) -> list[Mapping[str, Any]]:
    """The objects of YAML streams (``---`` separated), lists (``kind: List``) unrolled, empties dropped."""
    from aicr_gen.yaml.fast import mappings

    out: list[Mapping[str, Any]] = []
    for text in texts:
        for doc in mappings(text.encode() if isinstance(text, str) else text):
            if str(doc.get("kind", "")).endswith("List") and isinstance(doc.get("items"), list):
                out += [item for item in doc["items"] if isinstance(item, dict)]
            elif doc:
                out.append(doc)
    return out
