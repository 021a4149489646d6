"""Parsing with cel-python's parser: syntax errors, the nesting limit and literal values."""

from __future__ import annotations

import functools
import hashlib
import os
import sys
from pathlib import Path
from typing import Any

from aicr_gen.certify.cel.errors import CelCompileError, CelLimitError
from aicr_gen.certify.cel.values import INT64_MAX, INT64_MIN, UINT64_MAX, _uint_type

_SAVED_PARSER = "cel-parser.pickle"


@functools.cache
def cel_parser() -> Any:
    """cel-python's parser, its Lark LALR tables loaded from the aicr-gen cache when the same grammar, cel-python
    parser module, lark and Python saved them: building the tables takes ~0.3 s, a third of ``rules test`` on
    10,000 events. Every cel-python ``CELParser`` (and ``celpy.Environment``) shares the loaded one."""
    import lark
    from celpy import celparser

    if celparser.CELParser.CEL_PARSER is None:
        key = hashlib.sha256()
        for source in (Path(celparser.__file__), Path(celparser.__file__).parent / "cel.lark"):
            key.update(source.read_bytes())
        key.update(f"{lark.__version__} {sys.version}".encode())
        celparser.CELParser.CEL_PARSER = _saved_parser(key.hexdigest().encode())
    return celparser.CELParser()


def _saved_parser(key: bytes) -> Any:
    """The Lark parser saved under ``key``, else a new one (built by cel-python, so with its options), saved
    for the next run. The cache folder is the user's own, like the catalog cache; an entry that does not load
    is rebuilt and replaced, one that cannot be written is skipped."""
    import pickle

    from celpy.celparser import CELParser

    from aicr_gen.catalog import cache

    where = cache.folder()
    saved = None if where is None else _load_parser(where / _SAVED_PARSER, key)
    if saved is not None:
        return saved
    CELParser()
    built: Any = CELParser.CEL_PARSER
    if where is not None:
        tmp = where / f".{_SAVED_PARSER}.{os.getpid()}.tmp"
        try:
            where.mkdir(parents=True, exist_ok=True)
            with tmp.open("wb") as out:
                out.write(key + b"\n")
                built.save(out)
            tmp.replace(where / _SAVED_PARSER)
        except (OSError, pickle.PicklingError):
            tmp.unlink(missing_ok=True)
    return built


def _load_parser(path: Path, key: bytes) -> Any:
    from lark import Lark

    try:
        with path.open("rb") as saved:
            return Lark.load(saved) if saved.readline().rstrip(b"\n") == key else None
    except Exception:  # missing, truncated or unreadable: None, so it is built again
        return None


def _parse(text: str) -> Any:
    from celpy.celparser import CELParseError

    try:
        return cel_parser().parse(text)
    except CELParseError as err:
        context = str(err.args[0]).strip().splitlines()[0] if err.args else ""
        where = f"line {err.line}, column {err.column}" if err.line else "the expression"
        raise CelCompileError(f"syntax error at {where}: {context.strip()!r}") from None
    except RecursionError:
        raise CelLimitError("the expression nests too deeply to parse") from None
    except Exception as err:  # lark's other errors (e.g. an unexpected end of input)
        first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
        raise CelCompileError(f"syntax error: {first}") from None


_CHAINS = frozenset(("conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary"))


def _continues_chain(parent: str, child: str) -> bool:
    """True when ``child`` continues a left-associative chain (``a || b || c``, ``!!x``): those compile to
    loops, so they do not count as nesting."""
    base = parent.split("_", maxsplit=1)[0]
    return ((parent in _CHAINS and (child == parent or child.startswith(parent + "_")))
            or (parent != base and base in _CHAINS and child == base))


def _check_depth(tree: Any, limit: int) -> None:
    from lark import Tree

    stack = [(tree, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > limit:
            raise CelLimitError(f"the expression nests too deeply (parse depth over {limit}); flatten it")
        stack.extend((child, depth + (0 if _continues_chain(node.data, child.data) else 1))
                     for child in node.children if isinstance(child, Tree))


def _literal(token: Any) -> Any:
    from celpy.evaluation import celbytes, celstr

    kind, text = token.type, token.value
    try:
        if kind == "INT_LIT":
            sign = -1 if text.startswith("-") else 1
            body = text.lstrip("-")
            value = sign * (int(body[2:], 16) if body[:2].lower() == "0x" else int(body))
            if not INT64_MIN <= value <= INT64_MAX:
                raise CelCompileError(f"integer literal {text} is out of the int64 range")
            return value
        if kind == "UINT_LIT":
            body = text[:-1]
            value = int(body[2:], 16) if body[:2].lower() == "0x" else int(body)
            if not 0 <= value <= UINT64_MAX:
                raise CelCompileError(f"unsigned literal {text} is out of the uint64 range")
            return _uint_type()(value)
        if kind == "FLOAT_LIT":
            return float(text)
        if kind in ("STRING_LIT", "MLSTRING_LIT"):
            return str(celstr(token))
        if kind == "BYTES_LIT":
            return bytes(celbytes(token))
        if kind == "BOOL_LIT":
            return text == "true"
        if kind == "NULL_LIT":
            return None
    except (ValueError, OverflowError) as err:
        raise CelCompileError(f"invalid literal {text[:40]!r}: {err}") from None
    raise CelCompileError(f"unsupported literal {text[:40]!r}")
