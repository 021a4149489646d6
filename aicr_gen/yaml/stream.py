"""A YAML stream of ``---``-separated documents, each loaded by itself as strictly as a file.

The stream is cut with PyYAML's event API (libyaml's parser where PyYAML has it): a document's text runs from
the end of its start marker to its end event, and is padded with newlines and spaces to its place, so that the
load of it reports the stream's lines. A document that is empty (no node, or only comments) is skipped."""

from __future__ import annotations

from collections.abc import Iterator

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml.load import Document, load_text

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_stream(text: str, source: str) -> list[Document]:
    """Every non-empty document of ``text``, in order; ``InvalidInputError`` with ``source:line`` where the stream
    is not YAML, or where a document fails ``load_text``."""
    import yaml
    from yaml.events import DocumentEndEvent, DocumentStartEvent, ScalarEvent

    pieces: list[str] = []
    start: Any = None
    content: list[Any] = []
    events: Iterator[Any] = yaml.parse(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    try:
        for event in events:
            if isinstance(event, DocumentStartEvent):
                start, content = event.end_mark, []
            elif isinstance(event, DocumentEndEvent):
                end: Any = event.start_mark
                empty = len(content) == 1 and isinstance(content[0], ScalarEvent) and content[0].value == "" \
                    and content[0].tag is None and not content[0].style
                if not empty:
                    pieces.append("\n" * start.line + " " * start.column + text[start.index:end.index])
            elif len(content) < 2:
                content.append(event)
    except yaml.MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        line, column = (mark.line + 1, mark.column + 1) if mark else (1, None)
        problem = err.problem or err.context or "not YAML"
        raise InvalidInputError.at(Located(source, line, f"invalid YAML: {problem}", column=column)) from None
    return [load_text(piece, source) for piece in pieces]
