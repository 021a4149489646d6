"""The CEL type checker against cel-go's verdicts: what our consumers' environments accept and refuse (with
cel-go's message and place), the types and references it deduces, every conformance test cel-go checks, and
the deduced types of cel-spec's ``type_deduction`` file."""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from typing import Any

import pytest

from aicr_gen.cel.ast import Call
from aicr_gen.cel.checker import CheckError, Reference, check
from aicr_gen.cel.overloads import Overload, overload
from aicr_gen.cel.syntax import parse
from aicr_gen.cel.types import (
    ANY,
    BOOL,
    DOUBLE,
    DYN,
    INT,
    NULL,
    QUANTITY,
    STRING,
    TIMESTAMP,
    Type,
    format_type,
    list_of,
    map_of,
    nullable,
    optional_of,
    parse_type,
    type_of,
    type_param,
)
from tests.cel.conformance import TESTDATA, load_file, load_suite
from tests.conftest import needs

NVSENTINEL: dict[str, Any] = {"variables": {"event": ANY, "node": ANY}, "libraries": ("strings",)}
"""NVSentinel's fault-quarantine rules: cel-go v0.27.0, ``event`` and ``node`` as ``cel.AnyType``, ext.Strings."""
NVCRE: dict[str, Any] = {"variables": {"value": DOUBLE}, "cross_type_numeric_comparisons": True}
"""NVCRE thresholds: ``value`` a double, ``cel.CrossTypeNumericComparisons(true)``; the result must be bool."""
POLICY: dict[str, Any] = {"variables": {"component": DYN, "recipe": DYN, "spec": DYN}, "libraries": ("strings",)}
KUBERNETES: dict[str, Any] = {"variables": {"node": DYN}, "libraries": ("strings", "kubernetes")}


def _verdict(text: str, env: Mapping[str, Any]) -> str:
    """``ok TYPE`` or ``OFFSET: message`` (the error cel-go lists first)."""
    try:
        return "ok " + format_type(check(parse(text), **env).result_type)
    except CheckError as error:
        return f"{error.offset}: {error.message}"


