"""`aicr-gen rules test`: NVSentinel's rule sets against HealthEvent samples, as fault-quarantine would run them.

The upstream samples and rule sets come from ../shared/reference/nvsentinel (NVSentinel's chart and
tests/data, loaded as-is); our own small fixtures are in tests/fixtures/rules/.
"""

from __future__ import annotations

import json
import re
import shutil
import time
from pathlib import Path
from typing import Any

import pytest

from aicr_gen import cel
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel import rules
from tests.conftest import REFERENCE, assert_refused, needs, run_process

NVSENTINEL = REFERENCE / "nvsentinel"
CHART = NVSENTINEL / "distros" / "kubernetes" / "nvsentinel"
DEFAULTS = CHART / "charts" / "fault-quarantine" / "values.yaml"
SAMPLES = NVSENTINEL / "tests" / "data"
FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "rules"

needs_nvsentinel = needs(NVSENTINEL)

GPU_RULESET = "GPU fatal error ruleset"


def outcomes(cli: Any, *args: str) -> dict[str, dict[str, Any]]:
    """`rules test ... --format json`, keyed by event name (exit 0 required)."""
    result = cli("rules", "test", *args, "--format", "json")
    assert result.code == 0, result.err
    return {item["event"]: item for item in json.loads(result.out)}


def evaluate(expression: str, event: dict[str, Any]) -> Any:
    program = cel.Environment(["event"]).compile(expression)
    return program.evaluate({"event": rules.normalise_event(event, lambda path: f"event: {path}")})


# ---------------------------------------------------------------------------- upstream samples


@needs_nvsentinel
def test_upstream_samples_against_the_chart_default_rule_sets(cli: Any) -> None:
    """Read from the rules: the GPU rule set wants agent gpu-health-monitor, componentClass GPU and isFatal;
    its Node clause passes on a node that has not opted out. The three fatal samples (XID 119 component
    reset, XID 79 'fallen off the bus' with RESTART_VM, XID 145 CONTACT_SUPPORT) match it and are cordoned;
    the healthy samples match nothing and are skipped. The ConfigMaps in tests/data are skipped as events."""
    result = cli("rules", "test", "--values", str(DEFAULTS), "--events", str(SAMPLES), "--format", "json")
    assert result.code == 0, result.err
    got = {item["event"]: item for item in json.loads(result.out)}
    assert list(got) == sorted(got)  # files sorted by name
    for fatal in ("fatal-health-event-component-reset.json", "fatal-health-event-restart-vm.json",
                  "unsupported-health-event.json"):
        assert got[fatal] == {"event": fatal, "node": "NODE_NAME", "matched": [GPU_RULESET], "cordon": True,
                              "taints": [], "labels": {}, "skipped": None}
    for healthy in ("healthy-event.json", "healthy-event-component-reset.json"):
        assert got[healthy]["matched"] == []
        assert got[healthy]["cordon"] is False
        assert "healthy event" in got[healthy]["skipped"]
    assert "basic-matching-configmap.yaml: a ConfigMap, not a HealthEvent; skipped" in result.err


@needs_nvsentinel
def test_upstream_rule_set_configmaps_load_as_is(cli: Any) -> None:
    """tests/data ConfigMaps hold config.toml; their rule sets run like the chart's."""
    basic = outcomes(cli, "--values", str(SAMPLES / "basic-matching-configmap.yaml"), "--events", str(SAMPLES))
    xid79 = basic["fatal-health-event-restart-vm.json"]
    assert xid79["matched"] == ["Basic-Match-Rule"]
    assert xid79["taints"] == [{"key": "AggregatedNodeHealth", "value": "False", "effect": "NoSchedule"}]
    assert xid79["cordon"] is True
    syslog = outcomes(cli, "--values", str(SAMPLES / "syslog-xid-cordon-configmap.yaml"), "--events", str(SAMPLES))
    assert all(item["matched"] == [] for item in syslog.values())  # the samples come from gpu-health-monitor


@needs_nvsentinel
def test_the_node_opt_out_label_stops_the_default_rule_sets(cli: Any) -> None:
    got = outcomes(cli, "--values", str(DEFAULTS), "--events", str(FIXTURES / "events"),
                   "--nodes", str(FIXTURES / "nodes"))
    assert got["syslog-xid79.yaml"]["matched"] == ["Syslog fatal error ruleset"]
    assert got["batch.json[0]"]["matched"] == ["Preflight check fatal error ruleset"]  # agent preflight-*
    assert got["batch.json[1]"]["node"] == "opted-out-node"
    assert got["batch.json[1]"]["matched"] == []  # nvsentinel.dgxc.nvidia.com/managed=false
    assert got["batch.json[1]"]["cordon"] is False


