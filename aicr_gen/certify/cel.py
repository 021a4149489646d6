"""A bounded CEL environment: cel-python's parser and time types, with cel-go's semantics and hard limits.

NVSentinel evaluates its rules with cel-go. cel-python's own evaluators differ from cel-go where rules
care (``15.0 == 15`` is an error there but true in cel-go; ``||`` lets a Python ``TypeError`` escape from
the documented ``event.errorCode == null || !event.errorCode.exists(...)`` guard; the ``ext.Strings``
functions are missing), so this module compiles cel-python's parse tree into Python closures itself:

- cel-go semantics: heterogeneous equality (numbers compare by value, other mixed types are unequal),
  cross-type numeric ordering, ``&&``/``||`` that short-circuit and absorb an error when the other side
  decides, ``all``/``exists`` that absorb errors the same way, member access on null is an error.
- cel-go's checker at compile time: undeclared variables and functions, and wrong argument counts, are
  compile errors, exactly where fault-quarantine refuses to start.
- Bounds, so a hostile expression is refused instead of hanging: a length and nesting limit and a static
  cost estimate at compile time; a step budget and a wall-clock deadline per evaluation (comprehension
  iterations and large results are charged), raising :class:`CelLimitError`.
- Libraries: the standard library, cel-go's ``ext.Strings`` (what fault-quarantine loads) and, for the
  lifecycle manager's criteria, ``now()`` (a fixed instant given to the environment) and Kubernetes
  ``quantity()`` with the Kubernetes quantity methods plus ``<``/``>`` against numbers.

Values are plain Python (None, bool, int, float, str, bytes, list, dict) plus cel-python's
``UintType``, ``TimestampType`` and ``DurationType`` and our :class:`Quantity`; :func:`to_cel` converts
and checks data. cel-python has no type hints, so it is used as ``Any`` at the boundary.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, NamedTuple

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


class CelError(Exception):
    """An evaluation error (a cel-go error value): the rule does not match."""


class CelCompileError(Exception):
    """The expression does not parse or check; NVSentinel would refuse it at start-up."""


class CelLimitError(Exception):
    """A limit was exceeded while compiling or evaluating; the expression is refused as hostile."""


@dataclass(frozen=True)
class Limits:
    """Bounds on one expression. ``max_steps`` counts evaluated operations, comprehension iterations
    weighted by their body's size and large results by their length."""

    max_length: int = 8192
    max_depth: int = 400
    max_steps: int = 500_000
    max_seconds: float = 1.0
    max_result_size: int = 1_000_000


DEFAULT_LIMITS = Limits()


# ------------------------------------------------------------------------------------------ values


class CelType(NamedTuple):
    """A CEL type as a value (``type(x) == int``)."""

    name: str


TYPE_NAMES = ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type")
_TYPES = {name: CelType(name) for name in (*TYPE_NAMES, "google.protobuf.Timestamp",
                                           "google.protobuf.Duration", "kubernetes.Quantity")}


@functools.cache
def _celtypes() -> Any:
    import celpy.celtypes

    return celpy.celtypes


def _uint_type() -> Any:
    return _celtypes().UintType


def _timestamp_type() -> Any:
    return _celtypes().TimestampType


def _duration_type() -> Any:
    return _celtypes().DurationType


_QUANTITY = re.compile(r"([+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+))(Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]|[eE][+-]?[0-9]+)?")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}


class Quantity:
    """A Kubernetes resource quantity ('10Gi', '500m', '1e3'), held exactly as a fraction."""

    __slots__ = ("text", "value")

    def __init__(self, text: str) -> None:
        match = _QUANTITY.fullmatch(text)
        if match is None:
            raise CelError(f"quantities must match the regular expression "
                           f"'^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$': {text!r}")
        number, suffix = match.group(1), match.group(2) or ""
        value = Fraction(number)
        if suffix in _BINARY:
            value *= _BINARY[suffix]
        else:
            exponent = _DECIMAL[suffix] if suffix in _DECIMAL else int(suffix[1:])
            if abs(exponent) > 64:
                raise CelError(f"quantity {text!r} is out of range")
            value *= Fraction(10) ** exponent
        self.text = text
        self.value = value

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


def _quantity_value(value: Any) -> Fraction:
    if isinstance(value, Quantity):
        return value.value
    kind = kind_of(value)
    if kind in ("int", "uint"):
        return Fraction(value)
    if kind == "double" and math.isfinite(value):
        return Fraction(value)
    raise CelError(f"no matching overload for a quantity and {kind}")


# ---------------------------------------------------------------------------------------- kinds

_KIND_BY_TYPE: dict[type, str] = {
    type(None): "null_type", bool: "bool", int: "int", float: "double", str: "string", bytes: "bytes",
    list: "list", dict: "map", tuple: "list", CelType: "type", Quantity: "kubernetes.Quantity",
}
_NUMBERS = frozenset(("int", "uint", "double"))


