"""The grammar of a component value override, as ``aicr bundle`` reads it and as ClusterSpecs and pools write it
(``spec.overrides``, ``--set``/``--set-json``/``--set-file``): ``COMPONENT:PATH=VALUE`` with a dotted path
(``a[0].b``), and ``--set`` scalars typed as AICR types them. Applying overrides to values is ``render/values.py``."""

from __future__ import annotations

import re
from collections.abc import Callable

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple

    from aicr_gen.errors import Where
else:
    from aicr_gen.records import NamedTuple


_INT = re.compile(r"^[-+]?[0-9]+\Z")


_FLOAT = re.compile(r"^[-+]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][-+]?[0-9]+)?\Z")


_SPECIAL_FLOAT = re.compile(r"^[-+]?(inf|infinity|nan)\Z", re.IGNORECASE)


_HEX_FLOAT = re.compile(r"^[-+]?0[xX]([0-9a-fA-F]+\.?[0-9a-fA-F]*|\.[0-9a-fA-F]+)[pP][-+]?[0-9]+\Z")


_SEGMENT = re.compile(r"^(?P<key>[^\[\]]+)(?P<indexes>(\[[0-9]+\])*)\Z")


class Override(NamedTuple):
    """One ``--set``/``--set-json``: component (name or alias), value path, parsed value, how to apply, and
    where it was given (``flag``: the flag and its text, or the error of the spec field that holds it)."""

    component: str
    path: tuple[str | int, ...]
    value: Any
    merge: bool
    flag: Where


def typed(text: str) -> Any:
    """A ``--set`` scalar as AICR types it (pkg/component ``ConvertMapValue``): ``true``/``false``, then a
    base-10 int64 (leading zeros and sign allowed), then a float (Go's ``strconv.ParseFloat``: decimal or hex
    with an exponent, ``inf``, ``nan``); anything else, ``null`` included, stays a string."""
    if text in ("true", "false"):
        return text == "true"
    if _INT.match(text):
        number = int(text)
        if -(2**63) <= number < 2**63:
            return number
    if _FLOAT.match(text) or _SPECIAL_FLOAT.match(text):
        value = float(text)
        if value not in (float("inf"), float("-inf")) or _SPECIAL_FLOAT.match(text):
            return value
    elif _HEX_FLOAT.match(text):
        return float.fromhex(text)
    return text


def _parse_path(text: str, flag: str) -> tuple[str | int, ...]:
    path: list[str | int] = []
    for segment in text.split("."):
        match = _SEGMENT.match(segment)
        if not match:
            raise InvalidInputError(f"{flag}: bad value path {text!r}; use dotted keys such as driver.version, a[0].b")
        path.append(match["key"])
        path.extend(int(index) for index in re.findall(r"\[([0-9]+)\]", match["indexes"]))
    return tuple(path)


def parse(flag: str, text: str, read: Callable[[str], bytes] | None = None) -> Override:
    """``COMP:PATH=VALUE`` (``--set``), ``COMP:PATH=JSON`` (``--set-json``) or ``COMP:PATH=FILE``
    (``--set-file``: one YAML or JSON value read from FILE with ``read``)."""
    head, sep, raw = text.partition("=")
    component, colon, path = head.partition(":")
    if not sep or not colon or not component or not path:
        raise InvalidInputError(f"{flag} {text!r}: use COMPONENT:PATH=VALUE, e.g. gpu-operator:driver.enabled=false")
    parsed_path = _parse_path(path, flag)
    if flag == "--set":
        return Override(component, parsed_path, typed(raw), merge=False, flag=f"{flag} {text}")
    if parsed_path in (("enabled",), ("install",)):
        raise InvalidInputError(f"{flag} {text!r}: {path} switches the component on or off; use --set "
                                f"{component}:{path}=false")
    if flag == "--set-file":
        from aicr_gen.yaml import decode, load_text

        if read is None or not raw:
            raise InvalidInputError(f"{flag} {text!r}: name the file holding the value, COMPONENT:PATH=FILE")
        value = load_text(decode(read(raw), raw), raw).data
        return Override(component, parsed_path, value, merge=True, flag=f"{flag} {text}")
    import json

    try:
        value = json.loads(raw)
    except json.JSONDecodeError as err:
        raise InvalidInputError(f"{flag} {text!r}: value is not JSON ({err.msg} at column {err.colno})") from None
    return Override(component, parsed_path, value, merge=True, flag=f"{flag} {text}")
