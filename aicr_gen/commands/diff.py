"""``aicr-gen diff --baseline SRC --target SRC``: drift between two snapshots, or a recipe and a snapshot.

Exit 0: no drift, or drift without ``--fail-on-drift``; 1: drift with ``--fail-on-drift``; 2: invalid input;
3: a ``cm://`` source could not be reached. Unlike ``aicr diff`` (2 for both), drift and bad input differ.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from aicr_gen.errors import OK, InvalidInputError

DRIFT = 1


def _load(source: str, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    from aicr_gen.drift.snapshot import load_document

    kind, data = load_document(source, kubeconfig=args.kubeconfig, context=args.context)
    if kind == "RecipeResult" and not source.startswith("cm://") and source != "-" and Path(source).is_file():
        from aicr_gen.commands.bundle import load_recipe

        data = load_recipe(source)
    return kind, data


def run(args: argparse.Namespace) -> int:
    from aicr_gen.drift import diff, drift_report
    from aicr_gen.output import write_text

    if args.baseline == "-" and args.target == "-":
        raise InvalidInputError("--baseline and --target cannot both read standard input (-); give a file")
    base_kind, baseline = _load(args.baseline, args)
    target_kind, target = _load(args.target, args)
    if target_kind != "Snapshot":
        raise InvalidInputError(f"--target {args.target}: is a recipe; the target must be a snapshot "
                                "(the recipe goes in --baseline)")
    if base_kind == "Snapshot":
        result = diff.diff_snapshots(baseline, target, args.baseline, args.target)
    else:
        result = diff.diff_recipe(baseline, target, args.baseline, args.target)
    if args.emit_validation_request:
        _emit_request(args.emit_validation_request, result["changes"], target)
    write_text(args.output, drift_report.render(result, args.format))
    return DRIFT if args.fail_on_drift and result["summary"]["total"] else OK


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
    from aicr_gen.certify.validation_request import build
    from aicr_gen.output import write_text
    from aicr_gen.yamlio import dump

    write_text(file, dump(build(nodes)))
