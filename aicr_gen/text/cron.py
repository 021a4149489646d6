"""CronJob schedules, accepted exactly when the Kubernetes API server accepts a new CronJob's ``spec.schedule``.

The API server parses the schedule with robfig/cron v3 ``ParseStandard`` and, on create, refuses any schedule
that contains ``TZ`` (a ``TZ=``/``CRON_TZ=`` prefix): the time zone belongs in ``spec.timeZone``. What the parser
takes, including its lenient corners that users may rely on:

- five fields separated by Go white space (``strings.Fields``), any amount of it around and between them:
  minute 0-59, hour 0-23, day of month 1-31, month 1-12 or JAN-DEC, day of week 0-6 or SUN-SAT (names
  case-insensitive, ``7`` is not Sunday);
- in each field a comma list (empty items are skipped, so ``1,,2`` and ``,`` pass) of ``*`` or ``?`` (any field),
  a number, a range ``a-b`` (``a`` not past ``b``), each optionally with a step ``/n``: ``n`` any positive
  64-bit integer (``*/100`` runs once, at the lowest value), and ``a/n`` meaning ``a-max/n``; after ``*`` or ``?``
  the parser ignores anything up to the step (``*-5`` is ``*``). Numbers are Go ``strconv.Atoi`` numbers
  (a leading ``+``, leading zeros);
- or, starting the schedule with nothing before or after it, one of ``@yearly @annually @monthly @weekly @daily
  @midnight @hourly`` (case-sensitive) or ``@every`` and one space and a Go duration (``time.ParseDuration``:
  ``1h30m``, ``1.5h``, ``90s``; no minimum: the schedule runs at most once a second, so zero or a negative
  duration means every second).

Quartz's ``L``, ``W`` and ``#``, a seconds field and a sixth (year) field are refused, as the parser does.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from aicr_gen.cel.durations import bounded_decimal, go_nanoseconds
from aicr_gen.errors import InvalidInputError

_EXAMPLE = "'0 3 * * 0' (Sundays at 03:00)"
DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
EVERY = "@every "
_INT64 = 1 << 63

_GO_SPACE = re.compile("[\t\n\v\f\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000]+")
"""What Go's ``unicode.IsSpace`` calls white space (Python's ``str.split`` also splits on ``\\x1c``-``\\x1f``)."""
_GO_LOWER = {"\u0130": "i", "\u212a": "k"}
"""The non-ASCII letters Go's ``unicode.ToLower`` maps to ASCII ones (Python's ``str.lower`` makes ``İ`` two)."""
_ATOI = re.compile(r"[+-]?[0-9]+")


class _Field(NamedTuple):
    label: str
    low: int
    high: int
    names: dict[str, int]

    @property
    def takes(self) -> str:
        names = list(self.names)
        spelled = f" or {names[0].upper()}-{names[-1].upper()}" if names else ""
        return f"{self.label} takes {self.low}-{self.high}{spelled}"


_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
FIELDS = (_Field("minute", 0, 59, {}), _Field("hour", 0, 23, {}), _Field("day-of-month", 1, 31, {}),
          _Field("month", 1, 12, {name: number for number, name in enumerate(_MONTHS, 1)}),
          _Field("day-of-week", 0, 6, {name: number for number, name in enumerate(_DAYS)}))

def check_schedule(text: str, where: str | None = None) -> str:
    """``text`` as a CronJob schedule (five-field ones with single spaces); anything the API server would refuse
    is an input error at ``where`` (default ``--schedule TEXT``) naming the part, what it takes, and an example."""
    where = where or f"--schedule {text!r}"
    if "TZ" in text:
        raise InvalidInputError(f"{where}: Kubernetes refuses a time zone (TZ=, CRON_TZ=) inside the schedule; "
                                "drop it: schedules run in the kube-controller-manager's time zone (UTC on most "
                                "clusters)")
    if text.startswith("@"):
        return _descriptor(text, where)
    fields = [field for field in _GO_SPACE.split(text) if field]
    if len(fields) != len(FIELDS):
        hint = (f"; a descriptor starts the schedule: drop what comes before {fields[0]!r}"
                if len(fields) == 1 and fields[0].startswith("@") else "")
        raise InvalidInputError(f"{where}: a schedule has 5 fields (minute hour day-of-month month day-of-week) or "
                                f"is one of {', '.join(DESCRIPTORS)} or '@every DURATION', found {len(fields)}"
                                f"{hint}; e.g. {_EXAMPLE}")
    for field, spec in zip(fields, FIELDS, strict=True):
        for expression in field.split(","):
            problem = _problem(expression, spec) if expression else None
            if problem:
                raise InvalidInputError(f"{where}: {spec.label} field {field!r}: {problem}; {spec.takes}, as a "
                                        f"number, a range a-b, * or ?, each with an optional step /n, in a comma "
                                        f"list; e.g. {_EXAMPLE}")
    return " ".join(fields)


def _descriptor(text: str, where: str) -> str:
    if text in DESCRIPTORS:
        return text
    if text.startswith(EVERY):
        if go_nanoseconds(text[len(EVERY):]) is None:
            raise InvalidInputError(f"{where}: {text[len(EVERY):]!r} is not a Go duration; @every takes one space "
                                    "and a duration such as 90s, 1h or 1h30m (units ns, us, ms, s, m, h)")
        return text
    raise InvalidInputError(f"{where}: not a descriptor: give exactly one of {', '.join(DESCRIPTORS)} (lower case, "
                            "nothing around it) or '@every DURATION' (e.g. @every 1h30m)")


def _problem(expression: str, spec: _Field) -> str | None:
    """What robfig/cron's ``getRange`` refuses in one comma-separated item of a field, or None."""
    span, *steps = expression.split("/")
    if len(steps) > 1:
        return f"{expression!r} has more than one '/'"
    bounds = span.split("-")
    if bounds[0] in ("*", "?"):
        start, end = spec.low, spec.high
    else:
        if len(bounds) > 2:
            return f"{expression!r} has more than one '-'"
        numbers = []
        for bound in bounds:
            value = _number(bound, spec)
            if isinstance(value, str):
                return value
            numbers.append(value)
        start, end = numbers[0], numbers[-1]
    step = 1
    if steps:
        parsed = _number(steps[0], None)
        if isinstance(parsed, str):
            return f"step {steps[0]!r}: {parsed}"
        step = parsed
        if len(bounds) == 1:
            end = spec.high
    if start < spec.low:
        return f"{expression!r} starts at {start}, below {spec.low}"
    if end > spec.high:
        return f"{expression!r} ends at {end}, above {spec.high}"
    if start > end:
        return f"range {expression!r} runs backwards ({start} is after {end})"
    if step == 0:
        return f"step {steps[0]!r} in {expression!r} must be at least 1"
    return None


def _number(text: str, spec: _Field | None) -> int | str:
    """A value as ``parseIntOrName`` reads it (a name of ``spec``, else a Go ``strconv.Atoi`` number that is not
    negative), or what is wrong with it."""
    if spec is not None and spec.names:
        named = spec.names.get("".join(_GO_LOWER.get(char, char.lower() if char.isascii() else char)
                                       for char in text))
        if named is not None:
            return named
    number = bounded_decimal(text.lstrip("+-")) * (-1 if text.startswith("-") else 1) if _ATOI.fullmatch(text) else None
    if number is None or not -_INT64 <= number < _INT64:
        quartz = " (L, W and # are Quartz extensions Kubernetes does not take)" if re.search("[LW#]", text) else ""
        names = " or a name" if spec is not None and spec.names else ""
        return f"{text!r} is not a number{names}{quartz}"
    if number < 0:
        return f"{text!r} is negative"
    return number
