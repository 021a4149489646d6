"""``aicr-gen diff --baseline SRC --target SRC``: drift between two snapshots, or a recipe and a snapshot;
``aicr-gen diff --fleet SPEC...``: the drift of many clusters against their specs' recipes, as one matrix;
``aicr-gen diff --spec SPEC --target SRC [--pool NAME]...``: a cluster against its spec's recipe, per GPU node pool
when the spec has ``spec.pools`` (the cluster-wide Helm releases once, then each pool's own components and its
nodes' driver versions; ``drift/pools.py``).

Exit 0: no drift, or drift without ``--fail-on-drift``; 1: drift with ``--fail-on-drift``; 2: invalid input;
3: a ``cm://`` source could not be reached. Unlike ``aicr diff`` (2 for both), drift and bad input differ. With
``--fleet``, an unreachable cluster's row says so and the matrix is still written; 3 then wins over 1 (the
verdict is incomplete), and 2 writes nothing.
"""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, InvalidInputError, UnreachableError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FLEET = """\
fleet drift (--fleet SPEC...): per cluster, the Helm components its spec's recipe wants (with spec.versions
pins) against the releases its snapshot recorded, as a cluster x component matrix. A cell is the version
(as desired), DESIRED -> LIVE (drifted; also namespace/chart), missing, unknown (a release the recipe does
not name), unreachable or - (not the cluster's component).
  snapshot  --snapshot CLUSTER=FILE|cm://NS/NAME, else the spec's spec.snapshot.configmap
  context   a cm:// source is read through --context CLUSTER=CTX, else spec.snapshot.context, else the
            kubeconfig context named like the cluster (never the current context)
exit codes: 0 no drift (or drift without --fail-on-drift), 1 drift with --fail-on-drift, 2 invalid input
(nothing written), 3 a cluster's snapshot unreachable (the matrix is written; 3 wins over 1).
"""


def arguments(parser: argparse.ArgumentParser) -> None:
    """``diff``: a baseline and a target, a spec's recipe per pool, or a fleet's matrix."""
    parser.epilog = FLEET
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("--baseline", metavar="SRC", help="snapshot or recipe: file, - or cm://NS/NAME")
    parser.add_argument("--target", metavar="SRC", help="snapshot: file, - or cm://NS/NAME")
    parser.add_argument("--fleet", nargs="+", action="extend", default=[], metavar="SPEC",
                        help="instead, the drift of every cluster of these ClusterSpec files or glob patterns")
    parser.add_argument("--spec", metavar="SPEC", help="instead of --baseline, the recipe of this ClusterSpec; with "
                        "spec.pools, the drift per pool (its components, its nodes' driver versions)")
    parser.add_argument("--pool", action="append", default=[], metavar="NAME",
                        help="with --spec: only this pool (repeatable); the cluster-wide releases are always shown")
    parser.add_argument("--snapshot", action="append", default=[], metavar="CLUSTER=SRC",
                        help="with --fleet: the snapshot of a cluster, a file or cm://NS/NAME (repeatable)")
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for cm:// sources")
    parser.add_argument("--context", action="append", default=[], metavar="NAME",
                        help="kubeconfig context for cm:// sources; with --fleet CLUSTER=NAME (repeatable)")
    parser.add_argument("--fail-on-drift", action="store_true", help="exit 1 when anything drifted")
    parser.add_argument("--format", choices=("table", "json", "yaml", "markdown", "deepdiff"), default="table",
                        help="output format (default: table); deepdiff: DeepDiff's report of the same readings, as "
                             "JSON")
    parser.add_argument("--delta", metavar="FILE", help="also write DeepDiff's Delta that turns the baseline snapshot "
                        "into the target (JSON; apply it with deepdiff: baseline + Delta(text, "
                        "deserializer=json_loads))")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (default: stdout)")
    parser.add_argument("--emit-validation-request", metavar="FILE",
                        help="when the GPU stack drifted, write a ValidationRequest for the affected GPU nodes")

DRIFT = 1


