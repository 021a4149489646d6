"""NVCRE threshold expressions: CEL over one double ``value`` that must return a bool.

NVCRE (``pkg/threshold``) compiles each expression with cel-go, declaring ``value`` as a double and enabling
``CrossTypeNumericComparisons``, and refuses any expression whose output type is not ``bool``. The
``nvcre_threshold`` environment of :mod:`aicr_gen.cel` declares the same, with cel-go's type checker, so an
expression compiles here exactly when it compiles in NVCRE: ``value >= 300`` passes (ordering works across
number types), while ``value + 1`` (a double), ``value == 1`` (cel-go has no ``_==_`` for a double and an int)
and ``value > 'a'`` are refused before they reach a cluster.

Bounded as every CEL program is (cel-go's length and nesting limits, a step budget, a deadline and a result
size per evaluation, RE2 for ``matches``). Each expression is also tried on a few values when compiled: one that
fails to evaluate for all of them could never pass, and is refused. ``real`` tells a floor that can fail a degraded
run from one every run clears (``value > 0``); policies call it as ``realThreshold(key, expression)``.
"""

from __future__ import annotations

import difflib
import functools
import json
import re
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml import shorten

REGISTRY: dict[str, str] = {
    "busBandwidthGBps": "GB/s, max bus bandwidth over message sizes (BandwidthMeasurement)",
    "algBandwidthGBps": "GB/s, algorithm bandwidth (BandwidthMeasurement)",
    "goodputRatio": "ratio 0-1 (GoodputMeasurement)",
    "avgTFLOPsPerGPU": "TFLOPS per GPU (GoodputMeasurement)",
    "avgStepTimeSec": "seconds per training step (GoodputMeasurement)",
    "c2cCPUToGPUBandwidthGBps": "GB/s, CPU-to-GPU coherent memory (C2CMeasurement)",
    "c2cGPUToCPUBandwidthGBps": "GB/s, GPU-to-CPU coherent memory (C2CMeasurement)",
    "c2cVerified": "boolean as 0 or 1, CPU-GPU coherent memory correctness (C2CMeasurement)",
}
"""NVCRE's threshold key registry, in its order, with each key's unit and source."""

THRESHOLD_KEYS = tuple(REGISTRY)
DEGRADED: dict[str, float] = {
    "busBandwidthGBps": 1.0,
    "algBandwidthGBps": 1.0,
    "goodputRatio": 0.5,
    "avgTFLOPsPerGPU": 1.0,
}
"""The measurement a real floor of each performance key rejects (``real``). 1 GB/s is below what NCCL's socket
transport moves over one 10 GbE link (1.25 GB/s line rate), 40 times under the lowest NCCL floor AICR's catalog
ships (nccl-all-reduce-bw-net >= 40 GB/s, GB200 on EKS) and 150 times under NVSentinel's lowest NVCRE test floor
(nccl-loopback, 150 GB/s); NVCRE's measured busBandwidthGBps is the largest bus bandwidth over message sizes.
A goodput ratio of 0.5 is half the step time lost (NVCRE's docs show ``value >= 0.9``); 1 TFLOPS per GPU is two
orders of magnitude under the dense rate of any GPU the catalogs name. So the bar refuses only thresholds that pass
every run, never a floor measured on real hardware (design/facts-nvsentinel-nvcre.md, sections 2.3 and 3)."""
COMPILE_SECONDS = 2.0
EVALUATE_SECONDS = 1.0
PROBES = (0.0, 0.5, 1.0, 1e9)
"""Values every expression is tried on when compiled: one that fails on all of them can never pass."""

_EXAMPLE = '"value >= 300"'
_LONE_EQUALS = re.compile(r"(?<![=!<>])=(?!=)")
_MIXED_EQUALITY = re.compile(r"'_[=!]=_' applied to '\((double, u?int|u?int, double|int, uint|uint, int)\)'")
_T = TypeVar("_T")


@dataclass(frozen=True)
class CompiledThreshold:
    """One threshold ready to evaluate: its key, its expression and the compiled program."""

    key: str
    expression: str
    program: Any


@dataclass(frozen=True)
class ThresholdResult:
    """The outcome of one threshold. ``measured`` and ``passed`` are None when nothing was measured."""

    key: str
    expression: str
    measured: float | None
    passed: bool | None
    message: str


class ThresholdTimeout(Exception):
    """An evaluation ran past its time limit."""


# ------------------------------------------------------------------------------------------ public API


