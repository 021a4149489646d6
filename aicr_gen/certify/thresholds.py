"""NVCRE threshold expressions: CEL over one double ``value`` that must return a bool.

NVCRE (``pkg/threshold``) compiles each expression with cel-go, declaring ``value`` as a double and enabling
``CrossTypeNumericComparisons``, and refuses any expression whose output type is not ``bool``. cel-python
parses and evaluates CEL but has no type checker, so ``_Checker`` below stands in for cel-go's: it types
every node the way cel-go's standard declarations do and words its errors the same way. So ``value >= 300``
passes (ordering works across number types), while ``value + 1`` (a double), ``value == 1`` (cel-go has
no ``_==_`` for a double and an int) and ``value > 'a'`` are refused before they reach a cluster.

Bounded on purpose: an expression is at most ``MAX_LENGTH`` characters and ``MAX_DEPTH`` levels deep, and
the list macros (``all``, ``exists``, ``exists_one``, ``map``, ``filter``), ``has`` and ``matches`` are
refused. A threshold tests one number; without macros no sub-expression runs more than once, so
evaluation is linear in the expression's size, and without ``matches`` no backtracking regular expression
runs (cel-go uses linear RE2, Python's ``re`` is not). Every evaluation still runs under a time limit.
"""

from __future__ import annotations

import difflib
import json
import re
import signal
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from aicr_gen.errors import InvalidInputError
from aicr_gen.yamlio import shorten

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
MAX_LENGTH = 1000
MAX_DEPTH = 50
COMPILE_SECONDS = 2.0
EVALUATE_SECONDS = 1.0
PROBES = (0.0, 0.5, 1.0, 1e9)
"""Values every expression is tried on when compiled: one that fails on all of them can never pass."""

_EXAMPLE = '"value >= 300"'
_LONE_EQUALS = re.compile(r"(?<![=!<>])=(?!=)")
_T = TypeVar("_T")


@dataclass(frozen=True)
class CompiledThreshold:
    """One threshold ready to evaluate: its key, its expression and the cel-python program."""

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
    from celpy.celparser import CELParseError

    def fail(problem: str, fix: str) -> InvalidInputError:
        shown = shorten(expression, 80) if isinstance(expression, str) else repr(expression)
        return InvalidInputError(f"{where}: {key}={_q(shown)}: {problem}; {fix}")

    if not isinstance(expression, str):
        raise fail(f"is a {type(expression).__name__}, not a CEL expression string", f"quote it, e.g. {_EXAMPLE}")
    if len(expression) > MAX_LENGTH:
        raise fail(f"the expression is {len(expression)} characters, over the limit of {MAX_LENGTH}",
                   f"a threshold tests one number, e.g. {_EXAMPLE}")
    if not expression.strip():
        raise fail("the expression is empty", f"write a comparison such as {_EXAMPLE}")
    environment = _environment()
    try:
        ast = environment.compile(expression)
    except CELParseError as err:
        column = getattr(err, "column", None)
        at = f" at column {column}" if column else ""
        hint = " (compare with ==, not =)" if _LONE_EQUALS.search(expression) else ""
        raise fail(f"syntax error{at}{hint}", f"write CEL over `value`, e.g. {_EXAMPLE}") from None
    except Exception as err:  # lark raises more than CELParseError on odd input (e.g. lexer errors)
        raise fail(f"syntax error ({type(err).__name__})", f"write CEL over `value`, e.g. {_EXAMPLE}") from None
    depth = _depth(ast)
    if depth > MAX_DEPTH:
        raise fail(f"the expression nests {depth} levels deep, over the limit of {MAX_DEPTH}",
                   "flatten it; a threshold tests one number")
    try:
        result = _Checker().check(ast)
    except _CheckError as err:
        raise fail(str(err), err.fix) from None
    if result != _BOOL:
        raise fail(f"expression must return bool, got {result}", f"compare `value`, e.g. {_EXAMPLE}")
    program = environment.program(ast, _ordering())
    outcomes: list[bool | str] = []

    def probe() -> None:
        outcomes.extend(_evaluate(program, value) for value in PROBES)

    try:
        run_with_deadline(probe, COMPILE_SECONDS)
    except ThresholdTimeout:
        raise fail(f"evaluating it takes longer than {COMPILE_SECONDS:g} s", "simplify the expression") from None
    if all(isinstance(outcome, str) for outcome in outcomes):
        tried = ", ".join(f"{value:g}" for value in PROBES)
        raise fail(f"it fails to evaluate for every value tried ({tried}): {outcomes[0]}",
                   "fix the expression; NVCRE would report InvalidThresholdExpression") from None
    return CompiledThreshold(key, expression, program)


