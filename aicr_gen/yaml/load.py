"""Strict, bounded YAML loading with file:line errors.

Loading reads machine-written block YAML with yaml-rs when the text is in the subset where it and libyaml
agree (``aicr_gen/yaml/fast.py``); otherwise it composes the node graph with libyaml (PyYAML's C parser and
composer) and builds plain Python values from it ourselves, so that we control every rule: one document, a
mapping root, no duplicate keys, no custom tags or merge keys, and a hard bound on alias expansion (billion
laughs, ``aicr_gen/yaml/bounds.py``). The line of every field path is found when a message needs it, by
building again with lines, so that validation errors can point at ``file:line``.
"""

from __future__ import annotations

import functools
import gc
import math
import re
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import FieldPath, Located, format_path
from aicr_gen.yaml import fast
from aicr_gen.yaml.bounds import MAX_ALIASES, MAX_BYTES, MAX_DEPTH, MAX_NODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_FLOAT = "tag:yaml.org,2002:float"
_BOOL = "tag:yaml.org,2002:bool"
_NULL = "tag:yaml.org,2002:null"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"
_MERGE = "tag:yaml.org,2002:merge"
_KEPT_AS_TEXT = {"tag:yaml.org,2002:timestamp", "tag:yaml.org,2002:binary"}


def shorten(text: str, limit: int = 60) -> str:
    """``text`` cut to ``limit`` characters for a message."""
    return text if len(text) <= limit else text[:limit - 3] + "..."


class Document(NamedTuple):
    """A loaded YAML/JSON document: plain data plus the line of every field path."""

    source: str
    data: Any
    lines: Mapping[FieldPath, int] = MappingProxyType({})

    def line_of(self, path: FieldPath) -> int:
        """The line of ``path`` or of its nearest recorded ancestor."""
        for end in range(len(path), -1, -1):
            line = self.lines.get(tuple(path[:end]))
            if line is not None:
                return line
        return 1

    def where(self, path: FieldPath) -> str:
        """``file:line: field.path`` for messages."""
        return f"{self.source}:{self.line_of(path)}: {format_path(path)}"

    def located(self, path: FieldPath, message: str, fix: str | None = None) -> Located:
        """``message`` about ``path``, at the place ``where`` names."""
        return Located(self.source, self.line_of(path), message, path, fix=fix)

    def error(self, path: FieldPath, message: str) -> InvalidInputError:
        """An input error: ``message`` about ``path`` (``located``)."""
        return InvalidInputError.at(self.located(path, message))


def _fail(source: str, line: int, message: str, column: int | None = None) -> InvalidInputError:
    return InvalidInputError.at(Located(source, line, message, column=column))


def decode(raw: bytes, source: str) -> str:
    """UTF-8 text of ``raw`` (a BOM is dropped); anything else is an input error with its line."""
    if len(raw) > MAX_BYTES:
        raise _fail(source, 1, f"file is {len(raw)} bytes, over the {MAX_BYTES} byte limit; split it")
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        line = raw.count(b"\n", 0, err.start) + 1
        raise _fail(source, line, f"not valid UTF-8 (byte {err.start}); save the file as UTF-8") from None