def kind_of(value: Any) -> str:
    """The CEL type name of a runtime value."""
    kind = _KIND_BY_TYPE.get(type(value))
    if kind is not None:
        return kind
    celtypes = _celtypes()
    for cls, name in ((celtypes.UintType, "uint"), (celtypes.TimestampType, "google.protobuf.Timestamp"),
                      (celtypes.DurationType, "google.protobuf.Duration"), (bool, "bool"), (int, "int"),
                      (float, "double"), (str, "string"), (bytes, "bytes"), (list, "list"), (dict, "map")):
        if isinstance(value, cls):
            _KIND_BY_TYPE[type(value)] = name
            return name
    raise CelError(f"unsupported value of Python type {type(value).__name__}")


def _no_overload(op: str, *values: Any) -> CelError:
    return CelError(f"no matching overload for '{op}' applied to ({', '.join(kind_of(v) for v in values)})")


def equals(left: Any, right: Any) -> bool:
    """cel-go's heterogeneous equality: numbers by value, other mixed types unequal, never an error."""
    lk, rk = kind_of(left), kind_of(right)
    if lk in _NUMBERS and rk in _NUMBERS:
        return bool(_plain(left) == _plain(right))
    if lk != rk:
        return False
    if lk == "list":
        return len(left) == len(right) and all(equals(a, b) for a, b in zip(left, right, strict=True))
    if lk == "map":
        if len(left) != len(right):
            return False
        for key, value in left.items():
            found, other = _map_lookup(right, key)
            if not found or not equals(value, other):
                return False
        return True
    if lk == "kubernetes.Quantity":
        return bool(left.value == right.value)
    return bool(left == right)


def _plain(value: Any) -> Any:
    """cel-python's UintType refuses to compare with other types; compare its int value instead."""
    return int(value) if isinstance(value, _uint_type()) else value


def _map_lookup(mapping: Mapping[Any, Any], key: Any) -> tuple[bool, Any]:
    if type(key) is str:
        return (True, mapping[key]) if key in mapping else (False, None)
    for candidate, value in mapping.items():
        if equals(candidate, key):
            return True, value
    return False, None


_ORDERED = frozenset(("string", "bytes", "bool", "google.protobuf.Timestamp", "google.protobuf.Duration"))


def _ordering(op: str, left: Any, right: Any) -> int:
    """-1, 0 or 1; numbers compare across int, uint and double as cel-go does, quantities with numbers."""
    lk, rk = kind_of(left), kind_of(right)
    if (lk in _NUMBERS and rk in _NUMBERS) or (lk == rk and lk in _ORDERED):
        if (lk == "double" and math.isnan(left)) or (rk == "double" and math.isnan(right)):
            raise CelError(f"'{op}' with NaN")
        a, b = _plain(left), _plain(right)
        return (a > b) - (a < b)  # type: ignore[no-any-return]
    if "kubernetes.Quantity" in (lk, rk) and {lk, rk} <= {"kubernetes.Quantity", *_NUMBERS}:
        a, b = _quantity_value(left), _quantity_value(right)
        return (a > b) - (a < b)
    raise _no_overload(op, left, right)


def _contains(item: Any, container: Any) -> bool:
    kind = kind_of(container)
    if kind == "list":
        return any(equals(item, element) for element in container)
    if kind == "map":
        return _map_lookup(container, item)[0]
    raise _no_overload("@in", item, container)


