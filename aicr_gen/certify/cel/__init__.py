"""A bounded CEL environment: cel-python's parser and time types, with cel-go's semantics and hard limits.

NVSentinel evaluates its rules with cel-go. cel-python's own evaluators differ from cel-go where rules
care (``15.0 == 15`` is an error there but true in cel-go; ``||`` lets a Python ``TypeError`` escape from
the documented ``event.errorCode == null || !event.errorCode.exists(...)`` guard; the ``ext.Strings``
functions are missing), so this module compiles cel-python's parse tree into Python closures itself:

- cel-go semantics: heterogeneous equality (numbers compare by value, other mixed types are unequal),
  cross-type numeric ordering, ``&&``/``||`` that short-circuit and absorb an error when the other side
  decides, ``all``/``exists`` that absorb errors the same way, member access on null is an error.
- cel-go's checker at compile time: undeclared variables and functions, and wrong argument counts, are
  compile errors, exactly where fault-quarantine refuses to start.
- Bounds, so a hostile expression is refused instead of hanging: a length and nesting limit and a static
  cost estimate at compile time; a step budget and a wall-clock deadline per evaluation (comprehension
  iterations and large results are charged), raising :class:`CelLimitError`.
- Libraries: the standard library, cel-go's ``ext.Strings`` (what fault-quarantine loads) and, for the
  lifecycle manager's criteria, ``now()`` (a fixed instant given to the environment) and Kubernetes
  ``quantity()`` with the Kubernetes quantity methods plus ``<``/``>`` against numbers.

Values are plain Python (None, bool, int, float, str, bytes, list, dict) plus cel-python's
``UintType``, ``TimestampType`` and ``DurationType`` and our :class:`Quantity`; :func:`to_cel` converts
and checks data. cel-python has no type hints, so it is used as ``Any`` at the boundary.
"""

from __future__ import annotations

from aicr_gen.certify.cel.conversions import format_double, parse_instant
from aicr_gen.certify.cel.environment import Environment
from aicr_gen.certify.cel.errors import CelCompileError, CelError, CelLimitError
from aicr_gen.certify.cel.functions import MACROS, QUANTITY, STANDARD, STRINGS
from aicr_gen.certify.cel.program import DEFAULT_LIMITS, Comparison, Limits, Operand, Program, Selection
from aicr_gen.certify.cel.values import (
    INT64_MAX,
    INT64_MIN,
    MAX_DURATION_SECONDS,
    TYPE_NAMES,
    UINT64_MAX,
    CelType,
    Quantity,
    equals,
    kind_of,
    to_cel,
)

__all__ = [
    "DEFAULT_LIMITS",
    "INT64_MAX",
    "INT64_MIN",
    "MACROS",
    "MAX_DURATION_SECONDS",
    "QUANTITY",
    "STANDARD",
    "STRINGS",
    "TYPE_NAMES",
    "UINT64_MAX",
    "CelCompileError",
    "CelError",
    "CelLimitError",
    "CelType",
    "Comparison",
    "Environment",
    "Limits",
    "Operand",
    "Program",
    "Quantity",
    "Selection",
    "equals",
    "format_double",
    "kind_of",
    "parse_instant",
    "to_cel",
]
