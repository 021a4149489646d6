"""CEL values in Python, cel-go's equality and ordering, and :func:`to_cel`, which checks and converts data.

null, bool, int, double, string, bytes and list are Python's ``None``, ``bool``, ``int``, ``float``, ``str``,
``bytes`` and ``list``; a map is a ``dict`` whose bool keys are held as :data:`TRUE_KEY` / :data:`FALSE_KEY`
(so ``true`` and ``1`` stay two keys while ``1``, ``1u`` and ``1.0`` find one key, as in cel-go). :class:`Uint`,
:class:`Timestamp` and :class:`Duration` (both in nanoseconds, with cel-go's ranges), :class:`CelType` and
:class:`Quantity` are this package's own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.cel.errors import CelError

if TYPE_CHECKING:
    import datetime as dt
    from fractions import Fraction

INT64_MIN = -(2**63)
INT64_MAX = 2**63 - 1
UINT64_MAX = 2**64 - 1

MAX_DURATION_SECONDS = INT64_MAX // 10**9
"""cel-go holds a duration as Go's ``time.Duration``, int64 nanoseconds: about ±292 years."""
MIN_TIMESTAMP_SECONDS = -62_135_596_800
"""0001-01-01T00:00:00Z, the first instant of a CEL timestamp."""
MAX_TIMESTAMP_SECONDS = 253_402_300_799
"""9999-12-31T23:59:59Z; the last instant is a nanosecond before the next second."""
_NANOS = 10**9
_MIN_TIMESTAMP_NANOS = MIN_TIMESTAMP_SECONDS * _NANOS
_MAX_TIMESTAMP_NANOS = (MAX_TIMESTAMP_SECONDS + 1) * _NANOS - 1

MISSING: Any = object()


class Uint(int):
    """A CEL uint (0 .. 2^64-1); it hashes and compares as the int of the same value."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"{int(self)}u"


class Timestamp:
    """A CEL timestamp: nanoseconds since the Unix epoch, from year 1 to year 9999 (UTC), and the UTC offset
    it was written with (seconds east), which cel-go keeps: ``string()`` and the accessors without a time
    zone show the time at that offset. Two timestamps are equal when they are the same instant."""

    __slots__ = ("nanos", "offset")

    def __init__(self, nanos: int, offset: int = 0) -> None:
        self.nanos = nanos
        self.offset = offset

    def __eq__(self, other: object) -> bool:
        return type(other) is Timestamp and other.nanos == self.nanos

    def __hash__(self) -> int:
        return hash((Timestamp, self.nanos))

    def __repr__(self) -> str:
        return f"timestamp({timestamp_text(self)!r})"


class Duration:
    """A CEL duration: signed nanoseconds in the int64 range, as Go's ``time.Duration``."""

    __slots__ = ("nanos",)

    def __init__(self, nanos: int) -> None:
        self.nanos = nanos

    def __eq__(self, other: object) -> bool:
        return type(other) is Duration and other.nanos == self.nanos

    def __hash__(self) -> int:
        return hash((Duration, self.nanos))

    def __repr__(self) -> str:
        return f"duration({duration_text(self)!r})"


def timestamp(nanos: int, offset: int = 0) -> Timestamp:
    """The timestamp ``nanos`` after the epoch; CelError when a CEL timestamp cannot hold it."""
    if not _MIN_TIMESTAMP_NANOS <= nanos <= _MAX_TIMESTAMP_NANOS:
        raise CelError("timestamp out of range")
    return Timestamp(nanos, offset)


def duration(nanos: int) -> Duration:
    """The duration of ``nanos``; CelError outside the int64 range."""
    if not INT64_MIN <= nanos <= INT64_MAX:
        raise CelError("duration out of range")
    return Duration(nanos)


class CelType(NamedTuple):
    """A CEL type as a value (``type(x) == int``)."""

    name: str


TYPE_NAMES = ("int", "uint", "double", "bool", "string", "bytes", "list", "map", "null_type", "type")
TIMESTAMP = "google.protobuf.Timestamp"
DURATION = "google.protobuf.Duration"
QUANTITY = "kubernetes.Quantity"
TYPES = {name: CelType(name) for name in (*TYPE_NAMES, TIMESTAMP, DURATION)}
"""The type names an expression may spell (``int``, ``google.protobuf.Timestamp``)."""


