"""The standard library's conversions (int(), uint(), double(), string(), bool(), bytes(), timestamp(),
duration(), type(), dyn()), the time accessors (getFullYear() ...) and the text forms of values."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aicr_gen.cel.arithmetic import check_int, check_uint
from aicr_gen.cel.durations import go_nanoseconds
from aicr_gen.cel.errors import CelError
from aicr_gen.cel.values import (
    EPOCH_ORDINAL,
    QUANTITY,
    TYPES,
    CelType,
    Duration,
    Timestamp,
    Uint,
    duration_text,
    format_double,
    kind_of,
    no_overload,
    timestamp,
    timestamp_text,
)

if TYPE_CHECKING:
    import datetime as dt

_NANOS = 10**9
_TWO63 = 2.0**63
_TWO64 = 2.0**64
_INT_TEXT = re.compile(r"[+-]?[0-9]+")
_UINT_TEXT = re.compile(r"[0-9]+")
_DOUBLE_TEXT = re.compile(r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)",
                          re.IGNORECASE)
_HEX_DOUBLE_TEXT = re.compile(r"[+-]?0[xX](?:[0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][+-]?[0-9]+")
"""What Go's ``strconv.ParseFloat`` reads besides decimals: hexadecimal mantissa and binary exponent."""


def to_int(value: Any) -> int:
    kind = type(value)
    if kind is int:
        return value  # type: ignore[no-any-return]
    if kind is Uint:
        return check_int(int(value))
    if kind is float:
        if not -_TWO63 < value < _TWO63:  # NaN fails too
            raise CelError("double out of int range")
        return int(value)
    if kind is str:
        if not _INT_TEXT.fullmatch(value):
            raise CelError(f"cannot convert {value!r} to int")
        return check_int(int(value))
    if kind is Timestamp:
        return value.nanos // _NANOS  # type: ignore[no-any-return]
    raise no_overload("int", value)


def to_uint(value: Any) -> Uint:
    kind = type(value)
    if kind is Uint:
        return value  # type: ignore[no-any-return]
    if kind is int:
        return check_uint(value)
    if kind is float:
        if not 0 <= value < _TWO64:  # NaN fails too
            raise CelError("double out of uint range")
        return Uint(int(value))
    if kind is str:
        if not _UINT_TEXT.fullmatch(value):
            raise CelError(f"cannot convert {value!r} to uint")
        return check_uint(int(value))
    raise no_overload("uint", value)


def to_double(value: Any) -> float:
    kind = type(value)
    if kind is float:
        return value  # type: ignore[no-any-return]
    if kind is int or kind is Uint:
        return float(value)
    if kind is str:
        if _DOUBLE_TEXT.fullmatch(value):
            return float(value)
        if _HEX_DOUBLE_TEXT.fullmatch(value):
            return float.fromhex(value)
        raise CelError(f"cannot convert {value!r} to double")
    raise no_overload("double", value)


def to_string(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is Uint:
        return str(int(value))
    if kind is float:
        return format_double(value)
    if kind is bytes:
        try:
            return value.decode("utf-8")  # type: ignore[no-any-return]
        except UnicodeDecodeError:
            raise CelError("invalid UTF-8 in bytes, cannot convert to string") from None
    if kind is Timestamp:
        return timestamp_text(value)
    if kind is Duration:
        return duration_text(value)
    raise no_overload("string", value)


_BOOL_WORDS = {"1": True, "t": True, "T": True, "TRUE": True, "true": True, "True": True,
               "0": False, "f": False, "F": False, "FALSE": False, "false": False, "False": False}


def to_bool(value: Any) -> bool:
    kind = type(value)
    if kind is bool:
        return value  # type: ignore[no-any-return]
    if kind is str:
        if value in _BOOL_WORDS:
            return _BOOL_WORDS[value]
        raise CelError(f"cannot convert {value!r} to bool")
    raise no_overload("bool", value)


def to_bytes(value: Any) -> bytes:
    kind = type(value)
    if kind is bytes:
        return value  # type: ignore[no-any-return]
    if kind is str:
        return value.encode("utf-8")  # type: ignore[no-any-return]
    raise no_overload("bytes", value)


_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)T(\d\d):(\d\d):(\d\d)(?:\.(\d+))?(?:(Z)|([+-])(\d\d):(\d\d))")
"""Go's ``time.Parse(time.RFC3339, ...)``: upper-case ``T`` and ``Z``, any number of fractional digits (past
nanoseconds cut)."""


def to_timestamp(value: Any) -> Timestamp:
    kind = type(value)
    if kind is Timestamp:
        return value  # type: ignore[no-any-return]
    if kind is int:
        if not -62_135_596_800 <= value <= 253_402_300_799:
            raise CelError("timestamp out of range")
        return Timestamp(value * _NANOS)
    if kind is str:
        nanos, offset = instant(value)
        return timestamp(nanos, offset)
    raise no_overload("timestamp", value)


