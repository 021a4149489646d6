"""Query criteria: normalisation, and AICR's asymmetric matching against overlay criteria."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from aicr_gen.catalog.vocabulary import ALIASES, DIMENSIONS
from aicr_gen.errors import InvalidInputError

ANY = "any"
Query = dict[str, str]


class UnknownValueError(InvalidInputError):
    """A criterion value outside the vocabulary and the catalog; ``dim`` names the dimension."""

    def __init__(self, message: str, dim: str) -> None:
        super().__init__(message)
        self.dim = dim


def normalise(values: Mapping[str, str | None], extra: Mapping[str, set[str]] | None = None) -> Query:
    """Lower-case each dimension, map aliases, turn empty into ``any``. Values outside AICR's vocabulary
    are accepted only when the catalog's overlays use them (``extra``, AICR's criteria registry). An unknown
    value is refused listing the values the catalog uses (one no overlay names can never be covered), or
    the vocabulary without a catalog."""
    query: Query = {}
    for dim, builtin in DIMENSIONS.items():
        raw = (values.get(dim) or "").strip().lower()
        value = ALIASES.get(dim, {}).get(raw, raw)
        used = (extra or {}).get(dim, set())
        allowed = [*builtin, *sorted(used - set(builtin))]
        if value in ("", ANY):
            query[dim] = ANY
            continue
        if value not in allowed:
            listed = allowed if extra is None else [known for known in allowed if known in used]
            raise UnknownValueError(
                f"--{dim}: unknown {dim} {values.get(dim)!r}; use one of {', '.join(listed)} or any", dim)
        query[dim] = value
    return query


def catalog_values(overlays: Iterable[Mapping[str, Any]]) -> dict[str, set[str]]:
    """The criteria values the overlays use, per dimension."""
    found: dict[str, set[str]] = {dim: set() for dim in DIMENSIONS}
    for overlay in overlays:
        for dim in DIMENSIONS:
            value = value_of(overlay["spec"].get("criteria"), dim)
            if value != ANY:
                found[dim].add(value)
    return found


def value_of(criteria: Mapping[str, Any] | None, dim: str) -> str:
    """An overlay's value for ``dim``; absent or empty means ``any``."""
    value = (criteria or {}).get(dim)
    return str(value) if value else ANY


def matches(criteria: Mapping[str, Any] | None, query: Query) -> bool:
    """Asymmetric match: a wildcard overlay field takes any query value; a wildcard query field takes
    only wildcard overlay fields (so a generic query never picks hardware-specific overlays)."""
    for dim in DIMENSIONS:
        have = value_of(criteria, dim)
        if have != ANY and have != query[dim]:
            return False
    return True


def specificity(criteria: Mapping[str, Any] | None) -> int:
    """How many dimensions an overlay pins (wildcards do not count)."""
    return sum(value_of(criteria, dim) != ANY for dim in DIMENSIONS)


def describe(query: Query, nodes: int = 0) -> str:
    """``criteria(service=eks, accelerator=h100, nodes=4)``: the stated dimensions, as AICR prints them."""
    stated = [f"{dim}={query[dim]}" for dim in DIMENSIONS if query[dim] != ANY]
    stated += [f"nodes={nodes}"] if nodes else []
    return f"criteria({', '.join(stated) or 'any'})"
