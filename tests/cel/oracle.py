"""Two CEL evaluators behind one function each, answering in the same plain shape so a test can compare them:
:func:`ours` (aicr_gen's evaluator, which follows cel-go) and :func:`cel_cpp` (cel-expr-python, Google's binding
of cel-cpp, a second implementation of the same spec).

An :class:`Outcome` is a typed value or an error stage. Values are nested tuples tagged with the CEL type
(``("uint", 1)`` is not ``("int", 1)``), doubles by their exact bits with every NaN alike, lists in order and maps
as sorted entries. Error messages are kept for reading a failure but never compared: the two implementations word
them differently. A map key's int/uint/bool kind is not compared either: cel-expr-python hands map keys back as
plain Python values (1, 1u and true are one key to a Python dict), so both sides drop it the same way.
"""

from __future__ import annotations

import datetime as dt
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from aicr_gen import cel as _cel

CEL = _cel
"""Our CEL package, for tests that need more of it than :func:`ours` (``to_cel``, ``CelError``)."""

DYN = "dyn"
DOUBLE = "double"


@dataclass(frozen=True)
class Outcome:
    """A value (``error`` None) or an error raised while compiling ("compile"), evaluating ("evaluate"), or a
    limit of ours ("limit"). Equal outcomes: equal values, or errors of any stage on both sides."""

    value: Any = None
    error: str | None = None
    message: str = field(default="", compare=False)

    def agrees(self, other: Outcome) -> bool:
        if self.error == "limit" or other.error == "limit":
            return self.error == other.error
        if self.error or other.error:
            return bool(self.error and other.error)
        return bool(self.value == other.value)

    def __str__(self) -> str:
        return f"{self.error} error: {self.message}" if self.error else repr(self.value)


Bindings = Mapping[str, Any]
"""Variable name -> plain Python data (None, bool, int, float, str, bytes, list, dict)."""


def ours(expression: str, variables: Mapping[str, str], *bindings: Bindings, check: bool = False) -> tuple[
        Outcome, ...]:
    """``expression`` compiled once in our Environment as the consumers compile (ext.Strings loaded, every
    variable dyn, no type checker) and evaluated over each of ``bindings`` (converted with ``to_cel``).
    ``check``: with our type checker too, the variables declared with their types, as cel-go compiles."""
    options: dict[str, Any] = {}
    if check:
        if not hasattr(_cel, "type_check"):
            raise NotImplementedError(f"{_cel.__name__} has no type checker")
        from aicr_gen.cel import types

        options = {"check": True, "declarations": {name: getattr(types, kind.upper()) for name, kind in
                                                   variables.items()}}
    try:
        program = _cel.Environment(list(variables), libraries=("strings",), **options).compile(expression)
    except _cel.CelLimitError as error:
        return (Outcome(error="limit", message=str(error)),) * len(bindings)
    except _cel.CelCompileError as error:
        return (Outcome(error="compile", message=str(error)),) * len(bindings)
    return tuple(_ours_evaluate(program, one) for one in bindings)


def _ours_evaluate(program: Any, bindings: Bindings) -> Outcome:
    try:
        return Outcome(_ours_value(program.evaluate({name: _cel.to_cel(value) for name, value in bindings.items()})))
    except _cel.CelLimitError as error:
        return Outcome(error="limit", message=str(error))
    except _cel.CelError as error:
        return Outcome(error="evaluate", message=str(error))


def cel_cpp(expression: str, variables: Mapping[str, str], *bindings: Bindings,
            output: str | None = None) -> tuple[Outcome, ...]:
    """``expression`` type-checked once by cel-cpp with ``variables`` declared (name -> "dyn" or "double") and
    its strings extension loaded, and evaluated over each of ``bindings``. ``output``: the type the checker
    must give the expression (as NVCRE requires "bool"), else a compile error."""
    try:
        program = _environment(tuple(sorted(variables.items()))).compile(expression)
    except RuntimeError as error:  # parse and check errors alike
        return (Outcome(error="compile", message=str(error)),) * len(bindings)
    if output is not None and _cpp_type_name(program.return_type().name()) != output:
        return (Outcome(error="compile", message=f"the output type is {program.return_type().name()}"),) * len(
            bindings)
    return tuple(_cpp_evaluate(program, one) for one in bindings)