@needs_nvsentinel
def test_reference_values_full_and_lifecycle_criteria_compile(cli: Any) -> None:
    full = outcomes(cli, "--values", str(CHART / "values-full.yaml"), "--events", str(SAMPLES / "healthy-event.json"))
    assert full["healthy-event.json"]["matched"] == []
    result = cli("rules", "test", "--values", str(CHART / "charts" / "lifecycle-manager" / "values.yaml"),
                 "--events", str(SAMPLES / "healthy-event.json"))
    assert result.code == 0, result.err
    # Upstream compares an allocatable quantity string with a number: always an error in cel-go.
    assert "quantity(node.status.allocatable['nvidia.com/gpu']) > 0" in result.err


@needs_nvsentinel
def test_recommended_action_numbers_match_health_event_proto() -> None:
    proto = (NVSENTINEL / "data-models" / "protobufs" / "health_event.proto").read_text(encoding="utf-8")
    for enum, table in (("RecommendedAction", rules.RECOMMENDED_ACTION),
                        ("ProcessingStrategy", rules.PROCESSING_STRATEGY)):
        block = re.search(rf"enum {enum} \{{(.*?)\}}", proto, re.S)
        assert block is not None
        assert {name: int(number) for name, number in re.findall(r"(\w+) = (\d+);", block.group(1))} == table
    message = re.search(r"message HealthEvent \{(.*?)\n\}", proto, re.S)
    assert message is not None
    assert re.findall(r"^\s+\S+(?: \S+)? (\w+) = \d+;", message.group(1), re.M) == list(rules.HEALTH_EVENT_FIELDS)


# ------------------------------------------------------------------------- event normalisation


def test_events_look_as_nvsentinel_presents_them() -> None:
    """camelCase, every field present, enums as numbers, empty lists and unset messages null, numbers doubles."""
    event = rules.normalise_event({"agent": "gpu-health-monitor", "recommendedAction": "RESTART_BM",
                                   "errorCode": [], "nodeName": "n1",
                                   "generatedTimestamp": "2026-08-01T10:00:00.250Z"}, lambda path: "e")
    assert set(event) == set(rules.HEALTH_EVENT_FIELDS)
    assert event["recommendedAction"] == 24.0 and isinstance(event["recommendedAction"], float)
    assert event["errorCode"] is None and event["entitiesImpacted"] is None and event["metadata"] is None
    assert event["quarantineOverrides"] is None
    assert event["processingStrategy"] == 1.0  # UNSPECIFIED is normalised to EXECUTE_REMEDIATION
    assert event["generatedTimestamp"] == {"seconds": 1785578400.0, "nanos": 250_000_000.0}
    assert event["isFatal"] is False and event["message"] == "" and event["version"] == 0.0


def test_enum_numbers_are_what_rules_compare() -> None:
    restart_vm = {"recommendedAction": "RESTART_VM", "nodeName": "n"}
    assert evaluate("event.recommendedAction == 15", restart_vm) is True
    assert evaluate("event.recommendedAction in [15, 24]", restart_vm) is True  # the shipped validation rule
    assert evaluate("event.recommendedAction == 'RESTART_VM'", restart_vm) is False
    assert evaluate("event.recommendedAction == 5", {"recommendedAction": 5, "nodeName": "n"}) is True
    assert evaluate("type(event.recommendedAction) == double", restart_vm) is True  # a JSON round trip


def test_empty_lists_are_null_and_the_documented_guard_works() -> None:
    healthy = {"errorCode": [], "nodeName": "n"}
    assert evaluate("event.errorCode == null", healthy) is True
    assert evaluate("event.errorCode == null || !event.errorCode.exists(e, e == '45')", healthy) is True
    with pytest.raises(cel.CelError, match="needs a list or map, not null"):
        evaluate("!event.errorCode.exists(e, e == '45')", healthy)
    assert evaluate("event.errorCode.exists(e, e == '79')", {"errorCode": ["79"], "nodeName": "n"}) is True


@pytest.mark.parametrize(("event", "fragment"), [
    ({"agent": "x", "nodeName": "n", "severity": "high"}, "HealthEvent has no field 'severity'"),
    ({"agent": "x", "nodeName": "n", "component_class": "GPU"}, "did you mean 'componentClass'?"),
    ({"recommendedAction": "REBOOT", "nodeName": "n"}, "'REBOOT' is not a recommendedAction (one of NONE=0"),
    ({"errorCode": [79], "nodeName": "n"}, "must be a string, not the number 79; quote it: '79'"),
    ({"isFatal": "yes", "nodeName": "n"}, "must be true or false"),
    ({"agent": "x"}, "nodeName is required"),
    ({"nodeName": "n", "generatedTimestamp": "yesterday"}, "not RFC 3339"),
])
def test_malformed_events_are_refused_naming_the_field(event: dict[str, Any], fragment: str) -> None:
    with pytest.raises(InvalidInputError) as caught:
        rules.normalise_event(event, lambda path: f"e.json: {'.'.join(map(str, path))}")
    assert fragment in str(caught.value)


