"""Component values: the component's base values.yaml, its overlay valuesFile, the recipe's overrides,
then ``--set``/``--set-json`` (AICR's order). Fail closed: an override for a component that is not in
the recipe, or that would re-enable a disabled one, is an input error.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.merge import copy_tree, deep_merge

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_SEGMENT = re.compile(r"^(?P<key>[^\[\]]+)(?P<indexes>(\[[0-9]+\])*)$")


class Override(NamedTuple):
    """One ``--set``/``--set-json``: component (name or alias), value path, parsed value, how to apply."""

    component: str
    path: tuple[str | int, ...]
    value: Any
    merge: bool
    flag: str


def typed(text: str) -> Any:
    """A ``--set`` scalar as Helm types it: true/false, null, base-10 integers; anything else a string
    (leading zeros keep a string, as in Helm)."""
    if text in ("true", "false"):
        return text == "true"
    if text == "null":
        return None
    if _INT.match(text):
        return int(text)
    return text


def _parse_path(text: str, flag: str) -> tuple[str | int, ...]:
    path: list[str | int] = []
    for segment in text.split("."):
        match = _SEGMENT.match(segment)
        if not match:
            raise InvalidInputError(f"{flag}: bad value path {text!r}; use dotted keys such as driver.version, a[0].b")
        path.append(match["key"])
        path.extend(int(index) for index in re.findall(r"\[([0-9]+)\]", match["indexes"]))
    return tuple(path)


def parse(flag: str, text: str) -> Override:
    """``COMP:PATH=VALUE`` (``--set``) or ``COMP:PATH=JSON`` (``--set-json``)."""
    head, sep, raw = text.partition("=")
    component, colon, path = head.partition(":")
    if not sep or not colon or not component or not path:
        raise InvalidInputError(f"{flag} {text!r}: use COMPONENT:PATH=VALUE, e.g. gpu-operator:driver.enabled=false")
    if flag == "--set-json":
        import json

        try:
            value = json.loads(raw)
        except json.JSONDecodeError as err:
            raise InvalidInputError(f"{flag} {text!r}: value is not JSON ({err.msg} at column {err.colno})") from None
        return Override(component, _parse_path(path, flag), value, merge=True, flag=f"{flag} {text}")
    return Override(component, _parse_path(path, flag), typed(raw), merge=False, flag=f"{flag} {text}")


def _assign(values: Any, path: Sequence[str | int], value: Any, merge: bool, flag: str) -> Any:
    if not path:
        if merge and isinstance(value, Mapping) and isinstance(values, Mapping):
            return deep_merge(values, value)
        return copy_tree(value)
    head, rest = path[0], path[1:]
    if isinstance(head, int):
        items = list(values) if isinstance(values, list) else []
        if head > 10_000:
            raise InvalidInputError(f"{flag}: list index [{head}] is too large")
        items.extend([None] * (head + 1 - len(items)))  # padded like helm --set
        items[head] = _assign(items[head], rest, value, merge, flag)
        return items
    mapping = dict(values) if isinstance(values, Mapping) else {}
    mapping[head] = _assign(mapping.get(head), rest, value, merge, flag)
    return mapping


def resolve_names(overrides: Sequence[Override], refs: Sequence[Mapping[str, Any]],
                  aliases: Mapping[str, str]) -> list[Override]:
    """Map aliases to component names; an override for a component absent from the recipe is an error."""
    names = {ref["name"] for ref in refs}
    out: list[Override] = []
    for item in overrides:
        name = item.component if item.component in names else aliases.get(item.component, item.component)
        if name not in names:
            raise InvalidInputError(
                f"{item.flag}: component {item.component!r} is not in the recipe; "
                f"use one of {', '.join(sorted(names))}")
        out.append(Override(name, item.path, item.value, item.merge, item.flag))
    return out


def apply(values: Mapping[str, Any], overrides: Sequence[Override]) -> dict[str, Any]:
    """``values`` with the overrides of one component applied in order (later wins)."""
    result: dict[str, Any] = dict(values)
    for item in overrides:
        result = _assign(result, item.path, item.value, item.merge, item.flag)
    return result


def layered(files: Sequence[Mapping[str, Any]], overrides: Mapping[str, Any]) -> dict[str, Any]:
    """Base values, overlay values and the recipe's overrides, deep-merged in that order."""
    result: dict[str, Any] = {}
    for layer in [*files, overrides]:
        result = deep_merge(result, layer)
    return result
