"""CEL arithmetic with cel-go's overloads and its 64-bit overflow and range checks."""

from __future__ import annotations

import math
from typing import Any

from aicr_gen.cel.errors import CelError
from aicr_gen.cel.values import (
    INT64_MAX,
    INT64_MIN,
    UINT64_MAX,
    Duration,
    Timestamp,
    Uint,
    duration,
    no_overload,
    timestamp,
)


def check_int(value: int) -> int:
    if not INT64_MIN <= value <= INT64_MAX:
        raise CelError("integer overflow")
    return value


def check_uint(value: int) -> Uint:
    if not 0 <= value <= UINT64_MAX:
        raise CelError("unsigned integer overflow")
    return Uint(value)


def add(left: Any, right: Any) -> Any:
    lt, rt = type(left), type(right)
    if lt is rt:
        if lt is int:
            value = left + right
            if INT64_MIN <= value <= INT64_MAX:
                return value
            raise CelError("integer overflow")
        if lt is str or lt is float or lt is bytes:
            return left + right
        if lt is list:
            return [*left, *right]
        if lt is Uint:
            return check_uint(left + right)
        if lt is Duration:
            return duration(left.nanos + right.nanos)
    if lt is Timestamp and rt is Duration:
        return timestamp(left.nanos + right.nanos, left.offset)
    if lt is Duration and rt is Timestamp:
        return timestamp(left.nanos + right.nanos, right.offset)
    raise no_overload("_+_", left, right)


def subtract(left: Any, right: Any) -> Any:
    lt, rt = type(left), type(right)
    if lt is rt:
        if lt is int:
            return check_int(left - right)
        if lt is float:
            return left - right
        if lt is Uint:
            return check_uint(left - right)
        if lt is Timestamp or lt is Duration:
            return duration(left.nanos - right.nanos)
    if lt is Timestamp and rt is Duration:
        return timestamp(left.nanos - right.nanos, left.offset)
    raise no_overload("_-_", left, right)


def multiply(left: Any, right: Any) -> Any:
    lt, rt = type(left), type(right)
    if lt is rt:
        if lt is int:
            return check_int(left * right)
        if lt is float:
            return left * right
        if lt is Uint:
            return check_uint(left * right)
    raise no_overload("_*_", left, right)


def divide(left: Any, right: Any) -> Any:
    lt, rt = type(left), type(right)
    if lt is rt:
        if lt is float:
            if right == 0:
                if left == 0 or math.isnan(left):
                    return math.nan
                return math.copysign(math.inf, left) * math.copysign(1.0, right)
            return left / right
        if lt is int or lt is Uint:
            if right == 0:
                raise CelError("division by zero")
            quotient = abs(left) // abs(right)
            if (left < 0) != (right < 0):
                quotient = -quotient
            return check_int(quotient) if lt is int else Uint(quotient)
    raise no_overload("_/_", left, right)


def modulo(left: Any, right: Any) -> Any:
    lt, rt = type(left), type(right)
    if lt is rt and (lt is int or lt is Uint):
        if right == 0:
            raise CelError("modulus by zero")
        if lt is int and left == INT64_MIN and right == -1:
            raise CelError("integer overflow")
        remainder = abs(left) % abs(right)
        return (-remainder if left < 0 else remainder) if lt is int else Uint(remainder)
    raise no_overload("_%_", left, right)


def negate(value: Any) -> Any:
    kind = type(value)
    if kind is int:
        return check_int(-value)
    if kind is float:
        return -value
    raise no_overload("-_", value)