# ------------------------------------------------------------------------------ actions, nodes


def test_priorities_resolve_taints_and_labels_as_fault_quarantine_does(cli: Any) -> None:
    got = outcomes(cli, "--values", str(FIXTURES / "priorities.yaml"), "--events", str(FIXTURES / "events"),
                   "--nodes", str(FIXTURES / "nodes"))
    xid79 = got["syslog-xid79.yaml"]
    assert xid79["matched"] == ["low", "high", "tie-later", "gpu-only-on-h100"]
    assert xid79["cordon"] is True  # only "low" cordons; any cordoning rule set cordons
    # Same taint key/value: the higher priority's effect. Same label key: higher priority, later wins a tie.
    assert xid79["taints"] == [
        {"key": "example.com/h100-fault", "value": "true", "effect": "PreferNoSchedule"},
        {"key": "nvidia.com/gpu-error", "value": "fatal", "effect": "NoExecute"}]
    assert xid79["labels"] == {"nvidia.com/gpu-fault": "xid79"}
    preflight = got["batch.json[0]"]  # no XID 79: "high" keeps the label
    assert preflight["labels"] == {"nvidia.com/gpu-fault": "high"}
    assert got["batch.json[1]"]["matched"] == ["low", "high", "tie-later"]  # not an H100 node


def test_overrides_strategy_and_health_decide_whether_anything_happens(cli: Any) -> None:
    got = outcomes(cli, "--values", str(FIXTURES / "priorities.yaml"), "--events", str(FIXTURES / "events"),
                   "--nodes", str(FIXTURES / "nodes"))
    store_only = got["batch.json[2]"]
    assert store_only["matched"] and store_only["cordon"] is False and store_only["taints"] == []
    assert store_only["skipped"].startswith("processingStrategy STORE_ONLY")
    assert got["batch.json[3]"]["matched"] == [] and got["batch.json[3]"]["cordon"] is True  # force
    assert got["batch.json[4]"]["skipped"] == "quarantineOverrides.skip is set"


