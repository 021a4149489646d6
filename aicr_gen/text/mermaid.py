"""Mermaid charts in the Markdown aicr-gen writes: GitHub renders a ```` ```mermaid ```` block in a comment, a
pull request body or a job summary as a picture (https://mermaid.js.org, the ``xychart-beta``, ``pie`` and
``flowchart`` diagrams).

A chart is written as lines of a fenced code block (``aicr_gen.text.markdown.block``), so nothing in it is read
as Markdown. Rules that keep a value from an input file (a test name, a cluster, a component, a wave) from
breaking the chart or adding to it:

- every label is written quoted, through ``label``: on one line, cut to ``LABEL`` characters, every character but
  letters, digits, space and ``. , : / ( ) + = - _`` as ``_``. That leaves out what ends a quoted string
  (``"``), Mermaid's entity escapes (``#quot;``), HTML (``<`` ``&``), Markdown strings (`````), statement ends
  (``;``), comments (``%%``) and the brackets of node shapes; nothing a chart's own text needs.
- node ids are ``n0``, ``n1``, ...: never a value from a file.
- numbers are finite and written with two decimals at most.
- colours and sizes go in the chart's front matter (``config:``), from this module's constants only: lines drawn
  in ``PALETTE`` (Mermaid's default palette starts near white), an axis of labels ``PIXELS`` long per label so
  they do not overlap (bars are drawn horizontal: their labels are names, too long to stand side by side), room
  beside it for the legend; a pie's slices keep the order given and take the colours given.
- a flowchart runs left to right up to ``ACROSS`` steps, then top down, so that it never shrinks to a thin strip
  when GitHub fits it to the page width.
- big inputs stay readable: at most ``POINTS`` points on an x axis (evenly picked, the first and the last kept),
  ``SERIES`` lines in a chart, ``SLICES`` slices in a pie (the last ones as one "other") and ``NODES``
  nodes in a flowchart (the rest counted in a last node).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

from aicr_gen.text.markdown import block
from aicr_gen.text.oneline import one_line

LABEL = 40
POINTS = 32
SERIES = 8
SLICES = 8
NODES = 12
PIXELS = 40
ACROSS = 4
LEGEND = 9
"""Pixels per character of a legend: Mermaid leaves the legend out when the chart has no room for it."""
PALETTE = {"#1f77b4": "blue", "#ff7f0e": "orange", "#2ca02c": "green", "#d62728": "red", "#9467bd": "purple",
           "#8c564b": "brown", "#e377c2": "pink", "#7f7f7f": "grey"}
"""Line colours, one per series in this order (Tableau 10's first eight), and their names for a legend in text:
Mermaid before 11 draws no legend."""
_UNSAFE = re.compile(r"[^\w .,:/()+=-]")
STYLES = {"pass": "fill:#d4f7d4,stroke:#2e7d32", "wait": "fill:#fff3cd,stroke:#b8860b",
          "fail": "fill:#f8d7da,stroke:#c62828", "idle": "fill:#eceff1,stroke:#78909c"}
"""The flowchart node classes: passed, waiting, failed (or unknown), not started. A highlighted node gets a thick
border on top of its class."""


def plain(value: str, limit: int = LABEL) -> str:
    """``value`` as Mermaid text that is only text (see the module rules), unquoted: a pie's title."""
    flat = " ".join(_UNSAFE.sub("_", one_line(value)).split())
    return flat if len(flat) <= limit else flat[:limit - 3] + "..."


def label(value: str, limit: int = LABEL) -> str:
    """``value`` as a quoted Mermaid string that is only text."""
    return f'"{plain(value, limit)}"'


def _number(value: float) -> str:
    if not math.isfinite(value):
        raise ValueError(f"a chart takes finite numbers, not {value!r}")
    return f"{value:.2f}".rstrip("0").rstrip(".")


def picked(count: int, cap: int = POINTS) -> list[int]:
    """Up to ``cap`` indexes of ``count`` items, evenly spread, the first and the last among them."""
    if count <= cap:
        return list(range(count))
    return sorted({round(step * (count - 1) / (cap - 1)) for step in range(cap)})


def xychart(title: str, x_title: str, x_labels: Sequence[str], y_title: str,
            series: Sequence[tuple[str, Sequence[float]]], *, bars: bool = False) -> list[str]:
    """A line chart: ``x_labels`` along the x axis, one line per ``(name, values)`` of ``series`` (a value per
    label), the y axis from 0. Names show in a legend when there are several lines (Mermaid 11; ``colours``
    names each line's colour for a legend beside the chart). ``bars``: one series drawn
    as horizontal bars, a bar per label."""
    if not x_labels or not series:
        return []
    keep = picked(len(x_labels))
    top = max((value for _, values in series[:SERIES] for value in values), default=0.0)
    legend = max((len(plain(name)) for name, _ in series[:SERIES]), default=0) * LEGEND if len(series) > 1 else 0
    size = (f"    height: {max(300, PIXELS * len(keep))}" if bars else
            f"    width: {max(700, PIXELS * len(keep)) + legend}")
    lines = ["---", "config:", "  xyChart:", size, "  themeVariables:", "    xyChart:",
             f'      plotColorPalette: "{", ".join(PALETTE)}"', "---",
             "xychart-beta horizontal" if bars else "xychart-beta", f"    title {label(title, 80)}",
             f"    x-axis {label(x_title)} [{', '.join(label(x_labels[index]) for index in keep)}]",
             f"    y-axis {label(y_title)} 0 --> {_number(math.ceil(top * 1.05) or 1)}"]
    for name, values in series[:SERIES]:
        named = f"{label(name)} " if len(series) > 1 else ""
        lines.append(f"    {'bar' if bars else 'line'} {named}[{', '.join(_number(values[index]) for index in keep)}]")
    return block(lines, "mermaid")


def colours(count: int) -> list[str]:
    """The names of the colours of the first ``count`` lines of an ``xychart`` (at most ``SERIES``)."""
    return list(PALETTE.values())[:min(count, SERIES)]


def pie(title: str, slices: Sequence[tuple[str, int, str]]) -> list[str]:
    """A pie of the non-zero ``slices``, each ``(name, count, colour)``, in the order given; past ``SLICES`` the
    rest as one grey "other"."""
    shown = [item for item in slices if item[1] > 0]
    if not shown:
        return []
    if len(shown) > SLICES:
        shown = [*shown[:SLICES - 1], ("other", sum(count for _, count, _ in shown[SLICES - 1:]), "#9e9e9e")]
    colours = [f'    pie{index}: "{colour}"' for index, (_, _, colour) in enumerate(shown, start=1)]
    return block(["---", "config:", "  themeVariables:", *colours, "---", "pie showData",
                  f"    title {plain(title, 80)}", *(f"    {label(name)} : {count}" for name, count, _ in shown)],
                 "mermaid")


def chain(steps: Sequence[tuple[str, str]], *, highlight: int | None = None) -> list[str]:
    """A flowchart of ``steps`` in order, each ``(text, style)`` with a style of ``STYLES``;
    ``highlight``: the index of the step drawn with a thick border. Past ``NODES`` steps the rest are one node."""
    if not steps:
        return []
    shown = list(steps[:NODES])
    if len(steps) > NODES:
        shown[-1] = (f"... and {len(steps) - NODES + 1} more", "idle")
    lines = [f"flowchart {'LR' if len(shown) <= ACROSS else 'TD'}",
             *(f"    classDef {name} {css}" for name, css in STYLES.items()), "    classDef next stroke-width:4px"]
    lines += [f"    n{index}[{label(text, 100)}]:::{style}" for index, (text, style) in enumerate(shown)]
    lines += [f"    n{index} --> n{index + 1}" for index in range(len(shown) - 1)]
    if highlight is not None:
        lines.append(f"    class n{min(highlight, len(shown) - 1)} next")
    return block(lines, "mermaid")
