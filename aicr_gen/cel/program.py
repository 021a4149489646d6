"""A compiled expression and what bounds its evaluation: the limits, the per-run step budget and deadline,
and the static facts (selections, comparisons, fields read) lints and caches read."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.cel.errors import CelLimitError

if TYPE_CHECKING:
    from aicr_gen.cel.types import Type


class Limits(NamedTuple):
    """Bounds on one expression. ``max_length`` (code points) and ``max_depth`` are cel-go's parser limits;
    ``max_steps`` counts evaluated operations, comprehension iterations weighted by their body's size and
    large results by their length."""

    max_length: int = 100_000
    max_depth: int = 250
    max_steps: int = 500_000
    max_seconds: float = 1.0
    max_result_size: int = 1_000_000


DEFAULT_LIMITS = Limits()
_CLOCK_STEPS = 256


class Run:
    """One evaluation's budget."""

    __slots__ = ("deadline", "max_size", "max_steps", "next_clock", "seconds", "steps")

    def __init__(self, limits: Limits) -> None:
        self.steps = 0
        self.max_steps = limits.max_steps
        self.max_size = limits.max_result_size
        self.seconds = limits.max_seconds
        self.deadline = time.monotonic() + limits.max_seconds
        self.next_clock = 0

    def charge(self, steps: int) -> None:
        self.steps += steps
        if self.steps > self.max_steps:
            raise CelLimitError(f"evaluation took more than {self.max_steps} steps; simplify the expression "
                                "(nested comprehensions over large lists?)")
        if self.steps >= self.next_clock:  # the clock is read every few hundred steps, not at each
            self.next_clock = self.steps + _CLOCK_STEPS
            if time.monotonic() > self.deadline:
                raise CelLimitError(f"evaluation took longer than {self.seconds:g} s; simplify the expression")

    def sized(self, value: Any) -> Any:
        kind = type(value)
        if (kind is str or kind is bytes or kind is list or kind is dict) and len(value) > 64:
            if len(value) > self.max_size:
                raise CelLimitError(f"a value grew to {len(value)} elements, over the {self.max_size} limit")
            self.charge(len(value) >> 6)
        return value


class Scope:
    """The variables of one evaluation (``vars``, the activation), the comprehension variables in reach
    (``locals``) and the budget."""

    __slots__ = ("locals", "run", "vars")

    def __init__(self, variables: Mapping[str, Any], run: Run, local: dict[str, Any]) -> None:
        self.vars = variables
        self.run = run
        self.locals = local


Code = Callable[[Scope], Any]


class Operand(NamedTuple):
    """A side of a comparison as written: a path into a variable, a literal, or a list literal."""

    kind: str  # "path", "literal" or "list"
    value: Any  # (variable, (field, ...)), the literal's value, or a tuple of Operand | None


class Comparison(NamedTuple):
    """A relation in the source (``==``, ``!=``, ``in``, ``<`` ...) with what its sides are statically."""

    op: str
    left: Operand | None
    right: Operand | None


class Selection(NamedTuple):
    """``variable.a.b`` (or ``variable['a']``) in the source; ``tested`` when inside ``has()``."""

    variable: str
    path: tuple[str, ...]
    tested: bool


_NO_LOCALS: dict[str, Any] = {}
FRAMES_PER_LEVEL = 8
"""Python frames one level of expression nesting may take while planning or evaluating (a call's closure,
its guard, the implementation ...); cel-go accepts 250 levels, more than Python's default limit allows."""
SHALLOW = 60
"""Nesting up to which the default recursion limit is enough and is left alone."""


@contextmanager
def stack_for(depth: int) -> Iterator[None]:
    """Room on Python's stack for an expression nested ``depth`` levels deep (the recursion limit raised
    for the duration when needed)."""
    if depth <= SHALLOW:
        yield
        return
    old = sys.getrecursionlimit()
    frame, used = sys._getframe(), 0
    while frame is not None:
        frame, used = frame.f_back, used + 1  # type: ignore[assignment]
    needed = used + FRAMES_PER_LEVEL * depth + 100
    if needed > old:
        sys.setrecursionlimit(needed)
    try:
        yield
    finally:
        if needed > old:
            sys.setrecursionlimit(old)


@dataclass(frozen=True)
class Program:
    """A compiled expression. ``evaluate`` raises CelError (does not match) or CelLimitError (hostile)."""

    text: str
    code: Code = field(repr=False)
    limits: Limits = field(repr=False)
    selections: tuple[Selection, ...] = ()
    comparisons: tuple[Comparison, ...] = ()
    fields_read: dict[str, tuple[str, ...]] | None = field(default=None, repr=False, compare=False)
    """Per variable, the only fields the value depends on; None: it may depend on all of them."""
    result_type: Type | None = field(default=None, repr=False, compare=False)
    """The type the checker deduced (``Environment(check=True)``), else None."""
    depth: int = field(default=0, repr=False, compare=False)
    """How deeply the expression nests (its syntax tree's height)."""

    def evaluate(self, activation: Mapping[str, Any]) -> Any:
        """The value of the expression over ``activation`` (variable name -> value from :func:`to_cel`)."""
        try:
            if self.depth <= SHALLOW:
                return self.code(Scope(activation, Run(self.limits), _NO_LOCALS))
            with stack_for(self.depth):
                return self.code(Scope(activation, Run(self.limits), _NO_LOCALS))
        except RecursionError:
            raise CelLimitError("evaluation nested too deeply") from None
