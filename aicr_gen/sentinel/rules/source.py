"""Reading input files (JSON or YAML, a file or a folder) and naming places and values in them for
error messages."""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml import Document, FieldPath, decode, format_path, load_stream, load_text, shorten

Where = Callable[[FieldPath], str]


def _under(where: Where, *prefix: str | int) -> Where:
    """``where`` for paths below ``prefix``."""
    def inner(path: FieldPath) -> str:
        return where((*prefix, *path))

    return inner


class _Source:
    """A loaded file, plus how to name a field path in it (``file:line: path`` when lines are known). A YAML
    file of several documents has their roots as a list in ``data`` (``multi``; paths start with the index)."""

    def __init__(self, name: str, data: Any, doc: Document | None = None, prefix: str = "",
                 multi: bool = False) -> None:
        self.name = name
        self.data = data
        self.doc = doc
        self.prefix = prefix
        self.multi = multi

    def documents(self) -> list[tuple[FieldPath, Any]]:
        """``(path of the root, root)`` of every document: one, unless the file holds several."""
        return [((index,), data) for index, data in enumerate(self.data)] if self.multi else [((), self.data)]

    def where(self, path: FieldPath) -> str:
        if self.doc is not None:
            return self.doc.where(path)
        if not path:
            return f"{self.name}: {self.prefix}".rstrip(": ") if self.prefix else self.name
        return f"{self.name}: {self.prefix}{format_path(path)}"

    def error(self, path: FieldPath, message: str) -> InvalidInputError:
        """An input error about ``path`` (``where``)."""
        if self.doc is not None:
            return self.doc.error(path, message)
        return InvalidInputError(f"{self.where(path)}: {message}")


def _no_duplicates(name: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)  # built in C; only a shorter dict means a duplicate, which is then looked for
        if len(out) != len(pairs):
            seen: set[str] = set()
            for key, _value in pairs:
                if key in seen:
                    raise InvalidInputError(f"{name}: duplicate key {key!r} in a JSON object; keep one")
                seen.add(key)
        return out

    return hook


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not valid JSON")


def _parse_file(raw: bytes, name: str) -> _Source:
    """JSON (fast path, any root) or YAML (one document, any root)."""
    text = decode(raw, name)
    if name.endswith(".json"):
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates(name), parse_constant=_reject_constant)
        except json.JSONDecodeError as err:
            raise InvalidInputError.at(Located(name, err.lineno, f"invalid JSON: {err.msg}", column=err.colno)) \
                from None
        except ValueError as err:
            raise InvalidInputError(f"{name}: invalid JSON: {err}") from None
        except RecursionError:
            raise InvalidInputError(f"{name}: JSON nested too deeply") from None
        return _Source(name, data)
    if _DOCUMENT_MARKER.search(text):
        return _documents(text, name)
    doc = load_text(text, name)
    return _Source(name, doc.data, doc)


_DOCUMENT_MARKER = re.compile(r"^(---|\.\.\.)(\s|$)", re.MULTILINE)


def _documents(text: str, name: str) -> _Source:
    """A YAML stream of one or more ``---``-separated documents (empty ones skipped). Each document is loaded
    by itself, as strictly as any file, from its own text padded to its place, so errors keep their lines."""
    docs = load_stream(text, name)
    if not docs:
        raise InvalidInputError.at(Located(name, 1, "the file holds no YAML document", fix="give one or more"))
    if len(docs) == 1:
        return _Source(name, docs[0].data, docs[0])
    lines = {(index, *path): line for index, doc in enumerate(docs) for path, line in doc.lines.items()}
    return _Source(name, [doc.data for doc in docs], Document(name, [doc.data for doc in docs], lines), multi=True)


def _files(root: Path, label: str) -> list[tuple[str, Path]]:
    """``(name, path)`` of the JSON/YAML files under ``root`` sorted by name, or of ``root`` itself."""
    if root.is_dir():
        found = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*")
                       if p.is_file() and p.suffix in (".json", ".yaml", ".yml")
                       and not any(part.startswith(".") for part in p.relative_to(root).parts))
        if not found:
            raise InvalidInputError(f"{label} {root}: no .json, .yaml or .yml files in the folder")
        return found
    if not root.exists():
        raise InvalidInputError(f"{label} {root}: no such file or folder")
    return [(root.name, root)]


def _get(data: Any, path: FieldPath) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return None
            data = data[part]
        else:
            if not isinstance(data, Mapping) or part not in data:
                return None
            data = data[part]
    return data


def _expect_type(source: _Source, path: FieldPath, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise source.error(path, f"must be {what}, not {_describe(value)}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {shorten(repr(value))}"
    if isinstance(value, list):
        return "a list"
    return "a mapping" if isinstance(value, Mapping) else f"a {type(value).__name__}"


def _suggest(name: str, options: Iterable[str]) -> str:
    folded = {option.lower(): option for option in options}
    if name.replace("_", "").lower() in folded:
        return f"; did you mean {folded[name.replace('_', '').lower()]!r}?"
    close = difflib.get_close_matches(name, list(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""
