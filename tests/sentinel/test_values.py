"""``aicr-gen sentinel values``: monitor and quarantine values, checked by our schema and rendered by a chart
that reads them the way NVSentinel's does (helm 3 and 4), down to the fault-quarantine TOML."""

from __future__ import annotations

import copy
import json
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel import values as sentinel
from aicr_gen.yaml import Document, dump, load_text
from tests.conftest import REFERENCE, ROOT, assert_refused, needs, run_process
from tests.consumers import helm_lint, helm_template, validate_objects

CHART = ROOT / "tests" / "fixtures" / "sentinel-chart"
UPSTREAM_FQ_VALUES = (REFERENCE / "nvsentinel" / "distros" / "kubernetes" / "nvsentinel" / "charts"
                      / "fault-quarantine" / "values.yaml")
COMPONENT_VALUES = ROOT / "overlays" / "components" / "nvsentinel" / "values.yaml"
HELMS = ("helm3", "helm4")
DEFAULT_NAMES = [
    "GPU fatal error ruleset",
    "CSP health monitor fatal error ruleset",
    "Syslog fatal error ruleset",
    "NIC health monitor fatal error ruleset",
    "Kubernetes object monitor fatal error ruleset",
    "Preflight check fatal error ruleset",
]
ACTION_SWITCHES = ("faultQuarantine", "nodeDrainer", "faultRemediation", "janitor", "janitorProvider",
                   "healthEventsAnalyzer", "lifecycleManager", "preflight")

# A user file: replaces one default (taints now, higher priority), adds one with any/label/taint.
USER_RULES = """\
ruleSets:
  - name: GPU fatal error ruleset
    priority: 10
    match:
      all:
        - kind: HealthEvent
          expression: "event.agent == 'gpu-health-monitor' && event.isFatal == true"
    cordon: {shouldCordon: true}
    taint: {key: nvidia.com/gpu-error, value: fatal, effect: NoSchedule}
  - name: NVLink degradation
    enabled: true
    version: "1"
    match:
      any:
        - kind: HealthEvent
          expression: "event.checkName == 'GpuNvlinkWatch'"
        - kind: Node
          expression: >-
            'example.com/nvlink-suspect' in node.metadata.labels &&
            node.metadata.labels['example.com/nvlink-suspect'] == 'true'
    cordon: {shouldCordon: false}
    taint: {key: example.com/nvlink, value: degraded, effect: PreferNoSchedule}
    label: {key: example.com/gpu-fault, value: nvlink}
"""


class YAMLSnapshot(SingleFileSnapshotExtension):
    """Snapshots stored as the literal YAML we emit, reviewable in pull requests."""

    _write_mode = WriteMode.TEXT
    file_extension = "yaml"


