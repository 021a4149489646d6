"""Static facts about a parse tree: the paths and operands lints need, and the cost estimate the step limit
is checked against at compile time."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from aicr_gen.certify.cel.functions import MACROS
from aicr_gen.certify.cel.parse import _literal
from aicr_gen.certify.cel.program import Operand

if TYPE_CHECKING:
    from aicr_gen.certify.cel.environment import Environment


class _StaticFacts:
    """What the compiler reads off a parse tree without compiling it: paths into variables, the operands
    of comparisons (what lints need) and a lower bound on the cost."""

    env: Environment
    locals: list[str]

    def _unwrap(self, tree: Any) -> Any:
        """The innermost node of a single-child chain (expr -> ... -> primary -> x)."""
        from lark import Tree

        while isinstance(tree, Tree) and len(tree.children) == 1 and tree.data in (
                "expr", "conditionalor", "conditionaland", "relation", "addition", "multiplication", "unary",
                "member", "primary", "paren_expr"):
            child = tree.children[0]
            if not isinstance(child, Tree):
                break
            tree = child
        return tree

    def path_of(self, tree: Any) -> tuple[str, tuple[str, ...]] | None:
        """``(variable, fields)`` when ``tree`` is ``var.a['b'].c`` on a declared variable."""
        node = self._unwrap(tree)
        fields: list[str] = []
        while True:
            if node.data == "member_dot":
                fields.append(str(node.children[1]))
                node = self._unwrap(node.children[0])
            elif node.data == "member_index":
                key = self._unwrap(node.children[1])
                if key.data != "literal" or key.children[0].type not in ("STRING_LIT", "MLSTRING_LIT"):
                    return None
                fields.append(_literal(key.children[0]))
                node = self._unwrap(node.children[0])
            elif node.data == "ident":
                name = str(node.children[0])
                if name in self.locals or name not in self.env.variables:
                    return None
                return name, tuple(reversed(fields))
            else:
                return None

    def fields_read(self, tree: Any) -> dict[str, tuple[str, ...]] | None:
        """Per declared variable, the top-level fields the expression selects (``var.f``, ``var['f']``,
        ``has(var.f)``), or None when it uses one in any other way (whole, by a computed key, as a macro's
        variable): then its value may depend on all of the variable. Otherwise it depends only on the values
        at those fields (and whether they are there), which lets a caller reuse the result of an evaluation
        over the same values."""
        from lark import Tree

        fields: dict[str, set[str]] = {name: set() for name in self.env.variables}
        selected: set[int] = set()
        uses: list[Any] = []
        for node in tree.iter_subtrees():
            if node.data in ("ident", "dot_ident") and str(node.children[0]) in fields:
                uses.append(node)
            elif node.data in ("member_dot", "member_index"):
                root = self._unwrap(node.children[0])
                if not (isinstance(root, Tree) and root.data == "ident" and str(root.children[0]) in fields):
                    continue
                key = self._unwrap(node.children[1]) if node.data == "member_index" else None
                if key is None:
                    name = str(node.children[1])
                elif key.data == "literal" and key.children[0].type in ("STRING_LIT", "MLSTRING_LIT"):
                    name = _literal(key.children[0])
                else:
                    return None
                fields[str(root.children[0])].add(name)
                selected.add(id(root))
        if any(id(node) not in selected for node in uses):
            return None
        return {variable: tuple(sorted(names)) for variable, names in fields.items()}

    def operand(self, tree: Any) -> Operand | None:
        node = self._unwrap(tree)
        if node.data == "literal":
            return Operand("literal", _literal(node.children[0]))
        if node.data == "list_lit":
            items = node.children[0].children if node.children else []
            return Operand("list", tuple(self.operand(item) for item in items))
        path = self.path_of(node)
        return Operand("path", path) if path else None

    def cost(self, tree: Any) -> int:
        """A lower bound on the steps an evaluation takes: comprehension bodies times literal list sizes."""
        from lark import Tree

        total = 0
        stack = [(tree, 1)]
        while stack:
            node, factor = stack.pop()
            total += factor
            if total > self.env.limits.max_steps:
                return total
            if node.data == "member_dot_arg" and str(node.children[1]) in MACROS and len(node.children) == 3:
                target = self._unwrap(node.children[0])
                size = len(target.children[0].children) if target.data == "list_lit" and target.children else 1
                stack.append((node.children[0], factor))
                stack.extend((arg, factor * max(size, 1)) for arg in node.children[2].children)
                continue
            stack.extend((child, factor) for child in node.children if isinstance(child, Tree))
        return total
