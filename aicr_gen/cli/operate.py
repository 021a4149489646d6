"""Argument definitions of the certify/operate commands (NVCRE, NVSentinel, reports). Parsing only: each
command's module is imported when it runs and exposes ``run(args) -> int``."""

from __future__ import annotations

import argparse

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# command (or "command subcommand") -> module under aicr_gen.commands
MODULES = {
    "certification": "certification",
    "sentinel values": "sentinel",
    "rules test": "rules",
    "validation-request": "validation_request",
    "report": "report",
    "bisect": "bisect",
    "validate": "validate",
    "diff": "diff",
    "snapshot": "snapshot",
}


REPORT_FORMATS = """\
input formats (KIND FILE, YAML or JSON where structured):
  nccl           nccl-tests output: the stdout of all_reduce_perf and the other tests (one or more runs, each
                 from "# Collective test starting"), or its -J JSON file. busBandwidthGBps is the largest
                 busbw of any row, out-of-place or in-place, as NVCRE measures it.
  dcgm           dcgmi diag -j JSON: DCGM 4.x ("DCGM Diagnostic", results per entity) or 3.x ("DCGM GPU
                 Diagnostic", gpu_ids). A runtime_error means the diagnostic did not run: INCOMPLETE, exit 1.
  certification  one NVCRE Certification with its status (conditions, categoryStatuses), e.g.
                 kubectl get certification NAME -n NS -o yaml. --failed-nodes adds the results ConfigMap its
                 categories name (failed-nodes.json.gz, succeeded-nodes.csv.gz in binaryData or data), e.g.
                 kubectl get configmap NAME -n NS -o yaml.
exit codes: 0 passed (or still running), 1 a gate failed, 2 invalid input.
"""

