"""cel-go's ext.Strings at its latest version as of cel-go v0.27.0 (what NVSentinel builds with): charAt,
indexOf, lastIndexOf, lowerAscii, upperAscii, replace, split, substring, trim, join, reverse, format (its
second formatter) and strings.quote. Indexes count code points, as in cel-go."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

from aicr_gen.cel.errors import CelError, CelLimitError
from aicr_gen.cel.values import (
    CelType,
    Duration,
    Timestamp,
    Uint,
    duration_text,
    format_fixed,
    kind_of,
    map_items,
    no_overload,
    timestamp_text,
)

MAX_BUILT = 8_000_000
"""The longest string a function here builds (replace, join, format); longer is refused before it is built.
The evaluation's result size limit (``Limits.max_result_size``) then applies as to any value."""


def _check_built(size: int) -> None:
    if size > MAX_BUILT:
        raise CelLimitError(f"a string would grow to {size} code points, over the {MAX_BUILT} limit")


def _strings(name: str, *values: Any) -> None:
    for value in values:
        if type(value) is not str:
            raise no_overload(name, *values)


def _ints(name: str, *values: Any) -> None:
    for value in values:
        if type(value) is not int:
            raise no_overload(name, *values)


def char_at(text: Any, index: Any) -> str:
    _strings("charAt", text)
    _ints("charAt", index)
    if not 0 <= index <= len(text):
        raise CelError(f"index out of range: {index}")
    return text[index] if index < len(text) else ""


def index_of(text: Any, part: Any, offset: Any = 0) -> int:
    """cel-go v0.27.0: an empty ``part`` is found at any offset, a negative offset is an error, one at or
    past the end finds nothing (-1)."""
    _strings("indexOf", text, part)
    _ints("indexOf", offset)
    if part == "":
        return offset  # type: ignore[no-any-return]
    if offset < 0:
        raise CelError(f"index out of range: {offset}")
    return text.find(part, offset)  # type: ignore[no-any-return]


def last_index_of(text: Any, part: Any, offset: Any = None) -> int:
    """As :func:`index_of`, searching backwards from ``offset`` (the last code point by default)."""
    _strings("lastIndexOf", text, part)
    if offset is None:
        if part == "":
            return len(text)
        if len(text.encode()) < len(part.encode()):
            return -1
        offset = len(text) - 1
    _ints("lastIndexOf", offset)
    if part == "":
        return offset  # type: ignore[no-any-return]
    if offset < 0:
        raise CelError(f"index out of range: {offset}")
    if offset >= len(text):
        return -1
    return text.rfind(part, 0, offset + len(part))  # type: ignore[no-any-return]


_LOWER = {code: code + 32 for code in range(ord("A"), ord("Z") + 1)}
_UPPER = {code + 32: code for code in range(ord("A"), ord("Z") + 1)}


def lower_ascii(text: Any) -> str:
    _strings("lowerAscii", text)
    return text.translate(_LOWER)  # type: ignore[no-any-return]


def upper_ascii(text: Any) -> str:
    _strings("upperAscii", text)
    return text.translate(_UPPER)  # type: ignore[no-any-return]


def replace(text: Any, old: Any, new: Any, limit: Any = -1) -> str:
    _strings("replace", text, old, new)
    _ints("replace", limit)
    if len(new) > len(old):
        count = len(text) + 1 if old == "" else text.count(old)
        _check_built(len(text) + (count if limit < 0 else min(count, limit)) * (len(new) - len(old)))
    return text.replace(old, new, limit if limit >= 0 else -1)  # type: ignore[no-any-return]


def split(text: Any, separator: Any, limit: Any = -1) -> list[str]:
    _strings("split", text, separator)
    _ints("split", limit)
    if limit == 0:
        return []
    if separator == "":
        parts = list(text)
        return parts if limit < 0 or len(parts) <= limit else [*parts[:limit - 1], "".join(parts[limit - 1:])]
    return text.split(separator, limit - 1 if limit > 0 else -1)  # type: ignore[no-any-return]


def substring(text: Any, start: Any, end: Any = None) -> str:
    _strings("substring", text)
    end = len(text) if end is None else end
    _ints("substring", start, end)
    if end < start:
        raise CelError(f"invalid substring range. start: {start}, end: {end}")
    if not 0 <= start <= len(text):
        raise CelError(f"index out of range: {start}")
    if not 0 <= end <= len(text):
        raise CelError(f"index out of range: {end}")
    return text[start:end]  # type: ignore[no-any-return]


_GO_SPACE = "\t\n\v\f\r \x85\xa0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a" \
            "\u2028\u2029\u202f\u205f\u3000"
"""What Go's ``unicode.IsSpace`` calls white space (Python's ``str.strip`` also strips U+001C..U+001F)."""


def trim(text: Any) -> str:
    _strings("trim", text)
    return text.strip(_GO_SPACE)  # type: ignore[no-any-return]


def join(items: Any, separator: Any = "") -> str:
    if type(items) is not list:
        raise no_overload("join", items)
    _strings("join", separator, *items)
    _check_built(sum(map(len, items)) + len(separator) * max(len(items) - 1, 0))
    return separator.join(items)  # type: ignore[no-any-return]


def reverse(text: Any) -> str:
    _strings("reverse", text)
    return text[::-1]  # type: ignore[no-any-return]


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                  "\\": "\\\\", '"': '\\"'}


def quote(text: Any) -> str:
    _strings("strings.quote", text)
    return '"' + "".join(_QUOTE_ESCAPES.get(char, char) for char in text) + '"'


