"""A document layered from several files (a ClusterSpec over its Fleet): where each value was written."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import NamedTuple

from aicr_gen.located import Located
from aicr_gen.yaml import Document, FieldPath, format_path


class Origin(NamedTuple):
    """Where a value of the effective spec was written: file, line, and the text as written there when
    layering rewrote it (a fleet path rebased onto the cluster's folder)."""

    source: str
    line: int
    written: str | None = None

    def __str__(self) -> str:
        return f"{self.source}:{self.line}"


class Origins(Mapping[FieldPath, int]):
    """The line of every field path of an effective spec (a ``Document``'s ``lines``), and its file."""

    def __init__(self, origins: Mapping[FieldPath, Origin]) -> None:
        self.origins = dict(origins)

    def __getitem__(self, path: FieldPath) -> int:
        return self.origins[path].line

    def __iter__(self) -> Iterator[FieldPath]:
        return iter(self.origins)

    def __len__(self) -> int:
        return len(self.origins)


class Layered(Document):
    """An effective spec: the layered data, each value's origin in ``lines`` (an ``Origins``); ``source`` is
    the cluster file, ``where`` names the file a value came from."""

    def origin(self, path: FieldPath) -> Origin:
        """The origin of ``path`` or of its nearest recorded ancestor."""
        origins = self.lines.origins if isinstance(self.lines, Origins) else {}
        for end in range(len(path), -1, -1):
            found = origins.get(tuple(path[:end]))
            if found is not None:
                return found
        return Origin(self.source, 1)

    def line_of(self, path: FieldPath) -> int:
        return self.origin(path).line

    def where(self, path: FieldPath) -> str:
        return f"{self.origin(path)}: {format_path(path)}"

    def located(self, path: FieldPath, message: str, fix: str | None = None) -> Located:
        """``message`` about ``path``, at the file and line the value was written (``origin``)."""
        origin = self.origin(path)
        return Located(origin.source, origin.line, message, path, fix=fix)


def origin_of(doc: Document, path: FieldPath) -> Origin:
    """Where ``path`` of a loaded document (layered or not) was written."""
    return doc.origin(path) if isinstance(doc, Layered) else Origin(doc.source, doc.line_of(path))
