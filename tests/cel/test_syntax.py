"""The CEL parser against cel-go's: literal values, precedence, macro expansions with cel-go's ids, the
first error cel-go lists (text and place), reserved words, options and limits. Expected errors and trees
are cel-go's (its parser tests and its ANTLR error strategy), checked where possible against cel-cpp, which
shares the grammar."""

from __future__ import annotations

import math
import time
from pathlib import Path

import pytest
import yaml

from aicr_gen.cel import ast
from aicr_gen.cel.ast import Call, Comprehension, Constant, CreateList, CreateStruct, Expr, Ident, Select, unparse
from aicr_gen.cel.source import Source
from aicr_gen.cel.syntax import MAX_RECURSION_DEPTH, CelSyntaxError, parse

ROOT = Path(__file__).resolve().parents[2]

EXPR_START = ("{'[', '{', '(', '.', '-', '!', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, "
              "BYTES, IDENTIFIER}")


def _error(text: str, **options: object) -> str:
    """``LINE:COL: message`` of the error cel-go lists first (``-1:0`` where it gives no place)."""
    with pytest.raises(CelSyntaxError) as caught:
        parse(text, **options)  # type: ignore[arg-type]
    first = caught.value.display(text).split("\n")[0]
    return first.removeprefix("ERROR: <input>:")


def _constant(text: str) -> Constant:
    expr = parse(text)
    assert isinstance(expr, Constant), unparse(expr)
    return expr


LITERALS: list[tuple[str, str, object]] = [
    ("0", "int", 0), ("42", "int", 42), ("007", "int", 7), ("0xF", "int", 15), ("0xfF", "int", 255),
    ("-1", "int", -1), ("- 1", "int", -1), ("-9223372036854775808", "int", -(2 ** 63)),
    ("9223372036854775807", "int", 2 ** 63 - 1), ("-0x10", "int", -16),
    ("0u", "uint", 0), ("23U", "uint", 23), ("0xFu", "uint", 15), ("18446744073709551615u", "uint", 2 ** 64 - 1),
    ("23.39", "double", 23.39), (".5", "double", 0.5), ("1e3", "double", 1000.0), ("1E-3", "double", 0.001),
    ("2.5e+2", "double", 250.0), (".7e1", "double", 7.0), ("-4.1", "double", -4.1), ("1e-400", "double", 0.0),
    ("true", "bool", True), ("false", "bool", False), ("null", "null", None),
    ('""', "string", ""), ("''", "string", ""), ("'\"\"'", "string", '""'), ("'''x''x'''", "string", "x''x"),
    ('"\\""', "string", '"'), ('"\\\\"', "string", "\\"), ('r"\\\\"', "string", "\\\\"),
    (r'"\a\b\f\n\r\t\v"', "string", "\a\b\f\n\r\t\v"),
    (r'''"\\ \? \" \' \`"''', "string", "\\ ? \" ' `"),
    (r'"\X4c\x4C"', "string", "LL"), (r'"\303\277"', "string", "\u00c3\u00bf"), (r'"\377"', "string", "\u00ff"),
    (r'"\xFF"', "string", "\u00ff"), (r'"\u2764"', "string", "\u2764"), (r'"\U0001F600"', "string", "\U0001f600"),
    (r'"\u2FE0"', "string", "\u2fe0"), ('"\u00ff"', "string", "\u00ff"),
    ("'''a\nb'''", "string", "a\nb"), ('"""a\r\nb\rc"""', "string", "a\nb\nc"), ("r'''a\r\nb'''", "string", "a\nb"),
    (r"r'\n\x'", "string", "\\n\\x"), (r"R'\'", "string", "\\"), ("'''\\''''", "string", "'"),
    ('b"abc"', "bytes", b"abc"), ('B"abc"', "bytes", b"abc"), ('b"\u00ff"', "bytes", b"\xc3\xbf"),
    (r'b"\303\277"', "bytes", b"\xc3\xbf"), (r'b"\377"', "bytes", b"\xff"), (r'b"\xff\X00"', "bytes", b"\xff\x00"),
    (r"br'\xff'", "bytes", b"\\xff"), (r"bR'''\u'''", "bytes", b"\\u"),
    (r'b"\?\`\n"', "bytes", b"?`\n"),
]


