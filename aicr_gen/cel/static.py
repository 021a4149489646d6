"""Static facts about a parsed expression: the paths into variables and the operands of comparisons that
lints read, the fields each variable's value is read at (what lets ``rules test`` share results between
alike events), and the cost estimate the step limit is checked against at compile time."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from aicr_gen.cel import ast
from aicr_gen.cel.ast import Call, Comprehension, Constant, CreateList, CreateStruct, Expr, Ident, Select
from aicr_gen.cel.program import Comparison, Operand, Selection
from aicr_gen.cel.values import Uint

_RELATIONS = {ast.EQUALS: "==", ast.NOT_EQUALS: "!=", ast.LESS: "<", ast.LESS_EQUALS: "<=", ast.GREATER: ">",
              ast.GREATER_EQUALS: ">=", ast.IN: "in"}


def constant_value(const: Constant) -> Any:
    return Uint(const.value) if const.kind == "uint" else const.value  # type: ignore[arg-type]


def children(expr: Expr) -> Iterator[Expr]:
    if isinstance(expr, Select):
        yield expr.operand
    elif isinstance(expr, Call):
        if expr.target is not None:
            yield expr.target
        yield from expr.args
    elif isinstance(expr, CreateList):
        yield from expr.elements
    elif isinstance(expr, CreateStruct):
        for entry in expr.entries:
            if not isinstance(entry.key, str):
                yield entry.key
            yield entry.value
    elif isinstance(expr, Comprehension):
        yield from (expr.iter_range, expr.accu_init, expr.loop_condition, expr.loop_step, expr.result)


class Facts:
    """Walks an expression once, keeping track of the comprehension variables in scope, and collects the
    selections and comparisons in source order and the top-level fields read per variable. Only plain names
    count as variables here (``event``, ``node``): a dotted declared name or a container makes the fields
    read unknown."""

    def __init__(self, variables: frozenset[str], *, exact: bool) -> None:
        self.variables = variables
        self.selections: dict[Selection, None] = {}
        self.comparisons: list[Comparison] = []
        self._fields: dict[str, set[str]] | None = {name: set() for name in variables} if exact else None
        self._claimed: set[int] = set()
        """The variable reads (by node id) that stand for a read at one field (``var.f``)."""

    def fields_read(self) -> dict[str, tuple[str, ...]] | None:
        """Per declared variable, the top-level fields the expression selects (``var.f``, ``var['f']``,
        ``has(var.f)``), or None when it uses one in any other way (whole, by a computed key): then its value
        may depend on all of the variable."""
        if self._fields is None:
            return None
        return {variable: tuple(sorted(names)) for variable, names in self._fields.items()}

    def walk(self, expr: Expr) -> None:
        stack: list[tuple[Expr, frozenset[str]]] = [(expr, frozenset())]
        while stack:
            node, local = stack.pop()
            pending: list[tuple[Expr, frozenset[str]]] = []
            if isinstance(node, Comprehension):
                self._visit(node, local)
                inner = local | {node.iter_var, node.iter_var2, node.accu_var}
                pending = [(node.iter_range, local), (node.accu_init, local | {node.accu_var}),
                           (node.loop_condition, inner), (node.loop_step, inner),
                           (node.result, local | {node.accu_var})]
            else:
                self._visit(node, local)
                pending = [(child, local) for child in children(node)]
            stack.extend(reversed(pending))

    def _visit(self, node: Expr, local: frozenset[str]) -> None:
        if isinstance(node, Comprehension):
            if node.iter_var in self.variables or node.iter_var2 in self.variables:
                self._fields = None  # a comprehension variable that hides a declared one: kept simple, unknown
            return
        if isinstance(node, Ident):
            if id(node) not in self._claimed and self._variable(node, local) is not None:
                self._fields = None  # the whole variable: its value may depend on every field
            return
        if isinstance(node, Select) or (isinstance(node, Call) and node.function == ast.INDEX
                                        and node.target is None and len(node.args) == 2):
            path = self.path_of(node, local)
            if path is not None:
                self.selections[Selection(path[0], path[1], isinstance(node, Select) and node.test_only)] = None
            self._field_read(node, local)
        elif isinstance(node, Call) and node.function in _RELATIONS and len(node.args) == 2:
            self.comparisons.append(Comparison(_RELATIONS[node.function], self.operand(node.args[0], local),
                                               self.operand(node.args[1], local)))

    def _variable(self, node: Ident, local: frozenset[str]) -> str | None:
        if node.name.startswith("."):
            name = node.name[1:]
        elif node.name in local:
            return None
        else:
            name = node.name
        return name if name in self.variables else None

    def _field_read(self, node: Select | Call, local: frozenset[str]) -> None:
        """``var.f`` or ``var['f']``: the one read of ``var`` it stands for is at field ``f``."""
        root = node.operand if isinstance(node, Select) else node.args[0]
        if (not isinstance(root, Ident) or root.name.startswith(".") or self._variable(root, local) is None
                or self._fields is None):
            return  # a leading dot counts as a use of the whole variable, kept simple
        name = self._key(node)
        variable = self._variable(root, local)
        if name is None or variable is None:
            self._fields = None
            return
        self._fields[variable].add(name)
        self._claimed.add(id(root))

    @staticmethod
    def _key(node: Select | Call) -> str | None:
        if isinstance(node, Select):
            return node.field
        key = node.args[1]
        return key.value if isinstance(key, Constant) and key.kind == "string" else None  # type: ignore[return-value]

    def path_of(self, node: Expr, local: frozenset[str]) -> tuple[str, tuple[str, ...]] | None:
        """``(variable, fields)`` when ``node`` is ``var.a['b'].c`` on a declared variable."""
        fields: list[str] = []
        while True:
            if isinstance(node, Select):
                fields.append(node.field)
                node = node.operand
            elif isinstance(node, Call) and node.function == ast.INDEX and node.target is None:
                key = node.args[1]
                if not (isinstance(key, Constant) and key.kind == "string"):
                    return None
                fields.append(str(key.value))
                node = node.args[0]
            elif isinstance(node, Ident):
                variable = self._variable(node, local)
                return None if variable is None else (variable, tuple(reversed(fields)))
            else:
                return None

    def operand(self, node: Expr, local: frozenset[str]) -> Operand | None:
        if isinstance(node, Constant):
            return Operand("literal", constant_value(node))
        if isinstance(node, CreateList):
            return Operand("list", tuple(self.operand(item, local) for item in node.elements))
        path = self.path_of(node, local)
        return Operand("path", path) if path else None


def facts(expr: Expr, variables: frozenset[str], *, exact: bool) -> Facts:
    """The facts of ``expr``; ``exact`` False when names may resolve other than plainly (dotted declared
    names, a container), so the fields read are unknown."""
    found = Facts(variables, exact=exact)
    found.walk(expr)
    return found


def depth(expr: Expr) -> int:
    """The height of the syntax tree (a constant is 1)."""
    deepest = 0
    stack: list[tuple[Expr, int]] = [(expr, 1)]
    while stack:
        node, level = stack.pop()
        deepest = max(deepest, level)
        stack.extend((child, level + 1) for child in children(node))
    return deepest


def cost(expr: Expr, limit: int) -> int:
    """A lower bound on the steps an evaluation takes: each node once, comprehension bodies once per element
    of a literal list they range over; stops counting past ``limit``."""
    total = 0
    stack: list[tuple[Expr, int]] = [(expr, 1)]
    while stack:
        node, factor = stack.pop()
        total += factor
        if total > limit:
            return total
        if isinstance(node, Comprehension):
            size = len(node.iter_range.elements) if isinstance(node.iter_range, CreateList) else 1
            inner = factor * max(size, 1)
            stack.extend(((node.iter_range, factor), (node.accu_init, factor), (node.loop_condition, inner),
                          (node.loop_step, inner), (node.result, factor)))
            continue
        stack.extend((child, factor) for child in children(node))
    return total
