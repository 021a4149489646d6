"""aicr_gen.cel's runtime where the conformance suite does not reach: limits against hostile expressions, the
Kubernetes library, to_cel, the static facts lints and the rule-test cache read, name resolution options, and
that an evaluation fails only with the package's own errors."""

from __future__ import annotations

import contextlib
import datetime as dt
import enum
import itertools
import time
from typing import Any

import pytest

from aicr_gen import cel
from aicr_gen.cel import Comparison, Operand, Selection
from aicr_gen.cel.values import TRUE_KEY, Duration, Timestamp, Uint

EVENT = cel.Environment(["event"])


def evaluate(text: str, activation: dict[str, Any] | None = None, env: cel.Environment = EVENT) -> Any:
    return env.compile(text).evaluate(activation or {})


# --- limits: a hostile expression is refused quickly, a large honest one is not

_THIRTY = "[" + ",".join("0" for _ in range(30)) + "]"


@pytest.mark.parametrize(("text", "activation", "fragment"), [
    (f"{_THIRTY}.all(a, {_THIRTY}.all(b, {_THIRTY}.all(c, {_THIRTY}.exists(d, event > 1.0))))", {},
     "would take at least"),
    ("event.all(a, event.all(b, event.all(c, event.exists(d, d > 1.0))))", {"event": list(range(300))},
     "more than 500000 steps"),
    ("['x'].map(a, a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a).map(a, a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a)"
     ".map(a, a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a).map(a, a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a)"
     ".map(a, a+a+a+a+a+a+a+a+a+a+a+a+a+a+a+a)", {}, "over the 1000000 limit"),
    ("event.map(x, event.map(y, event))", {"event": list(range(300))}, "steps"),
    ("event.replace('', event).replace('', event.replace('', event))", {"event": "a" * 500}, "would grow to"),
    ("[" + ",".join(["event.replace('', event)"] * 40) + "].join()", {"event": "a" * 500}, "would grow to"),
    ("'%s'.format([[" + ",".join(["event.replace('', event)"] * 40) + "]])", {"event": "a" * 500},
     "would grow to"),
    ("(" * 300 + "1" + ")" * 300, {}, "recursion limit exceeded: 250"),
    ("[" * 260 + "]" * 260, {}, "recursion limit exceeded: 250"),
    ("1 + " * 100_000 + "1", {}, "code point size exceeds limit"),
])
def test_hostile_expressions_stop_within_budget(text: str, activation: dict[str, Any], fragment: str) -> None:
    started = time.monotonic()
    with pytest.raises(cel.CelLimitError, match=fragment):
        EVENT.compile(text).evaluate(activation)
    assert time.monotonic() - started < 2.0


def test_what_cel_go_accepts_is_not_refused() -> None:
    """A chain of 5,000 ``||`` (cel-go balances it), a 90,000 code point expression and nesting just inside
    cel-go's limit of 250 are fine, checked or not."""
    assert evaluate(" || ".join(["event == 1"] * 5000), {"event": 2}) is False
    assert evaluate("'" + "a" * 90_000 + "'.size()") == 90_000
    checked = cel.Environment(["event"], check=True)
    for text in ("string(" * 249 + "1" + ")" * 249, "[" * 200 + "1" + "]" * 200 + "[0]" * 200,
                 "[1].map(a, " * 249 + "a" + ")" * 249, "[1].exists(a, " * 249 + "true" + ")" * 249):
        assert evaluate(text) == evaluate(text, env=checked)


def test_the_deadline_stops_an_evaluation() -> None:
    env = cel.Environment(["event"], limits=cel.Limits(max_seconds=0.05, max_steps=10**9))
    started = time.monotonic()
    with pytest.raises(cel.CelLimitError, match=r"longer than 0\.05 s"):
        env.compile("event.all(a, event.all(b, event.all(c, c >= 0)))").evaluate({"event": list(range(400))})
    assert time.monotonic() - started < 1.0


# --- the Kubernetes library

def test_quantities_and_now_for_lifecycle_criteria() -> None:
    now = dt.datetime(2026, 8, 1, 12, 0, tzinfo=dt.UTC)
    env = cel.Environment(["node"], libraries=("strings", "kubernetes"), now=now)

    def run(text: str) -> Any:
        return env.compile(text).evaluate({"node": {"capacity": "80Gi", "since": "2026-08-01T11:00:00Z"}})

    assert run("quantity(node.capacity) > 80 * 1024 * 1024 * 1024 - 1") is True
    assert run("quantity(node.capacity).isGreaterThan(quantity('79Gi'))") is True
    assert run("quantity('500m').asApproximateFloat()") == 0.5
    assert run("quantity('1.5').isInteger()") is False
    assert run("isQuantity('12 parsecs')") is False
    assert run("quantity('1k').add(24).asInteger()") == 1024
    assert run("now() - timestamp(node.since) == duration('1h')") is True
    assert run("string(now())") == "2026-08-01T12:00:00Z"
    with pytest.raises(cel.CelError, match="quantities must match"):
        run("quantity('12 parsecs')")
    with pytest.raises(cel.CelCompileError, match="undeclared reference to function 'now'"):
        EVENT.compile("now()")