@pytest.mark.parametrize(("text", "kind", "value"), LITERALS, ids=[case[0] for case in LITERALS])
def test_literal_values_are_cel_gos(text: str, kind: str, value: object) -> None:
    const = _constant(text)
    assert (const.kind, const.value) == (kind, value)
    if kind == "double":
        assert math.copysign(1, const.value) == math.copysign(1, value)  # type: ignore[arg-type]


def test_rb_is_not_a_prefix() -> None:
    # ANTLR's STRING takes an optional r, and BYTES a b before it: 'rb' is an identifier and then a string.
    assert _error("rb'x'") == "1:3: Syntax error: extraneous input ''x'' expecting <EOF>"


def test_negative_zero_and_number_followed_by_members() -> None:
    assert math.copysign(1, _constant("-0.0").value) == -1  # type: ignore[arg-type]
    assert unparse(parse("42.charAt(2)")) == "42.charAt(2)"
    assert unparse(parse("24.indexOf('2')")) == '24.indexOf("2")'
    assert unparse(parse("1.5.floor()")) == "1.5.floor()"
    assert unparse(parse("-1.abs()")) == "-1.abs()"  # the sign belongs to the literal, then the call


PRECEDENCE = [
    ("a || b && c", "(a || (b && c))"),
    ("a && b || c && d", "((a && b) || (c && d))"),
    ("a || b || c || d || e || f", "(((a || b) || c) || ((d || e) || f))"),  # cel-go's balanced tree
    ("a && b && c && d && e && f && g", "(((a && b) && (c && d)) && ((e && f) && g))"),
    ("a ? b : c ? d : e", "(a ? b : (c ? d : e))"),
    ("a ? (b ? c : d) : e", "(a ? (b ? c : d) : e)"),
    ("a || b ? c || d : e", "((a || b) ? (c || d) : e)"),
    ("a == b == c", "((a == b) == c)"),
    ("a < b == c in d", "(((a < b) == c) in d)"),
    ("x in [1, 2] && y", "((x in [1, 2]) && y)"),
    ("1 + 2 * 3 - 1 / 2 == 6 % 1", "(((1 + (2 * 3)) - (1 / 2)) == (6 % 1))"),
    ("a - b - c", "((a - b) - c)"),
    ("a * b + c * d", "((a * b) + (c * d))"),
    ("a / b * c % d", "(((a / b) * c) % d)"),
    ("4--4", "(4 - -4)"),
    ("4--4.1", "(4 - -4.1)"),
    ("a-1", "(a - 1)"),
    ("--1", "1"),
    ("---1", "(-(1))"),
    ("--a", "a"),
    ("-a.b", "(-a.b)"),
    ("-(1)", "(-(1))"),
    ("-(-1)", "(-(-1))"),
    ("!a && b", "((!a) && b)"),
    ("!!a", "a"),
    ("!!!a", "(!a)"),
    ("!a.b()", "(!a.b())"),
    ("!-1", "(!(-1))"),
    ("a.b.c", "a.b.c"),
    (".a.b", ".a.b"),
    (".f(x)", ".f(x)"),
    ("a.b(c).d[e][f].g()", "a.b(c).d[e][f].g()"),
    ("a.if + a.package()", "(a.if + a.package())"),
    ("(a + b) * c", "((a + b) * c)"),
    ("((a))", "a"),
    ("[1, 2, 3,][0]", "[1, 2, 3][0]"),
    ("[,]", "[]"),
    ("{}", "{}"),
    ("{,}", "{}"),
    ("{a: b, 'c': d,}", '{a: b, "c": d}'),
    ("a.b.C{f: 1, g: 2,}", "a.b.C{f: 1, g: 2}"),
    (".a.C{}", ".a.C{}"),
    ("if{}", "if{}"),  # message names are not checked against the reserved words
    ("M{if: 1}", "M{if: 1}"),
    ("size(x) == x.size()", "(size(x) == x.size())"),
    ("a.`b-c`", "a.`b-c`"),
    ("a.`b.c` + a.`in` + a.`/foo` + a.`b c`", "(((a.`b.c` + a.`in`) + a.`/foo`) + a.`b c`)"),
    ("M{`content-type`: 1}", "M{`content-type`: 1}"),
    ("a // comment\n + b", "(a + b)"),
    ("x\t+\f y", "(x + y)"),
    ('"\U0001f601" in ["\U0001f601"]', '("\U0001f601" in ["\U0001f601"])'),
]


