"""Go's ``fmt`` printing of the values a template sees (YAML data: maps, lists, strings, ints, floats, bools, nil),
so that ``{{ .x }}``, ``print``, ``printf`` and ``toString`` write what AICR's Go binary writes.

A Go struct (the template's root data) is a ``GoStruct``; ``None`` is a nil interface (``<nil>``).
"""

from __future__ import annotations

import math
import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class GoStruct:
    """A Go struct value: its type name (for messages) and its fields in declaration order."""

    __slots__ = ("fields", "type_name")

    def __init__(self, type_name: str, fields: dict[str, Any]) -> None:
        self.type_name = type_name
        self.fields = fields

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoStruct) and (self.type_name, self.fields) == (other.type_name, other.fields)

    __hash__ = None  # type: ignore[assignment]  # mutable like a dict


def type_name(value: Any) -> str:
    """The Go type of a value as ``fmt`` and template errors name it."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float64"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list):
        return "[]interface {}"
    if isinstance(value, GoStruct):
        return value.type_name
    return type(value).__name__


def _digits(value: float) -> tuple[str, int]:
    """The shortest decimal digits of ``abs(value)`` and the position of the decimal point
    (``value == 0.d1d2... * 10**point``), as Go's strconv finds them."""
    text = repr(abs(value))
    mantissa, _, exponent = text.partition("e")
    whole, _, fraction = mantissa.partition(".")
    if fraction == "0":
        fraction = ""
    digits = (whole + fraction).lstrip("0")
    point = len(whole) + int(exponent or 0)
    if whole == "0":
        stripped = fraction.lstrip("0")
        point = -(len(fraction) - len(stripped)) + int(exponent or 0)
    digits = digits.rstrip("0") or "0"
    return digits, point


def _exponent_form(digits: str, point: int, negative: bool) -> str:
    exponent = point - 1 if digits != "0" else 0
    mantissa = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
    sign = "-" if exponent < 0 else "+"
    return f"{'-' if negative else ''}{mantissa}e{sign}{abs(exponent):02d}"


def format_float(value: float) -> str:
    """``%v`` of a float64: the shortest digits that read back, in exponent form when the decimal exponent is
    below -4 or at least 6 (``1e+06``, ``123456``, ``1e-05``), as Go's ``%g`` with the shortest precision."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    negative = math.copysign(1.0, value) < 0
    if value == 0:
        return "-0" if negative else "0"
    digits, point = _digits(value)
    exponent = point - 1
    if exponent < -4 or exponent >= 6:
        return _exponent_form(digits, point, negative)
    if point <= 0:
        text = "0." + "0" * -point + digits
    elif point >= len(digits):
        text = digits + "0" * (point - len(digits))
    else:
        text = digits[:point] + "." + digits[point:]
    return ("-" if negative else "") + text


def quote(text: str) -> str:
    """Go's ``strconv.Quote`` (``%q`` of a string): printable characters as they are, others escaped."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch.isprintable():
            out.append(ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        else:
            code = ord(ch)
            if code < 0x80:
                out.append(f"\\x{code:02x}")
            elif code < 0x10000:
                out.append(f"\\u{code:04x}")
            else:
                out.append(f"\\U{code:08x}")
    out.append('"')
    return "".join(out)


_SHORT_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}


def sprint_value(value: Any, verb: str = "v") -> str:
    """One operand as ``%v`` (or ``%s``, which differs only for non-strings) prints it."""
    if isinstance(value, str):
        return value
    if value is None:
        return "<nil>" if verb == "v" else f"%!{verb}(<nil>)"
    if isinstance(value, bool):
        text = "true" if value else "false"
    elif isinstance(value, int):
        text = str(value)
    elif isinstance(value, float):
        text = format_float(value)
    elif isinstance(value, dict):
        items = (f"{sprint_value(key, verb)}:{sprint_value(value[key], verb)}" for key in sorted(value))
        return "map[" + " ".join(items) + "]"
    elif isinstance(value, list):
        return "[" + " ".join(sprint_value(item, verb) for item in value) + "]"
    elif isinstance(value, GoStruct):
        return "{" + " ".join(sprint_value(field, verb) for field in value.fields.values()) + "}"
    else:
        text = str(value)
    return text if verb == "v" else f"%!{verb}({type_name(value)}={text})"