# --- values: to_cel, nanoseconds, ranges, map keys

class _Kind(enum.StrEnum):
    GPU = "GPU"


def test_to_cel_checks_and_converts_data() -> None:
    instant = dt.datetime(2026, 8, 1, 12, 0, 0, 123456, tzinfo=dt.timezone(dt.timedelta(hours=2)))
    converted = cel.to_cel({"a": [1, 2.5, None, True, "x", b"y"], "t": instant, "d": dt.timedelta(seconds=90),
                            "big": 2**64 - 1})
    assert converted["a"] == [1, 2.5, None, True, "x", b"y"]
    assert converted["t"] == Timestamp(1_785_578_400_123_456_000)
    assert converted["d"] == Duration(90 * 10**9)
    assert type(converted["big"]) is Uint
    assert cel.to_cel({"n": 3}, json_numbers=True) == {"n": 3.0}
    assert type(cel.to_cel([_Kind.GPU])[0]) is str  # a str enum member becomes the plain string
    for bad, message in (({1: "x"}, "is not a string"), ({"n": 2**64}, "64-bit range"),
                         (dt.datetime(2026, 1, 1), "without a time zone"), (object(), "no CEL equivalent"),
                         (dt.timedelta(days=300 * 365), "duration out of range")):
        with pytest.raises(ValueError, match=message):
            cel.to_cel(bad)


def test_timestamps_and_durations_keep_nanoseconds_and_cel_go_ranges() -> None:
    assert evaluate("timestamp('2009-02-13T23:31:30.123456789Z')") == Timestamp(1_234_567_890_123_456_789)
    assert evaluate("string(duration('1.000000001s'))") == "1.000000001s"
    assert evaluate("timestamp('2009-02-13T23:31:30.123456789Z').getMilliseconds()") == 123
    for text in ("timestamp('9999-12-31T23:59:59-01:00')", "timestamp('0001-01-01T00:00:00+01:00')",
                 "timestamp('9999-12-31T23:59:59.999999999Z') + duration('1ns')",
                 "duration('2562047h') + duration('1h')", "int(-9223372036854775808.0)", "uint(-1)",
                 "9223372036854775807 + 1", "-9223372036854775808 / -1", "-9223372036854775808 % -1"):
        with pytest.raises(cel.CelError):
            evaluate(text)
    assert evaluate("timestamp('2026-08-01T12:00:00Z').getHours('+05:30')") == 17
    assert evaluate("timestamp('2026-08-01T12:00:00Z').getHours('America/New_York')") == 8


@pytest.mark.parametrize(("text", "value"), [
    ("string(timestamp('2009-02-13T23:31:30.5+01:00'))", "2009-02-13T23:31:30.5+01:00"),  # the offset is kept
    ("timestamp('2009-02-13T23:31:30+01:00').getHours()", 23),
    ("string(timestamp('2009-02-13T23:31:30+01:00') + duration('1h'))", "2009-02-14T00:31:30+01:00"),
    ("'%s'.format([timestamp('2009-02-13T23:31:30+01:00')])", "2009-02-13T22:31:30Z"),  # format writes UTC
    ("string(1e6) + ' ' + string(123456.7) + ' ' + string(1.5e-5) + ' ' + string(-0.0)", "1e+06 123456.7 1.5e-05 -0"),
    ("string(duration('-1.5h')) + ' ' + string(duration('2562047h47m16.854775807s'))", "-5400s 9223372036.854776s"),
    ("duration('1.0000000001s') == duration('1s')", True),  # Go cuts a fraction past nanoseconds
    ("duration('1.5s').getMilliseconds()", 1500),
    ("'%d %s %.2f %e'.format([1.5, 1e21, 2, 3u])", "1.5 1000000000000000000000 2.00 3.000000e+00"),
    ("'tacocat'.indexOf('a', 30) == -1 && 'tacocat'.lastIndexOf('a', 30) == -1", True),
    ("''.indexOf('', 5) == 5 && 'abc'.lastIndexOf('') == 3", True),
    ("timestamp('2009-02-13T23:31:30Z').getHours('-02:30')", 21),
    ("double('0x1p3')", 8.0),
    ("timestamp('2009-02-13T23:31:30.1234567891Z') == timestamp('2009-02-13T23:31:30.123456789Z')", True),
])
def test_values_behave_as_in_cel_go_v0_27(text: str, value: Any) -> None:
    assert evaluate(text) == value


