"""Rendering of a :class:`~aicr_gen.certify.report_model.Report` as text (terminal), JSON (machines) or Markdown
(a pull-request comment: summary table first, then a chart of bus bandwidth by message size, per-size tables
folded in ``<details>``).

The nccl chart (``aicr_gen.text.mermaid``) draws each run's busbw per message size, the better of out-of-place and
in-place as ``busBandwidthGBps`` takes it: one line per run (its nodes and log line name it), one chart per set of
message sizes the runs share, at most ``CHARTS`` charts, each line's colour named under the chart. The text report
draws the same in its per-size table: a last column of ``#`` as long as the row's busbw, ``BAR`` of them at the
run's peak.

Every string that came from an input file is escaped for its target: control characters never reach a
terminal, and in Markdown (``aicr_gen.text.markdown``) nothing from it breaks a table, opens HTML, links or mentions.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from aicr_gen.certify.nvcre import POOL_LABEL
from aicr_gen.certify.report_model import (
    Bandwidth,
    Certification,
    DcgmDiag,
    NcclRow,
    NcclRun,
    Peak,
    Report,
    ThresholdCheck,
    run_scope,
)
from aicr_gen.text import markdown, mermaid
from aicr_gen.text.markdown import text as md
from aicr_gen.text.tables import aligned

CHARTS = 4
BAR = 30


def render(report: Report, fmt: str) -> str:
    """``report`` as ``text``, ``json`` or ``markdown``."""
    if fmt == "json":
        from aicr_gen.yaml import dump_json

        return dump_json(to_json(report))
    if fmt == "markdown":
        return _markdown(report)
    return _text(report)


# ------------------------------------------------------------------------------------------------ JSON


def to_json(report: Report) -> dict[str, Any]:
    """The report as plain data; the certification part keeps NVCRE's report field names."""
    out: dict[str, Any] = {"kind": report.kind, "source": report.source, "result": report.result,
                           "reasons": list(report.reasons)}
    if report.kind == "nccl":
        out["runs"] = [_run_json(run) for run in report.nccl]
    elif report.dcgm is not None:
        out.update(_dcgm_json(report.dcgm))
    elif report.certification is not None:
        out.update(_cert_json(report.certification))
    if report.thresholds:
        out["thresholds"] = [{"scope": c.scope, "key": c.key, "expression": c.expression, "measured": c.measured,
                              "passed": c.passed, "message": c.message} for c in report.thresholds]
    if report.notes:
        out["notes"] = list(report.notes)
    return out


def _bw_json(bw: Bandwidth | None) -> dict[str, Any] | None:
    if bw is None:
        return None
    return {"timeUs": bw.time_us, "algBW": bw.algbw, "busBW": bw.busbw, "wrong": bw.wrong}


def _peak_json(peak: Peak | None) -> dict[str, Any] | None:
    return None if peak is None else {"value": peak.value, "size": peak.size, "place": peak.place}


def _run_json(run: NcclRun) -> dict[str, Any]:
    bus, alg = run.max_busbw, run.max_algbw
    return {"test": run.test, "line": run.line, "version": run.version, "ranks": run.ranks,
            "nodes": list(run.hosts), "gpus": list(run.gpus), "passed": run.passed, "failures": list(run.failures),
            "busBandwidthGBps": bus.value if bus else None, "algBandwidthGBps": alg.value if alg else None,
            "busBandwidthPeak": _peak_json(bus), "algBandwidthPeak": _peak_json(alg),
            "avgBusBandwidthGBps": run.avg_busbw, "outOfBounds": run.out_of_bounds, "notes": list(run.notes),
            "rows": [{"size": row.size, "count": row.count, "type": row.type, "redop": row.redop, "root": row.root,
                      "outOfPlace": _bw_json(row.out_of_place), "inPlace": _bw_json(row.in_place)}
                     for row in run.rows]}