# --- format (cel-go's second formatter, ext.Strings version 4 and later)

def format_text(template: Any, args: Any) -> str:
    """``template.format(args)``: ``%%``, and ``%s %d %f %e %b %o %x %X`` each taking the next argument, with
    an optional ``.N`` precision (used by ``%f`` and ``%e``, 6 by default)."""
    _strings("format", template)
    if type(args) is not list:
        raise no_overload("format", template, args)
    out: list[str] = []
    position = 0
    used = 0
    size = len(template)
    while True:
        start = template.find("%", position)
        if start < 0:
            out.append(template[position:])
            return "".join(out)
        out.append(template[position:start])
        if template.startswith("%", start + 1):
            out.append("%")
            position = start + 2
            continue
        if start + 1 >= size:
            raise CelError("unexpected end of string")
        if used >= len(args):
            raise CelError(f"index {used} out of range")
        position, clause, precision = _clause(template, start + 1)
        try:
            out.append(clause(args[used], precision))
        except CelError as err:
            raise CelError(f"error during formatting: {err}") from None
        size += len(out[-1])
        _check_built(size)
        used += 1


_MAX_PRECISION = 1000
"""cel-go v0.27.0 has no bound (later versions refuse over 100); a bounded evaluator needs one."""


def _clause(template: str, at: int) -> tuple[int, Any, int]:
    """The clause at ``at`` (after its ``%``): where it ends, its formatter and its precision."""
    precision = 6
    if template[at] == ".":
        end = at + 1
        while end < len(template) and template[end] in "0123456789":
            end += 1
        if end >= len(template):
            raise CelError("could not parse formatting clause: error while parsing precision: could not find "
                           "end of precision specifier")
        if end == at + 1:
            raise CelError("could not parse formatting clause: error while parsing precision: error while "
                           "converting precision to integer")
        precision = int(template[at + 1:end])
        if precision > _MAX_PRECISION:
            raise CelLimitError(f"format precision {precision} is over the {_MAX_PRECISION} limit")
        at = end
    verb = template[at]
    clause = _VERBS.get(verb)
    if clause is None:
        raise CelError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
    return at + 1, clause, precision


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return None


def _clause_s(value: Any, _precision: int) -> str:
    return _as_text(value)


def _as_text(value: Any) -> str:
    kind = type(value)
    if kind is str:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return "true" if value else "false"
    if kind is int or kind is Uint:
        return str(int(value))
    if kind is float:
        return _special(value) or format_fixed(value)
    if kind is bytes:
        return value.decode("utf-8", errors="replace")  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if kind is CelType:
        return value.name  # type: ignore[no-any-return]
    if kind is Timestamp:
        return timestamp_text(value, utc=True)
    if kind is Duration:
        return duration_text(value)
    if kind is list:
        return "[" + ", ".join(_bounded(_as_text(item) for item in value)) + "]"
    if kind is dict:
        entries = sorted(zip(*[iter(_bounded(text for key, item in map_items(value)
                                              for text in (_as_text(key), _as_text(item))))] * 2, strict=True))
        return "{" + ", ".join(f"{key}: {item}" for key, item in entries) + "}"
    raise CelError("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, "
                   f"durations, and timestamps, was given {kind_of(value)}")


def _bounded(texts: Iterator[str]) -> list[str]:
    """The texts, refused once together they would be longer than MAX_BUILT."""
    out: list[str] = []
    total = 0
    for text in texts:
        total += len(text) + 2
        _check_built(total)
        out.append(text)
    return out


def _clause_d(value: Any, _precision: int) -> str:
    kind = type(value)
    if kind is int or kind is Uint:
        return str(int(value))
    if kind is float:
        return _special(value) or format_fixed(value)
    raise CelError(f"decimal clause can only be used on ints, uints, and doubles, was given {kind_of(value)}")


def _floating(verb: str, name: str) -> Any:
    def clause(value: Any, precision: int) -> str:
        kind = type(value)
        if kind is int or kind is Uint:
            value = float(value)
        elif kind is not float:
            raise CelError(f"{name} clause can only be used on ints, uints, and doubles, was given "
                           f"{kind_of(value)}")
        return _special(value) or format(value, f".{precision}{verb}")

    return clause


def _clause_b(value: Any, _precision: int) -> str:
    kind = type(value)
    if kind is bool:
        return "1" if value else "0"
    if kind is int or kind is Uint:
        return format(int(value), "b")
    raise CelError(f"only ints, uints, and bools can be formatted as binary, was given {kind_of(value)}")


def _clause_o(value: Any, _precision: int) -> str:
    kind = type(value)
    if kind is int or kind is Uint:
        return format(int(value), "o")
    raise CelError(f"octal clause can only be used on ints and uints, was given {kind_of(value)}")


def _hex(upper: bool) -> Any:
    def clause(value: Any, _precision: int) -> str:
        kind = type(value)
        if kind is int or kind is Uint:
            text = format(int(value), "x")
        elif kind is str:
            text = value.encode("utf-8").hex()
        elif kind is bytes:
            text = value.hex()
        else:
            raise CelError(f"only ints, uints, bytes, and strings can be formatted as hex, was given "
                           f"{kind_of(value)}")
        return text.upper() if upper else text

    return clause


_VERBS = {"s": _clause_s, "d": _clause_d, "f": _floating("f", "fixed-point"), "e": _floating("e", "scientific"),
          "b": _clause_b, "o": _clause_o, "x": _hex(False), "X": _hex(True)}
