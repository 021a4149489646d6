"""NVSentinel Helm values: monitor mode (nothing acts) or quarantine mode (fault-quarantine cordons, taints
and labels by rule sets, behind a circuit breaker), optionally with the lifecycle manager and
post-remediation validation.

Helm replaces lists, so values that set ``fault-quarantine.ruleSets`` must carry every rule set: we always
emit the complete list, the upstream defaults (data/sentinel-rulesets.yaml) with the user's sets replacing
a default of the same name in place and new ones appended. Every value we emit, and every user rule set,
is checked against data/sentinel-values.schema.json (upstream has no schema) and its CEL is parsed, so a
rule that would stop fault-quarantine from starting is refused here with its file, line and path.

The schema is checked by a small validator for exactly the JSON Schema keywords the file uses (the
``jsonschema`` package is a test dependency only; the tests run both on the same inputs).
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path as FilePath
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.yamlio import Document, Path, format_path, load_text, shorten

DATA = FilePath(__file__).resolve().parent / "data"
RULESETS_FILE = DATA / "sentinel-rulesets.yaml"
SCHEMA_FILE = DATA / "sentinel-values.schema.json"

MODES = ("monitor", "quarantine")
DEFAULT_PERCENTAGE = 50
DEFAULT_DURATION = "5m"
MAX_WINDOW_SECONDS = 24 * 3600

# Modules that drain, reboot, reset or run preflight on nodes: off in every mode.
ALWAYS_OFF = ("nodeDrainer", "faultRemediation", "janitor", "janitorProvider", "healthEventsAnalyzer", "preflight")

NVCRE_TEMPLATE = "nvcre-certification-template.yaml"

# A Go text/template rendered by lifecycle-manager (not by Helm) into one NVCRE Certification per test
# group: the group's nodes, the taints its pods must tolerate, and one communication category per test.
_NVCRE_CERTIFICATION = """\
apiVersion: nvcre.nvidia.com/v1alpha1
kind: Certification
metadata:
  name: {{.ValidationRequestName}}-{{.TestGroupName}}
  namespace: {{.Namespace}}
spec:
  target:
    nodeNames:
{{- range .Nodes}}
      - {{.NodeName}}
{{- end}}
    taintSelectors:
{{- range .Tolerations}}
      - key: {{.Key}}
{{- if .Value}}
        value: {{.Value}}
{{- end}}
        effect: {{.Effect}}
{{- end}}
  categories:
{{- range .Tests}}
    - domain: communication
      variant: {{.Name}}
{{- if .BandwidthGBps}}
      options:
        thresholds:
          busBandwidthGBps: "value >= {{.BandwidthGBps}}"
{{- end}}
{{- end}}
"""


def _condition(kind: str) -> dict[str, str]:
    return {"type": kind, "status": "True"}


def _lifecycle_config() -> dict[str, Any]:
    """lifecycle-manager.config: the chart's Job provider and DCGM test (image and command stay the chart's,
    as Helm merges maps), plus the NVCRE provider and its two NCCL tests. Thresholds are left unset: they
    depend on the GPU and fabric, and without one NVCRE passes a test that ran."""
    return {
        "schedulingGate": {"cordon": {"remove": True}},
        "defaultTests": ["dcgm-diag-test"],
        "providers": {
            "k8s-job-provider": {
                "apiGroup": "batch", "version": "v1", "kind": "Job", "resource": "jobs",
                "templateFile": "k8s-job-template.yaml", "supportsTestBatching": False, "retries": 5,
                "timeoutSeconds": 1800, "successfulCondition": _condition("Complete"),
                "failedCondition": _condition("Failed"),
            },
            "nvcre-provider": {
                "apiGroup": "nvcre.nvidia.com", "version": "v1alpha1", "kind": "Certification",
                "resource": "certifications", "templateFile": NVCRE_TEMPLATE, "supportsTestBatching": True,
                "retries": 2, "timeoutSeconds": 5400, "successfulCondition": _condition("Succeeded"),
                "failedCondition": _condition("Failed"),
            },
        },
        "tests": {
            "dcgm-diag-test": {"provider": "k8s-job-provider", "supportsBatchingNodes": False,
                               "minimumNodesPerBatch": 1, "batchFailurePolicy": "fail"},
            "nccl-loopback-nvswitch": {"provider": "nvcre-provider", "supportsBatchingNodes": True,
                                       "minimumNodesPerBatch": 1, "batchFailurePolicy": "fail"},
            # Needs two nodes; a lone node's request skips it instead of failing.
            "nccl-all-reduce": {"provider": "nvcre-provider", "supportsBatchingNodes": True,
                                "minimumNodesPerBatch": 2, "batchFailurePolicy": "ignore"},
        },
        "templates": {NVCRE_TEMPLATE: _NVCRE_CERTIFICATION},
    }


@dataclass(frozen=True)
class Breaker:
    """Circuit breaker settings; None keeps the upstream default (50 %, 5m, no absolute bound)."""

    percentage: int | None = None
    duration: str | None = None
    max_nodes: int | None = None

    def is_default(self) -> bool:
        return self == Breaker()


# ------------------------------------------------------------------------------------------- data


@functools.cache
def _data() -> dict[str, Any]:
    doc = load_text(RULESETS_FILE.read_text(encoding="utf-8"), str(RULESETS_FILE))
    data: dict[str, Any] = doc.data
    return data


@functools.cache
def schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the values we emit; ``$defs/rulesFile`` is a --rules file."""
    loaded: dict[str, Any] = json.loads(SCHEMA_FILE.read_text(encoding="utf-8"))
    return loaded


