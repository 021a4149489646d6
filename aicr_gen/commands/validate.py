"""``aicr-gen validate``: readiness, i.e. a recipe's top-level ``constraints`` against a snapshot.

Output is a table (NAME, EXPECTED, ACTUAL, RESULT) or, with ``--format json``, a CTRF report
(https://ctrf.io) whose tests are the constraints (suite ``["readiness"]``). Timestamps are fixed at 0
so the report is deterministic.

Exit 0 when no constraint of severity ``error`` failed, 1 when one did (after the report is written),
2 for invalid input (recipe, constraint path/operator/value, snapshot), 3 when a ``cm://`` snapshot is
unreachable.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from aicr_gen.drift.constraints import ConstraintResult, blocking, evaluate
from aicr_gen.errors import FindingsError

SUITE = "readiness"
STATUSES = ("passed", "failed", "skipped", "pending", "other")


def ctrf_report(results: Sequence[ConstraintResult]) -> dict[str, Any]:
    """The CTRF report of ``results`` (start/stop fixed at 0 for determinism)."""
    summary: dict[str, int] = {"tests": len(results)}
    for status in STATUSES:
        summary[status] = sum(1 for result in results if result.status == status)
    summary.update(start=0, stop=0)
    tests: list[dict[str, Any]] = []
    for result in results:
        test: dict[str, Any] = {"name": result.name, "status": result.status, "duration": 0, "suite": [SUITE]}
        if result.message:
            test["message"] = result.message
        test["stdout"] = [_line(result)]
        extra: dict[str, Any] = {"expected": result.expected, "actual": result.actual, "severity": result.severity}
        if result.unit:
            extra["unit"] = result.unit
        if result.remediation and result.status != "passed":
            extra["remediation"] = result.remediation
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
    widths = [max(len(row[col]) for row in rows) for col in range(3)]
    lines = ["  ".join([*(cell.ljust(width) for cell, width in zip(row[:3], widths, strict=True)), row[3]])
             for row in rows]
    counts = {status: sum(1 for r in results if r.status == status) for status in ("passed", "failed", "skipped")}
    lines.append("")
    lines.append(f"{len(results)} constraints: {counts['passed']} passed, {counts['failed']} failed, "
                 f"{counts['skipped']} skipped")
    for result in results:
        if result.status != "passed" and result.remediation:
            lines.append(f"remediation for {result.name}: {result.remediation.strip()}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def run(args: argparse.Namespace) -> int:
    """Run ``aicr-gen validate``."""
    from aicr_gen.commands.bundle import load_recipe
    from aicr_gen.drift.snapshot import load_snapshot
    from aicr_gen.output import write_text
    from aicr_gen.yamlio import dump_json

    recipe = load_recipe(args.recipe)
    constraints = recipe.get("constraints") or []
    # Check the constraints before reading the snapshot: a bad recipe is reported without a cluster call.
    evaluate(constraints, {"measurements": []})
    snapshot = load_snapshot(args.snapshot, kubeconfig=getattr(args, "kubeconfig", None),
                             context=getattr(args, "context", None))
    results = evaluate(constraints, snapshot)
    text = dump_json(ctrf_report(results)) if args.format == "json" else table(results)
    write_text(args.output, text)
    failed = blocking(results)
    if failed:
        listed = "; ".join(result.message for result in failed)
        raise FindingsError(f"{len(failed)} of {len(results)} readiness constraints failed: {listed}")
    return 0
