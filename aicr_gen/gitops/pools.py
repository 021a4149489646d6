"""GPU node pools of a ClusterSpec (``spec.pools``): the checks a schema cannot express, and each pool's criteria.

Two pools must never select one node: the GPU Operator (v26.3.x, what the catalog pins) reports a node that two
NVIDIADrivers select as a conflict and installs neither driver. A ``nodeSelector`` is a conjunction of label
equalities, so two selectors can both match one node unless they require different values of one label:
**two selectors are disjoint iff some key appears in both with different values.** Anything else (no shared key,
or shared keys with equal values) can overlap on a node that carries both sets of labels, and is refused.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from pathlib import Path as FilePath
from typing import TYPE_CHECKING, Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.text import markdown as md
from aicr_gen.yamlio import Document

if TYPE_CHECKING:
    from aicr_gen.resolve.pools import Resolution
    from aicr_gen.spec.cluster import ClusterSpec, Pool, Spec

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
    if spec.scheduling is not None and OWNER_LABEL in spec.scheduling.acceleratedNodeSelector:
        raise InvalidInputError(f"{doc.where(('spec', 'scheduling', 'acceleratedNodeSelector', OWNER_LABEL))}: "
                                f"every pool's NVIDIADriver takes this selector, and the GPU Operator sets "
                                f"{OWNER_LABEL} itself and rejects selectors on it; select GPU nodes by another label")
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
        for number, text in enumerate(pool.tolerations):
            try:
                _tolerations([text])
            except InvalidInputError as err:
                raise InvalidInputError(f"{doc.where((*base, 'tolerations', number))}: {err}") from None
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
        _check_operations(doc, spec, index, pool)
    _check_rule_set_pools(doc, spec)


def _text(selector: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in selector.items()) + "}"


def _tolerations(items: list[str]) -> tuple[dict[str, Any], ...] | None:
    """Given tolerations, parsed; None when none are given (the GPU Operator's operand tolerations hold)."""
    from aicr_gen.render.scheduling import parse_tolerations

    return tuple(dict(item) for item in parse_tolerations("tolerations", items)) if items else None


def pool_criteria(criteria: Mapping[str, str | None], pool: Pool) -> dict[str, str | None]:
    """A pool's recipe criteria: the cluster's (``criteria``, dimension -> value) with the pool's accelerator and,
    when it gives one, its OS."""
    return {**criteria, "accelerator": pool.accelerator, "os": pool.os or criteria.get("os")}


# ------------------------------------------------------------------------------------------- resolution


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
    from aicr_gen.render.plan import component_values, parse_values
    from aicr_gen.resolve import recipe
    from aicr_gen.resolve.pools import PoolRecipe, merge
    from aicr_gen.spec.cluster import criteria_values, open_spec_catalog, pin_versions, pinned

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
        where = cluster.where(("spec", "pools", index))
        try:
            query = recipe.query_for(catalog, pool_criteria(cluster_criteria, pool))
            resolved = recipe.resolve(catalog, query, recipe.Options(nodes=pool.nodes or 0))
        except InvalidInputError as err:
            raise InvalidInputError(f"{where}: pool {pool.name!r} ({pool.accelerator}): {err}") from None
        resolved = pin_versions(cluster, resolved)
        resolved = pinned(resolved, pool.versions, functools.partial(_where_pin, cluster, index), "the pool's recipe")
        try:
            resolved = _overridden(resolved, pool, aliases)
        except InvalidInputError as err:
            raise InvalidInputError(f"{cluster.where(('spec', 'pools', index, 'overrides'))}: {err}") from None
        recipes.append(PoolRecipe(pool.name, {**accelerated, **pool.nodeSelector}, resolved,
                                  _tolerations(pool.tolerations or cluster_tolerations)))
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
    from aicr_gen.catalog.headers import convert
    from aicr_gen.render.nvidia_driver import manifest
    from aicr_gen.yamlio import dump

    resolution = resolve_pools(cluster, base, catalog)
    generation = cluster.spec.aicrApiVersion  # the header the cluster's recipe.yaml has, for each pool's too
    files = {f"pools/{name}/recipe.yaml": dump(convert(recipe, "RecipeResult", generation)).encode()
             for name, recipe in resolution.pools.items()}
    rows = [f"| {md.text(pool.name, mid_line=True)} | {md.text(pool.accelerator, mid_line=True)} | "
            f"{md.code(_text(pool.nodeSelector), cell=True)} | {md.code(f'{pool.name}/recipe.yaml', cell=True)} |"
            for pool in cluster.spec.pools]
    readme = ["# GPU node pools", "",
              "Each pool resolved its own recipe (the cluster's criteria with the pool's accelerator); `../recipe.yaml`"
              " is their merge, which the deployer bundles deploy.", "",
              "| pool | accelerator | nodeSelector | recipe |", "|---|---|---|---|", *rows, "",
              *[f"- {md.text(line)}" for line in provenance(cluster, resolution)], ""]
    if resolution.drivers:
        readme += ["The NVIDIADrivers are applied right after the GPU Operator chart: `nvidia-drivers.yaml` of each "
                   "deployer bundle's `gpu-operator-post` unit.", ""]
    files["pools/README.md"] = "\n".join(readme).encode()
    drivers = manifest(resolution.drivers, resolution.operator_version) if resolution.drivers else None
    return PoolTree(files, drivers)


# ------------------------------------------------------------------------------ certification, NVSentinel, validation


def _check_operations(doc: Document, spec: Spec, index: int, pool: Pool) -> None:
    """A pool's selector as Kubernetes labels (it becomes NVCRE targets and NVSentinel rules), its certification
    (as spec.certification's, plus categories, a target that can match and names within their limits) and its
    validation tests (they need the lifecycle manager)."""
    from aicr_gen.spec.cluster import check_certification
    from aicr_gen.text.kube_names import LABEL_VALUE, label_key_problem

    base = ("spec", "pools", index)
    for key, value in pool.nodeSelector.items():
        problem = label_key_problem(key)
        if problem is None and value and not LABEL_VALUE.fullmatch(value):
            problem = f"label value {value!r} is not valid (at most 63 of [A-Za-z0-9-_.], alphanumeric ends)"
        if problem:
            raise InvalidInputError(f"{doc.where((*base, 'nodeSelector', key))}: {problem}")
    cert = pool.certification
    if cert is not None:
        where = (*base, "certification")
        check_certification(doc, cert, where)
        if not cert.categories:
            raise InvalidInputError(f"{doc.where((*where, 'categories'))}: a pool's certification is one "
                                    "Certification of its nodes; list at least one category, e.g. "
                                    "communication/nccl-all-reduce")
        try:
            certification_selector(spec, pool)
        except InvalidInputError as err:
            raise InvalidInputError(f"{doc.where((*where, 'nodeSelector'))}: {err}") from None
        from aicr_gen.certify.cron import name_room

        room = name_room(cert.schedule is not None, cert.postChange) - len(certification_name(""))
        if len(pool.name) > room:
            raise InvalidInputError(f"{doc.where((*base, 'name'))}: the pool's Certification "
                                    f"{certification_name(pool.name)!r} and the objects named after it (CronJob, "
                                    f"post-change Jobs) would go over their name limits; certify a pool whose name has "
                                    f"at most {room} characters")
    if pool.validationTests:
        where = (*base, "validationTests")
        if spec.sentinel is None or not spec.sentinel.lifecycle:
            raise InvalidInputError(f"{doc.where(where)}: the lifecycle manager runs these tests; set "
                                    "spec.sentinel.lifecycle: true (with mode: quarantine) or drop the field")
        for number, test in enumerate(pool.validationTests):
            if test in pool.validationTests[:number]:
                raise InvalidInputError(f"{doc.where((*where, number))}: test {test!r} is listed twice; list it once")


def _check_rule_set_pools(doc: Document, spec: Spec) -> None:
    limits = spec.sentinel.ruleSetPools if spec.sentinel is not None else {}
    names = [pool.name for pool in spec.pools]
    for rule_set, pools in limits.items():
        where = ("spec", "sentinel", "ruleSetPools", rule_set)
        if not pools:
            raise InvalidInputError(f"{doc.where(where)}: name the pools the rule set is limited to, or drop it")
        for number, name in enumerate(pools):
            if name not in names:
                raise InvalidInputError(f"{doc.where((*where, number))}: {name!r} is not a pool of spec.pools "
                                        f"({', '.join(names)})")


def certification_name(pool: str) -> str:
    """The name of a pool's Certification (and the prefix of its jobs' objects)."""
    from aicr_gen.gitops.render_tree import CERT_NAME

    return f"{CERT_NAME}-{pool}"


def certification_selector(spec: Spec, pool: Pool) -> dict[str, str]:
    """The target of a pool's Certification: the pool's nodeSelector with spec.certification's and the pool
    certification's own added; a label two of them give different values is an error (no node would match)."""
    layers = [("the pool's nodeSelector", pool.nodeSelector),
              ("spec.certification.nodeSelector", spec.certification.nodeSelector if spec.certification else {}),
              ("its own nodeSelector", pool.certification.nodeSelector if pool.certification else {})]
    merged: dict[str, tuple[str, str]] = {}
    for what, selector in layers:
        for key, value in selector.items():
            if key in merged and merged[key][0] != value:
                raise InvalidInputError(f"label {key} is {merged[key][0]!r} in {merged[key][1]} and {value!r} in "
                                        f"{what}, so the Certification would target no node; give it one value")
            merged.setdefault(key, (value, what))
    return {key: value for key, (value, _) in merged.items()}


def certified(cluster: ClusterSpec) -> list[Pool]:
    """The pools with a certification block."""
    return [pool for pool in cluster.spec.pools if pool.certification is not None]


def pool_certifications(cluster: ClusterSpec, namespace: str, stack_digest: str) -> dict[str, bytes]:
    """``pools/<pool>/certification/...``: each certified pool's bundle, its Certification named after the pool
    and labelled with it (``nvcre.POOL_LABEL``), targeting its selector."""
    from aicr_gen.certify.nvcre import POOL_LABEL
    from aicr_gen.gitops.render_tree import certification_bundle

    files: dict[str, bytes] = {}
    for index, pool in enumerate(cluster.spec.pools):
        if pool.certification is None:
            continue
        bundle = certification_bundle(pool.certification, certification_name(pool.name), namespace,
                                      certification_selector(cluster.spec, pool), stack_digest,
                                      field=f"spec.pools[{index}].certification", labels={POOL_LABEL: pool.name})
        files.update(bundle.under(f"pools/{pool.name}/certification"))
    return files


def pool_applied_folders(cluster: ClusterSpec, deployer: str, namespace: str) -> list[tuple[str, str]]:
    """``(folder, namespace)`` a GitOps deployer applies after the stack for the certified pools: each one's
    CronJob folder and, for Argo CD, its post-change hook (as for spec.certification)."""
    folders: list[tuple[str, str]] = []
    for pool in certified(cluster):
        cert = pool.certification
        assert cert is not None
        folder = f"pools/{pool.name}/certification"
        folders += [(f"{folder}/schedule", namespace)] if cert.schedule is not None else []
        folders += [(f"{folder}/post-change/argocd", namespace)] if cert.postChange and deployer == "argocd" else []
    return folders


def rule_set_selectors(cluster: ClusterSpec) -> dict[str, list[dict[str, str]]]:
    """spec.sentinel.ruleSetPools as rule set name -> the node selectors of its pools."""
    selectors = {pool.name: dict(pool.nodeSelector) for pool in cluster.spec.pools}
    limits = cluster.spec.sentinel.ruleSetPools if cluster.spec.sentinel is not None else {}
    return {name: [selectors[pool] for pool in pools] for name, pools in limits.items()}


def pool_validation(cluster: ClusterSpec, values: Mapping[str, Any], template_node: str) -> dict[str, bytes]:
    """``pools/<pool>/validation/``: a ValidationRequest template per pool, with the pool's validationTests (none:
    the lifecycle config's defaults) checked against the NVSentinel ``values``, and how to fill in its nodes."""
    from aicr_gen.sentinel import validation_request
    from aicr_gen.yamlio import dump

    lifecycle = validation_request.lifecycle_tests(Document("spec.sentinel", values))
    files: dict[str, bytes] = {}
    for index, pool in enumerate(cluster.spec.pools):
        try:
            request = validation_request.build([template_node], pool.validationTests,
                                               name=f"{template_node}-{pool.name}-validation", lifecycle=lifecycle)
        except InvalidInputError as err:
            raise InvalidInputError(f"{cluster.where(('spec', 'pools', index, 'validationTests'))}: {err}") from None
        request["metadata"]["labels"]["aicr-gen.dev/pool"] = pool.name
        tests = pool.validationTests or lifecycle.default_tests
        selector = ",".join(f"{key}={value}" for key, value in pool.nodeSelector.items())
        readme = "\n".join([
            f"# ValidationRequest template of pool {md.code(pool.name)}", "",
            f"`validation-request.yaml` asks NVSentinel's lifecycle manager to run "
            f"{md.text(', '.join(tests) or 'no test', mid_line=True)} on a node of the pool and lift its scheduling "
            f"gate when they pass. Replace {md.code(template_node)} with a node of the pool (its spec is immutable: "
            "delete a finished request before asking again):", "",
            *md.block([f"kubectl get nodes --selector={selector} --output=name",
                       f"sed 's/{template_node}/NODE/g' validation-request.yaml | kubectl create -f -"], "bash"), ""])
        folder = f"pools/{pool.name}/validation"
        files[f"{folder}/validation-request.yaml"] = ("# Generated by aicr-gen\n" + dump(request)).encode()
        files[f"{folder}/README.md"] = readme.encode()
    return files
