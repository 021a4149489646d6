"""GPU node pools of a ClusterSpec (``spec.pools``): the checks a schema cannot express, and each pool's criteria.

Two pools must never select one node: the GPU Operator (v26.3.x, what the catalog pins) reports a node that two
NVIDIADrivers select as a conflict and installs neither driver. A ``nodeSelector`` is a conjunction of label
equalities, so two selectors can both match one node unless they require different values of one label:
**two selectors are disjoint iff some key appears in both with different values.** Anything else (no shared key,
or shared keys with equal values) can overlap on a node that carries both sets of labels, and is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.yamlio import Document

if TYPE_CHECKING:
    from aicr_gen.gitops.spec import ClusterSpec, Pool, Spec
    from aicr_gen.resolve.pools import Resolution

OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"
"""The label the operator sets on each GPU node to record its NVIDIADriver; a selector on it is rejected."""


def disjoint(first: Mapping[str, str], second: Mapping[str, str]) -> bool:
    """Whether no node can match both equality selectors: some key is in both with different values."""
    return any(key in second and second[key] != value for key, value in first.items())


def check_pools(doc: Document, spec: Spec) -> None:
    """spec.pools: no cluster accelerator beside them, unique names, pool overrides that parse, no selector on
    the operator's owner label, and pairwise disjoint node selectors (the first overlap names both pools)."""
    from aicr_gen.render.values import parse

    if spec.criteria.accelerator not in (None, ""):
        raise InvalidInputError(f"{doc.where(('spec', 'criteria', 'accelerator'))}: with spec.pools each pool names "
                                "its accelerator; drop spec.criteria.accelerator (criteria hold the cluster-wide "
                                "service, intent, os and platform)")
    for index, pool in enumerate(spec.pools):
        base = ("spec", "pools", index)
        twin = next((other for other in spec.pools[:index] if other.name == pool.name), None)
        if twin is not None:
            raise InvalidInputError(f"{doc.where((*base, 'name'))}: pool {pool.name!r} is named twice; give each "
                                    "pool its own name")
        if OWNER_LABEL in pool.nodeSelector:
            raise InvalidInputError(f"{doc.where((*base, 'nodeSelector', OWNER_LABEL))}: the GPU Operator sets "
                                    f"{OWNER_LABEL} itself and rejects selectors on it; select the pool by a label "
                                    "of its nodes (e.g. node.kubernetes.io/instance-type)")
        for field, flag in (("set", "--set"), ("setJson", "--set-json")):
            for number, text in enumerate(getattr(pool.overrides, field) if pool.overrides else []):
                try:
                    parse(flag, text)
                except InvalidInputError as err:
                    raise InvalidInputError(f"{doc.where((*base, 'overrides', field, number))}: {err}") from None
        for earlier, other in enumerate(spec.pools[:index]):
            if not disjoint(other.nodeSelector, pool.nodeSelector):
                raise InvalidInputError(
                    f"{doc.where((*base, 'nodeSelector'))}: pools {other.name!r} (spec.pools[{earlier}]) and "
                    f"{pool.name!r} can select the same node ({_text(other.nodeSelector)} and "
                    f"{_text(pool.nodeSelector)}); selectors are disjoint only when a label key is in both with "
                    "different values: select both pools by one such label, e.g. node.kubernetes.io/instance-type")


def _text(selector: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in selector.items()) + "}"


def pool_criteria(criteria: Mapping[str, str | None], pool: Pool) -> dict[str, str | None]:
    """A pool's recipe criteria: the cluster's (``criteria``, dimension -> value) with the pool's accelerator and,
    when it gives one, its OS."""
    return {**criteria, "accelerator": pool.accelerator, "os": pool.os or criteria.get("os")}


# ------------------------------------------------------------------------------------------- resolution


def _pinned(resolved: dict[str, Any], versions: Mapping[str, str], where: Callable[[str], str]) -> dict[str, Any]:
    refs = resolved.get("componentRefs", [])
    names = sorted(str(ref.get("name")) for ref in refs)
    for name in versions:
        if name not in names:
            raise InvalidInputError(f"{where(name)}: the pool's recipe has no component {name!r}; pin one of "
                                    f"{', '.join(names)}")
    return {**resolved, "componentRefs": [{**ref, "version": versions[ref["name"]]} if ref["name"] in versions
                                          else ref for ref in refs]}


def _overridden(resolved: dict[str, Any], pool: Pool, aliases: Mapping[str, str]) -> dict[str, Any]:
    """The pool's recipe with its spec.pools[].overrides written into its components' overrides."""
    from aicr_gen.render.values import apply, parse, resolve_names

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
    from aicr_gen.render.values import parse

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


def _where_pin(cluster: ClusterSpec, index: int, name: str) -> str:
    return cluster.where(("spec", "pools", index, "versions", name))


