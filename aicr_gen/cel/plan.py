"""Planning an ``ast.Expr`` into Python closures with cel-go's semantics: names resolved against the declared
variables and the container, short-circuit logic that absorbs errors, heterogeneous equality, comprehensions
(every macro expands into one) whose accumulator may hold an error, and the step budget charged as they run.

An evaluation error is a raised :class:`CelError`; a comprehension keeps one in its accumulator as an
:class:`_Failed` value, which raises again when read, so ``[1, 'a', 0].all(x, x > 0)`` ends false like
cel-go's, not in error.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any

from aicr_gen.cel import arithmetic, ast
from aicr_gen.cel.ast import Call, Comprehension, Constant, CreateList, CreateStruct, Expr, Ident, Select
from aicr_gen.cel.errors import CelCompileError, CelError, CelLimitError
from aicr_gen.cel.functions import Function
from aicr_gen.cel.program import Code, Scope
from aicr_gen.cel.static import children, constant_value
from aicr_gen.cel.values import (
    MISSING,
    TYPES,
    Uint,
    contains,
    equals,
    key_value,
    kind_of,
    map_get,
    map_key,
    no_overload,
    ordering,
)

_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    ast.ADD: arithmetic.add, ast.SUBTRACT: arithmetic.subtract, ast.MULTIPLY: arithmetic.multiply,
    ast.DIVIDE: arithmetic.divide, ast.MODULO: arithmetic.modulo}
_ORDERINGS: dict[str, Callable[[int], bool]] = {
    ast.LESS: lambda c: c < 0, ast.LESS_EQUALS: lambda c: c <= 0, ast.GREATER: lambda c: c > 0,
    ast.GREATER_EQUALS: lambda c: c >= 0}
_PYTHON_ERRORS = (TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError, ZeroDivisionError)


class _Failed:
    """An error held as a value (in a comprehension's accumulator)."""

    __slots__ = ("error",)

    def __init__(self, error: CelError) -> None:
        self.error = error


def _fails(error: CelError) -> Code:
    def run(scope: Scope) -> Any:
        raise error

    return run


def candidates(name: str, container: str) -> list[str]:
    """The names ``name`` may stand for in ``container``, most qualified first (``x.y`` container: ``x.y.a``,
    ``x.a``, ``a``); a leading dot names the root scope only."""
    if name.startswith("."):
        return [name[1:]]
    found = []
    scope = container
    while scope:
        found.append(f"{scope}.{name}")
        scope = scope.rpartition(".")[0]
    found.append(name)
    return found


class Planner:
    """Turns one expression into a closure. ``references``: undeclared names and functions and wrong
    argument counts are compile errors (what cel-go's checker refuses first); otherwise they fail when
    evaluated, as in cel-go's unchecked programs."""

    def __init__(self, variables: frozenset[str], functions: Mapping[str, Function], *, container: str = "",
                 references: bool = True) -> None:
        self.variables = variables
        self.functions = functions
        self.container = container
        self.references = references
        self.locals: list[str] = []
        self.accumulators: list[tuple[str, bool]] = []
        """The accumulators in scope, innermost last, each with whether it starts as an empty list."""

    def plan(self, expr: Expr) -> Code:
        if isinstance(expr, Constant):
            value = constant_value(expr)
            return lambda scope: value
        if isinstance(expr, Ident):
            return self._ident(expr)
        if isinstance(expr, Select):
            return self._select(expr)
        if isinstance(expr, Call):
            return self._call(expr)
        if isinstance(expr, CreateList):
            return self._list(expr)
        if isinstance(expr, CreateStruct):
            return self._struct(expr)
        return self._comprehension(expr)

    # --- names

    def _ident(self, expr: Ident) -> Code:
        name = expr.name
        if name in self.locals:
            return self._local(name)
        code = self._qualified([name], 1)
        if code is not None:
            return code
        return self._undeclared(name)

    def _local(self, name: str) -> Code:
        if any(accumulator == name for accumulator, _ in self.accumulators):
            def accumulator(scope: Scope) -> Any:
                value = scope.locals[name]
                if type(value) is _Failed:
                    raise value.error
                return value

            return accumulator
        return lambda scope: scope.locals[name]

    def _undeclared(self, name: str) -> Code:
        shown = name.lstrip(".")
        if self.references:
            raise CelCompileError(f"undeclared reference to {shown!r} (declared: "
                                  f"{', '.join(sorted(self.variables)) or 'none'})")
        return _fails(CelError(f"no such attribute: {shown}"))

    def _qualified(self, parts: list[str], count: int) -> Code | None:
        """The variable or type named by the first ``count`` of ``parts`` (a dotted name), or None."""
        for candidate in candidates(".".join(parts[:count]), self.container):
            if candidate in self.variables:
                return self._variable(candidate)
        for candidate in candidates(".".join(parts[:count]), self.container):
            if candidate in TYPES:
                type_value = TYPES[candidate]
                return lambda scope: type_value
        return None

    @staticmethod
    def _variable(name: str) -> Code:
        def run(scope: Scope) -> Any:
            value = scope.vars.get(name, MISSING)
            if value is MISSING:
                raise CelError(f"no value for variable {name!r}")
            return value

        return run

    def _dotted(self, expr: Select) -> list[str] | None:
        """``a.b.c`` as ``["a", "b", "c"]`` when it is a chain of plain selections on a name that is not a
        comprehension variable, else None."""
        parts: list[str] = []
        node: Expr = expr
        while isinstance(node, Select) and not node.test_only:
            parts.append(node.field)
            node = node.operand
        if not isinstance(node, Ident) or node.name in self.locals:
            return None
        parts.append(node.name)
        parts.reverse()
        return parts

    # --- selection

    def _select(self, expr: Select) -> Code:
        if not expr.test_only:
            parts = self._dotted(expr)
            if parts is not None:
                for count in range(len(parts), 0, -1):
                    code = self._qualified(parts, count)
                    if code is not None:
                        for name in parts[count:]:
                            code = self._field(code, name)
                        return code
                return self._undeclared(parts[0])
        target = self.plan(expr.operand)
        name = expr.field
        if expr.test_only:
            def has(scope: Scope) -> bool:
                value = target(scope)
                if type(value) is dict:
                    return name in value
                raise CelError(f"invalid type for field selection: {kind_of(value)}")

            return has
        return self._field(target, name)

    @staticmethod
    def _field(target: Code, name: str) -> Code:
        def run(scope: Scope) -> Any:
            value = target(scope)
            if type(value) is dict:
                item = value.get(name, MISSING)
                if item is MISSING:
                    raise CelError(f"no such key: {name}")
                return item
            raise CelError(f"type '{kind_of(value)}' does not support field selection")

        return run

    # --- calls and operators

    def _call(self, expr: Call) -> Code:
        function, args = expr.function, expr.args
        if expr.target is None and len(args) == 2:
            if function in (ast.LOGICAL_AND, ast.LOGICAL_OR):
                return self._logic(expr)
            if function in _ARITHMETIC:
                return self._arithmetic(expr)
            if function in _ORDERINGS:
                return self._ordering(function, args)
            if function in (ast.EQUALS, ast.NOT_EQUALS, ast.IN, ast.INDEX):
                return self._binary(function, args)
        if expr.target is None and function == ast.CONDITIONAL and len(args) == 3:
            return self._conditional(args)
        if expr.target is None and len(args) == 1:
            if function == ast.LOGICAL_NOT:
                return self._not(self.plan(args[0]))
            if function == ast.NEGATE:
                operand = self.plan(args[0])
                negate = arithmetic.negate
                return lambda scope: negate(operand(scope))
            if function == ast.NOT_STRICTLY_FALSE:
                return self._not_strictly_false(self.plan(args[0]))
        return self._function(expr)

    def _logic(self, expr: Call) -> Code:
        """``a && b && c`` (the parser balances such chains) as one loop over its operands."""
        op = expr.function
        operands: list[Expr] = []
        stack: list[Expr] = [expr]
        while stack:
            node = stack.pop()
            if isinstance(node, Call) and node.function == op and node.target is None and len(node.args) == 2:
                stack.extend(reversed(node.args))
            else:
                operands.append(node)
        parts = [self.plan(operand) for operand in operands]
        decisive = op == ast.LOGICAL_OR
        other = not decisive

        def run(scope: Scope) -> Any:
            error: CelError | None = None
            for part in parts:
                try:
                    value = part(scope)
                except CelError as err:
                    error = error or err
                    continue
                if value is decisive:
                    return decisive
                if value is not other:
                    error = error or no_overload(op, value)
            if error is not None:
                raise error
            return other

        return run

    def _arithmetic(self, expr: Call) -> Code:
        """``a + b - c`` nests to the left; planned as a loop, not as recursion. ``@result + [x]`` in a
        comprehension whose accumulator starts as a list literal appends in place (the list is its own)."""
        function = expr.function
        left, right = expr.args
        if (function == ast.ADD and isinstance(left, Ident) and self._list_accumulator(left.name)
                and isinstance(right, CreateList) and len(right.elements) == 1):
            return self._append(self._local(left.name), self.plan(right.elements[0]))
        steps: list[tuple[Callable[[Any, Any], Any], Code]] = []
        node: Expr = expr
        while (isinstance(node, Call) and node.target is None and node.function in _ARITHMETIC
               and len(node.args) == 2):
            steps.append((_ARITHMETIC[node.function], self.plan(node.args[1])))
            node = node.args[0]
        first = self.plan(node)
        steps.reverse()
        if len(steps) == 1:
            apply, second = steps[0]

            def one(scope: Scope) -> Any:
                return scope.run.sized(apply(first(scope), second(scope)))

            return one

        def run(scope: Scope) -> Any:
            value = first(scope)
            for step, operand in steps:
                value = scope.run.sized(step(value, operand(scope)))
            return value

        return run

    def _list_accumulator(self, name: str) -> bool:
        for accumulator, list_init in reversed(self.accumulators):
            if accumulator == name:
                return list_init
        return False

    @staticmethod
    def _append(accumulator: Code, element: Code) -> Code:
        def run(scope: Scope) -> Any:
            items = accumulator(scope)
            items.append(element(scope))
            return scope.run.sized(items)

        return run

    def _ordering(self, function: str, args: tuple[Expr, ...]) -> Code:
        left, right = self.plan(args[0]), self.plan(args[1])
        test = _ORDERINGS[function]
        return lambda scope: test(ordering(function, left(scope), right(scope)))

    def _binary(self, function: str, args: tuple[Expr, ...]) -> Code:
        left, right = self.plan(args[0]), self.plan(args[1])
        if function == ast.EQUALS:
            return lambda scope: equals(left(scope), right(scope))
        if function == ast.NOT_EQUALS:
            return lambda scope: not equals(left(scope), right(scope))
        if function == ast.IN:
            return lambda scope: contains(left(scope), right(scope))
        return lambda scope: _index(left(scope), right(scope))

    def _conditional(self, args: tuple[Expr, ...]) -> Code:
        condition, when_true, when_false = (self.plan(arg) for arg in args)

        def run(scope: Scope) -> Any:
            value = condition(scope)
            if value is True:
                return when_true(scope)
            if value is False:
                return when_false(scope)
            raise no_overload(ast.CONDITIONAL, value)

        return run

    @staticmethod
    def _not(operand: Code) -> Code:
        def run(scope: Scope) -> bool:
            value = operand(scope)
            if type(value) is bool:
                return not value
            raise no_overload(ast.LOGICAL_NOT, value)

        return run

    @staticmethod
    def _not_strictly_false(operand: Code) -> Code:
        def run(scope: Scope) -> bool:
            try:
                return operand(scope) is not False
            except CelError:
                return True

        return run

    def _function(self, expr: Call) -> Code:
        name, args, target = expr.function, list(expr.args), expr.target
        method = target is not None
        if target is not None:
            qualified = self._function_namespace(target)
            if qualified is not None and f"{qualified}.{name}" in self.functions:
                name, method = f"{qualified}.{name}", False
            else:
                args.insert(0, target)
        function = self.functions.get(name)
        problem = None
        if function is None:
            problem = f"undeclared reference to function {name!r}"
        else:
            arities = function.method_arities if method else function.global_arities
            if len(args) not in arities:
                problem = _arity_problem(name, arities, len(args), method, function)
        if problem is not None:
            if self.references:
                raise CelCompileError(problem)
            for arg in args:
                self.plan(arg)  # still refuse what cannot be planned at all
            return _fails(CelError(f"no matching overload: {problem}"))
        assert function is not None
        codes = [self.plan(arg) for arg in args]
        return _applied(name, function.impl, codes)

    def _function_namespace(self, target: Expr) -> str | None:
        """``strings`` in ``strings.quote(x)``: a dotted name that is not a variable or a local."""
        parts: list[str] = []
        node = target
        while isinstance(node, Select) and not node.test_only:
            parts.append(node.field)
            node = node.operand
        if not isinstance(node, Ident) or node.name in self.locals:
            return None
        parts.append(node.name.lstrip("."))
        parts.reverse()
        for count in range(len(parts), 0, -1):
            if any(c in self.variables for c in candidates(".".join(parts[:count]), self.container)):
                return None
        return ".".join(parts)

    # --- literals

    def _list(self, expr: CreateList) -> Code:
        items = [self.plan(element) for element in expr.elements]
        if not items:
            return lambda scope: []
        return lambda scope: [item(scope) for item in items]

    def _struct(self, expr: CreateStruct) -> Code:
        if expr.message_name:
            raise CelCompileError(f"message construction ({expr.message_name}{{...}}) is not supported")
        pairs = []
        for entry in expr.entries:
            assert not isinstance(entry.key, str)
            pairs.append((self.plan(entry.key), self.plan(entry.value)))

        def run(scope: Scope) -> Any:
            result: dict[Any, Any] = {}
            for key_code, value_code in pairs:
                key = map_key(key_code(scope))
                if key in result:
                    raise CelError(f"Failed with repeated key: {key_value(key)!r}")
                result[key] = value_code(scope)
            return scope.run.sized(result)

        return run

    # --- comprehensions

    def _comprehension(self, expr: Comprehension) -> Code:
        decisive = _quantifier(expr)
        if decisive is not None:
            return self._quantified(expr, decisive)
        iter_range = self.plan(expr.iter_range)
        accu_var, iter_var, iter_var2 = expr.accu_var, expr.iter_var, expr.iter_var2
        self.locals.append(accu_var)
        list_init = isinstance(expr.accu_init, CreateList) and not expr.accu_init.elements
        self.accumulators.append((accu_var, list_init))
        try:
            init = self.plan(expr.accu_init)
            self.locals.extend((iter_var, iter_var2))
            try:
                condition = self.plan(expr.loop_condition)
                step = self.plan(expr.loop_step)
            finally:
                del self.locals[-2:]
            result = self.plan(expr.result)
        finally:
            self.locals.pop()
            self.accumulators.pop()
        weight = 1 + _size(expr.loop_condition) + _size(expr.loop_step)
        return _fold(iter_range, init, condition, step, result, names=(accu_var, iter_var, iter_var2),
                     weight=weight, macro=_macro(expr))


    def _quantified(self, expr: Comprehension, decisive: bool) -> Code:
        """``all`` and ``exists`` as one loop over the predicate, which is what their comprehension computes:
        the first decisive value ends it, else an error seen on the way, else the other value."""
        iter_range = self.plan(expr.iter_range)
        assert isinstance(expr.loop_step, Call)
        self.locals.append(expr.iter_var)
        try:
            predicate = self.plan(expr.loop_step.args[1])
        finally:
            self.locals.pop()
        weight = 1 + _size(expr.loop_condition) + _size(expr.loop_step)
        op = expr.loop_step.function
        other = not decisive
        name = _macro(expr)
        variable = expr.iter_var

        def run(scope: Scope) -> bool:
            collection = iter_range(scope)
            kind = type(collection)
            if kind is not list and kind is not dict:
                raise CelError(f"{name}() needs a list or map, not {kind_of(collection)}")
            local = dict(scope.locals)
            inner = Scope(scope.vars, scope.run, local)
            charge = scope.run.charge
            error: CelError | None = None
            for item in collection if kind is list else map(key_value, collection):
                charge(weight)
                local[variable] = item
                try:
                    value = predicate(inner)
                except CelError as err:
                    error = error or err
                    continue
                if value is decisive:
                    return bool(value)
                if value is not other:
                    error = error or no_overload(op, value)
            if error is not None:
                raise error
            return other

        return run


def _quantifier(expr: Comprehension) -> bool | None:
    """For the expansion of ``all`` (False) or ``exists`` (True), the value that decides it; else None."""
    init, step, condition, result = expr.accu_init, expr.loop_step, expr.loop_condition, expr.result
    if (expr.iter_var2 or not isinstance(init, Constant) or init.kind != "bool"
            or not isinstance(step, Call) or step.target is not None or len(step.args) != 2
            or step.function not in (ast.LOGICAL_AND, ast.LOGICAL_OR)
            or not isinstance(step.args[0], Ident) or step.args[0].name != expr.accu_var
            or not isinstance(result, Ident) or result.name != expr.accu_var
            or not isinstance(condition, Call) or condition.function != ast.NOT_STRICTLY_FALSE):
        return None
    decisive = step.function == ast.LOGICAL_OR
    return decisive if init.value is not decisive else None


def _macro(expr: Comprehension) -> str:
    """The macro a comprehension expands (told by its shape), for messages."""
    init, step = expr.accu_init, expr.loop_step
    if isinstance(init, Constant):
        if init.kind == "bool":
            return "all" if init.value else "exists"
        return "exists_one" if init.kind == "int" else "comprehension"
    if isinstance(step, Call) and step.function == ast.CONDITIONAL and isinstance(step.args[1], Call):
        appended = step.args[1].args[1] if len(step.args[1].args) == 2 else None
        if (isinstance(appended, CreateList) and appended.elements and isinstance(appended.elements[0], Ident)
                and appended.elements[0].name == expr.iter_var):
            return "filter"
    return "map" if isinstance(init, CreateList) else "comprehension"


def _fold(iter_range: Code, init: Code, condition: Code, step: Code, result: Code, *,
          names: tuple[str, str, str], weight: int, macro: str) -> Code:
    """A comprehension as cel-go folds it: for each element (a map's keys), stop when the condition is
    false, else step the accumulator; then the result. ``weight`` steps are charged per element."""
    accu_var, iter_var, iter_var2 = names
    two = bool(iter_var2)

    def run(scope: Scope) -> Any:
        collection = iter_range(scope)
        kind = type(collection)
        if kind is list:
            items: Any = enumerate(collection) if two else collection
        elif kind is dict:
            items = ((key_value(k), v) for k, v in collection.items()) if two else map(key_value, collection)
        else:
            raise CelError(f"{macro}() needs a list or map, not {kind_of(collection)}")
        local = dict(scope.locals)
        inner = Scope(scope.vars, scope.run, local)
        try:
            local[accu_var] = init(inner)
        except CelError as err:
            local[accu_var] = _Failed(err)
        charge = scope.run.charge
        for item in items:
            charge(weight)
            if two:
                local[iter_var], local[iter_var2] = item
            else:
                local[iter_var] = item
            try:
                if condition(inner) is False:
                    break
            except CelError:
                pass
            try:
                local[accu_var] = step(inner)
            except CelError as err:
                local[accu_var] = _Failed(err)
        return result(inner)

    return run


def _size(expr: Expr) -> int:
    count = 0
    stack = [expr]
    while stack:
        node = stack.pop()
        count += 1
        stack.extend(children(node))
    return count


def _arity_problem(name: str, arities: frozenset[int], count: int, method: bool, function: Function) -> str:
    style = f"x.{name}(...)" if method else f"{name}(...)"
    if not arities:
        other = f"{name}(...)" if method else f"x.{name}(...)"
        return f"{name} is called as {other}, not {style}"
    counts = sorted(arity - 1 if method else arity for arity in arities)
    return (f"{style} takes {' or '.join(map(str, counts))} argument(s), not "
            f"{count - 1 if method else count}")


def _applied(name: str, impl: Callable[..., Any], codes: list[Code]) -> Code:
    def guarded(*values: Any) -> Any:
        try:
            return impl(*values)
        except (CelError, CelLimitError):
            raise
        except RecursionError:
            raise
        except _PYTHON_ERRORS as err:
            raise CelError(f"{name}: {err}") from None

    if len(codes) == 1:
        (only,) = codes
        return lambda scope: scope.run.sized(guarded(only(scope)))
    if len(codes) == 2:
        first, second = codes
        return lambda scope: scope.run.sized(guarded(first(scope), second(scope)))
    return lambda scope: scope.run.sized(guarded(*[code(scope) for code in codes]))


def _index(container: Any, key: Any) -> Any:
    kind = type(container)
    if kind is dict:
        item = map_get(container, key)
        if item is MISSING:
            raise CelError(f"no such key: {key_value(key)!r}")
        return item
    if kind is list:
        key_kind = type(key)
        if key_kind is int or key_kind is Uint or (key_kind is float and math.isfinite(key) and key == int(key)):
            position = int(key)
        else:
            raise no_overload(ast.INDEX, container, key)
        if not 0 <= position < len(container):
            raise CelError(f"index out of range: {position}")
        return container[position]
    raise no_overload(ast.INDEX, container, key)
