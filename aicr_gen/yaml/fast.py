"""The fast path of loading: yaml-rs (a Rust YAML reader, several times faster than libyaml) reads the text when
it is in the subset where yaml-rs and libyaml agree; anything else, or no yaml-rs installed, is libyaml's."""

from __future__ import annotations

import functools
import re

from aicr_gen.yaml.bounds import MAX_DEPTH, MAX_NODES

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

# yaml-rs reads only text in the plain block style that machines (Go's yaml.v3, our dumper) write: one
# ``- `` / ``key:`` / ``key: value`` / ``- key: value`` per line, single-line scalars, no flow collections but
# ``[]`` and ``{}``, no tags, anchors, block scalars, tabs or directives. In that subset yaml-rs and libyaml
# agree (tests/test_yamlio.py checks them against each other); anything else goes to libyaml, as does
# anything yaml-rs refuses or fails on.
# a plain scalar starts with none of YAML's indicators, nor "_" / "=" / "<", nor a number spelt "0X1F", "0O17" or
# "0B1", which yaml-rs types and libyaml's resolver leaves strings
_SCALAR_START = r"""(?![-+]?0[XOB])(?:[^\s\-?:,\[\]{}#&*!|>'"%@`_=<]|-(?=\S))"""
_PLAIN_SCALAR = _SCALAR_START + r"(?:[^\n:#\t]++|:(?=\S)|(?<=\S)\#)*+(?<![\s:])"
_QUOTED = (r"""(?:'(?:[^'\n]++|'')*+'|"(?:[^"\\\n]++"""
           r"""|\\(?:["\\/0abefnrtvN_LP ]|x[0-9a-fA-F]{2}|u[0-9a-fA-F]{4}|U[0-9a-fA-F]{8}))*+")""")
_VALUE = rf"(?:{_PLAIN_SCALAR}|{_QUOTED}|\[\]|\{{\}})"
_LINE = (rf"(?:[ ]*+(?:-(?:[ ]++|(?=\n)))*+(?:(?:{_PLAIN_SCALAR}|{_QUOTED}):(?:[ ]+{_VALUE})?|(?<=- ){_VALUE})?"
         rf"(?:[ ]+\#[^\n]*)?|[ ]*\#[^\n]*)\n")
_ASCII_TEXT = bytes(range(0x20, 0x7F)) + b"\n"


@functools.cache
def _subset() -> re.Pattern[str]:
    """Compiled on first use (~2 ms): a cached recipe or bundle parses nothing."""
    # possessive and atomic: a line that fails is not tried again another way (no backtracking across lines)
    return re.compile(rf"(?:---\n)?(?>{_LINE})*+")


@functools.cache
def _not_libyaml_text() -> re.Pattern[str]:
    """What libyaml refuses, or takes for a line break, besides the C0 controls bar "\\n" (the tab is not in the
    subset); compiled on first use (~9 ms), for non-ASCII text only."""
    return re.compile(r"[^\n\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]")


def readable(text: str) -> bool:
    """Whether ``text`` is in the subset yaml-rs reads exactly like libyaml (see above)."""
    if text.isascii():
        if text.encode("ascii").translate(None, delete=_ASCII_TEXT):
            return False
    elif _not_libyaml_text().search(text):
        return False
    return text.endswith("\n") and _subset().fullmatch(text) is not None


_PLAIN = (str, int, float, bool, type(None))


def load(text: str) -> dict[str, Any] | None:
    """The document read by yaml-rs (several times faster than libyaml) when the result is sure to be the one
    libyaml and ``aicr_gen.yaml.load`` give; None when libyaml must read it (or yaml-rs is not installed)."""
    if not readable(text):
        return None
    try:
        from yaml_rs import DuplicateKeyPolicy, loads
    except ImportError:
        return None
    try:
        data = loads(text, parse_datetime=False, duplicate_key_policy=DuplicateKeyPolicy.Error)
    except Exception:  # whatever yaml-rs cannot read, libyaml reads or refuses with its line
        return None
    return data if type(data) is dict and _plain_tree(data) else None


def _plain_tree(data: dict[str, Any]) -> bool:
    """Within MAX_NODES and MAX_DEPTH, string keys only (no merge key), plain scalars, mappings and lists."""
    nodes, depth = 1, 0
    level: list[Any] = [data]
    while level:
        below: list[Any] = []
        for value in level:
            kind = type(value)
            if kind is dict:
                if any(type(key) is not str or key == "<<" for key in value):
                    return False
                below.extend(value.values())
            elif kind is list:
                below.extend(value)
            elif kind not in _PLAIN:
                return False
        nodes += len(below)
        depth += 1
        if nodes > MAX_NODES or (below and depth > MAX_DEPTH):
            return False
        level = below
    return True


@functools.lru_cache(maxsize=8192)
def mappings(data: bytes) -> tuple[dict[str, Any], ...]:
    """The mappings of a YAML stream, read once per content (the two sides of a merge, a fleet's trees, share most
    files): yaml-rs where the text is one document in its subset (``load``), else libyaml. Shared: callers never
    change them. ``YAMLError`` where it is not YAML."""
    from aicr_gen.yaml.foreign import load_all

    text = data.decode(errors="replace")
    if "\n---" not in text and not text.startswith("---") and (quick := load(text)) is not None:
        return (quick,)
    return tuple(doc for doc in load_all(data) if isinstance(doc, dict))
