"""``aicr_gen/text/oneline.py``: a value from an input file stays on the one line it is written on."""

from __future__ import annotations

import pytest

from aicr_gen.text.oneline import one_line

BREAKING = ["\n", "\r", "\t", "\x00", "\x1b", "\x7f", "\x85", "\x9f", "\u2028", "\u2029", "\u200e", "\u200f",
            "\u202a", "\u202e", "\u2066", "\u2069"]
"""What would start a line, or reorder one, of the value's choosing: C0, DEL, C1, the line and paragraph
separators and the bidirectional marks and overrides."""


@pytest.mark.parametrize("char", BREAKING, ids=[f"U+{ord(char):04X}" for char in BREAKING])
def test_each_breaking_character_becomes_one_space(char: str) -> None:
    assert one_line(f"a{char}b") == "a b"


def test_a_trailer_smuggled_into_a_value_stays_on_its_line() -> None:
    text = one_line("gpu-a\nSigned-off-by: Mallory <m@example.com>\r\n::error ::pwned")
    assert "\n" not in text and "\r" not in text
    assert text == "gpu-a Signed-off-by: Mallory <m@example.com>  ::error ::pwned"


def test_printable_text_is_kept_byte_for_byte() -> None:
    text = "h100-eks · ünïcode — 名前 ✓ `code` <b>x</b> \u00a0nbsp"
    assert one_line(text) == text
    assert one_line("") == ""
