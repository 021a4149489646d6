"""The function libraries: the standard library, cel-go's ext.Strings and the Kubernetes quantity library,
as tables of implementations and the arities they may be called with."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any, NamedTuple

from aicr_gen.certify.cel.arithmetic import _check_int
from aicr_gen.certify.cel.conversions import (
    _dyn,
    _to_bool,
    _to_bytes,
    _to_double,
    _to_duration,
    _to_int,
    _to_string,
    _to_timestamp,
    _to_uint,
    _type_of,
)
from aicr_gen.certify.cel.errors import CelError
from aicr_gen.certify.cel.values import (
    _MISSING,
    _NUMBERS,
    INT64_MAX,
    INT64_MIN,
    Quantity,
    _no_overload,
    _quantity_value,
    kind_of,
)


def _size(value: Any) -> int:
    if kind_of(value) in ("string", "bytes", "list", "map"):
        return len(value)
    raise _no_overload("size", value)


def _string_args(name: str, *values: Any) -> None:
    for value in values:
        if type(value) is not str and kind_of(value) != "string":
            raise _no_overload(name, *values)


def _int_args(name: str, *values: Any) -> None:
    for value in values:
        if kind_of(value) != "int":
            raise _no_overload(name, *values)


def _contains_fn(text: Any, part: Any) -> bool:
    _string_args("contains", text, part)
    return part in text


def _starts_with(text: Any, part: Any) -> bool:
    _string_args("startsWith", text, part)
    return text.startswith(part)  # type: ignore[no-any-return]


def _ends_with(text: Any, part: Any) -> bool:
    _string_args("endsWith", text, part)
    return text.endswith(part)  # type: ignore[no-any-return]


_REGEX_CACHE: dict[str, Any] = {}


def _matches(text: Any, pattern: Any) -> bool:
    _string_args("matches", text, pattern)
    compiled = _REGEX_CACHE.get(pattern)
    if compiled is None:
        import re2  # type: ignore[import-untyped]

        try:
            compiled = re2.compile(pattern)
        except re2.error as err:
            raise CelError(f"invalid regular expression {pattern!r}: {err}") from None
        if len(_REGEX_CACHE) < 1024:
            _REGEX_CACHE[pattern] = compiled
    return compiled.search(text) is not None


def _time_getter(name: str) -> Callable[..., int]:
    def getter(value: Any, zone: Any = None) -> int:
        kind = kind_of(value)
        if kind == "google.protobuf.Duration" and name in ("getHours", "getMinutes", "getSeconds",
                                                            "getMilliseconds") and zone is None:
            seconds = value.total_seconds()
            divisor = {"getHours": 3600, "getMinutes": 60, "getSeconds": 1, "getMilliseconds": 0.001}[name]
            return int(seconds / divisor) if name != "getMilliseconds" else int(value.microseconds // 1000)
        if kind != "google.protobuf.Timestamp" or (zone is not None and kind_of(zone) != "string"):
            raise _no_overload(name, value) if zone is None else _no_overload(name, value, zone)
        try:
            return int(getattr(value, name)(zone))
        except Exception as err:  # an unknown time zone name
            raise CelError(f"{name}: {err}") from None

    return getter


# --- ext.Strings (cel-go), which fault-quarantine loads


def _char_at(text: Any, index: Any) -> str:
    _string_args("charAt", text)
    _int_args("charAt", index)
    if not 0 <= index <= len(text):
        raise CelError(f"index out of range: {index}")
    return text[index] if index < len(text) else ""


def _index_of(text: Any, part: Any, offset: Any = 0) -> int:
    _string_args("indexOf", text, part)
    _int_args("indexOf", offset)
    if not 0 <= offset <= len(text):
        raise CelError(f"index out of range: {offset}")
    return text.find(part, offset)  # type: ignore[no-any-return]


def _last_index_of(text: Any, part: Any, offset: Any = None) -> int:
    _string_args("lastIndexOf", text, part)
    if offset is None:
        return text.rfind(part)  # type: ignore[no-any-return]
    _int_args("lastIndexOf", offset)
    if not 0 <= offset < max(len(text), 1):
        raise CelError(f"index out of range: {offset}")
    return text.rfind(part, 0, offset + len(part))  # type: ignore[no-any-return]


_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
_UPPER = {code + 32: code for code in range(ord("A"), ord("Z") + 1)}


def _lower_ascii(text: Any) -> str:
    _string_args("lowerAscii", text)
    return text.translate(_LOWER)  # type: ignore[no-any-return]


def _upper_ascii(text: Any) -> str:
    _string_args("upperAscii", text)
    return text.translate(_UPPER)  # type: ignore[no-any-return]


def _replace(text: Any, old: Any, new: Any, limit: Any = -1) -> str:
    _string_args("replace", text, old, new)
    _int_args("replace", limit)
    return text.replace(old, new, limit if limit >= 0 else -1)  # type: ignore[no-any-return]


def _split(text: Any, separator: Any, limit: Any = -1) -> list[str]:
    _string_args("split", text, separator)
    _int_args("split", limit)
    if limit == 0:
        return []
    if separator == "":
        parts = list(text)
        return parts if limit < 0 or len(parts) <= limit else [*parts[:limit - 1], "".join(parts[limit - 1:])]
    return text.split(separator, limit - 1 if limit > 0 else -1)  # type: ignore[no-any-return]


def _substring(text: Any, start: Any, end: Any = None) -> str:
    _string_args("substring", text)
    end = len(text) if end is None else end
    _int_args("substring", start, end)
    if not 0 <= start <= end <= len(text):
        raise CelError(f"substring out of range: [{start}:{end}] of a string of length {len(text)}")
    return text[start:end]  # type: ignore[no-any-return]


def _trim(text: Any) -> str:
    _string_args("trim", text)
    return text.strip()  # type: ignore[no-any-return]


def _join(items: Any, separator: Any = "") -> str:
    if kind_of(items) != "list":
        raise _no_overload("join", items)
    _string_args("join", separator, *items)
    return separator.join(items)  # type: ignore[no-any-return]


def _reverse(text: Any) -> str:
    _string_args("reverse", text)
    return text[::-1]  # type: ignore[no-any-return]


_VERB = re.compile(r"%(?:\.(\d+))?([sdfexXob%])")


def _format(template: Any, args: Any) -> str:
    _string_args("format", template)
    if kind_of(args) != "list":
        raise _no_overload("format", template, args)
    values = iter(args)

    def one(match: re.Match[str]) -> str:
        precision, verb = match.group(1), match.group(2)
        if verb == "%":
            return "%"
        value: Any = next(values, _MISSING)
        if value is _MISSING:
            raise CelError(f"format: too few arguments for {template!r}")
        kind = kind_of(value)
        if verb == "s":
            return _to_string(value) if kind != "list" else "[" + ", ".join(_to_string(v) for v in value) + "]"
        if verb in "fe" and kind in _NUMBERS:
            return f"{float(value):.{int(precision or 6)}{verb}}"
        if verb in "dxXob" and kind in ("int", "uint"):
            return format(int(value), verb)
        raise CelError(f"format: %{verb} does not take a {kind}")

    return _VERB.sub(one, template)


# --- Kubernetes quantity library (lifecycle-manager criteria)


def _quantity(text: Any) -> Quantity:
    if kind_of(text) != "string":
        raise _no_overload("quantity", text)
    return Quantity(str(text))


def _is_quantity(text: Any) -> bool:
    if kind_of(text) != "string":
        raise _no_overload("isQuantity", text)
    try:
        Quantity(str(text))
    except CelError:
        return False
    return True


def _quantity_arg(name: str, value: Any) -> Quantity:
    if not isinstance(value, Quantity):
        raise _no_overload(name, value)
    return value


def _sign(value: Any) -> int:
    number = _quantity_arg("sign", value).value
    return (number > 0) - (number < 0)


def _is_integer(value: Any) -> bool:
    number = _quantity_arg("isInteger", value).value
    return number.denominator == 1 and INT64_MIN <= number <= INT64_MAX


def _as_integer(value: Any) -> int:
    number = _quantity_arg("asInteger", value).value
    if number.denominator != 1:
        raise CelError(f"quantity {value.text!r} is not an integer")
    return _check_int(int(number))


def _as_approximate_float(value: Any) -> float:
    return float(_quantity_arg("asApproximateFloat", value).value)


def _quantity_result(number: Fraction) -> Quantity:
    result = Quantity("0")
    result.value = number
    result.text = str(number) if number.denominator == 1 else format(float(number), "g")
    return result


def _quantity_add(value: Any, other: Any) -> Quantity:
    return _quantity_result(_quantity_arg("add", value).value + _quantity_value(other))


def _quantity_sub(value: Any, other: Any) -> Quantity:
    return _quantity_result(_quantity_arg("sub", value).value - _quantity_value(other))


def _is_greater_than(value: Any, other: Any) -> bool:
    return _quantity_arg("isGreaterThan", value).value > _quantity_arg("isGreaterThan", other).value


def _is_less_than(value: Any, other: Any) -> bool:
    return _quantity_arg("isLessThan", value).value < _quantity_arg("isLessThan", other).value


def _compare_to(value: Any, other: Any) -> int:
    a, b = _quantity_arg("compareTo", value).value, _quantity_arg("compareTo", other).value
    return (a > b) - (a < b)


# --- the tables


class _Function(NamedTuple):
    impl: Callable[..., Any]
    global_arities: frozenset[int] = frozenset()
    method_arities: frozenset[int] = frozenset()


def _fn(impl: Callable[..., Any], globals_: Iterable[int] = (), methods: Iterable[int] = ()) -> _Function:
    return _Function(impl, frozenset(globals_), frozenset(methods))


_TIME_GETTERS = ("getFullYear", "getMonth", "getDate", "getDayOfMonth", "getDayOfWeek", "getDayOfYear",
                 "getHours", "getMinutes", "getSeconds", "getMilliseconds")

# Arities count the receiver of a method call.
STANDARD: dict[str, _Function] = {
    "size": _fn(_size, [1], [1]),
    "contains": _fn(_contains_fn, methods=[2]),
    "startsWith": _fn(_starts_with, methods=[2]),
    "endsWith": _fn(_ends_with, methods=[2]),
    "matches": _fn(_matches, [2], [2]),
    "int": _fn(_to_int, [1]),
    "uint": _fn(_to_uint, [1]),
    "double": _fn(_to_double, [1]),
    "string": _fn(_to_string, [1]),
    "bool": _fn(_to_bool, [1]),
    "bytes": _fn(_to_bytes, [1]),
    "timestamp": _fn(_to_timestamp, [1]),
    "duration": _fn(_to_duration, [1]),
    "type": _fn(_type_of, [1]),
    "dyn": _fn(_dyn, [1]),
    **{name: _fn(_time_getter(name), methods=[1, 2]) for name in _TIME_GETTERS},
}

STRINGS: dict[str, _Function] = {
    "charAt": _fn(_char_at, methods=[2]),
    "indexOf": _fn(_index_of, methods=[2, 3]),
    "lastIndexOf": _fn(_last_index_of, methods=[2, 3]),
    "lowerAscii": _fn(_lower_ascii, methods=[1]),
    "upperAscii": _fn(_upper_ascii, methods=[1]),
    "replace": _fn(_replace, methods=[3, 4]),
    "split": _fn(_split, methods=[2, 3]),
    "substring": _fn(_substring, methods=[2, 3]),
    "trim": _fn(_trim, methods=[1]),
    "join": _fn(_join, methods=[1, 2]),
    "reverse": _fn(_reverse, methods=[1]),
    "format": _fn(_format, methods=[2]),
}

QUANTITY: dict[str, _Function] = {
    "quantity": _fn(_quantity, [1]),
    "isQuantity": _fn(_is_quantity, [1]),
    "sign": _fn(_sign, methods=[1]),
    "isInteger": _fn(_is_integer, methods=[1]),
    "asInteger": _fn(_as_integer, methods=[1]),
    "asApproximateFloat": _fn(_as_approximate_float, methods=[1]),
    "add": _fn(_quantity_add, methods=[2]),
    "sub": _fn(_quantity_sub, methods=[2]),
    "isGreaterThan": _fn(_is_greater_than, methods=[2]),
    "isLessThan": _fn(_is_less_than, methods=[2]),
    "compareTo": _fn(_compare_to, methods=[2]),
}

MACROS = frozenset(("all", "exists", "exists_one", "map", "filter"))
