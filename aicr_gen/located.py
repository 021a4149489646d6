"""A problem at a place in a file (``Located``: file, line, column, field path, message, fix), the value input
errors are built from (``AicrGenError.at``), and field paths written the way users write them.

Apart from ``errors.py`` so that the CLI's start-up, which imports that, builds no record class.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from aicr_gen.records import NamedTuple

FieldPath = tuple[str | int, ...]
"""A field path in a document: ``("spec", "componentRefs", 2, "name")``."""


def format_path(path: FieldPath) -> str:
    """Render a field path the way users write it: ``spec.componentRefs[2].name``."""
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else part
    return out or "(document root)"


class Located(NamedTuple):
    """One problem at a place in a file: ``file:line: field.path: message; fix`` (``text``; the path when known,
    the fix when given apart). ``column`` is 1-based, when known; the text does not show it."""

    file: str
    line: int
    message: str
    path: FieldPath | None = None
    column: int | None = None
    fix: str | None = None

    def text(self) -> str:
        """The message as users read it: ``file:line: field.path: message; fix``."""
        where = f"{self.file}:{self.line}: " + ("" if self.path is None else f"{format_path(self.path)}: ")
        return where + self.about()

    def about(self) -> str:
        """What is wrong and what to do, without the place: ``message; fix``."""
        return self.message if self.fix is None else f"{self.message}; {self.fix}"