@pytest.mark.parametrize(("text", "shape"), PRECEDENCE)
def test_precedence_and_associativity_are_cel_gos(text: str, shape: str) -> None:
    assert unparse(parse(text)) == shape
    assert unparse(parse(shape)) == shape  # the canonical form reads back as itself


def test_operators_are_calls_named_as_in_cel_go() -> None:
    names = {"a ? b : c": ast.CONDITIONAL, "a || b": ast.LOGICAL_OR, "a && b": ast.LOGICAL_AND,
             "!a": ast.LOGICAL_NOT, "-a": ast.NEGATE, "a == b": ast.EQUALS, "a != b": ast.NOT_EQUALS,
             "a < b": ast.LESS, "a <= b": ast.LESS_EQUALS, "a > b": ast.GREATER, "a >= b": ast.GREATER_EQUALS,
             "a in b": ast.IN, "a + b": ast.ADD, "a - b": ast.SUBTRACT, "a * b": ast.MULTIPLY,
             "a / b": ast.DIVIDE, "a % b": ast.MODULO, "a[b]": ast.INDEX}
    for text, function in names.items():
        expr = parse(text)
        assert isinstance(expr, Call) and expr.function == function and expr.target is None, text


def _tagged(expr: Expr) -> str:
    """The tree with every node's id (``name#id``), for comparing with cel-go's debug output."""
    if isinstance(expr, Constant):
        return f"{unparse(expr)}#{expr.id}"
    if isinstance(expr, Ident):
        return f"{expr.name}#{expr.id}"
    if isinstance(expr, Select):
        return f"{_tagged(expr.operand)}.{expr.field}{'~test-only~' * expr.test_only}#{expr.id}"
    if isinstance(expr, Call):
        target = f"{_tagged(expr.target)}." if expr.target is not None else ""
        return f"{target}{expr.function}({', '.join(_tagged(arg) for arg in expr.args)})#{expr.id}"
    if isinstance(expr, CreateList):
        return f"[{', '.join(_tagged(item) for item in expr.elements)}]#{expr.id}"
    if isinstance(expr, CreateStruct):
        entries = ", ".join(
            f"{entry.key if isinstance(entry.key, str) else _tagged(entry.key)}:{_tagged(entry.value)}#{entry.id}"
            for entry in expr.entries)
        return f"{expr.message_name}{{{entries}}}#{expr.id}"
    assert isinstance(expr, Comprehension)
    parts = [expr.iter_var, _tagged(expr.iter_range), expr.accu_var, _tagged(expr.accu_init),
             _tagged(expr.loop_condition), _tagged(expr.loop_step), _tagged(expr.result)]
    return f"__comprehension__({', '.join(parts)})#{expr.id}"