@pytest.mark.parametrize("text", ["duration('2562047h47m16.854775808s')", "duration('1h30')", "uint(-0.5)",
                                  "'tacocat'.indexOf('a', -1)", "'%.1001f'.format([1.0])", "'%'.format([1])",
                                  "'%s %s'.format([1])", "'%g'.format([1.0])", "'tacocat'.substring(4, 3)",
                                  "timestamp('2009-02-13t23:31:30Z')", "timestamp('2009-02-13T23:31:30z')"])
def test_values_cel_go_v0_27_refuses(text: str) -> None:
    with pytest.raises((cel.CelError, cel.CelLimitError)):
        evaluate(text)


def test_numbers_compare_as_cel_go_compares_them() -> None:
    assert evaluate("9223372036854775807 == 9223372036854775808.0") is True  # the int becomes a double
    assert evaluate("1 == 1u && 1u == 1.0 && 1 < 1.5 && 2u > 1.5") is True
    assert evaluate("0.0/0.0 == 0.0/0.0") is False
    assert evaluate("type(1) == int && type(1u) == uint && type(duration('1s')) == google.protobuf.Duration")


def test_map_keys_are_cel_values() -> None:
    assert evaluate("{true: 'bool', 1: 'int'}") == {TRUE_KEY: "bool", 1: "int"}
    assert evaluate("{1: 'a'}[1u] + {1: 'b'}[1.0]") == "ab"
    assert evaluate("{true: 1, 1: 2}.map(k, type(k))") == [cel.CelType("bool"), cel.CelType("int")]
    with pytest.raises(cel.CelError, match="repeated key"):
        evaluate("{1: 'a', 1u: 'b'}")
    with pytest.raises(cel.CelError, match="unsupported key type"):
        evaluate("{1.5: 'a'}")


def test_an_error_in_a_comprehension_is_absorbed_where_cel_go_absorbs_it() -> None:
    assert evaluate("[1, 'a', 0].all(x, x > 0)") is False
    assert evaluate("['a', 1].exists(x, x == 1 && x > 0)") is True
    with pytest.raises(cel.CelError):
        evaluate("[1, 'a'].all(x, x > 0)")
    with pytest.raises(cel.CelError, match=r"exists\(\) needs a list or map, not null_type"):
        evaluate("event.exists(e, e == 1)", {"event": None})


# --- names: dotted variables, containers, a leading dot, unchecked programs, parser options

def test_names_resolve_as_cel_go_resolves_them() -> None:
    env = cel.Environment(["a.b", "a.b.c", "x.y", "y"], container="x")
    values = {"a.b": {"c": "field"}, "a.b.c": "variable", "x.y": "in container", "y": "root"}
    assert env.compile("a.b.c").evaluate(values) == "variable"
    assert env.compile("y").evaluate(values) == "in container"
    assert env.compile(".y").evaluate(values) == "root"
    assert env.compile("['local'].all(y, y == 'local' && .y == 'root')").evaluate(values) is True
    assert cel.Environment(["a.b"]).compile("a.b.c").evaluate(values) == "field"


def test_unchecked_programs_fail_when_evaluated() -> None:
    unchecked = cel.Environment(["event"], references=False)
    assert unchecked.compile("nope || true").evaluate({}) is True
    with pytest.raises(cel.CelError, match="no such attribute: nope"):
        unchecked.compile("nope").evaluate({})
    with pytest.raises(cel.CelError, match="undeclared reference to function 'frob'"):
        unchecked.compile("frob(1)").evaluate({})
    for text, message in (("nope", "undeclared reference to 'nope'"),
                          ("event.frob()", "undeclared reference to function 'frob'"),
                          ("'a'.contains()", r"takes 1 argument\(s\), not 0")):
        with pytest.raises(cel.CelCompileError, match=message):
            EVENT.compile(text)


def test_parser_options() -> None:
    assert evaluate("event.`content-type`", {"event": {"content-type": "json"}}) == "json"
    with pytest.raises(cel.CelCompileError, match="syntax error at line 1"):
        cel.Environment(["event"], ident_escape=False).compile("event.`content-type`")
    with pytest.raises(cel.CelCompileError, match="function 'exists'"):
        cel.Environment(["event"], macros=False).compile("event.exists(e, e)")
    with pytest.raises(cel.CelError, match="no matching overload for 'charAt' applied to \\(int\\)"):
        evaluate("42.charAt(2)")


