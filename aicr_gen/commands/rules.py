"""``aicr-gen rules test``: which NVSentinel rule sets match each HealthEvent, and what fault-quarantine
would do, offline. Exit 1 when a rule of an enabled rule set fails on every event (or node) it is evaluated on
(it never matches: dead configuration, named at its file and line; ``enabled: false`` on its rule set says so
explicitly), or, with ``--expect`` (a regression test), on a difference; 2 on a rule that does not compile."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, FindingsError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from aicr_gen.sentinel import rules as rules_module

SAMPLES = """\
samples: --events and --nodes take a file or a folder, read recursively with files sorted by path (.json,
.yaml and .yml; names starting with '.' skipped). A YAML file may hold several documents separated by '---'.
  --events  HealthEvents as NVSentinel's health monitors publish them (protojson names: nodeName, checkName,
            isFatal, errorCode, entitiesImpacted, ...; enums as names or numbers; RFC 3339 timestamps). Per
            file or document: a HealthEvent, a {healthEvent: ...} wrapper, a HealthEventResource (its spec),
            a list of these or {events: [...]}; other Kubernetes objects in a folder are skipped with a
            warning. An event is named after its file (FILE[N] when the file holds several).
  --nodes   the Node objects the events name in nodeName, e.g. kubectl get node NAME -o yaml, or
            kubectl get nodes -o yaml (a List): a Node, a List/NodeList or a list of Nodes per file or
            document. Rules see metadata and spec, as fault-quarantine's cache holds them (status dropped);
            an event on a node not given sees a Node without labels.
  --expect  event name -> any of matched, cordon, taints, labels, skipped, validation; or a list shaped like
            the --format json output.
layout, e.g.: samples/events/xid-79.yaml  samples/events/ecc-burst.yaml (3 documents)  samples/nodes/gpu-nodes.json
"""


def arguments(parser: argparse.ArgumentParser) -> None:
    """``rules test``: the values, the samples and the expectations."""
    subcommands = parser.add_subparsers(dest="subcommand", metavar="test", required=True)
    test = subcommands.add_parser("test", help="evaluate every rule set against events and nodes",
                                  epilog=SAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    test.add_argument("--values", required=True, metavar="FILE", help="NVSentinel values file")
    test.add_argument("--events", required=True, metavar="FILE|DIR",
                      help="HealthEvent samples: a file or a folder (see below)")
    test.add_argument("--nodes", metavar="FILE|DIR", help="Node samples the events name in nodeName: a file or folder")
    test.add_argument("--expect", metavar="FILE", help="expected rule sets and actions per event (regression test)")
    test.add_argument("--format", choices=("text", "json"), default="text",
                      help="text: a table per event; json: the outcomes, the shape --expect takes")


def run(args: argparse.Namespace) -> int:
    """Load, evaluate, print (text or JSON on stdout, warnings on stderr), then check ``--expect``."""
    import gc

    # The inputs live to the end and hold no reference cycles (10,000 events are some 300,000 objects); with
    # the cycle collector on, each of its full passes scans them all again, a third of the evaluation.
    gc.disable()
    try:
        return _run(args)
    finally:
        gc.enable()


def _run(args: argparse.Namespace) -> int:
    from aicr_gen.sentinel import rules
    config = rules.load_config(args.values)
    events, event_warnings = rules.load_events(args.events)
    nodes = rules.load_nodes(args.nodes)
    expected = rules.load_expectations(args.expect) if args.expect else None
    outcomes, run_warnings, dead = rules.evaluate(config, events, nodes, nodes_given=args.nodes is not None)
    for warning in (*config.warnings, *event_warnings, *run_warnings):
        sys.stderr.write(f"aicr-gen: warning: {warning}\n")
    if args.format == "json":
        from aicr_gen.yaml import dump_json

        sys.stdout.write(dump_json([outcome.to_json() for outcome in outcomes]))
    else:
        sys.stdout.write(render_text(config, outcomes))
    sys.stdout.flush()
    found = [f"{len(dead)} rule(s) never match: they fail on every event or node they are evaluated on; fix "
             "them (see the fields a HealthEvent and a Node have) or disable their rule set (enabled: false)"
             ":\n  " + "\n  ".join(dead)] if dead else []
    if expected is not None:
        diffs = rules.compare(outcomes, expected)
        if diffs:
            found.append(f"{len(diffs)} of {len(expected)} expected event(s) differ from {args.expect}:\n  "
                         + "\n  ".join(diffs))
        else:
            sys.stderr.write(f"aicr-gen: {len(expected)} expected event(s) match {args.expect}\n")
    if found:
        raise FindingsError("\n".join(found))
    return OK


def _cell(items: Sequence[str]) -> str:
    return ", ".join(items) if items else "-"


def render_text(config: rules_module.RuleConfig, outcomes: Sequence[rules_module.Outcome]) -> str:
    """A table, one row per event, then a summary line."""
    headers = ["EVENT", "NODE", "MATCHED", "CORDON", "TAINTS", "LABELS"]
    with_validation = bool(config.validation)
    if with_validation:
        headers.append("VALIDATION")
    headers.append("NOTE")
    rows = []
    for outcome in outcomes:
        row = [outcome.event, outcome.node, _cell(outcome.matched), "yes" if outcome.cordon else "no",
               _cell([f"{t.key}={t.value}:{t.effect}" for t in outcome.taints]),
               _cell([f"{k}={v}" for k, v in outcome.labels.items()])]
        if with_validation:
            row.append(_cell([f"{r.name} ({', '.join(r.tests) or 'default tests'})" for r in outcome.validation or []]))
        note = f"skipped: {outcome.skipped}" if outcome.skipped else ""
        row.append(note or ("quarantineOverrides.force: cordoned regardless of rules" if outcome.forced else ""))
        rows.append(row)
    from aicr_gen.text.tables import aligned

    lines = aligned([headers, *rows])
    lines.append(_summary(config, outcomes))
    return "\n".join(lines) + "\n"


def _summary(config: rules_module.RuleConfig, outcomes: Sequence[rules_module.Outcome]) -> str:
    cordoned = sum(1 for o in outcomes if o.cordon)
    tainted = sum(1 for o in outcomes if o.taints)
    labelled = sum(1 for o in outcomes if o.labels)
    skipped = sum(1 for o in outcomes if o.skipped)
    enabled = [r.name for r in config.rule_sets if r.enabled]
    used = {name for o in outcomes for name in o.matched}
    unused = [name for name in dict.fromkeys(enabled) if name not in used]
    text = (f"{len(outcomes)} event(s): {cordoned} cordoned, {tainted} tainted, {labelled} labelled, {skipped} "
            f"skipped; {len(enabled)} enabled rule set(s)")
    disabled = [r.name for r in config.rule_sets if not r.enabled]
    if disabled:
        text += f", {len(disabled)} disabled ({_cell(disabled)})"
    if unused:
        text += f"; matched no event: {_cell(unused)}"
    if config.criteria:
        text += f"; {len(config.criteria)} lifecycle criteria compiled (not evaluated)"
    return text