IDS = [  # cel-go's parser tests (parser_test.go), its ids included
    ("a || b || c || d || e || f",
     "_||_(_||_(_||_(a#1, b#2)#3, c#4)#5, _||_(_||_(d#6, e#8)#9, f#10)#11)#7"),
    ("a?b:c", "_?_:_(a#1, b#3, c#4)#2"),
    ("!a", "!_(a#2)#1"),
    ("a.b(c)", "a#1.b(c#3)#2"),
    ("a[b]", "_[_](a#1, b#3)#2"),
    ("foo{ a:b, c:d }", "foo{a:b#3#2, c:d#5#4}#1"),
    ("{a:b, c:d}", "{a#3:b#4#2, c#6:d#7#5}#1"),
    ("[a, b, c]", "[a#2, b#3, c#4]#1"),
    ("a(b, c)", "a(b#2, c#3)#1"),
    ("4--4", "_-_(4#1, -4#3)#2"),
    ("has(m.f)", "m#2.f~test-only~#4"),
    ("m.exists(v, f)",
     "__comprehension__(v, m#1, @result, false#5, @not_strictly_false(!_(@result#6)#7)#8, "
     "_||_(@result#9, f#4)#10, @result#11)#12"),
    ("m.all(v, f)",
     "__comprehension__(v, m#1, @result, true#5, @not_strictly_false(@result#6)#7, _&&_(@result#8, f#4)#9, "
     "@result#10)#11"),
    ("m.exists_one(v, f)",
     "__comprehension__(v, m#1, @result, 0#5, true#6, _?_:_(f#4, _+_(@result#7, 1#8)#9, @result#10)#11, "
     "_==_(@result#12, 1#13)#14)#15"),
    ("m.map(v, f)",
     "__comprehension__(v, m#1, @result, []#5, true#6, _+_(@result#7, [f#4]#8)#9, @result#10)#11"),
    ("m.map(v, p, f)",
     "__comprehension__(v, m#1, @result, []#6, true#7, _?_:_(p#4, _+_(@result#8, [f#5]#9)#10, @result#11)#12, "
     "@result#13)#14"),
    ("m.filter(v, p)",
     "__comprehension__(v, m#1, @result, []#5, true#6, _?_:_(p#4, _+_(@result#7, [v#3]#8)#9, @result#10)#11, "
     "@result#12)#13"),
    ("(has(a.b) || has(c.d)).string()", "_||_(a#2.b~test-only~#4, c#6.d~test-only~#8)#9.string()#10"),
    ("a.?b[?0] && a[?c]", "_&&_(_[?_](_?._(a#1, \"b\"#2)#3, 0#5)#4, _[?_](a#6, c#8)#7)#9"),
    ("{?'key': value}", "{\"key\"#3:value#4#2}#1"),
]


@pytest.mark.parametrize(("text", "tagged"), IDS)
def test_nodes_have_cel_gos_ids(text: str, tagged: str) -> None:
    assert _tagged(parse(text, optional_syntax=True)) == tagged


def test_nodes_are_located_where_cel_go_locates_them() -> None:
    source = Source("a.b(c)")
    call = parse(source.text)
    assert isinstance(call, Call) and call.target is not None
    assert [source.location(node.offset) for node in (call.target, call.args[0], call)] == [(1, 0), (1, 4), (1, 3)]
    presence = parse("has(m.f)")
    assert isinstance(presence, Select) and presence.offset == 3 and presence.operand.offset == 4  # has's '('
    expanded = parse("xs.all(x, x > 0)")
    assert isinstance(expanded, Comprehension) and expanded.offset == 6 and expanded.accu_init.offset == 6
    ternary = parse("a ?\n  b : c")
    assert isinstance(ternary, Call) and Source("a ?\n  b : c").location(ternary.args[1].offset) == (2, 2)
    entry = parse("{1: 2}")
    assert isinstance(entry, CreateStruct) and entry.entries[0].offset == 2  # the ':'