NVSENTINEL_VERDICTS = [
    # literal mixes: cel-go has no heterogeneous overloads for them, so the rule set is refused at start-up
    ("15.0 == 15", "5: found no matching overload for '_==_' applied to '(double, int)'"),
    ("1 < 1.5", "2: found no matching overload for '_<_' applied to '(int, double)'"),
    ("1u == 1", "3: found no matching overload for '_==_' applied to '(uint, int)'"),
    ("[1] == [1.0]", "4: found no matching overload for '_==_' applied to '(list(int), list(double))'"),
    ("'a' + 1", "4: found no matching overload for '_+_' applied to '(string, int)'"),
    ("true ? 'cows' : 17", "5: found no matching overload for '_?_:_' applied to '(bool, string, int)'"),
    ("false && 32", "9: expected type 'bool' but found 'int'"),
    ("!0", "0: found no matching overload for '!_' applied to '(int)'"),
    ("-(42u)", "0: found no matching overload for '-_' applied to '(uint)'"),
    ("47.5 % 5.5", "5: found no matching overload for '_%_' applied to '(double, double)'"),
    ("'42'.indexOf(4, 0) == 0", "12: found no matching overload for 'indexOf' applied to 'string.(int, int)'"),
    ("42.charAt(2) == ''", "9: found no matching overload for 'charAt' applied to 'int.(int)'"),
    ("x", "0: undeclared reference to 'x' (in container '')"),
    ("event.x == y", "11: undeclared reference to 'y' (in container '')"),
    ("f_unknown(17)", "9: undeclared reference to 'f_unknown' (in container '')"),
    ("event.f_unknown()", "15: undeclared reference to 'f_unknown' (in container '')"),
    ("dyn", "0: undeclared reference to 'dyn' (in container '')"),
    ("[1].a", "3: type 'list(int)' does not support field selection"),
    ("has(1.a)", "3: type 'int' does not support field selection"),
    ("1.exists(x, x)", "0: expression of type 'int' cannot be range of a comprehension (must be list, map, or "
                       "dynamic)"),
    ("[1].all(x, x)", "11: expected type 'bool' but found 'int'"),
    ("a + b", "0: undeclared reference to 'a' (in container '')"),  # the first of two, by place
    ("TestAllTypes{}", "12: undeclared reference to 'TestAllTypes' (in container '')"),
    ("int{}", "3: 'int' is not a message type"),
    ("'a' == null", "4: found no matching overload for '_==_' applied to '(string, null)'"),
    # ext.Strings validates a literal format string against the types of a literal argument list
    ("'%d'.format(['a'])", "13: error during formatting: decimal clause can only be used on ints, uints, and "
                           "doubles, was given string"),
    ("'%s'.format([event])", "13: error during formatting: string clause can only be used on strings, bools, "
                             "bytes, ints, doubles, maps, lists, types, durations, and timestamps, was given "
                             "google.protobuf.Any"),  # Any is not dyn there
    ("'%s %s'.format([1])", "14: index 1 out of range"),
    ("'%s'.format([1, 2])", "11: too many arguments supplied to string.format (expected 1, got 2)"),
    ("'%a'.format([1])", '11: could not parse formatting clause: unrecognized formatting clause "a"'),
    # a dyn (or Any) operand matches any overload
    ("event.x == 15", "ok bool"),
    ("event.x == 15.0 && event.y < 1 && event.z == 1u", "ok bool"),
    ("event.errorCode == null || !event.errorCode.exists(c, c == 'x')", "ok bool"),
    ("event.agent == 'syslog' && event.componentClass.lowerAscii() in ['gpu', 'nvswitch']", "ok bool"),
    ("node.metadata.labels['nvidia.com/gpu.present'] == 'true'", "ok bool"),
    ("has(node.metadata.labels) && size(node.metadata.labels) > 0", "ok bool"),
    ("event.message.split(' ').size() > 2", "ok bool"),
    ("event.x + 1", "ok int"),
    ("event.x", "ok dyn"),
    ("dyn(1) == 1.0", "ok bool"),
    ("1 == 1 && 'a' < 'b' && b'a' + b'b' == b'ab'", "ok bool"),
    ("[1, 'a']", "ok list(dyn)"),
    ("[1, dyn('a')]", "ok list(dyn)"),
    ("{'a': 1, 'b': 'c'}", "ok map(string, dyn)"),
    ("[]", "ok list(dyn)"),
    ("{}", "ok map(dyn, dyn)"),
    ("[[], [1]]", "ok list(list(int))"),
    ("[1, 2].map(x, x * 2)", "ok list(int)"),
    ("[1, 2].map(x, x > 1, string(x))", "ok list(string)"),
    ("{'a': 1}.filter(k, k != 'b')", "ok list(string)"),
    ("[1, 2].exists_one(x, x == 2)", "ok bool"),
    ("{'a': [1]}['a'][0]", "ok int"),
    ("2 in [1, 2] && 'k' in {'k': 1}", "ok bool"),
    ("type(1) == int && type(int) == type && type(type) == type", "ok bool"),
    ("int", "ok type(int)"),
    ("list", "ok type(list(dyn))"),
    ("google.protobuf.Timestamp", "ok type(timestamp)"),
    ("google.protobuf.Struct", "ok type(map(string, dyn))"),
    ("null", "ok null"),
    ("null < null", "ok bool"),  # null is assignable to timestamp and duration, cel-go's legacy nullness
    ("timestamp('2024-01-01T00:00:00Z') + duration('1h')", "ok timestamp"),
    ("timestamp('2024-01-01T00:00:00Z') - timestamp('2023-01-01T00:00:00Z')", "ok duration"),
    ("timestamp(1).getFullYear('Europe/Paris') + timestamp(1).getHours()", "ok int"),
    ("duration('1h').getMinutes()", "ok int"),
    ("int('1') + int(1.5) + int(1u) + int(timestamp(1)) + int(duration('1s'))", "ok int"),
    ("uint(1) + uint('1') + uint(1.0)", "ok uint"),
    ("double(1) + double('1') + double(1u)", "ok double"),
    ("string(1) + string(b'a') + string(true) + string(1.0)", "ok string"),
    ("bool('true') && bool(true)", "ok bool"),
    ("bytes('a') + bytes(b'a')", "ok bytes"),
    ("'abc'.matches('a.c') && matches('abc', 'b') && 'a'.contains('a') && 'a'.startsWith('a')", "ok bool"),
    ("'%s and %d'.format(['a', 1])", "ok string"),
    ("'%.2f and %s'.format([event.x, dyn(event)])", "ok string"),
    ("strings.quote('a') + 'a'.reverse() + ['a'].join(',') + 'a'.replace('a', 'b', 1)", "ok string"),
    ("'a'.substring(1, 2).trim().upperAscii().charAt(0)", "ok string"),
    ("'abc'.lastIndexOf('b', 2) + 'abc'.indexOf('c')", "ok int"),
]


