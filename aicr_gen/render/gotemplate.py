"""Go's ``text/template``, in Python: what AICR's bundler runs over a component's manifests.

``parse(text, source, funcs)`` compiles a template once (cached by content); ``Template.execute(data)`` runs it.
The semantics follow Go's: ``{{-``/``-}}`` trimming, comments, pipelines, variables (``:=``, ``=``, ``$``),
if/else if/with/else with/range (maps in key order, ``$k, $v :=``, else, break, continue), define/template/block,
field chains, the built-in functions, and Go's treatment of missing values: a missing map key is Go's invalid
value, which prints ``<no value>`` and yields nothing when followed further (``$v.a.b`` with no ``a``), while a
field of a YAML null is an error (``nil pointer evaluating interface {}.b``).

Data model: YAML values as Python values; ``None`` is a nil interface (a null in a map or list), ``NO_VALUE`` is
Go's invalid ``reflect.Value`` (a missing key); a struct is a ``gofmt.GoStruct``. A function is a ``Func``: a
callable with Go parameter kinds, so that arguments are converted or refused as Go converts or refuses them.

Errors are ``InvalidInputError`` naming ``source:line`` and the problem, with Go's wording.
"""

from __future__ import annotations

import contextlib
import functools
import math

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.render import gofmt

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Mapping
    from typing import Any


