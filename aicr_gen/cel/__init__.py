"""CEL (the Common Expression Language) as cel-go implements it, with hard limits.

- ``syntax.parse`` turns source text into ``ast`` nodes (cel-spec's ``cel.expr.Expr``) with cel-go's
  grammar, macros, limits and error texts; ``checker`` is cel-go's type checker over them.
- :class:`Environment` compiles text into a :class:`Program`: declared variables, libraries (the standard
  library, cel-go's ``ext.Strings``, and for the lifecycle manager's criteria ``now()`` and Kubernetes
  ``quantity()``), a container, and limits. Undeclared names and functions and wrong argument counts are
  compile errors, as cel-go's checker makes them (``references=False``: evaluation errors, as unchecked).
- Evaluation has cel-go's semantics: heterogeneous equality (numbers compare by value, other mixed types
  are unequal), cross-type numeric ordering, ``&&``/``||`` and comprehensions that absorb an error when the
  other side decides, 64-bit overflow and range errors, nanosecond timestamps and durations.
- Bounds, so a hostile expression is refused instead of hanging: cel-go's length and nesting limits and a
  static cost estimate at compile time; a step budget, a wall-clock deadline and a result size limit per
  evaluation, raising :class:`CelLimitError`.

Values are plain Python (None, bool, int, float, str, bytes, list, dict) plus :class:`Uint`,
:class:`Timestamp`, :class:`Duration`, :class:`CelType` and :class:`Quantity`; :func:`to_cel` converts and
checks data.
"""

from __future__ import annotations

from aicr_gen.cel.conversions import parse_instant
from aicr_gen.cel.environment import Environment, type_check
from aicr_gen.cel.errors import CelCompileError, CelError, CelLimitError
from aicr_gen.cel.functions import MACROS, QUANTITY, STANDARD, STRINGS
from aicr_gen.cel.program import DEFAULT_LIMITS, Comparison, Limits, Operand, Program, Selection
from aicr_gen.cel.values import (
    INT64_MAX,
    INT64_MIN,
    MAX_DURATION_SECONDS,
    TYPE_NAMES,
    UINT64_MAX,
    CelType,
    Duration,
    Quantity,
    Timestamp,
    Uint,
    equals,
    format_double,
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
    "Duration",
    "Environment",
    "Limits",
    "Operand",
    "Program",
    "Quantity",
    "Selection",
    "Timestamp",
    "Uint",
    "equals",
    "format_double",
    "kind_of",
    "parse_instant",
    "to_cel",
    "type_check",
]
