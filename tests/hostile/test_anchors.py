"""A validation pattern anchored with ``$`` accepts a trailing newline (Python's ``$`` matches before one), so a
value like ``"v1\\n"`` or ``"token\\n"`` would pass a grammar meant to refuse line breaks. Every module-level
pattern of aicr-gen anchored at both ends says ``\\Z`` instead (or is MULTILINE, where ``$`` is a line's end)."""

from __future__ import annotations

import importlib
import pkgutil
import re

import pytest

import aicr_gen
from aicr_gen.errors import InvalidInputError


def _patterns() -> list[tuple[str, str]]:
    found = []
    for info in pkgutil.walk_packages(aicr_gen.__path__, "aicr_gen."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if isinstance(value, re.Pattern) and isinstance(value.pattern, str) and not value.flags & re.MULTILINE \
                    and value.pattern.startswith("^") and value.pattern.endswith("$") \
                    and not value.pattern.endswith("\\$"):
                found.append((f"{info.name}.{name}", value.pattern))
    return found


def test_no_full_anchor_lets_a_trailing_newline_through() -> None:
    assert _patterns() == [], "use \\Z (or fullmatch) instead of $ at the end of these patterns"


@pytest.mark.parametrize("text", ["ghcr.io/nvidia/driver:580.105.08\n", "ghcr.io/nvidia/driver\n"])
def test_an_image_reference_with_a_trailing_newline_is_refused(text: str) -> None:
    from aicr_gen.text.image_reference import parse_image

    with pytest.raises(InvalidInputError):
        parse_image(text)


def test_a_header_value_with_a_trailing_newline_is_never_sent() -> None:
    from aicr_gen.edges.transport import Transport

    with pytest.raises(InvalidInputError, match="not one line of printable text"):
        Transport("registry").send("GET", "http://127.0.0.1:9/v2/", {"Authorization": "Bearer token\n"})
