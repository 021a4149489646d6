"""The evaluator under test, behind one function: :func:`evaluate` runs a conformance case and answers in the
suite's values (tests.cel.conformance), so pointing the runner at another CEL implementation changes only the
import below and the value conversions here."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from aicr_gen import cel
from aicr_gen.cel.types import parse_type
from aicr_gen.cel.values import Duration, Timestamp, Uint, key_value, map_key
from tests.cel import conformance
from tests.cel.conformance import Case, Map, TypeName

_NANOS = 10**9


@dataclass(frozen=True)
class Outcome:
    """The result of a case: a value, or an error raised while compiling (``stage`` "compile", which includes
    the checker) or evaluating ("evaluate"), or a limit ("limit")."""

    value: Any = None
    error: str | None = None
    stage: str | None = None


def environment(case: Case) -> cel.Environment:
    """The case's environment: its variables with their declared types, container and macros; ext.Strings
    loaded (every consumer loads it). The type checker runs unless the case says ``disable_check``; then
    undeclared names and functions fail only when evaluated, as in cel-go's unchecked programs."""
    declarations = {decl.name: parse_type(decl.type) for decl in case.declarations if decl.kind == "variable"}
    return cel.Environment(case.variables, libraries=("strings",), container=case.container,
                           macros=not case.disable_macros, declarations=declarations,
                           check=not case.disable_check, references=not case.disable_check)


def evaluate(case: Case) -> Outcome:
    """Compile ``case.expr`` in :func:`environment`, then evaluate it over the bindings."""
    try:
        program = environment(case).compile(case.expr)
    except cel.CelLimitError as error:
        return Outcome(error=str(error), stage="limit")
    except cel.CelCompileError as error:
        return Outcome(error=str(error), stage="compile")
    activation = {name: to_ours(value) for name, value in case.bindings.items()}
    try:
        return Outcome(from_ours(program.evaluate(activation)))
    except cel.CelLimitError as error:
        return Outcome(error=str(error), stage="limit")
    except cel.CelError as error:
        return Outcome(error=str(error), stage="evaluate")


def to_ours(value: Any) -> Any:
    """A suite value as our evaluator holds it."""
    if isinstance(value, list):
        return [to_ours(item) for item in value]
    if isinstance(value, Map):
        return {map_key(to_ours(key)): to_ours(item) for key, item in value.entries}
    if isinstance(value, conformance.Uint):
        return Uint(value.value)
    if isinstance(value, TypeName):
        return cel.CelType(value.name)
    if isinstance(value, conformance.Timestamp):
        return Timestamp(value.seconds * _NANOS + value.nanos)
    if isinstance(value, conformance.Duration):
        return Duration(value.seconds * _NANOS + value.nanos)
    return value


def from_ours(value: Any) -> Any:
    """A value our evaluator returned, as a suite value; an unknown kind raises CelError (a failed case)."""
    kind = type(value)
    if kind is list:
        return [from_ours(item) for item in value]
    if kind is dict:
        return Map(tuple((from_ours(key_value(key)), from_ours(item)) for key, item in value.items()))
    if kind is Uint:
        return conformance.Uint(int(value))
    if kind is cel.CelType:
        return TypeName(value.name)
    if kind is Timestamp:
        seconds, nanos = divmod(value.nanos, _NANOS)  # a Timestamp's nanos are never negative
        return conformance.Timestamp(seconds, nanos)
    if kind is Duration:
        seconds = abs(value.nanos) // _NANOS * (1 if value.nanos >= 0 else -1)  # a Duration's parts share a sign
        return conformance.Duration(seconds, value.nanos - seconds * _NANOS)
    if value is None or kind in (bool, int, float, str, bytes):
        return value
    raise cel.CelError(f"a {cel.kind_of(value)} has no conformance-suite value")


