"""``aicr-gen report nccl|dcgm|certification FILE``: an offline report of results, as text, JSON or Markdown.

Exit 0 when the results pass (or are still running), 1 when they fail a gate (a failed run or test, a
violated ``--threshold``, a diagnostic that did not run), 2 when the input is invalid.
"""

from __future__ import annotations

import argparse

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.certify.report_model import Report

FORMATS = """\
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


def arguments(parser: argparse.ArgumentParser) -> None:
    """``report KIND FILE``: what the file holds, thresholds and the output format."""
    parser.epilog = FORMATS
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("kind", choices=("nccl", "dcgm", "certification"), help="what FILE holds (see below)")
    parser.add_argument("file", metavar="FILE", help="the results file (- reads standard input)")
    parser.add_argument("--threshold", action="append", default=[], metavar="KEY=EXPR",
                        help='nccl: CEL over `value`, e.g. busBandwidthGBps="value >= 300" (repeatable); exit 1 '
                             "when one fails")
    parser.add_argument("--failed-nodes", metavar="FILE", help="the Certification's failed-nodes ConfigMap")
    parser.add_argument("--format", choices=("text", "json", "markdown"), default="text",
                        help="output format (default: text; markdown fits a job summary)")


def parse_thresholds(given: list[str]) -> dict[str, str]:
    """``KEY=EXPR`` flags as a mapping; a flag without ``=`` or a key given twice is refused."""
    mapping: dict[str, str] = {}
    for item in given:
        key, sep, expression = item.partition("=")
        key = key.strip()
        if not sep or not key or not expression.strip():
            raise InvalidInputError(f'--threshold {item!r}: expected KEY=EXPR, e.g. busBandwidthGBps="value >= 300"')
        if key in mapping:
            raise InvalidInputError(f"--threshold {key}: given twice; keep one")
        mapping[key] = expression.strip()
    return mapping


def _with_thresholds(report: Report, given: list[str]) -> Report:
    from aicr_gen.certify import report_model, thresholds

    compiled = thresholds.compile_thresholds(parse_thresholds(given), "--threshold")
    unmeasured = sorted(set(compiled) - set(report_model.NCCL_MEASURED))
    if unmeasured:
        raise InvalidInputError(f"--threshold {unmeasured[0]}: nccl-tests does not measure it; `report nccl` "
                                f"measures {' and '.join(report_model.NCCL_MEASURED)}")
    return report_model.apply_thresholds(report, lambda measured: thresholds.evaluate(compiled, measured))


def run(args: argparse.Namespace) -> int:
    """Parse ``args.file`` as ``args.kind``, print the report, return its exit code."""
    from aicr_gen.certify import dcgm, nccl, nvcre_status
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.edges.output import write_text
    from aicr_gen.report import results as report_format

    if args.threshold and args.kind != "nccl":
        raise InvalidInputError(f"--threshold applies to `report nccl`; a {args.kind} report has no bandwidth to "
                                "compare (NVCRE evaluates a Certification's own spec thresholds)")
    if args.failed_nodes and args.kind != "certification":
        raise InvalidInputError("--failed-nodes applies to `report certification`")
    raw = read_input(args.file, "FILE")
    if args.kind == "nccl":
        report = nccl.parse_nccl(raw, args.file)
        if args.threshold:
            report = _with_thresholds(report, args.threshold)
    elif args.kind == "dcgm":
        report = dcgm.parse_dcgm(raw, args.file)
    else:
        certs = nvcre_status.parse_certifications(raw, args.file)
        if len(certs) != 1:
            raise InvalidInputError(f"{args.file}: holds {len(certs)} Certifications; report one at a time")
        cert = certs[0]
        if args.failed_nodes:
            lists = nvcre_status.parse_node_lists(read_input(args.failed_nodes, "--failed-nodes"), args.failed_nodes)
            cert = nvcre_status.attach_node_lists(cert, lists)
        report = nvcre_status.certification_report(cert)
    write_text(None, report_format.render(report, args.format))
    return report.exit_code