class _BoolKey:
    """A bool as a map key: Python's ``True == 1`` would merge ``{true: a, 1: b}`` into one entry."""

    __slots__ = ("value",)

    def __init__(self, value: bool) -> None:
        self.value = value

    def __repr__(self) -> str:
        return "true" if self.value else "false"


TRUE_KEY = _BoolKey(True)
FALSE_KEY = _BoolKey(False)


def map_key(key: Any) -> Any:
    """``key`` as a dict holds it; CelError for a value that cannot be a map key (double, null, list ...)."""
    kind = type(key)
    if kind is str or kind is int or kind is Uint:
        return key
    if kind is bool:
        return TRUE_KEY if key else FALSE_KEY
    raise CelError(f"unsupported key type: {kind_of(key)}")


def key_value(key: Any) -> Any:
    """A dict key as the CEL value it stands for."""
    return key.value if type(key) is _BoolKey else key


def map_items(mapping: Mapping[Any, Any]) -> Iterator[tuple[Any, Any]]:
    for key, value in mapping.items():
        yield (key.value if type(key) is _BoolKey else key), value


def map_get(mapping: Mapping[Any, Any], key: Any) -> Any:
    """The value at ``key`` or MISSING; a double finds the int or uint key of the same value (cel-go's
    heterogeneous lookup), a key of another type (null, list ...) is an error."""
    kind = type(key)
    if kind is str or kind is int or kind is Uint:
        return mapping.get(key, MISSING)
    if kind is bool:
        return mapping.get(TRUE_KEY if key else FALSE_KEY, MISSING)
    if kind is float:
        return mapping.get(key, MISSING) if math.isfinite(key) and key == int(key) else MISSING
    raise CelError(f"unsupported key type: {kind_of(key)}")


# --- Kubernetes quantities

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
        from fractions import Fraction  # only quantities need it (and it imports decimal)

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

    @classmethod
    def of(cls, number: Fraction) -> Quantity:
        """The quantity of an exact number (a sum or difference of quantities)."""
        result = cls("0")
        result.value = number
        result.text = str(number) if number.denominator == 1 else format(float(number), "g")
        return result

    def __repr__(self) -> str:
        return f"Quantity({self.text!r})"


def quantity_value(value: Any) -> Fraction:
    from fractions import Fraction

    if isinstance(value, Quantity):
        return value.value
    kind = type(value)
    if kind is int or kind is Uint:
        return Fraction(value)
    if kind is float and math.isfinite(value):
        return Fraction(value)
    raise CelError(f"no matching overload for a quantity and {kind_of(value)}")


# --- kinds, equality, ordering

_KIND_BY_TYPE: dict[type, str] = {
    type(None): "null_type", bool: "bool", int: "int", Uint: "uint", float: "double", str: "string",
    bytes: "bytes", list: "list", dict: "map", CelType: "type", Timestamp: TIMESTAMP,
    Duration: DURATION, Quantity: QUANTITY,
}
NUMBER_TYPES = frozenset((int, Uint, float))


def kind_of(value: Any) -> str:
    """The CEL type name of a runtime value."""
    kind = _KIND_BY_TYPE.get(type(value))
    if kind is not None:
        return kind
    for cls, name in ((bool, "bool"), (int, "int"), (float, "double"), (str, "string"), (bytes, "bytes"),
                      (list, "list"), (dict, "map")):
        if isinstance(value, cls):
            return name
    raise CelError(f"unsupported value of Python type {type(value).__name__}")


def no_overload(op: str, *values: Any) -> CelError:
    return CelError(f"no matching overload for '{op}' applied to ({', '.join(kind_of(v) for v in values)})")


_PLAIN_EQUAL = frozenset((str, bool, bytes, type(None), CelType))


