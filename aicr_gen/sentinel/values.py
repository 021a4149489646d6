"""NVSentinel Helm values: monitor mode (nothing acts) or quarantine mode (fault-quarantine cordons, taints
and labels by rule sets, behind a circuit breaker), optionally with the lifecycle manager and
post-remediation validation.

Helm replaces lists, so values that set ``fault-quarantine.ruleSets`` must carry every rule set: we always
emit the complete list, the upstream defaults (data/sentinel-rulesets.yaml) with the user's sets replacing
a default of the same name in place and new ones appended. Every value we emit, and every user rule set,
is checked against data/sentinel-values.schema.json (upstream has no schema) and its CEL is parsed, so a
rule that would stop fault-quarantine from starting is refused here with its file, line and path.

The schema is checked with ``jsonschema``; the first problem in document order is reported with the
schema node's ``x-error`` message or our wording of the failed keyword, with its file, line and path.
"""

from __future__ import annotations

import copy
import difflib
import functools
import json
import re
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aicr_gen.cel import durations
from aicr_gen.errors import InvalidInputError
from aicr_gen.limits import MAX_RULE_SETS, MAX_WINDOW_SECONDS
from aicr_gen.yaml import Document, FieldPath, format_path, load_text, shorten

DATA = Path(__file__).resolve().parent / "data"
RULESETS_FILE = DATA / "sentinel-rulesets.yaml"
SCHEMA_FILE = DATA / "sentinel-values.schema.json"

MODES = ("monitor", "quarantine")
DEFAULT_PERCENTAGE = 50
DEFAULT_DURATION = "5m"

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
    seconds = durations.seconds(duration)
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
    base: FieldPath = ()
    if isinstance(doc.data, list):
        _check_schema(doc, "#/$defs/ruleSetList")
        sets = doc.data
    else:
        _check_schema(doc, "#/$defs/rulesFile")
        sets, base = doc.data["ruleSets"], ("ruleSets",)
    if len(sets) > MAX_RULE_SETS:
        raise _error(doc, base, f"{len(sets)} rule sets, over the limit of {MAX_RULE_SETS} (they land in "
                                "NVSentinel's fault-quarantine ConfigMap, at most 1 MiB); merge some")
    _check_unique_names(doc, sets, base)
    for index, rule_set in enumerate(sets):
        _check_cel(doc, rule_set["match"], (*base, index, "match"), lint=rule_set.get("enabled", True) is not False)
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


def _where(doc: Document, path: FieldPath) -> str:
    """``file:line: path`` for a loaded file; ``source: path`` for values built in memory (no lines)."""
    return doc.where(path) if doc.lines else f"{doc.source}: {format_path(path)}"


def _error(doc: Document, path: FieldPath, message: str) -> InvalidInputError:
    """An input error: ``message`` about ``path`` (``_where``)."""
    return doc.error(path, message) if doc.lines else InvalidInputError(f"{_where(doc, path)}: {message}")


def _check_unique_names(doc: Document, sets: Sequence[Any], base: FieldPath) -> None:
    seen: dict[str, int] = {}
    for index, rule_set in enumerate(sets):
        name = rule_set["name"]
        if name in seen:
            first = _where(doc, (*base, seen[name], "name"))
            raise _error(doc, (*base, index, "name"), f"rule set name {shorten(repr(name))} is already used "
                                                      f"({first}); names must be unique (fault-quarantine keys its "
                                                      "actions by name)")
        seen[name] = index


