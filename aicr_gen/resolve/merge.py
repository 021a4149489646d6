"""AICR's field-by-field merge rules for component refs, constraints and validation phases.

All functions take plain values and return new ones; inputs are never mutated.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    Ref = dict[str, Any]

SCALARS = ("namespace", "chart", "type", "source", "version", "tag", "path", "valuesFile", "healthCheckAsserts")
UNIONS = ("dependencyRefs", "manifestFiles", "preManifestFiles")
REPLACED = ("expectedResources", "patches")
SET_IF_TRUE = ("cleanup", "healthCheckSkip")


_SCALAR_TYPES = (str, int, float, bool, type(None))


def copy_tree(value: Any) -> Any:
    """A deep copy of plain data (maps, lists and scalars, as the YAML and JSON readers give them), several times
    faster than ``copy.deepcopy`` and without importing ``copy`` (~4 ms with weakref); anything else is
    ``copy.deepcopy``'s. A subtree shared in ``value`` is copied once per place, never shared in the copy."""
    kind = type(value)
    if kind is dict:
        return {key: copy_tree(item) for key, item in value.items()}
    if kind is list:
        return [copy_tree(item) for item in value]
    if kind in _SCALAR_TYPES:
        return value
    import copy

    return copy.deepcopy(value)


def is_empty(value: Any) -> bool:
    """AICR's zero values: an empty field neither overrides a merge nor appears in output."""
    return value is None or value is False or (isinstance(value, str | list | dict) and not value)


def deep_merge(base: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Maps merge key by key; any other value (lists included) from ``top`` replaces."""
    out: dict[str, Any] = copy_tree(dict(base))
    for key, value in top.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy_tree(value)
    return out


def _union(first: Iterable[str], second: Iterable[str]) -> list[str]:
    return list(dict.fromkeys([*first, *second]))


def merge_ref(base: Ref, top: Ref) -> Ref:
    """Merge ``top`` onto ``base`` (same component) following AICR's per-field rules."""
    out: Ref = copy_tree(base)
    for key in SCALARS:
        if top.get(key):
            out[key] = top[key]
    if top.get("overrides"):
        out["overrides"] = deep_merge(out.get("overrides", {}), top["overrides"])
    for key in UNIONS:
        if top.get(key):
            out[key] = _union(out.get(key, []), top[key])
    for key in REPLACED:
        if top.get(key):
            out[key] = copy_tree(top[key])
    for key in SET_IF_TRUE:
        if top.get(key):
            out[key] = True
    return out


def merge_refs(base: list[Ref], top: Iterable[Ref]) -> list[Ref]:
    """Merge component lists by name; new components are appended in order."""
    out = [copy_tree(ref) for ref in base]
    index = {ref["name"]: i for i, ref in enumerate(out)}
    for ref in top:
        if ref["name"] in index:
            out[index[ref["name"]]] = merge_ref(out[index[ref["name"]]], ref)
        else:
            index[ref["name"]] = len(out)
            out.append(copy_tree(ref))
    return out


def merge_constraints(base: list[dict[str, Any]], top: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Merge by name: a later constraint replaces the earlier one in place; new names are appended."""
    out = {item["name"]: item for item in base}
    for item in top:
        out[item["name"]] = copy_tree(item)
    return list(out.values())


def merge_validation(base: dict[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """Per phase: checks and constraints are unioned (absent inherits, ``[]`` clears);
    timeout, nodeSelection and infrastructure are replaced."""
    out: dict[str, Any] = copy_tree(base)
    for phase, spec in top.items():
        merged = out.get(phase, {})
        for key, value in spec.items():
            if key == "checks":
                merged[key] = _union(merged.get(key, []), value) if value else []
            elif key == "constraints":
                merged[key] = merge_constraints(merged.get(key, []), value) if value else []
            else:
                merged[key] = copy_tree(value)
        out[phase] = merged
    return out