def sprint(*args: Any) -> str:
    """``fmt.Sprint``: operands side by side, a space between two when neither is a string."""
    out: list[str] = []
    for i, arg in enumerate(args):
        if i and not isinstance(arg, str) and not isinstance(args[i - 1], str):
            out.append(" ")
        out.append(sprint_value(arg))
    return "".join(out)


def sprintln(*args: Any) -> str:
    """``fmt.Sprintln``: operands separated by spaces, then a newline."""
    return " ".join(sprint_value(arg) for arg in args) + "\n"


_DIRECTIVE = re.compile(r"%([-+# 0]*)(\d+|\*)?(?:\.(\d+|\*)?)?(.?)", re.S)


def _pad(text: str, flags: str, width: int | None) -> str:
    if width is None or len(text) >= width:
        return text
    if "-" in flags:
        return text + " " * (width - len(text))
    if "0" in flags and text[:1] in "+-" and text[1:2].isdigit():
        return text[0] + "0" * (width - len(text)) + text[1:]
    fill = "0" if "0" in flags and (text[:1].isdigit()) else " "
    return fill * (width - len(text)) + text


def _bad(verb: str, arg: Any) -> str:
    if arg is None:
        return f"%!{verb}(<nil>)"
    return f"%!{verb}({type_name(arg)}={sprint_value(arg)})"


def _format_one(verb: str, flags: str, precision: int | None, arg: Any) -> str:
    if verb == "v":
        return sprint_value(arg)
    if verb == "s":
        text = sprint_value(arg, "s")
        return text[:precision] if precision is not None and isinstance(arg, str) else text
    if verb == "q":
        if isinstance(arg, str):
            return quote(arg)
        if isinstance(arg, int) and not isinstance(arg, bool):
            return "'" + quote(chr(arg))[1:-1].replace("\\\"", '"').replace("'", "\\'") + "'"
        return _bad(verb, arg)
    if verb == "t":
        return ("true" if arg else "false") if isinstance(arg, bool) else _bad(verb, arg)
    if verb in "dxXob" and isinstance(arg, int) and not isinstance(arg, bool):
        spec = {"d": "d", "x": "x", "X": "X", "o": "o", "b": "b"}[verb]
        text = format(arg, spec)
        if "+" in flags and arg >= 0:
            text = "+" + text
        return text
    if verb in "xX" and isinstance(arg, str):
        text = arg.encode().hex()
        return text.upper() if verb == "X" else text
    if verb in "feEgG" and isinstance(arg, float):
        if verb in "gG" and precision is None:
            text = format_float(arg)
            return text.upper() if verb == "G" else text
        text = format(arg, f".{6 if precision is None else precision}{verb}")
        if verb in "eE":  # Go writes at least two exponent digits, as Python does
            return text
        return ("+" + text if "+" in flags and arg >= 0 else text)
    return _bad(verb, arg)


def sprintf(fmt: str, *args: Any) -> str:
    """``fmt.Sprintf`` for the verbs templates use (v s q d t x X o b e E f g G and ``%%``), with flags, width
    and precision; mistakes print as Go prints them (``%!d(string=a)``, ``%!s(MISSING)``, ``%!(EXTRA ...)``)."""
    out: list[str] = []
    used = 0
    pos = 0
    while True:
        start = fmt.find("%", pos)
        if start < 0:
            out.append(fmt[pos:])
            break
        out.append(fmt[pos:start])
        match = _DIRECTIVE.match(fmt, start)
        assert match is not None  # the pattern matches any '%'
        flags, width_text, precision_text, verb = match.groups()
        pos = match.end()
        if verb == "%":
            out.append("%")
            continue
        if not verb:
            out.append("%!(NOVERB)")
            break
        width = precision = None
        if width_text == "*" or precision_text == "*":
            out.append("%!(BADWIDTH)")
            continue
        if width_text:
            width = int(width_text)
        if precision_text is not None:
            precision = int(precision_text)
        if used >= len(args):
            out.append(f"%!{verb}(MISSING)")
            continue
        arg = args[used]
        used += 1
        out.append(_pad(_format_one(verb, flags, precision, arg), flags, width))
    if used < len(args):
        extra = ", ".join("<nil>" if arg is None else f"{type_name(arg)}={sprint_value(arg)}"
                          for arg in args[used:])
        out.append(f"%!(EXTRA {extra})")
    return "".join(out)