def _check_cel(doc: Document, match: Mapping[str, Any], path: FieldPath, *, lint: bool = False) -> None:
    """Compile every rule as fault-quarantine does when it starts (its parser, limits and type checker). With
    ``lint`` (a user's rule set that is enabled), a rule that can never do what it says is refused too, at its
    line (``sentinel_rules.lint_rule``: it reads a field a HealthEvent or a cached Node does not have, compares
    a field with a value of another type, ...): fault-quarantine starts with it, and it never acts."""
    from aicr_gen.cel import CelCompileError, CelLimitError, Environment
    from aicr_gen.cel.environments import nvsentinel_rule
    from aicr_gen.sentinel.rules.lints import lint_rule

    environments: dict[str, Environment] = {}
    for group in ("all", "any"):
        for index, rule in enumerate(match.get(group, [])):
            where = (*path, group, index, "expression")
            variable = "node" if rule.get("kind") == "Node" else "event"
            environment = environments.setdefault(variable, nvsentinel_rule(variable))
            try:
                program = environment.compile(rule["expression"])
            except (CelCompileError, CelLimitError) as err:
                raise _error(doc, where, f"invalid CEL: {err}; fault-quarantine would not start with it, fix the "
                                         "expression") from None
            problems = lint_rule(rule.get("kind", "HealthEvent"), program) if lint else []
            if problems:
                raise _error(doc, where, f"{problems[0]}; fix the expression, or disable the rule set "
                                         "(enabled: false)")


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
                raise _error(doc, where, f"provider {test['provider']!r} is not in lifecycle-manager.config."
                                         f"providers ({', '.join(config['providers'])})")


def _check_known_tests(doc: Document, wanted: Sequence[str], tests: Mapping[str, Any], path: FieldPath) -> None:
    for index, name in enumerate(wanted):
        if name not in tests:
            known = ", ".join(sorted(tests)) or "none: the lifecycle manager is off"
            raise _error(doc, (*path, index), f"test {name!r} is not in lifecycle-manager.config.tests ({known})")


# ------------------------------------------------------------------------------- schema checking

_WRITE = {"object": "a mapping (key: value)", "array": "a list (- item)", "string": "a string (quote it)",
          "boolean": "true or false", "integer": "a whole number", "number": "a number", "null": "null"}
# Our wording of a failed keyword (its value, the keyword's own value); x-error and key-naming ones aside.
_MESSAGES: dict[str, Callable[[Any, Any], str]] = {
    "type": lambda value, want: f"expected {_WRITE.get(want, want)}, got {_got(value)}",
    "const": lambda value, want: f"must be {json.dumps(want)}, got {_got(value)}",
    "enum": lambda value, want: f"value {_got(value)} is not allowed; use one of {', '.join(map(str, want))}",
    "minLength": lambda value, want: "must not be empty" if not value else f"is shorter than {want} characters",
    "maxLength": lambda value, want: f"is {len(value)} characters, over the limit of {want}",
    "pattern": lambda value, want: f"value {_got(value)} does not match {want}",
    "minimum": lambda value, want: f"{value} is below the minimum {want}",
    "maximum": lambda value, want: f"{value} is above the maximum {want}",
    "minItems": lambda value, want: "must not be an empty list" if not value else f"needs at least {want} items",
    "minProperties": lambda value, want: f"needs at least {want} field(s)",
    "anyOf": lambda value, want: "matches none of the allowed forms",
    "not": lambda value, want: "is not allowed here",
}
# Schema-path steps followed by a name (or an index: a list of schemas), and those that move to a child value.
_NAMED = frozenset({"properties", "patternProperties", "dependentSchemas", "$defs"})
_INTO_CHILD = frozenset({"properties", "patternProperties", "prefixItems", "items", "additionalProperties",
                         "propertyNames", "contains", "unevaluatedItems", "unevaluatedProperties"})


def _check_schema(doc: Document, pointer: str) -> None:
    """Refuse ``doc`` with its first problem against the schema node at ``pointer`` (``#``: the values,
    ``#/$defs/...``: a part) in document order, as ``file:line: field.path: message``."""
    validator = _validator(pointer)
    keys: dict[int, dict[Any, int]] = {}
    problems = [_problem(validator.schema, doc.data, keys, error) for error in validator.iter_errors(doc.data)]
    if problems:  # min keeps the first of equals, and iter_errors follows the schema's order
        _, path, message = min(problems, key=lambda problem: problem[0])
        raise _error(doc, path, message)


@functools.cache
def _validator(pointer: str) -> Any:
    """A jsonschema validator of the draft ``$schema`` names, for the node at ``pointer``, keeping two
    readings: ``$`` in a pattern is ECMA-262's (the very end) and 1.0 is no integer (TOML would get 1.0)."""
    from jsonschema import validators  # type: ignore[import-untyped]  # lazily: CLI start-up

    root = schema()
    draft = validators.validator_for(root)
    strict = validators.extend(draft, validators={"pattern": _ecma_pattern}, type_checker=draft.TYPE_CHECKER.redefine(
        "integer", lambda _, value: isinstance(value, int) and not isinstance(value, bool)))
    if pointer == "#":
        return strict(root)
    part: dict[str, Any] = {key: root[key] for key in ("$schema", "$id", "$defs") if key in root}
    return strict({**part, "$ref": pointer})


