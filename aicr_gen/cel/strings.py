"""cel-go's ext.Strings at its latest version: charAt, indexOf, lastIndexOf, lowerAscii, upperAscii, replace,
split, substring, trim, join, reverse, format and strings.quote. Indexes count code points, as in cel-go."""

from __future__ import annotations

import math
import re
from typing import Any

from aicr_gen.cel.conversions import duration_text, format_double, timestamp_text
from aicr_gen.cel.errors import CelError
from aicr_gen.cel.values import CelType, Duration, Timestamp, Uint, kind_of, map_items, no_overload


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
    _strings("indexOf", text, part)
    _ints("indexOf", offset)
    if not 0 <= offset <= len(text):
        raise CelError(f"index out of range: {offset}")
    return text.find(part, offset)  # type: ignore[no-any-return]


def last_index_of(text: Any, part: Any, offset: Any = None) -> int:
    _strings("lastIndexOf", text, part)
    if offset is None:
        return text.rfind(part)  # type: ignore[no-any-return]
    _ints("lastIndexOf", offset)
    if part == "":
        return offset  # type: ignore[no-any-return]
    if not 0 <= offset < len(text):
        raise CelError(f"index out of range: {offset}")
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
    if not 0 <= start <= len(text):
        raise CelError(f"index out of range: {start}")
    if not 0 <= end <= len(text):
        raise CelError(f"index out of range: {end}")
    if end < start:
        raise CelError(f"invalid substring range. start: {start}, end: {end}")
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
    return separator.join(items)  # type: ignore[no-any-return]


def reverse(text: Any) -> str:
    _strings("reverse", text)
    return text[::-1]  # type: ignore[no-any-return]


_QUOTE_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v",
                  "\\": "\\\\", '"': '\\"'}


def quote(text: Any) -> str:
    _strings("strings.quote", text)
    return '"' + "".join(_QUOTE_ESCAPES.get(char, char) for char in text) + '"'


# --- format

_CLAUSE = re.compile(r"%(?:\.([0-9]+))?(.?)", re.DOTALL)


def format_text(template: Any, args: Any) -> str:
    _strings("format", template)
    if type(args) is not list:
        raise no_overload("format", template, args)
    out: list[str] = []
    position = 0
    used = 0
    while True:
        start = template.find("%", position)
        if start < 0:
            out.append(template[position:])
            return "".join(out)
        out.append(template[position:start])
        match = _CLAUSE.match(template, start)
        assert match is not None
        precision, verb = match.group(1), match.group(2)
        position = match.end()
        if verb == "%" and precision is None:
            out.append("%")
            continue
        if verb not in _VERBS:
            raise CelError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
        if used >= len(args):
            raise CelError(f"index {used} out of range")
        out.append(_VERBS[verb](args[used], None if precision is None else int(precision)))
        used += 1


def _special(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "Infinity" if value > 0 else "-Infinity"
    return None


def _clause_s(value: Any, _precision: int | None) -> str:
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
        return _special(value) or format_double(value)
    if kind is bytes:
        return value.decode("utf-8", errors="replace")  # type: ignore[no-any-return]
    if value is None:
        return "null"
    if kind is CelType:
        return value.name  # type: ignore[no-any-return]
    if kind is Timestamp:
        return timestamp_text(value)
    if kind is Duration:
        return duration_text(value)
    if kind is list:
        return "[" + ", ".join(_as_text(item) for item in value) + "]"
    if kind is dict:
        entries = sorted((_as_text(key), _as_text(item)) for key, item in map_items(value))
        return "{" + ", ".join(f"{key}: {item}" for key, item in entries) + "}"
    raise CelError("error during formatting: string clause can only be used on strings, bools, bytes, ints, "
                   f"doubles, maps, lists, types, durations, and timestamps, was given {kind_of(value)}")


def _clause_d(value: Any, _precision: int | None) -> str:
    kind = type(value)
    if kind is int or kind is Uint:
        return str(int(value))
    if kind is float and _special(value):
        return _special(value) or ""
    raise CelError(f"error during formatting: decimal clause can only be used on integers, was given "
                   f"{kind_of(value)}")


def _floating(verb: str, name: str) -> Any:
    def clause(value: Any, precision: int | None) -> str:
        kind = type(value)
        if kind is int or kind is Uint:
            value = float(value)
        elif kind is not float:
            raise CelError(f"error during formatting: {name} clause can only be used on doubles, was given "
                           f"{kind_of(value)}")
        return _special(value) or format(value, f".{6 if precision is None else precision}{verb}")

    return clause


def _clause_b(value: Any, _precision: int | None) -> str:
    kind = type(value)
    if kind is bool:
        return "1" if value else "0"
    if kind is int or kind is Uint:
        return format(int(value), "b")
    raise CelError(f"error during formatting: only integers and bools can be formatted as binary, was given "
                   f"{kind_of(value)}")


def _clause_o(value: Any, _precision: int | None) -> str:
    kind = type(value)
    if kind is int or kind is Uint:
        return format(int(value), "o")
    raise CelError(f"error during formatting: octal clause can only be used on integers, was given "
                   f"{kind_of(value)}")


def _hex(upper: bool) -> Any:
    def clause(value: Any, _precision: int | None) -> str:
        kind = type(value)
        if kind is int or kind is Uint:
            text = format(int(value), "x")
        elif kind is str:
            text = value.encode("utf-8").hex()
        elif kind is bytes:
            text = value.hex()
        else:
            raise CelError("error during formatting: only integers, byte buffers, and strings can be formatted "
                           f"as hex, was given {kind_of(value)}")
        return text.upper() if upper else text

    return clause


_VERBS = {"s": _clause_s, "d": _clause_d, "f": _floating("f", "fixed-point"), "e": _floating("e", "scientific"),
          "b": _clause_b, "o": _clause_o, "x": _hex(False), "X": _hex(True)}
