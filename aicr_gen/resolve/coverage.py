"""AICR's coverage post-condition: every stated criterion must be carried by an applied overlay.

A query whose stated value no applied overlay names would silently get a generic recipe; instead it is
rejected with the valid completions: the smallest sets of further criteria under which an overlay that
names the value would apply. Given a ``Trial`` (the resolver trying queries), the message names only the
completions that resolve, and adds the values of each uncovered criterion that resolve with the others
(``hint``): what a user can type next, proven.
"""

from __future__ import annotations

from typing import Any, Protocol

from aicr_gen.catalog.load import Catalog
from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.criteria import ANY, Query, catalog_values, describe, matches, value_of


class Trial(Protocol):
    """What a hint may suggest: values proven by resolving (the whole resolution, itself without hints)."""

    def resolves(self, query: Query) -> bool:
        """Whether ``query`` resolves."""

    def leaves(self) -> list[Query]:
        """The criteria of the catalog's leaf overlays."""


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


def resolvable(catalog: Catalog, query: Query, dim: str, trial: Trial) -> list[str]:
    """The values of ``dim`` (the catalog's, then ``any``) with which ``query`` resolves, its other criteria
    kept."""
    values = [*sorted(catalog_values(catalog.overlays.values())[dim]), ANY]
    return [value for value in values if value != query[dim] and trial.resolves({**query, dim: value})]


def hint(catalog: Catalog, query: Query, dims: list[str], trial: Trial | None, *, completed: bool = False,
         already: tuple[str, ...] = ()) -> str:
    """``; DIM values that resolve with the other criteria: ...`` for each of ``dims`` (nothing without a
    ``trial``, or when the message lists exactly those values ``already``). When no named value resolves as
    is and the message offers no completions (not ``completed``), the values of the leaves that agree with
    the other criteria follow: they resolve once those leaves' further criteria are given. Only values
    that resolved are ever named."""
    if trial is None:
        return ""
    parts = []
    for dim in dims:
        others = ", ".join(f"{d}={query[d]}" for d in DIMENSIONS if d != dim and query[d] != ANY)
        context = f"with {others}" if others else "without other criteria"
        found = resolvable(catalog, query, dim, trial)
        named = any(value != ANY for value in found)
        if (found and tuple(found) == already) or (completed and not named):
            continue  # nothing the message does not say already
        part = f"{dim} values that resolve {context}: {', '.join(found)}" if found else \
            f"no {dim} value resolves {context}"
        if named:
            parts.append(part)
            continue
        fitting = sorted({leaf[dim] for leaf in trial.leaves() if leaf[dim] not in (ANY, query[dim])
                          and all(leaf[d] == query[d] for d in DIMENSIONS if d != dim and query[d] != ANY)
                          and trial.resolves(leaf)})
        leaves = f"leaves with {others}" if others else "the leaves"
        if fitting:
            part += f"; {leaves} have {dim} {', '.join(fitting)} (give their other criteria too; " \
                    "'aicr-gen recipe list')"
        elif not found:
            part += f", and no leaf has {others or 'these criteria'}; change one of them ('aicr-gen recipe list')"
        parts.append(part)
    return "".join(f"; {part}" for part in parts)


def require_os(catalog: Catalog, query: Query, leaves: list[str], trial: Trial | None = None) -> None:
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
            f"specify an OS (valid: {', '.join(oses)})"
            + hint(catalog, query, ["os"], trial, completed=True, already=tuple(oses)))


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


def check(catalog: Catalog, query: Query, applied: list[str], nodes: int = 0, trial: Trial | None = None) -> None:
    """Raise ``CoverageError`` when a stated criterion is carried by no applied overlay: AICR's message (with
    its valid completions), then, given a ``trial``, the values of each uncovered criterion that resolve."""
    uncovered = _uncovered(catalog, query, applied)
    if not uncovered:
        return
    found = {dim: completions(catalog, query, dim) for dim in uncovered}
    # The message names only the completions that resolve (all of AICR's, when no trial can tell).
    shown = {dim: [c for c in found[dim] if trial is None or trial.resolves({**query, **c})] for dim in uncovered}
    message = "; ".join(_explain(query, dim, shown[dim], nodes) for dim in uncovered)
    message += "".join(hint(catalog, query, [dim], trial, completed=bool(shown[dim])) for dim in uncovered)
    raise CoverageError(message, uncovered, {dim: [_format(c) for c in found[dim]] for dim in uncovered})
