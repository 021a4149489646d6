"""CEL arithmetic with cel-go's overloads and 64-bit overflow checks."""

from __future__ import annotations

import math
from typing import Any

from aicr_gen.certify.cel.errors import CelError
from aicr_gen.certify.cel.values import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    _duration,
    _no_overload,
    _timestamp,
    _uint_type,
    kind_of,
)


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