@pytest.mark.parametrize(("text", "verdict"), NVSENTINEL_VERDICTS)
def test_nvsentinel_rule_gets_cel_gos_verdict(text: str, verdict: str) -> None:
    assert _verdict(text, NVSENTINEL) == verdict


NVCRE_VERDICTS = [
    ("value >= 300", "ok bool"),
    ("value >= 300.5", "ok bool"),
    ("value > 1u && 1 < value && 2u <= 1", "ok bool"),  # the cross-type ordering overloads are declared
    ("value + 1", "6: found no matching overload for '_+_' applied to '(double, int)'"),  # arithmetic is not
    ("value == 1", "6: found no matching overload for '_==_' applied to '(double, int)'"),  # nor equality
    ("value + 1.0", "ok double"),  # checks, but is no threshold: the consumer wants bool
    ("size(value)", "4: found no matching overload for 'size' applied to '(double)'"),
    ("value.x", "5: type 'double' does not support field selection"),
]


@pytest.mark.parametrize(("text", "verdict"), NVCRE_VERDICTS)
def test_nvcre_threshold_gets_cel_gos_verdict(text: str, verdict: str) -> None:
    assert _verdict(text, NVCRE) == verdict


def test_cross_type_ordering_needs_the_option() -> None:
    assert _verdict("value >= 300", {"variables": {"value": DOUBLE}}) == (
        "6: found no matching overload for '_>=_' applied to '(double, int)'")


@pytest.mark.parametrize(("text", "verdict"), [
    ("component.type == 'Helm' && has(component.version)", "ok bool"),
    ("recipe.componentRefs.all(c, c.name != '' && c.version.startsWith('v'))", "ok bool"),
    ("spec.metadata.name.size() <= 63", "ok bool"),
    ("recipe.componentRefs.filter(c, c.type == 'Helm').map(c, c.name)", "ok list(dyn)"),
    ("cluster.name == 'x'", "0: undeclared reference to 'cluster' (in container '')"),
])
def test_policy_rule_gets_cel_gos_verdict(text: str, verdict: str) -> None:
    assert _verdict(text, POLICY) == verdict


@pytest.mark.parametrize(("text", "verdict"), [
    ("quantity('1Gi').isGreaterThan(quantity('512Mi'))", "ok bool"),
    ("quantity('1Gi').add(1).sub(quantity('1')).compareTo(quantity('2'))", "ok int"),
    ("quantity('1.5').asApproximateFloat() > 1.0 && quantity('1').isInteger()", "ok bool"),
    ("quantity('1').asInteger() + quantity('1').sign()", "ok int"),
    ("isQuantity(node.capacity) && quantity(node.capacity).isLessThan(quantity('1'))", "ok bool"),
    ("quantity('1')", "ok kubernetes.Quantity"),
    ("now() - timestamp('2024-01-01T00:00:00Z') > duration('24h')", "ok bool"),
    ("quantity(1)", "8: found no matching overload for 'quantity' applied to '(int)'"),
    ("quantity('1').add(1.0)", "17: found no matching overload for 'add' applied to 'kubernetes.Quantity.(double)'"),
    ("quantity('1') == quantity('1')", "ok bool"),
    ("quantity('1') < quantity('2')", "14: found no matching overload for '_<_' applied to "
                                      "'(kubernetes.Quantity, kubernetes.Quantity)'"),
])
def test_kubernetes_library_declares_quantities_and_now(text: str, verdict: str) -> None:
    assert _verdict(text, KUBERNETES) == verdict


def test_kubernetes_functions_need_the_library() -> None:
    assert _verdict("now()", NVSENTINEL) == "3: undeclared reference to 'now' (in container '')"


def test_every_node_gets_a_type_and_every_name_a_reference() -> None:
    tree = parse("[1, 2].exists(x, x == event.n)")
    checked = check(tree, **NVSENTINEL)
    assert checked.result_type == BOOL
    # the comprehension variable, the range, the declared variable, the accumulator and the calls
    by_text = {_text(node): (checked.types.get(node.id), checked.references.get(node.id)) for node in _walk(tree)}
    assert by_text["x"] == (INT, Reference("x"))
    assert by_text["[1, 2]"] == (list_of(INT), None)
    assert by_text["event"] == (ANY, Reference("event"))
    assert by_text["event.n"] == (DYN, None)
    assert by_text["@result"] == (BOOL, Reference("@result"))
    assert by_text["(x == event.n)"] == (BOOL, Reference("_==_", ("equals",)))


def _root(text: str, **env: Any) -> tuple[Type, Reference]:
    tree = parse(text)
    checked = check(tree, variables={}, **env)
    return checked.result_type, checked.references[tree.id]