def equals(left: Any, right: Any) -> bool:
    """cel-go's heterogeneous equality: numbers by value, other mixed types unequal, never an error."""
    lt, rt = type(left), type(right)
    if lt is rt and lt in _PLAIN_EQUAL:
        return bool(left == right)
    if lt in NUMBER_TYPES and rt in NUMBER_TYPES:
        if lt is float or rt is float:
            return compare_numbers(left, right) == 0
        return bool(left == right)
    if lt is not rt:
        return False
    if lt is list:
        return _lists_equal(left, right)
    if lt is dict:
        if len(left) != len(right):
            return False
        for key, value in left.items():
            other = right.get(key, MISSING)
            if other is MISSING or not equals(value, other):
                return False
        return True
    if lt is Quantity:
        return bool(left.value == right.value)
    return bool(left == right)


def _lists_equal(left: Any, right: Any) -> bool:
    return len(left) == len(right) and all(equals(a, b) for a, b in zip(left, right, strict=True))


_TWO63 = 2.0**63
_TWO64 = 2.0**64


def compare_numbers(left: Any, right: Any) -> int | None:
    """-1, 0 or 1 as cel-go orders two numbers of any numeric types (an int or uint against a double compares
    as a double, inside the int's range); None when either is NaN."""
    lt, rt = type(left), type(right)
    if lt is not float and rt is not float:
        return int((left > right) - (left < right))
    if lt is float and rt is float:
        if math.isnan(left) or math.isnan(right):
            return None
        return int((left > right) - (left < right))
    if lt is float:
        flipped = compare_numbers(right, left)
        return None if flipped is None else -flipped
    if math.isnan(right):
        return None
    if lt is int:
        if right < -_TWO63:
            return 1
        if right > _TWO63:
            return -1
    else:
        if right < 0:
            return 1
        if right > _TWO64:
            return -1
    as_double = float(left)
    return int((as_double > right) - (as_double < right))


_ORDERED = frozenset((str, bytes, bool))


def ordering(op: str, left: Any, right: Any) -> int:
    """-1, 0 or 1; numbers compare across int, uint and double as cel-go does, quantities with numbers."""
    lt, rt = type(left), type(right)
    if lt in NUMBER_TYPES and rt in NUMBER_TYPES:
        result = compare_numbers(left, right)
        if result is None:
            raise CelError("NaN values cannot be ordered")
        return result
    if lt is rt:
        if lt in _ORDERED:
            return (left > right) - (left < right)  # type: ignore[no-any-return]
        if lt is Timestamp or lt is Duration:
            return (left.nanos > right.nanos) - (left.nanos < right.nanos)  # type: ignore[no-any-return]
    if (lt is Quantity or rt is Quantity) and {lt, rt} <= {Quantity, *NUMBER_TYPES}:
        a, b = quantity_value(left), quantity_value(right)
        return (a > b) - (a < b)
    raise no_overload(op, left, right)


def contains(item: Any, container: Any) -> bool:
    kind = type(container)
    if kind is list:
        return any(equals(item, element) for element in container)
    if kind is dict:
        try:
            return map_get(container, item) is not MISSING
        except CelError:
            return False
    raise no_overload("@in", item, container)


# --- data in

def to_cel(value: Any, *, json_numbers: bool = False, max_depth: int = 100) -> Any:
    """Check and convert Python data to CEL values: mappings with string keys become dicts, sequences
    lists, datetimes timestamps, timedeltas durations. ``json_numbers`` turns every number into a double,
    as a Go JSON round trip does (how NVSentinel presents a HealthEvent)."""
    return _convert(value, json_numbers, max_depth, "value")


