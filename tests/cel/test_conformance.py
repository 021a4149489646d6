"""The official CEL conformance suite against our evaluator: each cel-spec test in scope answers as cel-go's.

One test per suite test, named ``file/section/test``. A test our evaluator is known to fail is listed in
``deviations.txt`` under its cause and runs as a strict xfail: once it passes, the run fails until its line is
removed. Whole files out of scope (``conformance.SKIPPED_FILES``) and tests that need protobuf messages skip
with why. ``tests/cel/conftest.py`` prints the pass rate at the end of the run.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import needs

pytest.importorskip("google.protobuf", reason="the conformance runner reads cel-spec's textprotos with protobuf "
                                              "(pip install -e '.[test]')")
pytest.importorskip("grpc_tools.protoc", reason="the conformance runner compiles cel-spec's protos with "
                                                "grpcio-tools (pip install -e '.[test]')")

from tests.cel.conformance import TESTDATA, Case, SkippedFile, load_suite, same
from tests.cel.evaluator import evaluate

DEVIATIONS = Path(__file__).with_name("deviations.txt")


def load_deviations(path: Path = DEVIATIONS) -> dict[str, str]:
    """Test id -> cause, from ``## cause`` headings each followed by the ids of the tests it explains."""
    causes: dict[str, str] = {}
    cause = ""
    for number, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        line = raw.strip()
        if line.startswith("## "):
            cause = line[3:]
        elif line and not line.startswith("#"):
            if not cause:
                raise ValueError(f"{path}:{number}: {line} comes before any '## cause' heading")
            if line in causes:
                raise ValueError(f"{path}:{number}: {line} is listed twice")
            causes[line] = cause
    return causes


def _params(cases: list[Case], skipped_files: list[SkippedFile]) -> list[object]:
    if not TESTDATA.is_dir():
        return [pytest.param(None, id="cel-spec", marks=needs(TESTDATA))]
    deviations = load_deviations()
    params: list[object] = []
    for case in cases:
        marks: list[pytest.MarkDecorator] = []
        if case.unsupported:
            marks.append(pytest.mark.skip(reason=case.unsupported))
        elif case.id in deviations:
            marks.append(pytest.mark.xfail(reason=deviations[case.id], strict=True))
        params.append(pytest.param(case, id=case.id, marks=marks))
    for skipped in skipped_files:
        reason = f"out of scope, {skipped.tests} tests: {skipped.reason}"
        params.append(pytest.param(None, id=skipped.file, marks=pytest.mark.skip(reason=reason)))
    return params


_CASES, _SKIPPED_FILES = load_suite() if TESTDATA.is_dir() else ([], [])
CASES = {case.id: case for case in _CASES}


@pytest.mark.parametrize("case", _params(_CASES, _SKIPPED_FILES))
def test_expression_evaluates_as_cel_go_does(case: Case) -> None:
    outcome = evaluate(case)
    where = f"{case.expr!r} (bindings {case.bindings})" if case.bindings else repr(case.expr)
    if outcome.stage in ("compile", "limit"):
        # cel-go's runner fails a test whose expression does not parse or check, whatever it expects
        checked = "runs it unchecked (disable_check)" if case.disable_check else "compiles it"
        pytest.fail(f"{where} was refused ({outcome.stage}): {outcome.error}; cel-go {checked}", pytrace=False)
    if case.expects_error:
        # any evaluation error will do: cel-go's runner does not compare the messages, which are illustrative
        assert outcome.error is not None, (f"{where} gave {outcome.value!r}; cel-go gives an error "
                                           f"({'; '.join(case.errors) or 'any'})")
        return
    assert outcome.error is None, f"{where} failed to evaluate: {outcome.error}; cel-go gives {case.value!r}"
    assert same(case.value, outcome.value), f"{where} gave {outcome.value!r}; cel-go gives {case.value!r}"


@needs(TESTDATA)
def test_every_deviation_names_a_runnable_test() -> None:
    """A deviation for a test that was renamed, removed or skipped would hide nothing and rot unnoticed."""
    stale = [test for test in load_deviations() if test not in CASES or CASES[test].unsupported]
    assert not stale, f"{DEVIATIONS.name} lists tests that do not run: {stale}"
