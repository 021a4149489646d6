"""CEL's abstract syntax: one frozen node type per case of cel-spec's ``cel.expr.Expr``
(``proto/cel/expr/syntax.proto``), and ``unparse``, a canonical fully parenthesised rendering.

Every node has the ``id`` cel-go's parser would give it (the same numbering, so the checker and evaluator
can key their results by it) and ``offset``, the code point offset in the source where cel-go locates it
(an operator at its token, a call at its ``(``, a select at its ``.``, a list at ``[``, a macro expansion at
the call's ``(``). Operators are ``Call`` nodes named as in cel-go (``_+_``, ``!_``, ``_[_]``, ``@in``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

ConstKind = Literal["null", "bool", "int", "uint", "double", "string", "bytes"]
ConstValue = None | bool | int | float | str | bytes

CONDITIONAL = "_?_:_"
LOGICAL_AND = "_&&_"
LOGICAL_OR = "_||_"
LOGICAL_NOT = "!_"
NEGATE = "-_"
EQUALS = "_==_"
NOT_EQUALS = "_!=_"
LESS = "_<_"
LESS_EQUALS = "_<=_"
GREATER = "_>_"
GREATER_EQUALS = "_>=_"
IN = "@in"
ADD = "_+_"
SUBTRACT = "_-_"
MULTIPLY = "_*_"
DIVIDE = "_/_"
MODULO = "_%_"
INDEX = "_[_]"
OPT_INDEX = "_[?_]"
OPT_SELECT = "_?._"
NOT_STRICTLY_FALSE = "@not_strictly_false"
ACCUMULATOR = "@result"
"""The accumulator of macro comprehensions: cel-go's hidden name, which no source text can spell."""


@dataclass(frozen=True, slots=True)
class Constant:
    id: int
    offset: int
    kind: ConstKind
    value: ConstValue
    """``None``, ``bool``, ``int`` (for int and uint), ``float``, ``str`` or ``bytes``, as ``kind`` says."""


@dataclass(frozen=True, slots=True)
class Ident:
    id: int
    offset: int
    name: str
    """As written, with a leading dot for a root-scoped name (``.a``)."""


@dataclass(frozen=True, slots=True)
class Select:
    id: int
    offset: int
    operand: Expr
    field: str
    test_only: bool = False
    """True for ``has(operand.field)``."""


@dataclass(frozen=True, slots=True)
class Call:
    id: int
    offset: int
    function: str
    args: tuple[Expr, ...]
    target: Expr | None = None
    """The receiver of ``target.function(args)``; None for a global call or an operator."""


@dataclass(frozen=True, slots=True)
class CreateList:
    id: int
    offset: int
    elements: tuple[Expr, ...]
    optional_indices: tuple[int, ...] = ()
    """Indices of the ``?elem`` elements."""


@dataclass(frozen=True, slots=True)
class Entry:
    """A field initialiser (``key`` is the field name) or a map entry (``key`` is an expression); its
    offset is that of the ``:``."""

    id: int
    offset: int
    key: str | Expr
    value: Expr
    optional_entry: bool = False


@dataclass(frozen=True, slots=True)
class CreateStruct:
    """A message (``message_name`` set, string keys) or a map (``message_name`` empty, expression keys)."""

    id: int
    offset: int
    message_name: str
    entries: tuple[Entry, ...]


@dataclass(frozen=True, slots=True)
class Comprehension:
    id: int
    offset: int
    iter_var: str
    iter_range: Expr
    accu_var: str
    accu_init: Expr
    loop_condition: Expr
    loop_step: Expr
    result: Expr
    iter_var2: str = ""


Expr = Constant | Ident | Select | Call | CreateList | CreateStruct | Comprehension

