"""NVCRE Certification status as a report: conditions and categoryStatuses, plus the failed-nodes ConfigMaps
its categories reference (``failed-nodes.json.gz``: gzip JSON ``[{name, reason, message}]``;
``succeeded-nodes.csv.gz``: gzip CSV), in ``binaryData`` (base64) or ``data`` (base64 or plain text),
decompressed with a bound.
"""

from __future__ import annotations

import base64
import binascii
import re
import zlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from aicr_gen.certify.input_checks import input_error, json_loads, printable
from aicr_gen.certify.report_model import CategoryStatus, Certification, Condition, FailedNode, Report
from aicr_gen.errors import InvalidInputError, refusal
from aicr_gen.yaml import Document, FieldPath, decode, load_bytes, shorten

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.errors import Where

MAX_GUNZIP = 32 * 1024 * 1024
"""Bound on a decompressed node list: 10,000 failed nodes with long messages stay far below it."""

NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?\Z")
"""A Kubernetes node name (DNS-1123 subdomain)."""

_GROUPS = ("nvcre.nvidia.com/", "cre.nvidia.com/")
_CATEGORY_STATUSES = ("Pending", "InProgress", "Succeeded", "Failed")
FAILED_KEY = "failed-nodes.json.gz"
SUCCEEDED_KEY = "succeeded-nodes.csv.gz"


@dataclass(frozen=True, slots=True)
class NodeLists:
    """The node lists one results ConfigMap holds."""

    name: str
    namespace: str
    failed: tuple[FailedNode, ...] | None
    succeeded: tuple[str, ...] | None


def _items(doc: Document, kinds: tuple[str, ...], what: str) -> list[tuple[FieldPath, dict[str, Any]]]:
    """The objects of ``doc``: itself, or the items of a ``List``; each must be one of ``kinds``."""
    data = doc.data
    kind = data.get("kind")
    found: list[tuple[FieldPath, Any]] = [((), data)]
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        found = [(("items", i), item) for i, item in enumerate(data["items"])]
    for path, item in found:
        if not isinstance(item, dict) or item.get("kind") not in kinds:
            got = item.get("kind") if isinstance(item, dict) else type(item).__name__
            raise doc.error((*path, "kind"), f"kind {got!r} is not {what}; give "
                            f"`kubectl get {what.lower()} NAME -o yaml` output")
    return found