def _convert(value: Any, json_numbers: bool, depth: int, where: str) -> Any:
    if depth < 0:
        raise ValueError(f"{where}: nested too deeply")
    kind = type(value)
    if value is None or kind is str or kind is bool or kind is bytes or kind is float:
        return value
    if isinstance(value, bool):  # subclasses (an enum's members ...) as the plain value the evaluator knows
        return bool(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, bytes):
        return bytes(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, int):
        if json_numbers:
            return float(value)
        if kind is Uint:
            return value
        if not INT64_MIN <= value <= UINT64_MAX:
            raise ValueError(f"{where}: integer {value} is out of the 64-bit range")
        return int(value) if value <= INT64_MAX else Uint(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise ValueError(f"{where}: map key {key!r} is not a string")
            out[key] = _convert(item, json_numbers, depth - 1, f"{where}.{key}")
        return out
    if isinstance(value, (list, tuple)):
        return [_convert(item, json_numbers, depth - 1, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (Quantity, CelType, Timestamp, Duration)):
        return value
    import datetime as dt

    try:
        if isinstance(value, dt.datetime):
            if value.tzinfo is None:
                raise ValueError(f"{where}: datetime without a time zone")
            return from_datetime(value)
        if isinstance(value, dt.timedelta):
            return duration((value.days * 86_400 + value.seconds) * _NANOS + value.microseconds * 1000)
    except CelError as err:
        raise ValueError(f"{where}: {err}") from None
    raise ValueError(f"{where}: a {type(value).__name__} has no CEL equivalent")


# ------------------------------------------------------------------------------------------- as text


def format_double(value: float) -> str:
    """A double as cel-go's string() writes it, Go's ``%g``: the shortest digits that read back as the same
    double, in exponent form when the exponent is below -4 or 6 and over (``1e+06``, ``1.5e-05``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    negative, digits, point = _shortest_digits(value)
    sign = "-" if negative else ""
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        mantissa = digits[0] + (f".{digits[1:]}" if len(digits) > 1 else "")
        return f"{sign}{mantissa}e{'-' if exponent < 0 else '+'}{abs(exponent):02d}"
    return sign + _place_point(digits, point)


def format_fixed(value: float) -> str:
    """A finite double as Go's ``strconv.FormatFloat(v, 'f', -1, 64)`` writes it: the shortest digits that
    read back as the same double, never in exponent form (``1000000``, ``0.000015``)."""
    negative, digits, point = _shortest_digits(value)
    return ("-" if negative else "") + _place_point(digits, point)


def _shortest_digits(value: float) -> tuple[bool, str, int]:
    """Sign, the shortest round-tripping digits (no trailing zeros) and where the decimal point goes."""
    from decimal import Decimal

    negative, digit_tuple, exponent = Decimal(repr(value)).as_tuple()
    digits = "".join(map(str, digit_tuple)).rstrip("0") or "0"
    assert isinstance(exponent, int)
    point = len(digit_tuple) + exponent if digits != "0" else 1
    return bool(negative), digits, point


def _place_point(digits: str, point: int) -> str:
    if point <= 0:
        return "0." + "0" * -point + digits
    if point >= len(digits):
        return digits + "0" * (point - len(digits))
    return f"{digits[:point]}.{digits[point:]}"


def timestamp_text(value: Timestamp, *, utc: bool = False) -> str:
    """RFC 3339 with as many fractional digits as needed (Go's RFC3339Nano), at the timestamp's own offset
    (``Z`` for none) or in UTC."""
    import datetime as dt

    offset = 0 if utc else value.offset
    seconds, nanos = divmod(value.nanos, _NANOS)
    days, clock = divmod(seconds + offset, 86_400)
    date = dt.date.fromordinal(EPOCH_ORDINAL + days)
    hours, rest = divmod(clock, 3600)
    fraction = f".{nanos:09d}".rstrip("0") if nanos else ""
    zone = "Z" if offset == 0 else f"{'-' if offset < 0 else '+'}{abs(offset) // 3600:02d}:{abs(offset) // 60 % 60:02d}"
    return (f"{date.year:04d}-{date.month:02d}-{date.day:02d}T{hours:02d}:{rest // 60:02d}:{rest % 60:02d}"
            f"{fraction}{zone}")


EPOCH_ORDINAL = 719_163  # date(1970, 1, 1).toordinal()


def duration_seconds(value: Duration) -> float:
    """The duration in seconds as Go's ``Duration.Seconds`` computes it (whole seconds plus the rest)."""
    nanos = value.nanos
    whole = abs(nanos) // _NANOS * (1 if nanos >= 0 else -1)
    return float(whole) + float(nanos - whole * _NANOS) / 1e9


def duration_text(value: Duration) -> str:
    """cel-go's string(duration): the seconds as a double in shortest fixed form, then ``s`` (``1.5s``)."""
    return format_fixed(duration_seconds(value)) + "s"


def from_datetime(value: dt.datetime) -> Timestamp:
    import datetime as dt

    span = value - dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
    return timestamp(((span.days * 86_400 + span.seconds) * 10**6 + span.microseconds) * 1000)