def _dcgm_json(diag: DcgmDiag) -> dict[str, Any]:
    serials = dict(diag.serials)
    return {"layout": diag.layout, "version": diag.version, "driver": diag.driver, "ran": diag.ran,
            "runtimeError": diag.runtime_error,
            "tests": [{"category": t.category, "name": t.name, "status": t.status, "warnings": list(t.warnings),
                       "results": [{"entity": r.entity, "status": r.status, "warnings": list(r.warnings),
                                    "info": list(r.info)} for r in t.results]} for t in diag.tests],
            "gpus": [{"entity": entity, "serial": serials.get(entity), "status": status, "failedTests": failed}
                     for entity, status, failed in diag.entities()]}


def _cert_json(cert: Certification) -> dict[str, Any]:
    return {"name": cert.name, "namespace": cert.namespace, "apiVersion": cert.api_version,
            "pool": cert.labels.get(POOL_LABEL),
            "targetNodes": list(cert.target_nodes) if cert.target_nodes is not None else None,
            "conditions": [{"type": c.type, "status": c.status, "reason": c.reason, "message": c.message}
                           for c in cert.conditions],
            "categories": [{"domain": cat.domain, "variant": cat.variant, "status": cat.status,
                            "failedNodesRef": cat.failed_nodes_ref, "succeededNodesRef": cat.succeeded_nodes_ref,
                            "failedNodes": None if cat.failed_nodes is None else
                            [{"name": r.name, "reason": r.reason, "message": r.message} for r in cat.failed_nodes]}
                           for cat in cert.categories],
            "failedNodes": [row.name for row in cert.failed_nodes],
            "failedNodeDetails": [{"name": r.name, "reason": r.reason, "message": r.message, "category": r.category}
                                  for r in cert.failed_nodes]}


# ------------------------------------------------------------------------------------------------ shared


def human_size(size: int) -> str:
    """Bytes the way nccl-tests users read them: ``8 B``, ``32 MiB``, ``31.99 MiB``."""
    for shift, unit in ((40, "TiB"), (30, "GiB"), (20, "MiB"), (10, "KiB")):
        if size >= 1 << shift:
            value = size / (1 << shift)
            return f"{value:.0f} {unit}" if size % (1 << shift) == 0 else f"{value:.2f} {unit}"
    return f"{size} B"


def _axis_size(size: int) -> str:
    """Bytes as short as a chart's axis wants them: ``8B``, ``32M``, ``1G``, ``31.99M``."""
    return human_size(size).replace(" ", "").replace("iB", "")


