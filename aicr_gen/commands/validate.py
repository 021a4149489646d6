"""``aicr-gen validate``: readiness, i.e. a recipe's top-level ``constraints`` against a snapshot.

Output is a table (NAME, EXPECTED, ACTUAL, RESULT) or, with ``--format json``, a CTRF report
(https://ctrf.io) whose tests are the constraints (suite ``["readiness"]``). Timestamps are fixed at 0
so the report is deterministic.

Several GPU node pools: ``--spec SPEC`` evaluates each pool's recipe (the one ``sync`` writes to
``pools/<pool>/recipe.yaml``) against the snapshot as that pool sees it (``drift/pools.py``: only the nodes its
nodeSelector selects), ``--pool NAME`` limiting it to some pools; ``--recipe R --node-selector K=V`` does the
same for one recipe and selector. The table gets a section per pool, the CTRF tests are named
``<pool>: <constraint>`` in suite ``["readiness", "<pool>"]``. A pool without a node in the snapshot fails.

Exit 0 when no constraint of severity ``error`` failed, 1 when one did (after the report is written),
2 for invalid input (recipe, constraint path/operator/value, snapshot), 3 when a ``cm://`` snapshot is
unreachable.
"""

from __future__ import annotations

import argparse

from aicr_gen.errors import FindingsError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NamedTuple

    from aicr_gen.drift.constraints import ConstraintResult
else:
    from aicr_gen.records import NamedTuple

