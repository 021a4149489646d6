"""What ``lint`` and ``verify`` found, per file, and its ``--format json`` shape (documented in their --help;
keys are only ever added)::

    {"ok": BOOL, "files": [{"file": PATH, "ok": BOOL,
       "errors": [{"file": PATH, "line": INT|null, "path": FIELD|null, "message": TEXT, "policy": NAME|null}],
       "warnings": [...]}]}
"""

from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, field
from typing import Any

from aicr_gen.errors import AicrGenError
from aicr_gen.located import Located, format_path

# ``file:line: field.path: message`` (or ``file:line: message``): how an error still built as text, not from
# ``Located`` problems, names its place (``from_error``), such as a rule set's place in an NVSentinel rules file
# (``file:line: path ('name')``, ``sentinel/rules/config.py``).
_WHERE = re.compile(r"^(?P<file>[^\n:]+):(?P<line>\d+): (?:(?P<path>[\w.\[\]/-]+|\(document root\)): )?"
                    r"(?P<message>.*)\Z", re.DOTALL)


@dataclass(frozen=True)
class Problem:
    """One error or warning: where (file, line and field path, when known) and what."""

    file: str
    line: int | None
    path: str | None
    message: str
    policy: str | None = None

    @classmethod
    def of(cls, located: Located) -> Problem:
        """A located problem of an input error (no policy): its fields, the message with its fix."""
        return cls(located.file, located.line, None if located.path is None else format_path(located.path),
                   located.about())

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "line": self.line, "path": self.path, "message": self.message,
                "policy": self.policy}

    def report(self, severity: str) -> str:
        """``lint``'s line: ``file:line:col: severity [policy] path: message``, the format of compilers and
        linters that editors, ``grep`` and CI problem matchers read. A problem of no policy is ``[input]`` (the
        file or a value in it is invalid); one of no known line is at ``1:1``; the column is the offending
        key's (a list item's ``-``). One line, whatever a file name or message holds (``oneline``)."""
        from aicr_gen.text.oneline import one_line

        line = self.line or 1
        where = f"{self.file}:{line}:{_column(self.file, line, self.path)}"
        about = f"{self.path}: " if self.path else ""
        return one_line(f"{where}: {severity} [{self.policy or 'input'}] {about}{self.message}")

    def text(self) -> str:
        """The one-line message: ``file:line: path: message`` (as far as known)."""
        where = f"{self.file}:{self.line}: " if self.line is not None else ""
        return f"{where}{self.path}: {self.message}" if where and self.path else f"{where}{self.message}"


@functools.cache
def _lines_of(file: str) -> tuple[str, ...]:
    try:
        with open(file, encoding="utf-8", errors="replace") as handle:  # noqa: PTH123 - a plain text read
            return tuple(handle.read().splitlines())
    except OSError:
        return ()


def _column(file: str, line: int, path: str | None) -> int:
    """The 1-based column of ``path``'s last key (``key:``, quoted or not) or list item (``- ``) on ``line`` of
    ``file``; else of the line's first character; 1 when the file or line cannot be read."""
    lines = _lines_of(file)
    if not 0 < line <= len(lines):
        return 1
    text = lines[line - 1]
    found = re.search(r"-(?=\s|$)", text) if (path or "").endswith("]") else None
    parts = (path or "").split(".")
    for start in range(len(parts) if found is None and path else 0):  # a key may hold dots: the longest first
        key = re.escape(".".join(parts[start:]))
        found = re.search(rf"""(?<![\w.-])["']?{key}["']?\s*:(?=\s|$)""", text)
        if found is not None:
            break
    if found is None:
        found = re.search(r"\S", text)
    return found.start() + 1 if found else 1


def from_error(err: Exception, file: str) -> list[Problem]:
    """An error as problems: each ``Located`` problem it was built from (``AicrGenError.at``), from its fields;
    an error built as text is one problem, at the place its message starts with, else about ``file``."""
    if isinstance(err, AicrGenError) and err.problems:
        return [Problem.of(problem) for problem in err.problems]
    message = str(err)
    found = _WHERE.match(message)
    if found is None:
        return [Problem(file, None, None, message)]
    return [Problem(found["file"], int(found["line"]), found["path"], found["message"])]


@dataclass
class FileResult:
    """Everything found about one checked file (a ClusterSpec, a bundle folder)."""

    file: str
    errors: list[Problem] = field(default_factory=list)
    warnings: list[Problem] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.errors

    def as_dict(self) -> dict[str, Any]:
        return {"file": self.file, "ok": self.ok, "errors": [p.as_dict() for p in self.errors],
                "warnings": [p.as_dict() for p in self.warnings]}


def to_json(results: list[FileResult]) -> str:
    """The ``--format json`` document."""
    return json.dumps({"ok": all(result.ok for result in results), "files": [r.as_dict() for r in results]},
                      indent=2) + "\n"
