"""Where an offset is in CEL source text, and errors shown the way cel-go shows them
(``common.Error.ToDisplayString``): ``ERROR: <input>:LINE:COL: message``, the line, and a caret under the
column (full-width dots and caret under characters wider than one UTF-8 byte, as cel-go draws them)."""

from __future__ import annotations

from bisect import bisect_right

_MAX_SNIPPET_BYTES = 16384  # cel-go leaves the snippet out of longer lines


class Source:
    """CEL source text with its line starts; offsets and columns count code points, lines split at ``\\n``
    (as cel-go's runes buffer and ANTLR do)."""

    def __init__(self, text: str, description: str = "<input>") -> None:
        self.text = text
        self.description = description
        self._line_starts = [0]
        index = text.find("\n")
        while index >= 0:
            self._line_starts.append(index + 1)
            index = text.find("\n", index + 1)

    def location(self, offset: int) -> tuple[int, int]:
        """``(line, column)``: line from 1, column from 0."""
        line = bisect_right(self._line_starts, offset)
        return line, offset - self._line_starts[line - 1]

    def line_text(self, line: int) -> str:
        start = self._line_starts[line - 1]
        end = self._line_starts[line] - 1 if line < len(self._line_starts) else len(self.text)
        return self.text[start:end]

    def display(self, message: str, offset: int | None) -> str:
        """One error as cel-go prints it; an error with no offset shows as line -1, column 0 (cel-go's
        ``NoLocation``), without a snippet."""
        if offset is None:
            return f"ERROR: {self.description}:-1:0: {message}"
        line, column = self.location(offset)
        shown = f"ERROR: {self.description}:{line}:{column + 1}: {message}"
        snippet = self.line_text(line)
        if not self.text or len(snippet.encode("utf-8", "surrogatepass")) > _MAX_SNIPPET_BYTES:
            return shown
        marks = "".join("." if ord(char) < 0x80 else "\uff0e" for char in snippet[:column])
        under = snippet[column:column + 1]
        caret = "\uff3e" if under and ord(under) >= 0x80 else "^"
        return f"{shown}\n | {snippet.replace(chr(9), ' ')}\n | {marks}{caret}"
