"""The inputs the oracle tests compare the two evaluators on: a :class:`Case` is one expression, the variables it
declares and the bindings it is evaluated over. Every corpus is built deterministically, so the expressions of
tests/cel/oracle_differences.txt name the same cases on every run."""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

import yaml

from tests.cel.oracle import DYN


class Case(NamedTuple):
    expression: str
    variables: Mapping[str, str]
    bindings: tuple[Mapping[str, Any], ...]


# ------------------------------------------------------------------------------------ generated expressions

GENERATED_SEED = 20260813
GENERATED_COUNT = 3000

_BINDINGS: dict[str, Any] = {"i": 7, "d": 2.5, "s": "abc", "by": b"xyz", "t": True, "n": None, "l": [1, 2, 3],
                             "ls": ["a", "b", "c"], "m": {"a": 1, "b": 2}}
_KINDS = ("int", "uint", "double", "string", "bytes", "bool", "null", "list", "map")
_LEAVES: dict[str, tuple[str, ...]] = {
    "int": ("0", "1", "-1", "2", "3", "7", "42", "-7", "100", "9223372036854775807", "-9223372036854775808",
            "0x1F", "i"),
    "uint": ("0u", "1u", "2u", "7u", "42u", "18446744073709551615u", "0xFFu"),
    "double": ("0.0", "1.0", "-1.5", "2.5", "0.1", "1e10", "1e300", "-0.0", "3.14", "1e-5", "123456789.0", "d"),
    "string": ("''", "'a'", "'abc'", "'Hello, World'", "'héllo'", "'  padded '", "'a,b,,c'", "'%d items'",
               "'ABC'", '"it\'s"', "'\\t\\n'", "r'\\d+'", "'123'", "'-7'", "'1.5'", "'true'", "'😀x'", "'0x1F'",
               "'1e3'", "'inf'", "'NaN'", "'1_000'", "'+1'", "s"),
    "bytes": ("b''", "b'abc'", "b'\\xff\\x00'", "b'h\\303\\251llo'", "by"),
    "bool": ("true", "false", "t"),
    "null": ("null", "n"),
}
_REGEXES = ("'^a'", "'b+'", "'[0-9]+'", "'^$'", "'(?i)ABC'", "'.*'", "'a|b'", "'\\\\d'", "'('")
_FORMATS = ("'%s'", "'%d'", "'%f'", "'%.2f'", "'%e'", "'%x'", "'%X'", "'%o'", "'%b'", "'%s and %s'", "'%%'",
            "'%.3e'", "'%d%%'", "'%s-%d'", "'%q'")