def default_rule_sets() -> list[dict[str, Any]]:
    """The six upstream default fault-quarantine rule sets (a fresh copy)."""
    return copy.deepcopy(_data()["ruleSets"])


def default_validation_rule_sets() -> list[dict[str, Any]]:
    """The upstream default post-remediation validation rule sets (a fresh copy)."""
    return copy.deepcopy(_data()["validationRuleSets"])


# ----------------------------------------------------------------------------------- the builder


def values(mode: str = "monitor", rules: Sequence[Mapping[str, Any]] = (),  # noqa: PLR0917 (the agreed signature)
           breaker: Breaker | None = None, lifecycle: bool = False, validation: bool = False,
           dry_run: bool = False) -> dict[str, Any]:
    """NVSentinel umbrella-chart values for ``mode``.

    monitor: the monitors keep their chart defaults and every module that acts on nodes is off; only
    ``global.dryRun`` is honoured, and the quarantine-only inputs are refused. quarantine:
    fault-quarantine on with the complete rule set list (defaults, ``rules`` replacing same-named ones),
    the circuit breaker, and with ``lifecycle`` the lifecycle manager (scheduling gate, tests, the NVCRE
    provider), with ``validation`` post-remediation validation (needs ``lifecycle``).
    """
    if mode not in MODES:
        raise InvalidInputError(f"--mode {mode!r}: use one of {', '.join(MODES)}")
    breaker = breaker or Breaker()
    if mode == "monitor":
        given = [flag for flag, on in (("--rules", bool(rules)), ("--lifecycle", lifecycle),
                                       ("--validation", validation),
                                       ("--breaker-percentage/-duration/-max-nodes", not breaker.is_default()))
                 if on]
        if given:
            raise InvalidInputError(f"{given[0]} configures actions, and monitor mode takes none; "
                                    "add --mode quarantine (or drop the flag)")
    if validation and not lifecycle:
        raise InvalidInputError("--validation needs --lifecycle: the lifecycle manager runs the validation "
                                "tests and lifts the cordon when they pass")
    quarantine = mode == "quarantine"
    out: dict[str, Any] = {"global": _global(dry_run, quarantine, lifecycle)}
    if quarantine:
        user = parse_rules(Document("<rules>", list(rules))) if rules else []
        fault_quarantine: dict[str, Any] = {
            "circuitBreaker": _circuit_breaker(breaker),
            "ruleSets": merge_rule_sets(default_rule_sets(), user),
            "validation": {"enabled": validation},
        }
        if validation:
            fault_quarantine["validation"]["ruleSets"] = default_validation_rule_sets()
        out["fault-quarantine"] = fault_quarantine
    if lifecycle:
        out["lifecycle-manager"] = {"config": _lifecycle_config()}
    check_values(Document("<generated values>", out))
    return out