class _NoValue:
    """Go's invalid ``reflect.Value``: what a missing map key evaluates to."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "NO_VALUE"


NO_VALUE: Any = _NoValue()
_MISSING: Any = object()  # no value from a previous pipeline stage (Go's missingVal)

# Go parameter kinds of a function: how an argument is converted before the call.
ANY = "interface {}"  # a missing value arrives as None (nil)
VALUE = "reflect.Value"  # builtins: a missing value arrives as NO_VALUE, a nil as None
STRING = "string"
INT = "int"
BOOL = "bool"


class Func:
    """A template function: ``fn`` with Go parameter kinds (``variadic``: the kind of the ``...`` tail)."""

    __slots__ = ("fn", "params", "variadic")

    def __init__(self, fn: Callable[..., Any], params: tuple[str, ...] = (), variadic: str | None = None) -> None:
        self.fn, self.params, self.variadic = fn, params, variadic


class _FuncError(Exception):
    """A function reports an error; Go prints it as ``error calling NAME: MESSAGE``."""


class TemplateError(Exception):
    """A parse or execution problem at a line of the template (``Template`` turns it into the user's error)."""

    def __init__(self, line: int, message: str) -> None:
        super().__init__(message)
        self.line = line
        self.message = message


class _Break(Exception):
    pass


class _Continue(Exception):
    pass


# ---------------------------------------------------------------------------------------------------- lexing

_SPACE = " \t\r\n"
_KEYWORDS = frozenset({"block", "break", "continue", "define", "else", "end", "if", "range", "nil", "template",
                       "with"})
_TERMINATORS = frozenset(" \t\r\n.,|:()")

# token kinds
T_TEXT, T_LEFT, T_RIGHT, T_SPACE, T_FIELD, T_VAR, T_IDENT, T_KEYWORD, T_BOOL, T_NUMBER, T_CHAR, T_STRING, \
    T_PIPE, T_LPAREN, T_RPAREN, T_DECLARE, T_ASSIGN, T_PUNCT, T_DOT, T_EOF = range(20)


def _alnum(ch: str) -> bool:
    return ch == "_" or ch.isalpha() or ch.isdigit()


def _lex(text: str) -> list[tuple[int, str, int]]:
    """Go's lexer: (kind, text, offset) tokens; comments and trimmed whitespace are dropped here."""
    tokens: list[tuple[int, str, int]] = []
    pos, end = 0, len(text)
    while pos < end:
        start = text.find("{{", pos)
        if start < 0:
            tokens.append((T_TEXT, text[pos:], pos))
            break
        inner = start + 2
        trim_left = text[inner:inner + 1] == "-" and text[inner + 1:inner + 2] in tuple(_SPACE)
        chunk = text[pos:start]
        if trim_left:
            chunk = chunk.rstrip(_SPACE)
            inner += 2
        if chunk:
            tokens.append((T_TEXT, chunk, pos))
        if text.startswith("/*", inner):
            close = text.find("*/", inner + 2)
            if close < 0:
                raise TemplateError(_line(text, start), "unclosed comment")
            after = close + 2
            trim_right = text[after:after + 1] in tuple(_SPACE) and text.startswith("-}}", after + 1)
            if trim_right:
                after += 1 + 3
            elif text.startswith("}}", after):
                after += 2
            else:
                raise TemplateError(_line(text, start), "comment ends before closing delimiter")
            pos = _skip_space(text, after) if trim_right else after
            continue
        tokens.append((T_LEFT, "{{", start))
        pos = _lex_action(text, inner, tokens)
    tokens.append((T_EOF, "", end))
    return tokens


def _skip_space(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    return pos


def _line(text: str, pos: int) -> int:
    return text.count("\n", 0, pos) + 1


def _at_right(text: str, pos: int) -> tuple[bool, bool]:
    """(at the closing delimiter, with a trim marker)."""
    if text[pos:pos + 1] in tuple(_SPACE) and text.startswith("-}}", pos + 1):
        return True, True
    return text.startswith("}}", pos), False


_SINGLE = {"=": T_ASSIGN, "|": T_PIPE, "(": T_LPAREN, ")": T_RPAREN}


def _lex_action(text: str, pos: int, tokens: list[tuple[int, str, int]]) -> int:
    """The tokens of one action, from after ``{{`` to its end; returns the offset after ``}}`` (and after the
    whitespace a ``-}}`` trims)."""
    depth = 0
    while True:
        at_right, trim = _at_right(text, pos)
        if at_right:
            if depth:
                raise TemplateError(_line(text, pos), "unclosed left paren")
            tokens.append((T_RIGHT, "}}", pos))
            return _skip_space(text, pos + 4) if trim else pos + 2
        if pos >= len(text):
            raise TemplateError(_line(text, pos), "unclosed action")
        ch = text[pos]
        if ch in _SPACE:
            pos = _lex_space(text, pos, tokens)
        elif ch in _SINGLE:
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if depth < 0:
                raise TemplateError(_line(text, pos), "unexpected right paren")
            tokens.append((_SINGLE[ch], ch, pos))
            pos += 1
        elif ch == ":":
            if text[pos + 1:pos + 2] != "=":
                raise TemplateError(_line(text, pos), "expected :=")
            tokens.append((T_DECLARE, ":=", pos))
            pos += 2
        else:
            pos = _lex_operand(text, pos, tokens)


def _lex_space(text: str, pos: int, tokens: list[tuple[int, str, int]]) -> int:
    start = pos
    while pos < len(text) and text[pos] in _SPACE:
        pos += 1
    if text.startswith("-}}", pos):  # the last space belongs to the trim marker " -}}"
        pos -= 1
        if pos == start:
            return pos
    tokens.append((T_SPACE, text[start:pos], start))
    return pos


def _lex_operand(text: str, pos: int, tokens: list[tuple[int, str, int]]) -> int:
    start, ch, end = pos, text[pos], len(text)
    if ch in "\"'":
        pos = _scan_quoted(text, pos, ch)
        tokens.append((T_STRING if ch == '"' else T_CHAR, text[start:pos], start))
    elif ch == "`":
        close = text.find("`", pos + 1)
        if close < 0:
            raise TemplateError(_line(text, pos), "unterminated raw quoted string")
        pos = close + 1
        tokens.append((T_STRING, text[start:pos], start))
    elif ch in "$." and not (ch == "." and text[pos + 1:pos + 2].isdigit()):
        pos += 1
        while pos < end and _alnum(text[pos]):
            pos += 1
        if text[start:pos] == ".":
            tokens.append((T_DOT, ".", start))
        else:
            _check_terminator(text, pos)
            tokens.append((T_VAR if ch == "$" else T_FIELD, text[start:pos], start))
    elif ch in "+-." or ch.isdigit():
        pos = _scan_number(text, pos)
        tokens.append((T_NUMBER, text[start:pos], start))
    elif _alnum(ch):
        while pos < end and _alnum(text[pos]):
            pos += 1
        _check_terminator(text, pos)
        word = text[start:pos]
        kind = T_KEYWORD if word in _KEYWORDS else T_BOOL if word in ("true", "false") else T_IDENT
        tokens.append((kind, word, start))
    elif ch.isascii() and ch.isprintable():  # punctuation: only ',' means something, in range declarations
        tokens.append((T_PUNCT, ch, pos))
        pos += 1
    else:
        raise TemplateError(_line(text, pos), f"unrecognized character in action: {_rune(ch)}")
    return pos


def _rune(ch: str) -> str:
    return f"U+{ord(ch):04X} {ch!r}" if ch.isprintable() else f"U+{ord(ch):04X}"


def _check_terminator(text: str, pos: int) -> None:
    if pos < len(text) and text[pos] not in _TERMINATORS and not text.startswith("}}", pos):
        raise TemplateError(_line(text, pos), f"bad character {_rune(text[pos])}")


def _scan_quoted(text: str, pos: int, quote: str) -> int:
    pos += 1
    while pos < len(text):
        ch = text[pos]
        if ch == "\\":
            pos += 2
            continue
        if ch == "\n":
            break
        if ch == quote:
            return pos + 1
        pos += 1
    what = "quoted string" if quote == '"' else "character constant"
    raise TemplateError(_line(text, pos), f"unterminated {what}")


def _scan_number(text: str, pos: int) -> int:
    start = pos
    end = len(text)

    def run(chars: str) -> None:
        nonlocal pos
        while pos < end and text[pos] in chars:
            pos += 1

    if text[pos] in "+-":
        pos += 1
    digits = "0123456789_"
    if text[pos:pos + 1] == "0":
        pos += 1
        prefix = text[pos:pos + 1]
        if prefix in ("x", "X"):
            digits, pos = "0123456789abcdefABCDEF_", pos + 1
        elif prefix in ("o", "O"):
            digits, pos = "01234567_", pos + 1
        elif prefix in ("b", "B"):
            digits, pos = "01_", pos + 1
    run(digits)
    if text[pos:pos + 1] == ".":
        pos += 1
        run(digits)
    if len(digits) == 11 and text[pos:pos + 1] in ("e", "E"):
        pos += 1
        run("+-")
        run("0123456789_")
    if len(digits) == 23 and text[pos:pos + 1] in ("p", "P"):
        pos += 1
        run("+-")
        run("0123456789_")
    if text[pos:pos + 1] == "i":
        pos += 1
    if pos < end and _alnum(text[pos]):
        raise TemplateError(_line(text, pos), f"bad number syntax: {text[start:pos + 1]!r}")
    return pos


# ---------------------------------------------------------------------------------------------------- nodes

class _Node:
    __slots__ = ("line",)
    line: int


class _Text(_Node):
    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text


class _Pipe(_Node):
    __slots__ = ("assign", "cmds", "decl")

    def __init__(self, line: int) -> None:
        self.line = line
        self.decl: list[str] = []
        self.assign = False
        self.cmds: list[_Command] = []

    def __str__(self) -> str:
        decl = ", ".join(self.decl) + (" = " if self.assign else " := ") if self.decl else ""
        return decl + " | ".join(str(cmd) for cmd in self.cmds)


class _Command(_Node):
    __slots__ = ("args",)

    def __init__(self, line: int) -> None:
        self.line = line
        self.args: list[_Arg] = []

    def __str__(self) -> str:
        return " ".join(str(arg) for arg in self.args)


class _Arg(_Node):
    """An operand. ``kind``: field, var, chain, ident, dot, nil, bool, number, string, pipe."""

    __slots__ = ("idents", "is_int", "kind", "name", "pipe", "src", "value")

    def __init__(self, kind: str, line: int, src: str, *, name: str = "", idents: tuple[str, ...] = (),
                 value: Any = None, pipe: _Pipe | None = None, is_int: bool = False) -> None:
        self.kind, self.line, self.src, self.name, self.idents = kind, line, src, name, idents
        self.value, self.pipe, self.is_int = value, pipe, is_int

    def __str__(self) -> str:
        return self.src


class _Action(_Node):
    __slots__ = ("pipe",)

    def __init__(self, pipe: _Pipe) -> None:
        self.line, self.pipe = pipe.line, pipe


class _Control(_Node):
    """if, with, range."""

    __slots__ = ("body", "kind", "orelse", "pipe")

    def __init__(self, kind: str, pipe: _Pipe, body: list[_Node], orelse: list[_Node] | None) -> None:
        self.kind, self.line, self.pipe, self.body, self.orelse = kind, pipe.line, pipe, body, orelse


class _Call(_Node):
    """``{{template "name" pipeline}}``."""

    __slots__ = ("name", "pipe")

    def __init__(self, line: int, name: str, pipe: _Pipe | None) -> None:
        self.line, self.name, self.pipe = line, name, pipe


class _Jump(_Node):
    """break or continue."""

    __slots__ = ("kind",)

    def __init__(self, line: int, kind: str) -> None:
        self.line, self.kind = line, kind


class _Mark(_Node):
    """``{{else}}`` or ``{{end}}`` while parsing."""

    __slots__ = ("kind",)

    def __init__(self, line: int, kind: str) -> None:
        self.line, self.kind = line, kind


# ---------------------------------------------------------------------------------------------------- parsing

def _unquote(token: str, line: int) -> str:
    if token[0] == "`":
        return token[1:-1].replace("\r", "")
    body = token[1:-1]
    if "\\" not in body:
        return body
    out: list[str] = []
    i = 0
    while i < len(body):
        ch = body[i]
        if ch != "\\":
            out.append(ch)
            i += 1
            continue
        code = body[i + 1:i + 2]
        simple = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "\\": "\\"}
        if code in simple:
            out.append(simple[code])
            i += 2
        elif code == token[0]:
            out.append(code)
            i += 2
        elif code in ("x", "u", "U"):
            size = {"x": 2, "u": 4, "U": 8}[code]
            digits = body[i + 2:i + 2 + size]
            try:
                out.append(chr(int(digits, 16)) if len(digits) == size else "")
            except ValueError:
                raise TemplateError(line, "invalid syntax") from None
            if len(digits) != size:
                raise TemplateError(line, "invalid syntax")
            i += 2 + size
        elif code in "01234567" and code:
            digits = body[i + 1:i + 4]
            if len(digits) != 3 or any(d not in "01234567" for d in digits):
                raise TemplateError(line, "invalid syntax")
            out.append(chr(int(digits, 8)))
            i += 4
        else:
            raise TemplateError(line, "invalid syntax")
    return "".join(out)


def _number(token: str, kind: int, line: int) -> tuple[Any, bool]:
    """(value as an untyped constant becomes when nothing asks for a type, whether it is an integer)."""
    if kind == T_CHAR:
        text = _unquote(token, line)
        if len(text) != 1:
            raise TemplateError(line, f"malformed character constant: {token}")
        return ord(text), True
    if token.endswith("i"):
        raise TemplateError(line, f"complex constants are not supported: {token}")
    plain = token.replace("_", "")
    sign, digits = ("-", plain[1:]) if plain[:1] == "-" else ("", plain.lstrip("+"))
    lower = digits.lower()
    try:
        if lower.startswith(("0x", "0o", "0b")) and "p" not in lower and "." not in lower:
            return int(sign + digits, 0), True
        if len(digits) > 1 and digits[0] == "0" and digits.isdigit():
            return int(sign + digits, 8), True
        if digits.isdigit():
            return int(sign + digits), True
        value = float.fromhex(sign + digits) if lower.startswith("0x") else float(sign + digits)
    except ValueError:
        raise TemplateError(line, f"illegal number syntax: {token!r}") from None
    if math.isinf(value):
        raise TemplateError(line, f"illegal number syntax: {token!r}")
    return value, False


class _Parser:
    def __init__(self, text: str, funcs: Mapping[str, Func]) -> None:
        self.text = text
        self.tokens = _lex(text)
        self.i = 0
        self.funcs = funcs
        self.vars: list[str] = ["$"]
        self.range_depth = 0
        self.defines: dict[str, list[_Node]] = {}

    # token access
    def line(self, token: tuple[int, str, int]) -> int:
        return _line(self.text, token[2])

    def next(self) -> tuple[int, str, int]:
        token = self.tokens[self.i]
        self.i += 1
        return token

    def peek(self) -> tuple[int, str, int]:
        return self.tokens[self.i]

    def next_non_space(self) -> tuple[int, str, int]:
        token = self.next()
        while token[0] == T_SPACE:
            token = self.next()
        return token

    def peek_non_space(self) -> tuple[int, str, int]:
        j = self.i
        while self.tokens[j][0] == T_SPACE:
            j += 1
        return self.tokens[j]

    def fail(self, token: tuple[int, str, int], message: str) -> TemplateError:
        return TemplateError(self.line(token), message)

    def unexpected(self, token: tuple[int, str, int], context: str) -> TemplateError:
        if token[0] == T_EOF:
            return self.fail(token, f"unexpected EOF in {context}")
        shown = "}}" if token[0] == T_RIGHT else token[1]
        return self.fail(token, f"unexpected {shown!r} in {context}")

    def expect(self, kind: int, context: str) -> tuple[int, str, int]:
        token = self.next_non_space()
        if token[0] != kind:
            raise self.unexpected(token, context)
        return token

    # structure
    def parse(self) -> list[_Node]:
        root: list[_Node] = []
        while self.peek()[0] != T_EOF:
            if self.peek()[0] == T_LEFT:
                save = self.i
                self.next()
                token = self.next_non_space()
                if token[0] == T_KEYWORD and token[1] == "define":
                    self.definition("define clause")
                    continue
                self.i = save
            node = self.text_or_action()
            if isinstance(node, _Mark):
                raise TemplateError(node.line, f"unexpected {{{{{node.kind}}}}}")
            root.append(node)
        return root

    def definition(self, context: str) -> str:
        token = self.next_non_space()
        if token[0] != T_STRING:
            raise self.unexpected(token, context)
        name = _unquote(token[1], self.line(token))
        self.expect(T_RIGHT, context)
        saved, self.vars = self.vars, ["$"]
        body, end = self.item_list()
        self.vars = saved
        if end.kind != "end":
            raise TemplateError(end.line, f"unexpected {{{{{end.kind}}}}} in {context}")
        self.defines[name] = body
        return name

    def item_list(self) -> tuple[list[_Node], _Mark]:
        items: list[_Node] = []
        while self.peek_non_space()[0] != T_EOF:
            node = self.text_or_action()
            if isinstance(node, _Mark):
                return items, node
            items.append(node)
        raise self.fail(self.peek(), "unexpected EOF")

    def text_or_action(self) -> _Node:
        token = self.next_non_space()
        if token[0] == T_TEXT:
            return _Text(token[1])
        if token[0] == T_LEFT:
            return self.action()
        raise self.unexpected(token, "input")

    def action(self) -> _Node:
        token = self.next_non_space()
        line = self.line(token)
        if token[0] == T_KEYWORD:
            word = token[1]
            if word in ("if", "with", "range"):
                return self.control(word)
            if word in ("break", "continue"):
                if not self.range_depth:
                    raise self.fail(token, f"{{{{{word}}}}} outside {{{{range}}}}")
                self.expect(T_RIGHT, word)
                return _Jump(line, word)
            if word == "else":
                peek = self.peek_non_space()
                if not (peek[0] == T_KEYWORD and peek[1] in ("if", "with")):
                    self.expect(T_RIGHT, "else")
                return _Mark(line, "else")
            if word == "end":
                self.expect(T_RIGHT, "end")
                return _Mark(line, "end")
            if word == "template":
                return self.template_call(line)
            if word == "block":
                return self.block(line)
        self.i -= 1
        return _Action(self.pipeline("command", T_RIGHT))

    def control(self, context: str) -> _Control:
        depth = len(self.vars)
        pipe = self.pipeline(context, T_RIGHT)
        if context == "range":
            self.range_depth += 1
        body, mark = self.item_list()
        if context == "range":
            self.range_depth -= 1
        orelse: list[_Node] | None = None
        if mark.kind == "else":
            peek = self.peek_non_space()
            if context in ("if", "with") and peek[0] == T_KEYWORD and peek[1] == context:
                self.next_non_space()
                orelse = [self.control(context)]
            else:
                orelse, mark = self.item_list()
                if mark.kind != "end":
                    raise TemplateError(mark.line, f"expected end; found {{{{{mark.kind}}}}}")
        del self.vars[depth:]
        return _Control(context, pipe, body, orelse)

    def template_call(self, line: int) -> _Call:
        context = "template clause"
        token = self.next_non_space()
        if token[0] != T_STRING:
            raise self.unexpected(token, context)
        name = _unquote(token[1], line)
        pipe = None
        if self.next_non_space()[0] != T_RIGHT:
            self.i -= 1
            pipe = self.pipeline(context, T_RIGHT)
        return _Call(line, name, pipe)

    def block(self, line: int) -> _Call:
        context = "block clause"
        token = self.next_non_space()
        if token[0] != T_STRING:
            raise self.unexpected(token, context)
        name = _unquote(token[1], line)
        pipe = self.pipeline(context, T_RIGHT)
        saved, self.vars = self.vars, ["$"]
        body, end = self.item_list()
        self.vars = saved
        if end.kind != "end":
            raise TemplateError(end.line, f"unexpected {{{{{end.kind}}}}} in {context}")
        self.defines[name] = body
        return _Call(line, name, pipe)

    def pipeline(self, context: str, end: int) -> _Pipe:
        pipe = _Pipe(self.line(self.peek_non_space()))
        while self.peek_non_space()[0] == T_VAR:
            save = self.i
            var = self.next_non_space()
            following = self.peek_non_space()
            if following[0] in (T_ASSIGN, T_DECLARE):
                pipe.assign = following[0] == T_ASSIGN
                self.next_non_space()
                pipe.decl.append(var[1])
                self.vars.append(var[1])
                break
            if following[0] == T_PUNCT and following[1] == ",":
                self.next_non_space()
                pipe.decl.append(var[1])
                self.vars.append(var[1])
                if context == "range" and len(pipe.decl) < 2:
                    if self.peek_non_space()[0] in (T_VAR, T_RIGHT, T_RPAREN):
                        continue
                    raise self.fail(var, "range can only initialize variables")
                raise self.fail(var, f"too many declarations in {context}")
            self.i = save
            break
        while True:
            token = self.next_non_space()
            if token[0] == end:
                if not pipe.cmds:
                    raise self.fail(token, f"missing value for {context}")
                for stage, cmd in enumerate(pipe.cmds[1:], start=2):
                    if cmd.args[0].kind in ("bool", "dot", "nil", "number", "string"):
                        raise TemplateError(cmd.line, f"non executable command in pipeline stage {stage}")
                return pipe
            if token[0] in (T_BOOL, T_CHAR, T_DOT, T_FIELD, T_IDENT, T_NUMBER, T_STRING, T_VAR, T_LPAREN) \
                    or (token[0] == T_KEYWORD and token[1] == "nil"):
                self.i -= 1
                pipe.cmds.append(self.command())
            else:
                raise self.unexpected(token, context)

    def command(self) -> _Command:
        cmd = _Command(self.line(self.peek_non_space()))
        while True:
            self.peek_non_space()
            operand = self.operand()
            if operand is not None:
                cmd.args.append(operand)
            token = self.next()
            if token[0] == T_SPACE:
                continue
            if token[0] in (T_RIGHT, T_RPAREN):
                self.i -= 1
            elif token[0] != T_PIPE:
                raise self.unexpected(token, "operand")
            break
        if not cmd.args:
            raise self.fail(self.peek(), "empty command")
        return cmd

    def operand(self) -> _Arg | None:
        node = self.term()
        if node is None or self.peek()[0] != T_FIELD:
            return node
        fields: list[str] = []
        while self.peek()[0] == T_FIELD:
            fields.append(self.next()[1][1:])
        src = node.src + "".join("." + field for field in fields)
        if node.kind == "field":
            return _Arg("field", node.line, src, idents=(*node.idents, *fields))
        if node.kind == "var":
            return _Arg("var", node.line, src, name=node.name, idents=(*node.idents, *fields))
        if node.kind in ("bool", "string", "number", "nil", "dot"):
            raise TemplateError(node.line, f"unexpected . after term {node.src!r}")
        return _Arg("chain", node.line, src, idents=tuple(fields), pipe=None, value=node)

    def term(self) -> _Arg | None:
        token = self.next_non_space()
        kind, text, _ = token
        line = self.line(token)
        if kind == T_IDENT:
            if text not in self.funcs:
                raise self.fail(token, f'function "{text}" not defined')
            return _Arg("ident", line, text, name=text)
        if kind == T_DOT:
            return _Arg("dot", line, ".")
        if kind == T_KEYWORD and text == "nil":
            return _Arg("nil", line, "nil")
        if kind == T_VAR:
            if text not in self.vars:
                raise self.fail(token, f'undefined variable "{text}"')
            return _Arg("var", line, text, name=text)
        if kind == T_FIELD:
            return _Arg("field", line, text, idents=(text[1:],))
        if kind == T_BOOL:
            return _Arg("bool", line, text, value=text == "true")
        if kind in (T_NUMBER, T_CHAR):
            value, is_int = _number(text, kind, line)
            return _Arg("number", line, text, value=value, is_int=is_int)
        if kind == T_LPAREN:
            pipe = self.pipeline("parenthesized pipeline", T_RPAREN)
            return _Arg("pipe", line, f"({pipe})", pipe=pipe)
        if kind == T_STRING:
            return _Arg("string", line, text, value=_unquote(text, line))
        self.i -= 1
        return None


# ---------------------------------------------------------------------------------------------------- execution

def _indirect(value: Any) -> Any:
    """Go's indirectInterface: a nil interface is no value."""
    return NO_VALUE if value is None else value


def truth(value: Any) -> bool:
    """Go's truth of a value: empty, zero, false and nil are false."""
    if value is None or value is NO_VALUE:
        return False
    if isinstance(value, (bool, int, float, str, dict, list)):
        return bool(value)
    return True


def _go_type(value: Any, interface: bool) -> str:
    return "interface {}" if interface else gofmt.type_name(value)


_MAX_DEPTH = 100


class _State:
    __slots__ = ("depth", "node", "out", "strict", "template", "vars")

    def __init__(self, template: Template, data: Any, depth: int = 0, *, strict: bool = False) -> None:
        self.template = template
        self.out: list[str] = []
        self.vars: list[list[Any]] = [["$", data]]
        self.depth = depth
        self.node: _Node | None = None
        self.strict = strict

    def fail(self, node: _Node, message: str) -> TemplateError:
        where = f"executing at <{node}>: " if isinstance(node, (_Arg, _Command, _Pipe)) else ""
        return TemplateError(node.line, where + message)

    # variables
    def lookup(self, name: str, node: _Node) -> Any:
        for entry in reversed(self.vars):
            if entry[0] == name:
                return entry[1]
        raise self.fail(node, f"undefined variable: {name}")

    def assign(self, name: str, value: Any, node: _Node) -> None:
        for entry in reversed(self.vars):
            if entry[0] == name:
                entry[1] = value
                return
        raise self.fail(node, f"undefined variable: {name}")

    # walking
    def walk(self, dot: Any, nodes: list[_Node]) -> None:
        for node in nodes:
            kind = type(node)
            if kind is _Text:
                self.out.append(node.text)  # type: ignore[attr-defined]
            elif kind is _Action:
                pipe = node.pipe  # type: ignore[attr-defined]
                value = self.pipeline(dot, pipe)
                if not pipe.decl:
                    if value is NO_VALUE and self.strict:
                        raise TemplateError(node.line, f"{{{{ {pipe} }}}} reads a value that is not set, which Go "
                                                       "prints as <no value>")
                    self.out.append("<no value>" if value is NO_VALUE else gofmt.sprint_value(value))
            elif kind is _Control:
                if node.kind == "range":  # type: ignore[attr-defined]
                    self.walk_range(dot, node)  # type: ignore[arg-type]
                else:
                    self.walk_if(dot, node)  # type: ignore[arg-type]
            elif kind is _Call:
                self.walk_template(dot, node)  # type: ignore[arg-type]
            else:
                raise _Break if node.kind == "break" else _Continue  # type: ignore[attr-defined]

    def walk_if(self, dot: Any, node: _Control) -> None:
        mark = len(self.vars)
        value = self.pipeline(dot, node.pipe)
        if truth(value):
            self.walk(value if node.kind == "with" else dot, node.body)
        elif node.orelse is not None:
            self.walk(dot, node.orelse)
        del self.vars[mark:]

    def walk_range(self, dot: Any, node: _Control) -> None:
        mark = len(self.vars)
        value = self.pipeline(dot, node.pipe)
        pipe = node.pipe
        if isinstance(value, list):
            items: Any = enumerate(value)
        elif isinstance(value, dict):
            items = ((key, value[key]) for key in sorted(value))
        elif isinstance(value, int) and not isinstance(value, bool):
            items = ((i, i) for i in range(value))
        elif value is NO_VALUE:
            items = ()
        else:
            raise self.fail(node.pipe, f"range can't iterate over {gofmt.sprint_value(value)}")
        inner = len(self.vars)
        ran = False
        try:
            for key, item in items:
                ran = True
                if pipe.decl:
                    if pipe.assign:
                        if len(pipe.decl) > 1:
                            self.assign(pipe.decl[0], key, pipe)
                            self.assign(pipe.decl[1], item, pipe)
                        else:
                            self.assign(pipe.decl[0], item, pipe)
                    else:
                        self.vars[inner - 1][1] = item
                        if len(pipe.decl) > 1:
                            self.vars[inner - 2][1] = key
                with contextlib.suppress(_Continue):
                    self.walk(item, node.body)
                del self.vars[inner:]
        except _Break:
            del self.vars[inner:]
        if not ran and node.orelse is not None:
            self.walk(dot, node.orelse)
        del self.vars[mark:]

    def walk_template(self, dot: Any, node: _Call) -> None:
        body = self.template.defines.get(node.name)
        if body is None:
            raise TemplateError(node.line, f'no such template "{node.name}"')
        if self.depth >= _MAX_DEPTH:
            raise TemplateError(node.line, f"exceeded maximum template depth ({_MAX_DEPTH})")
        value = self.pipeline(dot, node.pipe) if node.pipe is not None else NO_VALUE
        state = _State(self.template, value, self.depth + 1, strict=self.strict)
        state.out = self.out
        state.walk(value, body)

    # evaluation
    def pipeline(self, dot: Any, pipe: _Pipe) -> Any:
        value = _MISSING
        for cmd in pipe.cmds:
            value = self.command(dot, cmd, value)
            if value is None:  # a nil interface unwraps to no value
                value = NO_VALUE
        for name in pipe.decl:
            if pipe.assign:
                self.assign(name, value, pipe)
            else:
                self.vars.append([name, value])
        return value

    def command(self, dot: Any, cmd: _Command, final: Any) -> Any:
        first = cmd.args[0]
        kind = first.kind
        if kind == "field":
            return self.field_chain(dot, first, first.idents, cmd.args, final)
        if kind == "var":
            return self.variable(dot, first, cmd.args, final)
        if kind == "ident":
            return self.call(dot, first, cmd.args[1:], final)
        if kind == "chain":
            return self.chain(dot, first, cmd.args, final)
        self.not_a_function(cmd.args, final)
        if kind == "pipe":
            return self.pipeline(dot, first.pipe)  # type: ignore[arg-type]
        if kind == "dot":
            return dot
        if kind == "nil":
            raise self.fail(first, "nil is not a command")
        return first.value

    def not_a_function(self, args: list[_Arg], final: Any) -> None:
        if len(args) > 1 or final is not _MISSING:
            raise self.fail(args[0], f"can't give argument to non-function {args[0]}")

    def variable(self, dot: Any, node: _Arg, args: list[_Arg], final: Any) -> Any:
        value = self.lookup(node.name, node)
        if not node.idents:
            self.not_a_function(args, final)
            return value
        return self.field_chain(value, node, node.idents, args, final)

    def chain(self, dot: Any, node: _Arg, args: list[_Arg], final: Any) -> Any:
        base: _Arg = node.value
        if base.kind == "nil":
            raise self.fail(node, f"indirection through explicit nil in {node}")
        receiver = self.arg(dot, None, base)
        return self.field_chain(receiver, node, node.idents, args, final)

    def field_chain(self, receiver: Any, node: _Arg, idents: tuple[str, ...], args: list[_Arg],
                    final: Any) -> Any:
        last = len(idents) - 1
        for i, name in enumerate(idents):
            has_args = i == last and (len(args) > 1 or final is not _MISSING)
            receiver = self.field(receiver, name, node, has_args, interface=i > 0)
        return receiver

    def field(self, receiver: Any, name: str, node: _Arg, has_args: bool, interface: bool) -> Any:
        if receiver is NO_VALUE:
            return NO_VALUE
        if receiver is None:
            raise self.fail(node, f"nil pointer evaluating interface {{}}.{name}")
        if isinstance(receiver, dict):
            if has_args:
                raise self.fail(node, f"{name} is not a method but has arguments")
            return receiver.get(name, NO_VALUE)
        if isinstance(receiver, gofmt.GoStruct) and name in receiver.fields:
            if has_args:
                raise self.fail(node, f"{name} has arguments but cannot be invoked as function")
            return receiver.fields[name]
        raise self.fail(node, f"can't evaluate field {name} in type {_go_type(receiver, interface)}")

    def call(self, dot: Any, ident: _Arg, args: list[_Arg], final: Any) -> Any:
        name = ident.name
        fn: Func = self.template.funcs[name]
        count = len(args) + (final is not _MISSING)
        fixed = len(fn.params)
        if fn.variadic is not None:
            if count < fixed:
                raise self.fail(ident, f"wrong number of args for {name}: want at least {fixed} got {len(args)}")
        elif count != fixed:
            raise self.fail(ident, f"wrong number of args for {name}: want {fixed} got {count}")
        if name in ("and", "or") and fn.fn is _short_circuit:
            value = NO_VALUE
            for arg in args:
                value = self.arg(dot, VALUE, arg)
                if truth(value) == (name == "or"):
                    return value
            if final is not _MISSING:
                value = self.check(final, VALUE, ident)
            return value
        argv = [self.arg(dot, fn.params[i] if i < fixed else fn.variadic, arg) for i, arg in enumerate(args)]
        if final is not _MISSING:
            kind = fn.params[count - 1] if count - 1 < fixed else fn.variadic
            argv.append(self.check(final, kind, ident))
        try:
            return fn.fn(*argv)
        except _FuncError as err:
            raise self.fail(ident, f"error calling {name}: {err}") from None

    def arg(self, dot: Any, kind: str | None, node: _Arg) -> Any:
        what = node.kind
        if what == "dot":
            return self.check(dot, kind, node)
        if what == "nil":
            if kind in (ANY, VALUE, None):
                return None if kind == ANY else NO_VALUE
            raise self.fail(node, f"cannot assign nil to {kind}")
        if what == "field":
            return self.check(self.field_chain(dot, node, node.idents, [], _MISSING), kind, node)
        if what == "var":
            return self.check(self.variable(dot, node, [], _MISSING), kind, node)
        if what == "pipe":
            return self.check(self.pipeline(dot, node.pipe), kind, node)  # type: ignore[arg-type]
        if what == "ident":
            return self.check(self.call(dot, node, [], _MISSING), kind, node)
        if what == "chain":
            return self.check(self.chain(dot, node, [], _MISSING), kind, node)
        value = node.value
        if kind in (ANY, VALUE, None):
            return value
        if kind == STRING and what == "string":
            return value
        if kind == INT and what == "number" and node.is_int:
            return value
        if kind == BOOL and what == "bool":
            return value
        expected = {STRING: "string", INT: "integer", BOOL: "bool"}[kind]
        raise self.fail(node, f"expected {expected}; found {node}")

    def check(self, value: Any, kind: str | None, node: _Arg) -> Any:
        """Go's validateType: the value as a parameter of ``kind`` receives it."""
        if value is NO_VALUE:
            if kind is None or kind == VALUE:
                return NO_VALUE
            if kind == ANY:
                return None
            raise self.fail(node, f"invalid value; expected {kind}")
        if kind in (None, ANY, VALUE):
            return value
        ok = (isinstance(value, str) if kind == STRING else isinstance(value, bool) if kind == BOOL
              else isinstance(value, int) and not isinstance(value, bool))
        if not ok:
            got = "interface {}" if value is None else gofmt.type_name(value)
            raise self.fail(node, f"wrong type for value; expected {kind}; got {got}")
        return value


# ---------------------------------------------------------------------------------------------------- builtins

def _short_circuit(*args: Any) -> Any:  # and/or are evaluated by the executor; this marks them
    raise AssertionError("and/or are evaluated lazily")


def _basic(value: Any) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "float"
    if isinstance(value, str):
        return "string"
    return "invalid"


def _eq(first: Any, *others: Any) -> bool:
    first = _indirect(first)
    if not others:
        raise _FuncError("missing argument for comparison")
    kind = _basic(first)
    for given in others:
        other = _indirect(given)
        other_kind = _basic(other)
        if kind != other_kind:
            if first is not NO_VALUE and other is not NO_VALUE:
                raise _FuncError("incompatible types for comparison")
            continue
        if kind == "invalid":
            if first is NO_VALUE or other is NO_VALUE:
                if first is other:
                    return True
                continue
            if isinstance(first, (dict, list)) or isinstance(other, (dict, list)):
                raise _FuncError(f"non-comparable type {gofmt.sprint_value(first)}: {gofmt.type_name(first)}")
        if first == other:
            return True
    return False


def _ne(first: Any, second: Any) -> bool:
    return not _eq(first, second)


def _lt(first: Any, second: Any) -> bool:
    first, second = _indirect(first), _indirect(second)
    kind = _basic(first)
    if kind in ("invalid", "bool") or _basic(second) in ("invalid", "bool"):
        raise _FuncError("invalid type for comparison")
    if kind != _basic(second):
        raise _FuncError("incompatible types for comparison")
    return bool(first < second)


def _le(first: Any, second: Any) -> bool:
    return _lt(first, second) or _eq(first, second)


def _gt(first: Any, second: Any) -> bool:
    return not _le(first, second)


def _ge(first: Any, second: Any) -> bool:
    return not _lt(first, second)


def _not(value: Any) -> bool:
    return not truth(value)


def _len(value: Any) -> int:
    value = _indirect(value)
    if value is NO_VALUE:
        raise _FuncError("len of untyped nil")
    if isinstance(value, str):
        return len(value.encode())
    if isinstance(value, (dict, list)):
        return len(value)
    raise _FuncError(f"len of type {gofmt.type_name(value)}")


def _index_of(index: Any, size: int, cap: int | None = None) -> int:
    index = _indirect(index)
    if isinstance(index, bool) or not isinstance(index, int):
        if index is NO_VALUE:
            raise _FuncError("cannot index slice/array with nil")
        raise _FuncError(f"cannot index slice/array with type {gofmt.type_name(index)}")
    if index < 0 or index > (size if cap is None else cap):
        raise _FuncError(f"index out of range: {index}")
    return index


def _index(item: Any, *indexes: Any) -> Any:
    item = _indirect(item)
    if item is NO_VALUE:
        raise _FuncError("index of untyped nil")
    for given in indexes:
        index = _indirect(given)
        if item is None:
            raise _FuncError("index of nil pointer")
        if isinstance(item, (list, str)):
            position = _index_of(index, len(item) if isinstance(item, list) else len(item.encode()))
            size = len(item) if isinstance(item, list) else len(item.encode())
            if position == size:
                raise _FuncError(f"index out of range: {position}")
            item = item[position] if isinstance(item, list) else item.encode()[position]
        elif isinstance(item, dict):
            if index is NO_VALUE:
                raise _FuncError("value is nil; should be of type string")
            if not isinstance(index, str):
                raise _FuncError(f"value has type {gofmt.type_name(index)}; should be string")
            item = item.get(index)
        else:
            raise _FuncError(f"can't index item of type {gofmt.type_name(item)}")
    return item


def _slice(item: Any, *indexes: Any) -> Any:
    item = _indirect(item)
    if item is NO_VALUE:
        raise _FuncError("slice of untyped nil")
    if len(indexes) > 3:
        raise _FuncError(f"too many slice indexes: {len(indexes)}")
    if isinstance(item, str):
        if len(indexes) == 3:
            raise _FuncError("cannot 3-index slice a string")
        data = item.encode()
    elif isinstance(item, list):
        data = item  # type: ignore[assignment]
    else:
        raise _FuncError(f"can't slice item of type {gofmt.type_name(item)}")
    bounds = [0, len(data)]
    for i, index in enumerate(indexes[:2]):
        bounds[i] = _index_of(index, len(data))
    if bounds[0] > bounds[1]:
        raise _FuncError(f"invalid slice index: {bounds[0]} > {bounds[1]}")
    part = data[bounds[0]:bounds[1]]
    return part.decode(errors="replace") if isinstance(part, bytes) else list(part)


def _args_text(args: tuple[Any, ...]) -> str:
    if len(args) == 1 and isinstance(args[0], str):
        return args[0]
    return gofmt.sprint(*args)


def _html(*args: Any) -> str:
    text = _args_text(args)
    for old, new in (("&", "&amp;"), ("'", "&#39;"), ("<", "&lt;"), (">", "&gt;"), ('"', "&#34;"),
                     ("\0", "\ufffd")):
        text = text.replace(old, new)
    return text


_JS_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "<": "\\u003C", ">": "\\u003E", "&": "\\u0026",
               "=": "\\u003D", "`": "\\u0060"}


