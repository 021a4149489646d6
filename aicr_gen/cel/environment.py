"""The entry point: declared variables, chosen libraries, container, parser options and limits; compiling
text into a Program."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from aicr_gen.cel import static, syntax
from aicr_gen.cel.ast import Expr
from aicr_gen.cel.errors import CelCompileError, CelLimitError
from aicr_gen.cel.functions import QUANTITY, STANDARD, STRINGS, Function, fn
from aicr_gen.cel.plan import Planner
from aicr_gen.cel.program import DEFAULT_LIMITS, Limits, Program, stack_for
from aicr_gen.cel.source import Source
from aicr_gen.cel.values import timestamp

if TYPE_CHECKING:
    import datetime as _dt

    from aicr_gen.cel.overloads import Overload
    from aicr_gen.cel.types import Type

LIBRARIES = ("strings", "kubernetes")


class Environment:
    """Declared variables, the function libraries, the container and limits; compiles expressions into
    Programs.

    ``libraries``: ``"strings"`` (cel-go ext.Strings) and ``"kubernetes"`` (now() and quantity()). ``now`` is
    the instant now() returns, fixed so evaluations are reproducible. ``container`` qualifies names as
    cel-go's ``cel.Container`` does. ``macros`` False parses ``all``, ``exists`` ... as plain calls (cel-go's
    ``ClearMacros``); ``ident_escape`` False refuses backquoted field names (cel-go v0.27.0 and earlier).

    Names: ``references`` (on by default) makes an undeclared variable or function, or a wrong argument count,
    a compile error, where cel-go's checker stops; off, they fail when evaluated (cel-go without its checker).
    ``check`` also runs the type checker (:func:`type_check`) over ``declarations`` (a variable declared only
    in ``variables`` is ``dyn``); ``cross_type_numeric_comparisons`` lets it accept ``1 < 1.5`` (cel-go's
    ``cel.CrossTypeNumericComparisons``; evaluation always orders numbers across types).

    ``functions`` adds functions of the consumer's own (cel-go's ``cel.Function``): name -> (implementation,
    the overloads the checker declares)."""

    def __init__(self, variables: Iterable[str] = (), *, libraries: Iterable[str] = ("strings",),
                 now: _dt.datetime | None = None, limits: Limits = DEFAULT_LIMITS, container: str = "",
                 macros: bool = True, ident_escape: bool = True,
                 declarations: Mapping[str, Type] | None = None, check: bool = False,
                 references: bool = True, cross_type_numeric_comparisons: bool = False,
                 functions: Mapping[str, tuple[Function, tuple[Overload, ...]]] | None = None) -> None:
        self.declarations = dict(declarations or {})
        self.variables = frozenset(variables) | frozenset(self.declarations)
        self.limits = limits
        self.container = container
        self.macros = macros
        self.ident_escape = ident_escape
        self.check = check
        self.references = references
        self.cross_type_numeric_comparisons = cross_type_numeric_comparisons
        self.libraries = frozenset(libraries)
        unknown = self.libraries - set(LIBRARIES)
        if unknown:
            raise ValueError(f"unknown CEL libraries {sorted(unknown)}")
        self.functions: dict[str, Function] = dict(STANDARD)
        if "strings" in self.libraries:
            self.functions.update(STRINGS)
        if "kubernetes" in self.libraries:
            import datetime as _dt

            self.functions.update(QUANTITY)
            instant = now or _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            if instant.tzinfo is None:
                raise ValueError("now must be timezone-aware")
            span = instant - _dt.datetime(1970, 1, 1, tzinfo=_dt.UTC)
            fixed = timestamp(((span.days * 86_400 + span.seconds) * 10**6 + span.microseconds) * 1000)
            self.functions["now"] = fn(lambda: fixed, [0])
        self.overloads = {name: overloads for name, (_impl, overloads) in (functions or {}).items()}
        self.functions.update({name: impl for name, (impl, _overloads) in (functions or {}).items()})

    def parse(self, text: str) -> Expr:
        """The syntax tree of ``text`` (macros expanded); CelCompileError or CelLimitError."""
        if not isinstance(text, str):
            raise CelCompileError(f"the expression is a {type(text).__name__}, not a string")
        if not text.strip():
            raise CelCompileError("the expression is empty")
        try:
            return syntax.parse(text, max_code_points=self.limits.max_length,
                                max_recursion_depth=self.limits.max_depth, macros=self.macros,
                                ident_escape=self.ident_escape)
        except syntax.CelSyntaxError as err:
            if err.offset is None:
                raise CelLimitError(err.message) from None
            line, column = Source(text).location(err.offset)
            message = err.message.removeprefix("Syntax error: ")
            raise CelCompileError(f"syntax error at line {line}, column {column + 1}: {message}") from None

    def compile(self, text: str) -> Program:
        """Parse, check and plan ``text``; CelCompileError or CelLimitError when it cannot be used."""
        expr = self.parse(text)
        height = static.depth(expr)
        result_type = None
        planner = Planner(self.variables, self.functions, container=self.container, references=self.references)
        try:
            with stack_for(height):
                if self.check:
                    result_type = type_check(expr, self._typed_declarations(), libraries=self.libraries,
                                             container=self.container,
                                             cross_type_numeric_comparisons=self.cross_type_numeric_comparisons,
                                             functions=self.overloads)
                code = planner.plan(expr)
        except RecursionError:
            raise CelLimitError("the expression nests too deeply") from None
        cost = static.cost(expr, self.limits.max_steps)
        if cost > self.limits.max_steps:
            raise CelLimitError(f"the expression would take at least {cost} steps (comprehensions over "
                                f"literal lists multiply); the limit is {self.limits.max_steps}")
        exact = not self.container and not any("." in name for name in self.variables)
        facts = static.facts(expr, self.variables, exact=exact)
        return Program(text, code, self.limits, tuple(facts.selections), tuple(facts.comparisons),
                       facts.fields_read(), result_type, height)

    def _typed_declarations(self) -> dict[str, Type]:
        from aicr_gen.cel.types import DYN

        return {**dict.fromkeys(self.variables, DYN), **self.declarations}


def type_check(expr: Expr, declarations: Mapping[str, Type], *, libraries: Iterable[str] = (),
               container: str = "", cross_type_numeric_comparisons: bool = False,
               functions: Mapping[str, tuple[Overload, ...]] | None = None) -> Type:
    """The type cel-go's checker (``aicr_gen.cel.checker``) deduces for ``expr`` over these variable types,
    libraries and container; CelCompileError with the message cel-go lists first where it refuses it."""
    from aicr_gen.cel.checker import CheckError, check

    try:
        checked = check(expr, variables=declarations, libraries=frozenset(libraries), container=container,
                        cross_type_numeric_comparisons=cross_type_numeric_comparisons, functions=functions)
    except CheckError as err:
        raise CelCompileError(err.message) from None
    return checked.result_type