RULES_SAMPLES = """\
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


def _certification(commands: Any) -> None:
    cert = commands.add_parser("certification", help="NVCRE Certification manifests (optionally scheduled)")
    cert.add_argument("--category", action="append", required=True, metavar="DOMAIN/VARIANT",
                      help="a catalog category, e.g. communication/nccl-all-reduce (repeatable)")
    cert.add_argument("--node-selector", action="append", default=[], metavar="K=V", help="target node label")
    cert.add_argument("--node", action="append", default=[], metavar="NAME", help="target node name (repeatable)")
    cert.add_argument("--taint-selector", action="append", default=[], metavar="KEY[=VALUE][:EFFECT]",
                      help="taints the target nodes carry (with --node)")
    cert.add_argument("--threshold", action="append", default=[], metavar="KEY=EXPR",
                      help='CEL over `value`, e.g. busBandwidthGBps="value >= 300" (repeatable)')
    cert.add_argument("--option", action="append", default=[], metavar="[DOMAIN/VARIANT:]K=V",
                      help="a global option, or one category's with a DOMAIN/VARIANT: prefix")
    cert.add_argument("--schedule", metavar="CRON", help="also emit a CronJob that certifies on this schedule")
    cert.add_argument("--post-change", action="store_true",
                      help="also emit an Argo CD PostSync hook Job and a Flux Kustomization that certify after sync")
    cert.add_argument("--name", default="gpu-certification", help="Certification name (or generateName prefix)")
    cert.add_argument("--namespace", default="nvcre-system", help="namespace of the Certification and jobs")
    cert.add_argument("--output", "-o", required=True, metavar="DIR", help="bundle folder (written atomically)")
    cert.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")


def _sentinel(commands: Any) -> None:
    sentinel = commands.add_parser("sentinel", help="NVSentinel Helm values")
    # nested subcommands use the parser class of their parent (one-line usage errors, exit 2)
    sentinel_commands = sentinel.add_subparsers(dest="subcommand", metavar="values", parser_class=type(sentinel),
                                                required=True)
    values = sentinel_commands.add_parser("values", help="write NVSentinel values (monitor mode by default)")
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


def _rules(commands: Any) -> None:
    rules = commands.add_parser("rules", help="test NVSentinel CEL rules against HealthEvent samples")
    rules_commands = rules.add_subparsers(dest="subcommand", metavar="test", parser_class=type(rules),
                                          required=True)
    test = rules_commands.add_parser("test", help="evaluate every rule set against events and nodes",
                                     epilog=RULES_SAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    test.add_argument("--values", required=True, metavar="FILE", help="NVSentinel values file")
    test.add_argument("--events", required=True, metavar="FILE|DIR",
                      help="HealthEvent samples: a file or a folder (see below)")
    test.add_argument("--nodes", metavar="FILE|DIR", help="Node samples the events name in nodeName: a file or folder")
    test.add_argument("--expect", metavar="FILE", help="expected rule sets and actions per event (regression test)")
    test.add_argument("--format", choices=("text", "json"), default="text",
                      help="text: a table per event; json: the outcomes, the shape --expect takes")


def _validation_request(commands: Any) -> None:
    request = commands.add_parser("validation-request", help="an NVSentinel ValidationRequest for nodes")
    request.add_argument("--node", action="append", required=True, metavar="NAME", help="node to validate")
    request.add_argument("--test", action="append", default=[], metavar="NAME", help="lifecycle test to run")
    request.add_argument("--values", metavar="FILE", help="our NVSentinel values: every test must exist there")
    request.add_argument("--name", help="object name (default: derived from the nodes)")
    request.add_argument("--output", "-o", metavar="FILE", help="write to FILE (default: stdout)")


def _report(commands: Any) -> None:
    report = commands.add_parser("report", help="report NCCL, DCGM or Certification results offline",
                                 epilog=REPORT_FORMATS, formatter_class=argparse.RawDescriptionHelpFormatter)
    report.add_argument("kind", choices=("nccl", "dcgm", "certification"), help="what FILE holds (see below)")
    report.add_argument("file", metavar="FILE", help="the results file (- reads standard input)")
    report.add_argument("--threshold", action="append", default=[], metavar="KEY=EXPR",
                        help='nccl: CEL over `value`, e.g. busBandwidthGBps="value >= 300" (repeatable); exit 1 '
                             "when one fails")
    report.add_argument("--failed-nodes", metavar="FILE", help="the Certification's failed-nodes ConfigMap")
    report.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                        help="output format (default: text; markdown fits a job summary)")


def _bisect(commands: Any) -> None:
    bisect = commands.add_parser("bisect", help="next Certifications to isolate failing nodes, or the suspects")
    bisect.add_argument("--certification", required=True, metavar="FILE", help="the failed Certification (with status)")
    bisect.add_argument("--failed-nodes", required=True, metavar="FILE", help="its failed-nodes ConfigMap")
    bisect.add_argument("--min-group-size", type=int, default=2, metavar="N",
                        help="smallest node group a next Certification tests (default: 2)")
    bisect.add_argument("--output", "-o", required=True, metavar="DIR", help="bundle folder (written atomically)")
    bisect.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")


def _snapshot(commands: Any) -> None:
    snapshot = commands.add_parser("snapshot", help="capture a read-only AICR snapshot through the Kubernetes API")
    snapshot.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig (default: $KUBECONFIG, ~/.kube/config, "
                          "in a pod its service account)")
    snapshot.add_argument("--context", metavar="NAME", help="kubeconfig context (default: its current-context)")
    snapshot.add_argument("--output", "-o", metavar="FILE|cm://NS/NAME", help="where to write (default: stdout)")
    snapshot.add_argument("--api-version", choices=("aicr.run/v1", "aicr.run/v1alpha2"),
                          help="header to write: aicr.run/v1 (default; AICR >= 0.22) or aicr.run/v1alpha2 "
                               "(AICR <= 0.21)")
    snapshot.add_argument("--agent-cronjob", metavar="DIR",
                          help="instead, write a CronJob (+RBAC) that runs AICR's snapshot agent into cm://")
    snapshot.add_argument("--schedule", default="0 * * * *", metavar="CRON", help="schedule of --agent-cronjob")
    snapshot.add_argument("--configmap", default="cm://aicr-system/aicr-snapshot", metavar="cm://NS/NAME",
                          help="where the agent CronJob stores its snapshot")
    snapshot.add_argument("--force", action="store_true", help="replace a previous --agent-cronjob folder")


def _validate(commands: Any) -> None:
    validate = commands.add_parser("validate", help="evaluate a recipe's constraints against a snapshot")
    validate.add_argument("--recipe", metavar="FILE", help="RecipeResult file (or --spec)")
    validate.add_argument("--spec", metavar="SPEC", help="ClusterSpec with spec.pools: each pool's recipe against the "
                                                         "snapshot's nodes of that pool")
    validate.add_argument("--pool", action="append", metavar="NAME", help="with --spec: only this pool (repeatable)")
    validate.add_argument("--node-selector", action="append", metavar="K=V",
                          help="with --recipe: evaluate against the snapshot's nodes with these labels (repeatable)")
    validate.add_argument("--snapshot", required=True, metavar="SRC", help="snapshot file, - or cm://NAMESPACE/NAME")
    validate.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for cm:// sources")
    validate.add_argument("--context", metavar="NAME", help="kubeconfig context for cm:// sources")
    validate.add_argument("--format", choices=("table", "json"), default="table", help="json: a CTRF report")
    validate.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (default: stdout)")


DIFF_FLEET = """\
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