def _environment() -> Any:
    import celpy

    return celpy.Environment()


def _ordering() -> dict[str, Callable[[Any, Any], Any]]:
    """``<``, ``<=``, ``>``, ``>=`` across int, uint and double, as cel-go's CrossTypeNumericComparisons
    (cel-python only orders a double against an int when the double is on the left). Python compares an
    int with a float exactly, as cel-go does."""
    import operator

    from celpy import celtypes
    from celpy.evaluation import base_functions

    numbers = (celtypes.IntType, celtypes.UintType, celtypes.DoubleType)

    def cross(name: str, compare: Callable[[Any, Any], bool]) -> Callable[[Any, Any], Any]:
        fallback = base_functions[name]

        def function(left: Any, right: Any) -> Any:
            if isinstance(left, numbers) and isinstance(right, numbers):
                return celtypes.BoolType(compare(_plain(left), _plain(right)))
            return fallback(left, right)

        return function

    return {name: cross(name, compare) for name, compare in (
        ("_<_", operator.lt), ("_<=_", operator.le), ("_>_", operator.gt), ("_>=_", operator.ge))}


def _plain(number: Any) -> float | int:
    """The Python number inside a cel-python number (whose own comparisons refuse mixed types)."""
    return float(number) if isinstance(number, float) else int(number)


def _evaluate(program: Any, value: float) -> bool | str:
    """True/False, or the evaluation error's text."""
    from celpy import celtypes
    from celpy.evaluation import CELEvalError

    try:
        result = program.evaluate({"value": celtypes.DoubleType(value)})
    except CELEvalError as err:
        return _eval_error(err)
    except (ArithmeticError, ValueError, TypeError) as err:
        return f"{type(err).__name__}: {err}"
    if isinstance(result, CELEvalError):
        return _eval_error(result)
    if isinstance(result, celtypes.BoolType):
        return bool(result)
    return f"returned {type(result).__name__}, expected bool"


def _eval_error(err: Exception) -> str:
    return str(err.args[0]) if err.args else type(err).__name__


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


# ---------------------------------------------------------------------------------------- type checker


@dataclass(frozen=True)
class _Type:
    name: str
    params: tuple[_Type, ...] = ()

    def __str__(self) -> str:
        return f"{self.name}({', '.join(map(str, self.params))})" if self.params else self.name


