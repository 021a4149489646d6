"""Standard output and error that no CI runner reads as a workflow command.

The GitHub Actions runner reads every line a step prints, on standard output and standard error alike, and runs
it as a workflow command (``::add-mask::``, ``::stop-commands::``, ``::error ...``, ``::set-output``...) when

- the line, its leading white space trimmed, starts with ``::`` (``ActionCommand.TryParseV2`` in
  actions/runner src/Runner.Common/ActionCommand.cs: ``message.TrimStart()`` then ``StartsWith("::")``), or
- it holds ``##[`` anywhere (``ActionCommand.TryParse``, the older form, still tried after it by
  ``ActionCommandManager.TryProcessCommand``);

and a line ends at ``\\n``, ``\\r`` or ``\\r\\n`` (``StreamReader.ReadLine`` in ``ProcessInvoker.StartReadStream``).
Spec, snapshot and registry values reach what aicr-gen prints (a label key in a ``lint`` finding, a policy
message, a file name in an error), so ``Guarded`` wraps both streams for the whole command and rewrites such a
line before it is written: the first ``:`` of a leading ``::`` is written ``\\:`` and ``##[`` is written
``#\\u0023[`` (six characters: in JSON, ``lint --format json`` for one, the string keeps its value). Nothing else
changes; a value cannot escape this by being split over several writes, since a line is rewritten whole.

Why not ``::stop-commands::TOKEN`` around the output: the runner reads standard output and error on two threads,
so a token printed on one stream does not bracket the other; the token lines would be part of any YAML or JSON
printed for a pipe; and a command killed before printing the closing token leaves the rest of the job's commands
(the action's own ``::error`` annotations) switched off. aicr-gen emits no workflow command itself: the action's
annotations are printed by its shell steps, not through these streams.
"""

from __future__ import annotations

import io
import re
import sys

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing is not imported at run time: every command starts here
    from typing import TextIO

_LINE = re.compile(r"\r\n|\r|\n")
_LEADING_COMMAND = re.compile(r"\s*:(?=:)")


def neutralise(line: str) -> str:
    """One line (without its line break) as the runner cannot read it as a command."""
    line = line.replace("##[", "#\\u0023[")
    leading = _LEADING_COMMAND.match(line)
    return f"{line[:leading.end() - 1]}\\{line[leading.end() - 1:]}" if leading else line


class _LineGuard(io.TextIOBase):
    """A text stream that writes each line to ``stream`` once it is complete, neutralised; ``flush`` writes an
    unfinished line too, all but what could still become a command with the text that follows (its leading
    white space and ``:``, a last ``#`` or two)."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self._pending = ""  # the unfinished line, not written yet
        self._started = False  # whether a start of the unfinished line was written (its beginning is settled)

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return self.stream.encoding

    @property
    def errors(self) -> str | None:  # type: ignore[override]
        return self.stream.errors

    def fileno(self) -> int:
        return self.stream.fileno()

    def isatty(self) -> bool:
        return self.stream.isatty()

    def writable(self) -> bool:
        return True

    def _line(self, text: str) -> str:
        return text.replace("##[", "#\\u0023[") if self._started else neutralise(text)

    def write(self, text: str) -> int:
        pending = self._pending + text
        if "::" not in pending and "##[" not in pending:  # the common case: no line to rewrite
            end = max(pending.rfind("\n"), pending.rfind("\r")) + 1
            if end:
                self.stream.write(pending[:end])
                self._started = False
            self._pending = pending[end:]
            return len(text)
        out: list[str] = []
        start = 0
        for brk in _LINE.finditer(pending):
            out += [self._line(pending[start:brk.start()]), brk.group()]
            self._started = False
            start = brk.end()
        self._pending = pending[start:]
        if out:
            self.stream.write("".join(out))
        return len(text)

    def flush(self) -> None:
        self._write_unfinished(final=False)
        self.stream.flush()

    def finish(self) -> None:
        """Write the unfinished line whole: nothing more is printed."""
        self._write_unfinished(final=True)
        self.stream.flush()

    def _write_unfinished(self, *, final: bool) -> None:
        text = self._pending
        if not text:
            return
        if not final:
            keep = len(text) - len(text.rstrip("#"))
            if not self._started and not text.lstrip().lstrip(":"):
                keep = len(text)  # white space, or white space and ':': the line could still become a command
            text, self._pending = text[:len(text) - keep], text[len(text) - keep:]
        else:
            self._pending = ""
        if text:
            self.stream.write(self._line(text))
            self._started = True


class Guarded:
    """``sys.stdout`` and ``sys.stderr`` guarded while the ``with`` block runs (see the module's docstring)."""

    def __enter__(self) -> None:
        self._saved = sys.stdout, sys.stderr
        self._streams = _LineGuard(sys.stdout), _LineGuard(sys.stderr)
        sys.stdout, sys.stderr = self._streams

    def __exit__(self, *_exc: object) -> None:
        sys.stdout, sys.stderr = self._saved
        for stream in self._streams:
            try:
                stream.finish()
            except (BrokenPipeError, ValueError):  # the reader went away, or the stream was closed
                continue