def _check_int(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise CelError("int overflow")
    return value


def _uint(value: int) -> Any:
    if not 0 <= value <= UINT64_MAX:
        raise CelError("uint overflow")
    return _uint_type()(value)


def _add(left: Any, right: Any) -> Any:
    lk, rk = kind_of(left), kind_of(right)
    if lk == rk:
        if lk == "int":
            return _check_int(left + right)
        if lk == "uint":
            return _uint(int(left) + int(right))
        if lk in ("double", "string", "bytes"):
            return left + right
        if lk == "list":
            return [*left, *right]
        if lk == "google.protobuf.Duration":
            return _duration(left + right)
    if {lk, rk} == {"google.protobuf.Timestamp", "google.protobuf.Duration"}:
        return _timestamp(left + right)
    raise _no_overload("_+_", left, right)


def _subtract(left: Any, right: Any) -> Any:
    lk, rk = kind_of(left), kind_of(right)
    if lk == rk and lk == "int":
        return _check_int(left - right)
    if lk == rk and lk == "uint":
        return _uint(int(left) - int(right))
    if lk == rk and lk == "double":
        return left - right
    if lk == "google.protobuf.Timestamp" and rk == "google.protobuf.Timestamp":
        return _duration(left - right)
    if rk == "google.protobuf.Duration" and lk in ("google.protobuf.Timestamp", "google.protobuf.Duration"):
        difference = left - right
        return _timestamp(difference) if lk == "google.protobuf.Timestamp" else _duration(difference)
    raise _no_overload("_-_", left, right)


def _multiply(left: Any, right: Any) -> Any:
    lk, rk = kind_of(left), kind_of(right)
    if lk == rk == "int":
        return _check_int(left * right)
    if lk == rk == "uint":
        return _uint(int(left) * int(right))
    if lk == rk == "double":
        return left * right
    raise _no_overload("_*_", left, right)


def _divide(left: Any, right: Any) -> Any:
    lk, rk = kind_of(left), kind_of(right)
    if lk == rk == "double":
        if right == 0:
            return math.copysign(math.inf, left) * math.copysign(1, right) if left else math.nan
        return left / right
    if lk == rk and lk in ("int", "uint"):
        if right == 0:
            raise CelError("division by zero")
        quotient = abs(int(left)) // abs(int(right)) * (1 if (left < 0) == (right < 0) else -1)
        return _check_int(quotient) if lk == "int" else _uint(quotient)
    raise _no_overload("_/_", left, right)


def _modulo(left: Any, right: Any) -> Any:
    lk, rk = kind_of(left), kind_of(right)
    if lk == rk and lk in ("int", "uint"):
        if right == 0:
            raise CelError("modulus by zero")
        remainder = abs(int(left)) % abs(int(right)) * (-1 if left < 0 else 1)
        return remainder if lk == "int" else _uint(remainder)
    raise _no_overload("_%_", left, right)


def _negate(value: Any) -> Any:
    kind = kind_of(value)
    if kind == "int":
        return _check_int(-value)
    if kind == "double":
        return -value
    raise _no_overload("-_", value)


def _timestamp(value: Any) -> Any:
    if not 1 <= value.year <= 9999:
        raise CelError("timestamp out of range")
    return _timestamp_type()(value)


def _duration(value: _dt.timedelta) -> Any:
    if abs(value.total_seconds()) > MAX_DURATION_SECONDS:
        raise CelError("duration out of range")
    return _duration_type()(value)


# ------------------------------------------------------------------------------------- functions


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


def _to_int(value: Any) -> int:
    kind = kind_of(value)
    if kind in ("int", "uint"):
        return _check_int(int(value))
    if kind == "double":
        if not math.isfinite(value) or not INT64_MIN <= value < 2.0**63:
            raise CelError("double is out of the int range")
        return int(value)
    if kind == "string":
        if not re.fullmatch(r"[+-]?[0-9]+", value):
            raise CelError(f"cannot convert {value!r} to int")
        return _check_int(int(value))
    if kind == "google.protobuf.Timestamp":
        return int(value.timestamp())
    raise _no_overload("int", value)


def _to_uint(value: Any) -> Any:
    kind = kind_of(value)
    if kind in ("int", "uint"):
        return _uint(int(value))
    if kind == "double":
        if not math.isfinite(value) or not 0 <= value < 2.0**64:
            raise CelError("double is out of the uint range")
        return _uint(int(value))
    if kind == "string":
        if not re.fullmatch(r"\+?[0-9]+", value):
            raise CelError(f"cannot convert {value!r} to uint")
        return _uint(int(value))
    raise _no_overload("uint", value)


def _to_double(value: Any) -> float:
    kind = kind_of(value)
    if kind in ("int", "uint", "double"):
        return float(value)
    if kind == "string":
        try:
            return float(value)
        except ValueError:
            raise CelError(f"cannot convert {value!r} to double") from None
    raise _no_overload("double", value)


def format_double(value: float) -> str:
    """A double as cel-go's string() writes it (Go's strconv 'g' with the shortest precision)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e21:
        return str(int(value))
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent):+03d}" if e else text


def _to_string(value: Any) -> str:
    kind = kind_of(value)
    if kind == "string":
        return str(value)
    if kind == "bool":
        return "true" if value else "false"
    if kind in ("int", "uint"):
        return str(int(value))
    if kind == "double":
        return format_double(value)
    if kind == "bytes":
        try:
            return bytes(value).decode("utf-8")
        except UnicodeDecodeError:
            raise CelError("bytes are not valid UTF-8") from None
    if kind == "google.protobuf.Timestamp":
        return str(value.astimezone(_dt.UTC).strftime("%Y-%m-%dT%H:%M:%S")) + _fraction(value.microsecond) + "Z"
    if kind == "google.protobuf.Duration":
        seconds = value.total_seconds()
        return (str(int(seconds)) if seconds == int(seconds) else repr(seconds)) + "s"
    raise _no_overload("string", value)


def _fraction(microseconds: int) -> str:
    return f".{microseconds:06d}".rstrip("0") if microseconds else ""


_BOOL_WORDS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
               "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def _to_bool(value: Any) -> bool:
    kind = kind_of(value)
    if kind == "bool":
        return bool(value)
    if kind == "string" and value in _BOOL_WORDS:
        return _BOOL_WORDS[value]
    if kind == "string":
        raise CelError(f"cannot convert {value!r} to bool")
    raise _no_overload("bool", value)


def _to_bytes(value: Any) -> bytes:
    kind = kind_of(value)
    if kind == "bytes":
        return bytes(value)
    if kind == "string":
        return str(value).encode("utf-8")
    raise _no_overload("bytes", value)


def _to_timestamp(value: Any) -> Any:
    kind = kind_of(value)
    if kind == "google.protobuf.Timestamp":
        return value
    if kind == "int":
        try:
            return _timestamp(_dt.datetime.fromtimestamp(value, _dt.UTC))
        except (OverflowError, OSError, ValueError):
            raise CelError("timestamp out of range") from None
    if kind == "string":
        text = str(value)
        if not re.fullmatch(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)", text):
            raise CelError(f"timestamp {text!r} is not RFC 3339 (e.g. 2025-01-02T03:04:05Z)")
        fraction = re.search(r"\.(\d+)", text)
        base = re.sub(r"\.\d+", "", text).upper().replace("Z", "+00:00")
        try:
            parsed = _dt.datetime.fromisoformat(base)
        except ValueError:
            raise CelError(f"timestamp {text!r} is not a valid date and time") from None
        if fraction:
            parsed += _dt.timedelta(microseconds=int(fraction.group(1)[:6].ljust(6, "0")))
        return _timestamp(parsed.astimezone(_dt.UTC))
    raise _no_overload("timestamp", value)


def parse_timestamp(text: str) -> Any:
    """RFC 3339 text (``2025-01-02T03:04:05Z``) as a CEL timestamp; CelError when it is not one."""
    return _to_timestamp(text)


_DURATION = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|ms|s|m|h))+|[+-]?0")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6),
                 "ms": Fraction(1, 1000), "s": Fraction(1), "m": Fraction(60), "h": Fraction(3600)}
MAX_DURATION_SECONDS = 315_576_000_000


def _to_duration(value: Any) -> Any:
    kind = kind_of(value)
    if kind == "google.protobuf.Duration":
        return value
    if kind != "string":
        raise _no_overload("duration", value)
    text = str(value)
    if not _DURATION.fullmatch(text):
        raise CelError(f"duration {text!r} is not a Go duration (e.g. 30m, 1h30m, 1.5s)")
    seconds = sum((Fraction(number) * _UNIT_SECONDS[unit] for number, unit in _DURATION_PART.findall(text)),
                  Fraction(0))
    if abs(seconds) > MAX_DURATION_SECONDS:
        raise CelError(f"duration {text!r} is out of range")
    signed = -seconds if text.startswith("-") else seconds
    return _duration(_dt.timedelta(microseconds=round(signed * 1_000_000)))


def _type_of(value: Any) -> CelType:
    return _TYPES[kind_of(value)]


def _dyn(value: Any) -> Any:
    return value


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


def _quote(text: Any) -> str:
    import json

    _string_args("strings.quote", text)
    return json.dumps(text, ensure_ascii=False)


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


@dataclass(frozen=True)
class _Function:
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


# -------------------------------------------------------------------------------------- compiling


class _Run:
    __slots__ = ("deadline", "max_size", "max_steps", "seconds", "steps")

    def __init__(self, limits: Limits) -> None:
        self.steps = 0
        self.max_steps = limits.max_steps
        self.max_size = limits.max_result_size
        self.seconds = limits.max_seconds
        self.deadline = time.monotonic() + limits.max_seconds

    def charge(self, steps: int) -> None:
        self.steps += steps
        if self.steps > self.max_steps:
            raise CelLimitError(f"evaluation took more than {self.max_steps} steps; simplify the expression "
                                "(nested comprehensions over large lists?)")
        if time.monotonic() > self.deadline:
            raise CelLimitError(f"evaluation took longer than {self.seconds:g} s; simplify the expression")

    def sized(self, value: Any) -> Any:
        if isinstance(value, (str, bytes, list)) and len(value) > 64:
            if len(value) > self.max_size:
                raise CelLimitError(f"a value grew to {len(value)} elements, over the {self.max_size} limit")
            self.charge(len(value) >> 6)
        return value


class _Scope:
    __slots__ = ("run", "vars")

    def __init__(self, variables: Mapping[str, Any], run: _Run) -> None:
        self.vars = variables
        self.run = run


Code = Callable[[_Scope], Any]


class Operand(NamedTuple):
    """A side of a comparison as written: a path into a variable, a literal, or a list literal."""

    kind: str  # "path", "literal" or "list"
    value: Any  # (variable, (field, ...)), the literal's value, or a tuple of Operand | None


class Comparison(NamedTuple):
    """A relation in the source (``==``, ``!=``, ``in``, ``<`` ...) with what its sides are statically."""

    op: str
    left: Operand | None
    right: Operand | None


class Selection(NamedTuple):
    """``variable.a.b`` (or ``variable['a']``) in the source; ``tested`` when inside ``has()``."""

    variable: str
    path: tuple[str, ...]
    tested: bool


@dataclass(frozen=True)
class Program:
    """A compiled expression. ``evaluate`` raises CelError (does not match) or CelLimitError (hostile)."""

    text: str
    code: Code = field(repr=False)
    limits: Limits = field(repr=False)
    selections: tuple[Selection, ...] = ()
    comparisons: tuple[Comparison, ...] = ()

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """The value of the expression over ``activation`` (variable name -> value from :func:`to_cel`)."""
        try:
            return self.code(_Scope(activation, _Run(self.limits)))
        except RecursionError:
            raise CelLimitError("evaluation nested too deeply") from None


_MISSING = object()
_OPS = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
        "relation_eq": "==", "relation_ne": "!=", "relation_in": "in",
        "addition_add": "+", "addition_sub": "-",
        "multiplication_mul": "*", "multiplication_div": "/", "multiplication_mod": "%"}
_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add, "-": _subtract, "*": _multiply, "/": _divide, "%": _modulo}


def _relation(op: str) -> Callable[[Any, Any], Any]:
    if op == "==":
        return equals
    if op == "!=":
        return lambda a, b: not equals(a, b)
    if op == "in":
        return _contains
    tests: dict[str, Callable[[int], bool]] = {"<": lambda c: c < 0, "<=": lambda c: c <= 0,
                                               ">": lambda c: c > 0, ">=": lambda c: c >= 0}
    test = tests[op]
    return lambda a, b: test(_ordering(f"_{op}_", a, b))


class Environment:
    """Declared variables, the function libraries and limits; compiles expressions into Programs.

    ``libraries``: ``"strings"`` (cel-go ext.Strings) and ``"kubernetes"`` (now() and quantity()).
    ``now`` is the instant now() returns, fixed so evaluations are reproducible."""

    def __init__(self, variables: Iterable[str], *, libraries: Iterable[str] = ("strings",),
                 now: _dt.datetime | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.variables = frozenset(variables)
        self.limits = limits
        self.functions: dict[str, _Function] = dict(STANDARD)
        chosen = set(libraries)
        unknown = chosen - {"strings", "kubernetes"}
        if unknown:
            raise ValueError(f"unknown CEL libraries {sorted(unknown)}")
        if "strings" in chosen:
            self.functions.update(STRINGS)
        if "kubernetes" in chosen:
            self.functions.update(QUANTITY)
            instant = now or _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            if instant.tzinfo is None:
                raise ValueError("now must be timezone-aware")
            fixed = _timestamp(instant.astimezone(_dt.UTC))
            self.functions["now"] = _fn(lambda: fixed, [0])

    def compile(self, text: str) -> Program:
        """Parse, check and compile ``text``; CelCompileError or CelLimitError when it cannot be used."""
        if not isinstance(text, str):
            raise CelCompileError(f"the expression is a {type(text).__name__}, not a string")
        if len(text) > self.limits.max_length:
            raise CelLimitError(f"the expression is {len(text)} characters long; the limit is "
                                f"{self.limits.max_length}")
        if not text.strip():
            raise CelCompileError("the expression is empty")
        tree = _parse(text)
        _check_depth(tree, self.limits.max_depth)
        compiler = _Compiler(self)
        try:
            code = compiler.compile(tree)
            cost = compiler.cost(tree)
        except RecursionError:
            raise CelLimitError("the expression nests too deeply") from None
        if cost > self.limits.max_steps:
            raise CelLimitError(f"the expression would take at least {cost} steps (comprehensions over "
                                f"literal lists multiply); the limit is {self.limits.max_steps}")
        return Program(text, code, self.limits, tuple(dict.fromkeys(compiler.selections)),
                       tuple(compiler.comparisons))


def _parse(text: str) -> Any:
    from celpy.celparser import CELParseError, CELParser

    try:
        return CELParser().parse(text)
    except CELParseError as err:
        context = str(err.args[0]).strip().splitlines()[0] if err.args else ""
        where = f"line {err.line}, column {err.column}" if err.line else "the expression"
        raise CelCompileError(f"syntax error at {where}: {context.strip()!r}") from None
    except RecursionError:
        raise CelLimitError("the expression nests too deeply to parse") from None
    except Exception as err:  # lark's other errors (e.g. an unexpected end of input)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CelCompileError(f"syntax error: {first}") from None


_CHAINS = frozenset(("conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary"))


def _continues_chain(parent: str, child: str) -> bool:
    """True when ``child`` continues a left-associative chain (``a || b || c``, ``!!x``): those compile to
    loops, so they do not count as nesting."""
    base = parent.split("_", maxsplit=1)[0]
    return ((parent in _CHAINS and (child == parent or child.startswith(parent + "_")))
            or (parent != base and base in _CHAINS and child == base))


def _check_depth(tree: Any, limit: int) -> None:
    from lark import Tree

    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise CelLimitError(f"the expression nests too deeply (parse depth over {limit}); flatten it")
        stack.extend((child, depth + (0 if _continues_chain(node.data, child.data) else 1))
                     for child in node.children if isinstance(child, Tree))


def _literal(token: Any) -> Any:
    from celpy.evaluation import celbytes, celstr

    kind, text = token.type, token.value
    try:
        if kind == "INT_LIT":
            sign = -1 if text.startswith("-") else 1
            body = text.lstrip("-")
            value = sign * (int(body[2:], 16) if body[:2].lower() == "0x" else int(body))
            if not INT64_MIN <= value <= INT64_MAX:
                raise CelCompileError(f"integer literal {text} is out of the int64 range")
            return value
        if kind == "UINT_LIT":
            body = text[:-1]
            value = int(body[2:], 16) if body[:2].lower() == "0x" else int(body)
            if not 0 <= value <= UINT64_MAX:
                raise CelCompileError(f"unsigned literal {text} is out of the uint64 range")
            return _uint_type()(value)
        if kind == "FLOAT_LIT":
            return float(text)
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return str(celstr(token))
        if kind == "BYTES_LIT":
            return bytes(celbytes(token))
        if kind == "BOOL_LIT":
            return text == "true"
        if kind == "NULL_LIT":
            return None
    except (ValueError, OverflowError) as err:
        raise CelCompileError(f"invalid literal {text[:40]!r}: {err}") from None
    raise CelCompileError(f"unsupported literal {text[:40]!r}")


class _Compiler:
    """Turns a cel-python parse tree into closures, collecting what lints need on the way."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.locals: list[str] = []
        self.selections: list[Selection] = []
        self.comparisons: list[Comparison] = []

    # ------------------------------------------------------------------------ static facts

    def _unwrap(self, tree: Any) -> Any:
        """The innermost node of a single-child chain (expr -> ... -> primary -> x)."""
        from lark import Tree

        while isinstance(tree, Tree) and len(tree.children) == 1 and tree.data in (
                "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                "member", "primary", "paren_expr"):
            child = tree.children[0]
            if not isinstance(child, Tree):
                break
            tree = child
        return tree

    def path_of(self, tree: Any) -> tuple[str, tuple[str, ...]] | None:
        """``(variable, fields)`` when ``tree`` is ``var.a['b'].c`` on a declared variable."""
        node = self._unwrap(tree)
        fields: list[str] = []
        while True:
            if node.data == "member_dot":
                fields.append(str(node.children[1]))
                node = self._unwrap(node.children[0])
            elif node.data == "member_index":
                key = self._unwrap(node.children[1])
                if key.data != "literal" or key.children[0].type not in ("STRING_LIT", "MLSTRING_LIT"):
                    return None
                fields.append(_literal(key.children[0]))
                node = self._unwrap(node.children[0])
            elif node.data == "ident":
                name = str(node.children[0])
                if name in self.locals or name not in self.env.variables:
                    return None
                return name, tuple(reversed(fields))
            else:
                return None

    def operand(self, tree: Any) -> Operand | None:
        node = self._unwrap(tree)
        if node.data == "literal":
            return Operand("literal", _literal(node.children[0]))
        if node.data == "list_lit":
            items = node.children[0].children if node.children else []
            return Operand("list", tuple(self.operand(item) for item in items))
        path = self.path_of(node)
        return Operand("path", path) if path else None

    def cost(self, tree: Any) -> int:
        """A lower bound on the steps an evaluation takes: comprehension bodies times literal list sizes."""
        from lark import Tree

        total = 0
        stack = [(tree, 1)]
        while stack:
            node, factor = stack.pop()
            total += factor
            if total > self.env.limits.max_steps:
                return total
            if node.data == "member_dot_arg" and str(node.children[1]) in MACROS and len(node.children) == 3:
                target = self._unwrap(node.children[0])
                size = len(target.children[0].children) if target.data == "list_lit" and target.children else 1
                stack.append((node.children[0], factor))
                stack.extend((arg, factor * max(size, 1)) for arg in node.children[2].children)
                continue
            stack.extend((child, factor) for child in node.children if isinstance(child, Tree))
        return total

    # ---------------------------------------------------------------------------- compile

    def compile(self, tree: Any) -> Code:
        node = self._unwrap(tree)
        handler = getattr(self, f"_c_{node.data}", None)
        if handler is None:
            raise CelCompileError(f"unsupported construct {node.data!r}")
        code: Code = handler(node)
        return code

    def _chain(self, tree: Any) -> list[Any]:
        operands = []
        while len(tree.children) == 2:
            operands.append(tree.children[1])
            tree = tree.children[0]
        operands.append(tree.children[0])
        operands.reverse()
        return operands

    def _c_expr(self, tree: Any) -> Code:
        condition, when_true, when_false = (self.compile(child) for child in tree.children)

        def run(scope: _Scope) -> Any:
            value = condition(scope)
            if value is True:
                return when_true(scope)
            if value is False:
                return when_false(scope)
            raise _no_overload("_?_:_", value)

        return run

    def _logic(self, tree: Any, decisive: bool) -> Code:
        parts = [self.compile(child) for child in self._chain(tree)]
        op = "_||_" if decisive else "_&&_"

        def run(scope: _Scope) -> Any:
            error: CelError | None = None
            for part in parts:
                try:
                    value = part(scope)
                except CelError as err:
                    error = error or err
                    continue
                if value is decisive:
                    return decisive
                if value is not (not decisive):
                    error = error or _no_overload(op, value)
            if error is not None:
                raise error
            return not decisive

        return run

    def _c_conditionalor(self, tree: Any) -> Code:
        return self._logic(tree, True)

    def _c_conditionaland(self, tree: Any) -> Code:
        return self._logic(tree, False)

    def _c_relation(self, tree: Any) -> Code:
        op_node, right_tree = tree.children
        op = _OPS[op_node.data]
        left_tree = op_node.children[0]
        self.comparisons.append(Comparison(op, self.operand(left_tree), self.operand(right_tree)))
        left, right = self.compile(left_tree), self.compile(right_tree)
        apply = _relation(op)
        return lambda scope: apply(left(scope), right(scope))

    def _binary(self, tree: Any) -> Code:
        """``a + b - c``: lark nests left-associative chains; compile them as a loop, not recursion."""
        steps: list[tuple[Callable[[Any, Any], Any], Code]] = []
        while len(tree.children) == 2 and tree.data in ("addition", "multiplication"):
            op_node, right_tree = tree.children
            steps.append((_ARITHMETIC[_OPS[op_node.data]], self.compile(right_tree)))
            tree = self._unwrap(op_node.children[0])
        first = self.compile(tree)
        steps.reverse()

        def run(scope: _Scope) -> Any:
            value = first(scope)
            for apply, right in steps:
                try:
                    value = apply(value, right(scope))
                except (OverflowError, ValueError, TypeError) as err:
                    raise CelError(f"arithmetic error: {err}") from None
                scope.run.sized(value)
            return value

        return run

    _c_addition = _binary
    _c_multiplication = _binary

    def _c_unary(self, tree: Any) -> Code:
        ops: list[str] = []
        while tree.data == "unary" and len(tree.children) == 2:
            ops.append(tree.children[0].data)
            tree = self._unwrap(tree.children[1])
        operand = self.compile(tree)
        ops.reverse()

        def run(scope: _Scope) -> Any:
            value = operand(scope)
            for op in ops:
                if op == "unary_neg":
                    value = _negate(value)
                elif type(value) is bool:
                    value = not value
                else:
                    raise _no_overload("!_", value)
            return value

        return run

    def _c_member_dot(self, tree: Any) -> Code:
        path = self.path_of(tree)
        if path is not None:
            self.selections.append(Selection(path[0], path[1], False))
        target = self.compile(tree.children[0])
        name = str(tree.children[1])

        def run(scope: _Scope) -> Any:
            value = target(scope)
            if type(value) is dict:
                if name in value:
                    return value[name]
                raise CelError(f"no such key: {name!r}")
            if kind_of(value) == "map":
                found, item = _map_lookup(value, name)
                if found:
                    return item
                raise CelError(f"no such key: {name!r}")
            raise CelError(f"cannot select field {name!r} from a {kind_of(value)}")

        return run

    def _c_member_index(self, tree: Any) -> Code:
        path = self.path_of(tree)
        if path is not None:
            self.selections.append(Selection(path[0], path[1], False))
        target, index = self.compile(tree.children[0]), self.compile(tree.children[1])

        def run(scope: _Scope) -> Any:
            container, key = target(scope), index(scope)
            kind = kind_of(container)
            if kind == "map":
                found, item = _map_lookup(container, key)
                if not found:
                    raise CelError(f"no such key: {key!r}")
                return item
            if kind == "list":
                key_kind = kind_of(key)
                if key_kind not in _NUMBERS or key != int(key):
                    raise _no_overload("_[_]", container, key)
                position = int(key)
                if not 0 <= position < len(container):
                    raise CelError(f"index out of range: {position}")
                return container[position]
            raise _no_overload("_[_]", container, key)

        return run

    def _c_member_dot_arg(self, tree: Any) -> Code:
        name = str(tree.children[1])
        args = list(tree.children[2].children) if len(tree.children) == 3 else []
        if name in MACROS:
            return self._macro(name, tree.children[0], args)
        return self._call(name, [tree.children[0], *args], method=True)

    def _c_member_object(self, tree: Any) -> Code:
        raise CelCompileError("message construction (Type{field: value}) is not supported")

    def _c_literal(self, tree: Any) -> Code:
        value = _literal(tree.children[0])
        return lambda scope: value

    def _c_ident(self, tree: Any) -> Code:
        name = str(tree.children[0])
        if name in self.locals or name in self.env.variables:
            def run(scope: _Scope) -> Any:
                value = scope.vars.get(name, _MISSING)
                if value is _MISSING:
                    raise CelError(f"no value for variable {name!r}")
                return value

            return run
        if name in _TYPES:
            type_value = _TYPES[name]
            return lambda scope: type_value
        raise CelCompileError(f"undeclared reference to {name!r} (declared: "
                              f"{', '.join(sorted(self.env.variables)) or 'none'})")

    def _c_dot_ident(self, tree: Any) -> Code:
        return self._c_ident(tree)

    def _c_ident_arg(self, tree: Any) -> Code:
        name = str(tree.children[0])
        args = list(tree.children[1].children) if len(tree.children) == 2 else []
        if name == "has":
            return self._has(args)
        return self._call(name, args, method=False)

    _c_dot_ident_arg = _c_ident_arg

    def _c_paren_expr(self, tree: Any) -> Code:
        return self.compile(tree.children[0])

    def _c_list_lit(self, tree: Any) -> Code:
        items = [self.compile(child) for child in tree.children[0].children] if tree.children else []
        return lambda scope: [item(scope) for item in items]

    def _c_map_lit(self, tree: Any) -> Code:
        children = tree.children[0].children if tree.children else []
        pairs = [(self.compile(children[i]), self.compile(children[i + 1])) for i in range(0, len(children), 2)]

        def run(scope: _Scope) -> Any:
            result: dict[Any, Any] = {}
            for key_code, value_code in pairs:
                key = key_code(scope)
                if kind_of(key) not in ("string", "int", "uint", "bool"):
                    raise CelError(f"unsupported map key type {kind_of(key)}")
                if _map_lookup(result, key)[0]:
                    raise CelError(f"duplicate map key {key!r}")
                result[key] = value_code(scope)
            return result

        return run

    def _has(self, args: list[Any]) -> Code:
        node = self._unwrap(args[0]) if len(args) == 1 else None
        if node is None or node.data != "member_dot":
            raise CelCompileError("has() takes one field selection, e.g. has(event.metadata.key)")
        path = self.path_of(node)
        if path is not None:
            self.selections.append(Selection(path[0], path[1], True))
        target = self.compile(node.children[0])
        name = str(node.children[1])

        def run(scope: _Scope) -> bool:
            value = target(scope)
            if kind_of(value) != "map":
                raise CelError(f"has() cannot test a field of a {kind_of(value)}")
            return _map_lookup(value, name)[0]

        return run

    def _call(self, name: str, args: list[Any], *, method: bool) -> Code:
        function = self.env.functions.get(name)
        if function is None:
            raise CelCompileError(f"undeclared reference to function {name!r}")
        arities = function.method_arities if method else function.global_arities
        if len(args) not in arities:
            style = f"x.{name}(...)" if method else f"{name}(...)"
            if not arities:
                other = f"{name}(...)" if method else f"x.{name}(...)"
                raise CelCompileError(f"{name} is called as {other}, not {style}")
            counts = sorted(count - 1 if method else count for count in arities)
            raise CelCompileError(f"{style} takes {' or '.join(map(str, counts))} argument(s), "
                                  f"not {len(args) - 1 if method else len(args)}")
        codes = [self.compile(arg) for arg in args]
        impl = function.impl

        def run(scope: _Scope) -> Any:
            values = [code(scope) for code in codes]
            try:
                return scope.run.sized(impl(*values))
            except (CelError, CelLimitError):
                raise
            except (TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError) as err:
                raise CelError(f"{name}: {err}") from None

        return run

    def _macro(self, name: str, target_tree: Any, args: list[Any]) -> Code:
        if len(args) not in ((2, 3) if name == "map" else (2,)):
            wanted = "one or two expressions" if name == "map" else "an expression"
            raise CelCompileError(f"{name}() takes a variable and {wanted}")
        variable_node = self._unwrap(args[0])
        if variable_node.data != "ident":
            raise CelCompileError(f"the first argument of {name}() must be a variable name")
        variable = str(variable_node.children[0])
        target = self.compile(target_tree)
        self.locals.append(variable)
        try:
            bodies = [self.compile(arg) for arg in args[1:]]
            weight = 1 + sum(self.cost(arg) for arg in args[1:])
        finally:
            self.locals.pop()
        body = bodies[0]
        transform = bodies[-1] if len(bodies) == 2 else None

        def items(scope: _Scope) -> Iterable[Any]:
            collection = target(scope)
            kind = kind_of(collection)
            if kind not in ("list", "map"):
                raise CelError(f"{name}() needs a list or map, not {kind}")
            return list(collection)

        def each(scope: _Scope) -> Iterable[tuple[_Scope, Any]]:
            run = scope.run
            for item in items(scope):
                run.charge(weight)
                yield _Scope({**scope.vars, variable: item}, run), item

        def predicate(inner: _Scope) -> bool:
            value = body(inner)
            if type(value) is not bool:
                raise _no_overload(name, value)
            return value

        if name in ("all", "exists"):
            decisive = name == "exists"

            def quantifier(scope: _Scope) -> bool:
                error: CelError | None = None
                for inner, _item in each(scope):
                    try:
                        if predicate(inner) is decisive:
                            return decisive
                    except CelError as err:
                        error = error or err
                if error is not None:
                    raise error
                return not decisive

            return quantifier
        if name == "exists_one":
            return lambda scope: sum(1 for inner, _item in each(scope) if predicate(inner)) == 1
        if name == "filter":
            return lambda scope: [item for inner, item in each(scope) if predicate(inner)]
        if transform is None:
            return lambda scope: [body(inner) for inner, _item in each(scope)]
        selected = transform
        return lambda scope: [selected(inner) for inner, _item in each(scope) if predicate(inner)]


# ------------------------------------------------------------------------------------- conversion


def to_cel(value: Any, *, json_numbers: bool = False, max_depth: int = 100) -> Any:
    """Check and convert Python data to CEL values: mappings with string keys become dicts, sequences
    lists, datetimes timestamps, timedeltas durations. ``json_numbers`` turns every number into a double,
    as a Go JSON round trip does (how NVSentinel presents a HealthEvent)."""
    return _convert(value, json_numbers, max_depth, "value")


def _convert(value: Any, json_numbers: bool, depth: int, where: str) -> Any:
    if depth < 0:
        raise ValueError(f"{where}: nested too deeply")
    if value is None or isinstance(value, (bool, str, bytes)):
        return value
    if isinstance(value, int):
        if json_numbers:
            return float(value)
        if not INT64_MIN <= value <= UINT64_MAX:
            raise ValueError(f"{where}: integer {value} is out of the 64-bit range")
        return value
    if isinstance(value, float):
        return value
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: map key {key!r} is not a string")
            out[key] = _convert(item, json_numbers, depth - 1, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [_convert(item, json_numbers, depth - 1, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, _dt.datetime):
        if value.tzinfo is None:
            raise ValueError(f"{where}: datetime without a time zone")
        return _timestamp(value.astimezone(_dt.UTC))
    if isinstance(value, _dt.timedelta):
        return _duration(value)
    if isinstance(value, (Quantity, CelType)):
        return value
    raise ValueError(f"{where}: a {type(value).__name__} has no CEL equivalent")
