"""A ClusterSpec's recipe, as ``sync``, ``plan``, ``lint`` and ``diff --fleet`` resolve it: its catalog
layers (or the embedded catalog), the criteria resolved, spec.versions pinned, and with spec.pools the pools'
recipes merged (``gitops/trees/pools.py``)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.spec.cluster import ClusterSpec, Pool, criteria_values
from aicr_gen.spec.pools import pool_tolerations
from aicr_gen.spec.validate import check_present

if TYPE_CHECKING:
    from aicr_gen.resolve.pools import Resolution


def open_spec_catalog(cluster: ClusterSpec, base: Path | None = None) -> Any:
    """The spec's catalog: its layers (relative to ``base``, the spec's folder; a missing one named at its line)
    or the embedded one."""
    from aicr_gen.catalog.load import open_catalog

    check_present(cluster, base or Path.cwd(), "catalogs")
    return open_catalog([str((base or Path.cwd()) / folder) for folder in cluster.spec.catalogs])


def resolve_spec(cluster: ClusterSpec, base: Path | None = None, catalog: Any = None) -> dict[str, Any]:
    """Resolve the spec's recipe from ``catalog`` (default: ``open_spec_catalog``); with spec.pools, the pools'
    recipes merged (``resolve_pools``)."""
    from aicr_gen.resolve import recipe

    if catalog is None:
        catalog = open_spec_catalog(cluster, base)
    if cluster.spec.pools:
        return resolve_pools(cluster, base, catalog).merged
    try:
        query = recipe.query_for(catalog, criteria_values(cluster))
        result: dict[str, Any] = recipe.resolve(catalog, query,
                                                recipe.Options(nodes=cluster.spec.criteria.nodes or 0))
    except InvalidInputError as err:
        raise cluster.error(("spec", "criteria"), str(err)) from None
    return pin_versions(cluster, result)


def pin_versions(cluster: ClusterSpec, resolved: dict[str, Any]) -> dict[str, Any]:
    """``resolved`` with the spec's version pins (spec.versions) applied to its componentRefs; a pin naming a
    component the recipe does not have is an input error listing the ones it has."""
    if not cluster.spec.versions:
        return resolved
    return pinned(resolved, cluster.spec.versions, lambda name, message: cluster.error(("spec", "versions", name),
                                                                                       message), "the recipe")


def pinned(resolved: dict[str, Any], versions: Mapping[str, str], error: Callable[[str, str], InvalidInputError],
           recipe: str) -> dict[str, Any]:
    """``resolved`` with ``versions`` (component -> version) applied to its componentRefs; a pin naming a
    component ``recipe`` does not have is an input error (``error(name, message)``, at the pin) listing the ones
    it has."""
    refs = resolved.get("componentRefs", [])
    names = sorted(str(ref.get("name")) for ref in refs)
    for name in versions:
        if name not in names:
            raise error(name, f"{recipe} has no component {name!r}; pin one of {', '.join(names)}")
    return {**resolved, "componentRefs": [{**ref, "version": versions[ref["name"]]} if ref.get("name") in versions
                                          else ref for ref in refs]}


def pool_criteria(criteria: Mapping[str, str | None], pool: Pool) -> dict[str, str | None]:
    """A pool's recipe criteria: the cluster's (``criteria``, dimension -> value) with the pool's accelerator and,
    when it gives one, its OS."""
    return {**criteria, "accelerator": pool.accelerator, "os": pool.os or criteria.get("os")}


def _overridden(resolved: dict[str, Any], pool: Pool, aliases: Mapping[str, str]) -> dict[str, Any]:
    """The pool's recipe with its spec.pools[].overrides written into its components' overrides."""
    from aicr_gen.render.values import apply, resolve_names
    from aicr_gen.spec.overrides import parse
    if pool.overrides is None:
        return resolved
    parsed = [parse("--set", text) for text in pool.overrides.set]
    parsed += [parse("--set-json", text) for text in pool.overrides.setJson]
    items = resolve_names(parsed, resolved["componentRefs"], aliases)
    refs = [{**ref, "overrides": apply(ref.get("overrides") or {}, [item for item in items
                                                                     if item.component == ref["name"]])}
            if any(item.component == ref["name"] for item in items) else ref for ref in resolved["componentRefs"]]
    return {**resolved, "componentRefs": refs}


def _decided(cluster: ClusterSpec, aliases: Mapping[str, str]) -> dict[str, list[tuple[str, ...]]]:
    """Per component, the value paths spec.overrides sets for the whole cluster (up to a list index)."""
    from aicr_gen.spec.overrides import parse
    overrides = cluster.spec.overrides
    if overrides is None:
        return {}
    found: dict[str, list[tuple[str, ...]]] = {}
    for flag, texts in (("--set", overrides.set), ("--set-json", overrides.setJson)):
        for text in texts:
            item = parse(flag, text)
            path: list[str] = []
            for part in item.path:
                if isinstance(part, int):
                    break
                path.append(part)
            found.setdefault(aliases.get(item.component, item.component), []).append(tuple(path))
    return found


def _pin_error(cluster: ClusterSpec, index: int, name: str, message: str) -> InvalidInputError:
    return cluster.error(("spec", "pools", index, "versions", name), message)


def resolve_pools(cluster: ClusterSpec, base: Path | None = None, catalog: Any = None) -> Resolution:
    """Each pool's recipe (the cluster's criteria with its accelerator and OS, spec.versions then the pool's
    versions, the pool's overrides), merged (``resolve.pools.merge``); reads the catalog's values files."""
    from aicr_gen.catalog.load import read_files
    from aicr_gen.render.plan import component_values, parse_values
    from aicr_gen.resolve import recipe
    from aicr_gen.resolve.pools import PoolRecipe, merge
    from aicr_gen.spec.cluster import criteria_values
    if catalog is None:
        catalog = open_spec_catalog(cluster, base)
    aliases = {alias: name for name, entry in catalog.registry.items() for alias in entry.get("valueOverrideKeys", [])}
    cluster_criteria = criteria_values(cluster)
    scheduling = cluster.spec.scheduling
    # a pool's nodes are accelerated nodes: the cluster's GPU selector and tolerations hold for its driver too
    accelerated = dict(scheduling.acceleratedNodeSelector) if scheduling else {}
    cluster_tolerations = list(scheduling.acceleratedNodeTolerations) if scheduling else []
    recipes: list[PoolRecipe] = []
    for index, pool in enumerate(cluster.spec.pools):
        try:
            query = recipe.query_for(catalog, pool_criteria(cluster_criteria, pool))
            resolved = recipe.resolve(catalog, query, recipe.Options(nodes=pool.nodes or 0))
        except InvalidInputError as err:
            raise cluster.error(("spec", "pools", index), f"pool {pool.name!r} ({pool.accelerator}): {err}") from None
        resolved = pin_versions(cluster, resolved)
        resolved = pinned(resolved, pool.versions, functools.partial(_pin_error, cluster, index), "the pool's recipe")
        try:
            resolved = _overridden(resolved, pool, aliases)
        except InvalidInputError as err:
            raise cluster.error(("spec", "pools", index, "overrides"), str(err)) from None
        recipes.append(PoolRecipe(pool.name, {**accelerated, **pool.nodeSelector}, resolved,
                                  pool_tolerations(pool.tolerations or cluster_tolerations)))
    wanted = sorted({rel for item in recipes for ref in item.recipe["componentRefs"]
                     for rel in (f"components/{ref['name']}/values.yaml", ref.get("valuesFile")) if rel})
    sources = read_files(catalog, wanted)
    parsed = {rel: parse_values(rel, data) for rel, data in sources.items()}
    nodes = sum(pool.nodes or 0 for pool in cluster.spec.pools)
    criteria = {key: value for key, value in recipes[0].recipe["criteria"].items()
                if key not in ("accelerator", "nodes", "os")}
    oses = {item.recipe["criteria"].get("os") for item in recipes}
    criteria |= {"os": oses.pop()} if len(oses) == 1 else {}
    criteria |= {"nodes": nodes} if nodes else {}
    try:
        return merge(recipes, lambda ref: component_values(ref, sources, parsed), decided=_decided(cluster, aliases),
                     criteria=criteria)
    except InvalidInputError as err:
        raise cluster.error(("spec", "pools"), str(err)) from None