SUITE = "readiness"
STATUSES = ("passed", "failed", "skipped", "pending", "other")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``validate``: the recipe (or a spec's pools), the snapshot and the report."""
    parser.add_argument("--recipe", metavar="FILE", help="RecipeResult file (or --spec)")
    parser.add_argument("--spec", metavar="SPEC", help="ClusterSpec with spec.pools: each pool's recipe against the "
                                                       "snapshot's nodes of that pool")
    parser.add_argument("--pool", action="append", metavar="NAME", help="with --spec: only this pool (repeatable)")
    parser.add_argument("--node-selector", action="append", metavar="K=V",
                        help="with --recipe: evaluate against the snapshot's nodes with these labels (repeatable)")
    parser.add_argument("--snapshot", required=True, metavar="SRC", help="snapshot file, - or cm://NAMESPACE/NAME")
    parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for cm:// sources")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context for cm:// sources")
    parser.add_argument("--format", choices=("table", "json"), default="table", help="json: a CTRF report")
    parser.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (default: stdout)")


def ctrf_report(results: Sequence[ConstraintResult], pools: Sequence[str | None] = ()) -> dict[str, Any]:
    """The CTRF report of ``results`` (start/stop fixed at 0 for determinism); ``pools`` names each result's
    pool, if any."""
    summary: dict[str, int] = {"tests": len(results)}
    for status in STATUSES:
        summary[status] = sum(1 for result in results if result.status == status)
    summary.update(start=0, stop=0)
    tests: list[dict[str, Any]] = []
    for index, result in enumerate(results):
        pool = pools[index] if index < len(pools) else None
        test: dict[str, Any] = {"name": f"{pool}: {result.name}" if pool else result.name, "status": result.status,
                                "duration": 0, "suite": [SUITE, pool] if pool else [SUITE]}
        if result.message:
            test["message"] = result.message
        test["stdout"] = [_line(result)]
        extra: dict[str, Any] = {"expected": result.expected, "actual": result.actual, "severity": result.severity}
        if result.unit:
            extra["unit"] = result.unit
        if result.remediation and result.status != "passed":
            extra["remediation"] = result.remediation
        if pool:
            extra["pool"] = pool
        test["extra"] = extra
        tests.append(test)
    return {"results": {"tool": {"name": "aicr-gen"}, "summary": summary, "tests": tests}}


def _line(result: ConstraintResult) -> str:
    actual = "<not found>" if result.actual is None else result.actual
    return f"{result.name}: expected {result.expected}, actual {actual}: {result.status}"


def _result_word(result: ConstraintResult) -> str:
    if result.status == "failed" and result.severity == "warning":
        return "failed (warning)"
    return result.status


def table(results: Sequence[ConstraintResult]) -> str:
    """A plain-text table of ``results`` and a summary line."""
    rows = [("NAME", "EXPECTED", "ACTUAL", "RESULT")]
    for result in results:
        actual = "<not found>" if result.actual is None else result.actual
        if result.unit and result.actual is not None:
            actual = f"{actual} {result.unit}"
        rows.append((result.name, result.expected, actual, _result_word(result)))
    from aicr_gen.text.tables import aligned

    lines = aligned(rows)
    counts = {status: sum(1 for r in results if r.status == status) for status in ("passed", "failed", "skipped")}
    lines.append("")
    lines.append(f"{len(results)} constraints: {counts['passed']} passed, {counts['failed']} failed, "
                 f"{counts['skipped']} skipped")
    for result in results:
        if result.status != "passed" and result.remediation:
            lines.append(f"remediation for {result.name}: {result.remediation.strip()}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


class PoolCheck(NamedTuple):
    """One pool's recipe constraints and the snapshot as the pool sees it."""

    name: str
    selector: dict[str, str]
    constraints: list[Any]


def _pool_results(check: PoolCheck, snapshot: dict[str, Any]) -> tuple[list[ConstraintResult], str]:
    """The pool's results and its section heading; no node of the pool in the snapshot is one failed result."""
    from aicr_gen.drift.constraints import ConstraintResult, evaluate
    from aicr_gen.drift.pools import pool_view

    view = pool_view(snapshot, check.selector)
    selector = ",".join(f"{key}={value}" for key, value in check.selector.items())
    heading = f"pool {check.name} ({selector}): {len(view.nodes)} node(s) in the snapshot"
    if not view.nodes:
        return [ConstraintResult("NodeTopology.label", selector, "failed", "error", None,
                                 f"pool {check.name}: no node of the snapshot has the labels {selector}")], heading
    return evaluate(check.constraints, view.snapshot), "\n".join([heading, *(f"note: {n}" for n in view.notes)])


def _checks(args: argparse.Namespace) -> list[PoolCheck] | None:
    """The pools to validate (``--spec``, or ``--recipe`` with ``--node-selector``), or None for a plain
    ``--recipe`` run."""
    from aicr_gen.catalog.recipe_file import load_recipe
    from aicr_gen.errors import InvalidInputError

    spec_file, recipe_file = getattr(args, "spec", None), args.recipe
    selectors, pools = getattr(args, "node_selector", None) or [], getattr(args, "pool", None) or []
    if (spec_file is None) == (recipe_file is None):
        raise InvalidInputError("give --recipe FILE (one recipe) or --spec SPEC (each of its pools), not both")
    if spec_file is None:
        if pools:
            raise InvalidInputError("--pool names pools of a spec; give --spec SPEC, or --node-selector with --recipe")
        if not selectors:
            return None
        from aicr_gen.commands.certification import _node_selector

        selector = _node_selector(selectors)
        name = ",".join(f"{key}={value}" for key, value in selector.items())
        return [PoolCheck(name, selector, load_recipe(recipe_file).get("constraints") or [])]
    if selectors:
        raise InvalidInputError("--node-selector goes with --recipe; with --spec each pool's nodeSelector is used")
    from pathlib import Path

    from aicr_gen.gitops.trees.recipes import resolve_pools
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(spec_file)
    names = [pool.name for pool in cluster.spec.pools]
    if not names:
        raise InvalidInputError(f"{spec_file}: the spec has no spec.pools; validate its recipe with --recipe")
    for name in pools:
        if name not in names:
            raise InvalidInputError(f"--pool {name!r}: not a pool of {spec_file} ({', '.join(names)})")
    base = Path(spec_file).parent if spec_file != "-" else None
    recipes = resolve_pools(cluster, base).pools
    return [PoolCheck(pool.name, dict(pool.nodeSelector), recipes[pool.name].get("constraints") or [])
            for pool in cluster.spec.pools if not pools or pool.name in pools]


def _json(report: dict[str, Any]) -> str:
    from aicr_gen.yaml import dump_json

    return dump_json(report)


def run(args: argparse.Namespace) -> int:
    """Run ``aicr-gen validate``."""
    from aicr_gen.catalog.recipe_file import load_recipe
    from aicr_gen.drift.constraints import evaluate
    from aicr_gen.drift.load import load_snapshot
    from aicr_gen.edges.output import write_text

    checks = _checks(args)
    groups = [(None, check.constraints) for check in checks] if checks else [
        (None, load_recipe(args.recipe).get("constraints") or [])]
    # Check the constraints before reading the snapshot: a bad recipe is reported without a cluster call.
    for _, constraints in groups:
        evaluate(constraints, {"measurements": []})
    snapshot = load_snapshot(args.snapshot, kubeconfig=getattr(args, "kubeconfig", None),
                             context=getattr(args, "context", None))
    owners: list[str | None] = []
    if checks is None:
        results = evaluate(groups[0][1], snapshot)
        text = _json(ctrf_report(results)) if args.format == "json" else table(results)
    else:
        results, sections = [], []
        for check in checks:
            found, heading = _pool_results(check, snapshot)
            results += found
            owners += [check.name] * len(found)
            sections.append(f"{heading}\n{table(found)}")
        text = _json(ctrf_report(results, owners)) if args.format == "json" else "\n".join(sections)
    write_text(args.output, text)
    pools = owners if checks is not None else [None] * len(results)
    failed = [(pool, result) for pool, result in zip(pools, results, strict=True) if result.blocking]
    if failed:
        listed = "; ".join(f"pool {pool}: {result.message}" if pool else result.message for pool, result in failed)
        raise FindingsError(f"{len(failed)} of {len(results)} readiness constraints failed: {listed}")
    return 0