def test_a_missing_node_is_a_bare_node_and_is_reported(cli: Any, tmp_path: Path) -> None:
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"agent": "a", "isFatal": True, "componentClass": "GPU", "nodeName": "ghost"}))
    result = cli("rules", "test", "--values", str(FIXTURES / "priorities.yaml"), "--events", str(event),
                 "--nodes", str(FIXTURES / "nodes"), "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)[0]["matched"] == ["low", "high"]  # the H100 Node rule sees no labels
    assert "1 event(s) name node 'ghost', which is not in --nodes" in result.err


# ------------------------------------------------------------------------------------- warnings


def test_a_rule_that_can_never_match_is_warned_about(cli: Any) -> None:
    result = cli("rules", "test", "--values", str(FIXTURES / "never-match.yaml"),
                 "--events", str(FIXTURES / "events" / "syslog-xid79.yaml"))
    assert result.code == 0, result.err
    assert ("event.recommendedAction is a number in NVSentinel's CEL (enums are numbers), so == 'RESTART_VM' "
            "is never true; write 15 (RESTART_VM)") in result.err
    assert "never-match.yaml:7: ruleSets[0].match.all[0] (rule set 'restart by name')" in result.err
    assert "matched no event: restart by name" in result.out


@pytest.mark.parametrize(("kind", "expression", "fragment"), [
    ("HealthEvent", "event.severity == 'high'", "event has no field 'severity'"),
    ("HealthEvent", "event.errorCode == '79'", "event.errorCode is a list (or null), so == '79' is never true"),
    ("HealthEvent", "event.errorCode == []", "empty lists as null"),
    ("HealthEvent", "event.isFatal == 'true'", "event.isFatal is a bool"),
    ("HealthEvent", "event.recommendedAction in ['RESTART_BM']", "write 24 (RESTART_BM)"),
    ("HealthEvent", "'GPU' in event.componentClass", "use event.componentClass.contains('GPU')"),
    ("HealthEvent", "has(event.quarantineOverride.force)", "did you mean 'quarantineOverrides'?"),
    ("Node", "node.status.allocatable['nvidia.com/gpu'] == '8'", "node.status is never available"),
])
def test_lints(kind: str, expression: str, fragment: str) -> None:
    environment = cel.Environment(["event"] if kind == "HealthEvent" else ["node"])
    problems = rules.lint_rule(kind, environment.compile(expression))
    assert any(fragment in problem for problem in problems), problems


def test_runtime_failures_are_counted_per_rule(cli: Any, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("ruleSets:\n  - name: unguarded\n    match:\n      all:\n        - kind: HealthEvent\n"
                      "          expression: \"event.errorCode.exists(e, e == '79')\"\n"
                      "    cordon: {shouldCordon: true}\n")
    result = cli("rules", "test", "--values", str(values), "--events", str(FIXTURES / "events"))
    assert result.code == 0
    assert "failed on 2 event(s), so it did not match there" in result.err  # batch.json[3] and [4]
    assert "first: batch.json[3]: exists() needs a list or map, not null_type" in result.err


# ---------------------------------------------------------------------------------- --expect


@needs_nvsentinel
def test_expect_passes(cli: Any) -> None:
    result = cli("rules", "test", "--values", str(DEFAULTS), "--events", str(SAMPLES),
                 "--expect", str(FIXTURES / "expect-pass.yaml"))
    assert result.code == 0, result.err
    assert "3 expected event(s) match" in result.err


@needs_nvsentinel
def test_expect_mismatch_exits_1_with_a_readable_diff(cli: Any) -> None:
    result = cli("rules", "test", "--values", str(DEFAULTS), "--events", str(SAMPLES),
                 "--expect", str(FIXTURES / "expect-fail.yaml"))
    assert result.code == 1
    assert "2 of 2 expected event(s) differ" in result.err
    assert ("matched: expected [Syslog fatal error ruleset], got [GPU fatal error ruleset] (missing "
            "[Syslog fatal error ruleset]; unexpected [GPU fatal error ruleset])") in result.err
    assert "healthy-event.json:\n      cordon: expected true, got false" in result.err
    assert "fatal-health-event-restart-vm.json" in result.out  # the report is still printed


@needs_nvsentinel
def test_json_output_is_a_valid_expectation_file(cli: Any, tmp_path: Path) -> None:
    result = cli("rules", "test", "--values", str(DEFAULTS), "--events", str(SAMPLES), "--format", "json")
    expect = tmp_path / "expect.json"
    expect.write_text(result.out)
    again = cli("rules", "test", "--values", str(DEFAULTS), "--events", str(SAMPLES), "--expect", str(expect))
    assert again.code == 0, again.err


def test_a_broken_rule_exits_2_naming_file_and_rule_set(cli: Any) -> None:
    result = cli("rules", "test", "--values", str(FIXTURES / "broken.yaml"), "--events", str(FIXTURES / "events"),
                 "--expect", str(FIXTURES / "expect-pass.yaml"))
    assert_refused(result, "1 rule(s) do not compile; NVSentinel would not start with them",
                   "broken.yaml:5: ruleSets[0].match.all[0] (rule set 'unbalanced'): syntax error")


@pytest.mark.parametrize(("expression", "fragment"), [
    ("now() > timestamp('2020-01-01T00:00:00Z')", "now() and quantity() exist in lifecycle-manager criteria"),
    ("node.metadata.labels.size() > 0", "a HealthEvent rule sees only `event`"),
    ("event.agent.lowerCase() == 'x'", "undeclared reference to 'lowerCase' (in container '')"),
    ("event.agent.startsWith()", "found no matching overload for 'startsWith' applied to 'dyn.()'"),
    # cel-go's checker: literals of different numeric types have no common overload (cel.AnyType operands do)
    ("event.isFatal || 15.0 == 15", "found no matching overload for '_==_' applied to '(double, int)'"),
    ("event.isFatal || 1 < 1.5", "found no matching overload for '_<_' applied to '(int, double)'"),
    ("event.isFatal || 1u == 1", "found no matching overload for '_==_' applied to '(uint, int)'"),
    ("event.isFatal && 'a' + 1 == 'b'", "found no matching overload for '_+_' applied to '(string, int)'"),
    ("event.agent + 1 == 'a'", "found no matching overload for '_==_' applied to '(int, string)'"),  # dyn + int is int
    ("event.`agent` == 'x'", "syntax error"),  # cel-go v0.27.0 has no backquoted fields
])
def test_checker_errors_are_compile_errors(cli: Any, tmp_path: Path, expression: str, fragment: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps({"ruleSets": [{"name": "r", "cordon": {"shouldCordon": True}, "match": {
        "all": [{"kind": "HealthEvent", "expression": expression}]}}]}))
    assert_refused(cli("rules", "test", "--values", str(values), "--events", str(FIXTURES / "events")), fragment)


def test_a_disabled_broken_rule_set_only_warns(cli: Any, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps({"ruleSets": [{"name": "off", "enabled": False, "cordon": {"shouldCordon": True},
                                                "match": {"all": [{"kind": "HealthEvent", "expression": "(("}]}}]}))
    result = cli("rules", "test", "--values", str(values), "--events", str(FIXTURES / "events"))
    assert result.code == 0
    assert "the rule set is disabled, so fault-quarantine skips it" in result.err


# ------------------------------------------------------------------------------- hostile CEL


L30 = "[" + ",".join(map(str, range(30))) + "]"
HOSTILE = {
    "deeply nested": "(" * 300 + "event.isFatal" + ")" * 300,
    "map bomb": "[1,2,3]" + "".join(f".map(x{i}, [1,2,3]" for i in range(14)) + ".size() > 0" + ")" * 14,
    "nested literal comprehensions": f"{L30}.all(a, {L30}.all(b, {L30}.all(c, {L30}.all(d, a + b + c + d >= 0))))",
    "data-driven bomb": "event.errorCode.exists(a, event.errorCode.exists(b, event.errorCode.exists("
                        "c, a + b + c == 'never')))",
    "string growth": "event.message.replace('', event.message).replace('', event.message) == ''",
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_hostile_cel_is_refused_quickly_naming_the_rule(cli: Any, tmp_path: Path, name: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps({"ruleSets": [{"name": f"hostile {name}", "cordon": {"shouldCordon": True},
                                                "match": {"all": [{"kind": "HealthEvent",
                                                                   "expression": HOSTILE[name]}]}}]}))
    event = tmp_path / "big.json"
    event.write_text(json.dumps({"nodeName": "n", "message": "x" * 2000, "errorCode": [str(i) for i in range(300)]}))
    start = time.perf_counter()
    result = cli("rules", "test", "--values", str(values), "--events", str(event))
    elapsed = time.perf_counter() - start
    assert_refused(result, f"(rule set 'hostile {name}')")
    assert re.search(r"limit|too deeply|steps|longer than", result.err), result.err
    assert elapsed < 2.0, f"{name} took {elapsed:.2f} s"


# Within cel-go's defaults (100,000 code points, nesting 250), so fault-quarantine starts with them: never refused.
LARGE_BUT_VALID = {
    "1,000-term or": " || ".join(f"'{i}' in event.errorCode" for i in range(1000)),
    "240-deep parentheses": "(" * 240 + "event.isFatal" + ")" * 240,
    "90,000 characters": "event.message == '" + "x" * 90_000 + "'",
}


@pytest.mark.parametrize("name", list(LARGE_BUT_VALID))
def test_rules_within_cel_go_defaults_are_accepted(cli: Any, tmp_path: Path, name: str) -> None:
    values = tmp_path / "values.yaml"
    values.write_text(json.dumps({"ruleSets": [{"name": name, "cordon": {"shouldCordon": True}, "match": {
        "all": [{"kind": "HealthEvent", "expression": LARGE_BUT_VALID[name]}]}}]}))
    event = tmp_path / "e.json"
    event.write_text(json.dumps({"nodeName": "n", "message": "m", "errorCode": ["999"], "isFatal": True}))
    start = time.perf_counter()
    result = cli("rules", "test", "--values", str(values), "--events", str(event))
    assert result.code == 0, result.err
    assert time.perf_counter() - start < 2.0


def test_the_wall_clock_deadline_stops_an_evaluation() -> None:
    limits = cel.Limits(max_steps=10**12, max_seconds=0.05)
    program = cel.Environment(["event"], limits=limits).compile(
        "event.all(a, event.all(b, event.all(c, a + b + c >= 0)))")
    start = time.perf_counter()
    with pytest.raises(cel.CelLimitError, match=r"longer than 0\.05 s"):
        program.evaluate({"event": list(range(500))})
    assert time.perf_counter() - start < 1.0


# ----------------------------------------------------------------------------------- CEL itself


@pytest.mark.parametrize(("expression", "expected"), [
    ("15.0 == 15 && 1 in [1.0] && 2u == 2", True),  # heterogeneous numeric equality (cel-go)
    ("1 < 1.5 && 'a' < 'b'", True),
    ("1 == 'a'", False),  # mixed types are unequal, not an error
    ("(1 / 0 == 1) || true", True),  # errors absorbed by a deciding side
    ("false && (1 / 0 == 1)", False),
    ("[1, 2, 3].exists(x, x / 0 == 1 || x == 2)", True),
    ("[1, 2, 3].map(x, x * 2).filter(y, y > 2) == [4, 6]", True),
    ("[1, 2, 3].map(x, x > 1, x * 10) == [20, 30] && [1, 2].exists_one(x, x == 2)", True),
    ("{'a': {'b': 1}}.a.b == 1 && has({'a': 1}.a) && !has({'a': 1}.b)", True),
    ("'preflight-nccl'.startsWith('preflight-') && 'GPU'.lowerAscii() == 'gpu'", True),
    ("'a,b,c'.split(',') == ['a', 'b', 'c'] && ['a', 'b'].join('-') == 'a-b'", True),
    ("'hello'.substring(1, 3) == 'el' && 'hello'.indexOf('l') == 2 && 'x'.charAt(0) == 'x'", True),
    ("'%s has %d GPUs'.format(['n1', 8]) == 'n1 has 8 GPUs'", True),
    ("string(15.0) == '15' && int('42') == 42 && double('1.5') == 1.5", True),
    ("duration('1h30m') == duration('90m') && timestamp('2026-01-01T00:00:00Z').getFullYear() == 2026", True),
    ("'XID 79'.matches('^XID [0-9]+$')", True),
    ("type(1) == int && type('a') == string && type(null) == null_type", True),
])
def test_cel_semantics_follow_cel_go(expression: str, expected: Any) -> None:
    assert cel.Environment([]).compile(expression).evaluate({}) == expected


def test_quantities_and_now_for_lifecycle_criteria() -> None:
    now = rules.default_now().replace(year=2026)
    environment = cel.Environment(["node"], libraries=("strings", "kubernetes"), now=now)
    node = cel.to_cel({"metadata": {"creationTimestamp": now.isoformat().replace("+00:00", "Z")},
                       "status": {"allocatable": {"nvidia.com/gpu": "8", "memory": "2Gi"}}})
    for expression in (
            "quantity(node.status.allocatable['nvidia.com/gpu']) > 0",
            "quantity(node.status.allocatable.memory).isGreaterThan(quantity('1500Mi'))",
            "quantity('1Gi') == quantity('1024Mi') && quantity('500m').asApproximateFloat() == 0.5",
            "quantity('2k').asInteger() == 2000 && quantity('1.5').isInteger() == false && isQuantity('x') == false",
            "quantity('1Gi').add(quantity('1Gi')).compareTo(quantity('2Gi')) == 0 && quantity('-1').sign() == -1",
            "now() - timestamp(node.metadata.creationTimestamp) < duration('15m')"):
        assert environment.compile(expression).evaluate({"node": node}) is True, expression
    with pytest.raises(cel.CelError, match="quantities must match"):
        environment.compile("quantity('ten') > 0").evaluate({"node": node})


def test_to_cel_refuses_what_cel_cannot_hold() -> None:
    with pytest.raises(ValueError, match="has no CEL equivalent"):
        cel.to_cel({"a": {1, 2}})
    with pytest.raises(ValueError, match="map key 1 is not a string"):
        cel.to_cel({1: "a"})
    assert cel.to_cel({"n": 3}, json_numbers=True) == {"n": 3.0}


# ------------------------------------------------------------------------------------ determinism


@needs_nvsentinel
def test_output_is_deterministic_across_processes() -> None:
    args = ("rules", "test", "--values", str(FIXTURES / "priorities.yaml"), "--events", str(FIXTURES / "events"),
            "--nodes", str(FIXTURES / "nodes"), "--format")
    first = run_process(*args, "json", env={"PYTHONHASHSEED": "1"})
    second = run_process(*args, "json", env={"PYTHONHASHSEED": "2"})
    assert first.code == 0, first.err
    assert first.out == second.out and first.err == second.err
    text = run_process(*args, "text", env={"PYTHONHASHSEED": "3"})
    assert text.out.splitlines()[0].split() == ["EVENT", "NODE", "MATCHED", "CORDON", "TAINTS", "LABELS", "NOTE"]


def test_values_without_rules_are_refused(cli: Any, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("global:\n  dryRun: true\n")
    assert_refused(cli("rules", "test", "--values", str(values), "--events", str(FIXTURES / "events")),
                   "no rule sets found")


def test_values_written_by_sentinel_values_load(cli: Any, tmp_path: Path) -> None:
    """Our layout (umbrella chart keys, as `aicr-gen sentinel values` writes them), with post-remediation
    validation: the XID 79 RESTART_VM event is cordoned by the syslog rule set and validated after reboot."""
    values = tmp_path / "values.yaml"
    written = cli("sentinel", "values", "--mode", "quarantine", "--lifecycle", "--validation", "-o", str(values))
    assert written.code == 0, written.err
    got = outcomes(cli, "--values", str(values), "--events", str(FIXTURES / "events"),
                   "--nodes", str(FIXTURES / "nodes"))
    xid79 = got["syslog-xid79.yaml"]
    assert xid79["matched"] == ["Syslog fatal error ruleset"]
    assert [entry["name"] for entry in xid79["validation"]] == ["Post-reboot validation"]
    assert got["batch.json[0]"]["validation"] == []  # COMPONENT_RESET is not a reboot


def test_config_toml_and_validation_configuration(cli: Any, tmp_path: Path) -> None:
    toml = tmp_path / "config.toml"
    toml.write_text('label-prefix = "k8saas.nvidia.com/"\n[[rule-sets]]\n  enabled = true\n  name = "xid"\n'
                    '  [[rule-sets.match.all]]\n    kind = "HealthEvent"\n'
                    "    expression = '''\n      event.errorCode != null && event.errorCode.exists(e, e == '79')\n"
                    "    '''\n  [rule-sets.label]\n    key = \"nvidia.com/xid\"\n    value = \"79\"\n"
                    '[[rule-sets]]\n  name = "off: TOML defaults enabled to false"\n'
                    '  [[rule-sets.match.all]]\n    kind = "HealthEvent"\n    expression = "true"\n')
    got = outcomes(cli, "--values", str(toml), "--events", str(FIXTURES / "events" / "syslog-xid79.yaml"))
    assert got["syslog-xid79.yaml"]["matched"] == ["xid"]
    assert got["syslog-xid79.yaml"]["labels"] == {"nvidia.com/xid": "79"}
    assert got["syslog-xid79.yaml"]["cordon"] is False  # no [rule-sets.cordon]: Go's zero value
    config = tmp_path / "validation.yaml"
    config.write_text("apiVersion: nvsentinel.nvidia.com/v1alpha1\nkind: ValidationConfiguration\nspec:\n"
                      "  readinessCriteria:\n    - name: gpus\n      expression: 'node.status.allocatable >'\n")
    assert_refused(cli("rules", "test", "--values", str(config), "--events", str(FIXTURES / "events")),
                   "(criterion 'gpus'): syntax error")


def test_a_misspelt_event_field_names_file_and_line(cli: Any, tmp_path: Path) -> None:
    event = tmp_path / "events" / "typo.yaml"
    event.parent.mkdir()
    event.write_text("agent: gpu-health-monitor\nnodeName: n1\nisfatal: true\n")
    (tmp_path / "events" / ".hidden.yaml").write_text("not: an event\n")  # hidden files are not read
    assert_refused(cli("rules", "test", "--values", str(FIXTURES / "never-match.yaml"), "--events",
                       str(event.parent)), "typo.yaml:3: isfatal: HealthEvent has no field 'isfatal'; did you mean "
                                            "'isFatal'?")


# ------------------------------------------------------------------------- multi-document samples


def test_multi_document_event_and_node_files_are_lists_of_samples(cli: Any, tmp_path: Path) -> None:
    xid79 = (FIXTURES / "events" / "syslog-xid79.yaml").read_text()
    events = tmp_path / "events.yaml"
    events.write_text(f"---\n{xid79}---\n# the same event on the other node\n"
                      + xid79.replace("nodeName: gpu-node-1", "nodeName: opted-out-node") + "...\n---\n")
    nodes = tmp_path / "nodes.yaml"  # two `kubectl get node NAME -o yaml` outputs, concatenated
    nodes.write_text("".join(
        f"---\napiVersion: v1\nkind: Node\nmetadata:\n  name: {name}\n  labels:\n    nvidia.com/gpu.present: 'true'\n"
        f"    {label}\nspec: {{}}\n" for name, label in (
            ("gpu-node-1", "nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3"),
            ("opted-out-node", "nvsentinel.dgxc.nvidia.com/managed: 'false'"))))
    got = outcomes(cli, "--values", str(FIXTURES / "priorities.yaml"), "--events", str(events),
                   "--nodes", str(nodes))
    assert sorted(got) == ["events.yaml[0]", "events.yaml[1]"]
    assert got["events.yaml[0]"]["node"] == "gpu-node-1" and "gpu-only-on-h100" in got["events.yaml[0]"]["matched"]
    assert got["events.yaml[1]"]["node"] == "opted-out-node"
    single = outcomes(cli, "--values", str(FIXTURES / "priorities.yaml"), "--events",
                      str(FIXTURES / "events" / "syslog-xid79.yaml"), "--nodes", str(FIXTURES / "nodes"))
    assert {key: value for key, value in got["events.yaml[0]"].items() if key != "event"} == {
        key: value for key, value in single["syslog-xid79.yaml"].items() if key != "event"}


def test_an_error_in_a_later_document_names_its_line(cli: Any, tmp_path: Path) -> None:
    events = tmp_path / "events.yaml"
    events.write_text("agent: a\nnodeName: n1\n---\nagent: a\nnodeName: n2\nisfatal: true\n")
    assert_refused(cli("rules", "test", "--values", str(FIXTURES / "never-match.yaml"), "--events", str(events)),
                   "events.yaml:6: [1].isfatal: HealthEvent has no field 'isfatal'")
    events.write_text("agent: a\nnodeName: n1\n---\nagent: [a\n")
    assert_refused(cli("rules", "test", "--values", str(FIXTURES / "never-match.yaml"), "--events", str(events)),
                   "events.yaml:", "invalid YAML")


def test_other_objects_among_the_documents_are_skipped_with_a_warning(cli: Any, tmp_path: Path) -> None:
    events = tmp_path / "events.yaml"
    events.write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n---\nagent: a\nnodeName: n1\n")
    result = cli("rules", "test", "--values", str(FIXTURES / "never-match.yaml"), "--events", str(events),
                 "--format", "json")
    assert result.code == 0, result.err
    assert [item["event"] for item in json.loads(result.out)] == ["events.yaml"]
    assert "events.yaml:1: [0]: a ConfigMap, not a HealthEvent; skipped" in result.err


# ------------------------------------------------------------------------------- performance aids


@pytest.mark.parametrize(("expression", "read"), [
    ("event.agent == 'x' && event.isFatal", ("agent", "isFatal")),
    ("event.metadata['k'] == 'v' || has(event.entitiesImpacted)", ("entitiesImpacted", "metadata")),
    ("event.errorCode.exists(e, e == '79')", ("errorCode",)),
    ("true", ()),
    ("size(event) > 1", None),
    ("'agent' in event", None),
    ("event[event.agent] == 'x'", None),
    ("[1].exists(event, event > 0)", None),
    (".event.agent == 'x'", None),
])
def test_fields_read_name_all_an_expression_depends_on(expression: str, read: tuple[str, ...] | None) -> None:
    fields = cel.Environment(["event"]).compile(expression).fields_read
    assert fields == (None if read is None else {"event": read})


def test_shared_outcomes_keep_apart_what_cel_tells_apart() -> None:
    from aicr_gen.sentinel.rules.evaluation import _freeze

    values = [True, 1, 1.0, 0.0, -0.0, None, "1", [1], [1.0], {"a": 1, "b": 2}, {"b": 2, "a": 1}]
    frozen = [_freeze(value) for value in values]
    assert None not in frozen and len(set(frozen)) == len(frozen)
    assert _freeze(float("nan")) == _freeze(float("nan")) and _freeze(object()) is None


def test_events_alike_in_what_the_rules_read_share_outcomes(cli: Any, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("ruleSets:\n  - name: fatal x\n    match:\n      all:\n        - kind: HealthEvent\n"
                      "          expression: \"event.agent == 'x' && event.metadata['zone'] == 'a'\"\n"
                      "    cordon: {shouldCordon: true}\n")
    base = {"agent": "x", "isFatal": True, "nodeName": "n1", "metadata": {"zone": "a"}}
    events = [{**base, "message": str(index)} for index in range(3)]
    events += [{**base, "metadata": {"zone": "b"}}, {**base, "agent": "y"}, {**base, "metadata": {}},
               {**base, "metadata": {}, "message": "again"}]
    (tmp_path / "events.json").write_text(json.dumps(events))
    result = cli("rules", "test", "--values", str(values), "--events", str(tmp_path / "events.json"),
                 "--format", "json")
    assert result.code == 0, result.err
    assert [item["matched"] for item in json.loads(result.out)] == [["fatal x"]] * 3 + [[]] * 4
    assert "failed on 2 event(s)" in result.err  # each event that failed counts, shared or not
    assert "first: events.json[5]: no matching overload for '_[_]' applied to (null_type, string)" in result.err


def test_event_files_read_before_are_not_parsed_again(cli: Any, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.sentinel.rules import events as event_files

    folder = tmp_path / "events"
    shutil.copytree(FIXTURES / "events", folder)
    (folder / "node.json").write_text(json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "x"}}))
    args = ("rules", "test", "--values", str(FIXTURES / "priorities.yaml"), "--events", str(folder))
    first = cli(*args)
    assert first.code == 0 and "a Node, not a HealthEvent; skipped" in first.err

    def boom(*args: object) -> object:
        raise AssertionError("parsed again")

    monkeypatch.setattr(event_files, "_parse_file", boom)
    again = cli(*args)
    assert (again.code, again.out, again.err) == (first.code, first.out, first.err)
    batch = folder / "batch.json"
    batch.write_text(batch.read_text().replace("gpu-node-1", "gpu-node-9", 1))
    assert "parsed again" in cli(*args).err  # a changed file: the set is read afresh
    monkeypatch.undo()
    changed = cli(*args)
    assert changed.code == 0 and changed.out != first.out
    batch.write_text("[{\"agent\": 1}]")
    for _ in range(2):  # a set with a problem is never remembered
        assert_refused(cli(*args), "batch.json: [0].agent: must be a string")
