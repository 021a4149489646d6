"""Render a rollout status document (``aicr_gen.rollout.gates.status``) as an aligned table, GitHub Markdown (a job
summary or a pull request's body) or JSON: the next step and its reasons first, then one row per cluster, wave by
wave, one column per gate, each cell the verdict's reason (``certified 412 GB/s >= 300``, ``drift: gpu-operator
v26.3.3 -> v26.4.0``, ``2 nodes quarantined: ...``); a wave's line says whether it runs the target baseline, its
verdict and its soak (``soaking, 3h left``).

The Markdown draws the waves in order as a flowchart (``aicr_gen.text.mermaid.chain``), each node
``wave: N passed / M waiting / K failed`` (unknown counts as failed), coloured by the wave's verdict (grey: a wave
not yet on the target baseline), the wave the next step names drawn with a thick border and the step's action."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aicr_gen.rollout.gates import FAIL, PASS, UNKNOWN, WAIT
from aicr_gen.text import markdown as md
from aicr_gen.text import mermaid
from aicr_gen.text.tables import aligned

FORMATS = ("table", "markdown", "json")
SUMMARY_LIMIT = 1_000_000
"""Characters of Markdown at most: GitHub takes up to 1 MiB per step in ``$GITHUB_STEP_SUMMARY``."""
BODY_LIMIT = 65_000
"""Characters of a pull request body's Markdown at most: GitHub refuses a body over 65,536."""
GATES = ("certified", "healthy", "no-drift", "no-quarantine")
MARK = {PASS: "ok", WAIT: "wait", FAIL: "FAIL", UNKNOWN: "??"}


def next_line(document: Mapping[str, Any]) -> str:
    """The next step in one line: ``advance prod (from canary)``, ``wait: ...``, ``halt: ...``, ``complete``."""
    step = document["next"]
    action = step["action"]
    if action == "complete":
        return "complete: every wave runs the first wave's baseline and proved it"
    if step["wave"] is None:
        return f"{action}: every wave runs the first wave's baseline; the last waves prove it"
    if action == "advance":
        return f"advance {step['wave']} (from {step['from']})"
    return f"{action}: {step['wave']} waits for {step['from']}"


def summary_line(document: Mapping[str, Any]) -> str:
    summary = document["summary"]
    parts = [f"{summary[key]} {name}" for key, name in ((PASS, "passed"), (WAIT, "waiting"), (FAIL, "failed"),
                                                         (UNKNOWN, "unknown")) if summary[key]]
    return f"{summary['clusters']} clusters in {summary['waves']} waves: {', '.join(parts) or 'none'}."


def _wave_line(wave: Mapping[str, Any]) -> str:
    target = "target baseline" if wave["atTarget"] else "previous baseline"
    return f"wave {wave['name']} ({target}; soak {wave['soak']}; gates {', '.join(wave['gates'])}): {wave['text']}"


def _cell(cluster: Mapping[str, Any], gate: str) -> tuple[str, str]:
    verdict = cluster["gates"].get(gate)
    if verdict is None:
        return "-", ""
    return verdict["text"], verdict["status"]


def table(document: Mapping[str, Any]) -> str:
    lines = [f"next: {next_line(document)}", *(f"  - {reason}" for reason in document["next"]["reasons"][:20])]
    extra = len(document["next"]["reasons"]) - 20
    if extra > 0:
        lines.append(f"  - ... and {extra} more (--format json has them all)")
    lines += ["", summary_line(document)]
    for wave in document["waves"]:
        rows = [["CLUSTER", "STATUS", *(gate.upper() for gate in GATES)]]
        for cluster in wave["clusters"]:
            rows.append([cluster["name"], cluster["status"], *(
                f"{MARK[state]} {text}" if state else text for text, state in (_cell(cluster, gate)
                                                                             for gate in GATES))])
        lines += ["", _wave_line(wave), *aligned(rows, indent="  ")]
    return "\n".join(lines) + "\n"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def picture(document: Mapping[str, Any]) -> list[str]:
    """The waves as a flowchart (see the module rules)."""
    steps = []
    for wave in document["waves"]:
        states = [cluster["status"] for cluster in wave["clusters"]]
        text = (f"{mermaid.plain(wave['name'])}: {states.count(PASS)} passed / {states.count(WAIT)} waiting / "
                f"{states.count(FAIL) + states.count(UNKNOWN)} failed")
        if wave["name"] == document["next"]["wave"]:
            text += f" (next: {document['next']['action']})"
        style = ("idle" if not wave["atTarget"] or not states else "pass" if wave["status"] == PASS else
                 "fail" if wave["status"] in (FAIL, UNKNOWN) else "wait")
        steps.append((text, style))
    names = [wave["name"] for wave in document["waves"]]
    step = document["next"]["wave"]
    return mermaid.chain(steps, highlight=names.index(step) if step in names else None)


