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

Our own policies' environment (with ``realThreshold()``, which needs NVCRE's thresholds) is in
``aicr_gen/policy/environment.py``: nothing in ``cel/`` imports the rest of aicr_gen.
"""

from __future__ import annotations

import datetime as _dt

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