def _str(doc: Document, obj: Mapping[str, Any], path: FieldPath, key: str, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise doc.error((*path, key), "missing")
        return ""
    if not isinstance(value, str):
        raise doc.error((*path, key), f"expected a string, found {type(value).__name__}")
    return value


def _map(doc: Document, obj: Mapping[str, Any], path: FieldPath, key: str) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise doc.error((*path, key), f"expected a mapping, found {type(value).__name__}")
    return value


def _list(doc: Document, obj: Mapping[str, Any], path: FieldPath, key: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise doc.error((*path, key), f"expected a list, found {type(value).__name__}")
    return value


def _node_name(name: Any, where: Where) -> str:
    if not isinstance(name, str) or not NODE_NAME.match(name):
        shown = shorten(repr(name), 60)
        raise refusal(where)(f"{shown} is not a Kubernetes node name (lowercase letters, digits, '-' and '.')")
    return name


def _string_map(doc: Document, obj: Mapping[str, Any], path: FieldPath, key: str) -> dict[str, str]:
    out = _map(doc, obj, path, key)
    for name, value in out.items():
        if not isinstance(value, str):
            raise doc.error((*path, key, name), "expected a string")
    return out


def parse_certifications(raw: bytes, source: str) -> list[Certification]:
    """Every Certification (with status) in ``raw``: one object or a ``List`` (``kubectl get -o yaml``)."""
    doc = load_bytes(raw, source)
    return [certification_at(doc, path, item) for path, item in _items(doc, ("Certification",), "Certification")]


def certification_at(doc: Document, path: FieldPath, obj: dict[str, Any]) -> Certification:
    """The Certification ``obj`` at ``path`` of ``doc`` (errors name its fields there)."""
    api = _str(doc, obj, path, "apiVersion", required=True)
    if not api.startswith(_GROUPS):
        raise doc.error((*path, "apiVersion"), f"{api!r} is not an NVCRE Certification "
                        "(nvcre.nvidia.com/v1alpha1, or the older cre.nvidia.com/v1alpha1)")
    meta_path = (*path, "metadata")
    meta = _map(doc, obj, path, "metadata")
    name = _str(doc, meta, meta_path, "name", required=True)
    spec = _map(doc, obj, path, "spec")
    target = _map(doc, spec, (*path, "spec"), "target")
    target_path = (*path, "spec", "target", "nodeNames")
    names = target.get("nodeNames")
    target_nodes = None
    if names is not None:
        if not isinstance(names, list):
            raise doc.error(target_path, "expected a list of node names")
        target_nodes = tuple(_node_name(n, partial(doc.error, (*target_path, i))) for i, n in enumerate(names))
    status_path = (*path, "status")
    status = _map(doc, obj, path, "status")
    conditions = []
    for i, cond in enumerate(_list(doc, status, status_path, "conditions")):
        cpath = (*status_path, "conditions", i)
        if not isinstance(cond, dict):
            raise doc.error(cpath, "expected a mapping")
        conditions.append(Condition(type=_str(doc, cond, cpath, "type", required=True),
                                    status=_str(doc, cond, cpath, "status", required=True),
                                    reason=_str(doc, cond, cpath, "reason"), message=_str(doc, cond, cpath, "message"),
                                    changed=_str(doc, cond, cpath, "lastTransitionTime")))
    categories = []
    for i, cat in enumerate(_list(doc, status, status_path, "categoryStatuses")):
        cpath = (*status_path, "categoryStatuses", i)
        if not isinstance(cat, dict):
            raise doc.error(cpath, "expected a mapping")
        state = _str(doc, cat, cpath, "status", required=True)
        if state not in _CATEGORY_STATUSES:
            raise doc.error((*cpath, "status"), f"{shorten(state, 30)!r} is not one of "
                            + ", ".join(_CATEGORY_STATUSES))
        domain, variant = _str(doc, cat, cpath, "domain", True), _str(doc, cat, cpath, "variant", True)
        inline = cat.get("failedNodes")
        failed = None
        if inline is not None:
            if not isinstance(inline, list):
                raise doc.error((*cpath, "failedNodes"), "expected a list")
            failed = tuple(_failed_row(row, doc.where((*cpath, "failedNodes", j)), f"{domain}/{variant}")
                           for j, row in enumerate(inline))
        categories.append(CategoryStatus(
            domain=domain, variant=variant, status=state,
            failed_nodes_ref=_str(doc, _map(doc, cat, cpath, "failedNodesRef"), (*cpath, "failedNodesRef"), "name")
            or None,
            succeeded_nodes_ref=_str(doc, _map(doc, cat, cpath, "succeededNodesRef"), (*cpath, "succeededNodesRef"),
                                     "name") or None,
            failed_nodes=failed))
    return Certification(source=doc.source, name=name, namespace=_str(doc, meta, meta_path, "namespace"),
                         api_version=api, labels=_string_map(doc, meta, meta_path, "labels"),
                         annotations=_string_map(doc, meta, meta_path, "annotations"), spec=spec,
                         target_nodes=target_nodes, conditions=tuple(conditions), categories=tuple(categories),
                         line=doc.line_of(path), created=_str(doc, meta, meta_path, "creationTimestamp"))


def _failed_row(row: Any, where: str, category: str) -> FailedNode:
    if not isinstance(row, dict):
        raise input_error(where, f"expected {{name, reason, message}}, found {type(row).__name__}")
    name = _node_name(row.get("name"), f"{where}.name")
    texts = []
    for key in ("reason", "message"):
        value = row.get(key, "")
        if not isinstance(value, str):
            raise input_error(f"{where}.{key}", "expected a string")
        texts.append(printable(value, 500))
    return FailedNode(name=name, reason=texts[0], message=texts[1], category=category)


def parse_node_lists(raw: bytes, source: str, required: bool = True) -> list[NodeLists]:
    """The results ConfigMaps in ``raw`` (one ConfigMap or a ``List``) that hold NVCRE node lists; with
    ``required``, a file holding none is refused."""
    doc = load_bytes(raw, source)
    found = []
    for path, obj in _items(doc, ("ConfigMap",), "ConfigMap"):
        meta = _map(doc, obj, path, "metadata")
        name = _str(doc, meta, (*path, "metadata"), "name", required=True)
        failed: tuple[FailedNode, ...] | None = None
        succeeded: tuple[str, ...] | None = None
        for section in ("binaryData", "data"):
            for key, value in _map(doc, obj, path, section).items():
                where = doc.where((*path, section, key))
                kind = _node_list_kind(key)
                if kind is None:
                    continue
                payload = _payload(value, where, binary=section == "binaryData")
                if kind == "failed":
                    failed = (failed or ()) + _failed_list(payload, where)
                else:
                    succeeded = (succeeded or ()) + _succeeded_list(payload, where)
        if failed is not None or succeeded is not None:
            found.append(NodeLists(name=name, namespace=_str(doc, meta, (*path, "metadata"), "namespace"),
                                   failed=failed, succeeded=succeeded))
    if not found and required:
        raise input_error(source, f"no ConfigMap here holds {FAILED_KEY} or {SUCCEEDED_KEY}; give the ConfigMap a "
                    "Certification's status.categoryStatuses[].failedNodesRef names")
    return found


def _node_list_kind(key: str) -> str | None:
    if key in (FAILED_KEY, "failed-nodes.json"):
        return "failed"
    if key in (SUCCEEDED_KEY, "succeeded-nodes.csv"):
        return "succeeded"
    return None


def _payload(value: Any, where: str, binary: bool) -> bytes:
    """The bytes of a ConfigMap value: base64 (always in binaryData; in data unless it is plain JSON/CSV),
    gunzipped when it is gzip."""
    if not isinstance(value, str):
        raise input_error(where, f"expected a string, found {type(value).__name__}")
    text = value.strip()
    if binary or not (text[:1] in "[{" or text == "null"):
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            if binary:
                raise input_error(where, "binaryData is not valid base64") from None
            data = text.encode()
    else:
        data = text.encode()
    return _gunzip(data, where) if data[:2] == b"\x1f\x8b" else data


def _gunzip(data: bytes, where: str, limit: int = MAX_GUNZIP) -> bytes:
    """Decompress every gzip member of ``data`` (Go writes one, readers accept several), never beyond ``limit``."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out += inflater.decompress(data, limit + 1 - len(out))
        except zlib.error as err:
            raise input_error(where, f"not valid gzip ({err})") from None
        if len(out) > limit:
            raise input_error(where, f"decompresses to more than {limit} bytes (a gzip bomb?); refusing it")
        if not inflater.eof:
            raise input_error(where, "gzip data is truncated")
        data = inflater.unused_data.lstrip(b"\0")
    return bytes(out)


def _failed_list(payload: bytes, where: str) -> tuple[FailedNode, ...]:
    text = decode(payload, where)
    data = json_loads(text, where) if text.strip() else None
    if data is None:
        return ()
    if not isinstance(data, list):
        raise input_error(where, "expected a JSON array of {name, reason, message}")
    return tuple(_failed_row(row, f"{where}: [{i}]", "") for i, row in enumerate(data))


def _succeeded_list(payload: bytes, where: str) -> tuple[str, ...]:
    names = [part.strip() for part in decode(payload, where).replace("\n", ",").split(",")]
    return tuple(_node_name(name, f"{where}: entry {i + 1}") for i, name in enumerate(n for n in names if n))


def attach_node_lists(cert: Certification, lists: Sequence[NodeLists], require_match: bool = True) -> Certification:
    """``cert`` with each category's failed and succeeded nodes from the ConfigMaps its refs name.

    A certification without refs (inline lists, or a status written by hand) takes a lone failed-nodes
    ConfigMap as its own. ConfigMaps nothing refers to are ignored; with ``require_match``, lists none of
    which the Certification refers to are refused: they are the wrong file."""
    by_name = {nl.name: nl for nl in lists if not nl.namespace or not cert.namespace or nl.namespace == cert.namespace}
    refs = {ref for cat in cert.categories for ref in (cat.failed_nodes_ref, cat.succeeded_nodes_ref) if ref}
    if not refs:
        lone = [nl for nl in lists if nl.failed is not None]
        if len(lone) > 1:
            raise InvalidInputError(f"{cert.source}: Certification {cert.name} names no failed-nodes ConfigMap "
                                    f"(no categoryStatuses[].failedNodesRef) and --failed-nodes holds {len(lone)}; "
                                    "give the one that belongs to it")
        if not lone:
            return cert
        failed_at = [i for i, cat in enumerate(cert.categories) if cat.status == "Failed"]
        label = cert.categories[failed_at[0]].key if len(failed_at) == 1 else ""
        rows = tuple(replace(row, category=label) for row in lone[0].failed or ())
        if not cert.categories:
            return replace(cert, categories=(CategoryStatus("", "", "Failed", None, None, rows),))
        at = failed_at[0] if failed_at else 0
        return replace(cert, categories=tuple(replace(cat, failed_nodes=rows) if i == at else cat
                                              for i, cat in enumerate(cert.categories)))
    if require_match and lists and not refs & set(by_name):
        given = ", ".join(sorted(nl.name for nl in lists))
        raise InvalidInputError(f"{cert.source}: Certification {cert.name} refers to ConfigMap(s) "
                                f"{', '.join(sorted(refs))}; --failed-nodes holds {given}; give the right file")
    cats = []
    for cat in cert.categories:
        failed, succeeded = cat.failed_nodes, cat.succeeded_nodes
        if cat.failed_nodes_ref in by_name and by_name[cat.failed_nodes_ref].failed is not None:
            failed = tuple(replace(row, category=cat.key) for row in by_name[cat.failed_nodes_ref].failed or ())
        if cat.succeeded_nodes_ref in by_name:
            succeeded = by_name[cat.succeeded_nodes_ref].succeeded
        cats.append(replace(cat, failed_nodes=failed, succeeded_nodes=succeeded))
    return replace(cert, categories=tuple(cats))


def certification_report(cert: Certification) -> Report:
    """The report of one Certification (node lists attached or not)."""
    result, reasons = cert.result()
    return Report(kind="certification", source=cert.source, result=result, reasons=reasons, certification=cert)
