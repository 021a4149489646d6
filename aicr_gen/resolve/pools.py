"""Several GPU node pools, one stack: merge the pools' recipes into the cluster's and take out what is per pool.

Each pool has resolved its own recipe (the cluster's criteria with the pool's accelerator). ``merge`` is pure: it
takes those recipes and a function giving a component's effective Helm values (values files + overrides), and
returns the merged recipe, the per-pool driver settings and which pool brought what. The rules:

- **Components**: the union. A component several pools have must come out the same in each: same identity
  (namespace, chart, type, source, values file, tag, path), same enabled state, same effective values; its
  dependencyRefs, manifestFiles and preManifestFiles are unioned (as AICR merges overlays).
- **Versions**: equal, except the GPU Operator, where the highest wins (every pool's floor is met by it).
- **Per pool** (GPU Operator, when it installs the driver): driver version, repository and image, kernel module
  type (``useOpenKernelModules: true`` read as ``open``) and config, precompiled, RDMA, GDRCopy and GDS, and from
  operator v26.7.0 the upgrade policy. They leave the cluster's values and become one NVIDIADriver per pool; the
  chart is switched to NVIDIADriver mode without its default CR (``driver.nvidiaDriverCRD.enabled: true``,
  ``deployDefaultCR: false``), since on v26.3.x that CR selects every GPU node and would conflict with the pools'.
- **Cluster-wide, merged by a rule** (GPU Operator): ``cdi.enabled`` and ``toolkit.enabled`` are on when any
  pool has them on; ``mig.strategy`` is the widest (none < single < mixed: ``mixed`` serves MIG and whole GPUs);
  ``daemonsets.nodeSelector`` gets the label entries every pool's selector shares (the narrowest equality
  selector still matching every pool's nodes; none shared: the catalog's value alone).
- **Constraints** (recipe and validation phases): the union by name; a floor (``>= X``) given differently takes the
  highest; validation checks are unioned. ``performance`` is per pool (NCCL floors are calibrated per GPU): the
  merged recipe keeps only what all pools share identically; ``nodeSelection`` and ``infrastructure`` likewise.
- **Anything else** two pools set differently is an error naming the component, key, pools and the fix, unless
  the spec decides the key for the whole cluster (``decided``: paths its spec.overrides set).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve import graph
from aicr_gen.resolve.merge import deep_merge
from aicr_gen.resolve.refs import is_enabled, ordered
from aicr_gen.text.versions import version_key

GPU_OPERATOR = "gpu-operator"
DRIVER_CRD_SINCE = (23, 9, 0)
"""The first GPU Operator release with the NVIDIADriver CRD."""
POOL_UPGRADE_POLICY_SINCE = (26, 7, 0)
"""The first release whose NVIDIADriver has ``upgradePolicy`` (before, it is ClusterPolicy's, for all pools)."""
IDENTITY = ("namespace", "chart", "type", "source", "tag", "valuesFile", "path", "patches", "cleanup",
            "expectedResources", "healthCheckAsserts", "healthCheckSkip")
UNIONS = ("dependencyRefs", "manifestFiles", "preManifestFiles")
PER_POOL: tuple[tuple[str, ...], ...] = (
    ("driver", "version"), ("driver", "repository"), ("driver", "image"), ("driver", "kernelModuleType"),
    ("driver", "useOpenKernelModules"), ("driver", "kernelModuleConfig"), ("driver", "usePrecompiled"),
    ("driver", "rdma"), ("gdrcopy",), ("gds",))
POOL_UPGRADE_POLICY: tuple[tuple[str, ...], ...] = (("driver", "upgradePolicy"), ("driver", "maxParallelUpgrades"))
MIG_ORDER = ("none", "single", "mixed")
SELECTOR = ("daemonsets", "nodeSelector")
ANY_ON = (("cdi", "enabled"), ("toolkit", "enabled"))
CRD_MODE = {"driver": {"nvidiaDriverCRD": {"enabled": True, "deployDefaultCR": False}}}
UNSET = "<unset>"
DEFAULT_TOLERATIONS = [{"operator": "Exists"}]

Path = tuple[str, ...]
ValuesOf = Callable[[Mapping[str, Any]], dict[str, Any]]


class PoolRecipe(NamedTuple):
    """One pool and the recipe it resolved."""

    name: str
    node_selector: Mapping[str, str]
    recipe: Mapping[str, Any]
    tolerations: tuple[Mapping[str, Any], ...] | None = None
    """Its driver pods' tolerations; None: the GPU Operator's operand tolerations."""


class Decision(NamedTuple):
    """A value of the merged stack that is not simply shared: decided by a rule, or kept per pool."""

    component: str
    key: str
    rule: str
    values: Mapping[str, Any]  # pool -> its value (UNSET when it has none)
    result: Any  # the merged value; None for a per-pool value


class Resolution(NamedTuple):
    """What ``merge`` returns."""

    merged: dict[str, Any]
    pools: dict[str, dict[str, Any]]  # pool -> its recipe
    drivers: dict[str, dict[str, Any]]  # pool -> its NVIDIADriver spec; empty when the operator has no driver
    driver_note: str  # who owns the driver, for spec show and the tree's README
    operator_version: str
    brought: dict[str, list[str]]  # component -> the pools whose recipes have it
    decisions: list[Decision]


def _leaves(data: Any, path: Path = ()) -> dict[Path, Any]:
    if isinstance(data, Mapping) and data:
        return {found: value for key, item in data.items() for found, value in _leaves(item, (*path, str(key))).items()}
    return {path: data}


def _under(path: Path, prefixes: Sequence[Path]) -> bool:
    return any(path[:len(prefix)] == prefix for prefix in prefixes)


def _set(values: Mapping[str, Any], path: Path, value: Any) -> dict[str, Any]:
    out = copy.deepcopy(dict(values))
    node = out
    for key in path[:-1]:
        if not isinstance(node.get(key), dict):
            node[key] = {}
        node = node[key]
    node[path[-1]] = copy.deepcopy(value)
    return out


def _without(values: Mapping[str, Any], prefixes: Sequence[Path], path: Path = ()) -> dict[str, Any]:
    return {key: _without(item, prefixes, (*path, key)) if isinstance(item, Mapping) else copy.deepcopy(item)
            for key, item in values.items() if not _under((*path, key), prefixes)}


def _show(value: Any) -> str:
    return value if value == UNSET else repr(value)


def _disagreement(component: str, key: str, by_pool: Mapping[str, Any], fix: str) -> InvalidInputError:
    listed = ", ".join(f"{pool}: {_show(value)}" for pool, value in by_pool.items())
    return InvalidInputError(f"pools disagree on component {component!r}, key {key!r} ({listed}); one release "
                             f"serves every pool, so they must agree: {fix}")


def _value_fix(component: str, key: str) -> str:
    return (f"decide it for the cluster with spec.overrides.set: [\"{component}:{key}=VALUE\"], or give the pools "
            f"one value with spec.pools[].overrides")


class _Merge:
    """One merge: the pools, the rules' inputs, and what it decided."""

    def __init__(self, pools: Sequence[PoolRecipe], values_of: ValuesOf, decided: Mapping[str, Sequence[Path]]):
        self.pools = pools
        self.values_of = values_of
        self.decided = decided
        self.decisions: list[Decision] = []

    def refs(self, name: str) -> dict[str, Mapping[str, Any]]:
        return {pool.name: ref for pool in self.pools for ref in pool.recipe.get("componentRefs", [])
                if ref.get("name") == name}

    def operator_version(self) -> str:
        versions = {pool: str(ref.get("version") or "") for pool, ref in self.refs(GPU_OPERATOR).items()}
        if not versions:
            return ""
        highest = max(versions.values(), key=version_key)
        if len(set(versions.values())) > 1:
            self.decisions.append(Decision(GPU_OPERATOR, "version", "the highest (every pool's floor is met)",
                                           versions, highest))
        return highest

    def component(self, name: str, operator_driver: bool, operator_version: str) -> dict[str, Any]:
        refs = self.refs(name)
        first = next(iter(refs.values()))
        for key in IDENTITY:
            found = {pool: ref.get(key, UNSET) for pool, ref in refs.items()}
            if len({repr(value) for value in found.values()}) > 1:
                raise _disagreement(name, key, found, "give the pools' overlays one value (a catalog layer in "
                                                      "spec.catalogs that sets it once)")
        enabled = {pool: is_enabled(ref) for pool, ref in refs.items()}
        if len(set(enabled.values())) > 1:
            raise _disagreement(name, "enabled", enabled, f"switch it for the cluster with spec.overrides.set: "
                                                          f"[\"{name}:enabled=false\"], or use a catalog where the "
                                                          "pools agree")
        merged = dict(first)
        if name == GPU_OPERATOR:
            merged["version"] = operator_version
        else:
            versions = {pool: ref.get("version", UNSET) for pool, ref in refs.items()}
            if len(set(versions.values())) > 1:
                raise _disagreement(name, "version", versions,
                                    f"pin one version with spec.versions: {{{name}: VERSION}}")
        for key in UNIONS:
            union: list[str] = []
            for ref in refs.values():
                union += [item for item in ref.get(key) or [] if item not in union]
            if union:
                merged[key] = union
            lists = {pool: list(ref.get(key) or []) for pool, ref in refs.items()}
            if len({repr(value) for value in lists.values()}) > 1:
                self.decisions.append(Decision(name, key, "the union", lists, union))
        overrides: dict[str, Any] = {}
        for ref in refs.values():
            overrides = deep_merge(overrides, ref.get("overrides") or {})
        per_pool = self.per_pool_paths(operator_version) if name == GPU_OPERATOR and operator_driver else []
        overrides = _without(overrides, per_pool)
        for path, value in self.values(name, refs, per_pool).items():
            overrides = _set(overrides, path, value)
        if overrides:
            merged["overrides"] = overrides
        return ordered(merged)

    @staticmethod
    def per_pool_paths(operator_version: str) -> list[Path]:
        since = version_key(operator_version) >= POOL_UPGRADE_POLICY_SINCE
        return [*PER_POOL, *(POOL_UPGRADE_POLICY if since else ())]

    def values(self, name: str, refs: Mapping[str, Mapping[str, Any]], per_pool: Sequence[Path]) -> dict[Path, Any]:
        """Compare the pools' effective values of component ``name``; return the values a rule decided."""
        leaves = {pool: _leaves(self.values_of(ref)) for pool, ref in refs.items()}
        paths = sorted({path for found in leaves.values() for path in found})
        decided = [tuple(str(part) for part in path) for path in self.decided.get(name, [])]
        out: dict[Path, Any] = {}
        for path in paths:
            if _under(path, per_pool) or _under(path, decided) or (name == GPU_OPERATOR and _under(path, [SELECTOR])):
                continue
            found = {pool: found.get(path, UNSET) for pool, found in leaves.items()}
            if len({repr(value) for value in found.values()}) == 1:
                continue
            key = ".".join(path)
            result = self.rule(name, path, found)
            if result is None:
                raise _disagreement(name, key, found, _value_fix(name, key))
            rule, value = result
            self.decisions.append(Decision(name, key, rule, found, value))
            out[path] = value
        for prefix in per_pool:
            kept = {pool: {".".join(path): value for path, value in found.items() if _under(path, [prefix])}
                    for pool, found in leaves.items()}
            if any(kept.values()) and len({repr(value) for value in kept.values()}) > 1:
                self.decisions.append(Decision(name, ".".join(prefix), "per pool (its NVIDIADriver)", kept, None))
        return out

    @staticmethod
    def rule(name: str, path: Path, found: Mapping[str, Any]) -> tuple[str, Any] | None:
        if name != GPU_OPERATOR:
            return None
        values = list(found.values())
        if path in ANY_ON and all(value in (True, False, UNSET) for value in values):
            return "on when any pool has it on", True
        if path == ("mig", "strategy") and all(value in MIG_ORDER for value in values):
            return "the widest (none < single < mixed)", max(values, key=MIG_ORDER.index)
        return None


def _selector_entries(pools: Sequence[PoolRecipe]) -> dict[str, str]:
    first, *rest = [dict(pool.node_selector) for pool in pools]
    return {key: value for key, value in first.items() if all(other.get(key) == value for other in rest)}


def _floor(value: str) -> tuple[int, ...] | None:
    from aicr_gen.text.versions import ExpectationError, parse_expectation

    try:
        expectation = parse_expectation(value)
    except ExpectationError:
        return None
    return version_key(expectation.operand) or None if expectation.operator == ">=" else None


def _constraints(lists: Mapping[str, Sequence[Mapping[str, Any]]], *, shared_only: bool, where: str,
                 decisions: list[Decision]) -> list[dict[str, Any]]:
    """Constraints of several pools, by name: equal ones once; floors the highest; with ``shared_only``, only
    those every pool has identically. Other disagreements are errors."""
    names = sorted({str(item["name"]) for items in lists.values() for item in items})
    out: list[dict[str, Any]] = []
    for name in names:
        found = {pool: next((dict(item) for item in items if item["name"] == name), None)
                 for pool, items in lists.items()}
        present = {pool: item for pool, item in found.items() if item is not None}
        distinct = {repr(item) for item in present.values()}
        if shared_only:
            if len(present) == len(found) and len(distinct) == 1:
                out.append(next(iter(present.values())))
            continue
        if len(distinct) == 1:
            out.append(next(iter(present.values())))
            continue
        floors = {pool: _floor(str(item.get("value", ""))) for pool, item in present.items()}
        if all(floor is not None for floor in floors.values()):
            top = max(present, key=lambda pool: floors[pool] or ())
            out.append(present[top])
            decisions.append(Decision(where, name, "the highest floor",
                                      {pool: item.get("value") for pool, item in present.items()},
                                      present[top].get("value")))
            continue
        values = {pool: item.get("value") for pool, item in present.items()}
        raise InvalidInputError(f"pools disagree on {where} constraint {name!r} "
                                f"({', '.join(f'{pool}: {value!r}' for pool, value in values.items())}); only "
                                "floors (>= X) merge (the highest wins): give the pools the same criteria (os) or "
                                "use a catalog where they agree")
    return out


def _duration(text: str) -> float:
    from aicr_gen.cel.durations import seconds as duration_seconds

    return duration_seconds(text) or 0.0


def _validation(pools: Sequence[PoolRecipe], decisions: list[Decision]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for phase in ("readiness", "deployment", "performance", "conformance"):
        found = {pool.name: (pool.recipe.get("validation") or {}).get(phase) or {} for pool in pools}
        if not any(found.values()):
            continue
        per_pool = phase == "performance"
        merged: dict[str, Any] = {}
        timeouts = [str(item["timeout"]) for item in found.values() if item.get("timeout")]
        if timeouts:
            merged["timeout"] = max(timeouts, key=_duration)
        constraints = _constraints({pool: item.get("constraints") or [] for pool, item in found.items()},
                                   shared_only=per_pool, where=f"validation.{phase}", decisions=decisions)
        if constraints:
            merged["constraints"] = constraints
        checks: list[str] = []
        for item in found.values():
            checks += [check for check in item.get("checks") or [] if check not in checks]
        if per_pool:
            checks = [check for check in checks if all(check in (item.get("checks") or []) for item in found.values())]
        if checks:
            merged["checks"] = checks
        for key in ("nodeSelection", "infrastructure"):
            if len({repr(item.get(key)) for item in found.values()}) == 1 and next(iter(found.values())).get(key):
                merged[key] = next(iter(found.values()))[key]
        if merged:
            out[phase] = merged
    return out


def _same(pools: Sequence[PoolRecipe], key: str, what: str) -> Any:
    found = {pool.name: pool.recipe.get(key) for pool in pools}
    if len({repr(value) for value in found.values()}) > 1:
        raise InvalidInputError(f"pools disagree on the recipe's {what} "
                                f"({', '.join(f'{pool}: {value!r}' for pool, value in found.items())}); use a "
                                "catalog where the pools' recipes agree on it")
    return next(iter(found.values()))


def _driver_owner(values: Mapping[str, Any] | None) -> bool:
    return values is not None and (values.get("driver") or {}).get("enabled", True) is not False


def driver_settings(values: Mapping[str, Any], operator_version: str) -> dict[str, Any]:
    """A pool's NVIDIADriver spec fields (without its nodeSelector) from its effective GPU Operator values, in the
    CRD's names; the chart's defaults where the values leave a field out."""
    driver = values.get("driver") or {}
    spec: dict[str, Any] = {"driverType": "gpu", "repository": driver.get("repository") or "nvcr.io/nvidia",
                            "image": driver.get("image") or "driver"}
    if driver.get("version"):
        spec["version"] = str(driver["version"])
    module_type = driver.get("kernelModuleType") or ("open" if driver.get("useOpenKernelModules") else None)
    if module_type:
        spec["kernelModuleType"] = module_type
    config = (driver.get("kernelModuleConfig") or {}).get("name")
    if config:
        spec["kernelModuleConfig"] = {"name": config}
    if driver.get("usePrecompiled"):
        spec["usePrecompiled"] = True
    rdma = {key: driver["rdma"][key] for key in ("enabled", "useHostMofed") if key in (driver.get("rdma") or {})}
    if rdma:
        spec["rdma"] = rdma
    for addon in ("gdrcopy", "gds"):
        found = values.get(addon) or {}
        if "enabled" in found:
            spec[addon] = {"enabled": bool(found["enabled"])}
    if version_key(operator_version) >= POOL_UPGRADE_POLICY_SINCE:
        policy = dict(driver.get("upgradePolicy") or {})
        if "maxParallelUpgrades" in driver:  # the older chart key, which the templates no longer read
            policy.setdefault("maxParallelUpgrades", driver["maxParallelUpgrades"])
        if policy:
            spec["upgradePolicy"] = policy
    return spec


def check_driver_image(pool: str, spec: Mapping[str, Any]) -> None:
    """A pool's NVIDIADriver ``repository``, ``image`` and ``version`` form the image the GPU Operator pulls
    (``REPOSITORY/IMAGE:VERSION-OS``): each must fit the distribution reference grammar (``mirror/reference``),
    or the tree would carry a command substitution or a line break into the CR."""
    from aicr_gen.text.image_reference import parse_image

    for field in ("repository", "image", "version"):
        if not isinstance(spec.get(field, ""), str):
            raise InvalidInputError(f"pool {pool!r}: driver.{field} of {GPU_OPERATOR} is not a string; give one")
    tag = f":{spec['version']}" if spec.get("version") else ""
    try:
        parse_image(f"{spec['repository']}/{spec['image']}{tag}")
    except InvalidInputError as err:
        raise InvalidInputError(f"pool {pool!r}: its NVIDIADriver's driver.repository, driver.image and "
                                f"driver.version ({GPU_OPERATOR} values) do not form an image reference: {err}; "
                                "give e.g. driver.repository=nvcr.io/nvidia, driver.version=580.105.08") from None


def _driver_mode(run: _Merge, refs: list[dict[str, Any]], operator_refs: Mapping[str, Mapping[str, Any]],
                 operator_version: str) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """The merged refs with the GPU Operator in NVIDIADriver mode, and each pool's NVIDIADriver spec: its driver
    settings, its nodeSelector, and the cluster's operand tolerations (absent: every taint, as AICR tolerates on
    GPU nodes by default)."""
    pools, values_of = run.pools, run.values_of
    operator = next(ref for ref in refs if ref["name"] == GPU_OPERATOR)
    overrides = deep_merge(operator.get("overrides") or {}, CRD_MODE)
    daemonsets = values_of(operator).get("daemonsets") or {}
    shared = _selector_entries(pools)
    if shared:
        overrides = _set(overrides, SELECTOR, {**(daemonsets.get("nodeSelector") or {}), **shared})
        run.decisions.append(Decision(GPU_OPERATOR, ".".join(SELECTOR), "the label entries every pool's selector "
                                      "shares", {pool.name: dict(pool.node_selector) for pool in pools}, shared))
    tolerations = daemonsets.get("tolerations") or DEFAULT_TOLERATIONS
    drivers: dict[str, dict[str, Any]] = {}
    for pool in pools:
        spec = driver_settings(values_of(operator_refs[pool.name]), operator_version)
        check_driver_image(pool.name, spec)
        if spec.get("usePrecompiled") and any((spec.get(addon) or {}).get("enabled") for addon in ("gds", "gdrcopy")):
            raise InvalidInputError(f"pool {pool.name!r}: a precompiled driver does not combine with GDS or GDRCopy "
                                    "(its NVIDIADriver would stay notReady); turn one off with spec.pools[].overrides, "
                                    f"e.g. {GPU_OPERATOR}:gdrcopy.enabled=false")
        drivers[pool.name] = {**spec, "nodeSelector": dict(pool.node_selector),
                              "tolerations": copy.deepcopy(list(pool.tolerations) if pool.tolerations is not None
                                                           else tolerations)}
    merged = [ordered({**ref, "overrides": overrides}) if ref["name"] == GPU_OPERATOR else ref for ref in refs]
    return merged, drivers


def merge(pools: Sequence[PoolRecipe], values_of: ValuesOf, *, decided: Mapping[str, Sequence[Path]] | None = None,
          criteria: Mapping[str, Any] | None = None) -> Resolution:
    """The merged recipe of ``pools`` (see the module rules), the pools' own recipes, one NVIDIADriver spec per
    pool when the GPU Operator installs the driver, and the provenance. ``values_of(ref)`` is a component's
    effective Helm values; ``decided`` holds, per component, the value paths the spec sets for the whole cluster
    (never compared); ``criteria`` are the merged recipe's (default: those the pools share)."""
    if not pools:
        raise InvalidInputError("no pools to merge")
    run = _Merge(pools, values_of, decided or {})
    brought: dict[str, list[str]] = {}
    for pool in pools:
        for ref in pool.recipe.get("componentRefs", []):
            brought.setdefault(str(ref["name"]), []).append(pool.name)
    operator_version = run.operator_version()
    operator_refs = run.refs(GPU_OPERATOR)
    enabled_operator = {pool: ref for pool, ref in operator_refs.items() if is_enabled(ref)}
    owners = {pool: _driver_owner(values_of(ref)) for pool, ref in enabled_operator.items()}
    if len(set(owners.values())) > 1:
        raise _disagreement(GPU_OPERATOR, "driver.enabled", owners,
                            "a cluster's driver is either the operator's or the node images' for every pool; "
                            "decide it with spec.overrides.set: [\"gpu-operator:driver.enabled=false\"] (or true)")
    operator_driver = bool(owners) and all(owners.values()) and len(enabled_operator) == len(pools)
    if operator_driver and version_key(operator_version) < DRIVER_CRD_SINCE:
        raise InvalidInputError(f"GPU Operator {operator_version} has no NVIDIADriver (since v23.9.0), which mixed "
                                "pools need for one driver per pool; pin a newer one with spec.versions: "
                                "{gpu-operator: v26.3.3}")
    refs = [run.component(name, operator_driver, operator_version) for name in sorted(brought)]
    drivers: dict[str, dict[str, Any]] = {}
    if operator_driver:
        refs, drivers = _driver_mode(run, refs, operator_refs, operator_version)
        note = (f"the GPU Operator installs the driver: one NVIDIADriver per pool ({', '.join(drivers)}) on the "
                "pool's nodeSelector; the chart's default NVIDIADriver is off (driver.nvidiaDriverCRD."
                "deployDefaultCR=false), so a GPU node outside every pool gets no driver")
    elif enabled_operator:
        note = ("the node images own the driver (the GPU Operator's driver.enabled is false, as on AKS, GKE with "
                "COS and OKE): no NVIDIADriver is emitted; per-pool driver settings do not apply")
    else:
        note = "the recipe has no enabled GPU Operator: no NVIDIADriver is emitted"
    enabled = {ref["name"] for ref in refs if is_enabled(ref)}
    order = graph.deployment_order({ref["name"]: [dep for dep in ref.get("dependencyRefs", []) if dep in enabled]
                                    for ref in refs if ref["name"] in enabled})
    applied: list[str] = []
    for pool in pools:
        applied += [name for name in pool.recipe.get("metadata", {}).get("appliedOverlays", []) if name not in applied]
    metadata = {**pools[0].recipe.get("metadata", {}), "appliedOverlays": applied}
    result: dict[str, Any] = {"kind": "RecipeResult",
                              "apiVersion": max(str(pool.recipe.get("apiVersion")) for pool in pools),
                              "metadata": metadata, "criteria": dict(criteria or _shared_criteria(pools))}
    configuration = _same(pools, "configuration", "configuration")
    if configuration:
        result["configuration"] = configuration
    constraints = _constraints({pool.name: pool.recipe.get("constraints") or [] for pool in pools},
                               shared_only=False, where="recipe", decisions=run.decisions)
    if constraints:
        result["constraints"] = constraints
    result["componentRefs"] = refs
    result["deploymentOrder"] = order
    validation = _validation(pools, run.decisions)
    if validation:
        result["validation"] = validation
    return Resolution(merged=result, pools={pool.name: dict(pool.recipe) for pool in pools}, drivers=drivers,
                      driver_note=note, operator_version=operator_version, brought=brought, decisions=run.decisions)


def _shared_criteria(pools: Sequence[PoolRecipe]) -> dict[str, Any]:
    first, *rest = [dict(pool.recipe.get("criteria") or {}) for pool in pools]
    return {key: value for key, value in first.items() if key != "accelerator"
            and all(other.get(key) == value for other in rest)}
