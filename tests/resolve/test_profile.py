"""``aicr_gen/resolve/profile.py``: ``--profile name=value`` read exactly, or refused naming the form to use."""

from __future__ import annotations

import pytest

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.profile import parse_selection


@pytest.mark.parametrize(("text", "selection"), [
    (None, None),
    ("", None),
    ("gpuStack=operator-managed", ("gpuStack", "operator-managed")),
    ("a.b_c-9=V.1_x-2", ("a.b_c-9", "V.1_x-2")),
])
def test_a_selection_is_read_as_name_and_value(text: str | None, selection: tuple[str, str] | None) -> None:
    assert parse_selection(text) == selection


@pytest.mark.parametrize("text", ["gpuStack", "a=b=c", " a=b", "a=b\n", "=b", "a="])
def test_anything_but_one_name_value_pair_is_refused_showing_the_form(text: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        parse_selection(text)
    message = str(err.value)
    assert message.startswith(f"--profile {text!r}: ")
    assert "name=value" in message or "[A-Za-z0-9._-]+" in message


@pytest.mark.parametrize("text", ["a b=c", "a=b/c", "ä=b", "a=$(x)"])
def test_a_name_or_value_outside_the_token_alphabet_is_refused(text: str) -> None:
    with pytest.raises(InvalidInputError, match=r"name and value must match \[A-Za-z0-9\._-\]\+"):
        parse_selection(text)