def compile_thresholds(mapping: Mapping[str, str], where: str) -> dict[str, Any]:
    """Check and compile NVCRE thresholds (key -> CEL expression); ``where`` starts every error message
    (a flag or a file). Returns key -> ``CompiledThreshold``, sorted by key. Any problem is an
    ``InvalidInputError`` naming the key, the expression and the fix."""
    if not isinstance(mapping, Mapping):
        raise InvalidInputError(f"{where}: thresholds must be a map of key to CEL expression, e.g. "
                                f"busBandwidthGBps: {_EXAMPLE}")
    unknown = sorted(str(key) for key in mapping if key not in REGISTRY)
    if unknown:
        close = difflib.get_close_matches(unknown[0], THRESHOLD_KEYS, n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise InvalidInputError(f"{where}: unknown threshold key(s) [{', '.join(unknown)}]{hint}; valid keys: "
                                f"[{', '.join(THRESHOLD_KEYS)}]")
    return {key: _compile(key, mapping[key], where) for key in sorted(mapping)}


def evaluate(compiled: Mapping[str, Any], measurements: Mapping[str, float]) -> list[ThresholdResult]:
    """Evaluate compiled thresholds against measured values, sorted by key, with NVCRE's messages. A key
    with no measurement has ``measured``/``passed`` None (NVCRE waits up to ``measurementTimeout`` for
    it, then fails); an expression that fails to evaluate has ``passed`` False, as NVCRE's
    ``InvalidThresholdExpression``."""
    results = []
    for key in sorted(compiled):
        threshold: CompiledThreshold = compiled[key]
        expression = threshold.expression
        if measurements.get(key) is None:
            results.append(ThresholdResult(key, expression, None, None,
                                           f"Threshold {_q(key)}: no measurement of {key} (NVCRE waits up to "
                                           "measurementTimeout for one, then fails the check)"))
            continue
        measured = float(measurements[key])
        outcome = _run(threshold.program, measured, EVALUATE_SECONDS)
        if outcome is True:
            message = f"Threshold {_q(key)} met: measured {measured:.4f}, expression: {expression}"
        elif outcome is False:
            message = f"Threshold {_q(key)} violated: measured {measured:.4f}, expression: {expression}"
        else:
            message = (f"Threshold {_q(key)}: evaluate threshold expression {_q(expression)} with "
                       f"value={measured:.6f}: {outcome}")
        results.append(ThresholdResult(key, expression, measured, outcome is True, message))
    return results


def real(key: str, expression: str) -> bool:
    """Whether the threshold ``key: expression`` is a real floor: one that fails a run NVCRE would otherwise
    pass. NVCRE fails a certification without a measurement by itself (it waits ``measurementTimeout``, then
    fails), and a run that measured anything measured more than 0, so ``value > 0`` (or ``>= 0``, ``true``) can
    never fail one: it is no threshold. A real one rejects ``DEGRADED[key]``, a value a working but degraded
    fabric still reaches; keys without one (``avgStepTimeSec``, an upper bound; ``c2cVerified``, a correctness
    bit) set no performance floor. An expression NVCRE would not compile is an ``InvalidInputError``."""
    degraded = DEGRADED.get(key)
    if degraded is None:
        return False
    checked = _checked(expression)
    if isinstance(checked, tuple):
        raise InvalidInputError(f"{key}={_q(shorten(expression, 80))}: {checked[0]}")
    return _run(checked, degraded, EVALUATE_SECONDS) is False


def run_with_deadline(function: Callable[[], _T], seconds: float) -> _T:
    """``function()``, or ``ThresholdTimeout`` once it runs longer than ``seconds``. On the main thread a
    real-time timer interrupts it; elsewhere it runs in a daemon thread that is abandoned on timeout."""
    if threading.current_thread() is threading.main_thread() and hasattr(signal, "setitimer"):
        return _with_timer(function, seconds)
    return _with_thread(function, seconds)


# ------------------------------------------------------------------------------------------- compiling


def _q(text: str) -> str:
    """Go's %q for the messages NVCRE writes."""
    return json.dumps(text, ensure_ascii=False)


def _compile(key: str, expression: Any, where: str) -> CompiledThreshold:
    def fail(problem: str, fix: str) -> InvalidInputError:
        shown = shorten(expression, 80) if isinstance(expression, str) else repr(expression)
        return InvalidInputError(f"{where}: {key}={_q(shown)}: {problem}; {fix}")

    if not isinstance(expression, str):
        raise fail(f"is a {type(expression).__name__}, not a CEL expression string", f"quote it, e.g. {_EXAMPLE}")
    if not expression.strip():
        raise fail("the expression is empty", f"write a comparison such as {_EXAMPLE}")
    checked = _checked(expression)
    if isinstance(checked, tuple):
        raise fail(*checked)
    return CompiledThreshold(key, expression, checked)


@functools.lru_cache(maxsize=512)
def _checked(expression: str) -> Any:
    """The program of ``expression`` as NVCRE would compile it, or (problem, fix) when it would not. Cached: the
    specs of a fleet repeat the same few thresholds, and each compile and probe costs about half a millisecond."""
    from aicr_gen.cel import CelCompileError, CelLimitError
    from aicr_gen.cel.environments import nvcre_threshold
    from aicr_gen.cel.types import BOOL, format_type

    try:
        program = nvcre_threshold().compile(expression)
    except CelLimitError as err:
        return str(err), "simplify the expression; a threshold tests one number"
    except CelCompileError as err:
        return str(err), _fix(expression, str(err))
    result = program.result_type
    if result != BOOL:
        shown = "an unknown type" if result is None else format_type(result)
        return f"expression must return bool, got {shown}", f"compare `value`, e.g. {_EXAMPLE}"
    outcomes: list[bool | str] = []

    def probe() -> None:
        outcomes.extend(_evaluate(program, value) for value in PROBES)

    try:
        run_with_deadline(probe, COMPILE_SECONDS)
    except ThresholdTimeout:
        return f"evaluating it takes longer than {COMPILE_SECONDS:g} s", "simplify the expression"
    if all(isinstance(outcome, str) for outcome in outcomes):
        tried = ", ".join(f"{value:g}" for value in PROBES)
        return (f"it fails to evaluate for every value tried ({tried}): {outcomes[0]}",
                "fix the expression; NVCRE would report InvalidThresholdExpression")
    return program


def _fix(expression: str, problem: str) -> str:
    """How to fix a threshold cel-go refuses to compile."""
    if problem.startswith("syntax error"):
        hint = " (compare with ==, not =)" if _LONE_EQUALS.search(expression) else ""
        return f"write CEL over `value`{hint}, e.g. {_EXAMPLE}"
    if problem.startswith("undeclared reference") and "'value'" not in problem:
        return f"the only variable is `value` (the measured number), e.g. {_EXAMPLE}"
    if _MIXED_EQUALITY.search(problem):
        return ("write the number as a double (1.0, not 1): cel-go compares numbers of different types only with "
                "<, <=, > and >=")
    return f"a threshold compares `value`, e.g. {_EXAMPLE}"


def _evaluate(program: Any, value: float) -> bool | str:
    """True/False, or the evaluation error's text."""
    from aicr_gen.cel import CelError, CelLimitError

    try:
        result = program.evaluate({"value": float(value)})
    except (CelError, CelLimitError) as err:
        return str(err)
    if type(result) is bool:
        return result
    return f"returned {type(result).__name__}, expected bool"


def _run(program: Any, value: float, seconds: float) -> bool | str:
    try:
        return run_with_deadline(lambda: _evaluate(program, value), seconds)
    except ThresholdTimeout:
        return f"evaluation took longer than {seconds:g} s"


class _Deadline(BaseException):
    """Raised by the timer inside the evaluation; a BaseException so library code does not swallow it."""


def _with_timer(function: Callable[[], _T], seconds: float) -> _T:
    if signal.getitimer(signal.ITIMER_REAL)[0] > 0:  # someone else's timer is running: do not clobber it
        return _with_thread(function, seconds)
    armed = [True]

    def on_alarm(signum: int, frame: Any) -> None:
        if armed[0]:
            raise _Deadline

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return function()
    except _Deadline:
        raise ThresholdTimeout(f"took longer than {seconds:g} s") from None
    finally:
        armed[0] = False
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _with_thread(function: Callable[[], _T], seconds: float) -> _T:
    box: dict[str, Any] = {}

    def target() -> None:
        try:
            box["value"] = function()
        except BaseException as err:
            box["error"] = err

    worker = threading.Thread(target=target, name="aicr-gen-threshold", daemon=True)
    worker.start()
    worker.join(seconds)
    if worker.is_alive():
        raise ThresholdTimeout(f"took longer than {seconds:g} s")
    if "error" in box:
        raise box["error"]
    result: _T = box["value"]
    return result
