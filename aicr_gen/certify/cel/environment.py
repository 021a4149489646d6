"""The entry point: declared variables, chosen libraries and limits, compiling text into a Program."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Iterable

from aicr_gen.certify.cel.compile import _Compiler
from aicr_gen.certify.cel.errors import CelCompileError, CelLimitError
from aicr_gen.certify.cel.functions import QUANTITY, STANDARD, STRINGS, _fn, _Function
from aicr_gen.certify.cel.parse import _check_depth, _parse
from aicr_gen.certify.cel.program import DEFAULT_LIMITS, Limits, Program
from aicr_gen.certify.cel.values import _timestamp


class Environment:
    """Declared variables, the function libraries and limits; compiles expressions into Programs.

    ``libraries``: ``"strings"`` (cel-go ext.Strings) and ``"kubernetes"`` (now() and quantity()).
    ``now`` is the instant now() returns, fixed so evaluations are reproducible."""

    def __init__(self, variables: Iterable[str], *, libraries: Iterable[str] = ("strings",),
                 now: _dt.datetime | None = None, limits: Limits = DEFAULT_LIMITS) -> None:
        self.variables = frozenset(variables)
        self.limits = limits
        self.functions: dict[str, _Function] = dict(STANDARD)
        chosen = set(libraries)
        unknown = chosen - {"strings", "kubernetes"}
        if unknown:
            raise ValueError(f"unknown CEL libraries {sorted(unknown)}")
        if "strings" in chosen:
            self.functions.update(STRINGS)
        if "kubernetes" in chosen:
            self.functions.update(QUANTITY)
            instant = now or _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            if instant.tzinfo is None:
                raise ValueError("now must be timezone-aware")
            fixed = _timestamp(instant.astimezone(_dt.UTC))
            self.functions["now"] = _fn(lambda: fixed, [0])

    def compile(self, text: str) -> Program:
        """Parse, check and compile ``text``; CelCompileError or CelLimitError when it cannot be used."""
        if not isinstance(text, str):
            raise CelCompileError(f"the expression is a {type(text).__name__}, not a string")
        if len(text) > self.limits.max_length:
            raise CelLimitError(f"the expression is {len(text)} characters long; the limit is "
                                f"{self.limits.max_length}")
        if not text.strip():
            raise CelCompileError("the expression is empty")
        tree = _parse(text)
        _check_depth(tree, self.limits.max_depth)
        compiler = _Compiler(self)
        try:
            code = compiler.compile(tree)
            cost = compiler.cost(tree)
        except RecursionError:
            raise CelLimitError("the expression nests too deeply") from None
        if cost > self.limits.max_steps:
            raise CelLimitError(f"the expression would take at least {cost} steps (comprehensions over "
                                f"literal lists multiply); the limit is {self.limits.max_steps}")
        return Program(text, code, self.limits, tuple(dict.fromkeys(compiler.selections)),
                       tuple(compiler.comparisons), compiler.fields_read(tree))
