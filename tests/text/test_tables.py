"""Aligned text tables: one layout (``text/tables.aligned``) under every text report and ``--format table``.
Each former home's variant is a case: plain (``report/fleet_drift``, ``commands/recipe``), indented with right-
aligned numbers (``report/results``), a header with no rows (``commands/rules``), and an unpadded last column
(``report/drift``, ``commands/validate``: padding then stripping it is the same line)."""

from __future__ import annotations

from aicr_gen.commands.validate import table as validate_table
from aicr_gen.drift.constraints import ConstraintResult
from aicr_gen.report import drift
from aicr_gen.text.tables import aligned


def test_plain_columns_pad_to_the_widest_cell_and_lose_trailing_blanks() -> None:
    assert aligned([["NAME", "SERVICE"], ["h100-eks", ""], ["a", "eks"]]) == [
        "NAME      SERVICE", "h100-eks", "a         eks"]


def test_indented_with_right_aligned_numbers() -> None:
    assert aligned([["Category", "Status", "Failed nodes"], ["nccl", "Failed", "2"], ["dcgm", "Succeeded", "10"]],
                   right=(2,), indent="  ") == [
        "  Category  Status     Failed nodes", "  nccl      Failed                2",
        "  dcgm      Succeeded            10"]


def test_a_header_alone() -> None:
    assert aligned([["EVENT", "NODE", "MATCHED"]]) == ["EVENT  NODE  MATCHED"]


def test_the_last_column_is_never_padded() -> None:
    assert aligned([["KIND", "PATH", "BASELINE", "TARGET"], ["modified", "a", "1", "2"],
                    ["added", "spec.longer.path", "-", "a much longer target"]]) == [
        "KIND      PATH              BASELINE  TARGET", "modified  a                 1         2",
        "added     spec.longer.path  -         a much longer target"]


def test_drift_and_validate_tables_are_unchanged() -> None:
    result = {"changes": [{"kind": "modified", "path": "a.b", "baseline": "1", "target": "2"},
                          {"kind": "added", "path": "c", "target": "x y"}],
              "summary": {"total": 2, "added": 1, "removed": 0, "modified": 1}, "baselineSource": "b",
              "targetSource": "t"}
    assert drift.table(result).splitlines()[2:] == [
        "KIND      PATH  BASELINE  TARGET", "modified  a.b   1         2", "added     c     -         x y"]
    results = [ConstraintResult("K8s.server.version", ">= 1.30", "passed", "error", "v1.33.5"),
               ConstraintResult("GPU.memory", ">= 80", "failed", "warning", "40", unit="GB")]
    assert validate_table(results) == (
        "NAME                EXPECTED  ACTUAL   RESULT\n"
        "K8s.server.version  >= 1.30   v1.33.5  passed\n"
        "GPU.memory          >= 80     40 GB    failed (warning)\n"
        "\n"
        "2 constraints: 1 passed, 1 failed, 0 skipped\n")
