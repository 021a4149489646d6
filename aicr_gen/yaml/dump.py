"""Deterministic block YAML and JSON: strings are quoted whenever a YAML 1.1 reader (Go's yaml.v2, PyYAML) or a
YAML 1.2 reader would take them for anything but a string; key order is the mapping's order."""

from __future__ import annotations

import functools
import math
import re
from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_YAML11_WORDS = {
    "y", "n", "yes", "no", "true", "false", "on", "off", "null", "~", "=", "<<",
}
# Anything a YAML 1.1 or 1.2 reader might take for a number (digits, '.', '_' after a sign) is quoted.
_NUMBER_LIKE = re.compile(r"^[-+]?([._0-9]|\.(inf|nan)$)", re.IGNORECASE)
_INDICATORS = set("-?:,[]{}#&*!|>'\"%@`")
_UNSAFE_INSIDE = (": ", " #", "\t")


_PLAIN_WORD = re.compile(r"[A-Za-z/][A-Za-z0-9_./+=-]*").fullmatch
"""Text that is safe unquoted whatever else holds (no space, colon, hash, indicator or leading digit) unless it
is a YAML 1.1 word: most keys, names and paths, checked with one match."""


def _needs_quotes(text: str) -> bool:
    if _PLAIN_WORD(text):
        return len(text) < 6 and text.lower() in _YAML11_WORDS
    if not text or text != text.strip() or text.lower() in _YAML11_WORDS:
        return True
    if text[0] in _INDICATORS or text.endswith(":") or _NUMBER_LIKE.match(text):
        return True
    if any(marker in text for marker in _UNSAFE_INSIDE):
        return True
    return not text.isprintable()


def _quote(text: str) -> str:
    """Double quotes for text another reader would type (``"24.04"``, ``"yes"``) or that needs escapes,
    single quotes otherwise (``'>= 1.34'``), as Go's yaml.v3 writes them."""
    typed = text.lower() in _YAML11_WORDS or _NUMBER_LIKE.match(text)
    if text.isprintable():
        if not typed:
            return "'" + text.replace("'", "''") + "'"
        if '"' not in text and "\\" not in text:  # what JSON would write, without importing json (~3 ms)
            return f'"{text}"'
    # JSON escapes the C0 controls; every other unprintable character (DEL, C1, U+2028, ...) is
    # escaped too, because YAML readers fold or refuse them raw.
    import json  # here: reading needs none

    return "".join(ch if ch.isprintable() else _escape(ch)
                   for ch in json.dumps(text, ensure_ascii=False))


def _escape(ch: str) -> str:
    code = ord(ch)
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def _scalar(value: Any) -> str:
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return ".nan"
        if math.isinf(value):
            return ".inf" if value > 0 else "-.inf"
        text = repr(value)
        # YAML 1.1 readers need a dot in the mantissa to see a float (1e-05 would stay a string).
        mantissa, e, exponent = text.partition("e")
        return f"{mantissa}.0e{exponent}" if e and "." not in mantissa else text
    if isinstance(value, str):
        return _quote(value) if _needs_quotes(value) else value
    raise TypeError(f"cannot dump {type(value).__name__}")


def _literal_ok(text: str) -> bool:
    return "\n" in text.rstrip("\n") and text.replace("\n", "").replace("\t", "").isprintable()


def _literal(text: str, indent: str) -> list[str]:
    chomp = "-" if not text.endswith("\n") else ("+" if text.endswith("\n\n") else "")
    explicit = "2" if text[0] in " \n" else ""
    body = text[:-1] if text.endswith("\n") else text
    lines = [f"|{explicit}{chomp}"]
    lines.extend(f"{indent}  {line}" if line else "" for line in body.split("\n"))
    return lines


_PLAIN_SCALARS = frozenset({bool, int, float, type(None)})


@functools.lru_cache(maxsize=8192)
def _key(key: str) -> str:
    """A mapping key as written; keys repeat across documents (apiVersion, name ...), so each is rendered once."""
    return _scalar(key)


def _emit(value: Any, indent: str, out: list[str], head: str) -> None:
    """Append ``head`` (``key:`` or ``-``) followed by ``value`` at ``indent``."""
    kind = type(value)
    if kind is str and "\n" not in value:  # the common cases, before the ABC checks below
        out.append(f"{head} {_quote(value) if _needs_quotes(value) else value}")
        return
    if kind in _PLAIN_SCALARS:
        out.append(f"{head} {_scalar(value)}")
        return
    if (kind is dict or isinstance(value, Mapping)) and value:
        if head.endswith("-"):
            first = True
            for key, item in value.items():
                prefix = f"{head} " if first else f"{indent}  "
                _emit(item, indent + "  ", out, f"{prefix}{_key(str(key))}:")
                first = False
            return
        out.append(head)
        for key, item in value.items():
            _emit(item, indent + "  ", out, f"{indent}  {_key(str(key))}:")
        return
    if (kind is list or (isinstance(value, Sequence) and not isinstance(value, str))) and value:
        out.append(head)
        head_indent = indent + "  "
        for item in value:
            _emit(item, head_indent, out, f"{head_indent}-")
        return
    if isinstance(value, str) and _literal_ok(value):
        block = _literal(value, indent)
        out.append(f"{head} {block[0]}")
        out.extend(block[1:])
        return
    if isinstance(value, Mapping):
        rendered = "{}"
    elif isinstance(value, Sequence) and not isinstance(value, str):
        rendered = "[]"
    else:
        rendered = _scalar(value)
    out.append(f"{head} {rendered}")


def dump(data: Mapping[str, Any]) -> str:
    """Deterministic block YAML for a mapping; key order is the mapping's order."""
    out: list[str] = []
    for key, value in data.items():
        _emit(value, "", out, f"{_key(str(key))}:")
    return "\n".join(out) + "\n"


def dump_json(data: Any) -> str:
    """Deterministic JSON (key order kept, two-space indent, UTF-8)."""
    import json

    try:
        return json.dumps(data, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError:
        raise InvalidInputError(
            "a value is NaN or infinite (.nan/.inf), which JSON cannot hold; fix the value or use YAML output"
        ) from None
