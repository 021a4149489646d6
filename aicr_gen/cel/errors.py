"""The three ways an expression fails: an evaluation error, a compile error, a limit."""

from __future__ import annotations


class CelError(Exception):
    """An evaluation error (a cel-go error value): the rule does not match."""


class CelCompileError(Exception):
    """The expression does not parse or check; NVSentinel would refuse it at start-up."""


class CelLimitError(Exception):
    """A limit was exceeded while compiling or evaluating; the expression is refused as hostile."""
