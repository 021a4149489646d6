"""Our policies' CEL environment: the target's variables as ``dyn``, ``ext.Strings()`` and
``realThreshold(key, expression)``, which asks NVCRE's thresholds (``certify/thresholds.py``) whether a
threshold is a real floor. It lives with the policies, not in ``cel/``, because it needs NVCRE's rules."""

from __future__ import annotations

from collections.abc import Iterable

from aicr_gen.cel.environment import Environment


def policy(variables: Iterable[str]) -> Environment:
    """A policy's environment over its target's variables (``dyn``), with ``realThreshold(key, expression)``:
    whether an NVCRE threshold is a real floor, one a degraded run fails (``certify.thresholds.real``)."""
    from aicr_gen.cel.functions import fn
    from aicr_gen.cel.overloads import overload
    from aicr_gen.cel.types import BOOL, STRING

    return Environment(variables, libraries=("strings",), check=True, functions={
        "realThreshold": (fn(_real_threshold, [2]), (overload("real_threshold_string_string", BOOL, STRING, STRING),))})


def _real_threshold(key: object, expression: object) -> bool:
    from aicr_gen.cel.errors import CelError
    from aicr_gen.certify.thresholds import real
    from aicr_gen.errors import InvalidInputError

    if not isinstance(key, str) or not isinstance(expression, str):
        raise CelError("realThreshold takes a threshold key and its expression, both strings")
    try:
        return real(key, expression)
    except InvalidInputError as err:
        raise CelError(f"realThreshold: {err}") from None