def _global(dry_run: bool, quarantine: bool, lifecycle: bool) -> dict[str, Any]:
    out: dict[str, Any] = {"dryRun": dry_run, "faultQuarantine": {"enabled": quarantine},
                           "lifecycleManager": {"enabled": lifecycle}}
    out.update({name: {"enabled": False} for name in ALWAYS_OFF})
    return out


_DURATION_PART = re.compile(r"([0-9]+(?:\.[0-9]+)?)(h|ms|m|s|us|µs|ns)")
_SECONDS = {"h": 3600.0, "m": 60.0, "s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}


def duration_seconds(text: str) -> float | None:
    """Seconds in a Go duration such as ``1h30m`` (no sign), or None when ``text`` is not one."""
    if not text or len(text) > 64:
        return None
    total, pos = 0.0, 0
    for match in _DURATION_PART.finditer(text):
        if match.start() != pos:
            return None
        total += float(match.group(1)) * _SECONDS[match.group(2)]
        pos = match.end()
    return total if pos == len(text) else None


def _circuit_breaker(breaker: Breaker) -> dict[str, Any]:
    percentage = DEFAULT_PERCENTAGE if breaker.percentage is None else breaker.percentage
    duration = DEFAULT_DURATION if breaker.duration is None else breaker.duration
    if not 0 <= percentage <= 100:
        raise InvalidInputError(f"--breaker-percentage {percentage}: give 0-100 (percent of GPU nodes)")
    if breaker.max_nodes is not None and breaker.max_nodes < 1:
        raise InvalidInputError(f"--breaker-max-nodes {breaker.max_nodes}: give at least 1 (the breaker trips "
                                "when this many nodes were cordoned in the window)")
    if percentage == 0 and breaker.max_nodes is None:
        raise InvalidInputError("--breaker-percentage 0 leaves the breaker without a bound (it refuses to "
                                "start); add --breaker-max-nodes N or give a percentage of at least 1")
    seconds = duration_seconds(duration)
    if seconds is None:
        raise InvalidInputError(f"--breaker-duration {shorten(repr(duration))}: not a Go duration; write e.g. "
                                "5m, 90s or 1h30m")
    if not 1 <= seconds <= MAX_WINDOW_SECONDS:
        raise InvalidInputError(f"--breaker-duration {duration}: give a window from 1s to 24h (the breaker counts "
                                "cordons in one-second buckets)")
    out: dict[str, Any] = {"enabled": True, "percentage": percentage, "duration": duration}
    if breaker.max_nodes is not None:
        out["maxNodes"] = breaker.max_nodes
    return out


# ------------------------------------------------------------------------------------ rule sets

_RULE_SET_ORDER = ("name", "enabled", "version", "priority", "match", "cordon", "taint", "label")


def parse_rules(doc: Document) -> list[dict[str, Any]]:
    """The rule sets of a loaded --rules document (a list, or a mapping with ``ruleSets:``), checked against
    the schema, their CEL parsed and names unique, completed with ``enabled: true``, ``version: "1"`` and
    ``priority: 0`` where left out. Problems raise ``InvalidInputError`` naming file, line and path."""
    base: Path = ()
    if isinstance(doc.data, list):
        _check_schema(doc, "#/$defs/ruleSetList")
        sets = doc.data
    else:
        _check_schema(doc, "#/$defs/rulesFile")
        sets, base = doc.data["ruleSets"], ("ruleSets",)
    _check_unique_names(doc, sets, base)
    for index, rule_set in enumerate(sets):
        _check_cel(doc, rule_set["match"], (*base, index, "match"))
    return [_complete(rule_set) for rule_set in sets]


def _complete(rule_set: Mapping[str, Any]) -> dict[str, Any]:
    full = {"enabled": True, "version": "1", "priority": 0, **copy.deepcopy(dict(rule_set))}
    return {key: full[key] for key in _RULE_SET_ORDER if key in full}


def merge_rule_sets(defaults: Sequence[Mapping[str, Any]], user: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """``defaults`` with each ``user`` set of the same name replacing it in place, other user sets appended
    in order (later sets win priority ties, so user sets win over defaults)."""
    by_name = {rule_set["name"]: rule_set for rule_set in user}
    merged = [copy.deepcopy(dict(by_name.pop(d["name"], d))) for d in defaults]
    merged += [copy.deepcopy(dict(u)) for u in user if u["name"] in by_name]
    return merged


def _where(doc: Document, path: Path) -> str:
    """``file:line: path`` for a loaded file; ``source: path`` for values built in memory (no lines)."""
    return doc.where(path) if doc.lines else f"{doc.source}: {format_path(path)}"


def _check_unique_names(doc: Document, sets: Sequence[Any], base: Path) -> None:
    seen: dict[str, int] = {}
    for index, rule_set in enumerate(sets):
        name = rule_set["name"]
        if name in seen:
            first = _where(doc, (*base, seen[name], "name"))
            raise InvalidInputError(f"{_where(doc, (*base, index, 'name'))}: rule set name {shorten(repr(name))} is "
                                    f"already used ({first}); names must be unique (fault-quarantine keys "
                                    "its actions by name)")
        seen[name] = index


def _check_cel(doc: Document, match: Mapping[str, Any], path: Path) -> None:
    import celpy
    from celpy.celparser import CELParseError

    environment = celpy.Environment()
    for group in ("all", "any"):
        for index, rule in enumerate(match.get(group, [])):
            where = (*path, group, index, "expression")
            try:
                environment.compile(rule["expression"])
            except CELParseError as err:
                excerpt = str(err.args[0]).splitlines()[0] if err.args else ""
                raise InvalidInputError(
                    f"{_where(doc, where)}: invalid CEL at expression line {err.line}, column {err.column} near "
                    f"{shorten(repr(excerpt))}; fault-quarantine would not start with it, fix the syntax") from None
            except RecursionError:
                raise InvalidInputError(f"{_where(doc, where)}: expression nests too deeply to parse; "
                                        "simplify it") from None


# ------------------------------------------------------------------------------ emitted values


def check_values(doc: Document) -> None:
    """Check NVSentinel values as we emit them: the schema, unique rule set names, parseable CEL, and that
    every test named (defaults, validation rule sets) exists in the lifecycle config with a provider."""
    _check_schema(doc, "#")
    data = doc.data
    fault_quarantine = data.get("fault-quarantine")
    tests: dict[str, Any] = data.get("lifecycle-manager", {}).get("config", {}).get("tests", {})
    if fault_quarantine is not None:
        _check_unique_names(doc, fault_quarantine["ruleSets"], ("fault-quarantine", "ruleSets"))
        for index, rule_set in enumerate(fault_quarantine["ruleSets"]):
            _check_cel(doc, rule_set["match"], ("fault-quarantine", "ruleSets", index, "match"))
        validation_sets = fault_quarantine["validation"].get("ruleSets", [])
        base = ("fault-quarantine", "validation", "ruleSets")
        _check_unique_names(doc, validation_sets, base)
        for index, rule_set in enumerate(validation_sets):
            _check_cel(doc, rule_set["match"], (*base, index, "match"))
            if fault_quarantine["validation"]["enabled"]:
                _check_known_tests(doc, rule_set["tests"], tests, (*base, index, "tests"))
    if "lifecycle-manager" in data:
        config = data["lifecycle-manager"]["config"]
        _check_known_tests(doc, config["defaultTests"], tests, ("lifecycle-manager", "config", "defaultTests"))
        for name, test in config["tests"].items():
            if test["provider"] not in config["providers"]:
                where = ("lifecycle-manager", "config", "tests", name, "provider")
                raise InvalidInputError(f"{_where(doc, where)}: provider {test['provider']!r} is not in "
                                        f"lifecycle-manager.config.providers ({', '.join(config['providers'])})")


def _check_known_tests(doc: Document, wanted: Sequence[str], tests: Mapping[str, Any], path: Path) -> None:
    for index, name in enumerate(wanted):
        if name not in tests:
            known = ", ".join(sorted(tests)) or "none: the lifecycle manager is off"
            raise InvalidInputError(f"{_where(doc, (*path, index))}: test {name!r} is not in "
                                    f"lifecycle-manager.config.tests ({known})")


def merge_into_component(component_values: Mapping[str, Any], sentinel_values: Mapping[str, Any]) -> dict[str, Any]:
    """``component_values`` (the nvsentinel component's values) with ``sentinel_values`` (ours, checked
    first) deep-merged over them: mappings merge key by key, everything else, lists included, is replaced
    whole, exactly as Helm layers values files, so ``ruleSets`` stays the complete list we emitted.
    Neither input is modified; key order is the component's, new keys after."""
    check_values(Document("<sentinel values>", copy.deepcopy(dict(sentinel_values))))
    return _deep_merge(component_values, sentinel_values)


def _deep_merge(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = {key: copy.deepcopy(value) for key, value in base.items()}
    for key, value in over.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = _deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


# ------------------------------------------------------------------------- the schema validator

# Keywords the validator implements; anything else in the schema is a bug there (tests check it).
KEYWORDS = frozenset({
    "$schema", "$id", "$defs", "$ref", "title", "description", "x-error",
    "type", "const", "enum", "pattern", "minLength", "maxLength", "minimum", "maximum",
    "items", "minItems", "uniqueItems", "properties", "required", "additionalProperties", "propertyNames",
    "minProperties", "allOf", "anyOf", "not", "if", "then", "else",
})

_Problem = tuple[Path, str]


def _check_schema(doc: Document, pointer: str) -> None:
    problem = _Validator(schema()).check(doc.data, _resolve(schema(), pointer), ())
    if problem is not None:
        path, message = problem
        raise InvalidInputError(f"{_where(doc, path)}: {message}")


def _resolve(root: Mapping[str, Any], pointer: str) -> Mapping[str, Any]:
    node: Any = root
    for part in pointer.removeprefix("#").strip("/").split("/"):
        if part:
            node = node[part]
    return node  # type: ignore[no-any-return]


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    # ECMA-262 `$` (no multiline) matches only at the very end; Python's also before a final newline.
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


_TYPES: dict[str, Any] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool),
    "null": lambda v: v is None,
}
_WRITE = {"object": "a mapping (key: value)", "array": "a list (- item)", "string": "a string (quote it)",
          "boolean": "true or false", "integer": "a whole number", "number": "a number", "null": "null"}


def _got(value: Any) -> str:
    return shorten(repr(value))


class _Validator:
    """First problem of a value against a schema node, in document order, as (path, message)."""

    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root

    def check(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        problem = self._check(value, node, path)
        # x-error explains a failure of this node's own keywords; a deeper field keeps its own message.
        if problem is not None and "x-error" in node and problem[0] == path:
            scalar = value is None or isinstance(value, str | int | float)
            return path, f"{_got(value)} {node['x-error']}" if scalar else node["x-error"]
        return problem

    def _check(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        if "$ref" in node:
            problem = self.check(value, _resolve(self.root, node["$ref"]), path)
            if problem is not None:
                return problem
        expected = node.get("type")
        if expected is not None and not _TYPES[expected](value):
            return path, f"expected {_WRITE[expected]}, got {_got(value)}"
        if "const" in node and not _same(value, node["const"]):
            return path, f"must be {json.dumps(node['const'])}, got {_got(value)}"
        if "enum" in node and not any(_same(value, option) for option in node["enum"]):
            return path, f"value {_got(value)} is not allowed; use one of {', '.join(map(str, node['enum']))}"
        for check in (self._string, self._number, self._array, self._object, self._combined):
            problem = check(value, node, path)
            if problem is not None:
                return problem
        return None

    def _string(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        if not isinstance(value, str):
            return None
        if len(value) < node.get("minLength", 0):
            return path, "must not be empty" if not value else f"is shorter than {node['minLength']} characters"
        if "maxLength" in node and len(value) > node["maxLength"]:
            return path, f"is {len(value)} characters, over the limit of {node['maxLength']}"
        if "pattern" in node and not _pattern(node["pattern"]).search(value):
            return path, f"value {_got(value)} does not match {node['pattern']}"
        return None

    def _number(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        if not _TYPES["number"](value):
            return None
        if "minimum" in node and value < node["minimum"]:
            return path, f"{value} is below the minimum {node['minimum']}"
        if "maximum" in node and value > node["maximum"]:
            return path, f"{value} is above the maximum {node['maximum']}"
        return None

    def _array(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        if not isinstance(value, list):
            return None
        if len(value) < node.get("minItems", 0):
            return path, "must not be an empty list" if not value else f"needs at least {node['minItems']} items"
        if node.get("uniqueItems"):
            for index, item in enumerate(value):
                if any(_same(item, earlier) for earlier in value[:index]):
                    return (*path, index), f"{_got(item)} is listed twice; list it once"
        if "items" in node:
            for index, item in enumerate(value):
                problem = self.check(item, node["items"], (*path, index))
                if problem is not None:
                    return problem
        return None

    def _object(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        if not isinstance(value, dict):
            return None
        properties: Mapping[str, Any] = node.get("properties", {})
        extra = node.get("additionalProperties", True)
        for key in value:
            if "propertyNames" in node:
                problem = self.check(key, node["propertyNames"], (*path, key))
                if problem is not None:
                    return problem
            if key not in properties and extra is False:
                close = difflib.get_close_matches(key, list(properties), n=1, cutoff=0.6)
                hint = f"did you mean {close[0]!r}?" if close else f"allowed fields: {', '.join(properties)}"
                return (*path, key), f"unknown field {key!r}; {hint}"
        for key in node.get("required", []):
            if key not in value:
                return (*path, key), "required field is missing; add it"
        if len(value) < node.get("minProperties", 0):
            return path, f"needs at least {node['minProperties']} field(s)"
        for key, item in value.items():
            sub = properties.get(key, extra if isinstance(extra, dict) else None)
            if sub is not None:
                problem = self.check(item, sub, (*path, key))
                if problem is not None:
                    return problem
        return None

    def _combined(self, value: Any, node: Mapping[str, Any], path: Path) -> _Problem | None:
        for sub in node.get("allOf", []):
            problem = self.check(value, sub, path)
            if problem is not None:
                return problem
        if "anyOf" in node and all(self.check(value, sub, path) is not None for sub in node["anyOf"]):
            return path, "matches none of the allowed forms"
        if "not" in node and self.check(value, node["not"], path) is None:
            return path, "is not allowed here"
        if "if" in node:
            branch = "then" if self.check(value, node["if"], path) is None else "else"
            if branch in node:
                return self.check(value, node[branch], path)
        return None


def _same(left: Any, right: Any) -> bool:
    """JSON equality: true is not 1."""
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    return bool(left == right)