def schema_validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(sentinel.SCHEMA_FILE.read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def rules_file(tmp_path: Path, text: str, name: str = "rules.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def rendered(helm: str, values: dict[str, Any] | Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The fixture chart rendered with ``values`` (a file is read by helm itself): (kind, name) -> object."""
    docs = helm_template(CHART, helm, values)
    validate_objects(docs)
    return {(doc["kind"], doc["metadata"]["name"]): doc for doc in docs}


def fq_config(objects: dict[tuple[str, str], dict[str, Any]]) -> dict[str, Any]:
    return tomllib.loads(objects[("ConfigMap", "fault-quarantine")]["data"]["config.toml"])


def quarantine(tmp_path: Path, cli: Any, *args: str) -> dict[str, Any]:
    out = tmp_path / "values.yaml"
    result = cli("sentinel", "values", "--mode", "quarantine", *args, "-o", str(out))
    assert result.code == 0, result.err
    loaded: dict[str, Any] = yaml.safe_load(out.read_text(encoding="utf-8"))
    return loaded


# ------------------------------------------------------------------------------------ monitor mode


def test_monitor_values_turn_every_action_off() -> None:
    values = sentinel.values()
    assert set(values) == {"global"}
    assert values["global"]["dryRun"] is False
    assert {name: values["global"][name] for name in ACTION_SWITCHES} == {
        name: {"enabled": False} for name in ACTION_SWITCHES}
    schema_validator().validate(values)


def test_monitor_values_are_pinned(cli: Any, snapshot: Any) -> None:
    result = cli("sentinel", "values")
    assert result.code == 0, result.err
    assert result.out == snapshot(extension_class=YAMLSnapshot)


@pytest.mark.parametrize("mode", sentinel.MODES)
def test_dry_run_is_honoured(mode: str) -> None:
    assert sentinel.values(mode, dry_run=True)["global"]["dryRun"] is True
    assert sentinel.values(mode)["global"]["dryRun"] is False


@pytest.mark.parametrize("flags", [
    ("--breaker-percentage", "10"), ("--breaker-duration", "1m"), ("--breaker-max-nodes", "2"),
    ("--lifecycle",), ("--validation", "--lifecycle"),
])
def test_monitor_mode_refuses_action_flags(cli: Any, tmp_path: Path, flags: tuple[str, ...]) -> None:
    out = tmp_path / "values.yaml"
    assert_refused(cli("sentinel", "values", *flags, "-o", str(out)), "monitor mode takes none", "--mode quarantine")
    assert not out.exists()


def test_monitor_mode_refuses_rules(cli: Any, tmp_path: Path) -> None:
    assert_refused(cli("sentinel", "values", "--rules", str(rules_file(tmp_path, USER_RULES))),
                   "--rules configures actions")


@pytest.mark.parametrize("helm", HELMS)
def test_monitor_values_render_no_quarantine(helm: str) -> None:
    objects = rendered(helm, sentinel.values(dry_run=True))
    assert objects == {}  # every module the fixture carries is switched off


# --------------------------------------------------------------------------------- quarantine mode


def test_quarantine_values_validate_against_the_schema(tmp_path: Path) -> None:
    user = sentinel.parse_rules(load_text(USER_RULES, "rules.yaml"))
    validator = schema_validator()
    for values in (
        sentinel.values("quarantine"),
        sentinel.values("quarantine", rules=user, breaker=sentinel.Breaker(0, "90s", 4), lifecycle=True,
                        validation=True, dry_run=True),
        sentinel.values("quarantine", lifecycle=True),
    ):
        assert sorted(validator.iter_errors(values), key=str) == []
        assert values["global"]["faultQuarantine"] == {"enabled": True}
        assert all(values["global"][name] == {"enabled": False} for name in sentinel.ALWAYS_OFF)


@needs(UPSTREAM_FQ_VALUES)
def test_the_default_rule_sets_are_upstreams() -> None:
    upstream = yaml.safe_load(UPSTREAM_FQ_VALUES.read_text(encoding="utf-8"))["ruleSets"]
    ours = [{key: value for key, value in rule_set.items() if key != "priority"}
            for rule_set in sentinel.default_rule_sets()]
    assert [rule_set["name"] for rule_set in ours] == DEFAULT_NAMES
    assert ours == upstream


def test_a_user_rule_set_replaces_the_default_of_its_name(tmp_path: Path, cli: Any) -> None:
    values = quarantine(tmp_path, cli, "--rules", str(rules_file(tmp_path, USER_RULES)))
    sets = values["fault-quarantine"]["ruleSets"]
    assert [s["name"] for s in sets] == [*DEFAULT_NAMES, "NVLink degradation"]
    gpu = sets[0]
    assert gpu["priority"] == 10
    assert gpu["taint"] == {"key": "nvidia.com/gpu-error", "value": "fatal", "effect": "NoSchedule"}
    assert gpu["match"]["all"] == [{"kind": "HealthEvent",
                                    "expression": "event.agent == 'gpu-health-monitor' && event.isFatal == true"}]
    assert (gpu["enabled"], gpu["version"]) == (True, "1")  # completed where the user left them out
    assert sets[1:6] == sentinel.default_rule_sets()[1:]


def test_a_default_is_switched_off_by_name_and_keeps_its_place() -> None:
    off = {"name": "Syslog fatal error ruleset", "enabled": False,
           "match": {"all": [{"kind": "HealthEvent", "expression": "false"}]}, "cordon": {"shouldCordon": True}}
    sets = sentinel.values("quarantine", rules=[off])["fault-quarantine"]["ruleSets"]
    assert [s["name"] for s in sets] == DEFAULT_NAMES
    assert [s["enabled"] for s in sets] == [True, True, False, True, True, True]


def test_a_bare_list_of_rule_sets_is_accepted(tmp_path: Path, cli: Any) -> None:
    bare = yaml.safe_dump(yaml.safe_load(USER_RULES)["ruleSets"])
    values = quarantine(tmp_path, cli, "--rules", str(rules_file(tmp_path, bare)))
    assert [s["name"] for s in values["fault-quarantine"]["ruleSets"]][-1] == "NVLink degradation"


@pytest.mark.parametrize("helm", HELMS)
def test_helm_renders_every_rule_set_into_toml(helm: str, tmp_path: Path, cli: Any) -> None:
    values = quarantine(tmp_path, cli, "--rules", str(rules_file(tmp_path, USER_RULES)), "--lifecycle",
                        "--validation")
    objects = rendered(helm, tmp_path / "values.yaml")
    config = fq_config(objects)
    sets = config["rule-sets"]
    # the chart's own default list is gone: Helm replaced it with our complete one
    assert [s["name"] for s in sets] == [*DEFAULT_NAMES, "NVLink degradation"]
    for ours, toml in zip(values["fault-quarantine"]["ruleSets"], sets, strict=True):
        assert (toml["enabled"], toml["version"], toml["priority"]) == (ours["enabled"], ours["version"],
                                                                       ours["priority"])
        assert toml["cordon"] == ours["cordon"]
        assert toml.get("taint") == ours.get("taint")
        assert toml.get("label") == ours.get("label")
        for group in ("all", "any"):
            assert toml["match"].get(group, []) == ours["match"].get(group, [])
    assert config["circuitBreaker"] == {"percentage": 50, "duration": "5m"}
    assert config["validation"]["ruleSets"][0]["tests"] == ["dcgm-diag-test"]
    args = objects[("Deployment", "fault-quarantine")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--dry-run=false" in args
    assert "--circuit-breaker-enabled=true" in args
    lifecycle = yaml.safe_load(objects[("ConfigMap", "lifecycle-manager-config")]["data"]["config.yaml"])
    nvcre = lifecycle["providers"]["nvcre-provider"]
    assert (nvcre["apiGroup"], nvcre["version"], nvcre["kind"]) == ("nvcre.nvidia.com", "v1alpha1", "Certification")
    assert nvcre["successfulCondition"] == {"type": "Succeeded", "status": "True"}
    assert set(lifecycle["tests"]) == {"dcgm-diag-test", "nccl-loopback-nvswitch", "nccl-all-reduce"}
    assert lifecycle["tests"]["dcgm-diag-test"]["image"] == "registry.invalid/dcgm:fixture"  # the chart's, kept
    templates = objects[("ConfigMap", "lifecycle-manager-templates")]["data"]
    assert set(templates) == {"k8s-job-template.yaml", sentinel.NVCRE_TEMPLATE}
    assert helm_lint(CHART, helm, values)


@pytest.mark.parametrize("helm", HELMS)
def test_breaker_flags_land_in_the_breaker_keys(helm: str, tmp_path: Path, cli: Any) -> None:
    values = quarantine(tmp_path, cli, "--breaker-percentage", "0", "--breaker-duration", "1h30m",
                        "--breaker-max-nodes", "4", "--dry-run")
    assert values["fault-quarantine"]["circuitBreaker"] == {"enabled": True, "percentage": 0,
                                                            "duration": "1h30m", "maxNodes": 4}
    objects = rendered(helm, tmp_path / "values.yaml")
    assert fq_config(objects)["circuitBreaker"] == {"percentage": 0, "duration": "1h30m", "maxNodes": 4}
    args = objects[("Deployment", "fault-quarantine")]["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--dry-run=true" in args
    assert "validation" not in fq_config(objects)  # off unless asked for


@pytest.mark.parametrize(("flags", "fragment"), [
    (("--breaker-percentage", "101"), "give 0-100"),
    (("--breaker-percentage", "-1"), "give 0-100"),
    (("--breaker-percentage", "0"), "add --breaker-max-nodes"),
    (("--breaker-max-nodes", "0"), "give at least 1"),
    (("--breaker-duration", "5 m"), "not a Go duration"),
    (("--breaker-duration=-5m",), "not a Go duration"),
    (("--breaker-duration", "0s"), "from 1s to 24h"),
    (("--breaker-duration", "25h"), "from 1s to 24h"),
    (("--validation",), "--validation needs --lifecycle"),
])
def test_bad_breaker_and_mode_flags_are_refused(cli: Any, tmp_path: Path, flags: tuple[str, ...],
                                                fragment: str) -> None:
    out = tmp_path / "values.yaml"
    assert_refused(cli("sentinel", "values", "--mode", "quarantine", *flags, "-o", str(out)), fragment)
    assert not out.exists()


# ------------------------------------------------------------------------------------ hostile input

HOSTILE_EXPRESSIONS = [
    "event.message.contains('\"\"\"') && event.isFatal == true",
    "event.message == '{{ .Values.global.dryRun }}' || event.message.contains('{{- fail \"x\" }}')",
    "event.message.matches('^\\\\d+ \\\\\\\\ back$') && event.agent != 'tab\there'",
    "event.message.contains('ünïcödé ✓ \\u2028') && event.nodeName.startsWith('node-')",
]


@pytest.mark.parametrize("helm", HELMS)
def test_hostile_expressions_arrive_intact_in_toml(helm: str, tmp_path: Path, cli: Any) -> None:
    rule_sets = [{"name": f"hostile {i} \"quoted\" {{{{ x }}}} \\", "match": {"all": [
                  {"kind": "HealthEvent", "expression": expression}]}, "cordon": {"shouldCordon": True}}
                 for i, expression in enumerate(HOSTILE_EXPRESSIONS)]
    values = quarantine(tmp_path, cli, "--rules", str(rules_file(tmp_path, json.dumps({"ruleSets": rule_sets}))))
    assert [s["match"]["all"][0]["expression"] for s in values["fault-quarantine"]["ruleSets"][6:]] == \
        HOSTILE_EXPRESSIONS
    sets = fq_config(rendered(helm, tmp_path / "values.yaml"))["rule-sets"][len(DEFAULT_NAMES):]
    assert [s["name"] for s in sets] == [r["name"] for r in rule_sets]
    for rule_set, expression in zip(sets, HOSTILE_EXPRESSIONS, strict=True):
        assert rule_set["match"]["all"][0]["expression"] == expression


@pytest.mark.parametrize("helm", HELMS)
def test_a_multi_line_expression_would_break_the_chart(helm: str) -> None:
    """Why we refuse line breaks: the chart puts the expression's later lines at column 0 of the ConfigMap's
    config.toml block, which ends the block (upstream's template does the same)."""
    values = sentinel.values("quarantine")
    values["fault-quarantine"]["ruleSets"][0]["match"]["all"][0]["expression"] = "event.isFatal == true &&\ntrue"
    with pytest.raises(AssertionError, match="YAML parse error"):
        helm_template(CHART, helm, values)
    with pytest.raises(InvalidInputError, match=r"ruleSets\[0\]\.match\.all\[0\]\.expression: .* spans several"):
        sentinel.check_values(Document("<values>", values))


@pytest.mark.parametrize(("text", "where", "fragment"), [
    ("- name: a\n  match:\n    all:\n      - kind: HealthEvent\n        expression: |\n          a &&\n"
     "          b\n  cordon: {shouldCordon: true}\n", "rules.yaml:5: [0].match.all[0].expression",
     "spans several lines"),
    ('- name: a\n  match: {all: [{kind: HealthEvent, expression: "a\\x07"}]}\n  cordon: {shouldCordon: true}\n',
     "rules.yaml:2: [0].match.all[0].expression", "control character"),
    ('- name: a\n  match: {all: [{kind: HealthEvent, expression: "  "}]}\n  cordon: {shouldCordon: true}\n',
     "rules.yaml:2: [0].match.all[0].expression", "is blank"),
    ('- name: a\n  match: {all: [{kind: HealthEvent, expression: "event.agent =="}]}\n'
     "  cordon: {shouldCordon: true}\n", "rules.yaml:2: [0].match.all[0].expression", "invalid CEL"),
    ('- name: "a\\nb"\n  match: {all: [{kind: HealthEvent, expression: "true"}]}\n  cordon: {shouldCordon: true}\n',
     "rules.yaml:1: [0].name", "must be one line"),
    ("- name: a\n  match: {all: [{kind: Event, expression: 'true'}]}\n  cordon: {shouldCordon: true}\n",
     "rules.yaml:2: [0].match.all[0].kind", "use one of HealthEvent, Node"),
    ("- name: a\n  match: {}\n  cordon: {shouldCordon: true}\n", "rules.yaml:2: [0].match", "needs all:"),
    ("- name: a\n  match: {all: []}\n  cordon: {shouldCordon: true}\n", "rules.yaml:2: [0].match.all",
     "must not be an empty list"),
    ("- name: a\n  match: {al: [{kind: Node, expression: 'true'}]}\n  cordon: {shouldCordon: true}\n",
     "rules.yaml:2: [0].match.al", "did you mean 'all'?"),
    ("- name: a\n  match: {all: [{kind: Node, expression: 'true'}]}\n", "rules.yaml:1: [0].cordon",
     "required field is missing"),
    ("- name: a\n  version: 1\n  match: {all: [{kind: Node, expression: 'true'}]}\n  cordon: {shouldCordon: true}\n",
     "rules.yaml:2: [0].version", 'a quoted number such as "1"'),
    ("- name: a\n  match: {all: [{kind: Node, expression: 'true'}]}\n  cordon: {shouldCordon: true}\n"
     "  taint: {key: k, value: v, effect: NoEvict}\n", "rules.yaml:4: [0].taint.effect", "NoSchedule"),
    ("- name: a\n  match: {all: [{kind: Node, expression: 'true'}]}\n  cordon: {shouldCordon: true}\n"
     "  label: {key: 'bad key', value: v}\n", "rules.yaml:4: [0].label.key", "not a Kubernetes label"),
    ("- name: a\n  priority: -1\n  match: {all: [{kind: Node, expression: 'true'}]}\n"
     "  cordon: {shouldCordon: true}\n", "rules.yaml:2: [0].priority", "below the minimum 0"),
    ("- name: a\n  match: {all: [{kind: Node, expression: 'true'}]}\n  cordon: {shouldCordon: true}\n"
     "- name: a\n  match: {all: [{kind: Node, expression: 'false'}]}\n  cordon: {shouldCordon: true}\n",
     "rules.yaml:4: [1].name", "rules.yaml:1: [0].name); names must be unique"),
    ("ruleSets: []\n", "rules.yaml:1: ruleSets", "must not be an empty list"),
    ("rulesets: []\n", "rules.yaml:1: rulesets", "did you mean 'ruleSets'?"),
])
def test_bad_rules_are_refused_with_file_line_and_path(cli: Any, tmp_path: Path, text: str, where: str,
                                                       fragment: str) -> None:
    rules = rules_file(tmp_path, text)
    result = cli("sentinel", "values", "--mode", "quarantine", "--rules", str(rules), "-o", str(tmp_path / "v.yaml"))
    assert_refused(result, f"{tmp_path}/{where}", fragment)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["rules.yaml"]


def test_missing_rules_file_is_refused(cli: Any, tmp_path: Path) -> None:
    assert_refused(cli("sentinel", "values", "--mode", "quarantine", "--rules", str(tmp_path / "nope.yaml")),
                   "--rules", "cannot read")


# ------------------------------------------------------------------------------- the schema check


def test_the_schema_is_draft_2020_12() -> None:
    schema = sentinel.schema()
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(schema)


def test_a_pattern_end_is_the_end_of_the_text() -> None:
    """ECMA-262 `$` (which the schema means) never matches before a final newline, as Python's does."""
    case = {"name": "x\n", "match": {"all": [{"kind": "Node", "expression": "t"}]}, "cordon": {"shouldCordon": True}}
    with pytest.raises(InvalidInputError, match=r"\[0\]\.name: 'x\\n' must be one line"):
        sentinel.parse_rules(Document("<case>", [case]))


def test_emitted_values_with_a_wrong_switch_are_refused() -> None:
    values = sentinel.values("quarantine")
    broken = copy.deepcopy(values)
    broken["global"]["nodeDrainer"]["enabled"] = True
    with pytest.raises(InvalidInputError, match=r"global\.nodeDrainer\.enabled: True must stay false"):
        sentinel.check_values(Document("<values>", broken))
    assert not schema_validator().is_valid(broken)
    orphan = copy.deepcopy(values)
    orphan["global"]["faultQuarantine"]["enabled"] = False
    with pytest.raises(InvalidInputError, match=r"present exactly when global\.faultQuarantine\.enabled"):
        sentinel.check_values(Document("<values>", orphan))
    assert not schema_validator().is_valid(orphan)


# ------------------------------------------------------------------------------- output and templates


def test_output_file_reads_back_as_the_values(cli: Any, tmp_path: Path) -> None:
    values = quarantine(tmp_path, cli, "--lifecycle", "--validation")
    assert values == sentinel.values("quarantine", lifecycle=True, validation=True)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["values.yaml"]


def test_values_are_deterministic_across_processes(tmp_path: Path) -> None:
    rules = str(rules_file(tmp_path, USER_RULES))
    args = ("sentinel", "values", "--mode", "quarantine", "--rules", rules, "--lifecycle", "--validation")
    first = run_process(*args, env={"PYTHONHASHSEED": "1"})
    second = run_process(*args, env={"PYTHONHASHSEED": "2"})
    assert first.code == 0, first.err
    assert first.out == second.out
    assert first.out == dump(sentinel.values("quarantine", rules=sentinel.parse_rules(
        load_text(USER_RULES, rules)), lifecycle=True, validation=True))


def test_the_nvcre_template_renders_a_certification(tmp_path: Path) -> None:
    """lifecycle-manager renders the template with Go text/template; helm's tpl is that engine."""
    chart = tmp_path / "tpl"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tpl\nversion: 0.1.0\n", encoding="utf-8")
    context = ('(dict "ValidationRequestName" "node-a-validation-1" "TestGroupName" "nccl-group-1" "Namespace" '
               '"nvsentinel" "Nodes" (list (dict "NodeName" "node-a") (dict "NodeName" "node-b")) "Tolerations" '
               '(list (dict "Key" "node.kubernetes.io/unschedulable" "Value" "" "Effect" "NoSchedule")) "Tests" '
               '(list (dict "Name" "nccl-all-reduce" "BandwidthGBps" "700") (dict "Name" "nccl-loopback-nvswitch" '
               '"BandwidthGBps" "")) "Template" .Template)')
    (chart / "templates" / "cert.yaml").write_text(f"{{{{ tpl .Values.template {context} }}}}\n", encoding="utf-8")
    template = sentinel.values("quarantine", lifecycle=True)["lifecycle-manager"]["config"]["templates"]
    [certification] = helm_template(chart, "helm3", {"template": template[sentinel.NVCRE_TEMPLATE]})
    assert certification == {
        "apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
        "metadata": {"name": "node-a-validation-1-nccl-group-1", "namespace": "nvsentinel"},
        "spec": {
            "target": {"nodeNames": ["node-a", "node-b"],
                       "taintSelectors": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}]},
            "categories": [
                {"domain": "communication", "variant": "nccl-all-reduce",
                 "options": {"thresholds": {"busBandwidthGBps": "value >= 700"}}},
                {"domain": "communication", "variant": "nccl-loopback-nvswitch"},
            ],
        },
    }