def test_a_call_records_every_matching_overload() -> None:
    # the matching overloads disagree on the result, so the call is dyn
    assert _root("dyn(1) + dyn(2)") == (DYN, Reference("_+_", (
        "add_bytes", "add_double", "add_duration_duration", "add_duration_timestamp", "add_timestamp_duration",
        "add_int64", "add_list", "add_string", "add_uint64")))
    assert _root("dyn(1) + 2") == (INT, Reference("_+_", ("add_int64",)))
    assert _root("dyn(1) < 2") == (BOOL, Reference("_<_", ("less_int64",)))
    assert _root("dyn(1) < 2", cross_type_numeric_comparisons=True) == (BOOL, Reference("_<_", (
        "less_int64", "less_uint64_int64", "less_double_int64")))


@pytest.mark.parametrize(("text", "container", "variables", "name"), [
    ("c", "a.b", {"a.b.c": INT}, "a.b.c"),  # the container's candidates, longest first
    ("c", "a.b", {"a.c": INT, "c": STRING}, "a.c"),
    ("c", "a.b", {"c": STRING}, "c"),
    (".c", "a.b", {"a.b.c": INT, "c": STRING}, "c"),  # a leading dot skips the container
    ("a.b.c", "", {"a.b": map_of(STRING, INT)}, "a.b"),  # a dotted name resolves to its longest declared prefix
    ("a.b.c", "", {"a.b.c": INT, "a.b": map_of(STRING, INT)}, "a.b.c"),
    ("b.c", "a", {"a.b": map_of(STRING, INT)}, "a.b"),
])
def test_names_resolve_as_in_cel_go(text: str, container: str, variables: dict[str, Type], name: str) -> None:
    checked = check(parse(text), variables=variables, container=container)
    assert name in [ref.name for ref in checked.references.values()]


def test_a_comprehension_variable_shadows_a_declaration_and_a_dot_reaches_it() -> None:
    checked = check(parse("[1].exists(x, x == 1 && .x == 'a')"), variables={"x": STRING})
    assert {ref.name for ref in checked.references.values()} >= {"x", ".x"}
    assert "x.y" not in {ref.name for ref in check(parse("[{'y': 1}].exists(x, x.y == 1)"),
                                                    variables={"x.y": STRING}).references.values()}


def test_a_namespaced_function_is_resolved_whole() -> None:
    tree = parse("strings.quote('a')")
    checked = check(tree, **NVSENTINEL)
    assert checked.references[tree.id] == Reference("strings.quote", ("strings_quote",))
    assert isinstance(tree, Call) and tree.target is not None
    assert tree.target.id not in checked.types  # the target is part of the name, not an operand


def test_errors_come_in_cel_gos_order() -> None:
    """By place; an undeclared name is an error type, which matches any overload, so the sums still get the
    types of the first overloads they match and the comparison fails too."""
    with pytest.raises(CheckError) as caught:
        check(parse("y + 'a' == 1 + x"), variables={})
    assert caught.value.errors == (("undeclared reference to 'y' (in container '')", 0),
                                   ("found no matching overload for '_==_' applied to '(string, int)'", 8),
                                   ("undeclared reference to 'x' (in container '')", 15))


@pytest.mark.parametrize(("spelled", "t"), [
    ("list(int)", list_of(INT)), ("map(string, dyn)", map_of(STRING, DYN)), ("type(int)", type_of(INT)),
    ("timestamp", TIMESTAMP), ("null", NULL), ("any", ANY), ("wrapper(int)", nullable(INT)),
    ("optional_type(list(A))", optional_of(list_of(type_param("A")))), ("kubernetes.Quantity", QUANTITY),
])
def test_types_are_spelled_as_in_cel_go_messages(spelled: str, t: Type) -> None:
    assert format_type(t) == spelled
    assert parse_type(spelled, frozenset({"A"})) == t


def test_checking_a_typical_rule_takes_well_under_a_millisecond() -> None:
    rule = ("event.agent == 'syslog-health-monitor' && event.componentClass == 'GPU' && event.isFatal == true "
            "&& !(event.errorCode.exists(c, c in ['79', '48', '95'])) "
            "&& node.metadata.labels['nvidia.com/gpu.present'] == 'true'")
    tree = parse(rule)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(20):
            check(tree, **NVSENTINEL)
        best = min(best, (time.perf_counter() - start) / 20)
    assert best < 0.001, f"{best * 1e6:.0f} µs"


# --- the conformance suite


