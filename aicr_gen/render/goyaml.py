"""YAML written as Go's ``gopkg.in/yaml.v3`` writes it with a two-space indent: what AICR's deterministic
serializer (the manifests' ``toYaml``) and its hook stripping (a parse and re-encode) produce.

Both go through a small node model: ``Node`` (mapping, sequence or scalar with its style). ``from_data`` builds
nodes from plain values with yaml.v3's ``Marshal`` rules (which strings it quotes); ``from_composed`` keeps the
styles of a parsed document. ``emit`` writes documents with yaml.v3's emitter rules: block style, sequences
indented under their key, no line wrapping, a scalar's style downgraded (plain, single, double quotes) when its
text cannot be written in the style asked for.
"""

from __future__ import annotations

import functools
import math
import re

from aicr_gen.render import gofmt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

MAP, SEQ, SCALAR = "map", "seq", "scalar"
PLAIN, SINGLE, DOUBLE, LITERAL, FOLDED = "plain", "single", "double", "literal", "folded"


class Node:
    """A YAML node: ``kind`` MAP (``value``: list of (key, value) node pairs), SEQ (list of nodes) or SCALAR
    (text); ``style`` the scalar style, or ``"flow"`` for a flow collection."""

    __slots__ = ("kind", "style", "value")

    def __init__(self, kind: str, value: Any, style: str = PLAIN) -> None:
        self.kind, self.value, self.style = kind, value, style


# ---------------------------------------------------------------------------------------------------- resolving

_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?\Z")
_BASE60 = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?\Z")
_TIMESTAMP = re.compile(r"^(\d{4})-(\d{1,2})-(\d{1,2})"
                        r"(?:(?:[Tt]|[ \t]+)(\d{1,2}):(\d{1,2}):(\d{1,2})(?:\.\d*)?"
                        r"(?:[ \t]*(?:Z|[-+]\d{1,2}(?::\d{2})?))?)?\Z")
_OLD_BOOLS = frozenset({"y", "Y", "yes", "Yes", "YES", "on", "On", "ON", "n", "N", "no", "No", "NO", "off", "Off",
                        "OFF"})
_WORDS = frozenset({"true", "True", "TRUE", "false", "False", "FALSE", "", "~", "null", "Null", "NULL", ".nan",
                    ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF",
                    "<<"})
NULLS = frozenset({"", "~", "null", "Null", "NULL"})


def _go_int(text: str) -> bool:
    """Whether Go's ``strconv.ParseInt(text, 0, 64)`` or ``ParseUint`` accepts ``text``."""
    body = text[1:] if text[:1] in "+-" else text
    lower = body.lower()
    try:
        if lower.startswith(("0x", "0o", "0b")):
            value = int(body[2:], {"x": 16, "o": 8, "b": 2}[lower[1]]) if body[2:] else None
        elif len(body) > 1 and body[0] == "0":
            value = int(body, 8)
        else:
            value = int(body, 10) if body.isdigit() else None
    except ValueError:
        return False
    return value is not None and value < 2 ** 64


def _timestamp(text: str) -> bool:
    match = _TIMESTAMP.match(text)
    if match is None:
        return False
    month, day = int(match.group(2)), int(match.group(3))
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return False
    if match.group(4) is not None:
        hour, minute, second = int(match.group(4)), int(match.group(5)), int(match.group(6))
        return hour < 24 and minute < 60 and second < 60
    return True


def resolves_to_string(text: str) -> bool:
    """Whether yaml.v3 reads ``text``, written plain, as a string (not null, bool, number or timestamp)."""
    if text in _WORDS:
        return False
    first = text[0]
    if first == ".":
        try:
            float(text)
        except ValueError:
            return True
        return "_" in text or text.lower().lstrip(".").startswith(("inf", "nan"))
    if not (first.isdigit() and first.isascii()) and first not in "+-":
        return True
    if first.isdigit() and _timestamp(text):
        return False
    plain = text.replace("_", "")
    if _go_int(plain) or (_FLOAT.match(plain) is not None):
        return False
    return not plain.lstrip("-").startswith(("0b", "0o")) or not _go_int(plain)


def _plain_marshal_ok(text: str) -> bool:
    """yaml.v3's ``Marshal`` writes a string plain only when it reads back as the same string."""
    return resolves_to_string(text) and _BASE60.match(text) is None and text not in _OLD_BOOLS


