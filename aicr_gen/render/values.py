"""Component values: the component's base values.yaml, its overlay valuesFile, the recipe's overrides, then
the bundle's own: ``--set`` (typed as AICR types it), the cluster's scheduling (``render/scheduling.py``), then
``--set-json``/``--set-file`` (maps deep-merged, a null deleting its key; lists and scalars replaced). Within
each kind, shallower paths first, then by path (AICR's pkg/component ``sortedOverridePaths``), the last value
given for a path winning. Fail closed: an override for a component that is not in the recipe, or that would
re-enable a disabled one, is an input error.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aicr_gen.errors import refusal
from aicr_gen.resolve.merge import copy_tree, deep_merge
from aicr_gen.spec.overrides import Override

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aicr_gen.errors import Where


def _merge_map(target: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` deep-merged into ``target`` as AICR merges --set-json maps: a null deletes its key."""
    out: dict[str, Any] = copy_tree(dict(target))
    for key, value in top.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            out[key] = _merge_map(out[key] if isinstance(out.get(key), Mapping) else {}, value)
        else:
            out[key] = copy_tree(value)
    return out


def _assign(values: Any, path: Sequence[str | int], value: Any, merge: bool, flag: Where) -> Any:
    if not path:
        if merge and isinstance(value, Mapping):
            return _merge_map(values if isinstance(values, Mapping) else {}, value)
        return copy_tree(value)
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = list(values) if isinstance(values, list) else []
        if head > 10_000:
            raise refusal(flag)(f"list index [{head}] is too large")
        items.extend([None] * (head + 1 - len(items)))  # padded like helm --set
        items[head] = _assign(items[head], rest, value, merge, flag)
        return items
    if values is not None and not isinstance(values, Mapping):
        raise refusal(flag)(f"the value path goes through a {type(values).__name__}, not a map; "
                            "set the parent key itself, or fix the path")
    mapping = dict(values or {})
    mapping[head] = _assign(mapping.get(head), rest, value, merge, flag)
    return mapping


def dotted(path: Sequence[str | int]) -> str:
    """A value path as the user writes it: ``a.b[0].c``."""
    text = ""
    for part in path:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else part)
    return text


def _ordered(overrides: Sequence[Override]) -> list[Override]:
    """The last override given for each path, shallower paths first, then by path (AICR's order)."""
    last = {item.path: item for item in overrides}
    return sorted(last.values(), key=lambda item: (dotted(item.path).count("."), dotted(item.path)))


def resolve_names(overrides: Sequence[Override], refs: Sequence[Mapping[str, Any]],
                  aliases: Mapping[str, str]) -> list[Override]:
    """Map aliases to component names; an override for a component absent from the recipe is an error. The
    overrides given by an alias come first, so for the same path the one given by the component's name wins,
    whatever their order (AICR's ``mergeOverridesAcrossKeys``)."""
    names = {ref["name"] for ref in refs}
    by_alias: list[Override] = []
    by_name: list[Override] = []
    for item in overrides:
        name = item.component if item.component in names else aliases.get(item.component, item.component)
        if name not in names:
            raise refusal(item.flag)(f"component {item.component!r} is not in the recipe; "
                                     f"use one of {', '.join(sorted(names))}")
        (by_name if name == item.component else by_alias).append(
            Override(name, item.path, item.value, item.merge, item.flag))
    return [*by_alias, *by_name]


def apply_sets(values: Mapping[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """``values`` with one component's values layers (path-less merges aicr-gen adds, such as the NVSentinel
    values, in order) and then its ``--set`` values."""
    result: dict[str, Any] = dict(values)
    for item in [item for item in overrides if not item.path]:
        result = deep_merge(result, item.value)  # as Helm layers values files
    for item in _ordered([item for item in overrides if item.path and not item.merge]):
        result = _assign(result, item.path, item.value, item.merge, item.flag)
    return result


def apply_typed(values: Mapping[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """``values`` with one component's ``--set-json``/``--set-file`` values."""
    result: dict[str, Any] = dict(values)
    for item in _ordered([item for item in overrides if item.path and item.merge]):
        result = _assign(result, item.path, item.value, item.merge, item.flag)
    return result


def apply(values: Mapping[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """``values`` with all of one component's overrides: layers, ``--set``, then the typed ones."""
    return apply_typed(apply_sets(values, overrides), overrides)


def merge_layer(target: Mapping[str, Any], top: Mapping[str, Any]) -> dict[str, Any]:
    """``top`` merged into ``target`` as AICR merges values files and recipe overrides (pkg/recipe
    ``mergeValues``): a null deletes its key; a map over a map merges; anything else is copied as it is."""
    out = dict(target)
    for key, value in top.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge_layer(out[key], value)
        else:
            out[key] = copy_tree(value)
    return out


def layered(files: Sequence[Mapping[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """The first values file as it is, then the other files and the recipe's overrides merged over it."""
    result: dict[str, Any] = copy_tree(dict(files[0])) if files else {}
    for layer in [*files[1:], overrides]:
        result = merge_layer(result, layer)
    return result
