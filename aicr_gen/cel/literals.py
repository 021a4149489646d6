"""The values of CEL literal tokens, decoded as cel-go decodes them (``parser.VisitInt``/``VisitUint``/
``VisitDouble`` and ``parser/unescape.go``). Each function returns the value or raises ``ValueError`` with
cel-go's message. The lexer has already checked the shape of every escape; what is left to refuse here is a
value out of range, a code point that is a surrogate or above U+10FFFF, and ``\\u``/``\\U`` in bytes."""

from __future__ import annotations

import math

_INT_MIN, _INT_MAX, _UINT_MAX = -(1 << 63), (1 << 63) - 1, (1 << 64) - 1
_SIMPLE = {"a": 7, "b": 8, "f": 12, "n": 10, "r": 13, "t": 9, "v": 11, "\\": 92, "'": 39, '"': 34, "`": 96,
           "?": 63}


def int_value(text: str, negative: bool) -> int:
    """An NUM_INT token (``42``, ``0x2A``) with the sign that precedes it in the literal."""
    value = int(text[2:], 16) if text.startswith("0x") else int(text, 10)
    value = -value if negative else value
    if not _INT_MIN <= value <= _INT_MAX:
        raise ValueError("invalid int literal")
    return value


def uint_value(text: str) -> int:
    digits = text[:-1]
    value = int(digits[2:], 16) if digits.startswith("0x") else int(digits, 10)
    if value > _UINT_MAX:
        raise ValueError("invalid uint literal")
    return value


def double_value(text: str, negative: bool) -> float:
    value = float(text)
    if math.isinf(value):  # Go's ParseFloat refuses overflow (ErrRange) but rounds underflow to zero
        raise ValueError("invalid double literal")
    return -value if negative else value


def string_value(token: str) -> str:
    """A STRING token, quotes and ``r`` prefix included."""
    body, raw = _body(token)
    if raw or "\\" not in body:
        return body
    return "".join(piece if isinstance(piece, str) else chr(piece) for piece in _decode(body, as_bytes=False))


def bytes_value(token: str) -> bytes:
    """A BYTES token (``b"..."``, ``br'...'``): the UTF-8 of its characters, except that ``\\xHH`` and octal
    escapes are octets."""
    body, raw = _body(token[1:])
    if raw or "\\" not in body:
        return body.encode("utf-8", "surrogatepass")
    out = bytearray()
    for piece in _decode(body, as_bytes=True):
        if isinstance(piece, int):
            out.append(piece)
        else:
            out += piece.encode("utf-8", "surrogatepass")
    return bytes(out)


def _body(token: str) -> tuple[str, bool]:
    raw = token[0] in "rR"
    if raw:
        token = token[1:]
    # Every string sees its line breaks as \n, as cel-go normalises them before unquoting.
    if "\r" in token:
        token = token.replace("\r\n", "\n").replace("\r", "\n")
    quote = 3 if token[:3] in ('"""', "'''") and len(token) >= 6 else 1
    return token[quote:-quote], raw


def _decode(body: str, as_bytes: bool) -> list[str | int]:
    """The characters of an escaped body; an octet (int) where ``as_bytes`` makes an escape one."""
    out: list[str | int] = []
    index, end = 0, len(body)
    while index < end:
        slash = body.find("\\", index)
        if slash < 0:
            out.append(body[index:])
            break
        if slash > index:
            out.append(body[index:slash])
        kind = body[slash + 1]
        if kind in _SIMPLE:
            out.append(_SIMPLE[kind] if as_bytes else chr(_SIMPLE[kind]))
            index = slash + 2
            continue
        if kind in "xX":
            code, index = int(body[slash + 2:slash + 4], 16), slash + 4
        elif kind in "uU":
            if as_bytes:
                raise ValueError("unable to unescape string")
            width = 4 if kind == "u" else 8
            code, index = int(body[slash + 2:slash + 2 + width], 16), slash + 2 + width
        else:
            code, index = int(body[slash + 1:slash + 4], 8), slash + 4
        if as_bytes:
            out.append(code)
        elif code > 0x10FFFF or 0xD800 <= code <= 0xDFFF:
            raise ValueError("invalid unicode code point")
        else:
            out.append(chr(code))
    return out