def _js(*args: Any) -> str:
    out = []
    for ch in _args_text(args):
        if ch in _JS_ESCAPES:
            out.append(_JS_ESCAPES[ch])
        elif ord(ch) < 0x20 or not ch.isprintable():
            out.append(f"\\u{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def _urlquery(*args: Any) -> str:
    from urllib.parse import quote_plus

    return quote_plus(_args_text(args), safe="-_.~")


BUILTINS: dict[str, Func] = {
    "and": Func(_short_circuit, (VALUE,), VALUE),
    "or": Func(_short_circuit, (VALUE,), VALUE),
    "not": Func(_not, (VALUE,)),
    "len": Func(_len, (VALUE,)),
    "index": Func(_index, (VALUE,), VALUE),
    "slice": Func(_slice, (VALUE,), VALUE),
    "eq": Func(_eq, (VALUE,), VALUE),
    "ne": Func(_ne, (VALUE, VALUE)),
    "lt": Func(_lt, (VALUE, VALUE)),
    "le": Func(_le, (VALUE, VALUE)),
    "gt": Func(_gt, (VALUE, VALUE)),
    "ge": Func(_ge, (VALUE, VALUE)),
    "print": Func(gofmt.sprint, (), ANY),
    "printf": Func(gofmt.sprintf, (STRING,), ANY),
    "println": Func(gofmt.sprintln, (), ANY),
    "html": Func(_html, (), ANY),
    "js": Func(_js, (), ANY),
    "urlquery": Func(_urlquery, (), ANY),
}


# ---------------------------------------------------------------------------------------------------- API

class Template:
    """A parsed template and the functions it may call."""

    __slots__ = ("body", "defines", "funcs", "source")

    def __init__(self, source: str, body: list[_Node], defines: dict[str, list[_Node]],
                 funcs: Mapping[str, Func]) -> None:
        self.source, self.body, self.defines, self.funcs = source, body, defines, funcs

    def execute(self, data: Any, *, strict: bool = False) -> str:
        """The text the template writes for ``data``; ``InvalidInputError`` naming ``source:line`` on an error.
        ``strict``: printing a missing value is an error too (Go prints ``<no value>``)."""
        state = _State(self, data, strict=strict)
        try:
            state.walk(data, self.body)
        except TemplateError as err:
            raise InvalidInputError.at(Located(self.source, err.line, err.message)) from None
        except RecursionError:
            raise InvalidInputError(f"{self.source}: template nests too deeply") from None
        return "".join(state.out)


def parse(text: str, source: str, funcs: Mapping[str, Func] | None = None) -> Template:
    """Compile ``text`` (named ``source`` in errors) with the built-ins plus ``funcs``; cached by content, so the
    same manifest is parsed once per process (``funcs`` must be a long-lived mapping: it is part of the key)."""
    return _parse(text, source, _Funcs(funcs or {}))


class _Funcs(dict[str, Func]):
    """The built-ins plus extra functions, hashable by the identity of the extra mapping (for the cache)."""

    def __init__(self, extra: Mapping[str, Func]) -> None:
        super().__init__(BUILTINS)
        self.update(extra)
        self.key = id(extra)

    def __hash__(self) -> int:  # type: ignore[override]
        return self.key

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Funcs) and other.key == self.key


@functools.lru_cache(maxsize=512)
def _parse(text: str, source: str, funcs: _Funcs) -> Template:
    try:
        parser = _Parser(text, funcs)
        body = parser.parse()
    except TemplateError as err:
        raise InvalidInputError.at(Located(source, err.line, err.message)) from None
    return Template(source, body, parser.defines, funcs)