def _cpp_evaluate(program: Any, bindings: Bindings) -> Outcome:
    try:
        result = program.eval(data=dict(bindings))
    except Exception as error:  # a binding it cannot convert, or a runtime failure the binding raises
        return Outcome(error="evaluate", message=f"{type(error).__name__}: {error}")
    if result.type().name() in ("ERROR", "UNKNOWN"):
        return Outcome(error="evaluate", message=str(result.value()))
    return Outcome(_cpp_value(result))


@cache
def _environment(variables: tuple[tuple[str, str], ...]) -> Any:
    from cel_expr_python import cel
    from cel_expr_python.ext import ext_strings

    types = {DYN: cel.Type.DYN, DOUBLE: cel.Type.DOUBLE}
    return cel.NewEnv(variables={name: types[kind] for name, kind in variables},
                      extensions=[ext_strings.ExtStrings()])


def _double(value: float) -> tuple[str, str]:
    return ("double", "nan" if math.isnan(value) else float(value).hex())


def _entries(items: Any) -> tuple[Any, ...]:
    return tuple(sorted(items, key=repr))


def _key(tagged: tuple[str, Any]) -> Any:
    """A map key without its int/uint/bool kind (see the module docstring)."""
    kind, value = tagged
    return ("number", int(value)) if kind in ("int", "uint", "bool") else tagged


def _map_key(key: Any) -> Any:
    """A key of a map our evaluator returned: aicr_gen.cel keeps a bool key wrapped (so ``{true: a, 1: b}``
    stays two entries)."""
    return key.value if type(key).__name__ == "_BoolKey" else key


_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _micros(span: dt.timedelta) -> int:
    return (span.days * 86_400 + span.seconds) * 1_000_000 + span.microseconds


_OUR_SCALARS: dict[str, Any] = {"int": int, "uint": int, "bool": bool, "string": str, "bytes": bytes}


def _ours_value(value: Any) -> Any:
    kind = _cel.kind_of(value)
    if kind == "double":
        return _double(value)
    if kind == "null_type":
        return ("null", None)
    if kind == "list":
        return ("list", tuple(_ours_value(item) for item in value))
    if kind == "map":
        return ("map", _entries((_key(_ours_value(_map_key(key))), _ours_value(item)) for key, item in value.items()))
    if kind == "type":
        return ("type", value.name)
    if kind == "google.protobuf.Timestamp":
        return ("timestamp", value.nanos // 1000 if hasattr(value, "nanos") else _micros(value - _EPOCH))
    if kind == "google.protobuf.Duration":
        return ("duration", value.nanos // 1000 if hasattr(value, "nanos") else _micros(value))
    if kind in _OUR_SCALARS:
        return (kind, _OUR_SCALARS[kind](value))
    return (kind, repr(value))


_CPP_TYPE_NAMES = {"INT": "int", "UINT": "uint", "DOUBLE": "double", "BOOL": "bool", "STRING": "string",
                   "BYTES": "bytes", "NULL": "null_type", "TYPE": "type", "TIMESTAMP": "google.protobuf.Timestamp",
                   "DURATION": "google.protobuf.Duration", "DYN": "dyn"}


def _cpp_type_name(name: str) -> str:
    base = name.partition("<")[0]
    return {"LIST": "list", "MAP": "map"}.get(base) or _CPP_TYPE_NAMES.get(base, name)


def _cpp_value(value: Any) -> Any:
    kind = value.type().name()
    plain = value.value()
    if kind == "DOUBLE":
        return _double(plain)
    if kind == "NULL":
        return ("null", None)
    if kind.startswith("LIST"):
        return ("list", tuple(_cpp_value(item) for item in plain))
    if kind.startswith("MAP"):
        return ("map", _entries((_key(_cpp_key(key)), _cpp_value(item)) for key, item in plain.items()))
    if kind == "TYPE":
        return ("type", _cpp_type_name(plain.name()))
    if kind == "TIMESTAMP":
        return ("timestamp", _micros(plain - _EPOCH))
    if kind == "DURATION":
        return ("duration", _micros(plain))
    if kind == "BYTES":
        return ("bytes", bytes(plain))
    return (_CPP_TYPE_NAMES.get(kind, kind), plain)


def _cpp_key(key: Any) -> tuple[str, Any]:
    if isinstance(key, bool):
        return ("bool", key)
    if isinstance(key, int):
        return ("int", key)
    return ("string", key) if isinstance(key, str) else (type(key).__name__, key)