@functools.cache
def _pattern(pattern: str) -> re.Pattern[str]:
    # ECMA-262 `$` (no multiline) matches only at the very end; Python's also before a final newline.
    return re.compile(re.sub(r"(?<!\\)\$$", r"\\Z", pattern))


def _ecma_pattern(validator: Any, pattern: str, instance: Any, node: Any) -> Iterator[Any]:
    from jsonschema.exceptions import ValidationError  # type: ignore[import-untyped]

    if isinstance(instance, str) and not _pattern(pattern).search(instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _resolve(root: Mapping[str, Any], pointer: str) -> Mapping[str, Any]:
    node: Any = root
    for part in pointer.removeprefix("#").strip("/").split("/"):
        if part:
            node = node[part]
    return node  # type: ignore[no-any-return]


def _position(data: Any, path: FieldPath, keys: dict[int, dict[Any, int]]) -> tuple[int, ...]:
    """Where ``path`` lies in ``data``: each step's index among its siblings (a missing key after them);
    ``keys`` keeps each mapping's key order by id while its document is checked."""
    out: list[int] = []
    for step in path:
        if isinstance(data, dict):
            order = keys.get(id(data))
            if order is None:
                order = keys[id(data)] = {key: at for at, key in enumerate(data)}
            out.append(order.get(step, len(data)))
            data = data.get(step)
        elif isinstance(data, list) and isinstance(step, int) and step < len(data):
            out.append(step)
            data = data[step]
    return tuple(out)


def _got(value: Any) -> str:
    return shorten(repr(value))


def _walk(root: Mapping[str, Any], steps: Sequence[Any]) -> tuple[str | None, list[Any], bool]:
    """Follow a jsonschema error's schema path (which leaves ``$ref`` out) to its failed keyword: the
    ``x-error`` of the outermost node there that checks the failing value, the applicators passed since that
    value was entered (allOf, then, ...), and whether the value is a key (propertyNames)."""
    node: Any = root
    applied: list[Any] = []
    x_error, key, index = root.get("x-error"), False, 0
    while True:
        while isinstance(node, dict) and index < len(steps) and steps[index] not in node and "$ref" in node:
            node = _resolve(root, node["$ref"])
            x_error = x_error or node.get("x-error")
        if index >= len(steps) - 1:
            return x_error, applied, key
        step, index = steps[index], index + 1
        node = node[step]
        if step in _NAMED or isinstance(node, list):
            node, index = node[steps[index]], index + 1
        if step in _INTO_CHILD:
            x_error, applied, key = None, [], step == "propertyNames"
        else:
            applied.append(step)
        x_error = x_error or (node.get("x-error") if isinstance(node, dict) else None)


def _problem(root: Mapping[str, Any], data: Any, keys: dict[int, dict[Any, int]],
             error: Any) -> tuple[tuple[Any, ...], FieldPath, str]:
    """Where a jsonschema error stands in the document, the field it is about and its message: the
    ``x-error`` of the schema node that checks the value when there is one, else our wording of the keyword.

    The order: the value met first in the document first, its own keywords before its children's, except a
    then/else (a condition across fields) after them; at one value, keywords before those of an allOf."""
    value, keyword, wanted = error.instance, error.validator, error.validator_value
    x_error, applied, key = _walk(root, error.absolute_schema_path)
    raw: FieldPath = tuple(error.absolute_path)
    path = (*raw, value) if key else raw  # jsonschema names the mapping of a bad key
    message = None
    # Problems that jsonschema reports at the mapping or list are about one field or item in it.
    if keyword == "required":
        path, message = (*path, next(k for k in wanted if k not in value)), "required field is missing; add it"
    elif keyword == "additionalProperties":  # false (a schema there reports its own keywords)
        known = list(error.schema.get("properties", {}))
        extra = next(k for k in value if k not in known)
        close = difflib.get_close_matches(extra, known, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"allowed fields: {', '.join(known)}"
        path, message = (*path, extra), f"unknown field {extra!r}; {hint}"
    elif keyword == "uniqueItems":
        seen: set[str] = set()
        for at, item in enumerate(value):
            text = json.dumps(item, sort_keys=True, default=str)
            if text in seen:
                path, message = (*path, at), f"{_got(item)} is listed twice; list it once"
                break
            seen.add(text)
    if message is None and x_error is not None:
        scalar = value is None or isinstance(value, str | int | float)
        message = f"{_got(value)} {x_error}" if scalar else x_error
    if message is None:
        wording = _MESSAGES.get(keyword)
        message = wording(value, wanted) if wording else shorten(error.message, 120)
    late = any(step in ("then", "else") for step in applied)
    order = ((*_position(data, raw, keys), sys.maxsize if late else -1), len(applied), _position(data, path, keys))
    return order, path, message


# ------------------------------------------------------------------------------ pool-limited rule sets


def node_match(selectors: Sequence[Mapping[str, str]]) -> str:
    """A Node rule's CEL expression that holds on a node matching any of ``selectors`` (equality selectors:
    every entry). Label keys are quoted CEL strings, indexed with ``[...]`` (they hold dots and slashes), and
    looked up only where present, so a node without the label does not match rather than fail the rule."""
    from aicr_gen.cel.strings import quote

    def entry(key: str, value: str) -> str:
        return f"{quote(key)} in node.metadata.labels && node.metadata.labels[{quote(key)}] == {quote(value)}"

    terms = [" && ".join(entry(key, selector[key]) for key in sorted(selector)) for selector in selectors]
    either = terms[0] if len(terms) == 1 else " || ".join(f"({term})" for term in terms)
    return f"has(node.metadata.labels) && ({either})"


def limit_rule_set(rule_set: Mapping[str, Any], selectors: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """``rule_set`` narrowed to the nodes ``selectors`` match: one more Node rule in ``match.all``.
    fault-quarantine runs ``match.any`` and ``match.all`` as two evaluators that each act on their own, so a
    term in ``all`` narrows only the ``all`` branch: ``any`` rules of one kind are folded into a single ``all``
    rule (``(a) || (b)``) first; ``any`` rules of both kinds, or beside ``all`` rules, cannot be, and are refused."""
    limited = copy.deepcopy(dict(rule_set))
    match = limited["match"]
    alternatives = match.pop("any", [])
    if alternatives:
        kinds = {rule["kind"] for rule in alternatives}
        if len(kinds) > 1 or match.get("all"):
            beside = "of both kinds" if len(kinds) > 1 else "beside match.all"
            raise InvalidInputError(f"rule set {rule_set['name']!r} has match.any rules {beside}, which act on their "
                                    "own and no added rule can narrow; write it with match.all alone to limit it to "
                                    "pools")
        expression = " || ".join(f"({rule['expression']})" for rule in alternatives)
        match["all"] = [*match.get("all", []), {"kind": kinds.pop(), "expression": expression}]
    match["all"] = [*match.get("all", []), {"kind": "Node", "expression": node_match(selectors)}]
    return limited


def limit_rule_sets(out: Mapping[str, Any], limits: Mapping[str, Sequence[Mapping[str, str]]]) -> dict[str, Any]:
    """NVSentinel values ``out`` with each rule set named in ``limits`` (name -> node selectors) narrowed
    (``limit_rule_set``) and the values checked again; a name that is no rule set is an error."""
    values = copy.deepcopy(dict(out))
    rule_sets = values.get("fault-quarantine", {}).get("ruleSets", [])
    names = [rule_set["name"] for rule_set in rule_sets]
    for name in limits:
        if name not in names:
            raise InvalidInputError(f"{name!r} is not a rule set of these values; name one of "
                                    f"{', '.join(repr(found) for found in names)}")
    values["fault-quarantine"]["ruleSets"] = [limit_rule_set(rule_set, limits[rule_set["name"]])
                                              if rule_set["name"] in limits else rule_set for rule_set in rule_sets]
    check_values(Document("<generated values>", values))
    return values