def format_float(value: float) -> str:
    """A float as yaml.v3 writes it (Go's shortest ``%g``; ``.inf``, ``-.inf``, ``.nan``)."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    return gofmt.format_float(value)


def from_data(value: Any) -> Node:
    """The node yaml.v3's ``Marshal`` writes for a plain value, mapping keys sorted (AICR's deterministic
    serializer sorts every mapping by key)."""
    if isinstance(value, dict):
        return Node(MAP, [(_string(str(key)), from_data(value[key])) for key in sorted(value, key=str)])
    if isinstance(value, (list, tuple)):
        return Node(SEQ, [from_data(item) for item in value])
    if value is None:
        return Node(SCALAR, "null")
    if isinstance(value, bool):
        return Node(SCALAR, "true" if value else "false")
    if isinstance(value, int):
        return Node(SCALAR, str(value))
    if isinstance(value, float):
        return Node(SCALAR, format_float(value))
    if isinstance(value, gofmt.GoStruct):  # yaml.v3 writes a struct's fields with lower-cased names
        return Node(MAP, [(_string(name.lower()), from_data(field)) for name, field in sorted(
            value.fields.items(), key=lambda item: item[0].lower())])
    return _string(value if isinstance(value, str) else gofmt.sprint_value(value))


def _string(text: str) -> Node:
    if "\n" in text:
        return Node(SCALAR, text, LITERAL)
    return Node(SCALAR, text, PLAIN if _plain_marshal_ok(text) else DOUBLE)


def from_composed(node: Any) -> Node:
    """The node of a document composed by PyYAML (libyaml), with its scalar and collection styles."""
    kind = node.id
    if kind == "scalar":
        style = {None: PLAIN, "": PLAIN, '"': DOUBLE, "'": SINGLE, "|": LITERAL, ">": FOLDED}[node.style]
        if style == PLAIN and "\n" in node.value:
            style = LITERAL
        return Node(SCALAR, node.value, style)
    flow = "flow" if node.flow_style else PLAIN
    if kind == "sequence":
        return Node(SEQ, [from_composed(item) for item in node.value], flow)
    return Node(MAP, [(from_composed(key), from_composed(value)) for key, value in node.value], flow)


# ---------------------------------------------------------------------------------------------------- emitting

def _printable(ch: str) -> bool:
    code = ord(ch)
    return (code == 0x0A or 0x20 <= code <= 0x7E or 0xA0 <= code <= 0xD7FF
            or (0xE000 <= code <= 0xFFFD and code != 0xFEFF))


_BLANKS = " \t\r\n\x85\u2028\u2029"
_BREAKS = "\r\n\x85\u2028\u2029"


_FLOW_INSIDE = re.compile(r"[,?\[\]{}:]").search
_COLON_SPACED = re.compile(r":(?=[ \t\r\n\x85\u2028\u2029]|$)").search
_HASH_SPACED = re.compile(r"[ \t\r\n\x85\u2028\u2029]#").search
_SPECIAL = re.compile(r"[^\t\n\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd]").search
_SPACE_BREAK = re.compile(r" [\r\n\x85\u2028\u2029]").search
_BREAK_SPACE = re.compile(r"[\r\n\x85\u2028\u2029] ").search


def _indicators(text: str) -> tuple[bool, bool]:
    """(an indicator forbids plain style in flow context, ... in block context), as libyaml finds them."""
    flow = block = text.startswith(("---", "..."))
    first, rest = text[0], text[1:]
    spaced_after = not rest or rest[0] in _BLANKS
    if first in "#,[]{}&*!|>'\"%@`":
        flow = block = True
    elif first in "?:":
        flow = True
        block = block or spaced_after
    elif first == "-" and spaced_after:
        flow = block = True
    if _FLOW_INSIDE(rest):
        flow = True
    if _COLON_SPACED(rest):
        block = True
    if _HASH_SPACED(text):
        flow = block = True
    return flow, block


_SIMPLE = re.compile(r"[A-Za-z0-9_/(=$^<][A-Za-z0-9_/()\"'=$^<>.,;+*@!%&`~|\[\]{}?\\ -]*(?<! )").fullmatch
"""Text whose every character is printable ASCII, that neither starts with an indicator nor ends with a space
and holds no ``#`` or ``:``: plain in block context."""
_FLOW_SAFE = re.compile(r"[^,\[\]{}?]*").fullmatch


class _Analysis:
    """What libyaml's emitter allows for a scalar's text (``yaml_emitter_analyze_scalar``)."""

    __slots__ = ("block", "block_plain", "flow_plain", "multiline", "single")

    def __init__(self, text: str) -> None:
        if _SIMPLE(text):  # most text: no indicator, no space at either end, nothing to escape
            self.multiline = False
            self.flow_plain = _FLOW_SAFE(text) is not None
            self.block_plain = self.single = self.block = True
            return
        self.multiline = any(ch in _BREAKS for ch in text)
        self.flow_plain = self.block_plain = self.single = self.block = True
        if not text:
            self.flow_plain = self.block = False
            return
        special = _SPECIAL(text) is not None
        space_break = _SPACE_BREAK(text) is not None
        break_space = _BREAK_SPACE(text) is not None
        edges = text[0] in " " + _BREAKS or text[-1] in " " + _BREAKS
        flow_ind, block_ind = _indicators(text)
        if edges or self.multiline:
            self.flow_plain = self.block_plain = False
        if text[-1] == " " or space_break or special:
            self.block = False
        if break_space or space_break or special or "\t" in text:
            self.flow_plain = self.block_plain = self.single = False
        if flow_ind:
            self.flow_plain = False
        if block_ind:
            self.block_plain = False


