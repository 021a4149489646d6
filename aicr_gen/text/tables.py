"""Aligned plain-text tables: the one layout of every ``--format table`` and text report.

Rows come header first. Each column is padded to its widest cell and columns are joined by two spaces; the
columns named in ``right`` (numbers) align right, the others left; every line loses its trailing blanks, so the
last column is never padded. ``indent`` opens every line (the report sections of ``report/results`` indent
theirs by two spaces).
"""

from __future__ import annotations

from collections.abc import Container, Sequence


def aligned(rows: Sequence[Sequence[str]], *, right: Container[int] = (), indent: str = "") -> list[str]:
    """The lines of ``rows`` as an aligned table (see the module rules)."""
    widths = [max(len(row[index]) for row in rows) for index in range(len(rows[0]))]
    return [(indent + "  ".join(cell.rjust(width) if index in right else cell.ljust(width)
                                for index, (cell, width) in enumerate(zip(row, widths, strict=True)))).rstrip()
            for row in rows]