def test_comprehension_macros_follow_cel_go_standard_set() -> None:
    # cel.StandardMacros has no 'existsOne' (only the parser package's AllMacros does).
    assert isinstance(parse("[1].existsOne(x, x > 0)"), Call)
    assert isinstance(parse("[1].exists_one(x, x > 0)"), Comprehension)
    assert isinstance(parse("[1].all(x, y, x > 0)"), Call)  # the two-variable forms are cel-go's ext
    assert isinstance(parse("all(x, y)"), Call) and isinstance(parse("x.has(y)"), Call)
    assert isinstance(parse("[1].map(x, x)", macros=False), Call)
    nested = parse("x.filter(y, y.filter(z, z > 0))")
    assert isinstance(nested, Comprehension) and nested.id == 27
    assert isinstance(nested.loop_step, Call) and isinstance(nested.loop_step.args[0], Comprehension)


ERRORS: list[tuple[str, dict[str, object], str]] = [
    # ANTLR's syntax errors, as cel-go words them
    ("1 + +", {}, f"1:5: Syntax error: mismatched input '+' expecting {EXPR_START}"),
    ("*@a | b", {}, f"1:1: Syntax error: extraneous input '*' expecting {EXPR_START}"),
    ("a | b", {}, "1:3: Syntax error: token recognition error at: '| '"),
    ("1 + $", {}, "1:5: Syntax error: token recognition error at: '$'"),
    ("a = b", {}, "1:3: Syntax error: token recognition error at: '= '"),
    ("a & b", {}, "1:3: Syntax error: token recognition error at: '& '"),
    ("in", {}, f"1:1: Syntax error: mismatched input 'in' expecting {EXPR_START}"),
    ("", {}, f"1:1: Syntax error: mismatched input '<EOF>' expecting {EXPR_START}"),
    ("{", {}, "1:2: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '}', '(', '.', ',', '-', '!', "
              "'?', 'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ("[1, 2", {}, "1:6: Syntax error: mismatched input '<EOF>' expecting {']', ','}"),
    ("[1,2,,]", {}, "1:6: Syntax error: extraneous input ',' expecting ']'"),
    ("(a", {}, "1:3: Syntax error: missing ')' at '<EOF>'"),
    ("f(a", {}, "1:4: Syntax error: missing ')' at '<EOF>'"),
    ("(a b)", {}, "1:4: Syntax error: extraneous input 'b' expecting ')'"),
    ("f(,)", {}, "1:3: Syntax error: extraneous input ',' expecting {'[', '{', '(', ')', '.', '-', '!', 'true', "
                 "'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ("f(a,)", {}, f"1:5: Syntax error: mismatched input ')' expecting {EXPR_START}"),
    ("x[", {}, "1:3: Syntax error: mismatched input '<EOF>' expecting {'[', '{', '(', '.', '-', '!', '?', 'true', "
               "'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ("1 + 2\n3 +", {}, "2:1: Syntax error: mismatched input '3' expecting <EOF>"),
    ("a b", {}, "1:3: Syntax error: extraneous input 'b' expecting <EOF>"),
    ("TestAllTypes(){}", {}, "1:15: Syntax error: mismatched input '{' expecting <EOF>"),
    ("TestAllTypes{}()", {}, "1:15: Syntax error: mismatched input '(' expecting <EOF>"),
    ("{\"a\": 1}.\"a\"", {}, "1:10: Syntax error: no viable alternative at input '.\"a\"'"),
    ("a.)", {}, "1:3: Syntax error: no viable alternative at input '.)'"),
    ("a.", {}, "1:3: Syntax error: no viable alternative at input '.'"),
    ("self.true == 1", {}, "1:6: Syntax error: mismatched input 'true' expecting IDENTIFIER"),  # cel-go's rewording
    ("--", {}, "1:3: Syntax error: no viable alternative at input '-'"),
    ("-)", {}, "1:2: Syntax error: no viable alternative at input '-)'"),
    ("--!a", {}, "1:3: Syntax error: no viable alternative at input '-!'"),
    ("!)", {}, f"1:2: Syntax error: extraneous input ')' expecting {EXPR_START}"),
    ("?", {}, f"1:1: Syntax error: mismatched input '?' expecting {EXPR_START}"),
    ("a ? b", {}, "1:6: Syntax error: mismatched input '<EOF>' expecting ':'"),
    ("a ? b ? c : d : e", {}, "1:7: Syntax error: mismatched input '?' expecting ':'"),  # no ?: in the middle
    ("{a}", {}, "1:3: Syntax error: mismatched input '}' expecting ':'"),
    ("{a b}", {}, "1:4: Syntax error: missing ':' at 'b'"),
    ("{:a}", {}, "1:2: Syntax error: extraneous input ':' expecting {'[', '{', '}', '(', '.', ',', '-', '!', '?', "
                 "'true', 'false', 'null', NUM_FLOAT, NUM_INT, NUM_UINT, STRING, BYTES, IDENTIFIER}"),
    ("func{{a}}", {}, "1:6: Syntax error: extraneous input '{' expecting {'}', ',', '?', IDENTIFIER, ESC_IDENTIFIER}"),
    ("msg{:a}", {}, "1:5: Syntax error: extraneous input ':' expecting {'}', ',', '?', IDENTIFIER, ESC_IDENTIFIER}"),
    ("x{.", {}, "1:3: Syntax error: mismatched input '.' expecting {'}', ',', '?', IDENTIFIER, ESC_IDENTIFIER}"),
    ("ind[a{b}]", {}, "1:8: Syntax error: mismatched input '}' expecting ':'"),
    ("`b-c`", {}, f"1:1: Syntax error: mismatched input '`b-c`' expecting {EXPR_START}"),
    ("a.`$b`", {}, "1:3: Syntax error: token recognition error at: '`$'"),
    ("a.`b.c`()", {}, "1:8: Syntax error: mismatched input '(' expecting <EOF>"),
    ('"\\xFh"', {}, "1:1: Syntax error: token recognition error at: '\"\\xFh'"),
    ('"abc', {}, "1:1: Syntax error: token recognition error at: '\"abc'"),
    ("'a\nb'", {}, "1:1: Syntax error: token recognition error at: ''a\\n'"),
    (r'"\s"', {}, "1:1: Syntax error: token recognition error at: '\"\\s'"),
    (r'b"\s"', {}, "1:2: Syntax error: token recognition error at: '\"\\s'"),  # 'b' was an identifier
    ("'''abc", {}, "1:3: Syntax error: token recognition error at: ''abc'"),  # '' was an empty string
    ('"a" \u00e0', {}, "1:5: Syntax error: token recognition error at: '\u00e0'"),
    ("a\vb", {}, "1:2: Syntax error: token recognition error at: '\v'"),
    ("      '\U0001f601' in ['\U0001f601']\n\t\t\t&& in.\U0001f601", {},
     f"2:7: Syntax error: extraneous input 'in' expecting {EXPR_START}"),
    # errors cel-go finds while building nodes
    ("0xFFFFFFFFFFFFFFFFF", {}, "1:1: invalid int literal"),
    ("9223372036854775808", {}, "1:1: invalid int literal"),
    ("-(9223372036854775808)", {}, "1:3: invalid int literal"),
    ("0xFFFFFFFFFFFFFFFFFu", {}, "1:1: invalid uint literal"),
    ("1.99e90000009", {}, "1:1: invalid double literal"),
    ("x + -1.8e308", {}, "1:5: invalid double literal"),
    (r"'\udead' == '\ufffd'", {}, "1:1: invalid unicode code point"),
    (r"'\uD83D\uDE03'", {}, "1:1: invalid unicode code point"),
    (r"'\U00110000'", {}, "1:1: invalid unicode code point"),
    (r"b'\u00ff'", {}, "1:1: unable to unescape string"),
    (r"x + b'\U000000ff'", {}, "1:5: unable to unescape string"),
    ("has(m)", {}, "1:5: invalid argument to has() macro"),
    ("m.filter(a.b, false)", {}, "1:11: argument is not an identifier"),
    ("1.all(2, 3)", {}, "1:7: argument must be a simple name"),
    ("m.map(__result__, __result__)", {}, "1:7: iteration variable overwrites accumulator variable"),
    ("[].exists_one(__result__, __result__)", {}, "1:15: iteration variable overwrites accumulator variable"),
    ("[1, 2, 3].map(var, var * var)", {}, "1:15: reserved identifier: var"),
    ("if(x)", {}, "1:1: reserved identifier: if"),
    ("a + .while", {}, "1:5: reserved identifier: while"),
    ("{continue: 1} + $", {}, "1:2: reserved identifier: continue"),  # cel-go sorts its errors by place
    ("{ continue': 1", {}, "1:11: Syntax error: token recognition error at: '': 1'"),  # but skips broken entries
    # options
    ("a.?b && a[?b]", {}, "1:2: unsupported syntax '.?'"),
    ("a[?b]", {}, "1:2: unsupported syntax '[?'"),
    ("[?a, ?b]", {}, "1:2: unsupported syntax '?'"),
    ("Msg{?field: value} && {?'key': value}", {}, "1:5: unsupported syntax '?'"),
    ("{?'key': value}", {}, "1:2: unsupported syntax '?'"),
    ("x{?.", {}, "1:3: unsupported syntax '?'"),
    ("x{?a", {}, "1:5: Syntax error: mismatched input '<EOF>' expecting ':'"),  # an incomplete field: no check
    ("{{1: 2}[?3]}", {}, "1:12: Syntax error: mismatched input '}' expecting ':'"),  # nor an incomplete entry
    ("a.`b-c`", {"ident_escape": False}, "1:3: unsupported syntax: '`'"),
    ("Message{`in`: true}", {"ident_escape": False}, "1:9: unsupported syntax: '`'"),
    ("M{a: 1, `b`: 2}", {"ident_escape": False}, "1:3: unsupported syntax: '`'"),  # at the list's first field
    # limits
    ("foo", {"max_code_points": 2}, "-1:0: expression code point size exceeds limit: size: 3, limit 2"),
]


@pytest.mark.parametrize(("text", "options", "expected"), ERRORS, ids=[case[0][:40] for case in ERRORS])
def test_first_error_is_the_one_cel_go_lists_first(text: str, options: dict[str, object], expected: str) -> None:
    assert _error(text, **options) == expected


RESERVED = "as break const continue else for function if import let loop package namespace return var void while"


@pytest.mark.parametrize("word", RESERVED.split())
def test_reserved_words_are_refused_as_identifiers_but_not_as_fields(word: str) -> None:
    assert _error(word) == f"1:1: reserved identifier: {word}"
    assert _error(f"{word}(1)") == f"1:1: reserved identifier: {word}"
    assert unparse(parse(f"a.{word} + a.{word}() + M{{{word}: 1}}")) == f"((a.{word} + a.{word}()) + M{{{word}: 1}})"


@pytest.mark.parametrize("word", ["true", "false", "null", "in"])
def test_keywords_cannot_be_field_names_unless_backquoted(word: str) -> None:
    assert "Syntax error" in _error(f"a.{word}")
    assert unparse(parse(f"a.`{word}`")) == f"a.`{word}`"


def test_errors_display_as_cel_go_prints_them() -> None:
    with pytest.raises(CelSyntaxError) as caught:
        parse("a.b &&\n\tc ++ d")
    assert caught.value.display("a.b &&\n\tc ++ d") == (
        f"ERROR: <input>:2:5: Syntax error: extraneous input '+' expecting {EXPR_START}\n"
        " |  c ++ d\n"
        " | ....^")
    wide = "'\U0001f601' in ['\U0001f601']\n&& in.\U0001f601"
    assert Source(wide).display("boom", len(wide) - 1).splitlines()[2] == " | ......\uff3e"
    assert Source("x").display("limit", None) == "ERROR: <input>:-1:0: limit"


def _nested_parens(depth: int) -> str:
    return "(" * depth + "a" + ")" * depth


def test_rule_nesting_stops_at_cel_gos_recursion_limit() -> None:
    assert unparse(parse(_nested_parens(MAX_RECURSION_DEPTH - 1))) == "a"  # 250 expr rules open at once
    assert _error(_nested_parens(MAX_RECURSION_DEPTH)) == "-1:0: expression recursion limit exceeded: 250"
    assert _error("[" * 32 + "'not fine'" + "]" * 32, max_recursion_depth=32) == (
        "-1:0: expression recursion limit exceeded: 32")
    parse("[" * 31 + "'fine'" + "]" * 31, max_recursion_depth=32)
    # Each level of 'x + y * (...)' opens three 'calc' rules (the sum, its operand, the product's operand).
    parse("x + y * (" * 83 + "z" + ")" * 83)
    assert _error("x + y * (" * 84 + "z" + ")" * 84) == "-1:0: expression recursion limit exceeded: 250"


def test_tree_depth_stops_at_cel_gos_visitor_limit() -> None:
    assert _error(" + ".join(str(i) for i in range(1, 35)), max_recursion_depth=32) == (
        "-1:0: max recursion depth exceeded")
    for unit in (".f", "[1]", " < 1", ".f()", ".f(1)[?1]"):
        parse("a" + unit * (16 if "?" in unit else 32), max_recursion_depth=32, optional_syntax=True)
        assert _error("a" + unit * 33, max_recursion_depth=32, optional_syntax=True) == (
            "-1:0: max recursion depth exceeded"), unit
    parse("a" + ".f" * 250)
    assert _error("a" + ".f" * 251) == "-1:0: max recursion depth exceeded"
    parse(" + ".join("x" for _ in range(251)))
    assert _error(" + ".join("x" for _ in range(252))) == "-1:0: max recursion depth exceeded"
    # ... which reports before a later syntax error, as cel-go's sorted list does
    assert _error("a" + ".f" * 251 + " +") == "-1:0: max recursion depth exceeded"


def test_long_or_chains_are_balanced_and_fast() -> None:
    # NVSentinel accepts a 1,000-term '||' of 17k characters: it is neither deep nor slow.
    chain = " || ".join(f"e.k{i} == {i}" for i in range(1000))
    assert len(chain) > 16_000
    started = time.perf_counter()
    expr = parse(chain)
    elapsed = time.perf_counter() - started

    def height(node: Expr) -> int:
        return 1 + max((height(arg) for arg in node.args), default=0) if isinstance(node, Call) else 0

    assert height(expr) == 11  # ten levels of '||', then the '=='s
    assert elapsed < 1.0  # a few milliseconds; generous for loaded CI machines


def test_size_limit_counts_code_points() -> None:
    text = "'" + "\U0001f600" * 99_998 + "'"
    assert len(text) == 100_000 and len(text.encode()) > 100_000
    assert _constant(text).value == "\U0001f600" * 99_998
    assert _error(text + " ") == "-1:0: expression code point size exceeds limit: size: 100001, limit 100000"


def test_optional_syntax_builds_cel_gos_calls_and_indices() -> None:
    expr = parse("[?a, b, ?c]", optional_syntax=True)
    assert isinstance(expr, CreateList) and expr.optional_indices == (0, 2)
    entry = parse("M{?f: x}", optional_syntax=True)
    assert isinstance(entry, CreateStruct) and entry.entries[0].optional_entry
    assert unparse(parse("a.?b.c[?0]", optional_syntax=True)) == "a.?b.c[?0]"


def test_default_rule_sets_parse() -> None:
    data = yaml.safe_load((ROOT / "aicr_gen" / "sentinel" / "data" / "sentinel-rulesets.yaml").read_text())
    expressions = _expressions(data)
    assert len(expressions) >= 8
    for text in expressions:
        parse(text)


def _expressions(node: object) -> list[str]:
    if isinstance(node, dict):
        return [value for key, value in node.items() if key == "expression" and isinstance(value, str)] + [
            text for value in node.values() for text in _expressions(value)]
    if isinstance(node, list):
        return [text for value in node for text in _expressions(value)]
    return []
