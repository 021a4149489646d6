"""Render a fleet drift document (``aicr_gen.drift.fleet.matrix``) as an aligned table, GitHub Markdown (a job
summary), JSON or YAML. One row per cluster, one column per component; a cell is the version when the cluster runs
what its recipe wants, ``desired -> live`` when it drifted, ``missing``, ``unknown``, ``unreachable``, or ``-``
when the component is not the cluster's. Releases no cluster's recipe names share one last column.

The Markdown opens with two pictures (``aicr_gen.text.mermaid``): a pie of the clusters by status (ok, drifted,
unreachable) when the fleet has several, and a bar chart of the clusters each component drifted on (drifted or
missing), the ``mermaid.POINTS`` components with the most first, when any did."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aicr_gen.drift import fleet
from aicr_gen.text import markdown as md
from aicr_gen.text import mermaid
from aicr_gen.text.tables import aligned

FORMATS = ("table", "markdown", "json", "yaml")
SUMMARY_LIMIT = 1_000_000
"""Characters of Markdown at most: GitHub takes up to 1 MiB per step in ``$GITHUB_STEP_SUMMARY``."""
NONE = "-"
OTHERS = "other releases"
COLOURS = {fleet.OK: "#2e7d32", fleet.DRIFTED: "#f9a825", fleet.UNREACHABLE: "#c62828"}
"""The pie's slice per cluster status and its colour."""


def summary_line(document: Mapping[str, Any]) -> str:
    summary = document["summary"]
    text = f"{summary['drifted']} of {summary['clusters']} clusters drifted"
    if summary["unreachable"]:
        text += f", {summary['unreachable']} unreachable"
    return text + "."


def cell_text(cell: Mapping[str, Any] | None) -> str:
    """A cell as the matrix shows it."""
    if cell is None:
        return NONE
    status, want, have = cell["status"], cell["desired"], cell["live"]
    if status == fleet.OK:
        return str(want["version"] or have["version"] or fleet.OK)
    if status != fleet.DRIFTED:
        return str(status)
    if want["version"] and have["version"] != want["version"]:
        return f"{want['version']} -> {have['version'] or NONE}"
    field = next(field for field in ("namespace", "chart") if want[field] and have[field] != want[field])
    return f"{field} {want[field]} -> {have[field]}"


def _rows(document: Mapping[str, Any]) -> list[tuple[Mapping[str, Any], list[tuple[str, bool]]]]:
    """Each cluster and its cells in column order (the others last, when the fleet has any): the text, and
    whether the cell is a finding."""
    columns = document["components"]
    others = set(document["others"])
    out = []
    for cluster in document["clusters"]:
        by_name = {cell["component"]: cell for cell in cluster["components"]}
        texts = [(cell_text(cell), cell is not None and cell["status"] != fleet.OK)
                 for cell in (by_name.get(name) for name in columns)]
        if others:
            extra = ", ".join(name for name in sorted(by_name) if name in others)
            texts.append((extra or NONE, bool(extra)))
        out.append((cluster, texts))
    return out


def _header(document: Mapping[str, Any]) -> list[str]:
    return [*document["components"], *([OTHERS] if document["others"] else [])]


def _unreachable(document: Mapping[str, Any]) -> list[tuple[str, str]]:
    return [(f"{cluster['name']} ({cluster['source']})", str(cluster["error"])) for cluster in document["clusters"]
            if cluster["status"] == fleet.UNREACHABLE]


def table(document: Mapping[str, Any]) -> str:
    rows = [["CLUSTER", "STATUS", *_header(document)]]
    rows += [[cluster["name"], cluster["status"], *(text for text, _ in texts)] for cluster, texts in _rows(document)]
    lines = [summary_line(document), "", *aligned(rows)]
    unreachable = _unreachable(document)
    if unreachable:
        lines += ["", "unreachable:", *(f"  {name}: {error}" for name, error in unreachable)]
    return "\n".join(lines) + "\n"


def _md_row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def pictures(document: Mapping[str, Any]) -> list[str]:
    """The pie of clusters by status and the bar chart of drift by component (see the module rules)."""
    summary = document["summary"]
    lines = mermaid.pie("clusters", [(status, summary[status], colour) for status, colour in COLOURS.items()]) \
        if summary["clusters"] > 1 else []
    drifted: dict[str, int] = {}
    for cluster in document["clusters"]:
        for cell in cluster["components"]:
            if cell["status"] in (fleet.DRIFTED, fleet.MISSING):
                drifted[cell["component"]] = drifted.get(cell["component"], 0) + 1
    worst = sorted(drifted.items(), key=lambda item: (-item[1], item[0]))[:mermaid.POINTS]
    if worst:
        lines += ["", *mermaid.xychart("clusters drifted, by component", "component", [name for name, _ in worst],
                                       "clusters", [("drifted", [float(count) for _, count in worst])], bars=True)]
    return [*lines, ""] if lines else []


def markdown(document: Mapping[str, Any], limit: int = SUMMARY_LIMIT) -> str:
    """A job summary: heading, summary line, the pictures, the matrix (findings in bold) and why clusters were
    unreachable. Past ``limit`` characters the clusters without drift are left out, then the last rows, and a note
    says so."""
    head = ["### aicr-gen diff --fleet", "", summary_line(document), "", *pictures(document)]
    header = _header(document)
    table_head = [_md_row(["Cluster", "Status", *(md.text(name, mid_line=True) for name in header)]),
                  _md_row(["---"] * (len(header) + 2))]
    rows = [(cluster, _md_row([md.text(cluster["name"], mid_line=True), cluster["status"],
                               *(f"**{md.text(text, mid_line=True)}**" if finding else md.text(text, mid_line=True)
                                 for text, finding in texts)]))
            for cluster, texts in _rows(document)]
    unreachable = _unreachable(document)
    tail = ["", "Unreachable:", "", *(f"- {md.text(name)}: {md.text(error, mid_line=True)}"
                                      for name, error in unreachable)] if unreachable else []
    room = limit - sum(len(line) + 1 for line in (*head, *table_head, *tail)) - 200  # 200: the note
    kept = [line for _, line in rows]
    notes = []
    if sum(len(line) + 1 for line in kept) > room:
        kept = [line for cluster, line in rows if cluster["status"] != fleet.OK]
        notes.append(f"{len(rows) - len(kept)} clusters without drift are not listed (--format json has them).")
        findings, used = len(kept), 0
        for index, line in enumerate(kept):
            used += len(line) + 1
            if used > room:
                kept = kept[:index]
                notes.append(f"{findings - index} more clusters with drift are not listed.")
                break
    body = [*head, *table_head, *kept, *(["", " ".join(notes)] if notes else []), *tail]
    return "\n".join(body) + "\n"


def render(document: Mapping[str, Any], fmt: str) -> str:
    """``document`` in one of ``FORMATS``."""
    if fmt == "json":
        from aicr_gen.yaml import dump_json

        return dump_json(document)
    if fmt == "yaml":
        from aicr_gen.yaml import dump

        return dump(document)
    if fmt == "markdown":
        return markdown(document)
    return table(document)
