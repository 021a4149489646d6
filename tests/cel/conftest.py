"""The conformance run's score, printed after pytest's own summary: how many runnable cel-spec tests pass."""

from __future__ import annotations

import re
from collections import Counter

import pytest

_CASE = "test_conformance.py::test_expression_evaluates_as_cel_go_does["
_FILE_TESTS = re.compile(r"out of scope, (\d+) tests")
_counts: Counter[str] = Counter()


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if _CASE not in report.nodeid:
        return
    test_id = report.nodeid.partition(_CASE)[2][:-1]
    if report.skipped and hasattr(report, "wasxfail"):
        _counts["deviation"] += 1
    elif report.skipped:
        found = _FILE_TESTS.search(str(report.longrepr))
        if "/" in test_id or found is None:  # a suite test's id is file/section/test, a skipped file's its name
            _counts["unsupported"] += 1
        else:
            _counts["file"] += 1
            _counts["file tests"] += int(found.group(1))
    elif report.failed:
        _counts["failed"] += 1  # an unexpected failure, or a listed deviation that now passes (strict xfail)
    elif report.when == "call":
        _counts["passed"] += 1


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    runnable = _counts["passed"] + _counts["deviation"] + _counts["failed"]
    if not runnable:
        return
    terminalreporter.write_line(
        f"conformance: {_counts['passed']} passed of {runnable} runnable cel-spec tests "
        f"({100 * _counts['passed'] / runnable:.1f}%); {_counts['deviation']} known deviations "
        f"(tests/cel/deviations.txt), {_counts['failed']} unexpected; skipped: {_counts['file']} files out of scope "
        f"({_counts['file tests']} tests), {_counts['unsupported']} tests that need protobuf messages")