class _Generator:
    """Expressions of a chosen CEL type, built from literals, the variables of ``_BINDINGS``, operators,
    standard and ext.Strings functions, conversions and macros; now and then an operand of another type, so
    about a third of them are ill-typed somewhere."""

    def __init__(self, seed: int) -> None:
        self.random = random.Random(seed)
        self.scope: dict[str, list[str]] = {}

    def pick(self, options: tuple[str, ...] | list[str]) -> str:
        return options[self.random.randrange(len(options))]

    def any_kind(self) -> str:
        return self.pick(_KINDS)

    def of(self, kind: str, depth: int) -> str:
        if self.random.random() < 0.04:
            kind = self.any_kind()
        if depth <= 0 or self.random.random() < 0.25:
            return self.leaf(kind)
        builders = _BUILDERS[kind]
        return builders[self.random.randrange(len(builders))](self, depth - 1)

    def leaf(self, kind: str) -> str:
        if kind == "list":
            return self.pick(("[]", "l", "ls", "[1, 2, 3]", "['a', 'b']", "[1, 'a', null]", "[1u, 2.0]"))
        if kind == "map":
            return self.pick(("{}", "m", "{'a': 1}", "{1: 'one', 2: 'two'}", "{'k': [1, 2]}", "{true: 'yes'}"))
        return self.pick(self.scope.get(kind, []) + list(_LEAVES[kind]))

    def binary(self, kinds: tuple[str, str], ops: tuple[str, ...], depth: int) -> str:
        return f"({self.of(kinds[0], depth)} {self.pick(ops)} {self.of(kinds[1], depth)})"

    def ternary(self, kind: str, depth: int) -> str:
        return f"({self.of('bool', depth)} ? {self.of(kind, depth)} : {self.of(kind, depth)})"

    def list_of(self, depth: int) -> tuple[str, str]:
        """A list expression and the kind of its elements."""
        kind = self.pick(("int", "string", "double", "bool", "uint"))
        choice = self.random.randrange(5)
        if choice == 0 and kind in ("int", "string"):
            return ("l" if kind == "int" else "ls"), kind
        if choice == 1 and kind == "string":
            return f"{self.of('string', depth)}.split({self.of('string', depth)})", kind
        items = ", ".join(self.of(kind, depth - 1) for _ in range(self.random.randrange(4)))
        return f"[{items}]", kind

    def macro(self, depth: int, result: str) -> str:
        """A macro over a list whose body sees the element as ``x`` (of the list's kind)."""
        target, element = self.list_of(depth)
        self.scope.setdefault(element, []).extend(["x"] * 4)
        try:
            if result == "bool":
                name = self.pick(("all", "exists", "exists_one"))
                return f"{target}.{name}(x, {self.of('bool', depth)})"
            if result == "filter":
                return f"{target}.filter(x, {self.of('bool', depth)})"
            return f"{target}.map(x, {self.of(self.pick(('int', 'string', 'double', 'bool')), depth)})"
        finally:
            del self.scope[element][-4:]

    def string_call(self, depth: int) -> str:
        s = self.of("string", depth)
        name = self.pick(("substring1", "substring2", "lowerAscii", "upperAscii", "trim", "replace2",
                          "replace3", "charAt", "reverse", "format", "join", "join1", "concat"))
        if name == "substring1":
            return f"{s}.substring({self.of('int', depth)})"
        if name == "substring2":
            return f"{s}.substring({self.of('int', depth)}, {self.of('int', depth)})"
        if name in ("replace2", "replace3"):
            extra = f", {self.of('int', depth)}" if name == "replace3" else ""
            return f"{s}.replace({self.of('string', depth)}, {self.of('string', depth)}{extra})"
        if name == "charAt":
            return f"{s}.charAt({self.of('int', depth)})"
        if name == "format":
            args = ", ".join(self.of(self.any_kind(), depth) for _ in range(self.random.randrange(3)))
            return f"{self.pick(_FORMATS)}.format([{args}])"
        if name in ("join", "join1"):
            target, _ = self.list_of(depth)
            return f"{target}.join({s})" if name == "join1" else f"{target}.join()"
        if name == "concat":
            return self.binary(("string", "string"), ("+",), depth)
        return f"{s}.{name}()"