def instant(text: str) -> tuple[int, int]:
    """Nanoseconds since the epoch of RFC 3339 text, and its UTC offset in seconds east; CelError when it is
    not a valid date, time and offset."""
    import datetime as dt

    match = _RFC3339.fullmatch(text)
    if match is None:
        raise CelError(f"timestamp {text!r} is not RFC 3339 (e.g. 2025-01-02T03:04:05Z)")
    year, month, day, hour, minute, second = (int(part) for part in match.group(1, 2, 3, 4, 5, 6))
    try:
        days = dt.date(year, month, day).toordinal() - EPOCH_ORDINAL
    except ValueError:
        raise CelError(f"timestamp {text!r} is not a valid date") from None
    if hour > 23 or minute > 59 or second > 59:
        raise CelError(f"timestamp {text!r} is not a valid time of day")
    offset = 0
    if match.group(9):
        offset_hours, offset_minutes = int(match.group(10)), int(match.group(11))
        if offset_hours > 23 or offset_minutes > 59:
            raise CelError(f"timestamp {text!r} has an invalid UTC offset")
        offset = (offset_hours * 3600 + offset_minutes * 60) * (1 if match.group(9) == "+" else -1)
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second - offset
    return seconds * _NANOS + int((match.group(7) or "")[:9].ljust(9, "0")), offset


def parse_instant(text: str) -> dt.datetime:
    """RFC 3339 text (``2025-01-02T03:04:05Z``) as the UTC datetime ``timestamp()`` makes of it, cut to
    microseconds (CelError when it is not one): ``rules test`` reads one per HealthEvent."""
    import datetime as dt

    match = _RFC3339.fullmatch(text)
    if match is None:
        raise CelError(f"timestamp {text!r} is not RFC 3339 (e.g. 2025-01-02T03:04:05Z)")
    fraction = match.group(7)
    base = text if fraction is None else text[:match.start(7) - 1] + text[match.end(7):]
    try:
        instant = dt.datetime.fromisoformat(base)  # RFC 3339 is one of the forms it reads
        if fraction is not None:
            instant += dt.timedelta(microseconds=int(fraction[:6].ljust(6, "0")))
        if instant.utcoffset():
            instant = instant.astimezone(dt.UTC)
    except ValueError:
        raise CelError(f"timestamp {text!r} is not a valid date and time") from None
    except OverflowError:
        raise CelError("timestamp out of range") from None
    return instant




def to_duration(value: Any) -> Duration:
    kind = type(value)
    if kind is Duration:
        return value  # type: ignore[no-any-return]
    if kind is not str:
        raise no_overload("duration", value)
    nanos = go_nanoseconds(value)
    if nanos is None:
        raise CelError(f"invalid duration {value!r} (a Go duration, e.g. 30m, 1h30m, 1.5s)")
    return Duration(nanos)


def type_of(value: Any) -> CelType:
    kind = kind_of(value)
    return TYPES.get(kind) or CelType(QUANTITY if kind == QUANTITY else kind)


def dyn(value: Any) -> Any:
    return value


# --- time accessors

_DURATION_GETTERS = {"getHours": 3600 * _NANOS, "getMinutes": 60 * _NANOS, "getSeconds": _NANOS,
                     "getMilliseconds": 10**6}


def time_getter(name: str) -> Any:
    def getter(value: Any, zone: Any = None) -> int:
        kind = type(value)
        if kind is Duration and zone is None and name in _DURATION_GETTERS:
            nanos = int(value.nanos)
            whole = abs(nanos) // _DURATION_GETTERS[name]  # all of it in that unit, as Go's Duration.Hours()...
            return -whole if nanos < 0 else whole
        if kind is not Timestamp or (zone is not None and type(zone) is not str):
            raise no_overload(name, value) if zone is None else no_overload(name, value, zone)
        try:
            return _time_part(name, value, zone)
        except OverflowError:
            raise CelError(f"{name}: timestamp out of range in time zone {zone}") from None

    return getter


def _time_part(name: str, value: Timestamp, zone: str | None) -> int:
    import datetime as dt

    seconds, nanos = divmod(value.nanos, _NANOS)
    shift = value.offset if zone is None else _zone_offset(zone, seconds)
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds + shift)
    if name == "getFullYear":
        return local.year
    if name == "getMonth":
        return local.month - 1
    if name == "getDate":
        return local.day
    if name == "getDayOfMonth":
        return local.day - 1
    if name == "getDayOfWeek":
        return (local.weekday() + 1) % 7
    if name == "getDayOfYear":
        return local.timetuple().tm_yday - 1
    if name == "getHours":
        return local.hour
    if name == "getMinutes":
        return local.minute
    if name == "getSeconds":
        return local.second
    return nanos // 10**6


_GO_INT = re.compile(r"[+-]?[0-9]+")


def _zone_offset(zone: str, seconds: int) -> int:
    """Seconds east of UTC in ``zone`` at the instant ``seconds``: with a colon, hours and minutes as cel-go
    reads them (``+05:30``, ``-08:00``); else an IANA name (``""`` and ``UTC`` are UTC)."""
    if zone in ("", "UTC"):
        return 0
    hours, colon, minutes = zone.partition(":")
    if colon:
        if not (_GO_INT.fullmatch(hours) and _GO_INT.fullmatch(minutes)):
            raise CelError(f"invalid time zone offset {zone!r}")
        total = int(hours) * 60 + (-int(minutes) if zone.startswith("-") else int(minutes))
        return total * 60
    import datetime as dt
    import zoneinfo

    try:
        info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CelError(f"unknown time zone {zone!r}") from None
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    shift = instant.astimezone(info).utcoffset()
    return 0 if shift is None else int(shift.total_seconds())
