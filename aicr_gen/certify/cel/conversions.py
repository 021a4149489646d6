"""The standard library's type conversions: int(), uint(), double(), string(), bool(), bytes(), timestamp(),
duration(), type() and dyn()."""

from __future__ import annotations

import datetime as _dt
import math
import re
from fractions import Fraction
from typing import Any

from aicr_gen.certify.cel.arithmetic import _check_int, _uint
from aicr_gen.certify.cel.errors import CelError
from aicr_gen.certify.cel.values import (
    _TYPES,
    INT64_MIN,
    MAX_DURATION_SECONDS,
    CelType,
    _duration,
    _in_range,
    _no_overload,
    _timestamp,
    kind_of,
)


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


# compiled once: ``rules test`` parses one per HealthEvent
_RFC3339 = re.compile(r"\d{4}-\d\d-\d\d[Tt]\d\d:\d\d:\d\d(\.\d+)?([Zz]|[+-]\d\d:\d\d)")
_FRACTION = re.compile(r"\.(\d+)")


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
        return _timestamp(parse_instant(str(value)))
    raise _no_overload("timestamp", value)


def parse_instant(text: str) -> _dt.datetime:
    """RFC 3339 text (``2025-01-02T03:04:05Z``) as the UTC datetime ``timestamp()`` makes of it (CelError when it
    is not one), without building the CEL value: ``rules test`` reads one per HealthEvent."""
    if not _RFC3339.fullmatch(text):
        raise CelError(f"timestamp {text!r} is not RFC 3339 (e.g. 2025-01-02T03:04:05Z)")
    fraction = _FRACTION.search(text)
    base = (_FRACTION.sub("", text) if fraction else text).upper().replace("Z", "+00:00")
    try:
        parsed = _dt.datetime.fromisoformat(base)
    except ValueError:
        raise CelError(f"timestamp {text!r} is not a valid date and time") from None
    if fraction:
        parsed += _dt.timedelta(microseconds=int(fraction.group(1)[:6].ljust(6, "0")))
    return _in_range(parsed.astimezone(_dt.UTC))


_DURATION = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|µs|ms|s|m|h))+|[+-]?0")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": Fraction(1, 10**9), "us": Fraction(1, 10**6), "µs": Fraction(1, 10**6),
                 "ms": Fraction(1, 1000), "s": Fraction(1), "m": Fraction(60), "h": Fraction(3600)}


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
