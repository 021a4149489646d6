"""Values from input files written into the Markdown aicr-gen writes (the plan comment, job summaries, reports,
the READMEs of trees and bundles), so that GitHub renders them as the same text and nothing else.

A spec, a snapshot or a results file is written by whoever opens the pull request; what GitHub renders from it
must not notify anyone, link, load an image, carry HTML or break the table or list it sits in. Every value goes
through one of four functions, chosen by where it lands:

- ``text``: Markdown inline text (a paragraph, a list item, a table cell, a heading). On one line (``one_line``,
  then runs of white space as one space); the characters that open Markdown or HTML anywhere in a line are
  backslash-escaped (CommonMark 0.31 section 2.4: any ASCII punctuation may be) -- ``\\`` `` ` `` ``*`` ``[`` ``]``
  ``<`` ``|`` ``~`` ``&`` always, ``_`` at a word's edge (GitHub never reads an underscore inside a word as
  emphasis); and those that open a block only at the start of one (``#``, ``>``, a ``-``/``+`` list marker, an
  ordered ``1.``) at its start (not after other text or in a table cell). Escaping ``[`` stops links, images
  (``![``), link reference definitions and footnotes; ``<`` stops raw HTML, comments and ``<https://...>``
  autolinks; ``|`` a table cell's end (GFM spec section 4.10).
- ``html``: text inside raw HTML (the ``<summary>`` of a ``<details>`` block), where Markdown is not parsed and a
  backslash would show: HTML-escaped (``&``, ``<``, ``>``, quotes), on one line.
- ``code``: inline code, fenced with one backtick more than the longest run it holds (CommonMark section 6.1);
  in a table cell its ``|`` is written ``\\|``, which GFM removes before it reads the code span.
- ``block``: a fenced code block of lines, its fence longer than any backtick run inside.

Mentions (``@user``, ``@org/team``) and issue references (``#12``, ``owner/repo#12``) are not Markdown: GitHub
finds them in the rendered text, so no Markdown escape stops them. In ``text`` and ``html`` the ``@`` or ``#``
that would start one gets a zero-width space after it (``&#8203;``), as Renovate's ``sanitizeMarkdown``
(lib/util/markdown.ts) does for release notes; GitHub skips code spans and blocks, so ``code`` and ``block`` need
none. A mention is an ``@`` not after a letter, digit or ``_``, followed by a letter or digit: an e-mail address
keeps its ``@``.

Bare URLs (``https://example.com``, ``www.example.com``) are left to GitHub's autolinking: the link shows its
whole target, so it cannot pass for another one, and it loads nothing; breaking it would put invisible
characters into the repository and chart URLs a reader copies from a README.
"""

from __future__ import annotations

import html as _html
import re
from collections.abc import Sequence

from aicr_gen.text.oneline import one_line

_INLINE = re.compile(r"(?P<escape>[\\`*\[\]<|~&]|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))"
                     r"|(?P<ping>(?<![A-Za-z0-9_])(?:@(?=[A-Za-z0-9])|#(?=[0-9])))")
_BLOCK_START = re.compile(r"^(?:[#>]|[+-](?= |$)|\d{1,9}(?=[.)](?: |$)))")
_PING = re.compile(r"(?<![A-Za-z0-9_])(?:@(?=[A-Za-z0-9])|#(?=[0-9]))")
_TICKS = re.compile(r"`+")
ZERO_WIDTH_SPACE = "&#8203;"


def _flat(value: str) -> str:
    return " ".join(one_line(value).split())


def _inline(match: re.Match[str]) -> str:
    if match.group("escape"):
        return "\\" + match.group("escape")
    return match.group("ping") + ZERO_WIDTH_SPACE


def _block_start(match: re.Match[str]) -> str:
    found = match.group(0)
    return found + "\\" if found[0].isdigit() else "\\" + found


def text(value: str, *, mid_line: bool = False) -> str:
    """``value`` as Markdown inline text that renders as itself, on one line; ``mid_line``: after other text on
    its line or in a table cell, where no block starts."""
    escaped = _INLINE.sub(_inline, _flat(value))
    return escaped if mid_line else _BLOCK_START.sub(_block_start, escaped, count=1)


def html(value: str) -> str:
    """``value`` as text inside raw HTML, on one line."""
    return _PING.sub(lambda match: match.group(0) + ZERO_WIDTH_SPACE, _html.escape(_flat(value)))


def code(value: str, *, cell: bool = False) -> str:
    """``value`` as inline code on one line; ``cell``: inside a table cell."""
    flat = _flat(value)
    ticks = "`" * (max((len(run) for run in _TICKS.findall(flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") or not flat else ""
    inner = flat.replace("|", "\\|") if cell else flat
    return f"{ticks}{pad}{inner}{pad}{ticks}"


def block(lines: Sequence[str], info: str = "") -> list[str]:
    """``lines`` as a fenced code block (``info``: its language), each on one line."""
    flat = [one_line(line) for line in lines]
    fence = "`" * max([3, *(len(run) + 1 for line in flat for run in _TICKS.findall(line))])
    return [fence + info, *flat, fence]
