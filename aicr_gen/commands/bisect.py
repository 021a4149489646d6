"""``aicr-gen bisect``: from a failed Certification (or every Certification of a bisection round) and its
failed-nodes ConfigMaps, write the next round of Certifications, or the final suspects.

Exit 0 when a next round was written or nothing is left to suspect, 1 when the bisection ended with
suspect nodes (the findings), 2 on invalid input.
"""

from __future__ import annotations

import argparse
import sys


def arguments(parser: argparse.ArgumentParser) -> None:
    """``bisect``: the failed Certification, its failed nodes, and where to write the next round."""
    parser.add_argument("--certification", required=True, metavar="FILE", help="the failed Certification (with status)")
    parser.add_argument("--failed-nodes", required=True, metavar="FILE", help="its failed-nodes ConfigMap")
    parser.add_argument("--min-group-size", type=int, default=2, metavar="N",
                        help="smallest node group a next Certification tests (default: 2)")
    parser.add_argument("--output", "-o", required=True, metavar="DIR", help="bundle folder (written atomically)")
    parser.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")


def run(args: argparse.Namespace) -> int:
    from aicr_gen.certify import bisect, nvcre_status
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.errors import InvalidInputError

    if args.min_group_size < 1:
        raise InvalidInputError(f"--min-group-size {args.min_group_size}: give 1 or more")
    certs = nvcre_status.parse_certifications(read_input(args.certification, "--certification"), args.certification)
    lists = nvcre_status.parse_node_lists(read_input(args.failed_nodes, "--failed-nodes"), args.failed_nodes,
                                          required=False)
    state = bisect.read_round([nvcre_status.attach_node_lists(cert, lists, require_match=False) for cert in certs])
    plan = bisect.plan_round(state.outcomes, round_number=state.number, min_group_size=args.min_group_size,
                             healthy=state.healthy, suspects=state.suspects)
    bundle = bisect.render(state, plan, args.min_group_size, args.output)
    write_bundle(bundle, args.output, args.force)
    sys.stdout.write(bisect.plan_text(state, plan, args.min_group_size, args.output))
    return 1 if plan.done and plan.suspects else 0