def markdown(document: Mapping[str, Any], limit: int = SUMMARY_LIMIT) -> str:
    """A job summary or pull request body. Past ``limit`` characters the passing clusters are left out, then the
    last rows, and a note says so."""
    head = ["### aicr-gen rollout status", "", f"**Next: {md.text(next_line(document), mid_line=True)}**", ""]
    head += [f"- {md.text(reason, mid_line=True)}" for reason in document["next"]["reasons"][:50]]
    if len(document["next"]["reasons"]) > 50:
        head.append(f"- ... and {len(document['next']['reasons']) - 50} more (--format json has them all)")
    head += ["", md.text(summary_line(document)), "", *picture(document), ""]
    body: list[tuple[bool, str]] = []  # (a passing cluster's row, which goes first when room runs out; line)
    for wave in document["waves"]:
        body += [(False, f"#### {md.text(_wave_line(wave), mid_line=True)}"), (False, ""),
                 (False, _md_row(["Cluster", "Status", *GATES])), (False, _md_row(["---"] * (len(GATES) + 2)))]
        for cluster in wave["clusters"]:
            cells = []
            for gate in GATES:
                text, state = _cell(cluster, gate)
                shown = md.text(text, mid_line=True)
                cells.append(f"**{shown}**" if state in (FAIL, UNKNOWN) else shown)
            body.append((cluster["status"] == PASS, _md_row([md.text(cluster["name"], mid_line=True),
                                                            cluster["status"], *cells])))
        body.append((False, ""))
    room = limit - sum(len(line) + 1 for line in head) - 200  # 200: the note
    kept = [line for _, line in body]
    note = ""
    if sum(len(line) + 1 for line in kept) > room:
        kept = [line for passing, line in body if not passing]
        note = "Clusters that passed every gate are not listed (--format json has them)."
        used = 0
        for index, line in enumerate(kept):
            used += len(line) + 1
            if used > room:
                note += f" {len(kept) - index} more lines are not listed."
                kept = kept[:index]
                break
    return "\n".join([*head, *kept, *([note] if note else [])]) + "\n"


def pruned(rows: Sequence[Any], fmt: str, *, dry_run: bool) -> str:
    """``rollout prune``'s report (``rollout.prune.Pruned`` rows): per cluster what was (or would be) deleted and
    why, as a table or JSON."""
    if fmt == "json":
        from aicr_gen.yaml import dump_json

        return dump_json({"kind": "RolloutPrune", "dryRun": dry_run, "clusters": [
            {"name": row.cluster, "namespace": row.namespace, "error": row.error or None,
             "decisions": [{"name": item.name, "action": item.action, "reason": item.reason, "trigger": item.trigger,
                            "pool": item.pool, "created": item.created} for item in row.plan.decisions]
             if row.plan is not None else []} for row in rows]})
    verb = "would delete" if dry_run else "deleted"
    lines = []
    for row in rows:
        if row.plan is None:
            lines.append(f"{row.cluster} ({row.namespace}): unreachable: {row.error}")
            continue
        victims = row.plan.victims
        lines.append(f"{row.cluster} ({row.namespace}): {verb} {len(victims)}, kept "
                     f"{len(row.plan.decisions) - len(victims)}")
        lines += [f"  {item.name}: {item.reason}" for item in victims]
    return "\n".join(lines) + "\n"


def render(document: Mapping[str, Any], fmt: str) -> str:
    """``document`` in one of ``FORMATS``."""
    if fmt == "json":
        from aicr_gen.yaml import dump_json

        return dump_json(document)
    if fmt == "markdown":
        return markdown(document)
    return table(document)