def _load(source: str, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    import os.path

    from aicr_gen.drift.load import load_document

    if source == args.baseline and not source.startswith("cm://") and source != "-":
        from aicr_gen.catalog.recipe_file import validated_before
        from aicr_gen.edges.files import MAX_SNAPSHOT_BYTES

        # only a baseline may be a recipe; one read before is not parsed at all
        recipe = validated_before(source, MAX_SNAPSHOT_BYTES)
        if recipe is not None:
            return "RecipeResult", recipe
    context = args.context[-1] if args.context else None
    kind, data = load_document(source, kubeconfig=args.kubeconfig, context=context)
    if kind == "RecipeResult" and not source.startswith("cm://") and source != "-" \
            and os.path.isfile(source):  # noqa: PTH113 - pathlib costs a diff ~2 ms to import
        from aicr_gen.catalog.recipe_file import load_recipe

        data = load_recipe(source)
    return kind, data


def run(args: argparse.Namespace) -> int:
    """The diff, with the cyclic garbage collector off: a diff allocates acyclic data only (parsed documents, flat
    mappings, change entries), which collections would walk again and again to free nothing (~3 ms of a 256-node
    diff); what it frees, reference counting frees, and the locals are gone before the collector is back."""
    import gc

    collecting = gc.isenabled()
    gc.disable()
    try:
        return _run(args)
    finally:
        if collecting:
            gc.enable()


def _run(args: argparse.Namespace) -> int:
    from aicr_gen.drift import diff
    from aicr_gen.edges.output import write_text
    from aicr_gen.report import drift as drift_report

    if args.delta and (args.fleet or args.spec):
        raise InvalidInputError("--delta turns a baseline snapshot into the target; give --baseline SNAPSHOT "
                                "--target SNAPSHOT")
    if args.fleet:
        return _fleet(args)
    if args.spec:
        return _spec(args)
    if args.pool:
        raise InvalidInputError("--pool names pools of a spec; give --spec SPEC")
    if args.baseline is None or args.target is None or args.snapshot:
        raise InvalidInputError("diff takes --baseline SRC and --target SRC (--snapshot only with --fleet), "
                                "--spec SPEC --target SRC, or --fleet SPEC...; see 'aicr-gen diff --help'")
    if args.baseline == "-" and args.target == "-":
        raise InvalidInputError("--baseline and --target cannot both read standard input (-); give a file")
    base_kind, baseline = _load(args.baseline, args)
    target_kind, target = _load(args.target, args)
    _snapshot_only(target_kind, args.target)
    if args.delta and base_kind != "Snapshot":
        raise InvalidInputError(f"--delta: --baseline {args.baseline} is a recipe; a Delta turns a baseline snapshot "
                                "into the target")
    if base_kind == "Snapshot":
        result = diff.diff_snapshots(baseline, target, args.baseline, args.target)
    else:
        result = diff.diff_recipe(baseline, target, args.baseline, args.target)
    if args.emit_validation_request:
        _emit_request(args.emit_validation_request, result["changes"], target)
    if args.format == "deepdiff":
        from aicr_gen.drift import deep

        left, right = (diff.readings(baseline), diff.readings(target)) if base_kind == "Snapshot" else \
            diff.recipe_readings(baseline, diff.helm_releases(target))
        text = deep.render(deep.report(left, right))
    else:
        text = drift_report.render(result, args.format)
    if args.delta:
        from aicr_gen.drift import deep

        write_text(args.delta, deep.delta(baseline, target))
    write_text(args.output, text)
    return DRIFT if args.fail_on_drift and result["summary"]["total"] else OK


def _spec(args: argparse.Namespace) -> int:
    """The cluster of ``--spec`` against ``--target``: as ``--baseline RECIPE`` for a spec without pools (its
    recipe resolved as ``sync`` resolves it), else per pool."""
    from pathlib import Path

    from aicr_gen.drift import diff
    from aicr_gen.edges.output import write_text
    from aicr_gen.gitops.records import recipe_cache
    from aicr_gen.report import drift as drift_report
    given = [flag for flag, value in (("--baseline", args.baseline), ("--fleet", args.fleet),
                                      ("--snapshot", args.snapshot)) if value]
    if given:
        raise InvalidInputError(f"--spec compares the cluster with its spec's recipe; drop {given[0]}")
    if args.target is None:
        raise InvalidInputError("--spec SPEC needs --target SRC, the cluster's snapshot")
    recipe = recipe_cache.cached(args.spec) if args.spec != "-" and not args.pool else None
    if recipe is None:
        from aicr_gen.spec.load import load_spec

        cluster = load_spec(args.spec)
        base = Path(args.spec).parent if args.spec != "-" else None
        names = [pool.name for pool in cluster.spec.pools]
        for name in args.pool:
            if name not in names:
                raise InvalidInputError(f"--pool {name!r}: not a pool of {args.spec} "
                                        f"({', '.join(names) or 'it has no spec.pools'})")
        if not names:
            from aicr_gen.gitops.trees.recipes import resolve_spec

            recipe = resolve_spec(cluster, base)
            if args.spec != "-":
                recipe_cache.remember(args.spec, cluster, recipe)
    if recipe is not None:  # no pools
        target_kind, target = _load(args.target, args)
        _snapshot_only(target_kind, args.target)
        result = diff.diff_recipe(recipe, target, args.spec, args.target)
        text = _deep(*diff.recipe_readings(recipe, diff.helm_releases(target))) if args.format == "deepdiff" \
            else drift_report.render(result, args.format)
    else:
        from aicr_gen.drift.pools import PoolDesired, pool_drift
        from aicr_gen.gitops.trees.recipes import resolve_pools
        from aicr_gen.report import pool_drift as pool_report

        resolution = resolve_pools(cluster, base)
        target_kind, target = _load(args.target, args)
        _snapshot_only(target_kind, args.target)
        # a component of one pool only (of several) is that pool's; the others are the cluster's
        refs = resolution.merged["componentRefs"]
        own = {pool: [ref for ref in refs if resolution.brought.get(ref["name"]) == [pool]]
               for pool in names} if len(names) > 1 else {}
        pools = [PoolDesired(pool.name, dict(pool.nodeSelector), tuple(own.get(pool.name, [])),
                             (resolution.drivers.get(pool.name) or {}).get("version"))
                 for pool in cluster.spec.pools if not args.pool or pool.name in args.pool]
        result = pool_drift(resolution.merged, pools, target, args.spec, args.target)
        text = _pooled_deep(result) if args.format == "deepdiff" else pool_report.render(result, args.format)
    if args.emit_validation_request:
        _emit_request(args.emit_validation_request, result["changes"], target)
    write_text(args.output, text)
    return DRIFT if args.fail_on_drift and result["summary"]["total"] else OK


def _deep(left: dict[str, Any], right: dict[str, Any]) -> str:
    from aicr_gen.drift import deep

    return deep.render(deep.report(left, right))


def _pooled_deep(result: dict[str, Any]) -> str:
    """A pooled spec's DeepDiff reports: ``shared`` and one per pool, each over its changes' readings."""
    from aicr_gen.drift import deep

    parts: dict[str, list[dict[str, Any]]] = {"shared": []}
    parts.update({str(pool["name"]): [] for pool in result["pools"]})
    for entry in result["changes"]:
        parts[str(entry.get("pool") or "shared")].append(entry)
    return deep.render({name: deep.report(*deep.from_changes(entries)) for name, entries in parts.items()})


def _snapshot_only(kind: str, source: str) -> None:
    if kind != "Snapshot":
        raise InvalidInputError(f"--target {source}: is a recipe; the target must be a snapshot "
                                "(the recipe goes in --baseline)")


def _fleet(args: argparse.Namespace) -> int:
    from aicr_gen.drift import fleet
    from aicr_gen.edges.output import write_text
    from aicr_gen.gitops.trees import fleet_sources
    from aicr_gen.report import fleet_drift as fleet_format

    given = [flag for flag, value in (("--baseline", args.baseline), ("--target", args.target),
                                      ("--emit-validation-request", args.emit_validation_request),
                                      ("--spec", args.spec), ("--pool", args.pool)) if value]
    if given:
        raise InvalidInputError(f"--fleet compares each cluster with its own recipe; drop {given[0]}")
    sources = fleet_sources.survey(args.fleet, fleet_sources.pairs(args.snapshot, "--snapshot"),
                                   fleet_sources.pairs(args.context, "--context"))
    clusters = fleet_sources.read(sources, args.kubeconfig)
    document = fleet.matrix(clusters)
    write_text(args.output, _fleet_deep(clusters) if args.format == "deepdiff"
               else fleet_format.render(document, args.format))
    unreachable = [cluster for cluster in document["clusters"] if cluster["status"] == fleet.UNREACHABLE]
    if unreachable:
        names = ", ".join(cluster["name"] for cluster in unreachable)
        raise UnreachableError(f"{len(unreachable)} of {len(document['clusters'])} clusters unreachable ({names}); "
                               "their rows say why")
    return DRIFT if args.fail_on_drift and document["summary"]["drifted"] else OK


def _fleet_deep(clusters: list[Any]) -> str:
    """Per cluster, DeepDiff's report of its recipe's enabled components against its live releases (an
    unreachable cluster: its error)."""
    from aicr_gen.drift import deep
    from aicr_gen.drift.diff import recipe_readings
    from aicr_gen.resolve.refs import is_enabled

    return deep.render({cluster.name: {"error": cluster.error} if cluster.releases is None else deep.report(
        *recipe_readings({"componentRefs": [ref for ref in cluster.refs if is_enabled(ref)]}, cluster.releases))
        for cluster in sorted(clusters, key=lambda item: item.name)})


def _emit_request(file: str, changes: list[dict[str, Any]], target: dict[str, Any]) -> None:
    from aicr_gen.drift import diff

    touched = diff.touches_gpu_stack(changes)
    if not touched:
        sys.stderr.write("aicr-gen: the GPU stack did not drift; no ValidationRequest written\n")
        return
    nodes = diff.gpu_nodes(target)
    if not nodes:
        raise InvalidInputError(
            f"--emit-validation-request {file}: the GPU stack drifted ({touched[0]}) but the target snapshot "
            f"lists no nodes (no NodeTopology {diff.GPU_LABEL} label); capture it with node topology or "
            "write the request with 'aicr-gen validation-request --node NAME'")
    from aicr_gen.edges.output import write_text
    from aicr_gen.sentinel.validation_request import build
    from aicr_gen.yaml import dump

    write_text(file, dump(build(nodes)))
