"""CEL source text to ``ast`` nodes, exactly as cel-go's parser (``parser.NewParser`` with the standard
macros) reads it: the grammar of ``parser/gen/CEL.g4``, its operator precedence and associativity, macro
expansion, cel-go's node ids and locations, its two depth limits and its size limit, and the text and place
of the first error cel-go would list.

Hand-written recursive descent, one method per grammar rule, with the rule's ANTLR error behaviour at
each decision: where ANTLR's error strategy would report "mismatched input", "extraneous input", "missing
X at" or "no viable alternative", this parser reports the same words at the same token. cel-go goes on
after an error and lists them all, sorted by place; this parser stops at the first syntax error and raises
the error cel-go lists first.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from typing import NoReturn

from aicr_gen.cel import ast, literals
from aicr_gen.cel.ast import Call, Constant, CreateList, CreateStruct, Entry, Expr, Ident, Select
from aicr_gen.cel.lexer import (
    BYTES,
    COLON,
    COMMA,
    DISPLAY,
    DOT,
    EOF,
    EQUALS,
    ESC_IDENTIFIER,
    EXCLAM,
    FALSE,
    GREATER,
    GREATER_EQUALS,
    IDENTIFIER,
    IN,
    LBRACE,
    LBRACKET,
    LESS,
    LESS_EQUALS,
    LOGICAL_AND,
    LOGICAL_OR,
    LPAREN,
    MINUS,
    NOT_EQUALS,
    NULL,
    NUM_FLOAT,
    NUM_INT,
    NUM_UINT,
    PERCENT,
    PLUS,
    QUESTION,
    RBRACE,
    RBRACKET,
    RPAREN,
    SLASH,
    STAR,
    STRING,
    TRUE,
    tokenize,
)
from aicr_gen.cel.macros import MacroError, expand
from aicr_gen.cel.source import Source

MAX_CODE_POINTS = 100_000
"""cel-go's default ``ExpressionSizeCodePointLimit``."""
MAX_RECURSION_DEPTH = 250
"""cel-go's default ``MaxRecursionDepth``, which bounds two things: how deeply grammar rules of one kind
nest while parsing ("expression recursion limit exceeded: 250"), and how many selections, calls on a
receiver, index operations, arithmetic, relations and conditionals lie on one path of the parse tree ("max
recursion depth exceeded"). ``a || b || ...`` and ``a && b && ...`` count for neither: cel-go builds them
as balanced trees."""

RESERVED = frozenset({"as", "break", "const", "continue", "else", "for", "function", "if", "import", "let",
                      "loop", "package", "namespace", "return", "var", "void", "while"})
"""Refused as identifiers and global function names (still fine as field, message and method names)."""


