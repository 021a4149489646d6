"""The standard library's conversions (int(), uint(), double(), string(), bool(), bytes(), timestamp(),
duration(), type(), dyn()), the time accessors (getFullYear() ...) and the text forms of values."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from aicr_gen.cel.arithmetic import check_int, check_uint
from aicr_gen.cel.errors import CelError
from aicr_gen.cel.values import (
    QUANTITY,
    TYPES,
    CelType,
    Duration,
    Timestamp,
    Uint,
    duration,
    kind_of,
    no_overload,
    timestamp,
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
        if not -1.0 < value < _TWO64:
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
        if not _DOUBLE_TEXT.fullmatch(value):
            raise CelError(f"cannot convert {value!r} to double")
        return float(value)
    raise no_overload("double", value)


def format_double(value: float) -> str:
    """A double as cel-go's string() writes it (Go's strconv 'g' with the shortest precision)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == int(value) and abs(value) < 1e21:
        return "-0" if value == 0 and math.copysign(1, value) < 0 else str(int(value))
    text = repr(value)
    mantissa, e, exponent = text.partition("e")
    return f"{mantissa}e{int(exponent):+03d}" if e else text


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


def timestamp_text(value: Timestamp) -> str:
    """RFC 3339 in UTC with as many fractional digits as needed (Go's RFC3339Nano)."""
    import datetime as dt

    seconds, nanos = divmod(value.nanos, _NANOS)
    days, clock = divmod(seconds, 86_400)
    date = dt.date.fromordinal(_EPOCH_ORDINAL + days)
    hours, rest = divmod(clock, 3600)
    fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
    return f"{date.year:04d}-{date.month:02d}-{date.day:02d}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}{fraction}Z"


_EPOCH_ORDINAL = 719_163  # date(1970, 1, 1).toordinal()


def duration_text(value: Duration) -> str:
    """Seconds with the shortest exact fraction and an ``s`` (cel-go's string(duration))."""
    sign = "-" if value.nanos < 0 else ""
    seconds, nanos = divmod(abs(value.nanos), _NANOS)
    return f"{sign}{seconds}{f'.{nanos:09d}'.rstrip('0') if nanos else ''}s"


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


_RFC3339 = re.compile(r"(\d{4})-(\d\d)-(\d\d)[Tt](\d\d):(\d\d):(\d\d)(?:\.(\d{1,9}))?(?:([Zz])|([+-])(\d\d):(\d\d))")


def to_timestamp(value: Any) -> Timestamp:
    kind = type(value)
    if kind is Timestamp:
        return value  # type: ignore[no-any-return]
    if kind is int:
        if not -62_135_596_800 <= value <= 253_402_300_799:
            raise CelError("timestamp out of range")
        return Timestamp(value * _NANOS)
    if kind is str:
        return timestamp(instant_nanos(value))
    raise no_overload("timestamp", value)


def instant_nanos(text: str) -> int:
    """Nanoseconds since the epoch of RFC 3339 text; CelError when it is not a valid instant."""
    import datetime as dt

    match = _RFC3339.fullmatch(text)
    if match is None:
        raise CelError(f"timestamp {text!r} is not RFC 3339 (e.g. 2025-01-02T03:04:05Z)")
    year, month, day, hour, minute, second = (int(part) for part in match.group(1, 2, 3, 4, 5, 6))
    try:
        days = dt.date(year, month, day).toordinal() - _EPOCH_ORDINAL
    except ValueError:
        raise CelError(f"timestamp {text!r} is not a valid date") from None
    if hour > 23 or minute > 59 or second > 59:
        raise CelError(f"timestamp {text!r} is not a valid time of day")
    seconds = days * 86_400 + hour * 3600 + minute * 60 + second
    if match.group(9):
        offset = int(match.group(10)) * 3600 + int(match.group(11)) * 60
        seconds -= offset if match.group(9) == "+" else -offset
    return seconds * _NANOS + int((match.group(7) or "").ljust(9, "0"))


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
        instant = dt.datetime.fromisoformat(base.upper())  # RFC 3339 is one of the forms it reads
        if fraction is not None:
            instant += dt.timedelta(microseconds=int(fraction[:6].ljust(6, "0")))
        if instant.utcoffset():
            instant = instant.astimezone(dt.UTC)
    except ValueError:
        raise CelError(f"timestamp {text!r} is not a valid date and time") from None
    except OverflowError:
        raise CelError("timestamp out of range") from None
    return instant


def from_datetime(value: dt.datetime) -> Timestamp:
    import datetime as dt

    span = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return timestamp(((span.days * 86_400 + span.seconds) * 10**6 + span.microseconds) * 1000)


_DURATION = re.compile(r"[+-]?(?:(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:ns|us|\u00b5s|\u03bcs|ms|s|m|h))+|[+-]?0")
_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|\u00b5s|\u03bcs|ms|s|m|h)")
_UNIT_NANOS = {"ns": 1, "us": 1000, "\u00b5s": 1000, "\u03bcs": 1000, "ms": 10**6, "s": _NANOS, "m": 60 * _NANOS,
               "h": 3600 * _NANOS}


def to_duration(value: Any) -> Duration:
    kind = type(value)
    if kind is Duration:
        return value  # type: ignore[no-any-return]
    if kind is not str:
        raise no_overload("duration", value)
    if not _DURATION.fullmatch(value):
        raise CelError(f"duration {value!r} is not a Go duration (e.g. 30m, 1h30m, 1.5s)")
    total = sum((Fraction(number) * _UNIT_NANOS[unit] for number, unit in _DURATION_PART.findall(value)),
                Fraction(0))
    nanos = int(total)
    try:
        return duration(-nanos if value.startswith("-") else nanos)
    except CelError:
        raise CelError(f"duration {value!r} is out of range") from None


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
            whole = abs(nanos) // _DURATION_GETTERS[name]
            if name == "getMilliseconds":
                whole %= 1000  # the milliseconds within the second, as cel-go's Go remainder gives them
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
    local = dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds + _zone_offset(zone, seconds))
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


_OFFSET = re.compile(r"([+-]?)(\d\d):(\d\d)")


def _zone_offset(zone: str | None, seconds: int) -> int:
    """Seconds east of UTC in ``zone`` (an IANA name or ``[+-]HH:MM``) at the instant ``seconds``."""
    if zone is None or zone == "UTC":
        return 0
    match = _OFFSET.fullmatch(zone)
    if match:
        offset = int(match.group(2)) * 3600 + int(match.group(3)) * 60
        return -offset if match.group(1) == "-" else offset
    import datetime as dt
    import zoneinfo

    try:
        info = zoneinfo.ZoneInfo(zone)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError):
        raise CelError(f"unknown time zone {zone!r}") from None
    instant = dt.datetime(1970, 1, 1, tzinfo=dt.UTC) + dt.timedelta(seconds=seconds)
    shift = instant.astimezone(info).utcoffset()
    return 0 if shift is None else int(shift.total_seconds())
