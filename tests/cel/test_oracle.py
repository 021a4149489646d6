"""Our CEL evaluator against a second implementation, cel-cpp (through cel-expr-python), over the expressions
that matter to users and a few thousand generated ones: both must give the same typed value, or both an error.

Each corpus names the two sides it compares. Where they disagree, tests/cel/oracle_differences.txt says why:
a known cel-cpp vs cel-go difference (cel-go, which NVSentinel and NVCRE run, is the reference) or a bug of
ours. Those expressions are strict xfails of ``test_known_difference``, so one that starts to agree fails the run
until its entry is removed. ``python -m tests.cel.test_oracle`` prints the counts and the disagreements in the
file's format.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable, Sequence
from functools import cache
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from tests.cel import oracle_corpus as corpus
from tests.cel.oracle import DOUBLE, DYN, Outcome, cel_cpp, ours

try:
    import cel_expr_python  # noqa: F401
except ImportError:  # its wheels are CPython 3.11-3.14 on glibc Linux, macOS and Windows only
    pytestmark = pytest.mark.skip(reason="cel-expr-python (the test extra's second CEL implementation) is not "
                                  "installed for this Python/platform")

DIFFERENCES = Path(__file__).with_name("oracle_differences.txt")
Side = Callable[..., tuple[Outcome, ...]]


def _checked(expression: str, variables: Any, *bindings: Any) -> tuple[Outcome, ...]:
    return ours(expression, variables, *bindings, check=True)


def _nvcre(expression: str, _variables: Any, *bindings: Any) -> tuple[Outcome, ...]:
    """aicr_gen/certify/thresholds.py, which checks and evaluates a threshold as NVCRE does."""
    from aicr_gen.certify import thresholds
    from aicr_gen.errors import InvalidInputError

    try:
        compiled = thresholds.compile_thresholds({"busBandwidthGBps": expression}, "oracle")
    except InvalidInputError as error:
        return (Outcome(error="compile", message=str(error)),) * len(bindings)
    outcomes = []
    for one in bindings:
        [result] = thresholds.evaluate(compiled, {"busBandwidthGBps": one["value"]})
        failed = not result.passed and "violated" not in result.message
        outcomes.append(Outcome(error="evaluate", message=result.message) if failed else
                        Outcome(("bool", bool(result.passed))))
    return tuple(outcomes)


def _nvcre_cpp(expression: str, variables: Any, *bindings: Any) -> tuple[Outcome, ...]:
    return cel_cpp(expression, variables, *bindings, output="bool")


class Corpus(NamedTuple):
    cases: Callable[[], list[corpus.Case]]
    ours: Side
    theirs: Side
    what: str


def _thresholds(kind: str) -> list[corpus.Case]:
    bindings = tuple({"value": value} for value in corpus.THRESHOLD_VALUES)
    return [corpus.Case(text, {"value": kind}, bindings) for text in corpus.THRESHOLDS]


CORPORA = {
    "rules": Corpus(corpus.rule_cases, ours, cel_cpp,
                    "NVSentinel rules over HealthEvents and Nodes, compiled as `aicr-gen rules test` does"),
    "policies": Corpus(corpus.policy_cases, ours, cel_cpp, "the shipped policies over the examples, varied"),
    "thresholds": Corpus(lambda: _thresholds(DOUBLE), _nvcre, _nvcre_cpp,
                         "NVCRE thresholds: certify/thresholds.py vs cel-cpp with value a double, output bool"),
    "thresholds-dyn": Corpus(lambda: _thresholds(DYN), ours, cel_cpp, "thresholds in our evaluator, value dyn"),
    "generated": Corpus(corpus.generated_cases, _checked, cel_cpp,
                        "seeded generated expressions, our evaluator with its type checker"),
    "probes": Corpus(lambda: [corpus.Case(text, {}, ({},)) for text in corpus.PROBES], _checked, cel_cpp,
                     "hand-picked expressions around each difference found"),
}


class Disagreement(NamedTuple):
    expression: str
    bindings: Any
    ours: Outcome
    theirs: Outcome


@cache
def results(name: str) -> tuple[int, dict[str, Disagreement]]:
    """How many evaluations the corpus compares, and its disagreements by expression (the first binding that
    disagrees)."""
    chosen = CORPORA[name]
    count = 0
    found: dict[str, Disagreement] = {}
    for case in chosen.cases():
        left = chosen.ours(case.expression, case.variables, *case.bindings)
        right = chosen.theirs(case.expression, case.variables, *case.bindings)
        count += len(case.bindings)
        for bindings, mine, theirs in zip(case.bindings, left, right, strict=True):
            if not mine.agrees(theirs):
                found[case.expression] = Disagreement(case.expression, bindings, mine, theirs)
                break
    return count, found


class Known(NamedTuple):
    corpus: str
    cause: str
    expression: str


_HEADER = re.compile(r"^## \[([a-z-]+)\] (.+)$")


def known_differences(path: Path = DIFFERENCES) -> list[Known]:
    """``## [corpus] cause: why`` lines, each followed by the expressions it explains (one a line)."""
    found: list[Known] = []
    header: tuple[str, str] | None = None
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("## "):
            matched = _HEADER.match(line)
            if matched is None or matched.group(1) not in CORPORA:
                raise ValueError(f"{path}:{number}: a cause is `## [corpus] text`, corpus one of {sorted(CORPORA)}")
            header = (matched.group(1), matched.group(2))
        elif line.strip() and not line.startswith("#"):
            if header is None:
                raise ValueError(f"{path}:{number}: an expression before the first `## [corpus] cause` line")
            found.append(Known(*header, line))
    return found