def _gbps(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


def _peak(peak: Peak | None) -> str:
    return "-" if peak is None else f"{peak.value:.2f} GB/s at {human_size(peak.size)} {peak.place}"


def _hosts(hosts: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(hosts[:limit])
    return shown + (f" +{len(hosts) - limit} more" if len(hosts) > limit else "")


def _wrong(row: NcclRow) -> str:
    values = [bw.wrong for _, bw in row.halves()]
    if all(v is None for v in values):
        return "N/A"
    return str(sum(v or 0 for v in values))


def _row_cells(row: NcclRow) -> list[str]:
    oop, inp = row.out_of_place, row.in_place
    return [human_size(row.size), _gbps(oop.algbw if oop else None), _gbps(oop.busbw if oop else None),
            _gbps(inp.algbw if inp else None), _gbps(inp.busbw if inp else None), _wrong(row)]


_ROW_HEADER = ["Size", "OOP algbw", "OOP busbw", "IP algbw", "IP busbw", "#wrong"]


def _run_summary(run: NcclRun) -> str:
    where = " ".join(p for p in (f"{run.ranks} rank(s)" if run.ranks else "",
                                 f"on {len(run.hosts)} node(s)" if run.hosts else "") if p)
    parts = [where, f"nccl-tests {run.version}" if run.version else "", ", ".join(run.gpus)]
    return ", ".join(p for p in parts if p)


def _run_passed(report: Report, run: NcclRun) -> bool:
    """The run passed nccl-tests' own checks and every threshold set for it."""
    scope = run_scope(run, len(report.nccl))
    return run.passed and all(check.passed for check in report.thresholds if check.scope == scope)


def _run_verdict(report: Report, run: NcclRun) -> str:
    if _run_passed(report, run):
        return "PASSED"
    return "FAILED" if not run.passed else "FAILED (threshold)"


def _threshold_line(check: ThresholdCheck) -> str:
    return f"{'PASS' if check.passed else 'FAIL'}  {check.scope}: {check.message or check.key}"


# ------------------------------------------------------------------------------------------------ text


def _text(report: Report) -> str:
    title = {"nccl": "NCCL report", "dcgm": "DCGM diagnostic report", "certification": "Certification report"}
    lines = [f"{title[report.kind]}: {report.source}", f"Result: {report.result}"]
    lines += [f"  - {reason}" for reason in report.reasons]
    if report.kind == "nccl":
        for run in report.nccl:
            lines += ["", *_run_text(run, _run_verdict(report, run))]
    elif report.dcgm is not None:
        lines += ["", *_dcgm_text(report.dcgm)]
    elif report.certification is not None:
        lines += ["", *_cert_text(report.certification)]
    if report.thresholds:
        lines += ["", "Thresholds", *(f"  {_threshold_line(c)}" for c in report.thresholds)]
    if report.notes:
        lines += ["", "Notes", *(f"  {note}" for note in report.notes)]
    return "\n".join(lines) + "\n"


def _run_text(run: NcclRun, verdict: str) -> list[str]:
    lines = [f"{run.test} (line {run.line}): {verdict}"]
    summary = _run_summary(run)
    if summary:
        lines.append(f"  {summary}")
    if run.hosts:
        lines.append(f"  nodes: {_hosts(run.hosts, 8)}")
    if run.rows:
        lines.append(f"  busBandwidthGBps {_peak(run.max_busbw)} (max busbw)")
        lines.append(f"  algBandwidthGBps {_peak(run.max_algbw)} (max algbw)")
    if run.avg_busbw is not None:
        lines.append(f"  avg bus bandwidth {run.avg_busbw:g} GB/s (nccl-tests footer: mean over every row)")
    lines += [f"  note: {note}" for note in run.notes]
    lines += [f"  failure: {failure}" for failure in run.failures]
    if run.rows:
        peak = max(max(bw.busbw for _, bw in row.halves()) for row in run.rows) or 1.0
        lines += aligned([[*_ROW_HEADER, "busbw"],
                          *([*_row_cells(row), "#" * round(BAR * max(bw.busbw for _, bw in row.halves()) / peak)]
                            for row in run.rows)], right=(1, 2, 3, 4, 5), indent="  ")
    return lines


def _dcgm_text(diag: DcgmDiag) -> list[str]:
    lines = [f"DCGM {diag.version or '?'} ({diag.layout} layout)" + (f", driver {diag.driver}" if diag.driver else "")]
    if diag.runtime_error:
        lines.append(f"did not run: {diag.runtime_error}")
    if diag.tests:
        rows = []
        for test in diag.tests:
            bad = [r for r in test.results if r.status in ("fail", "warn")]
            detail = "; ".join(f"{r.entity} {r.status}" + (f": {r.warnings[0]}" if r.warnings else "") for r in bad)
            rows.append([test.category, test.name, test.status, detail])
        lines += ["", "Tests", *aligned([["Category", "Test", "Status", "Detail"], *rows], indent="  ")]
    entities = diag.entities()
    if entities:
        serials = dict(diag.serials)
        rows = [[entity, serials.get(entity, "-"), status, ", ".join(failed) or "-"]
                for entity, status, failed in entities]
        lines += ["", "GPUs", *aligned([["Entity", "Serial", "Worst", "Failed tests"], *rows], indent="  ")]
    return lines


def _cert_text(cert: Certification) -> list[str]:
    where = f" (namespace {cert.namespace})" if cert.namespace else ""
    pool = f", pool {cert.labels[POOL_LABEL]}" if POOL_LABEL in cert.labels else ""
    lines = [f"Certification {cert.name}{where}{pool}, {cert.api_version}"]
    if cert.target_nodes is not None:
        lines.append(f"  target: {len(cert.target_nodes)} node(s): {_hosts(list(cert.target_nodes), 8)}")
    if cert.conditions:
        lines += ["", "Conditions"]
        for cond in cert.conditions:
            detail = ": ".join(part for part in (cond.reason, cond.message) if part)
            lines.append(f"  {cond.type}={cond.status}" + (f" {detail}" if detail else ""))
    if cert.categories:
        rows = [[cat.key, cat.status, "-" if cat.failed_nodes is None else str(len(cat.failed_nodes)),
                 cat.failed_nodes_ref or "-"] for cat in cert.categories]
        lines += ["", "Categories",
                  *aligned([["Category", "Status", "Failed nodes", "failedNodesRef"], *rows], right=(2,), indent="  ")]
    failed = cert.failed_nodes
    if failed:
        lines += ["", f"Failed nodes ({len(failed)})",
                  *aligned([["Node", "Reason", "Category", "Message"],
                            *([r.name, r.reason or "-", r.category or "-", r.message or "-"] for r in failed)],
                           indent="  ")]
    return lines


# ------------------------------------------------------------------------------------------------ Markdown

def _md_table(header: list[str], rows: list[list[str]], right: Callable[[int], bool] = lambda i: False) -> list[str]:
    align = ["---:" if right(i) else "---" for i in range(len(header))]
    return [f"| {' | '.join(header)} |", f"| {' | '.join(align)} |", *(f"| {' | '.join(r)} |" for r in rows)]


def _markdown(report: Report) -> str:
    title = {"nccl": "NCCL report", "dcgm": "DCGM diagnostic report", "certification": "Certification report"}
    lines = [f"### {title[report.kind]}: **{report.result}**", "", f"Source: {md(report.source)}", ""]
    if report.reasons:
        lines += [*(f"- {md(reason)}" for reason in report.reasons[:20])]
        if len(report.reasons) > 20:
            lines.append(f"- ... and {len(report.reasons) - 20} more")
        lines.append("")
    if report.kind == "nccl":
        lines += _nccl_md(report)
    elif report.dcgm is not None:
        lines += _dcgm_md(report.dcgm)
    elif report.certification is not None:
        lines += _cert_md(report.certification)
    if report.thresholds:
        rows = [[md(c.scope), md(c.key), md(c.expression), "-" if c.measured is None else f"{c.measured:.4f}",
                 "PASS" if c.passed else "**FAIL**"] for c in report.thresholds]
        lines += ["#### Thresholds", "", *_md_table(["Run", "Key", "Expression", "Measured", "Result"], rows,
                                                    lambda i: i == 3), ""]
    if report.notes:
        lines += [*(f"> {md(note)}" for note in report.notes), ""]
    return "\n".join(lines).rstrip("\n") + "\n"


def _nccl_md(report: Report) -> list[str]:
    rows = []
    runs = report.nccl
    for run in runs:
        bus, alg = run.max_busbw, run.max_algbw
        rows.append([md(run.test), str(run.ranks), str(len(run.hosts)), _gbps(bus.value if bus else None),
                     _gbps(alg.value if alg else None), "-" if run.avg_busbw is None else f"{run.avg_busbw:g}",
                     "PASSED" if _run_passed(report, run) else f"**{_run_verdict(report, run)}**"])
    lines = _md_table(["Test", "Ranks", "Nodes", "busBandwidthGBps (max busbw)", "algBandwidthGBps (max algbw)",
                       "Avg busbw (footer)", "Result"], rows, lambda i: 1 <= i <= 5)
    lines += ["", *_nccl_charts(runs)]
    for run in runs:
        if not run.rows and not run.hosts:
            continue
        summary = markdown.html(f"{run.test} (line {run.line}): {len(run.rows)} size(s); {_run_summary(run)}")
        lines += ["<details>", f"<summary>{summary}</summary>", ""]
        if run.hosts:
            lines += [f"Nodes: {md(', '.join(run.hosts))}", ""]
        if run.rows:
            lines += _md_table(_ROW_HEADER, [_row_cells(row) for row in run.rows],
                               lambda i: i >= 1)
            lines.append("")
        lines += ["</details>", ""]
    return lines


def _nccl_charts(runs: Sequence[NcclRun]) -> list[str]:
    """Bus bandwidth by message size: a line per run, a chart per set of sizes (see the module rules)."""
    axes: dict[tuple[int, ...], list[NcclRun]] = {}
    for run in runs:
        if run.rows:
            axes.setdefault(tuple(row.size for row in run.rows), []).append(run)
    lines: list[str] = []
    for sizes, group in list(axes.items())[:CHARTS]:
        tests = list(dict.fromkeys(run.test for run in group))
        series = [(f"{_hosts(run.hosts, 1) or run.test} (line {run.line})" if len(tests) == 1 else
                   f"{run.test} (line {run.line})", [max(bw.busbw for _, bw in row.halves()) for row in run.rows])
                  for run in group]
        title = f"{tests[0]}: bus bandwidth by message size" if len(tests) == 1 else "bus bandwidth by message size"
        lines += [*mermaid.xychart(title, "message size",
                                   [_axis_size(size) for size in sizes], "busbw GB/s", series), ""]
        if len(series) > 1:
            named = [f"{colour} {md(name, mid_line=True)}" for colour, (name, _) in
                     zip(mermaid.colours(len(series)), series, strict=False)]
            rest = len(series) - len(named)
            lines += ["Lines: " + ", ".join(named) + (f"; {rest} more runs not drawn" if rest else "") + ".", ""]
    if len(axes) > CHARTS:
        lines += [f"{len(axes) - CHARTS} more sets of message sizes are not drawn (--format json has them).", ""]
    return lines


def _dcgm_md(diag: DcgmDiag) -> list[str]:
    meta = f"DCGM {md(diag.version or '?')} ({diag.layout} layout)" + (f", driver {md(diag.driver)}"
                                                                        if diag.driver else "")
    lines = [meta, ""]
    if diag.tests:
        rows = []
        for test in diag.tests:
            bad = [r for r in test.results if r.status in ("fail", "warn")]
            detail = "; ".join(f"{r.entity} {r.status}" + (f": {r.warnings[0]}" if r.warnings else "") for r in bad)
            status = f"**{test.status}**" if test.status == "fail" else test.status
            rows.append([md(test.category), md(test.name), status, md(detail) or "-"])
        lines += [*_md_table(["Category", "Test", "Status", "Detail"], rows), ""]
    entities = diag.entities()
    if entities:
        serials = dict(diag.serials)
        rows = [[md(entity), md(serials.get(entity, "-")), f"**{status}**" if status == "fail" else status,
                 md(", ".join(failed)) or "-"] for entity, status, failed in entities]
        lines += [*_md_table(["Entity", "Serial", "Worst", "Failed tests"], rows), ""]
    return lines


def _cert_md(cert: Certification) -> list[str]:
    where = f", namespace {md(cert.namespace)}" if cert.namespace else ""
    where += f", pool {md(cert.labels[POOL_LABEL])}" if POOL_LABEL in cert.labels else ""
    lines = [f"Certification {md(cert.name)}{where}", ""]
    if cert.categories:
        rows = [[md(cat.key), f"**{cat.status}**" if cat.status == "Failed" else cat.status,
                 "-" if cat.failed_nodes is None else str(len(cat.failed_nodes))] for cat in cert.categories]
        lines += [*_md_table(["Category", "Status", "Failed nodes"], rows, lambda i: i == 2), ""]
    failed = cert.failed_nodes
    if failed:
        rows = [[md(r.name), md(r.reason) or "-", md(r.category) or "-", md(r.message) or "-"] for r in failed[:50]]
        lines += [f"<details>\n<summary>Failed nodes ({len(failed)})</summary>", "",
                  *_md_table(["Node", "Reason", "Category", "Message"], rows), ""]
        if len(failed) > 50:
            lines += [f"... and {len(failed) - 50} more (see --format json)", ""]
        lines += ["</details>", ""]
    return lines
