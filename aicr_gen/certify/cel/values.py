"""CEL values in Python: the type names, kinds, Kubernetes quantities, timestamps and durations, cel-go's
equality and ordering, and :func:`to_cel`, which checks and converts data."""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
from collections.abc import Mapping
from fractions import Fraction
from typing import Any, NamedTuple

from aicr_gen.certify.cel.errors import CelError

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1


MAX_DURATION_SECONDS = 315_576_000_000


_MISSING = object()


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


def _in_range(value: _dt.datetime) -> _dt.datetime:
    """``value`` when a CEL timestamp can hold it (years 1 to 9999), else CelError."""
    if not 1 <= value.year <= 9999:
        raise CelError("timestamp out of range")
    return value


def _timestamp(value: Any) -> Any:
    return _timestamp_type()(_in_range(value))


def _duration(value: _dt.timedelta) -> Any:
    if abs(value.total_seconds()) > MAX_DURATION_SECONDS:
        raise CelError("duration out of range")
    return _duration_type()(value)


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