class _Builder:
    """Turns a composed node graph into plain values, bounded and with line numbers."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.lines: dict[FieldPath, int] = {}
        self.nodes = 0
        self.aliases = 0
        self.seen: set[int] = set()

    def build(self, node: Any, path: FieldPath) -> Any:
        if len(path) > MAX_DEPTH:
            raise _fail(self.source, node.start_mark.line + 1,
                        f"nesting deeper than {MAX_DEPTH} levels at {format_path(path[:3])}...; flatten the data")
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise _fail(self.source, node.start_mark.line + 1,
                        f"document expands to more than {MAX_NODES} nodes (alias bomb?); remove the aliases")
        if id(node) in self.seen and node.id != "scalar":
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                raise _fail(self.source, node.start_mark.line + 1,
                            f"more than {MAX_ALIASES} alias references; write the values out instead")
        self.seen.add(id(node))
        self.lines.setdefault(path, node.start_mark.line + 1)
        if node.id == "mapping":
            return self._mapping(node, path)
        if node.id == "sequence":
            if node.tag != _SEQ:
                raise self._tag_error(node)
            return [self.build(item, (*path, i)) for i, item in enumerate(node.value)]
        return self._scalar(node)

    def _tag_error(self, node: Any) -> InvalidInputError:
        return _fail(self.source, node.start_mark.line + 1,
                     f"unsupported YAML tag {node.tag!r}; remove the tag")

    def _mapping(self, node: Any, path: FieldPath) -> dict[str, Any]:
        if node.tag != _MAP:
            raise self._tag_error(node)
        out: dict[str, Any] = {}
        for key_node, value_node in node.value:
            line = key_node.start_mark.line + 1
            if key_node.tag == _MERGE:
                raise _fail(self.source, line, "YAML merge keys (<<) are not supported; write the keys out")
            if key_node.id != "scalar":
                raise _fail(self.source, line, "mapping keys must be plain scalars")
            key = str(key_node.value)
            child = (*path, key)
            if key in out:
                raise _fail(self.source, line,
                            f"duplicate key {key!r} in {format_path(path)} (first at line "
                            f"{self.lines[child]}); keep one")
            self.lines[child] = line
            out[key] = self.build(value_node, child)
        return out

    def _scalar(self, node: Any) -> Any:
        tag, text = node.tag, node.value
        if tag == _STR or tag in _KEPT_AS_TEXT:
            return text
        try:
            return _typed(tag, text)
        except ValueError:
            raise _fail(self.source, node.start_mark.line + 1,
                        f"{shorten(repr(text))} is not a valid {tag.rsplit(':', 1)[-1]} (or is too large); "
                        "quote it or fix the value") from None
        except KeyError:
            raise self._tag_error(node) from None


class _Retry(Exception):
    """The quick build met something to refuse; the precise build finds it again and words the message."""


def _quick_build(root: Any) -> Any:
    """``_Builder(...).build(root, ())`` without recording lines, about twice as fast; raises ``_Retry`` wherever
    the precise build would raise an error (same bounds, tags and duplicate keys)."""
    nodes = 1
    aliases = 0
    seen: set[int] = set()

    def scalar(node: Any) -> Any:
        tag = node.tag
        if tag == _STR or tag in _KEPT_AS_TEXT:
            return node.value
        try:
            return _typed(tag, node.value)
        except (ValueError, KeyError):
            raise _Retry from None

    def build(node: Any, depth: int) -> Any:
        nonlocal nodes, aliases
        kind = node.id
        if kind == "scalar":
            return scalar(node)
        children = node.value
        # the children of a container at MAX_DEPTH are too deep
        if depth >= MAX_DEPTH and children:
            raise _Retry
        nodes += len(children)
        if nodes > MAX_NODES:
            raise _Retry
        if id(node) in seen:
            aliases += 1
            if aliases > MAX_ALIASES:
                raise _Retry
        seen.add(id(node))
        below = depth + 1
        if kind == "sequence":
            if node.tag != _SEQ:
                raise _Retry
            return [build(item, below) for item in children]
        if node.tag != _MAP:
            raise _Retry
        out: dict[str, Any] = {}
        for key_node, value_node in children:
            if key_node.id != "scalar" or key_node.tag == _MERGE:
                raise _Retry
            key = str(key_node.value)
            if key in out:
                raise _Retry
            out[key] = (value_node.value if value_node.tag == _STR and value_node.id == "scalar"
                        else build(value_node, below))
        return out

    return build(root, 0)


class _Lines(Mapping[FieldPath, int]):
    """The line of every field path, found by composing the text again on first use: only messages need them."""

    def __init__(self, text: str, source: str) -> None:
        self._text, self._source = text, source
        self._table: dict[FieldPath, int] | None = None

    def _lines(self) -> dict[FieldPath, int]:
        if self._table is None:
            builder = _Builder(self._source)
            builder.build(_compose(self._text, self._source), ())
            self._table = builder.lines
        return self._table

    def __getitem__(self, path: FieldPath) -> int:
        return self._lines()[path]

    def __iter__(self) -> Iterator[FieldPath]:
        return iter(self._lines())

    def __len__(self) -> int:
        return len(self._lines())


def _typed(tag: str, text: str) -> Any:
    if tag == _NULL:
        if text not in ("", "~", "null", "Null", "NULL"):
            raise ValueError(text)
        return None
    if tag == _BOOL:
        lowered = text.lower()
        if lowered not in ("true", "false"):
            raise ValueError(text)
        return lowered == "true"
    if tag == _INT:
        return _to_int(text)
    if tag == _FLOAT:
        return _to_float(text)
    raise KeyError(tag)


def _to_int(text: str) -> int:
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-").replace("_", "")
    if body[:2] in ("0x", "0X"):
        return sign * int(body[2:], 16)
    if body[:2] in ("0o", "0O"):
        return sign * int(body[2:], 8)
    if body[:2] in ("0b", "0B"):
        return sign * int(body[2:], 2)
    return sign * int(body, 10)


def _to_float(text: str) -> float:
    lowered = text.lower()
    if lowered.endswith(".inf"):
        return -math.inf if lowered.startswith("-") else math.inf
    if lowered == ".nan":
        return math.nan
    return float(text.replace("_", ""))


# The YAML 1.2 core schema as ruamel.yaml resolves it (our reference reader, see tests/test_yamlio.py): plain
# scalars only; "yes"/"on"/"012"-as-octal and sexagesimals are YAML 1.1 and stay strings or decimals.
_IMPLICIT_1_2: tuple[tuple[str, str, str], ...] = (
    (_BOOL, "tTfF", r"(?:true|True|TRUE|false|False|FALSE)\Z"),
    (_FLOAT, "-+0123456789.", r"""(?:[-+]?[0-9][0-9_]*\.[0-9_]*(?:[eE][-+]?[0-9]+)?
        |[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+
        |[-+]?\.[0-9_]+(?:[eE][-+][0-9]+)?
        |[-+]?\.(?:inf|Inf|INF)
        |\.(?:nan|NaN|NAN))\Z"""),
    (_INT, "-+0123456789", r"(?:[-+]?0b[0-1_]+|[-+]?0o?[0-7_]+|[-+]?[0-9_]+|[-+]?0x[0-9a-fA-F_]+)\Z"),
    (_MERGE, "<", r"<<\Z"),
    (_NULL, "~nN", r"(?:~|null|Null|NULL)\Z"),
    ("tag:yaml.org,2002:timestamp", "0123456789", r"""(?:[0-9]{4}-[0-9]{2}-[0-9]{2}
        |[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[Tt]|[ \t]+)[0-9]{1,2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]*)?
        (?:[ \t]*(?:Z|[-+][0-9]{1,2}(?::[0-9]{2})?))?)\Z"""),
    ("tag:yaml.org,2002:value", "=", r"=\Z"),
)


@functools.cache
def composer_class() -> type:
    """A libyaml parser + composer (PyYAML's C extension, or its pure-Python twin where a PyYAML build has
    no libyaml) whose tags follow ``_IMPLICIT_1_2``; built once, on first use."""
    import yaml
    from yaml.nodes import ScalarNode, SequenceNode

    resolvers: dict[str, list[tuple[str, re.Pattern[str]]]] = {}
    for tag, first, pattern in _IMPLICIT_1_2:
        compiled = re.compile(pattern, re.X)
        for char in first:
            resolvers.setdefault(char, []).append((tag, compiled))
    try:
        from yaml._yaml import CParser as Base
    except ImportError:
        class Base(yaml.reader.Reader, yaml.scanner.Scanner, yaml.parser.Parser,  # type: ignore[no-redef]
                   yaml.composer.Composer):
            def __init__(self, stream: str) -> None:
                yaml.reader.Reader.__init__(self, stream)
                yaml.scanner.Scanner.__init__(self)
                yaml.parser.Parser.__init__(self)
                yaml.composer.Composer.__init__(self)

            def dispose(self) -> None:
                """Nothing to free."""

    class Composer(Base):
        def descend_resolver(self, parent: Any, index: Any) -> None:
            """No path resolvers."""

        def ascend_resolver(self) -> None:
            """No path resolvers."""

        def resolve(self, kind: type, value: str | None, implicit: tuple[bool, bool] | bool) -> str:
            if kind is ScalarNode:
                if isinstance(implicit, tuple) and implicit[0] and value is not None:
                    if not value:
                        return _NULL
                    for tag, pattern in resolvers.get(value[0], ()):
                        if pattern.match(value):
                            return tag
                return _STR
            return _SEQ if kind is SequenceNode else _MAP

    return Composer


def _compose(text: str, source: str) -> Any:
    """The node graph of the one document in ``text``."""
    from yaml import MarkedYAMLError, YAMLError

    composer = composer_class()(text)
    try:
        node = composer.get_single_node()
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark is not None else (1, None)
        problem = err.problem or err.context or "invalid YAML"
        raise _fail(source, line, f"invalid YAML: {problem}", column) from None
    except YAMLError as err:
        raise _fail(source, 1, f"invalid YAML: {err}") from None
    finally:
        composer.dispose()
    if node is None:
        raise _fail(source, 1, "the document is empty; a mapping is expected")
    return node


def load_text(text: str, source: str) -> Document:
    """Parse one YAML (or JSON) document strictly; lines are looked up again only when a message needs one."""
    # Loading allocates an object per value and none of them can form a cycle: collections found nothing to
    # free and cost ~15% of loading a large snapshot.
    collecting = gc.isenabled()
    gc.disable()
    try:
        return _load(text, source)
    finally:
        if collecting:
            gc.enable()


def _load(text: str, source: str) -> Document:
    quick = fast.load(text)
    if quick is not None:
        return Document(source=source, data=quick, lines=_Lines(text, source))
    node = _compose(text, source)
    try:
        return Document(source=source, data=_quick_build(node), lines=_Lines(text, source))
    except _Retry:
        builder = _Builder(source)
        data = builder.build(node, ())
        return Document(source=source, data=data, lines=builder.lines)


def load_bytes(raw: bytes, source: str) -> Document:
    """Decode and parse; the root must be a mapping."""
    doc = load_text(decode(raw, source), source)
    if not isinstance(doc.data, dict):
        kind = type(doc.data).__name__
        raise _fail(source, 1, f"the document root is a {kind}; a mapping (key: value) is expected")
    return doc