class CelSyntaxError(Exception):
    """The error cel-go would list first for a source text; ``offset`` is a code point offset, or None
    where cel-go gives no location (the size and depth limits)."""

    def __init__(self, message: str, offset: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset

    def display(self, text: str, description: str = "<input>") -> str:
        """As cel-go prints it: ``ERROR: <input>:1:5: ...``, the line, a caret."""
        return Source(text, description).display(self.message, self.offset)


def parse(text: str, *, max_code_points: int = MAX_CODE_POINTS,
          max_recursion_depth: int = MAX_RECURSION_DEPTH, macros: bool = True,
          optional_syntax: bool = False, ident_escape: bool = True) -> Expr:
    """Parse ``text`` as cel-go does with these parser options; raise ``CelSyntaxError``.

    ``optional_syntax`` allows ``a.?b``, ``a[?i]``, ``[?x]`` and ``{?k: v}`` (cel-go enables it with
    ``cel.OptionalTypes()``). ``ident_escape`` allows backquoted field names (``a.`b-c```): on by default
    in cel-go after v0.27.0, off in v0.27.0 and earlier unless ``cel.EnableIdentifierEscapeSyntax()``.
    """
    if len(text) > max_code_points:
        raise CelSyntaxError(f"expression code point size exceeds limit: size: {len(text)}, limit "
                             f"{max_code_points}", None)
    parser = _Parser(text, max_recursion_depth, macros, optional_syntax, ident_escape)
    # A level of nesting costs up to a dozen Python frames; make room for cel-go's depth limit.
    old_limit = sys.getrecursionlimit()
    needed = _stack_depth() + 14 * (max_recursion_depth + 2) + 100
    if needed > old_limit:
        sys.setrecursionlimit(needed)
    try:
        return parser.run()
    finally:
        if needed > old_limit:
            sys.setrecursionlimit(old_limit)


def _stack_depth() -> int:
    depth, frame = 0, sys._getframe()
    while frame is not None:
        depth, frame = depth + 1, frame.f_back  # type: ignore[assignment]
    return depth


class _Stop(Exception):
    """Ends parsing at a syntax error or at the rule nesting limit."""

    def __init__(self, message: str, offset: int | None) -> None:
        super().__init__(message)
        self.message = message
        self.offset = offset


_EXPR_START = frozenset({LBRACKET, LBRACE, LPAREN, DOT, MINUS, EXCLAM, TRUE, FALSE, NULL, NUM_FLOAT, NUM_INT,
                         NUM_UINT, STRING, BYTES, IDENTIFIER})
_PRIMARY_START = _EXPR_START - {EXCLAM}  # '-' stays: it can sign a number literal
_OPERAND_START = _PRIMARY_START - {MINUS}
_ELEMENT_START = _EXPR_START | {QUESTION}
_FIELD_START = frozenset({QUESTION, IDENTIFIER, ESC_IDENTIFIER})
_FIELD_NAME = frozenset({IDENTIFIER, ESC_IDENTIFIER})
_LITERALS = frozenset({NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, TRUE, FALSE, NULL})

# Token kinds of the binary operators, and the functions they call.
_RELATIONS = {EQUALS: ast.EQUALS, NOT_EQUALS: ast.NOT_EQUALS, IN: ast.IN, LESS: ast.LESS,
              LESS_EQUALS: ast.LESS_EQUALS, GREATER_EQUALS: ast.GREATER_EQUALS, GREATER: ast.GREATER}
_PRODUCTS = {STAR: ast.MULTIPLY, SLASH: ast.DIVIDE, PERCENT: ast.MODULO}
_SUMS = {PLUS: ast.ADD, MINUS: ast.SUBTRACT}

# What may follow an expression in each place one appears; with the operators and postfixes that may
# follow any operand, what may follow a closing ')', ']' or '}' there (ANTLR's "missing X at Y" test).
_TOP, _PAREN, _INDEX, _KEY = frozenset({EOF}), frozenset({RPAREN}), frozenset({RBRACKET}), frozenset({COLON})
_ARGS, _ELEMENT, _VALUE = frozenset({COMMA, RPAREN}), frozenset({COMMA, RBRACKET}), frozenset({COMMA, RBRACE})
_OPERAND_FOLLOW = frozenset({DOT, LBRACKET, *_PRODUCTS, *_SUMS, *_RELATIONS, LOGICAL_AND, LOGICAL_OR})
_AFTER = {follow: _OPERAND_FOLLOW | {QUESTION} | follow
          for follow in (_TOP, _PAREN, _ARGS, _INDEX, _ELEMENT, _KEY, _VALUE)}
_AFTER_TRUE_BRANCH = _OPERAND_FOLLOW | {COLON}

# cel-go rewrites this ANTLR message (parser.go, "reservedIdentifier"); its '.' matches any character.
_RESERVED_LITERAL = re.compile(r"no viable alternative at input '.(true|false|null)'")


class _Parser:
    def __init__(self, text: str, limit: int, macros: bool, optional_syntax: bool,
                 ident_escape: bool) -> None:
        tokens = tokenize(text)
        self.text = text
        self.kinds = tokens.kinds
        self.starts = tokens.starts
        self.texts = tokens.texts
        self.lex_error = tokens.error
        self.pos = 0
        self.next_id = 1
        self.limit = limit
        self.macros = macros
        self.optional_syntax = optional_syntax
        self.ident_escape = ident_escape
        # Open invocations of the grammar rules that can nest most deeply (ANTLR's parse listener in
        # cel-go counts every rule; 'relation' and 'calc' gain up to one and two levels per operand).
        self.exprs = self.relations = self.calcs = 0
        self.too_deep = False
        self.errors: list[tuple[int, str]] = []
        self.after = _AFTER[_TOP]

    # -- driver and errors --------------------------------------------------------------------------

    def run(self) -> Expr:
        stop: _Stop | None = None
        expr: Expr | None = None
        try:
            expr, _ = self._expr(_TOP)
            if self.kinds[self.pos] != EOF:
                raise self._mismatch(_TOP)
        except _Stop as error:
            stop = error
        if stop is not None and stop.offset is None:
            raise CelSyntaxError(stop.message, None)
        if self.too_deep:
            raise CelSyntaxError("max recursion depth exceeded", None)
        found = list(self.errors)
        if stop is not None and stop.offset is not None:
            found.append((stop.offset, stop.message))
        if self.lex_error is not None:
            shown = _escape_ws(self.lex_error.text)
            found.append((self.lex_error.offset, f"Syntax error: token recognition error at: '{shown}'"))
        if found:
            offset, message = min(found, key=lambda item: item[0])
            raise CelSyntaxError(message, offset)
        assert expr is not None
        return expr

    def _new_id(self) -> int:
        new = self.next_id
        self.next_id = new + 1
        return new

    def _report(self, offset: int, message: str) -> None:
        """An error cel-go finds while building nodes: parsing goes on (cel-go lists later ones too)."""
        self.errors.append((offset, message))

    def _show(self, index: int) -> str:
        return "'<EOF>'" if self.kinds[index] == EOF else f"'{_escape_ws(self.texts[index])}'"

    def _kind_at(self, index: int) -> int:
        return self.kinds[index] if index < len(self.kinds) else EOF

    def _syntax(self, index: int, message: str) -> _Stop:
        return _Stop("Syntax error: " + message, self.starts[index])

    def _mismatch(self, expected: frozenset[int]) -> _Stop:
        """The current token is not one of ``expected`` where ANTLR synchronises: "extraneous input" if
        dropping it would do, else "mismatched input"."""
        pos = self.pos
        word = "extraneous" if self._kind_at(pos + 1) in expected else "mismatched"
        return self._syntax(pos, f"{word} input {self._show(pos)} expecting {_expecting(expected)}")

    def _match(self, kind: int, follow: frozenset[int]) -> None:
        """Consume a token of ``kind``, or fail as ANTLR's ``recoverInline``: "extraneous input" if the next
        token is the one wanted, "missing" if the current one could follow it (``follow``), else
        "mismatched input"."""
        pos = self.pos
        if self.kinds[pos] == kind:
            self.pos = pos + 1
            return
        wanted = DISPLAY[kind]
        if self._kind_at(pos + 1) == kind:
            raise self._syntax(pos, f"extraneous input {self._show(pos)} expecting {wanted}")
        if self.kinds[pos] in follow:
            raise self._syntax(pos, f"missing {wanted} at {self._show(pos)}")
        raise self._syntax(pos, f"mismatched input {self._show(pos)} expecting {wanted}")

    def _no_viable(self, first: int, bad: int) -> _Stop:
        """ANTLR's prediction found no way on from token ``first`` to token ``bad``."""
        end = self.starts[bad] + len(self.texts[bad])
        message = f"no viable alternative at input '{_escape_ws(self.text[self.starts[first]:end])}'"
        message = _RESERVED_LITERAL.sub(r"mismatched input '\1' expecting IDENTIFIER", message)
        return self._syntax(bad, message)

    def _nest(self) -> NoReturn:
        raise _Stop(f"expression recursion limit exceeded: {self.limit}", None)

    def _deeper(self, depth: int) -> int:
        depth += 1
        if depth > self.limit:
            self.too_deep = True
        return depth

    # -- expr, conditionalOr, conditionalAnd --------------------------------------------------------

    def _expr(self, follow: frozenset[int]) -> tuple[Expr, int]:
        """``conditionalOr ['?' conditionalOr ':' expr]``. Returns the node and the number of counted
        nodes on its deepest path (cel-go's visitor depth)."""
        self.exprs += 1
        if self.exprs > self.limit:
            self._nest()
        saved = self.after
        self.after = _AFTER[follow]
        expr, depth = self._or()
        if self.kinds[self.pos] == QUESTION:
            at = self.starts[self.pos]
            self.pos += 1
            node_id = self._new_id()
            self.after = _AFTER_TRUE_BRANCH
            if_true, depth_true = self._or()
            self._match(COLON, _EXPR_START)
            if_false, depth_false = self._expr(follow)
            expr = Call(node_id, at, ast.CONDITIONAL, (expr, if_true, if_false))
            depth = self._deeper(max(depth, depth_true, depth_false))
        self.after = saved
        self.exprs -= 1
        return expr, depth

    def _or(self) -> tuple[Expr, int]:
        return self._chain(LOGICAL_OR, ast.LOGICAL_OR, self._and)

    def _and(self) -> tuple[Expr, int]:
        return self._chain(LOGICAL_AND, ast.LOGICAL_AND, self._relation)

    def _chain(self, kind: int, function: str, operand: Callable[[], tuple[Expr, int]]) -> tuple[Expr, int]:
        """``operand (op operand)*`` for ``||`` or ``&&``, as cel-go's balanced tree."""
        first, depth = operand()
        if self.kinds[self.pos] != kind:
            return first, depth
        terms, ops = [first], []
        while self.kinds[self.pos] == kind:
            at = self.starts[self.pos]
            self.pos += 1
            term, term_depth = operand()
            depth = max(depth, term_depth)
            ops.append((self._new_id(), at))  # cel-go numbers each operator after the term that follows it
            terms.append(term)
        return _balanced(function, terms, ops, 0, len(ops) - 1), depth

    # -- relation, calc (left-recursive in the grammar: loops here) ---------------------------------

    def _relation(self) -> tuple[Expr, int]:
        self.relations += 1
        if self.relations > self.limit:
            self._nest()
        left, depth = self._calc()
        kinds = self.kinds
        while kinds[self.pos] in _RELATIONS:
            at, function = self.starts[self.pos], _RELATIONS[kinds[self.pos]]
            self.pos += 1
            node_id = self._new_id()
            self.relations += 1  # the right operand is a nested 'relation' rule of its own
            if self.relations > self.limit:
                self._nest()
            right, right_depth = self._calc()
            self.relations -= 1
            left = Call(node_id, at, function, (left, right))
            depth = self._deeper(max(depth, right_depth))
        self.relations -= 1
        return left, depth

    def _enter_calc(self) -> None:
        """One more nested 'calc' rule, as cel-go counts them against its recursion limit."""
        self.calcs += 1
        if self.calcs > self.limit:
            self._nest()

    def _operand(self) -> tuple[Expr, int]:
        return self._member() if self.kinds[self.pos] in _OPERAND_START else self._unary()

    def _calc(self) -> tuple[Expr, int]:
        self._enter_calc()
        kinds = self.kinds
        left, depth = self._operand()
        while True:
            kind = kinds[self.pos]
            if kind in _PRODUCTS:
                at, function = self.starts[self.pos], _PRODUCTS[kind]
                self.pos += 1
                node_id = self._new_id()
                right, right_depth = self._nested_operand()
            elif kind in _SUMS:
                at, function = self.starts[self.pos], _SUMS[kind]
                self.pos += 1
                node_id = self._new_id()
                self._enter_calc()
                right, right_depth = self._operand()
                while kinds[self.pos] in _PRODUCTS:  # a sum's right operand takes the products after it
                    inner_at, inner_function = self.starts[self.pos], _PRODUCTS[kinds[self.pos]]
                    self.pos += 1
                    inner_id = self._new_id()
                    operand, operand_depth = self._nested_operand()
                    right = Call(inner_id, inner_at, inner_function, (right, operand))
                    right_depth = self._deeper(max(right_depth, operand_depth))
                self.calcs -= 1
            else:
                break
            left = Call(node_id, at, function, (left, right))
            depth = self._deeper(max(depth, right_depth))
        self.calcs -= 1
        return left, depth

    def _nested_operand(self) -> tuple[Expr, int]:
        """The right operand of '*', '/', '%': a nested 'calc' rule holding one unary."""
        self._enter_calc()
        result = self._unary()
        self.calcs -= 1
        return result

    # -- unary, member -------------------------------------------------------------------------------

    def _unary(self) -> tuple[Expr, int]:
        kinds, pos = self.kinds, self.pos
        kind = kinds[pos]
        if kind in _OPERAND_START:
            return self._member()
        if kind == EXCLAM:
            while kinds[pos] == EXCLAM:
                pos += 1
            count, first = pos - self.pos, self.starts[self.pos]
            self.pos = pos
            if kinds[pos] not in _PRIMARY_START:  # ANTLR's sync in the '!' loop drops the token
                raise self._syntax(pos, f"extraneous input {self._show(pos)} expecting "
                                        f"{_expecting(_EXPR_START)}")
            return self._negated(ast.LOGICAL_NOT, count, first)
        if kind == MINUS:
            if kinds[pos + 1] in (NUM_INT, NUM_FLOAT):  # a signed literal, before any negation
                return self._member()
            while kinds[pos] == MINUS:
                pos += 1
            if kinds[pos] not in _OPERAND_START:
                raise self._no_viable(pos - 1, pos)
            count, first = pos - self.pos, self.starts[self.pos]
            self.pos = pos
            return self._negated(ast.NEGATE, count, first)
        if kind not in _EXPR_START:
            raise self._mismatch(_EXPR_START)
        return self._member()

    def _negated(self, function: str, count: int, at: int) -> tuple[Expr, int]:
        """``count`` leading '!' or '-' and then a member: an even count cancels out."""
        if count % 2 == 0:
            return self._member()
        node_id = self._new_id()
        operand, depth = self._member()
        return Call(node_id, at, function, (operand,)), depth

    def _member(self) -> tuple[Expr, int]:
        kinds = self.kinds
        kind = kinds[self.pos]
        # Names and literals, most operands, skip the dispatch in _primary.
        if kind == IDENTIFIER:
            expr, depth = self._name()
        elif kind in _LITERALS:
            expr, depth = self._literal(self.pos, self.pos, False), 0
        else:
            expr, depth = self._primary()
        while True:
            kind = kinds[self.pos]
            if kind == DOT:
                expr, inner_depth = self._selection(expr)
            elif kind == LBRACKET:
                expr, inner_depth = self._index(expr)
            else:
                return expr, depth
            depth = self._deeper(max(depth, inner_depth))

    def _selection(self, operand: Expr) -> tuple[Expr, int]:
        """``.field``, ``.method(args)`` or ``.?field`` after ``operand``, and the depth of the arguments."""
        pos = self.pos
        at, after = self.starts[pos], self.kinds[pos + 1]
        if after == IDENTIFIER and self.kinds[pos + 2] == LPAREN:
            self.pos = pos + 3
            node_id = self._new_id()
            args, depth = self._args()
            return self._call(node_id, self.starts[pos + 2], self.texts[pos + 1], operand, args), depth
        if after == IDENTIFIER:
            self.pos = pos + 2
            node_id = self.next_id
            self.next_id = node_id + 1
            return Select(node_id, at, operand, self.texts[pos + 1]), 0
        if after == ESC_IDENTIFIER:
            self.pos = pos + 2
            return Select(self._new_id(), at, operand, self._field_name(pos + 1, pos + 1)), 0
        if after == QUESTION and self.kinds[pos + 2] in _FIELD_NAME:
            if not self.optional_syntax:
                self._report(at, "unsupported syntax '.?'")
            self.pos = pos + 3
            name = Constant(self._new_id(), self.starts[pos + 2], "string", self._field_name(pos + 2, pos + 2))
            return Call(self._new_id(), at, ast.OPT_SELECT, (operand, name)), 0
        raise self._no_viable(pos, pos + 2 if after == QUESTION else pos + 1)

    def _index(self, operand: Expr) -> tuple[Expr, int]:
        at = self.starts[self.pos]
        self.pos += 1
        function = ast.INDEX
        if self.kinds[self.pos] not in _ELEMENT_START:
            raise self._mismatch(_ELEMENT_START)
        if self.kinds[self.pos] == QUESTION:
            if not self.optional_syntax:
                self._report(at, "unsupported syntax '[?'")
            function = ast.OPT_INDEX
            self.pos += 1
        node_id = self._new_id()
        index, depth = self._expr(_INDEX)
        self._match(RBRACKET, self.after)
        return Call(node_id, at, function, (operand, index)), depth

    def _field_name(self, index: int, report_at: int | None) -> str:
        """The name in an IDENTIFIER or ESC_IDENTIFIER token; a backquoted one is an error at token
        ``report_at`` (if any) without ``ident_escape``."""
        text = self.texts[index]
        if self.kinds[index] == IDENTIFIER:
            return text
        if not self.ident_escape and report_at is not None:
            self._report(self.starts[report_at], "unsupported syntax: '`'")
        return text[1:-1]

    def _args(self) -> tuple[tuple[Expr, ...], int]:
        """Call arguments after '(', through the closing ')'."""
        kinds = self.kinds
        if kinds[self.pos] == RPAREN:
            self.pos += 1
            return (), 0
        if kinds[self.pos] not in _EXPR_START:
            raise self._mismatch(_EXPR_START | {RPAREN})
        args, depth = [], 0
        while True:
            arg, arg_depth = self._expr(_ARGS)
            args.append(arg)
            depth = max(depth, arg_depth)
            if kinds[self.pos] != COMMA:
                break
            self.pos += 1
        self._match(RPAREN, self.after)
        return tuple(args), depth

    def _call(self, node_id: int, at: int, function: str, target: Expr | None,
              args: tuple[Expr, ...]) -> Expr:
        if self.macros:
            try:
                expanded = expand(function, target, args, at, self._new_id)
            except MacroError as error:
                self._report(error.offset, error.message)
                expanded = None
            if expanded is not None:
                return expanded
        return Call(node_id, at, function, args, target)

    # -- primary -------------------------------------------------------------------------------------

    def _primary(self) -> tuple[Expr, int]:
        kinds, pos = self.kinds, self.pos
        kind = kinds[pos]
        if kind in (IDENTIFIER, DOT):
            return self._name()
        if kind in _LITERALS:
            return self._literal(pos, pos, False), 0
        if kind == LPAREN:
            self.pos += 1
            inner = self._expr(_PAREN)
            self._match(RPAREN, self.after)
            return inner
        if kind == LBRACKET:
            return self._list()
        if kind == LBRACE:
            return self._map()
        if kind == MINUS and kinds[pos + 1] in (NUM_INT, NUM_FLOAT):
            return self._literal(pos, pos + 1, True), 0
        if kind == MINUS:
            raise self._no_viable(pos, pos + 1)
        raise self._mismatch(_PRIMARY_START)

    def _name(self) -> tuple[Expr, int]:
        """An identifier, a global call or a message literal, each with an optional leading dot."""
        kinds, pos = self.kinds, self.pos
        first = pos
        dot = ""
        if kinds[pos] == DOT:
            if kinds[pos + 1] != IDENTIFIER:
                raise self._no_viable(pos, pos + 1)
            dot, pos = ".", pos + 1
        word = self.texts[pos]
        if kinds[pos + 1] == LPAREN:
            if word in RESERVED:
                self._report(self.starts[first], f"reserved identifier: {word}")
            self.pos = pos + 2
            node_id = self._new_id()
            args, depth = self._args()
            return self._call(node_id, self.starts[pos + 1], dot + word, None, args), depth
        last = pos
        while kinds[last + 1] == DOT and kinds[last + 2] == IDENTIFIER:
            last += 2
        if kinds[last + 1] == LBRACE:
            name = dot + ".".join(self.texts[pos:last + 1:2])
            self.pos = last + 1
            return self._message(name)
        if word in RESERVED:
            self._report(self.starts[first], f"reserved identifier: {word}")
        self.pos = pos + 1
        node_id = self.next_id
        self.next_id = node_id + 1
        return Ident(node_id, self.starts[pos], dot + word), 0

    def _literal(self, first: int, token: int, negative: bool) -> Expr:
        kind, text, at = self.kinds[token], self.texts[token], self.starts[first]
        self.pos = token + 1
        node_id = self.next_id
        self.next_id = node_id + 1
        try:
            if kind == NUM_INT:
                return Constant(node_id, at, "int", literals.int_value(text, negative))
            if kind == NUM_FLOAT:
                return Constant(node_id, at, "double", literals.double_value(text, negative))
            if kind == NUM_UINT:
                return Constant(node_id, at, "uint", literals.uint_value(text))
            if kind == STRING:
                return Constant(node_id, at, "string", literals.string_value(text))
            if kind == BYTES:
                return Constant(node_id, at, "bytes", literals.bytes_value(text))
        except ValueError as error:
            self._report(at, str(error))
            return Constant(node_id, at, "null", None)
        if kind == NULL:
            return Constant(node_id, at, "null", None)
        return Constant(node_id, at, "bool", kind == TRUE)

    def _list(self) -> tuple[Expr, int]:
        at = self.starts[self.pos]
        self.pos += 1
        node_id = self._new_id()
        elements: list[Expr] = []
        optional: list[int] = []
        depth = 0
        kinds = self.kinds
        if kinds[self.pos] in _ELEMENT_START:
            while True:
                if kinds[self.pos] == QUESTION:
                    if not self.optional_syntax:
                        self._report(self.starts[self.pos], "unsupported syntax '?'")
                    optional.append(len(elements))
                    self.pos += 1
                element, element_depth = self._expr(_ELEMENT)
                elements.append(element)
                depth = max(depth, element_depth)
                if not (kinds[self.pos] == COMMA and kinds[self.pos + 1] in _ELEMENT_START):
                    break
                self.pos += 1
        elif kinds[self.pos] not in _ELEMENT:
            raise self._mismatch(_ELEMENT_START | _ELEMENT)
        self._close(RBRACKET)
        return CreateList(node_id, at, tuple(elements), tuple(optional)), depth

    def _map(self) -> tuple[Expr, int]:
        at = self.starts[self.pos]
        self.pos += 1
        node_id = self._new_id()
        entries: list[Entry] = []
        depth = 0
        kinds = self.kinds
        if kinds[self.pos] in _ELEMENT_START:
            while True:
                entry_id = self._new_id()  # cel-go numbers the entry (at its ':') before its key
                optional = kinds[self.pos] == QUESTION
                question = self.starts[self.pos]
                self.pos += optional
                # cel-go builds (and so checks) an entry only once its ':' is in the parse tree: errors in
                # the key of an entry that breaks off before its ':' are not listed.
                reported = len(self.errors)
                try:
                    key, key_depth = self._expr(_KEY)
                except _Stop:
                    del self.errors[reported:]
                    raise
                colon = self.starts[self.pos]
                if not self._colon_follows(self.pos):
                    del self.errors[reported:]
                elif optional and not self.optional_syntax:
                    self._report(question, "unsupported syntax '?'")
                self._match(COLON, _EXPR_START)
                value, value_depth = self._expr(_VALUE)
                entries.append(Entry(entry_id, colon, key, value, optional))
                depth = max(depth, key_depth, value_depth)
                if not (kinds[self.pos] == COMMA and kinds[self.pos + 1] in _ELEMENT_START):
                    break
                self.pos += 1
        elif kinds[self.pos] not in _VALUE:
            raise self._mismatch(_ELEMENT_START | _VALUE)
        self._close(RBRACE)
        return CreateStruct(node_id, at, "", tuple(entries)), depth

    def _message(self, name: str) -> tuple[Expr, int]:
        at = self.starts[self.pos]
        self.pos += 1
        node_id = self._new_id()
        entries: list[Entry] = []
        depth = 0
        kinds = self.kinds
        first_field = self.pos
        if kinds[self.pos] in _FIELD_START:
            while True:
                optional = kinds[self.pos] == QUESTION
                question = self.starts[self.pos]
                if optional:
                    self.pos += 1
                    if kinds[self.pos] not in _FIELD_NAME:
                        if not self.optional_syntax and self._colon_follows(self._recovered(self.pos)):
                            self._report(question, "unsupported syntax '?'")
                        raise self._mismatch(_FIELD_NAME)
                name_at = self.pos
                self.pos += 1
                colon = self.starts[self.pos]
                complete = self._colon_follows(self.pos)
                if optional and not self.optional_syntax and complete:
                    self._report(question, "unsupported syntax '?'")
                    field = self.texts[name_at].strip("`")
                else:  # cel-go points at the list's first field when a name is backquoted without support
                    field = self._field_name(name_at, first_field if complete else None)
                self._match(COLON, _EXPR_START)
                entry_id = self._new_id()
                value, value_depth = self._expr(_VALUE)
                entries.append(Entry(entry_id, colon, field, value, optional))
                depth = max(depth, value_depth)
                if not (kinds[self.pos] == COMMA and kinds[self.pos + 1] in _FIELD_START):
                    break
                self.pos += 1
        elif kinds[self.pos] not in _VALUE:
            raise self._mismatch(_FIELD_START | _VALUE)
        self._close(RBRACE)
        return CreateStruct(node_id, at, name, tuple(entries)), depth

    def _colon_follows(self, index: int) -> bool:
        """Whether ANTLR would take or conjure the ':' of an entry at token ``index``. cel-go checks a
        map entry or field (for '?' and backquotes) only once its ':' and value are in the parse tree."""
        return COLON in (self.kinds[index], self._kind_at(index + 1)) or self.kinds[index] in _EXPR_START

    def _recovered(self, index: int) -> int:
        """Where ANTLR's recovery resumes after a bad field name at ``index``: the first token that may
        follow the name, the field list, or an operand here."""
        resume = _VALUE | {COLON} | self.after
        while self.kinds[index] not in resume and self.kinds[index] != EOF:
            index += 1
        return index

    def _close(self, closer: int) -> None:
        """The optional trailing ',' and the closing bracket of a list, map or message."""
        kind = self.kinds[self.pos]
        if kind == COMMA:
            self.pos += 1
        elif kind != closer:
            raise self._mismatch(frozenset({COMMA, closer}))
        self._match(closer, self.after)


def _balanced(function: str, terms: list[Expr], ops: list[tuple[int, int]], low: int, high: int) -> Expr:
    """cel-go's balanced tree of a chain of '||' or '&&' (``logicManager.balancedTree``)."""
    middle = (low + high + 1) // 2
    left = terms[middle] if middle == low else _balanced(function, terms, ops, low, middle - 1)
    right = terms[middle + 1] if middle == high else _balanced(function, terms, ops, middle + 1, high)
    node_id, at = ops[middle]
    return Call(node_id, at, function, (left, right))


def _expecting(kinds: frozenset[int]) -> str:
    if len(kinds) == 1:
        return DISPLAY[next(iter(kinds))]
    return "{" + ", ".join(DISPLAY[kind] for kind in sorted(kinds)) + "}"


def _escape_ws(text: str) -> str:
    return text.replace("\n", "\\n").replace("\r", "\\r").replace("\t", "\\t")