def _known_in(name: str) -> set[str]:
    return {known.expression for known in known_differences() if known.corpus == name}


def _describe(found: Sequence[Disagreement]) -> str:
    return "\n".join(f"  {item.expression}\n    ours:   {item.ours}\n    theirs: {item.theirs}"
                     + (f"\n    over:   {_short(item.bindings)}" if item.bindings else "") for item in found)


def _short(bindings: Any) -> str:
    text = repr(bindings)
    return text if len(text) < 300 else text[:300] + " ..."


@pytest.mark.parametrize("name", list(CORPORA))
def test_both_evaluators_agree(name: str) -> None:
    """Same typed value or both an error, for every case not explained in oracle_differences.txt."""
    cases = {case.expression for case in CORPORA[name].cases()}
    known = _known_in(name)
    assert not known - cases, f"oracle_differences.txt names expressions the {name} corpus no longer has: " \
                              f"{sorted(known - cases)}"
    _count, found = results(name)
    unexplained = [item for expression, item in found.items() if expression not in known]
    assert not unexplained, (f"{len(unexplained)} {name} expression(s) where our evaluator and cel-cpp disagree "
                             f"({CORPORA[name].what}):\n{_describe(unexplained)}")


@pytest.mark.parametrize("known", [
    pytest.param(known, id=f"{known.corpus}:{known.expression}",
                 marks=pytest.mark.xfail(strict=True, reason=known.cause))
    for known in known_differences()])
def test_known_difference(known: Known) -> None:
    """Fails while the difference lasts (an xfail); passes, and so fails the run, once both agree."""
    _count, found = results(known.corpus)
    assert known.expression not in found, _describe([found[known.expression]])


def main(arguments: list[str]) -> int:
    """Print each corpus's agreement and, in oracle_differences.txt's format, its unexplained disagreements."""
    for name in arguments or list(CORPORA):
        count, found = results(name)
        known = _known_in(name)
        unexplained = [item for expression, item in found.items() if expression not in known]
        print(f"# {name}: {len(CORPORA[name].cases())} expressions, {count} evaluations; "
              f"{len(found)} expressions disagree ({len(found) - len(unexplained)} explained)")
        if unexplained:
            print(f"## [{name}] unexplained\n" + "\n".join(item.expression for item in unexplained))
            print(_describe(unexplained), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