def resolve_pools(cluster: ClusterSpec, base: FilePath | None = None, catalog: Any = None) -> Resolution:
    """Each pool's recipe (the cluster's criteria with its accelerator and OS, spec.versions then the pool's
    versions, the pool's overrides), merged (``resolve.pools.merge``); reads the catalog's values files."""
    from aicr_gen.catalog.load import read_files
    from aicr_gen.gitops.spec import criteria_values, open_spec_catalog, pin_versions
    from aicr_gen.render.plan import component_values, parse_values
    from aicr_gen.resolve import recipe
    from aicr_gen.resolve.pools import PoolRecipe, merge

    if catalog is None:
        catalog = open_spec_catalog(cluster, base)
    aliases = {alias: name for name, entry in catalog.registry.items() for alias in entry.get("valueOverrideKeys", [])}
    cluster_criteria = criteria_values(cluster)
    recipes: list[PoolRecipe] = []
    for index, pool in enumerate(cluster.spec.pools):
        where = cluster.where(("spec", "pools", index))
        try:
            query = recipe.query_for(catalog, pool_criteria(cluster_criteria, pool))
            resolved = recipe.resolve(catalog, query, recipe.Options(nodes=pool.nodes or 0))
        except InvalidInputError as err:
            raise InvalidInputError(f"{where}: pool {pool.name!r} ({pool.accelerator}): {err}") from None
        resolved = pin_versions(cluster, resolved)
        resolved = _pinned(resolved, pool.versions, functools.partial(_where_pin, cluster, index))
        try:
            resolved = _overridden(resolved, pool, aliases)
        except InvalidInputError as err:
            raise InvalidInputError(f"{cluster.where(('spec', 'pools', index, 'overrides'))}: {err}") from None
        recipes.append(PoolRecipe(pool.name, pool.nodeSelector, resolved))
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
        raise InvalidInputError(f"{cluster.where(('spec', 'pools'))}: {err}") from None


# ------------------------------------------------------------------------------------------- tree and notes


def provenance(cluster: ClusterSpec, resolution: Resolution) -> list[str]:
    """Plain lines saying who owns the driver, which pool brought which component and how each value that is
    not simply shared was decided (``spec show`` prints them as comments, the tree's pools/README.md as a list)."""
    from aicr_gen.resolve.pools import UNSET

    names = [pool.name for pool in cluster.spec.pools]
    lines = [f"driver: {resolution.driver_note}"]
    shared = [name for name, pools in resolution.brought.items() if len(pools) == len(names)]
    lines.append(f"components of every pool ({', '.join(names)}): {', '.join(shared) or 'none'}")
    lines += [f"component {name}: brought by pool {', '.join(pools)} only"
              for name, pools in resolution.brought.items() if len(pools) < len(names)]
    for decision in resolution.decisions:
        values = "; ".join(f"{pool}: {value if value == UNSET else _compact(value)}"
                           for pool, value in decision.values.items())
        result = "" if decision.result is None else f" = {_compact(decision.result)}"
        lines.append(f"{decision.component} {decision.key}{result}, {decision.rule} ({values})")
    for pool, spec in resolution.drivers.items():
        settings = ", ".join(f"{key}={_compact(value)}" for key, value in spec.items()
                             if key not in ("nodeSelector", "tolerations"))
        lines.append(f"NVIDIADriver {pool}: {settings}")
    return lines


def _compact(value: Any) -> str:
    import json

    return value if isinstance(value, str) else json.dumps(value, separators=(",", ":"), sort_keys=True)


class PoolTree:
    """What spec.pools adds to a sync tree: files, and the NVIDIADrivers in every deployer's plan."""

    def __init__(self, files: dict[str, bytes], drivers: bytes | None) -> None:
        self.files = files
        self.drivers = drivers

    def plan(self, plan: Any) -> Any:
        """``plan`` with the pools' NVIDIADrivers after the GPU Operator chart (unchanged when there are none)."""
        from aicr_gen.render.nvidia_driver import with_drivers
        from aicr_gen.resolve.pools import GPU_OPERATOR

        return plan if self.drivers is None else with_drivers(plan, GPU_OPERATOR, self.drivers)


def pool_tree(cluster: ClusterSpec, base: FilePath, catalog: Any) -> PoolTree:
    """pools/<pool>/recipe.yaml for each pool, pools/README.md (provenance), and the NVIDIADriver manifest."""
    from aicr_gen.render.nvidia_driver import manifest
    from aicr_gen.yamlio import dump

    resolution = resolve_pools(cluster, base, catalog)
    files = {f"pools/{name}/recipe.yaml": dump(recipe).encode() for name, recipe in resolution.pools.items()}
    rows = [f"| {pool.name} | {pool.accelerator} | `{_text(pool.nodeSelector)}` | `{pool.name}/recipe.yaml` |"
            for pool in cluster.spec.pools]
    readme = ["# GPU node pools", "",
              "Each pool resolved its own recipe (the cluster's criteria with the pool's accelerator); `../recipe.yaml`"
              " is their merge, which the deployer bundles deploy.", "",
              "| pool | accelerator | nodeSelector | recipe |", "|---|---|---|---|", *rows, "",
              *[f"- {line}" for line in provenance(cluster, resolution)], ""]
    if resolution.drivers:
        readme += ["The NVIDIADrivers are applied right after the GPU Operator chart: `nvidia-drivers.yaml` of each "
                   "deployer bundle's `gpu-operator-post` unit.", ""]
    files["pools/README.md"] = "\n".join(readme).encode()
    drivers = manifest(resolution.drivers, resolution.operator_version) if resolution.drivers else None
    return PoolTree(files, drivers)