def test_the_type_checker_runs_when_asked() -> None:
    from aicr_gen.cel.types import BOOL, DOUBLE, INT

    checked = cel.Environment(declarations={"n": INT}, check=True)
    assert checked.compile("n + 1").evaluate({"n": 1}) == 2
    assert checked.compile("n > 1").result_type == BOOL
    with pytest.raises(cel.CelCompileError):
        checked.compile("n + 'a'")
    assert cel.Environment(["n"]).compile("n + 'a'").result_type is None  # unchecked: fails when evaluated
    with pytest.raises(cel.CelCompileError):
        cel.Environment(declarations={"value": DOUBLE}, check=True).compile("value < 1")
    threshold = cel.Environment(declarations={"value": DOUBLE}, check=True, cross_type_numeric_comparisons=True)
    assert threshold.compile("value < 1").evaluate({"value": 0.5}) is True


# --- static facts (lints, the rules-test cache)

def test_static_facts_of_a_rule() -> None:
    program = EVENT.compile("has(event.metadata.node) && event.errorCode.exists(e, e in ['79', '48']) "
                            "&& event['agent'] == 'gpu-health-monitor' && 1u < event.count")
    assert program.selections == (
        Selection("event", ("metadata", "node"), True), Selection("event", ("metadata",), False),
        Selection("event", ("errorCode",), False), Selection("event", ("agent",), False),
        Selection("event", ("count",), False))
    assert program.comparisons == (
        Comparison("in", None, Operand("list", (Operand("literal", "79"), Operand("literal", "48")))),
        Comparison("==", Operand("path", ("event", ("agent",))), Operand("literal", "gpu-health-monitor")),
        Comparison("<", Operand("literal", Uint(1)), Operand("path", ("event", ("count",)))))
    assert program.fields_read == {"event": ("agent", "count", "errorCode", "metadata")}


@pytest.mark.parametrize(("text", "read"), [
    ("event.isFatal", ("isFatal",)),
    ("true", ()),
    ("event", None),
    ("event[event.key] == 1", None),
    ("size(event) > 0", None),
    ("[1].exists(event, event > 0)", None),
    (".event.agent == 'x'", None),
])
def test_fields_read_are_all_a_value_depends_on(text: str, read: tuple[str, ...] | None) -> None:
    assert EVENT.compile(text).fields_read == (None if read is None else {"event": read})


def test_fields_read_are_unknown_when_names_resolve_otherwise() -> None:
    assert cel.Environment(["a.b", "a"]).compile("a.b == 1").fields_read is None
    assert cel.Environment(["a"], container="x").compile("a.b == 1").fields_read is None


# --- errors: evaluation fails with CelError, never with a Python exception

_VALUES = [None, True, 0, -1, 2**63 - 1, -(2**63), Uint(0), Uint(2**64 - 1), 1.5, float("nan"), float("inf"),
           "", "x", "%s%d", b"\xff", [], [1, "a"], {}, {"a": 1}, {TRUE_KEY: 1, 1: 2}, Timestamp(0),
           Duration(-(2**63)), cel.CelType("int"), cel.Quantity("1Ki"), "America/New_York", "+05:30", "(", 2**40]
_EXPRESSIONS = ["x + y", "x - y", "x * y", "x / y", "x % y", "x < y", "x in y", "x[y]", "x.a", "has(x.a)", "-x",
                "!x", "x ? y : x", "x.all(e, e > y)", "x.map(e, e + y)", "{x: y}", "int(x)", "uint(x)",
                "double(x)", "string(x)", "bytes(x)", "bool(x)", "timestamp(x)", "duration(x)", "size(x)",
                "x.matches(y)", "x.getHours(y)", "x.getDayOfWeek()", "x.charAt(y)", "x.indexOf(y)",
                "x.lastIndexOf(y, 1)", "x.replace(y, x)", "x.split(y)", "x.substring(y)", "x.join(y)",
                "x.format([y])", "x.format(y)", "strings.quote(x)", "quantity(x)", "x.add(y)",
                "x.isGreaterThan(y)", "x.sign()", "timestamp(x) - timestamp(y)", "x.exists_one(e, e)"]
_ANY_ENV = cel.Environment(["x", "y"], libraries=("strings", "kubernetes"))


@pytest.mark.parametrize("text", _EXPRESSIONS)
def test_evaluation_errors_are_cel_errors(text: str) -> None:
    program = _ANY_ENV.compile(text)
    for x, y in itertools.product(_VALUES, repeat=2):
        with contextlib.suppress(cel.CelError, cel.CelLimitError):
            program.evaluate({"x": x, "y": y})
