"""Render a diff result (``aicr_gen.drift.diff.result``) as table, JSON, YAML or Markdown. Each format imports
what it needs when it renders (Markdown's escaping alone costs a JSON diff ~2 ms)."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FORMATS = ("table", "json", "yaml", "markdown")


def value_text(value: Any) -> str:
    """A change value as text; None is ``<nil>`` as in AICR."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def summary_line(result: Mapping[str, Any]) -> str:
    summary = result["summary"]
    if not summary["total"]:
        return f"No drift between {result['baselineSource']} and {result['targetSource']}."
    return (f"Drift between {result['baselineSource']} and {result['targetSource']}: {summary['total']} change(s) "
            f"({summary['added']} added, {summary['removed']} removed, {summary['modified']} modified).")


def _cell(value: Any, present: bool) -> str:
    return value_text(value) if present else "-"


def table(result: Mapping[str, Any]) -> str:
    from aicr_gen.text.tables import aligned

    rows = [("KIND", "PATH", "BASELINE", "TARGET")]
    rows += [(entry["kind"], entry["path"], _cell(entry.get("baseline"), "baseline" in entry),
              _cell(entry.get("target"), "target" in entry)) for entry in result["changes"]]
    lines = [summary_line(result)]
    if len(rows) > 1:
        lines += ["", *aligned(rows)]
    return "\n".join(line.rstrip() for line in lines) + "\n"


def markdown(result: Mapping[str, Any]) -> str:
    """A PR comment / ``$GITHUB_STEP_SUMMARY``: heading, summary line and a table (values escaped by
    ``aicr_gen.text.markdown``)."""
    from aicr_gen.text import markdown as md

    lines = ["### aicr-gen diff", "", md.text(summary_line(result))]
    if result["changes"]:
        lines += ["", "| Kind | Path | Baseline | Target |", "| --- | --- | --- | --- |"]
        lines += ["| " + " | ".join(md.text(cell, mid_line=True) for cell in (
            entry["kind"], entry["path"], _cell(entry.get("baseline"), "baseline" in entry),
            _cell(entry.get("target"), "target" in entry))) + " |" for entry in result["changes"]]
    return "\n".join(lines) + "\n"


def render(result: Mapping[str, Any], fmt: str) -> str:
    """``result`` in one of ``FORMATS``."""
    if fmt == "json":
        from aicr_gen.yaml import dump_json

        return dump_json(result)
    if fmt == "yaml":
        from aicr_gen.yaml import dump

        return dump(result)
    if fmt == "markdown":
        return markdown(result)
    return table(result)
