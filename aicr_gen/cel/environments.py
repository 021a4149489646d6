"""The CEL environments of our consumers, each declared as the consumer declares its own, so an expression
compiles here exactly when it compiles there (the type checker's verdicts included):

- NVSentinel fault-quarantine (cel-go v0.27.0, ``pkg/evaluator``): one variable, ``event`` for a HealthEvent
  rule or ``node`` for a Node rule, declared ``cel.AnyType``; the standard library and ``ext.Strings()``;
  compiled with the checker, so ``15.0 == 15`` is refused at start-up while ``event.x == 15`` is not. cel-go
  v0.27.0's parser has no backquoted field names.
- NVSentinel lifecycle-manager readiness criteria: ``node`` and ``pods`` with ``ext.Strings()`` and the
  Kubernetes ``quantity()`` library and ``now()``.
- NVCRE thresholds (``pkg/threshold``): ``value`` declared ``cel.DoubleType`` with
  ``cel.CrossTypeNumericComparisons(true)``; the output type must be ``bool``.
- Our policies: the target's variables as ``dyn`` with ``ext.Strings()`` and ``realThreshold()``.
"""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable

from aicr_gen.cel.environment import Environment


def nvsentinel_rule(variable: str) -> Environment:
    """A fault-quarantine rule's environment: ``variable`` is ``event`` (HealthEvent) or ``node`` (Node)."""
    from aicr_gen.cel.types import ANY

    return Environment(declarations={variable: ANY}, libraries=("strings",), check=True, ident_escape=False)


def lifecycle_criterion(now: _dt.datetime) -> Environment:
    """A lifecycle-manager readiness criterion's environment, ``now()`` fixed at ``now``."""
    return Environment(["node", "pods"], libraries=("strings", "kubernetes"), now=now, check=True,
                       ident_escape=False)


def nvcre_threshold() -> Environment:
    """An NVCRE threshold's environment: ``value`` a double, numbers ordered across types."""
    from aicr_gen.cel.types import DOUBLE

    return Environment(declarations={"value": DOUBLE}, libraries=(), check=True, ident_escape=False,
                       cross_type_numeric_comparisons=True)


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
