"""``aicr-gen bisect``: from a failed Certification (or every Certification of a bisection round) and its
failed-nodes ConfigMaps, write the next round of Certifications, or the final suspects.

Exit 0 when a next round was written or nothing is left to suspect, 1 when the bisection ended with
suspect nodes (the findings), 2 on invalid input.
"""

from __future__ import annotations

import argparse
import sys


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
