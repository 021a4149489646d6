"""Compiling a parse tree into Python closures with cel-go's semantics (short-circuit logic that absorbs
errors, heterogeneous equality, macros), charging the step budget as they run."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from aicr_gen.certify.cel.arithmetic import _add, _divide, _modulo, _multiply, _negate, _subtract
from aicr_gen.certify.cel.errors import CelCompileError, CelError, CelLimitError
from aicr_gen.certify.cel.functions import MACROS
from aicr_gen.certify.cel.parse import _literal
from aicr_gen.certify.cel.program import Code, Comparison, Selection, _Scope
from aicr_gen.certify.cel.static import _StaticFacts
from aicr_gen.certify.cel.values import (
    _MISSING,
    _NUMBERS,
    _TYPES,
    _contains,
    _map_lookup,
    _no_overload,
    _ordering,
    equals,
    kind_of,
)

if TYPE_CHECKING:
    from aicr_gen.certify.cel.environment import Environment


_OPS = {"relation_lt": "<", "relation_le": "<=", "relation_gt": ">", "relation_ge": ">=",
        "relation_eq": "==", "relation_ne": "!=", "relation_in": "in",
        "addition_add": "+", "addition_sub": "-",
        "multiplication_mul": "*", "multiplication_div": "/", "multiplication_mod": "%"}
_ARITHMETIC: dict[str, Callable[[Any, Any], Any]] = {
    "+": _add, "-": _subtract, "*": _multiply, "/": _divide, "%": _modulo}


def _relation(op: str) -> Callable[[Any, Any], Any]:
    if op == "==":
        return equals
    if op == "!=":
        return lambda a, b: not equals(a, b)
    if op == "in":
        return _contains
    tests: dict[str, Callable[[int], bool]] = {"<": lambda c: c < 0, "<=": lambda c: c <= 0,
                                               ">": lambda c: c > 0, ">=": lambda c: c >= 0}
    test = tests[op]
    return lambda a, b: test(_ordering(f"_{op}_", a, b))


class _Compiler(_StaticFacts):
    """Turns a cel-python parse tree into closures, collecting what lints need on the way."""

    def __init__(self, environment: Environment) -> None:
        self.env = environment
        self.locals: list[str] = []
        self.selections: list[Selection] = []
        self.comparisons: list[Comparison] = []

    def compile(self, tree: Any) -> Code:
        node = self._unwrap(tree)
        handler = getattr(self, f"_c_{node.data}", None)
        if handler is None:
            raise CelCompileError(f"unsupported construct {node.data!r}")
        code: Code = handler(node)
        return code

    def _chain(self, tree: Any) -> list[Any]:
        operands = []
        while len(tree.children) == 2:
            operands.append(tree.children[1])
            tree = tree.children[0]
        operands.append(tree.children[0])
        operands.reverse()
        return operands

    def _c_expr(self, tree: Any) -> Code:
        condition, when_true, when_false = (self.compile(child) for child in tree.children)

        def run(scope: _Scope) -> Any:
            value = condition(scope)
            if value is True:
                return when_true(scope)
            if value is False:
                return when_false(scope)
            raise _no_overload("_?_:_", value)

        return run

    def _logic(self, tree: Any, decisive: bool) -> Code:
        parts = [self.compile(child) for child in self._chain(tree)]
        op = "_||_" if decisive else "_&&_"

        def run(scope: _Scope) -> Any:
            error: CelError | None = None
            for part in parts:
                try:
                    value = part(scope)
                except CelError as err:
                    error = error or err
                    continue
                if value is decisive:
                    return decisive
                if value is not (not decisive):
                    error = error or _no_overload(op, value)
            if error is not None:
                raise error
            return not decisive

        return run

    def _c_conditionalor(self, tree: Any) -> Code:
        return self._logic(tree, True)

    def _c_conditionaland(self, tree: Any) -> Code:
        return self._logic(tree, False)

    def _c_relation(self, tree: Any) -> Code:
        op_node, right_tree = tree.children
        op = _OPS[op_node.data]
        left_tree = op_node.children[0]
        self.comparisons.append(Comparison(op, self.operand(left_tree), self.operand(right_tree)))
        left, right = self.compile(left_tree), self.compile(right_tree)
        apply = _relation(op)
        return lambda scope: apply(left(scope), right(scope))

    def _binary(self, tree: Any) -> Code:
        """``a + b - c``: lark nests left-associative chains; compile them as a loop, not recursion."""
        steps: list[tuple[Callable[[Any, Any], Any], Code]] = []
        while len(tree.children) == 2 and tree.data in ("addition", "multiplication"):
            op_node, right_tree = tree.children
            steps.append((_ARITHMETIC[_OPS[op_node.data]], self.compile(right_tree)))
            tree = self._unwrap(op_node.children[0])
        first = self.compile(tree)
        steps.reverse()

        def run(scope: _Scope) -> Any:
            value = first(scope)
            for apply, right in steps:
                try:
                    value = apply(value, right(scope))
                except (OverflowError, ValueError, TypeError) as err:
                    raise CelError(f"arithmetic error: {err}") from None
                scope.run.sized(value)
            return value

        return run

    _c_addition = _binary
    _c_multiplication = _binary

    def _c_unary(self, tree: Any) -> Code:
        ops: list[str] = []
        while tree.data == "unary" and len(tree.children) == 2:
            ops.append(tree.children[0].data)
            tree = self._unwrap(tree.children[1])
        operand = self.compile(tree)
        ops.reverse()

        def run(scope: _Scope) -> Any:
            value = operand(scope)
            for op in ops:
                if op == "unary_neg":
                    value = _negate(value)
                elif type(value) is bool:
                    value = not value
                else:
                    raise _no_overload("!_", value)
            return value

        return run

    def _c_member_dot(self, tree: Any) -> Code:
        path = self.path_of(tree)
        if path is not None:
            self.selections.append(Selection(path[0], path[1], False))
        target = self.compile(tree.children[0])
        name = str(tree.children[1])

        def run(scope: _Scope) -> Any:
            value = target(scope)
            if type(value) is dict:
                if name in value:
                    return value[name]
                raise CelError(f"no such key: {name!r}")
            if kind_of(value) == "map":
                found, item = _map_lookup(value, name)
                if found:
                    return item
                raise CelError(f"no such key: {name!r}")
            raise CelError(f"cannot select field {name!r} from a {kind_of(value)}")

        return run

    def _c_member_index(self, tree: Any) -> Code:
        path = self.path_of(tree)
        if path is not None:
            self.selections.append(Selection(path[0], path[1], False))
        target, index = self.compile(tree.children[0]), self.compile(tree.children[1])

        def run(scope: _Scope) -> Any:
            container, key = target(scope), index(scope)
            kind = kind_of(container)
            if kind == "map":
                found, item = _map_lookup(container, key)
                if not found:
                    raise CelError(f"no such key: {key!r}")
                return item
            if kind == "list":
                key_kind = kind_of(key)
                if key_kind not in _NUMBERS or key != int(key):
                    raise _no_overload("_[_]", container, key)
                position = int(key)
                if not 0 <= position < len(container):
                    raise CelError(f"index out of range: {position}")
                return container[position]
            raise _no_overload("_[_]", container, key)

        return run

    def _c_member_dot_arg(self, tree: Any) -> Code:
        name = str(tree.children[1])
        args = list(tree.children[2].children) if len(tree.children) == 3 else []
        if name in MACROS:
            return self._macro(name, tree.children[0], args)
        return self._call(name, [tree.children[0], *args], method=True)

    def _c_member_object(self, tree: Any) -> Code:
        raise CelCompileError("message construction (Type{field: value}) is not supported")

    def _c_literal(self, tree: Any) -> Code:
        value = _literal(tree.children[0])
        return lambda scope: value

    def _c_ident(self, tree: Any) -> Code:
        name = str(tree.children[0])
        if name in self.locals or name in self.env.variables:
            def run(scope: _Scope) -> Any:
                value = scope.vars.get(name, _MISSING)
                if value is _MISSING:
                    raise CelError(f"no value for variable {name!r}")
                return value

            return run
        if name in _TYPES:
            type_value = _TYPES[name]
            return lambda scope: type_value
        raise CelCompileError(f"undeclared reference to {name!r} (declared: "
                              f"{', '.join(sorted(self.env.variables)) or 'none'})")

    def _c_dot_ident(self, tree: Any) -> Code:
        return self._c_ident(tree)

    def _c_ident_arg(self, tree: Any) -> Code:
        name = str(tree.children[0])
        args = list(tree.children[1].children) if len(tree.children) == 2 else []
        if name == "has":
            return self._has(args)
        return self._call(name, args, method=False)

    _c_dot_ident_arg = _c_ident_arg

    def _c_paren_expr(self, tree: Any) -> Code:
        return self.compile(tree.children[0])

    def _c_list_lit(self, tree: Any) -> Code:
        items = [self.compile(child) for child in tree.children[0].children] if tree.children else []
        return lambda scope: [item(scope) for item in items]

    def _c_map_lit(self, tree: Any) -> Code:
        children = tree.children[0].children if tree.children else []
        pairs = [(self.compile(children[i]), self.compile(children[i + 1])) for i in range(0, len(children), 2)]

        def run(scope: _Scope) -> Any:
            result: dict[Any, Any] = {}
            for key_code, value_code in pairs:
                key = key_code(scope)
                if kind_of(key) not in ("string", "int", "uint", "bool"):
                    raise CelError(f"unsupported map key type {kind_of(key)}")
                if _map_lookup(result, key)[0]:
                    raise CelError(f"duplicate map key {key!r}")
                result[key] = value_code(scope)
            return result

        return run

    def _has(self, args: list[Any]) -> Code:
        node = self._unwrap(args[0]) if len(args) == 1 else None
        if node is None or node.data != "member_dot":
            raise CelCompileError("has() takes one field selection, e.g. has(event.metadata.key)")
        path = self.path_of(node)
        if path is not None:
            self.selections.append(Selection(path[0], path[1], True))
        target = self.compile(node.children[0])
        name = str(node.children[1])

        def run(scope: _Scope) -> bool:
            value = target(scope)
            if kind_of(value) != "map":
                raise CelError(f"has() cannot test a field of a {kind_of(value)}")
            return _map_lookup(value, name)[0]

        return run

    def _call(self, name: str, args: list[Any], *, method: bool) -> Code:
        function = self.env.functions.get(name)
        if function is None:
            raise CelCompileError(f"undeclared reference to function {name!r}")
        arities = function.method_arities if method else function.global_arities
        if len(args) not in arities:
            style = f"x.{name}(...)" if method else f"{name}(...)"
            if not arities:
                other = f"{name}(...)" if method else f"x.{name}(...)"
                raise CelCompileError(f"{name} is called as {other}, not {style}")
            counts = sorted(count - 1 if method else count for count in arities)
            raise CelCompileError(f"{style} takes {' or '.join(map(str, counts))} argument(s), "
                                  f"not {len(args) - 1 if method else len(args)}")
        codes = [self.compile(arg) for arg in args]
        impl = function.impl

        def run(scope: _Scope) -> Any:
            values = [code(scope) for code in codes]
            try:
                return scope.run.sized(impl(*values))
            except (CelError, CelLimitError):
                raise
            except (TypeError, ValueError, OverflowError, AttributeError, KeyError, IndexError) as err:
                raise CelError(f"{name}: {err}") from None

        return run

    def _macro(self, name: str, target_tree: Any, args: list[Any]) -> Code:
        if len(args) not in ((2, 3) if name == "map" else (2,)):
            wanted = "one or two expressions" if name == "map" else "an expression"
            raise CelCompileError(f"{name}() takes a variable and {wanted}")
        variable_node = self._unwrap(args[0])
        if variable_node.data != "ident":
            raise CelCompileError(f"the first argument of {name}() must be a variable name")
        variable = str(variable_node.children[0])
        target = self.compile(target_tree)
        self.locals.append(variable)
        try:
            bodies = [self.compile(arg) for arg in args[1:]]
            weight = 1 + sum(self.cost(arg) for arg in args[1:])
        finally:
            self.locals.pop()
        body = bodies[0]
        transform = bodies[-1] if len(bodies) == 2 else None

        def items(scope: _Scope) -> Iterable[Any]:
            collection = target(scope)
            kind = kind_of(collection)
            if kind not in ("list", "map"):
                raise CelError(f"{name}() needs a list or map, not {kind}")
            return list(collection)

        def each(scope: _Scope) -> Iterable[tuple[_Scope, Any]]:
            run = scope.run
            for item in items(scope):
                run.charge(weight)
                yield _Scope({**scope.vars, variable: item}, run), item

        def predicate(inner: _Scope) -> bool:
            value = body(inner)
            if type(value) is not bool:
                raise _no_overload(name, value)
            return value

        if name in ("all", "exists"):
            decisive = name == "exists"

            def quantifier(scope: _Scope) -> bool:
                error: CelError | None = None
                for inner, _item in each(scope):
                    try:
                        if predicate(inner) is decisive:
                            return decisive
                    except CelError as err:
                        error = error or err
                if error is not None:
                    raise error
                return not decisive

            return quantifier
        if name == "exists_one":
            return lambda scope: sum(1 for inner, _item in each(scope) if predicate(inner)) == 1
        if name == "filter":
            return lambda scope: [item for inner, item in each(scope) if predicate(inner)]
        if transform is None:
            return lambda scope: [body(inner) for inner, _item in each(scope)]
        selected = transform
        return lambda scope: [selected(inner) for inner, _item in each(scope) if predicate(inner)]
