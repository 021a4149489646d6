"""cel-go's standard macros (``cel.StandardMacros``: ``has``, ``all``, ``exists``, ``exists_one``, ``map``
with 2 and 3 arguments, ``filter``), expanded at parse time into the same nodes, with the same ids, that
``parser/macro.go`` builds. ``existsOne`` (only in the parser package's ``AllMacros``) and the two-variable
macros of cel-go's ext packages are not standard, so calls to them stay calls."""

from __future__ import annotations

from collections.abc import Callable

from aicr_gen.cel.ast import (
    ACCUMULATOR,
    ADD,
    CONDITIONAL,
    EQUALS,
    LOGICAL_AND,
    LOGICAL_NOT,
    LOGICAL_OR,
    NOT_STRICTLY_FALSE,
    Call,
    Comprehension,
    Constant,
    ConstKind,
    CreateList,
    Expr,
    Ident,
    Select,
)

_OLD_ACCUMULATOR = "__result__"  # cel-go refuses it as an iteration variable too


class MacroError(Exception):
    """A macro call whose arguments are not well formed; ``offset`` is that of the offending argument."""

    def __init__(self, message: str, offset: int) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


NewId = Callable[[], int]
"""Gives the next expression id (cel-go numbers macro nodes after the call's arguments)."""

RECEIVER_MACROS = {("all", 2), ("exists", 2), ("exists_one", 2), ("map", 2), ("map", 3), ("filter", 2)}


def expand(function: str, target: Expr | None, args: tuple[Expr, ...], offset: int,
           new_id: NewId) -> Expr | None:
    """The expansion of ``function(args)`` (``target`` None) or ``target.function(args)``, located at
    ``offset`` (the call's ``(``); None when no standard macro has that name, style and arity."""
    make = _Builder(offset, new_id)
    if target is None:
        if function == "has" and len(args) == 1:
            return _has(args[0], make)
        return None
    if (function, len(args)) not in RECEIVER_MACROS:
        return None
    if function in ("map", "filter"):
        return _map(function, target, args, make)
    return _quantifier(function, target, args, make)


class _Builder:
    """Makes the nodes of one expansion, all located at the macro call. Callers build arguments before
    the node that holds them, as cel-go does, so the ids come out in cel-go's order."""

    def __init__(self, at: int, new_id: NewId) -> None:
        self.at = at
        self.new_id = new_id

    def call(self, function: str, *args: Expr) -> Call:
        return Call(self.new_id(), self.at, function, args)

    def accu(self) -> Ident:
        return Ident(self.new_id(), self.at, ACCUMULATOR)

    def const(self, kind: ConstKind, value: bool | int) -> Constant:
        return Constant(self.new_id(), self.at, kind, value)


def _has(arg: Expr, make: _Builder) -> Expr:
    if not isinstance(arg, Select):
        raise MacroError("invalid argument to has() macro", arg.offset)
    return Select(make.new_id(), make.at, arg.operand, arg.field, test_only=True)


def _iter_var(arg: Expr, not_ident: str) -> str:
    if not isinstance(arg, Ident):
        raise MacroError(not_ident, arg.offset)
    if arg.name in (ACCUMULATOR, _OLD_ACCUMULATOR):
        raise MacroError("iteration variable overwrites accumulator variable", arg.offset)
    return arg.name


def _quantifier(kind: str, target: Expr, args: tuple[Expr, ...], make: _Builder) -> Expr:
    var = _iter_var(args[0], "argument must be a simple name")
    predicate = args[1]
    init: Expr
    condition: Expr
    result: Expr
    if kind == "all":
        init = make.const("bool", True)
        condition = make.call(NOT_STRICTLY_FALSE, make.accu())
        step = make.call(LOGICAL_AND, make.accu(), predicate)
        result = make.accu()
    elif kind == "exists":
        init = make.const("bool", False)
        condition = make.call(NOT_STRICTLY_FALSE, make.call(LOGICAL_NOT, make.accu()))
        step = make.call(LOGICAL_OR, make.accu(), predicate)
        result = make.accu()
    else:
        init = make.const("int", 0)
        condition = make.const("bool", True)
        plus_one = make.call(ADD, make.accu(), make.const("int", 1))
        step = make.call(CONDITIONAL, predicate, plus_one, make.accu())
        result = make.call(EQUALS, make.accu(), make.const("int", 1))
    return Comprehension(make.new_id(), make.at, var, target, ACCUMULATOR, init, condition, step, result)


def _map(kind: str, target: Expr, args: tuple[Expr, ...], make: _Builder) -> Expr:
    var = _iter_var(args[0], "argument is not an identifier")
    init = CreateList(make.new_id(), make.at, ())
    condition = make.const("bool", True)
    accu = make.accu()
    # map appends the transform (its last argument); filter appends the element itself (the very node of
    # the first argument, which cel-go reuses rather than copies).
    appended = args[0] if kind == "filter" else args[-1]
    step = make.call(ADD, accu, CreateList(make.new_id(), make.at, (appended,)))
    if kind == "filter" or len(args) == 3:
        step = make.call(CONDITIONAL, args[1], step, make.accu())
    result = make.accu()
    return Comprehension(make.new_id(), make.at, var, target, ACCUMULATOR, init, condition, step, result)
