"""A ClusterSpec's recipe, as ``sync``, ``plan``, ``lint`` and ``diff --fleet`` resolve it: its catalog
layers (or the embedded catalog), the criteria resolved, spec.versions pinned, and with spec.pools the pools'
recipes merged (``gitops/pools.py``)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path as FilePath
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.spec.cluster import ClusterSpec, check_present, criteria_values


def open_spec_catalog(cluster: ClusterSpec, base: FilePath | None = None) -> Any:
    """The spec's catalog: its layers (relative to ``base``, the spec's folder; a missing one named at its line)
    or the embedded one."""
    from aicr_gen.catalog.load import open_catalog

    check_present(cluster, base or FilePath.cwd(), "catalogs")
    return open_catalog([str((base or FilePath.cwd()) / folder) for folder in cluster.spec.catalogs])


def resolve_spec(cluster: ClusterSpec, base: FilePath | None = None, catalog: Any = None) -> dict[str, Any]:
    """Resolve the spec's recipe from ``catalog`` (default: ``open_spec_catalog``); with spec.pools, the pools'
    recipes merged (``gitops.pools.resolve_pools``)."""
    from aicr_gen.resolve import recipe

    if catalog is None:
        catalog = open_spec_catalog(cluster, base)
    if cluster.spec.pools:
        from aicr_gen.gitops.pools import resolve_pools

        return resolve_pools(cluster, base, catalog).merged
    try:
        query = recipe.query_for(catalog, criteria_values(cluster))
        result: dict[str, Any] = recipe.resolve(catalog, query,
                                                recipe.Options(nodes=cluster.spec.criteria.nodes or 0))
    except InvalidInputError as err:
        raise InvalidInputError(f"{cluster.where(('spec', 'criteria'))}: {err}") from None
    return pin_versions(cluster, result)


def pin_versions(cluster: ClusterSpec, resolved: dict[str, Any]) -> dict[str, Any]:
    """``resolved`` with the spec's version pins (spec.versions) applied to its componentRefs; a pin naming a
    component the recipe does not have is an input error listing the ones it has."""
    if not cluster.spec.versions:
        return resolved
    return pinned(resolved, cluster.spec.versions, lambda name: cluster.where(("spec", "versions", name)),
                  "the recipe")


def pinned(resolved: dict[str, Any], versions: Mapping[str, str], where: Callable[[str], str],
           recipe: str) -> dict[str, Any]:
    """``resolved`` with ``versions`` (component -> version) applied to its componentRefs; a pin naming a
    component ``recipe`` does not have is an input error at ``where(name)`` listing the ones it has."""
    refs = resolved.get("componentRefs", [])
    names = sorted(str(ref.get("name")) for ref in refs)
    for name in versions:
        if name not in names:
            raise InvalidInputError(f"{where(name)}: {recipe} has no component {name!r}; pin one of "
                                    f"{', '.join(names)}")
    return {**resolved, "componentRefs": [{**ref, "version": versions[ref["name"]]} if ref.get("name") in versions
                                          else ref for ref in refs]}