def _walk(node: Any) -> list[Any]:
    from aicr_gen.cel import ast

    found = [node]
    for name in getattr(node, "__slots__", ()):
        value = getattr(node, name)
        values = value if isinstance(value, tuple) else (value,)
        for child in values:
            if isinstance(child, ast.Entry):
                found.extend(_walk(child.value))
                if not isinstance(child.key, str):
                    found.extend(_walk(child.key))
            elif isinstance(child, (ast.Constant, ast.Ident, ast.Select, ast.Call, ast.CreateList,
                                    ast.CreateStruct, ast.Comprehension)):
                found.extend(_walk(child))
    return found


def _text(node: Any) -> str:
    from aicr_gen.cel.ast import unparse

    return unparse(node)


_TYPE_PARAM = re.compile(r"\b[A-Z]\b")
_OPTIONAL = {  # cel-go's OptionalTypes library, which some type_deduction tests call
    "optional.of": (overload("optional_of", optional_of(type_param("V")), type_param("V")),),
    "optional.none": (overload("optional_none", optional_of(type_param("V"))),),
}


def _environment(case: Any) -> dict[str, Any]:
    """The declarations of a conformance test, in the environment cel-go's runner gives it."""
    variables: dict[str, Type] = {}
    functions: dict[str, tuple[Overload, ...]] = dict(_OPTIONAL)
    for decl in case.declarations:
        if decl.kind == "variable":
            variables[decl.name] = parse_type(decl.type)
            continue
        overloads = []
        for sig in decl.overloads:
            params = frozenset(name for t in (*sig.args, sig.result) for name in _TYPE_PARAM.findall(t))
            overloads.append(overload(sig.id, parse_type(sig.result, params),
                                      *(parse_type(arg, params) for arg in sig.args), member=sig.member))
        functions[decl.name] = tuple(overloads)
    return {"variables": variables, "functions": functions, "container": case.container,
            "libraries": ("strings",)}


def _conformance() -> tuple[dict[str, list[Any]], list[Any]]:
    if not TESTDATA.is_dir():
        return {}, []
    pytest.importorskip("google.protobuf", reason="reading cel-spec's textprotos needs protobuf")
    pytest.importorskip("grpc_tools.protoc", reason="compiling cel-spec's protos needs grpcio-tools")
    by_file: dict[str, list[Any]] = {}
    for case in load_suite()[0]:
        if not case.unsupported and not case.disable_check:
            by_file.setdefault(case.file, []).append(case)
    return by_file, load_file("type_deduction")


_BY_FILE, _DEDUCTIONS = _conformance()
_SUITE = pytest.param("cel-spec", marks=needs(TESTDATA))


@pytest.mark.parametrize("file", sorted(_BY_FILE) or [_SUITE])
def test_every_conformance_test_cel_go_checks_is_accepted(file: str) -> None:
    """Every test in scope that cel-go's runner type-checks (``disable_check`` false) checks here too."""
    refused = []
    for case in _BY_FILE[file]:
        try:
            check(parse(case.expr, macros=not case.disable_macros), **_environment(case))
        except CheckError as error:
            refused.append(f"{case.id}: {case.expr!r}: {error.message}")
    assert not refused, "\n".join(refused)


def test_format_errors_the_suite_runs_unchecked_are_refused() -> None:
    """string_ext's format_errors tests disable the check because cel-go's validator of format calls refuses
    them at compile time; their expected messages are older wording of the same errors."""
    cases = [case for cases in _BY_FILE.values() for case in cases]
    if not cases:
        pytest.skip(f"no cel-spec tests under {TESTDATA}")
    unchecked = [case for case in load_suite()[0] if case.id.startswith("string_ext/format_errors/")
                 and case.disable_check and not case.unsupported]
    assert len(unchecked) == 14
    accepted = []
    for case in unchecked:
        try:
            check(parse(case.expr), **_environment(case))
            accepted.append(case.id)
        except CheckError:
            pass
    assert not accepted


CEL_GO_SKIPS = {"null_assignable_to_abstract_parameter_candidate"}
"""type_deduction tests cel-go's own conformance run skips, as its checker deduces another type (null here)."""


@pytest.mark.parametrize("case", [c for c in _DEDUCTIONS if c.deduced_type and c.name not in CEL_GO_SKIPS]
                         or [_SUITE], ids=lambda c: getattr(c, "name", str(c)))
def test_deduced_type_is_cel_specs(case: Any) -> None:
    """The ``type_deduction`` tests that need no protobuf messages: 25 of its 47 (the rest declare or build
    TestAllTypes messages, or are skipped by cel-go itself)."""
    checked = check(parse(case.expr), **_environment(case))
    assert checked.result_type == parse_type(case.deduced_type), format_type(checked.result_type)