_BINARY = {
    CONDITIONAL: "?", LOGICAL_AND: "&&", LOGICAL_OR: "||", EQUALS: "==", NOT_EQUALS: "!=", LESS: "<",
    LESS_EQUALS: "<=", GREATER: ">", GREATER_EQUALS: ">=", IN: "in", ADD: "+", SUBTRACT: "-",
    MULTIPLY: "*", DIVIDE: "/", MODULO: "%",
}
_UNARY = {LOGICAL_NOT: "!", NEGATE: "-"}
_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_KEYWORDS = frozenset({"in", "true", "false", "null"})
_STRING_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def unparse(expr: Expr) -> str:
    """The expression as CEL text with every operator parenthesised, for tests and messages: ``(a + (b *
    c))``, ``x.f(y)``, ``has(m.f)``, ``a[?i]``; a comprehension shows as ``__comprehension__(iter_var,
    [iter_var2,] range, accu_var, init, condition, step, result)``."""
    if isinstance(expr, Constant):
        return _constant(expr)
    if isinstance(expr, Ident):
        return expr.name
    if isinstance(expr, Select):
        text = f"{unparse(expr.operand)}.{_field(expr.field)}"
        return f"has({text})" if expr.test_only else text
    if isinstance(expr, Call):
        return _call(expr)
    if isinstance(expr, CreateList):
        optional = set(expr.optional_indices)
        items = ("?" * (index in optional) + unparse(item) for index, item in enumerate(expr.elements))
        return "[" + ", ".join(items) + "]"
    if isinstance(expr, CreateStruct):
        entries = ", ".join(
            "?" * entry.optional_entry
            + (_field(entry.key) if isinstance(entry.key, str) else unparse(entry.key))
            + ": " + unparse(entry.value)
            for entry in expr.entries)
        return f"{expr.message_name}{{{entries}}}"
    parts = [expr.iter_var, *([expr.iter_var2] if expr.iter_var2 else []), unparse(expr.iter_range),
             expr.accu_var, unparse(expr.accu_init), unparse(expr.loop_condition), unparse(expr.loop_step),
             unparse(expr.result)]
    return "__comprehension__(" + ", ".join(parts) + ")"


def _call(call: Call) -> str:
    args = call.args
    if call.target is None:
        if call.function == CONDITIONAL and len(args) == 3:
            return f"({unparse(args[0])} ? {unparse(args[1])} : {unparse(args[2])})"
        if call.function in _BINARY and len(args) == 2:
            return f"({unparse(args[0])} {_BINARY[call.function]} {unparse(args[1])})"
        if call.function in _UNARY and len(args) == 1:
            operand = unparse(args[0])
            # '-(1)' and '-(-1)' must not print as '-1' and '--1', which read back as literals
            signed = isinstance(args[0], Constant) and args[0].kind in ("int", "uint", "double")
            return f"({_UNARY[call.function]}{f'({operand})' if signed or operand.startswith('-') else operand})"
        if call.function in (INDEX, OPT_INDEX) and len(args) == 2:
            return f"{unparse(args[0])}[{'?' * (call.function == OPT_INDEX)}{unparse(args[1])}]"
        if call.function == OPT_SELECT and len(args) == 2 and isinstance(args[1], Constant):
            return f"{unparse(args[0])}.?{_field(str(args[1].value))}"
        prefix = ""
    else:
        prefix = unparse(call.target) + "."
    return prefix + call.function + "(" + ", ".join(unparse(arg) for arg in args) + ")"


def _field(name: str) -> str:
    return name if _PLAIN_NAME.match(name) and name not in _KEYWORDS else f"`{name}`"


def _constant(const: Constant) -> str:
    value = const.value
    if const.kind == "null":
        return "null"
    if const.kind == "bool":
        return "true" if value else "false"
    if const.kind == "uint":
        assert isinstance(value, int)
        return f"{value}u"
    if const.kind == "double":
        assert isinstance(value, float)
        text = repr(value)
        return text if any(c in text for c in ".enia") else text + ".0"
    if const.kind == "string":
        assert isinstance(value, str)
        return '"' + "".join(_STRING_ESCAPES.get(c) or _escape_char(c) for c in value) + '"'
    if const.kind == "bytes":
        assert isinstance(value, bytes)
        return 'b"' + "".join(_STRING_ESCAPES.get(chr(b)) or (chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}")
                              for b in value) + '"'
    assert isinstance(value, int)
    return str(value)


def _escape_char(char: str) -> str:
    code = ord(char)
    if char.isprintable():
        return char
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"
