"""AICR snapshots (``kind: Snapshot``): the model, and loading one from a file, stdin or ``cm://NS/NAME``.

A snapshot is what ``aicr snapshot`` measured on a live cluster: measurement types (K8s, GPU, OS, SystemD,
NodeTopology, NetworkTopology), each a list of subtypes holding scalar readings. Real snapshots may omit
``kind``/``apiVersion`` (AICR's own test fixtures do, and AICR up to 0.22 reads them), so both are optional but
checked when present: ``aicr.run/v1`` (AICR >= 0.22) or ``aicr.run/v1alpha2`` (older AICR).

Loading is bounded: a gzip file (by magic bytes, whatever its name) expands to at most ``MAX_SNAPSHOT_BYTES``,
and every problem is an exit-2 error naming ``source:line: field.path``; a ConfigMap that cannot be read is
an exit-3 error (see ``aicr_gen.edges.kube``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from aicr_gen.edges.files import GZIP_MAGIC, MAX_SNAPSHOT_BYTES, gunzip
from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml import MAX_DEPTH, MAX_NODES, Document, FieldPath, format_path, load_text

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and pathlib are not imported on validate's path (~14 ms)
    from typing import Any

    from pydantic import BaseModel


SNAPSHOT_KIND = "Snapshot"
RECIPE_KIND = "RecipeResult"
API_VERSION = "aicr.run/v1"
"""What we write by default (ADR-022's 1.0 header); ``API_VERSIONS`` are the ones we read."""
API_VERSIONS = ("aicr.run/v1", "aicr.run/v1alpha2")
# Types that may appear more than once (one measurement per discovered hardware group).
MULTI_INSTANCE_TYPES = frozenset({"NetworkTopology"})


_MODELS: dict[str, type[BaseModel]] = {}
_MODEL_NAMES = ("Item", "Subtype", "Measurement", "Snapshot")


def _models() -> dict[str, type[BaseModel]]:
    """The pydantic models, built on first use: importing pydantic and building them costs ~90 ms, which the
    common case (a well-formed JSON snapshot, checked by ``_fast_snapshot``) never pays."""
    if _MODELS:
        return _MODELS
    from typing import Annotated, Any, Literal  # noqa: F401  (Any: pydantic resolves the annotations here)

    from pydantic import Field, PlainValidator, StrictStr, WithJsonSchema

    def _reading(value: Any) -> str | int | float | bool:
        if isinstance(value, str | int | float):  # bool is an int
            return value
        raise ValueError(f"a reading must be a string, number or boolean, not a {type(value).__name__}; "
                         "quote the value")

    Scalar = Annotated[str | int | float | bool, PlainValidator(_reading),
                       WithJsonSchema({"type": ["string", "number", "boolean"]})]
    # A reading: AICR serialises each measured value as a bare string, number or boolean.

    from aicr_gen.modelcheck import Strict as _Closed

    class Item(_Closed):
        """One ordered record of a subtype's ``items`` (e.g. one entry per NIC physical function)."""

        context: dict[str, StrictStr] | None = Field(None, description="Descriptive metadata for this item "
                                                                       "(strings)")
        data: dict[str, Scalar] | None = Field(None, description="Scalar readings of this item")

    class Subtype(_Closed):
        """A group of readings within a measurement, e.g. ``server`` or ``helm`` under ``K8s``."""

        subtype: StrictStr = Field(min_length=1, description="Subtype name, e.g. server, helm, release, "
                                                             "containerd.service")
        data: dict[str, Scalar] | None = Field(None, description="Readings: key to string, number or boolean, "
                                                                 "e.g. version: v1.33.0")
        context: dict[str, Any] | None = Field(None, description="Free-form metadata on how the readings were "
                                                                 "collected")
        items: list[Item] | None = Field(None, description="Ordered structured records, independent of data")

    class Measurement(_Closed):
        """All subtypes of one measurement type."""

        type: StrictStr = Field(min_length=1, description="Measurement type: K8s, GPU, OS, SystemD, "
                                                          "NodeTopology or NetworkTopology (newer AICR types "
                                                          "are accepted)")
        subtypes: list[Subtype] = Field(description="The subtypes measured for this type")

    class Snapshot(_Closed):
        """A cluster snapshot as written by ``aicr snapshot`` (kind Snapshot, aicr.run/v1 or aicr.run/v1alpha2)."""

        kind: Literal["Snapshot"] | None = Field(None, description="Snapshot when present (AICR may omit it)")
        apiVersion: Literal["aicr.run/v1", "aicr.run/v1alpha2"] | None = Field(
            None, description="aicr.run/v1 (AICR >= 0.22) or aicr.run/v1alpha2 (older AICR) when present")
        metadata: dict[str, Any] | None = Field(None, description="Free-form metadata: timestamp, version, "
                                                                  "source-node, ...")
        fingerprint: dict[str, Any] | None = Field(None, description="Advisory cluster identity (service, "
                                                                     "accelerator, os, k8sVersion, ... each "
                                                                     "{value, source}); recomputable from "
                                                                     "the measurements")
        measurements: list[Measurement] = Field(description="What was measured, grouped by type")

    _MODELS.update(Item=Item, Subtype=Subtype, Measurement=Measurement, Snapshot=Snapshot)
    return _MODELS


def __getattr__(name: str) -> Any:
    """``Snapshot``, ``Measurement``, ``Subtype`` and ``Item`` are built lazily (see ``_models``)."""
    if name in _MODEL_NAMES:
        return _models()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# ---------------------------------------------------------------- public API


def is_recipe(doc_data: Any) -> bool:
    """True when ``doc_data`` is a recipe (``kind: RecipeResult``) rather than a snapshot."""
    return isinstance(doc_data, dict) and doc_data.get("kind") == RECIPE_KIND


def check_recipe_header(doc: Document) -> None:
    """A recipe's apiVersion is one of either generation's (``catalog.headers``), named with its line."""
    from aicr_gen.catalog import headers

    try:
        headers.check(doc, RECIPE_KIND)
    except InvalidInputError:
        headers.check(located(doc), RECIPE_KIND)
        raise


def validate_snapshot(doc: Document) -> dict[str, Any]:
    """Check a loaded document against the Snapshot model and for repeated types/subtypes.

    Every document is first checked structurally by ``_fast_snapshot`` (the model's rules in plain Python:
    importing pydantic and building the models costs more than parsing a 256-node snapshot); only when that
    cannot decide does the pydantic model check it and explain the problem. A document from the JSON fast
    path has no line numbers: it is re-parsed through the YAML loader before any message is written, so the
    error names ``file:line`` exactly as before."""
    try:
        data = _fast_snapshot(doc.data)
    except _Fallback:
        from aicr_gen.modelcheck import check

        doc = located(doc)
        data = check(doc, _models()["Snapshot"]).model_dump(exclude_none=True)
    return _check_repeats(doc, data)


def _check_repeats(doc: Document, data: dict[str, Any]) -> dict[str, Any]:
    seen_types: dict[str, int] = {}
    for index, measurement in enumerate(data["measurements"]):
        kind = measurement["type"]
        if kind in seen_types and kind not in MULTI_INSTANCE_TYPES:
            raise located(doc).error(("measurements", index, "type"), "measurement type "
                                     f"{kind!r} repeats measurements[{seen_types[kind]}]; merge their subtypes")
        seen_types.setdefault(kind, index)
        seen_subtypes: dict[str, int] = {}
        for position, subtype in enumerate(measurement["subtypes"]):
            name = subtype["subtype"]
            if name in seen_subtypes:
                path = ("measurements", index, "subtypes", position, "subtype")
                raise located(doc).error(path, f"subtype {name!r} repeats "
                                         f"{format_path(path[:2])}.subtypes[{seen_subtypes[name]}]; merge them")
            seen_subtypes[name] = position
    return data


# ---------------------------------------------------------------- reading


def parse_bytes(raw: bytes, source: str) -> Document:
    if len(raw) > MAX_SNAPSHOT_BYTES:
        raise InvalidInputError(f"{source}:1: over the {MAX_SNAPSHOT_BYTES // (1024 * 1024)} MiB snapshot limit")
    if raw.startswith(GZIP_MAGIC):
        raw = gunzip(raw, source)
    text = _decode(raw, source)
    fast = _load_json(text, source) if text.lstrip(" \t\r\n").startswith("{") else None
    doc = fast if fast is not None else load_text(text, source)
    if not isinstance(doc.data, dict):
        raise InvalidInputError(f"{source}:1: the document root is a {type(doc.data).__name__}; "
                                "a snapshot mapping (measurements: ...) is expected")
    return doc


def _decode(raw: bytes, source: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise InvalidInputError.at(Located(source, line, f"not valid UTF-8 (byte {err.start}); save the file as "
                                                          "UTF-8")) from None


# ---------------------------------------------------------------- fast paths: JSON text, plain-Python model check
#
# AICR writes snapshots as JSON as often as YAML; ruamel composes a 1 MB JSON document in ~0.2 s, json.loads in a
# few ms. The fast path accepts only what the YAML loader plus the Snapshot model would accept with the same
# result; anything else (a syntax error, duplicate key, NaN, too deep or too many nodes, a model violation) is
# re-read by the YAML path, which refuses it with its usual ``file:line`` message.


class _Fallback(Exception):
    """The fast path cannot decide; use the YAML loader (for JSON text) and the pydantic model."""


class _JsonText(Mapping[FieldPath, int]):
    """The ``lines`` of a document parsed by ``json.loads``: none known, but the text, for the YAML loader to
    re-read when a message needs them (``_located``). Not a ``Document`` subclass: whatever ``Document`` is built
    with (a dataclass costs an import of ``dataclasses``), a document from either path is one."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __getitem__(self, path: FieldPath) -> int:
        raise KeyError(path)

    def __iter__(self) -> Iterator[FieldPath]:
        return iter(())

    def __len__(self) -> int:
        return 0


def located(doc: Document) -> Document:
    """``doc`` with line numbers (re-parsed by the YAML loader when it came from the JSON fast path)."""
    return load_text(doc.lines.text, doc.source) if isinstance(doc.lines, _JsonText) else doc


def _unique_pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Fallback("duplicate key")
    return out


def _no_constant(name: str) -> Any:
    raise _Fallback(f"{name} is not JSON")


def _load_json(text: str, source: str) -> Document | None:
    """The document parsed as strict JSON, or None when the YAML loader must decide (and report)."""
    import gc
    import json  # here: a YAML snapshot needs none

    # as the YAML loader: parsing allocates an object per value and none can form a cycle, so collections would
    # find nothing to free (~10% of reading a large snapshot)
    collecting = gc.isenabled()
    gc.disable()
    try:
        data = json.loads(text, object_pairs_hook=_unique_pairs, parse_constant=_no_constant)
    except (_Fallback, ValueError, RecursionError):  # JSONDecodeError is a ValueError (so is a huge int)
        return None
    finally:
        if collecting:
            gc.enable()
    if not _bounded(data):
        return None
    return Document(source=source, data=data, lines=_JsonText(text))


def _bounded(data: Any) -> bool:
    """Within the YAML loader's bounds: at most MAX_NODES values, none nested deeper than MAX_DEPTH."""
    nodes, depth, level = 0, 0, [data]
    while level:
        nodes += len(level)
        if nodes > MAX_NODES or depth > MAX_DEPTH:
            return False
        below: list[Any] = []
        for value in level:
            if type(value) is dict:
                below.extend(value.values())
            elif type(value) is list:
                below.extend(value)
        level, depth = below, depth + 1
    return True


_SNAPSHOT_FIELDS = frozenset({"kind", "apiVersion", "metadata", "fingerprint", "measurements"})
_MEASUREMENT_FIELDS = frozenset({"type", "subtypes"})
_SUBTYPE_FIELDS = frozenset({"subtype", "data", "context", "items"})
_ITEM_FIELDS = frozenset({"context", "data"})
# ``issuperset(map(type, values))`` checks every value's exact type without a Python-level loop.
_READING_TYPES = frozenset({str, int, float, bool})
_TEXT_TYPES = frozenset({str})


def _name(value: Any) -> str:
    if type(value) is not str or not value:
        raise _Fallback("not a non-empty string")
    return value


def _mapping(value: Any) -> dict[str, Any]:
    if type(value) is not dict:
        raise _Fallback("not a mapping")
    return value


def _readings(value: Any) -> dict[str, Any]:
    if type(value) is not dict or not _READING_TYPES.issuperset(map(type, value.values())):
        raise _Fallback("not readings")
    return value


def _fast_snapshot(data: Any) -> dict[str, Any]:
    """``Snapshot.model_validate(data).model_dump(exclude_none=True)`` for loaded (JSON or YAML) data, without
    pydantic; ``_Fallback`` for anything the model might refuse (the model then decides and explains). Types
    are checked exactly (``type(x) is dict``), so anything but the plain values our loaders build falls back.

    The model's dump is rebuilt level by level (its field order, unset fields left out), but mappings of readings
    and free-form metadata are the loaded objects themselves: nothing changes a loaded document afterwards, so
    the copies the model makes would only cost time."""
    snapshot = _mapping(data)
    if not snapshot.keys() <= _SNAPSHOT_FIELDS:
        raise _Fallback("unknown field")
    out: dict[str, Any] = {}
    for field, wanted in (("kind", (SNAPSHOT_KIND,)), ("apiVersion", API_VERSIONS)):
        value = snapshot.get(field)
        if value is not None:
            if type(value) is not str or value not in wanted:
                raise _Fallback(field)
            out[field] = value
    for field in ("metadata", "fingerprint"):
        value = snapshot.get(field)
        if value is not None:
            out[field] = _mapping(value)
    measurements = snapshot.get("measurements")
    if type(measurements) is not list:
        raise _Fallback("measurements")
    out["measurements"] = [_fast_measurement(measurement) for measurement in measurements]
    return out


def _fast_measurement(value: Any) -> dict[str, Any]:
    measurement = _mapping(value)
    subtypes = measurement.get("subtypes")
    if not measurement.keys() <= _MEASUREMENT_FIELDS or type(subtypes) is not list:
        raise _Fallback("measurement")
    return {"type": _name(measurement.get("type")), "subtypes": [_fast_subtype(sub) for sub in subtypes]}


def _fast_subtype(value: Any) -> dict[str, Any]:
    sub = _mapping(value)
    if not sub.keys() <= _SUBTYPE_FIELDS:
        raise _Fallback("subtype")
    out: dict[str, Any] = {"subtype": _name(sub.get("subtype"))}
    data = sub.get("data")
    if data is not None:
        out["data"] = _readings(data)
    context = sub.get("context")
    if context is not None:
        out["context"] = _mapping(context)
    items = sub.get("items")
    if items is not None:
        if type(items) is not list:
            raise _Fallback("items")
        out["items"] = [_fast_item(item) for item in items]
    return out


def _fast_item(value: Any) -> dict[str, Any]:
    if type(value) is not dict or not value.keys() <= _ITEM_FIELDS:
        raise _Fallback("item")
    out: dict[str, Any] = {}
    context = value.get("context")
    if context is not None:
        if type(context) is not dict or not _TEXT_TYPES.issuperset(map(type, context.values())):
            raise _Fallback("item context")
        out["context"] = context
    data = value.get("data")
    if data is not None:
        out["data"] = _readings(data)
    return out
