"""YAML that others write (rendered manifests, charts, the values of a tree), read as PyYAML's safe loader reads
it: any root, any number of documents, none of ``load.py``'s bounds or lines. Used where aicr-gen looks into a
file rather than takes it as an input, so that a file it cannot read is skipped or named by the caller.

``libyaml=False`` keeps PyYAML's pure-Python reader where a caller has always used it."""

from __future__ import annotations

from collections.abc import Iterator

import yaml
from yaml import YAMLError
from yaml.nodes import Node

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["YAMLError", "compose_all", "load_all", "load_one"]

_LIBYAML: type[yaml.SafeLoader] | type[yaml.CSafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _loader(libyaml: bool) -> Any:
    return _LIBYAML if libyaml else yaml.SafeLoader


def load_all(data: str | bytes, *, libyaml: bool = True) -> Iterator[Any]:
    """Every document of ``data``, read as it is iterated; ``YAMLError`` where it is not YAML."""
    return yaml.load_all(data, Loader=_loader(libyaml))


def load_one(data: str | bytes, *, libyaml: bool = True) -> Any:
    """The one document of ``data`` (None when empty); ``YAMLError`` where it is not YAML or holds several."""
    return yaml.load(data, Loader=_loader(libyaml))


def compose_all(text: str) -> Iterator[Node]:
    """The node graph of every document of ``text`` (libyaml's where PyYAML has it)."""
    return yaml.compose_all(text, Loader=_LIBYAML)