_analysis = functools.lru_cache(maxsize=4096)(_Analysis)


def _style(node: Node, flow: bool, key: bool) -> str:
    text: str = node.value
    facts = _analysis(text)
    style = node.style
    if key and facts.multiline:
        style = DOUBLE
    if style == PLAIN:
        if (flow and not facts.flow_plain) or (not flow and not facts.block_plain):
            style = SINGLE
        if not text and (flow or key):
            style = SINGLE
    if style == SINGLE and not facts.single:
        style = DOUBLE
    if style in (LITERAL, FOLDED) and (not facts.block or flow or key):
        style = DOUBLE
    return style


_ESCAPES = {"\0": "0", "\a": "a", "\b": "b", "\t": "t", "\n": "n", "\v": "v", "\f": "f", "\r": "r", "\x1b": "e",
            '"': '"', "\\": "\\", "\x85": "N", "\xa0": "_", "\u2028": "L", "\u2029": "P"}


def _double(text: str) -> str:
    out = ['"']
    for ch in text:
        if _printable(ch) and ch not in '"\\\n\ufeff':
            out.append(ch)
        elif ch in _ESCAPES:
            out.append("\\" + _ESCAPES[ch])
        else:
            code = ord(ch)
            out.append(f"\\x{code:02X}" if code <= 0xFF else f"\\u{code:04X}" if code <= 0xFFFF
                       else f"\\U{code:08X}")
    out.append('"')
    return "".join(out)


def _single(text: str, indent: str) -> str:
    lines = text.replace("'", "''").split("\n")
    if len(lines) == 1:
        return f"'{lines[0]}'"
    # a line break inside single quotes is written as an empty line, continuation lines indented
    return "'" + ("\n\n" + indent).join(lines) + "'"


def _block(node: Node, style: str, indent: str) -> list[str]:
    text: str = node.value
    head = "|" if style == LITERAL else ">"
    if text[:1] in (" ", "\n"):
        head += "2"
    if not text.endswith("\n"):
        head += "-"
    elif text == "\n" or text.endswith("\n\n"):
        head += "+"
    body = text[:-1] if text.endswith("\n") else text
    if body.startswith("\n"):  # yaml.v3 (v3.0.1) writes a leading line break as the header's own, losing it
        body = body[1:]
    return [head, *(indent + line if line else "" for line in body.split("\n"))]


def _scalar(node: Node, flow: bool, key: bool, indent: str) -> list[str]:
    style = _style(node, flow, key)
    text: str = node.value
    if style == PLAIN:
        return [text]
    if style == SINGLE:
        return _single(text, indent).split("\n")
    if style == DOUBLE:
        return [_double(text)]
    return _block(node, style, indent)


def _flow(node: Node) -> str:
    if node.kind == SCALAR:
        return "\n".join(_scalar(node, True, False, ""))
    if node.kind == SEQ:
        return "[" + ", ".join(_flow(item) for item in node.value) + "]"
    return "{" + ", ".join(f"{_flow(key)}: {_flow(value)}" for key, value in node.value) + "}"


def _inline(node: Node) -> bool:
    """Written on the line of its key or dash: scalars, empty and flow collections."""
    return node.kind == SCALAR or not node.value or node.style == "flow"


def _key(node: Node) -> str:
    if node.kind == SCALAR:
        return "\n".join(_scalar(node, False, True, ""))
    return _flow(node)


def _emit(node: Node, col: int, out: list[str], prefix: str) -> None:
    """Append ``node`` written after ``prefix`` (the line so far: ``key:``, ``-`` or nothing); the keys or dashes
    of a block collection, and the lines of a block scalar, go at column ``col``."""
    if _inline(node):
        lines = _scalar(node, False, False, " " * max(col, 2)) if node.kind == SCALAR else [_flow(node)]
        out.append(f"{prefix} {lines[0]}" if prefix else lines[0])
        out.extend(lines[1:])
        return
    pad = " " * col
    nested_item = prefix.endswith("-")
    if prefix and not nested_item:
        out.append(prefix)
    if node.kind == MAP:
        for i, (key, value) in enumerate(node.value):
            head = f"{prefix} {_key(key)}:" if i == 0 and nested_item else f"{pad}{_key(key)}:"
            _emit(value, col + 2, out, head)
        return
    for i, item in enumerate(node.value):
        _emit(item, col + 2, out, f"{prefix} -" if i == 0 and nested_item else f"{pad}-")


def emit(documents: list[Node]) -> str:
    """The YAML stream of ``documents`` as yaml.v3's encoder writes it (``---`` between documents)."""
    out: list[str] = []
    for i, node in enumerate(documents):
        if i:
            out.append("---")
        _emit(node, 0, out, "")
    return "\n".join(out) + "\n" if out else ""


def marshal(value: Any) -> str:
    """AICR's ``MarshalYAMLDeterministic``: yaml.v3's text of ``value``, mapping keys sorted."""
    return emit([from_data(value)])
