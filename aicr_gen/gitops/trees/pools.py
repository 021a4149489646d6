"""GPU node pools of a ClusterSpec (``spec.pools``): the checks a schema cannot express, and each pool's criteria.

Two pools must never select one node: the GPU Operator (v26.3.x, what the catalog pins) reports a node that two
NVIDIADrivers select as a conflict and installs neither driver. A ``nodeSelector`` is a conjunction of label
equalities, so two selectors can both match one node unless they require different values of one label:
**two selectors are disjoint iff some key appears in both with different values.** Anything else (no shared key,
or shared keys with equal values) can overlap on a node that carries both sets of labels, and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.spec.pools import certification_name, certification_selector, selector_text
from aicr_gen.text import markdown as md
from aicr_gen.yaml import Document

if TYPE_CHECKING:
    from aicr_gen.resolve.pools import Resolution
    from aicr_gen.spec.cluster import ClusterSpec, Pool


# ------------------------------------------------------------------------------------------- resolution


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


def pool_tree(cluster: ClusterSpec, base: Path, catalog: Any) -> PoolTree:
    """pools/<pool>/recipe.yaml for each pool, pools/README.md (provenance), and the NVIDIADriver manifest."""
    from aicr_gen.catalog.headers import convert
    from aicr_gen.gitops.trees.recipes import resolve_pools
    from aicr_gen.render.nvidia_driver import manifest
    from aicr_gen.yaml import dump

    resolution = resolve_pools(cluster, base, catalog)
    generation = cluster.spec.aicrApiVersion  # the header the cluster's recipe.yaml has, for each pool's too
    files = {f"pools/{name}/recipe.yaml": dump(convert(recipe, "RecipeResult", generation)).encode()
             for name, recipe in resolution.pools.items()}
    rows = [f"| {md.text(pool.name, mid_line=True)} | {md.text(pool.accelerator, mid_line=True)} | "
            f"{md.code(selector_text(pool.nodeSelector), cell=True)} | "
            f"{md.code(f'{pool.name}/recipe.yaml', cell=True)} |"
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


def certified(cluster: ClusterSpec) -> list[Pool]:
    """The pools with a certification block."""
    return [pool for pool in cluster.spec.pools if pool.certification is not None]


def pool_certifications(cluster: ClusterSpec, namespace: str, stack_digest: str) -> dict[str, bytes]:
    """``pools/<pool>/certification/...``: each certified pool's bundle, its Certification named after the pool
    and labelled with it (``nvcre.POOL_LABEL``), targeting its selector."""
    from aicr_gen.certify.nvcre import POOL_LABEL
    from aicr_gen.gitops.trees.certification import certification_bundle
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
    from aicr_gen.yaml import dump

    lifecycle = validation_request.lifecycle_tests(Document("spec.sentinel", values))
    files: dict[str, bytes] = {}
    for index, pool in enumerate(cluster.spec.pools):
        try:
            request = validation_request.build([template_node], pool.validationTests,
                                               name=f"{template_node}-{pool.name}-validation", lifecycle=lifecycle)
        except InvalidInputError as err:
            raise cluster.error(("spec", "pools", index, "validationTests"), str(err)) from None
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