def _int(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(12)
    if choice < 4:
        return g.binary(("int", "int"), ("+", "-", "*", "/", "%"), depth)
    if choice == 4:
        return f"-({g.of('int', depth)})"
    if choice == 5:
        return f"size({g.of(g.pick(('string', 'bytes', 'list', 'map')), depth)})"
    if choice == 6:
        return f"int({g.of(g.pick(('uint', 'double', 'string', 'int')), depth)})"
    if choice == 7:
        return f"{g.of('string', depth)}.{g.pick(('indexOf', 'lastIndexOf'))}({g.of('string', depth)})"
    if choice == 8:
        target, kind = g.list_of(depth)
        return f"{target}[{g.of('int', depth)}]" if kind == "int" else f"size({target})"
    if choice == 9:
        return f"{g.pick(_STRING_MAPS)}[{g.of('string', depth)}]"
    if choice == 10:
        return f"{g.of('string', depth)}.size()"
    return g.ternary("int", depth)


def _uint(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(5)
    if choice < 3:
        return g.binary(("uint", "uint"), ("+", "-", "*", "/", "%"), depth)
    if choice == 3:
        return f"uint({g.of(g.pick(('int', 'double', 'string')), depth)})"
    return g.ternary("uint", depth)


def _double(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(6)
    if choice < 3:
        return g.binary(("double", "double"), ("+", "-", "*", "/"), depth)
    if choice == 3:
        return f"double({g.of(g.pick(('int', 'uint', 'string')), depth)})"
    if choice == 4:
        return f"-({g.of('double', depth)})"
    return g.ternary("double", depth)


def _string(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(5)
    if choice < 3:
        return g.string_call(depth)
    if choice == 3:
        return f"string({g.of(g.pick(('int', 'uint', 'double', 'bool', 'bytes', 'string')), depth)})"
    return g.ternary("string", depth)


def _bytes(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(3)
    if choice == 0:
        return g.binary(("bytes", "bytes"), ("+",), depth)
    if choice == 1:
        return f"bytes({g.of('string', depth)})"
    return g.ternary("bytes", depth)


_NUMERIC = ("int", "uint", "double")
_STRING_MAPS = ("m", "{'a': 1, 'b': 2}", "{}")
_SELECTABLE = (*_STRING_MAPS, "{'b': {'a': 2}}.b", "l", "s")
_TYPE_NAMES = ("int", "uint", "double", "string", "list", "map", "bool", "null_type", "bytes")


def _bool(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(14)
    if choice < 2:
        kind = g.any_kind()
        return g.binary((kind, kind), ("==", "!="), depth)
    if choice == 2:
        return g.binary((g.pick(_NUMERIC), g.pick(_NUMERIC)), ("==", "!=", "<", "<=", ">", ">="), depth)
    if choice == 3:
        kind = g.pick(("int", "uint", "double", "string", "bytes", "bool"))
        return g.binary((kind, kind), ("<", "<=", ">", ">="), depth)
    if choice == 4:
        return g.binary(("bool", "bool"), ("&&", "||"), depth)
    if choice == 5:
        return f"!({g.of('bool', depth)})"
    if choice == 6:
        target, kind = g.list_of(depth)
        return f"({g.of(kind, depth)} in {target})"
    if choice == 7:
        return f"({g.of('string', depth)} in {g.pick(_STRING_MAPS)})"
    if choice == 8:
        return f"has({g.pick(_SELECTABLE)}.{g.pick(('a', 'b', 'c'))})"
    if choice == 9:
        call = g.pick(("startsWith", "endsWith", "contains"))
        return f"{g.of('string', depth)}.{call}({g.of('string', depth)})"
    if choice == 10:
        return f"{g.of('string', depth)}.matches({g.pick(_REGEXES)})"
    if choice == 11:
        return g.macro(depth, "bool")
    if choice == 12:
        return f"(type({g.of(g.any_kind(), depth)}) == {g.pick(_TYPE_NAMES)})"
    return g.ternary("bool", depth)


def _null(g: _Generator, depth: int) -> str:
    return g.ternary("null", depth)


def _list(g: _Generator, depth: int) -> str:
    choice = g.random.randrange(5)
    if choice == 0:
        return g.list_of(depth)[0]
    if choice == 1:
        return f"({g.list_of(depth)[0]} + {g.list_of(depth)[0]})"
    if choice == 2:
        return g.macro(depth, "map")
    if choice == 3:
        return g.macro(depth, "filter")
    return f"{g.of('string', depth)}.split({g.of('string', depth)}, {g.of('int', depth)})"


def _map(g: _Generator, depth: int) -> str:
    key = g.pick(("string", "int", "bool"))
    count = g.random.randrange(4)
    keys = {g.leaf(key) for _ in range(count)}
    entries = ", ".join(f"{k}: {g.of(g.any_kind(), depth)}" for k in sorted(keys))
    return f"{{{entries}}}" if g.random.random() < 0.8 else g.ternary("map", depth)


_BUILDERS: dict[str, tuple[Callable[[_Generator, int], str], ...]] = {
    "int": (_int,), "uint": (_uint,), "double": (_double,), "string": (_string,), "bytes": (_bytes,),
    "bool": (_bool, _bool), "null": (_null,), "list": (_list,), "map": (_map,)}


def generated_cases(seed: int = GENERATED_SEED, count: int = GENERATED_COUNT) -> list[Case]:
    """``count`` distinct expressions of every kind (bool the most, as rules and policies are), over the
    variables of ``_BINDINGS`` declared dyn."""
    generator = _Generator(seed)
    variables = dict.fromkeys(_BINDINGS, DYN)
    seen: dict[str, None] = {}
    kinds = (*_KINDS, "bool", "bool", "bool")
    while len(seen) < count:
        seen.setdefault(generator.of(generator.pick(kinds), generator.random.randrange(1, 4)))
    return [Case(text, variables, (_BINDINGS,)) for text in seen]


# ------------------------------------------------------------------------------------------- targeted probes

PROBES = (
    # ext.Strings v1: strings.quote; v4 (cel-spec) formatting of every kind
    "strings.quote('a\"b')", "strings.quote('tab\\there')",
    "'%s'.format([{'a': 1}])", "'%s'.format([null])", "'%s'.format([[null, 1u]])", "'%s'.format([type(1)])",
    "'%s'.format([1e20])", "'%s'.format([0.00001])", "'%s'.format([-0.0])", "'%s'.format([1.0 / 0.0])",
    "'%d'.format([1.5])", "'%x'.format(['ab'])", "'%X'.format([b'ab'])", "'%b'.format([true])", "'%q'.format([1])",
    "'%f'.format([0.0 / 0.0])", "'%e'.format([-1.0 / 0.0])", "'%.1f'.format([0.25])", "'%.0e'.format([15.0])",
    # string(double) is Go's %g
    "string(1e6)", "string(1234567.0)", "string(1e20)", "string(-0.0)", "string(0.0 / 0.0)", "string(1e-5)",
    "string(123456.0)", "string(1e21)",
    # literals
    "b'\\u00e9'", "b'\\U0001F600'", "b'\\xff'", "b'\\377'", "'\\xff'", "'\\377'",
    # conversions from strings
    "double('0x1F')", "double(' 1')", "double('1 ')", "double('1_000')", "uint('+1')", "int('+1')", "int(' 1')",
    "double('Infinity')", "double('-inf')", "double('.5')", "double('5.')", "uint('-0')",
    # maps: lookups and membership with keys of other types
    "null in {'a': 1}", "b'a' in {'a': 1}", "1.0 in {1: 'x'}", "1.5 in {1: 'x'}", "[1] in {'a': 1}",
    "{1: 'x'}[1.0]", "{1u: 'x'}[1]", "{'a': 1}[null]",
    # NaN
    "(0.0 / 0.0) < 1.0", "(0.0 / 0.0) == (0.0 / 0.0)", "[0.0 / 0.0] == [0.0 / 0.0]", "(0.0 / 0.0) in [0.0 / 0.0]",
    # substring and friends at the end of the string
    "'ab'.substring(1, 2)", "'ab'.substring(0, 2)", "'ab'.substring(2, 2)", "'héllo'.substring(1, 5)",
    "'ab'.charAt(2)", "'abc'.indexOf('', 3)", "'abc'.lastIndexOf('')",
    # map literal typing (cel-go joins a dyn value into dyn)
    "{'a': true, 'b': dyn(1)} != {'k': [1, 2]}", "[true, dyn(1)] != [[1]]",
)
"""Hand-picked expressions for each difference the generator found, and its neighbours."""


# ------------------------------------------------------------------------------------------ NVCRE thresholds

THRESHOLDS = (
    "value >= 300", "value >= 300.0", "value > 0.9", "value >= 0.9 && value <= 1.0", "value < 5.5",
    "value <= 2.5", "value == 1.0", "value != 0.0", "!(value < 300.0)", "value >= 300 || value < 0",
    "value * 2.0 > 10.0", "value / 2.0 >= 150.0", "value - 1.0 < 0.0", "-value < 0.0", "value >= 300u",
    "int(value) >= 300", "uint(value) > 0u", "string(value) == '300'", "string(value).startsWith('3')",
    "double(int(value)) == value", "value == 1", "value > 'a'", "value + 1.0", "value", "true", "value >= 1e3",
    "value >= 0.0 ? value <= 1.0 : false", "[1.0, 2.0].exists(x, x == value)", "value in [0.0, 1.0]",
    "has(value.x)", "value > 1.0 && value < 1e9 && value != 42.0", "value >= -0.0", "int(value) == 0",
    "size(string(value)) > 3", "value == value", "value < 1.0 / 0.0", "type(value) == double",
)
"""NVCRE threshold expressions: the ``value >= N`` style and what a user might write instead."""

THRESHOLD_VALUES = (0.0, -0.0, 0.5, 0.9, 1.0, 2.5, 42.0, 299.999, 300.0, 300.0001, 1e3, 1e9, 1e19, -1.0, -300.0,
                    123456789.0, 1e-7, float("inf"), float("-inf"), float("nan"))
"""Measurements: around the usual bounds, the edges of int() and string(), and the values no cluster reports."""


# ------------------------------------------------------------------------------------------ NVSentinel rules

ROOT = Path(__file__).resolve().parents[2]
REFERENCE = ROOT.parent / "shared" / "reference" / "nvsentinel"
RULE_FILES = (ROOT / "aicr_gen/sentinel/data/sentinel-rulesets.yaml", *sorted(ROOT.glob("tests/fixtures/rules/*.yaml")),
              *sorted(ROOT.glob("tests/fixtures/sentinel-chart/**/values.yaml")),
              *sorted(REFERENCE.glob("tests/data/*.yaml")), *sorted(REFERENCE.glob("distros/**/values*.yaml")))
"""Our default rule sets, the test fixtures and, where ../shared/reference is checked out, NVSentinel's own."""

EXTRA_RULES = (
    ("HealthEvent", "event.errorCode == null || !event.errorCode.exists(e, e == '79')"),
    ("HealthEvent", "event.errorCode != null && event.errorCode.exists(e, e in ['48', '79', '94'])"),
    ("HealthEvent", "event.entitiesImpacted != null && event.entitiesImpacted.exists(e, e.entityType == 'GPU')"),
    ("HealthEvent", "event.metadata != null && 'zone' in event.metadata && event.metadata['zone'] == 'a'"),
    ("HealthEvent", "event.metadata['zone'] == 'a'"),
    ("HealthEvent", "event.recommendedAction == 15 || event.recommendedAction == 24"),
    ("HealthEvent", "event.recommendedAction in [15, 24] && event.isFatal"),
    ("HealthEvent", "event.quarantineOverrides != null && event.quarantineOverrides.force"),
    ("HealthEvent", "event.generatedTimestamp.seconds > 1700000000"),
    ("HealthEvent", "event.version >= 1u"),
    ("HealthEvent", "event.version == 1"),
    ("HealthEvent", "event.message.lowerAscii().contains('xid') && event.message.matches('Xid.*79')"),
    ("HealthEvent", "event.checkName.startsWith('SysLogs') && size(event.errorCode) > 0"),
    ("HealthEvent", "event.nodeName.split('-').size() == 3"),
    ("HealthEvent", "has(event.customRecommendedAction) && event.customRecommendedAction != ''"),
    ("HealthEvent", "event.processingStrategy == 1.0 && event.componentClass in ['GPU', 'NIC']"),
    ("Node", "node.metadata.labels.exists(k, k.startsWith('nvidia.com/'))"),
    ("Node", "'nvidia.com/gpu.present' in node.metadata.labels && node.metadata.labels['nvidia.com/gpu.present'] "
             "== 'true'"),
    ("Node", "has(node.spec.taints) && node.spec.taints.exists(t, t.effect == 'NoSchedule')"),
    ("Node", "node.metadata.name.endsWith('-1')"),
    ("Node", "!has(node.spec.unschedulable) || !node.spec.unschedulable"),
)
"""Rules of the shapes NVSentinel's docs and our lints suggest, so the corpus reads every HealthEvent field."""


def _rule_expressions() -> dict[tuple[str, str], None]:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.sentinel.rules import load_config

    found: dict[tuple[str, str], None] = {}
    for path in RULE_FILES:
        for document in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            for kind, text in _kind_expressions(document):
                found.setdefault((kind, text.strip()))
        try:  # also reads the rules inside a ConfigMap's config.toml
            config = load_config(str(path))
        except InvalidInputError:
            continue
        for rule_set in (*config.rule_sets, *config.validation):
            for rule in (*rule_set.any, *rule_set.all):
                found.setdefault((rule.kind, rule.program.text))
    for kind, text in EXTRA_RULES:
        found.setdefault((kind, text))
    return found


def _kind_expressions(data: Any) -> Iterator[tuple[str, str]]:
    if isinstance(data, dict):
        if data.get("kind") in ("HealthEvent", "Node") and isinstance(data.get("expression"), str):
            yield data["kind"], data["expression"]
        for value in data.values():
            yield from _kind_expressions(value)
    elif isinstance(data, list):
        for value in data:
            yield from _kind_expressions(value)


_AGENTS = ("gpu-health-monitor", "csp-health-monitor", "syslog-health-monitor", "nic-health-monitor",
           "kubernetes-object-monitor", "preflight-dcgm-diag", "")
_COMPONENTS = ("GPU", "NIC", "Node", "CPU", "")
_CHECKS = ("GpuXidError", "CSPMaintenance", "SysLogsXIDError", "InfiniBandDegradationCheck", "NodeNotReady",
           "DcgmDiag", "")
_ERROR_CODES = (None, [], ["79"], ["48", "79"], ["DCGM_FR_UNCONTAINED_ERROR"], ["94"])
_ACTIONS = ("NONE", "COMPONENT_RESET", "RESTART_VM", "RESTART_BM", 27, 99)
EVENT_COUNT = 150


def health_events() -> list[dict[str, Any]]:
    """The fixture events and ``EVENT_COUNT`` seeded ones over the values the rules test, each as
    fault-quarantine's CEL sees it (``normalise_event``)."""
    from aicr_gen.sentinel.rules import load_events, normalise_event

    events = [event.cel for event in load_events(str(ROOT / "tests/fixtures/rules/events"))[0]]
    pick = random.Random(GENERATED_SEED).choice
    for index in range(EVENT_COUNT):
        raw: dict[str, Any] = {
            "version": pick((None, 1, 2)), "agent": pick(_AGENTS), "componentClass": pick(_COMPONENTS),
            "checkName": pick(_CHECKS), "isFatal": pick((True, False, None)), "isHealthy": pick((True, False)),
            "message": pick(("", "NVRM: Xid (PCI:0000:b5:00): 79, GPU has fallen off the bus", "link down")),
            "recommendedAction": pick(_ACTIONS), "errorCode": pick(_ERROR_CODES),
            "entitiesImpacted": pick((None, [{"entityType": "GPU", "entityValue": "0"}],
                                      [{"entityType": "PCI", "entityValue": "0000:b5:00"}])),
            "metadata": pick((None, {"zone": "a"}, {"zone": "b", "rack": "r1"})),
            "generatedTimestamp": pick((None, "2026-08-01T10:00:00.250Z", "2023-01-01T00:00:00Z")),
            "nodeName": pick(("gpu-node-1", "opted-out-node", "node-a-2")),
            "quarantineOverrides": pick((None, {"force": True}, {"skip": True}, {})),
            "processingStrategy": pick(("EXECUTE_REMEDIATION", "STORE_ONLY", 0)),
            "customRecommendedAction": pick(("", "drain-and-wait")), "id": f"event-{index}"}
        events.append(normalise_event({k: v for k, v in raw.items() if v is not None}, lambda _at: "corpus"))
    return events


_LABELS = ({}, {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
           {"nvsentinel.dgxc.nvidia.com/managed": "false"}, {"nvsentinel.dgxc.nvidia.com/managed": "true"},
           {"k8saas.nvidia.com/ManagedByNVSentinel": "false"}, {"k8saas.nvidia.com/ManagedByNVSentinel": "true",
                                                                "nvidia.com/gpu.product": "NVIDIA-A100"})
_SPECS = ({}, {"unschedulable": True}, {"taints": [{"key": "k", "effect": "NoSchedule"}]},
          {"taints": [{"key": "k", "value": "v", "effect": "NoExecute"}], "unschedulable": False})


def nodes() -> list[dict[str, Any]]:
    """The fixture nodes, a bare one, and every label set with every spec, as fault-quarantine caches them."""
    from aicr_gen.sentinel.rules import bare_node, load_nodes, node_view

    found = [*load_nodes(str(ROOT / "tests/fixtures/rules/nodes")).values(), bare_node("gpu-node-1")]
    for index, labels in enumerate(_LABELS):
        for spec in _SPECS:
            found.append(node_view({"apiVersion": "v1", "kind": "Node", "spec": spec,
                                    "metadata": {"name": f"node-{index}-1", "labels": labels}}))
    return found


def rule_cases() -> list[Case]:
    """Every rule, a HealthEvent rule over every event and a Node rule over every node."""
    events, all_nodes = health_events(), nodes()
    cases = []
    for kind, text in _rule_expressions():
        if kind == "HealthEvent":
            cases.append(Case(text, {"event": DYN}, tuple({"event": event} for event in events)))
        else:
            cases.append(Case(text, {"node": DYN}, tuple({"node": node} for node in all_nodes)))
    return cases


# ------------------------------------------------------------------------------------------ shipped policies

EXAMPLES = tuple(sorted((ROOT / "examples").glob("*.yaml")))


def _spec_variants(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield spec
    for path, value in (
            (("sentinel",), None), (("sentinel", "mode"), "monitor"), (("sentinel", "breaker"), None),
            (("certification",), None), (("certification", "categories"), []), (("certification", "thresholds"), {}),
            (("criteria", "intent"), "training"), (("criteria", "intent"), "inference"), (("overrides",), None),
            (("overrides", "set"), ["cert-manager:enabled=false", "nvcre:enabled=false"]),
            (("deployers",), ["helm"]), (("deployers",), ["argocd-helm", "helmfile"])):
        variant = copy.deepcopy(spec)
        target = variant["spec"]
        for key in path[:-1]:
            target = target.get(key) or {}
        if isinstance(target, dict):
            target[path[-1]] = value
            yield variant


_COMPONENT_CHANGES: tuple[tuple[str, Any], ...] = (
    ("version", None), ("version", "latest"), ("version", "1.2"), ("version", "v1.2.3-rc.1+build.5"),
    ("version", ">=1.0"), ("version", "01.2.3"), ("source", "http://charts.jetstack.io"),
    ("source", "oci://ghcr.io/org/chart"), ("source", "https://evil.example.com/x"), ("source", "HTTPS://GHCR.IO/x"),
    ("source", None), ("healthCheckAsserts", None), ("healthCheckAsserts", ""), ("type", "Kustomize"),
    ("overrides", {"enabled": False}), ("name", "nvcre"))


def _component_variants(component: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield component
    for key, value in _COMPONENT_CHANGES:
        variant = copy.deepcopy(component)
        if value is None:
            variant.pop(key, None)
        else:
            variant[key] = value
        yield variant


def policy_cases() -> list[Case]:
    """Every ``match`` and ``rule`` of the shipped policies over the variables policy/check.py gives them:
    the examples' resolved recipes and ClusterSpec documents, varied where the policies look."""
    from aicr_gen.gitops.trees.recipes import resolve_spec
    from aicr_gen.policy import load_policies, shipped_root
    from aicr_gen.spec.load import load_spec
    inputs = []
    for example in EXAMPLES:
        cluster = load_spec(str(example))
        recipe = resolve_spec(cluster, example.parent)
        inputs += [(recipe, spec) for spec in _spec_variants(cluster.model_dump(mode="json"))]
    cases = []
    for policy in load_policies([shipped_root()]):
        for program in (policy.match, policy.rule):
            if program is None:
                continue
            if policy.target != "component":
                bindings = tuple({"recipe": recipe, "spec": spec} for recipe, spec in inputs)
                cases.append(Case(program.text, dict.fromkeys(("recipe", "spec"), DYN), bindings))
                continue
            bindings = tuple({"recipe": recipe, "spec": spec, "component": variant}
                             for recipe, spec in inputs[::4] for component in recipe.get("componentRefs") or []
                             for variant in _component_variants(component))
            cases.append(Case(program.text, dict.fromkeys(("component", "recipe", "spec"), DYN), bindings))
    return cases
