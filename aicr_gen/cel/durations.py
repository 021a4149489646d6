"""Go durations (``1h30m``, ``1.5s``, ``90s``): the one reader, with the two grammars our consumers take. It lives
with CEL, which imports nothing else of aicr_gen and needs Go's grammar for ``duration()``.

- ``go_nanoseconds``: Go's ``time.ParseDuration`` to the letter, in nanoseconds, for the values a Go program
  parses with it: cel-go's ``duration()`` (``cel/conversions``) and robfig/cron's ``@every`` schedules that the
  Kubernetes API server takes (``text/cron``). A sign, a bare ``0``, ``.5s`` and ``1.s``, ``µs`` and ``μs``, a
  fraction cut (not rounded) through a double, and 64-bit overflow refused, all as Go does.
- ``seconds``: the narrower grammar aicr-gen writes into NVSentinel's circuit breaker (``breaker.duration``, the
  window of a ClusterSpec and of ``--breaker-duration``) and compares in plans and pools: unsigned, every number
  with digits before any point and after it, units ``h m s ms us µs ns``, at most 64 characters, summed as
  seconds in doubles. A sign, ``0`` without a unit or ``.5s`` is refused here: a breaker window has a positive
  length, and each spelling we write is one Go reads the same way.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?([^0-9.]*)")
_INT64 = 1 << 63
_NANOS = {"ns": 1, "us": 10**3, "\u00b5s": 10**3, "\u03bcs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9,
          "h": 3600 * 10**9}
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "\u00b5s": 1e-6, "ns": 1e-9}
_MAX_SECONDS_TEXT = 64


def _parts(text: str) -> Iterator[tuple[str, str | None, str]]:
    """``text`` cut into (whole digits, fraction digits or None, unit text) as Go's parser cuts it."""
    position = 0
    while position < len(text):
        match = _PART.match(text, position)
        assert match is not None  # every part of the pattern may be empty
        whole, fraction, unit = match.groups()
        yield whole, fraction, unit
        if match.end() == position:
            return  # nothing read: the caller has refused this part already
        position = match.end()


def go_nanoseconds(text: str) -> int | None:
    """``text`` as Go's ``time.ParseDuration`` reads it, in nanoseconds, or None where it returns an error."""
    negative = text[:1] == "-"
    rest = text[1:] if text[:1] in ("-", "+") else text
    if rest == "0":
        return 0
    if not rest:
        return None
    total = 0
    for whole, fraction, unit_text in _parts(rest):
        if not whole and not fraction:
            return None  # no digits (".s"), or a unit without a number
        unit = _NANOS.get(unit_text)
        value = bounded_decimal(whole)
        if unit is None or value > _INT64 // unit:
            return None
        value *= unit
        digits, scale = _leading_fraction(fraction or "")
        if digits:
            value += int(float(digits) * (float(unit) / scale))
        total += value
        if value > _INT64 or total > _INT64:
            return None
    if not negative and total > _INT64 - 1:
        return None
    return -total if negative else total


def seconds(text: str) -> float | None:
    """Seconds in a duration of the breaker's grammar (see the module rules), or None when ``text`` is not one."""
    if not text or len(text) > _MAX_SECONDS_TEXT:
        return None
    total = 0.0
    for whole, fraction, unit in _parts(text):
        if not whole or fraction == "" or unit not in _SECONDS:
            return None
        total += float(whole if fraction is None else f"{whole}.{fraction}") * _SECONDS[unit]
    return total


def bounded_decimal(digits: str) -> int:
    """ASCII digits as a number; past 20 significant digits, one beyond every 64-bit bound (Python will not
    read very long ones, and Go only needs to know they overflow). Go's ``strconv.Atoi`` digits use it too."""
    significant = digits.lstrip("0")
    return int(significant or "0") if len(significant) <= 20 else 1 << 70


def _leading_fraction(digits: str) -> tuple[int, float]:
    """The fraction digits Go keeps (it stops before they would overflow) and their scale."""
    value, scale = 0, 1.0
    for char in digits:
        if value > (_INT64 - 1) // 10 or value * 10 + int(char) > _INT64:
            break
        value, scale = value * 10 + int(char), scale * 10
    return value, scale
