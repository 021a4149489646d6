"""Render a pooled diff (``aicr_gen.drift.pools.pool_drift``) as table, JSON, YAML or Markdown: the summary of
everything, then a section per part (the cluster-wide releases, each pool) in ``drift_report``'s own table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_gen.report import drift as drift_report
from aicr_gen.text import markdown as md


def _sections(document: Mapping[str, Any]) -> list[tuple[dict[str, Any], list[str]]]:
    """Per part, a diff result of its changes (sources naming the part) and the lines that say what it covers."""
    spec, target = document["baselineSource"], document["targetSource"]
    changes = document["changes"]
    shared = document["shared"]
    found = [({"baselineSource": f"{spec} (cluster-wide)", "targetSource": target,
               "changes": [entry for entry in changes if "pool" not in entry], "summary": shared["summary"]},
              [f"cluster-wide: Helm releases are the cluster's, so the components every pool has "
               f"({', '.join(shared['components']) or 'none'}) and releases no recipe names are compared once"])]
    for pool in document["pools"]:
        selector = ",".join(f"{key}={value}" for key, value in pool["nodeSelector"].items())
        lines = [f"pool {pool['name']} ({selector}): {len(pool['nodes'])} node(s) in the snapshot; its own "
                 f"components: {', '.join(pool['components']) or 'none'}"]
        driver = pool["driver"]
        if driver["desired"] is not None:
            live = ", ".join(f"{node} {version or '-'}" for node, version in driver["nodes"].items())
            lines.append(f"NVIDIADriver {pool['name']}: version {driver['desired']}; live: {live or 'no node'}")
        lines += [f"note: {note}" for note in pool["notes"]]
        found.append(({"baselineSource": f"{spec} (pool {pool['name']})", "targetSource": target,
                       "changes": [entry for entry in changes if entry.get("pool") == pool["name"]],
                       "summary": pool["summary"]}, lines))
    return found


def table(document: Mapping[str, Any]) -> str:
    parts = [drift_report.summary_line(document)]
    for result, lines in _sections(document):
        parts += ["", *lines, drift_report.table(result).rstrip("\n")]
    return "\n".join(parts) + "\n"


def markdown(document: Mapping[str, Any]) -> str:
    parts = ["### aicr-gen diff", "", drift_report.markdown({**document, "changes": []}).split("\n", 2)[2].strip()]
    for result, lines in _sections(document):
        # drift_report.markdown opens with its own heading and a blank line: the section has one of its own
        body = drift_report.markdown(result).split("\n", 2)[2].rstrip("\n")
        parts += ["", f"#### {md.text(lines[0])}", "", *(f"- {md.text(line)}" for line in lines[1:]),
                  *([""] if lines[1:] else []), body]
    return "\n".join(parts) + "\n"


def render(document: Mapping[str, Any], fmt: str) -> str:
    """``document`` in one of ``drift_report.FORMATS``."""
    if fmt in ("json", "yaml"):
        return drift_report.render(document, fmt)
    return markdown(document) if fmt == "markdown" else table(document)
