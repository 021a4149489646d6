"""The function libraries as tables of implementations and the arities they may be called with: the standard
library, cel-go's ext.Strings (:mod:`aicr_gen.cel.strings`) and the Kubernetes quantity library."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.cel import strings
from aicr_gen.cel.arithmetic import check_int
from aicr_gen.cel.conversions import (
    dyn,
    time_getter,
    to_bool,
    to_bytes,
    to_double,
    to_duration,
    to_int,
    to_string,
    to_timestamp,
    to_uint,
    type_of,
)
from aicr_gen.cel.errors import CelError
from aicr_gen.cel.values import INT64_MAX, INT64_MIN, Quantity, no_overload, quantity_value

if TYPE_CHECKING:
    from fractions import Fraction


class Function(NamedTuple):
    """An implementation and how it may be called; arities count the receiver of a method call."""

    impl: Callable[..., Any]
    global_arities: frozenset[int] = frozenset()
    method_arities: frozenset[int] = frozenset()


def fn(impl: Callable[..., Any], globals_: Iterable[int] = (), methods: Iterable[int] = ()) -> Function:
    return Function(impl, frozenset(globals_), frozenset(methods))


def _size(value: Any) -> int:
    kind = type(value)
    if kind is str or kind is bytes or kind is list or kind is dict:
        return len(value)
    raise no_overload("size", value)


def _text_test(name: str, test: Callable[[str, str], bool]) -> Callable[[Any, Any], bool]:
    def run(text: Any, part: Any) -> bool:
        if type(text) is not str or type(part) is not str:
            raise no_overload(name, text, part)
        return test(text, part)

    return run


_REGEX_CACHE: dict[str, Any] = {}


def _matches(text: Any, pattern: Any) -> bool:
    if type(text) is not str or type(pattern) is not str:
        raise no_overload("matches", text, pattern)
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is None:
        import re2  # type: ignore[import-untyped]

        options = re2.Options()
        options.log_errors = False  # the error is the evaluation's, not a line on stderr
        try:
            compiled = re2.compile(pattern, options)
        except re2.error as err:
            detail = err.args[0].decode() if err.args and isinstance(err.args[0], bytes) else str(err)
            raise CelError(f"invalid regular expression {pattern!r}: {detail}") from None
        if len(_REGEX_CACHE) < 1024:
            _REGEX_CACHE[pattern] = compiled
    return compiled.search(text) is not None


_TIME_GETTERS = ("getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
                 "getHours", "getMinutes", "getSeconds", "getMilliseconds")

STANDARD: dict[str, Function] = {
    "size": fn(_size, [1], [1]),
    "contains": fn(_text_test("contains", str.__contains__), methods=[2]),
    "startsWith": fn(_text_test("startsWith", str.startswith), methods=[2]),
    "endsWith": fn(_text_test("endsWith", str.endswith), methods=[2]),
    "matches": fn(_matches, [2], [2]),
    "int": fn(to_int, [1]),
    "uint": fn(to_uint, [1]),
    "double": fn(to_double, [1]),
    "string": fn(to_string, [1]),
    "bool": fn(to_bool, [1]),
    "bytes": fn(to_bytes, [1]),
    "timestamp": fn(to_timestamp, [1]),
    "duration": fn(to_duration, [1]),
    "type": fn(type_of, [1]),
    "dyn": fn(dyn, [1]),
    **{name: fn(time_getter(name), methods=[1, 2]) for name in _TIME_GETTERS},
}

STRINGS: dict[str, Function] = {
    "charAt": fn(strings.char_at, methods=[2]),
    "indexOf": fn(strings.index_of, methods=[2, 3]),
    "lastIndexOf": fn(strings.last_index_of, methods=[2, 3]),
    "lowerAscii": fn(strings.lower_ascii, methods=[1]),
    "upperAscii": fn(strings.upper_ascii, methods=[1]),
    "replace": fn(strings.replace, methods=[3, 4]),
    "split": fn(strings.split, methods=[2, 3]),
    "substring": fn(strings.substring, methods=[2, 3]),
    "trim": fn(strings.trim, methods=[1]),
    "join": fn(strings.join, methods=[1, 2]),
    "reverse": fn(strings.reverse, methods=[1]),
    "format": fn(strings.format_text, methods=[2]),
    "strings.quote": fn(strings.quote, [1]),
}


# --- Kubernetes quantity library (lifecycle-manager criteria)

def _quantity(text: Any) -> Quantity:
    if type(text) is not str:
        raise no_overload("quantity", text)
    return Quantity(text)


def _is_quantity(text: Any) -> bool:
    if type(text) is not str:
        raise no_overload("isQuantity", text)
    try:
        Quantity(text)
    except CelError:
        return False
    return True


def _number(name: str, value: Any) -> Fraction:
    if not isinstance(value, Quantity):
        raise no_overload(name, value)
    return value.value


def _sign(value: Any) -> int:
    number = _number("sign", value)
    return (number > 0) - (number < 0)


def _is_integer(value: Any) -> bool:
    number = _number("isInteger", value)
    return number.denominator == 1 and INT64_MIN <= number <= INT64_MAX


def _as_integer(value: Any) -> int:
    number = _number("asInteger", value)
    if number.denominator != 1:
        raise CelError(f"quantity {value.text!r} is not an integer")
    return check_int(int(number))


def _as_approximate_float(value: Any) -> float:
    return float(_number("asApproximateFloat", value))


def _add(value: Any, other: Any) -> Quantity:
    return Quantity.of(_number("add", value) + quantity_value(other))


def _sub(value: Any, other: Any) -> Quantity:
    return Quantity.of(_number("sub", value) - quantity_value(other))


def _is_greater_than(value: Any, other: Any) -> bool:
    return _number("isGreaterThan", value) > _number("isGreaterThan", other)


def _is_less_than(value: Any, other: Any) -> bool:
    return _number("isLessThan", value) < _number("isLessThan", other)


def _compare_to(value: Any, other: Any) -> int:
    a, b = _number("compareTo", value), _number("compareTo", other)
    return (a > b) - (a < b)


QUANTITY: dict[str, Function] = {
    "quantity": fn(_quantity, [1]),
    "isQuantity": fn(_is_quantity, [1]),
    "sign": fn(_sign, methods=[1]),
    "isInteger": fn(_is_integer, methods=[1]),
    "asInteger": fn(_as_integer, methods=[1]),
    "asApproximateFloat": fn(_as_approximate_float, methods=[1]),
    "add": fn(_add, methods=[2]),
    "sub": fn(_sub, methods=[2]),
    "isGreaterThan": fn(_is_greater_than, methods=[2]),
    "isLessThan": fn(_is_less_than, methods=[2]),
    "compareTo": fn(_compare_to, methods=[2]),
}

MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
"""The receiver-style standard macros the parser expands (``has()`` is the one global macro)."""
