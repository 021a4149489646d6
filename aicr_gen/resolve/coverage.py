"""AICR's coverage post-condition: every stated criterion must be carried by an applied overlay.

A query whose stated value no applied overlay names would silently get a generic recipe; instead it is
rejected with the valid completions: the smallest sets of further criteria under which an overlay that
names the value would apply.
"""

from __future__ import annotations

from typing import Any

from aicr_gen.catalog.load import Catalog
from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.criteria import ANY, Query, describe, matches, value_of


class CoverageError(InvalidInputError):
    """Uncovered criteria, with the completions that would make each one resolvable."""

    def __init__(self, message: str, uncovered: list[str], completions: dict[str, list[str]]) -> None:
        super().__init__(message)
        self.uncovered = uncovered
        self.completions = completions


def _compatible(crit: dict[str, Any] | None, query: Query) -> bool:
    """The overlay could apply once the query's wildcards are filled in."""
    return all(value_of(crit, dim) in (ANY, query[dim]) or query[dim] == ANY for dim in DIMENSIONS)


def completions(catalog: Catalog, query: Query, dim: str) -> list[dict[str, str]]:
    """Minimal extra criteria under which an overlay naming ``query[dim]`` applies."""
    found: list[dict[str, str]] = []
    for overlay in catalog.overlays.values():
        crit = overlay["spec"].get("criteria")
        if value_of(crit, dim) != query[dim] or not _compatible(crit, query):
            continue
        extra = {d: value_of(crit, d) for d in DIMENSIONS
                 if d != dim and query[d] == ANY and value_of(crit, d) != ANY}
        if extra not in found:
            found.append(extra)
    minimal = [c for c in found
               if c and not any(o != c and o.items() <= c.items() for o in found)]
    return sorted(minimal, key=lambda c: (len(c), _format(c)))


def _format(completion: dict[str, str]) -> str:
    return ", ".join(f"{dim}={value}" for dim, value in completion.items())


def _uncovered(catalog: Catalog, query: Query, applied: list[str]) -> list[str]:
    carried = {(dim, value_of(catalog.overlays[name]["spec"].get("criteria"), dim))
               for name in applied for dim in DIMENSIONS}
    return [dim for dim in DIMENSIONS if query[dim] != ANY and (dim, query[dim]) not in carried]


def require_os(catalog: Catalog, query: Query, leaves: list[str]) -> None:
    """The OS guard: a stated service without an OS is rejected when no matched leaf serves that service
    and accelerator OS-agnostically, but naming an OS would reach an overlay."""
    if query["service"] == ANY or query["os"] != ANY:
        return
    accelerator = "" if query["accelerator"] == ANY else query["accelerator"]
    for leaf in leaves:
        crit = catalog.overlays[leaf]["spec"].get("criteria")
        leaf_accelerator = value_of(crit, "accelerator")
        if value_of(crit, "service") == query["service"] and (
                "" if leaf_accelerator == ANY else leaf_accelerator) == accelerator:
            return
    oses = sorted({value_of(o["spec"].get("criteria"), "os") for o in catalog.overlays.values()
                   if "criteria" in o["spec"] and value_of(o["spec"]["criteria"], "os") != ANY
                   and matches(o["spec"]["criteria"], {**query, "os": value_of(o["spec"]["criteria"], "os")})})
    if oses:
        raise InvalidInputError(
            f"service {query['service']!r} has no OS-agnostic recipe for accelerator {accelerator!r}; "
            f"specify an OS (valid: {', '.join(oses)})")


def _explain(query: Query, dim: str, options: list[dict[str, str]], nodes: int) -> str:
    dims = {d for option in options for d in option}
    if not options:
        return f"no recipe provides {dim} {query[dim]!r} for {describe(query, nodes)}"
    if len(dims) == 1 and all(len(option) == 1 for option in options):
        missing = next(iter(dims))
        values = ", ".join(sorted(option[missing] for option in options))
        return f"{dim} {query[dim]!r} for {describe(query, nodes)} requires {missing} (valid: {values})"
    combos = ", ".join(f"({_format(option)})" for option in options)
    return f"{dim} {query[dim]!r} requires additional criteria; supported combinations: {combos}"


def check(catalog: Catalog, query: Query, applied: list[str], nodes: int = 0) -> None:
    """Raise ``CoverageError`` when a stated criterion is carried by no applied overlay."""
    uncovered = _uncovered(catalog, query, applied)
    if not uncovered:
        return
    found = {dim: completions(catalog, query, dim) for dim in uncovered}
    message = "; ".join(_explain(query, dim, found[dim], nodes) for dim in uncovered)
    raise CoverageError(message, uncovered, {dim: [_format(c) for c in found[dim]] for dim in uncovered})