def _diff(commands: Any) -> None:
    diff = commands.add_parser("diff", help="drift between a baseline (snapshot or recipe) and a target snapshot, "
                               "or of a fleet of clusters against their specs' recipes",
                               epilog=DIFF_FLEET, formatter_class=argparse.RawDescriptionHelpFormatter)
    diff.add_argument("--baseline", metavar="SRC", help="snapshot or recipe: file, - or cm://NS/NAME")
    diff.add_argument("--target", metavar="SRC", help="snapshot: file, - or cm://NS/NAME")
    diff.add_argument("--fleet", nargs="+", action="extend", default=[], metavar="SPEC",
                      help="instead, the drift of every cluster of these ClusterSpec files or glob patterns")
    diff.add_argument("--spec", metavar="SPEC", help="instead of --baseline, the recipe of this ClusterSpec; with "
                      "spec.pools, the drift per pool (its components, its nodes' driver versions)")
    diff.add_argument("--pool", action="append", default=[], metavar="NAME",
                      help="with --spec: only this pool (repeatable); the cluster-wide releases are always shown")
    diff.add_argument("--snapshot", action="append", default=[], metavar="CLUSTER=SRC",
                      help="with --fleet: the snapshot of a cluster, a file or cm://NS/NAME (repeatable)")
    diff.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig for cm:// sources")
    diff.add_argument("--context", action="append", default=[], metavar="NAME",
                      help="kubeconfig context for cm:// sources; with --fleet CLUSTER=NAME (repeatable)")
    diff.add_argument("--fail-on-drift", action="store_true", help="exit 1 when anything drifted")
    diff.add_argument("--format", choices=("table", "json", "yaml", "markdown"), default="table",
                      help="output format (default: table)")
    diff.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (default: stdout)")
    diff.add_argument("--emit-validation-request", metavar="FILE",
                      help="when the GPU stack drifted, write a ValidationRequest for the affected GPU nodes")


# command -> the function adding its parser, in the order --help lists them
PARSERS = {"certification": _certification, "sentinel": _sentinel, "rules": _rules,
           "validation-request": _validation_request, "report": _report, "bisect": _bisect, "snapshot": _snapshot,
           "validate": _validate, "diff": _diff}


def module_for(args: argparse.Namespace) -> str | None:
    """The command module that runs ``args``, or None when it is not a certify/operate command."""
    sub = getattr(args, "subcommand", None)
    return MODULES.get(f"{args.command} {sub}" if sub else args.command)
