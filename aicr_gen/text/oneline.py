"""A value from an input file, made to stay on the one line it is written on.

Spec and snapshot values (names, labels, versions, policy messages, file names) are written into lines of
text aicr-gen builds: commit messages, Markdown, messages. A line break inside one would start a line of the
value's choosing (a ``Signed-off-by:`` trailer, a ``::error`` workflow command, a Markdown heading), so each is
written with every control character (C0, DEL, C1: ``\\n``, ``\\r``, ``\\t``, ``\\x85`` among them), the Unicode line
and paragraph separators and the bidirectional overrides (the "Trojan source" characters, CVE-2021-42574) as a
space.
"""

from __future__ import annotations

import re

_BREAKING = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def one_line(value: str) -> str:
    """``value`` with every control, line-separator or bidirectional-override character as a space."""
    return _BREAKING.sub(" ", value)