_BOOL, _INT, _UINT, _DOUBLE = _Type("bool"), _Type("int"), _Type("uint"), _Type("double")
_STRING, _BYTES, _NULL, _DYN, _TYPE = _Type("string"), _Type("bytes"), _Type("null_type"), _Type("dyn"), _Type("type")
_NUMBERS = {"int", "uint", "double"}
_ORDERED = {*_NUMBERS, "string", "bytes", "bool"}
_TYPE_NAMES = {"int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type", "dyn"}
_PASS_THROUGH = {"expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                 "member", "primary"}
_OPERATIONS = {"member_dot", "member_dot_arg", "member_index", "member_object", "ident_arg", "dot_ident_arg",
               "paren_expr", "list_lit", "map_lit"}
_BINARY = {
    "relation_lt": "_<_", "relation_le": "_<=_", "relation_gt": "_>_", "relation_ge": "_>=_",
    "relation_eq": "_==_", "relation_ne": "_!=_", "relation_in": "@in",
    "addition_add": "_+_", "addition_sub": "_-_",
    "multiplication_mul": "_*_", "multiplication_div": "_/_", "multiplication_mod": "_%_",
}
_ARITHMETIC = {"_+_": {*_NUMBERS, "string", "bytes", "list"}, "_-_": _NUMBERS, "_*_": _NUMBERS, "_/_": _NUMBERS,
               "_%_": {"int", "uint"}}
_CONVERSIONS = {
    "int": ({"int", "uint", "double", "string"}, _INT),
    "uint": ({"int", "uint", "double", "string"}, _UINT),
    "double": ({"int", "uint", "double", "string"}, _DOUBLE),
    "string": ({"int", "uint", "double", "string", "bytes", "bool"}, _STRING),
    "bool": ({"bool", "string"}, _BOOL),
    "bytes": ({"bytes", "string"}, _BYTES),
    "size": ({"string", "bytes", "list", "map"}, _INT),
}
_STRING_TESTS = {"contains", "startsWith", "endsWith"}
_MACROS = {"has", "all", "exists", "exists_one", "map", "filter"}
_TIME_FUNCTIONS = {"duration", "timestamp", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
                   "getFullYear", "getHours", "getMilliseconds", "getMinutes", "getMonth", "getSeconds"}
_INT64 = (-(2**63), 2**63 - 1)
_UINT64 = 2**64 - 1
_FIX = f"a threshold compares `value`, e.g. {_EXAMPLE}"


class _CheckError(Exception):
    def __init__(self, message: str, fix: str = _FIX) -> None:
        super().__init__(message)
        self.fix = fix


def _is_operation(node: Any) -> bool:
    data, count = node.data, len(node.children)
    return (data in _OPERATIONS or (data == "expr" and count == 3) or (data == "unary" and count == 2)
            or (data in ("conditionalor", "conditionaland", "relation", "addition", "multiplication")
                and count == 2))


def _depth(ast: Any) -> int:
    """Nesting depth in CEL terms (operators, calls, parentheses, literals of lists and maps), computed
    without recursion so that hostile nesting cannot exhaust the stack."""
    from lark import Tree

    deepest = 0
    stack: list[tuple[Any, int]] = [(ast, 0)]
    while stack:
        node, depth = stack.pop()
        depth += _is_operation(node)
        deepest = max(deepest, depth)
        stack.extend((child, depth) for child in node.children if isinstance(child, Tree))
    return deepest


def _compatible(a: _Type, b: _Type) -> bool:
    if _DYN in (a, b):
        return True
    return a.name == b.name and len(a.params) == len(b.params) and all(
        _compatible(x, y) for x, y in zip(a.params, b.params, strict=True))


def _join(types: list[_Type]) -> _Type:
    """The common type of list elements or map keys/values: the one type, else dyn."""
    distinct = set(types)
    return distinct.pop() if len(distinct) == 1 else _DYN


def _no_overload(function: str, *types: _Type) -> _CheckError:
    applied = ", ".join(map(str, types))
    return _CheckError(f"found no matching overload for '{function}' applied to '({applied})'")


class _Checker:
    """Types a cel-python parse tree as cel-go's checker would for ``value: double``."""

    def check(self, node: Any) -> _Type:
        while node.data in _PASS_THROUGH and len(node.children) == 1:
            node = node.children[0]
        method: Callable[[Any], _Type] | None = getattr(self, f"_{node.data}", None)
        if method is None:
            raise _CheckError(f"unsupported construct ({node.data})")
        return method(node)

    # -- operators

    def _expr(self, node: Any) -> _Type:
        condition, then, otherwise = (self.check(child) for child in node.children)
        if not _compatible(condition, _BOOL) or not _compatible(then, otherwise):
            raise _no_overload("_?_:_", condition, then, otherwise)
        return otherwise if then == _DYN else then

    def _logical(self, node: Any, function: str) -> _Type:
        left, right = (self.check(child) for child in node.children)
        if not (_compatible(left, _BOOL) and _compatible(right, _BOOL)):
            raise _no_overload(function, left, right)
        return _BOOL

    def _conditionalor(self, node: Any) -> _Type:
        return self._logical(node, "_||_")

    def _conditionaland(self, node: Any) -> _Type:
        return self._logical(node, "_&&_")

    def _binary(self, node: Any) -> _Type:
        operator, right_node = node.children
        function = _BINARY[operator.data]
        left, right = self.check(operator.children[0]), self.check(right_node)
        if function in _ARITHMETIC:
            return self._arithmetic(function, left, right)
        if function in ("_==_", "_!=_"):
            if not _compatible(left, right):
                fix = ("write the number as a double (1.0, not 1): cel-go compares numbers of different types "
                       "only with <, <=, > and >=" if {left.name, right.name} <= _NUMBERS else _FIX)
                raise _CheckError(str(_no_overload(function, left, right)), fix)
            return _BOOL
        if function == "@in":
            if right == _DYN or (right.name in ("list", "map") and _compatible(left, right.params[0])):
                return _BOOL
            raise _no_overload(function, left, right)
        if _DYN in (left, right) and {left.name, right.name} <= {*_ORDERED, "dyn"}:
            return _BOOL
        if ({left.name, right.name} <= _NUMBERS) or (left == right and left.name in _ORDERED):
            return _BOOL
        raise _no_overload(function, left, right)

    _relation = _binary
    _addition = _binary
    _multiplication = _binary

    def _arithmetic(self, function: str, left: _Type, right: _Type) -> _Type:
        allowed = _ARITHMETIC[function]
        if left == _DYN and right == _DYN:
            return _DYN
        result = right if left == _DYN else left
        if _compatible(left, right) and result.name in allowed:
            if result.name == "list" and left != right:
                return _Type("list", (_DYN,))
            return result
        raise _no_overload(function, left, right)

    def _unary(self, node: Any) -> _Type:
        operator, operand_node = node.children
        operand = self.check(operand_node)
        if operator.data == "unary_not":
            if not _compatible(operand, _BOOL):
                raise _no_overload("!_", operand)
            return _BOOL
        if operand.name not in ("int", "double", "dyn"):
            raise _no_overload("-_", operand)
        return operand

    # -- members and calls

    def _member_dot(self, node: Any) -> _Type:
        receiver = self.check(node.children[0])
        if receiver == _DYN:
            return _DYN
        if receiver.name == "map" and _compatible(receiver.params[0], _STRING):
            return receiver.params[1]
        raise _CheckError(f"type '{receiver}' does not support field selection")

    def _member_index(self, node: Any) -> _Type:
        container, index = self.check(node.children[0]), self.check(node.children[1])
        if container == _DYN:
            return _DYN
        if container.name == "list" and index.name in ("int", "uint", "dyn"):
            return container.params[0]
        if container.name == "map" and _compatible(index, container.params[0]):
            return container.params[1]
        raise _no_overload("_[_]", container, index)

    def _member_object(self, node: Any) -> _Type:
        raise _CheckError("message construction (Type{field: ...}) is not available in thresholds")

    def _arguments(self, node: Any) -> list[_Type]:
        lists = [child for child in node.children if not isinstance(child, str)]
        return [self.check(child) for child in lists[-1].children] if lists and lists[-1].data == "exprlist" else []

    def _function(self, name: str, arguments: list[_Type]) -> _Type:
        if name in ("dyn", "type") and len(arguments) == 1:
            return _DYN if name == "dyn" else _TYPE
        if name in _CONVERSIONS:
            accepted, result = _CONVERSIONS[name]
            if len(arguments) == 1 and arguments[0].name in {*accepted, "dyn"}:
                return result
            raise _no_overload(name, *arguments)
        raise _CheckError(f"undeclared reference to '{name}' (in container '')")

    def _refuse(self, name: str) -> None:
        if name in _MACROS:
            raise _CheckError(f"the macro {name}() is not supported in thresholds",
                              "a threshold tests one number, so list macros are refused (they would let "
                              f"evaluation grow with the data); write a comparison such as {_EXAMPLE}")
        if name == "matches":
            raise _CheckError("matches() is not supported in thresholds",
                              f"a threshold tests one number, not text; write a comparison such as {_EXAMPLE}")
        if name in _TIME_FUNCTIONS:
            raise _CheckError(f"{name}() is not supported in thresholds",
                              f"a threshold tests one number; write a comparison such as {_EXAMPLE}")

    def _ident_arg(self, node: Any) -> _Type:
        name = str(node.children[0])
        self._refuse(name)
        return self._function(name, self._arguments(node))

    _dot_ident_arg = _ident_arg

    def _member_dot_arg(self, node: Any) -> _Type:
        name = str(node.children[1])
        self._refuse(name)
        receiver = self.check(node.children[0])
        arguments = self._arguments(node)
        if name == "size" and not arguments and receiver.name in {"string", "bytes", "list", "map", "dyn"}:
            return _INT
        if name in _STRING_TESTS:
            if receiver.name in ("string", "dyn") and len(arguments) == 1 and arguments[0].name in ("string", "dyn"):
                return _BOOL
            raise _CheckError(f"found no matching overload for '{name}' applied to "
                              f"'{receiver}.({', '.join(map(str, arguments))})'")
        if name in _CONVERSIONS or name in ("dyn", "type"):
            raise _CheckError(f"found no matching overload for '{name}' applied to "
                              f"'{receiver}.({', '.join(map(str, arguments))})'")
        raise _CheckError(f"undeclared reference to '{name}' (in container '')")

    # -- primaries

    def _ident(self, node: Any) -> _Type:
        name = str(node.children[0])
        if name == "value":
            return _DOUBLE
        if name in _TYPE_NAMES:
            return _TYPE
        raise _CheckError(f"undeclared reference to '{name}' (in container '')",
                          f"the only variable is `value` (the measured number), e.g. {_EXAMPLE}")

    _dot_ident = _ident

    def _paren_expr(self, node: Any) -> _Type:
        return self.check(node.children[0])

    def _list_lit(self, node: Any) -> _Type:
        return _Type("list", (_join(self._arguments(node)),))

    def _map_lit(self, node: Any) -> _Type:
        entries = [self.check(child) for child in node.children[0].children] if node.children else []
        keys, values = entries[0::2], entries[1::2]
        for key in keys:
            if key.name not in ("int", "uint", "bool", "string", "dyn"):
                raise _CheckError(f"unsupported map key type: {key}")
        return _Type("map", (_join(keys), _join(values)))

    def _literal(self, node: Any) -> _Type:
        token = node.children[0]
        kind, text = token.type, str(token)
        if kind == "INT_LIT":
            if not _INT64[0] <= _integer(text) <= _INT64[1]:
                raise _CheckError(f"invalid int literal {text} (outside the 64-bit range)")
            return _INT
        if kind == "UINT_LIT":
            if not 0 <= _integer(text[:-1]) <= _UINT64:
                raise _CheckError(f"invalid uint literal {text} (outside the 64-bit range)")
            return _UINT
        return {"FLOAT_LIT": _DOUBLE, "STRING_LIT": _STRING, "MLSTRING_LIT": _STRING, "BYTES_LIT": _BYTES,
                "BOOL_LIT": _BOOL, "NULL_LIT": _NULL}[kind]


def _integer(text: str) -> int:
    negative = text.startswith("-")
    body = text.lstrip("-")
    value = int(body[2:], 16) if body[:2].lower() == "0x" else int(body, 10)
    return -value if negative else value
