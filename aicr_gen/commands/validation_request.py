"""``aicr-gen validation-request``: an NVSentinel ValidationRequest for nodes, on stdout or in a file."""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK


def arguments(parser: argparse.ArgumentParser) -> None:
    """``validation-request``: the nodes, the tests and where to write."""
    parser.add_argument("--node", action="append", required=True, metavar="NAME", help="node to validate")
    parser.add_argument("--test", action="append", default=[], metavar="NAME", help="lifecycle test to run")
    parser.add_argument("--values", metavar="FILE", help="our NVSentinel values: every test must exist there")
    parser.add_argument("--name", help="object name (default: derived from the nodes)")
    parser.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")


def run(args: argparse.Namespace) -> int:
    """Check the nodes and tests (against ``--values`` when given) and write the request."""
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.edges.output import write_text
    from aicr_gen.sentinel import validation_request
    from aicr_gen.yaml import dump, load_bytes

    lifecycle = None
    if args.values is not None:
        doc = load_bytes(read_input(args.values, "--values"), args.values)
        lifecycle = validation_request.lifecycle_tests(doc)
    request = validation_request.build(args.node, args.test, name=args.name, lifecycle=lifecycle)
    write_text(args.output, dump(request))
    return OK
