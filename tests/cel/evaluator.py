"""The evaluator under test, behind one function: :func:`evaluate` runs a conformance case and answers in the
suite's values (tests.cel.conformance), so pointing the runner at another CEL implementation changes only the
import below and the value conversions here."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from aicr_gen.certify import cel
from tests.cel.conformance import Case, Duration, Map, Timestamp, TypeName, Uint

_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


@dataclass(frozen=True)
class Outcome:
    """The result of a case: a value, or an error raised while compiling (``stage`` "compile", which includes
    the checker) or evaluating ("evaluate"), or a limit ("limit")."""

    value: Any = None
    error: str | None = None
    stage: str | None = None


def evaluate(case: Case) -> Outcome:
    """Compile ``case.expr`` with every variable the case declares or binds, then evaluate it over the
    bindings. The consumers' environments all load ext.Strings, so the cases run with it. Our Environment has
    no container, no way to turn the checker or the macros off: ``container``, ``disable_check`` and
    ``disable_macros`` go unused, and the tests that depend on them are deviations."""
    try:
        program = cel.Environment(case.variables, libraries=("strings",)).compile(case.expr)
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
    """A suite value as our evaluator holds it (cel-python's uint, timestamp and duration types)."""
    import celpy.celtypes

    if isinstance(value, list):
        return [to_ours(item) for item in value]
    if isinstance(value, Map):
        return {to_ours(key): to_ours(item) for key, item in value.entries}
    if isinstance(value, Uint):
        return celpy.celtypes.UintType(value.value)
    if isinstance(value, TypeName):
        return cel.CelType(value.name)
    if isinstance(value, Timestamp):
        instant = _EPOCH + dt.timedelta(seconds=value.seconds, microseconds=value.nanos // 1000)
        return celpy.celtypes.TimestampType(instant)
    if isinstance(value, Duration):
        return celpy.celtypes.DurationType(dt.timedelta(seconds=value.seconds, microseconds=value.nanos // 1000))
    return value


def from_ours(value: Any) -> Any:
    """A value our evaluator returned, as a suite value; an unknown kind raises CelError (a failed case)."""
    kind = cel.kind_of(value)
    if kind == "list":
        return [from_ours(item) for item in value]
    if kind == "map":
        return Map(tuple((from_ours(key), from_ours(item)) for key, item in value.items()))
    if kind == "uint":
        return Uint(int(value))
    if kind == "type":
        return TypeName(value.name)
    if kind == "google.protobuf.Timestamp":
        seconds, micros = divmod(_micros(value - _EPOCH), 1_000_000)  # a Timestamp's nanos are never negative
        return Timestamp(seconds, micros * 1000)
    if kind == "google.protobuf.Duration":
        micros = _micros(value)
        seconds = abs(micros) // 1_000_000 * (1 if micros >= 0 else -1)  # a Duration's parts share a sign
        return Duration(seconds, (micros - seconds * 1_000_000) * 1000)
    plain = _PLAIN.get(kind)
    if plain is None:
        raise cel.CelError(f"a {kind} has no conformance-suite value")
    return plain(value)


_PLAIN: dict[str, Any] = {"null_type": lambda _: None, "bool": bool, "int": int, "double": float, "string": str,
                          "bytes": bytes}
"""cel-python's own subclasses (StringType, BoolType ...) as the plain Python values the suite holds."""


def _micros(span: dt.timedelta) -> int:
    return (span.days * 86_400 + span.seconds) * 1_000_000 + span.microseconds
