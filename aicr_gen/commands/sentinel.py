"""``aicr-gen sentinel values``: NVSentinel Helm values (monitor mode by default) on stdout or in a file."""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK, InvalidInputError


def arguments(parser: argparse.ArgumentParser) -> None:
    """``sentinel values``: the mode, the rules and the circuit breaker, lifecycle and validation."""
    subcommands = parser.add_subparsers(dest="subcommand", metavar="values", required=True)
    values = subcommands.add_parser("values", help="write NVSentinel values (monitor mode by default)")
    values.add_argument("--mode", choices=("monitor", "quarantine"), default="monitor",
                        help="monitor: detect and report only (default); quarantine: cordon and taint faulty nodes")
    values.add_argument("--rules", metavar="FILE", help="extra fault-quarantine rule sets (YAML list or ruleSets:)")
    values.add_argument("--breaker-percentage", type=int, metavar="N",
                        help="circuit breaker: max %% of nodes cordoned (1-100)")
    values.add_argument("--breaker-duration", metavar="D", help="circuit breaker window, e.g. 5m")
    values.add_argument("--breaker-max-nodes", type=int, metavar="N", help="circuit breaker: max nodes cordoned")
    values.add_argument("--lifecycle", action="store_true", help="enable the lifecycle manager (scheduling gate)")
    values.add_argument("--validation", action="store_true", help="enable post-remediation validation")
    values.add_argument("--dry-run", action="store_true", help="global.dryRun: log actions without taking them")
    values.add_argument("--limit-rule-set", action="append", default=[], metavar="NAME=K=V[,K=V]",
                        help="act only on nodes with these labels (a pool's nodeSelector): adds a Node rule to the "
                             "rule set's match.all; repeat for more pools (a node matching any)")
    values.add_argument("--output", "-o", metavar="FILE", help="write the values to FILE (default: stdout)")


def run(args: argparse.Namespace) -> int:
    """Build the values from the flags, check them, and write them (nothing is written on an error)."""
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.edges.output import write_text
    from aicr_gen.sentinel import values as sentinel
    from aicr_gen.yaml import decode, dump, load_text

    rules: list[dict[str, object]] = []
    if args.rules is not None:
        if args.mode != "quarantine":
            raise InvalidInputError("--rules configures actions, and monitor mode takes none; "
                                    "add --mode quarantine (or drop the flag)")
        raw = read_input(args.rules, "--rules")
        rules = sentinel.parse_rules(load_text(decode(raw, args.rules), args.rules))
    breaker = sentinel.Breaker(percentage=args.breaker_percentage, duration=args.breaker_duration,
                               max_nodes=args.breaker_max_nodes)
    values = sentinel.values(args.mode, rules=rules, breaker=breaker, lifecycle=args.lifecycle,
                             validation=args.validation, dry_run=args.dry_run)
    limits = _limits(getattr(args, "limit_rule_set", None) or [])
    if limits:
        values = sentinel.limit_rule_sets(values, limits)
    write_text(args.output, dump(values))
    return OK


def _limits(texts: list[str]) -> dict[str, list[dict[str, str]]]:
    """``--limit-rule-set NAME=K=V[,K=V...]`` as rule set name -> node selectors (each flag one selector; several
    for one rule set: a node matching any), as ``sync`` builds them from spec.sentinel.ruleSetPools."""
    limits: dict[str, list[dict[str, str]]] = {}
    for text in texts:
        name, _, rest = text.partition("=")
        pairs = [pair.partition("=") for pair in rest.split(",")] if rest else []
        if not name.strip() or not pairs or any(not key or not sep for key, sep, _ in pairs):
            raise InvalidInputError(f"--limit-rule-set {text!r}: give NAME=KEY=VALUE[,KEY=VALUE...], e.g. "
                                    "'NVSwitch fatal error ruleset=node.kubernetes.io/instance-type=p6e-gb200'")
        limits.setdefault(name, []).append({key: value for key, _, value in pairs})
    return limits
