"""NVSentinel rules, offline: load fault-quarantine rule sets, present HealthEvents to CEL the way
NVSentinel does, evaluate them against Nodes, and resolve the actions as fault-quarantine would.

What NVSentinel does, and we mirror (fault-quarantine ``pkg/evaluator``, ``pkg/reconciler``, ``pkg/config``):

- A rule set runs only when ``enabled`` (the chart defaults it to true, a raw ``config.toml`` to false).
  ``match.any`` and ``match.all`` each become a separate evaluator under the rule set's name, so a rule set
  with both matches when *either* group does. Kinds are ``HealthEvent`` (variable ``event``) and ``Node``
  (variable ``node``); both environments load cel-go's ``ext.Strings`` and nothing else.
- ``event`` is the HealthEvent proto reflected through its JSON tags and round-tripped through JSON:
  camelCase keys, every field present, unset messages, maps and empty lists ``null``, enums as numbers
  (RESTART_VM = 15), every number a double. ``node`` is the Node's metadata and spec (no status).
- An evaluation error or a non-boolean result means "not matched" (fault-quarantine logs it).
- Actions: cordon when any matched rule set cordons (or the event forces it); a taint per (key, value)
  takes the effect of the highest ``priority`` (first wins a tie); a label per key takes the value of the
  highest priority, the later rule set winning a tie. Actions, priorities and order are keyed by rule set
  name, the last definition of a name winning. Healthy events, events whose processing strategy is not
  EXECUTE_REMEDIATION, ``quarantineOverrides.skip`` and nodes fault-quarantine does not watch take no
  action.
"""

from __future__ import annotations

import datetime as _dt
import difflib
import json
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path as FilePath
from typing import Any

from aicr_gen.certify.cel import (
    CelCompileError,
    CelError,
    CelLimitError,
    Comparison,
    Environment,
    Operand,
    Program,
    parse_timestamp,
    to_cel,
)
from aicr_gen.errors import InvalidInputError
from aicr_gen.yamlio import Document, Path, decode, format_path, load_bytes, load_text, shorten

# ------------------------------------------------------------------------ HealthEvent (health_event.proto)

RECOMMENDED_ACTION = {"NONE": 0, "COMPONENT_RESET": 2, "CONTACT_SUPPORT": 5, "RUN_FIELDDIAG": 6, "RESTART_VM": 15,
                      "RESTART_BM": 24, "REPLACE_VM": 25, "RUN_DCGMEUD": 26, "CUSTOM": 27, "UNKNOWN": 99}
PROCESSING_STRATEGY = {"UNSPECIFIED": 0, "EXECUTE_REMEDIATION": 1, "STORE_ONLY": 2, "STORE_AND_ANALYSE": 3}
ENUMS = {"recommendedAction": RECOMMENDED_ACTION, "processingStrategy": PROCESSING_STRATEGY}

# field -> kind, in proto field order
HEALTH_EVENT_FIELDS = {
    "version": "uint32", "agent": "string", "componentClass": "string", "checkName": "string",
    "isFatal": "bool", "isHealthy": "bool", "message": "string", "recommendedAction": "enum",
    "errorCode": "strings", "entitiesImpacted": "entities", "metadata": "map", "generatedTimestamp": "timestamp",
    "nodeName": "string", "quarantineOverrides": "overrides", "drainOverrides": "overrides",
    "processingStrategy": "enum", "id": "string", "customRecommendedAction": "string",
}
MESSAGE_FIELDS = {"timestamp": ("seconds", "nanos"), "overrides": ("force", "skip"),
                  "entity": ("entityType", "entityValue")}
_NULLABLE = ("strings", "entities", "map", "timestamp", "overrides")
_CEL_KIND = {"uint32": "number", "enum": "number", "string": "string", "bool": "bool", "strings": "list",
             "entities": "list", "map": "map", "timestamp": "map", "overrides": "map"}

HEALTH_EVENT = "HealthEvent"
NODE = "Node"
KINDS = (HEALTH_EVENT, NODE)
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
NODE_CACHED = ("apiVersion", "kind", "metadata", "spec")
DEFAULT_GPU_NODE_LABEL = "nvidia.com/gpu.present=true"
QUARANTINE_ANNOTATION = "quarantineHealthEvent"


# ---------------------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Rule:
    """One ``{kind, expression}`` of a rule set's match group, compiled."""

    kind: str
    program: Program
    where: str


@dataclass(frozen=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True)
class RuleSet:
    """A fault-quarantine (or post-remediation validation) rule set."""

    name: str
    where: str
    enabled: bool
    priority: int
    any: tuple[Rule, ...]
    all: tuple[Rule, ...]
    cordon: bool
    taint: Taint | None
    label: tuple[str, str] | None
    tests: tuple[str, ...] = ()


@dataclass(frozen=True)
class Criterion:
    """A lifecycle-manager readiness (or new-node) criterion: compiled and linted, not evaluated."""

    name: str
    program: Program
    where: str


@dataclass
class RuleConfig:
    """Everything ``rules test`` reads from one values file."""

    source: str
    rule_sets: list[RuleSet]
    validation: list[RuleSet]
    criteria: list[Criterion]
    gpu_node_label: tuple[str, str] | None
    skip_node_labels: list[tuple[str, str]]
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Event:
    """A HealthEvent as fault-quarantine's CEL sees it (``cel``), with its name in the input."""

    name: str
    node_name: str
    cel: dict[str, Any]


@dataclass
class Outcome:
    """What fault-quarantine would do with one event."""

    event: str
    node: str
    matched: list[str]
    cordon: bool
    taints: list[Taint]
    labels: dict[str, str]
    skipped: str | None
    validation: list[RuleSet] | None
    forced: bool = False

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "event": self.event, "node": self.node, "matched": self.matched, "cordon": self.cordon,
            "taints": [{"key": t.key, "value": t.value, "effect": t.effect} for t in self.taints],
            "labels": self.labels, "skipped": self.skipped,
        }
        if self.validation is not None:
            out["validation"] = [{"name": r.name, "tests": list(r.tests)} for r in self.validation]
        return out


# ---------------------------------------------------------------------------------- file reading

Where = Callable[[Path], str]


def _under(where: Where, *prefix: str | int) -> Where:
    """``where`` for paths below ``prefix``."""
    def inner(path: Path) -> str:
        return where((*prefix, *path))

    return inner


class _Source:
    """A loaded file, plus how to name a field path in it (``file:line: path`` when lines are known)."""

    def __init__(self, name: str, data: Any, doc: Document | None = None, prefix: str = "") -> None:
        self.name = name
        self.data = data
        self.doc = doc
        self.prefix = prefix

    def where(self, path: Path) -> str:
        if self.doc is not None:
            return self.doc.where(path)
        if not path:
            return f"{self.name}: {self.prefix}".rstrip(": ") if self.prefix else self.name
        return f"{self.name}: {self.prefix}{format_path(path)}"


def _read(path: FilePath, label: str) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise InvalidInputError(f"{label} {path}: no such file") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{label} {path}: a folder; give a file") from None
    except OSError as err:
        raise InvalidInputError(f"{label} {path}: cannot read: {err.strerror or err}") from None


def _no_duplicates(name: str) -> Callable[[list[tuple[str, Any]]], dict[str, Any]]:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise InvalidInputError(f"{name}: duplicate key {key!r} in a JSON object; keep one")
            out[key] = value
        return out

    return hook


def _reject_constant(text: str) -> Any:
    raise ValueError(f"{text} is not valid JSON")


def _parse_file(raw: bytes, name: str) -> _Source:
    """JSON (fast path, any root) or YAML (one document, any root)."""
    text = decode(raw, name)
    if name.endswith(".json"):
        try:
            data = json.loads(text, object_pairs_hook=_no_duplicates(name), parse_constant=_reject_constant)
        except json.JSONDecodeError as err:
            raise InvalidInputError(f"{name}:{err.lineno}: invalid JSON: {err.msg}") from None
        except ValueError as err:
            raise InvalidInputError(f"{name}: invalid JSON: {err}") from None
        except RecursionError:
            raise InvalidInputError(f"{name}: JSON nested too deeply") from None
        return _Source(name, data)
    doc = load_text(text, name)
    return _Source(name, doc.data, doc)


def _files(root: FilePath, label: str) -> list[tuple[str, FilePath]]:
    """``(name, path)`` of the JSON/YAML files under ``root`` sorted by name, or of ``root`` itself."""
    if root.is_dir():
        found = sorted((p.relative_to(root).as_posix(), p) for p in root.rglob("*")
                       if p.is_file() and p.suffix in (".json", ".yaml", ".yml")
                       and not any(part.startswith(".") for part in p.relative_to(root).parts))
        if not found:
            raise InvalidInputError(f"{label} {root}: no .json, .yaml or .yml files in the folder")
        return found
    if not root.exists():
        raise InvalidInputError(f"{label} {root}: no such file or folder")
    return [(root.name, root)]


# -------------------------------------------------------------------------------------- values


@dataclass
class _Found:
    """Where the rule data sits in a values file (paths are None when absent)."""

    source: _Source
    rule_sets: Path | None = None
    validation: Path | None = None
    criteria: list[Path] = field(default_factory=list)
    toml: bool = False
    fault_quarantine: Path | None = None


def _get(data: Any, path: Path) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(data, list) or part >= len(data):
                return None
            data = data[part]
        else:
            if not isinstance(data, Mapping) or part not in data:
                return None
            data = data[part]
    return data


def _locate(source: _Source) -> _Found:
    data = source.data
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"{source.name}: the root is a {type(data).__name__}; NVSentinel values (a mapping) "
                                "are expected")
    found = _Found(source)
    kind = data.get("kind")
    if kind == "ConfigMap":
        text = _get(data, ("data", "config.toml"))
        if not isinstance(text, str):
            raise InvalidInputError(f"{source.where(('data',))}: a ConfigMap without data['config.toml']; give "
                                    "fault-quarantine's ConfigMap or NVSentinel Helm values")
        return _locate_toml(text, source.name, "data['config.toml']: ")
    if kind == "ValidationConfiguration":
        for path in (("spec", "readinessCriteria"), ("spec", "newNodeValidation", "criteria")):
            if _get(data, path) is not None:
                found.criteria.append(path)
        return found
    for base in (("fault-quarantine",), ()):
        if _get(data, (*base, "ruleSets")) is not None:
            found.rule_sets = (*base, "ruleSets")
            found.fault_quarantine = base
        if _get(data, (*base, "validation", "ruleSets")) is not None:
            found.validation = (*base, "validation", "ruleSets")
            found.fault_quarantine = base
        if found.fault_quarantine is not None:
            break
    for config in (("lifecycle-manager", "config"), ("config",)):
        for tail in (("readinessCriteria",), ("newNodeValidation", "criteria")):
            if _get(data, (*config, *tail)) is not None:
                found.criteria.append((*config, *tail))
    return found


def _locate_toml(text: str, name: str, prefix: str) -> _Found:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InvalidInputError(f"{name}: {prefix}invalid TOML: {err}; fault-quarantine would not start") from None
    source = _Source(name, data, prefix=prefix)
    found = _Found(source, toml=True, fault_quarantine=())
    if "rule-sets" in data:
        found.rule_sets = ("rule-sets",)
    if _get(data, ("validation", "ruleSets")) is not None:
        found.validation = ("validation", "ruleSets")
    return found


class _Compiler:
    """Compiles every expression of a values file, sharing programs between identical expressions, and
    gathers all compile errors so one run reports them all (as fault-quarantine's multierror does)."""

    def __init__(self, now: _dt.datetime) -> None:
        self.environments = {
            HEALTH_EVENT: Environment(["event"]),
            NODE: Environment(["node"]),
            "criterion": Environment(["node", "pods"], libraries=("strings", "kubernetes"), now=now),
        }
        self.cache: dict[tuple[str, str], Program | Exception] = {}
        self.errors: list[str] = []
        self.too_expensive = 0

    def compile(self, kind: str, expression: str, where: str, *, fatal: bool, warnings: list[str]) -> Program | None:
        key = (kind, expression)
        if key not in self.cache:
            try:
                self.cache[key] = self.environments[kind].compile(expression)
            except (CelCompileError, CelLimitError) as err:
                self.cache[key] = err
        result = self.cache[key]
        if isinstance(result, Program):
            return result
        hint = _compile_hint(kind, expression, result)
        message = f"{where}: {result}{hint}"
        if fatal:
            self.errors.append(message)
            self.too_expensive += isinstance(result, CelLimitError)
        else:
            warnings.append(f"{message} (the rule set is disabled, so fault-quarantine skips it)")
        return None


def _compile_hint(kind: str, expression: str, error: Exception) -> str:
    text = str(error)
    if kind in KINDS and ("'now'" in text or "'quantity'" in text or "'isQuantity'" in text):
        return ("; fault-quarantine's CEL has only the standard library and ext.Strings (now() and quantity() "
                "exist in lifecycle-manager criteria)")
    if kind == HEALTH_EVENT and "'node'" in text:
        return "; a HealthEvent rule sees only `event`: put node conditions in a separate kind: Node rule"
    if kind == NODE and "'event'" in text:
        return "; a Node rule sees only `node`: put event conditions in a separate kind: HealthEvent rule"
    return ""


def default_now() -> _dt.datetime:
    """The instant now() returns: SOURCE_DATE_EPOCH when set (reproducible builds), else the Unix epoch."""
    epoch = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    seconds = int(epoch) if epoch.isdigit() else 0
    return _dt.datetime.fromtimestamp(seconds, _dt.UTC)


def load_config(path: str, now: _dt.datetime | None = None) -> RuleConfig:
    """Rule sets, validation rule sets and criteria of NVSentinel Helm values (umbrella or fault-quarantine
    subchart), fault-quarantine's ConfigMap or config.toml, or a ValidationConfiguration; every expression
    compiled. InvalidInputError names every rule that does not compile."""
    file = FilePath(path)
    raw = _read(file, "--values")
    if path.endswith(".toml"):
        found = _locate_toml(decode(raw, path), path, "")
    elif path.endswith(".json"):
        found = _locate(_parse_file(raw, path))
    else:
        doc = load_bytes(raw, path)
        found = _locate(_Source(path, doc.data, doc))
    if found.rule_sets is None and found.validation is None and not found.criteria:
        raise InvalidInputError(
            f"{path}: no rule sets found (looked for fault-quarantine.ruleSets, ruleSets, "
            "fault-quarantine.validation.ruleSets, lifecycle-manager.config.readinessCriteria and a ConfigMap's "
            "config.toml [[rule-sets]]); give NVSentinel values that set them, e.g. the chart's "
            "charts/fault-quarantine/values.yaml")
    compiler = _Compiler(now or default_now())
    warnings: list[str] = []
    source = found.source
    rule_sets = _rule_sets(source, found.rule_sets, found.toml, compiler, warnings, validation=False)
    validation = _rule_sets(source, found.validation, found.toml, compiler, warnings, validation=True)
    criteria = [criterion for path_ in found.criteria for criterion in _criteria(source, path_, compiler)]
    if compiler.errors:
        count = len(compiler.errors)
        if not compiler.too_expensive:
            header = f"{count} rule(s) do not compile; NVSentinel would not start with them"
        elif compiler.too_expensive == count:
            header = f"{count} rule(s) are too large or too expensive to evaluate safely; simplify them"
        else:
            header = f"{count} rule(s) do not compile or are too expensive to evaluate safely"
        raise InvalidInputError(f"{header}:\n  " + "\n  ".join(compiler.errors))
    config = RuleConfig(path, rule_sets, validation, criteria, _gpu_node_label(source, found),
                        _skip_node_labels(source, found), warnings)
    config.warnings.extend(_global_warnings(source, found))
    config.warnings.extend(lint(config))
    return config


def _expect_type(source: _Source, path: Path, value: Any, kind: type | tuple[type, ...], what: str) -> None:
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise InvalidInputError(f"{source.where(path)}: must be {what}, not {_describe(value)}")


def _describe(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()}"
    if isinstance(value, (int, float)):
        return f"the number {value}"
    if isinstance(value, str):
        return f"the string {shorten(repr(value))}"
    if isinstance(value, list):
        return "a list"
    return "a mapping" if isinstance(value, Mapping) else f"a {type(value).__name__}"


_RULE_SET_KEYS = ("enabled", "version", "name", "priority", "match", "cordon", "taint", "label")


def _rule_sets(source: _Source, base: Path | None, toml: bool, compiler: _Compiler, warnings: list[str], *,
               validation: bool) -> list[RuleSet]:
    if base is None:
        return []
    items = _get(source.data, base)
    _expect_type(source, base, items, list, "a list of rule sets")
    return [_rule_set(source, (*base, index), item, toml=toml, compiler=compiler, warnings=warnings,
                      validation=validation) for index, item in enumerate(items)]


def _rule_set(source: _Source, path: Path, item: Any, *, toml: bool, compiler: _Compiler, warnings: list[str],
              validation: bool) -> RuleSet:
    _expect_type(source, path, item, Mapping, "a rule set mapping (name, match, cordon ...)")
    known = (*_RULE_SET_KEYS, "tests") if validation else _RULE_SET_KEYS
    for key in item:
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f"; did you mean {close[0]!r}?" if close else f"; known keys: {', '.join(known)}"
            warnings.append(f"{source.where((*path, key))}: unknown rule set key {key!r} is ignored{hint}")
    name = item.get("name", "")
    _expect_type(source, (*path, "name"), name, str, "a string")
    where = f"{source.where(path)} ({name!r})"
    enabled = item.get("enabled", not toml)
    _expect_type(source, (*path, "enabled"), enabled, bool, "true or false")
    priority = item.get("priority", 0)
    _expect_type(source, (*path, "priority"), priority, int, "an integer")
    cordon = _cordon(source, path, item, toml and not validation, validation)
    taint = _taint(source, path, item.get("taint"))
    label_kv = _label(source, path, item.get("label"))
    tests: tuple[str, ...] = ()
    if validation:
        raw_tests = item.get("tests", [])
        _expect_type(source, (*path, "tests"), raw_tests, list, "a list of test names")
        for index, test in enumerate(raw_tests):
            _expect_type(source, (*path, "tests", index), test, str, "a test name")
        tests = tuple(raw_tests)
    match = item.get("match", {})
    _expect_type(source, (*path, "match"), match, Mapping, "a mapping with all: and/or any:")
    groups: dict[str, tuple[Rule, ...]] = {}
    for group in ("any", "all"):
        rules = match.get(group) or []
        _expect_type(source, (*path, "match", group), rules, list, "a list of {kind, expression}")
        groups[group] = tuple(rule for index, raw in enumerate(rules)
                              if (rule := _rule(source, (*path, "match", group, index), raw, compiler=compiler,
                                                enabled=enabled, warnings=warnings, rule_set_name=name)) is not None)
    return RuleSet(name, where, enabled, priority, groups["any"], groups["all"], cordon, taint, label_kv, tests)


def _cordon(source: _Source, path: Path, item: Mapping[str, Any], optional: bool, validation: bool) -> bool:
    cordon = item.get("cordon")
    if cordon is None and (optional or validation):
        return False
    if cordon is None:
        raise InvalidInputError(f"{source.where(path)}: cordon.shouldCordon is missing; the chart renders "
                                "`shouldCordon = <no value>` and fault-quarantine does not start; add "
                                "cordon: {shouldCordon: true} (or false)")
    _expect_type(source, (*path, "cordon"), cordon, Mapping, "a mapping {shouldCordon: true|false}")
    should = cordon.get("shouldCordon")
    _expect_type(source, (*path, "cordon", "shouldCordon"), should, bool, "true or false")
    return bool(should)


def _taint(source: _Source, path: Path, taint: Any) -> Taint | None:
    if not taint:
        return None
    _expect_type(source, (*path, "taint"), taint, Mapping, "a mapping {key, value, effect}")
    parts = {}
    for key in ("key", "value", "effect"):
        parts[key] = taint.get(key, "")
        _expect_type(source, (*path, "taint", key), parts[key], str, "a string")
    if not parts["key"]:
        return None
    if parts["effect"] not in TAINT_EFFECTS:
        raise InvalidInputError(f"{source.where((*path, 'taint', 'effect'))}: taint effect "
                                f"{parts['effect']!r} is not one of {', '.join(TAINT_EFFECTS)}; Kubernetes "
                                "would reject the taint")
    return Taint(parts["key"], parts["value"], parts["effect"])


def _label(source: _Source, path: Path, label: Any) -> tuple[str, str] | None:
    if not label:
        return None
    _expect_type(source, (*path, "label"), label, Mapping, "a mapping {key, value}")
    key, value = label.get("key", ""), label.get("value", "")
    _expect_type(source, (*path, "label", "key"), key, str, "a string")
    _expect_type(source, (*path, "label", "value"), value, str, "a string")
    return (key, value) if key else None


def _rule(source: _Source, path: Path, raw: Any, *, compiler: _Compiler, enabled: bool, warnings: list[str],
          rule_set_name: str) -> Rule | None:
    _expect_type(source, path, raw, Mapping, "a mapping {kind, expression}")
    kind, expression = raw.get("kind"), raw.get("expression")
    where = f"{source.where(path)} (rule set {rule_set_name!r})"
    if kind not in KINDS:
        message = (f"{where}: kind {kind!r} is not HealthEvent or Node (fault-quarantine fails with "
                   "'unknown evaluator kind')")
        if enabled:
            compiler.errors.append(message)
        else:
            warnings.append(message)
        return None
    if not isinstance(expression, str) or not expression.strip():
        message = f"{where}: expression is missing or not a string"
        if enabled:
            compiler.errors.append(message)
        else:
            warnings.append(message)
        return None
    program = compiler.compile(kind, expression.strip(), where, fatal=enabled, warnings=warnings)
    return Rule(kind, program, where) if program is not None else None


def _criteria(source: _Source, path: Path, compiler: _Compiler) -> list[Criterion]:
    items = _get(source.data, path)
    _expect_type(source, path, items, list, "a list of {name, expression}")
    out = []
    for index, item in enumerate(items):
        item_path = (*path, index)
        _expect_type(source, item_path, item, Mapping, "a mapping {name, expression}")
        name, expression = item.get("name", ""), item.get("expression")
        where = f"{source.where(item_path)} (criterion {name!r})"
        if not isinstance(expression, str) or not expression.strip():
            compiler.errors.append(f"{where}: expression is missing or not a string")
            continue
        program = compiler.compile("criterion", expression.strip(), where, fatal=True, warnings=[])
        if program is not None:
            out.append(Criterion(str(name), program, where))
    return out


def _fq_value(source: _Source, found: _Found, key: str) -> Any:
    if found.fault_quarantine is None:
        return None
    return _get(source.data, (*found.fault_quarantine, key))


def _gpu_node_label(source: _Source, found: _Found) -> tuple[str, str] | None:
    if found.toml:
        return None
    text = _fq_value(source, found, "gpuNodeLabel") or DEFAULT_GPU_NODE_LABEL
    if not isinstance(text, str) or "=" not in text:
        return None
    key, _, value = text.partition("=")
    return key.strip(), value.strip()


def _skip_node_labels(source: _Source, found: _Found) -> list[tuple[str, str]]:
    raw = _fq_value(source, found, "skip-node-labels" if found.toml else "skipNodeLabels") or []
    return [(str(item.get("key", "")), str(item.get("value", ""))) for item in raw
            if isinstance(item, Mapping) and item.get("key")] if isinstance(raw, list) else []


def _global_warnings(source: _Source, found: _Found) -> list[str]:
    if found.toml or found.fault_quarantine != ("fault-quarantine",):
        return []
    out = []
    enabled = _get(source.data, ("global", "faultQuarantine", "enabled"))
    if enabled is False:
        out.append(f"{source.where(('global', 'faultQuarantine', 'enabled'))}: fault-quarantine is disabled, so "
                   "none of these rule sets runs in the cluster")
    if _get(source.data, ("global", "dryRun")) is True:
        out.append(f"{source.where(('global', 'dryRun'))}: dry run: fault-quarantine records the actions below "
                   "in node annotations but does not cordon, taint or label")
    return out


# ------------------------------------------------------------------------------------------- lints


def lint(config: RuleConfig) -> list[str]:
    """Warnings for rules that can never match or do not do what they seem to."""
    out: list[str] = []
    seen: dict[str, str] = {}
    for rule_set in config.rule_sets + config.validation:
        if rule_set.name in seen:
            out.append(f"{rule_set.where}: rule set name {rule_set.name!r} is also used by {seen[rule_set.name]}; "
                       "fault-quarantine keys actions, priority and order by name, so the last definition's "
                       "apply to both")
        seen.setdefault(rule_set.name, rule_set.where)
        if not rule_set.enabled:
            continue
        if rule_set.any and rule_set.all:
            out.append(f"{rule_set.where}: has both match.any and match.all; fault-quarantine runs them as two "
                       "separate evaluators, so the rule set matches when EITHER group matches (not all AND any)")
        if not rule_set.any and not rule_set.all:
            out.append(f"{rule_set.where}: has no match rules, so it never matches")
        for group, group_rules in (("any", rule_set.any), ("all", rule_set.all)):
            if group_rules and all(rule.kind == NODE for rule in group_rules):
                out.append(f"{rule_set.where}: match.{group} has only Node rules, so the rule set matches every "
                           "event on a node where they hold")
        for rule in (*rule_set.any, *rule_set.all):
            out.extend(f"{rule.where}: {problem}" for problem in lint_rule(rule.kind, rule.program))
    out.extend(_taint_conflicts(config.rule_sets))
    for criterion in config.criteria:
        out.extend(f"{criterion.where}: {problem}" for problem in lint_rule("criterion", criterion.program))
    return out


def _taint_conflicts(rule_sets: Sequence[RuleSet]) -> list[str]:
    out = []
    by_taint: dict[tuple[str, str, int], RuleSet] = {}
    for rule_set in rule_sets:
        if not rule_set.enabled or rule_set.taint is None:
            continue
        key = (rule_set.taint.key, rule_set.taint.value, max(rule_set.priority, 0))
        other = by_taint.setdefault(key, rule_set)
        if other is not rule_set and other.taint is not None and other.taint.effect != rule_set.taint.effect:
            out.append(f"{rule_set.where}: taint {key[0]}={key[1]} has effect {rule_set.taint.effect} here and "
                       f"{other.taint.effect} in {other.name!r} at the same priority; when both match, "
                       "fault-quarantine (which evaluates rule sets in parallel) applies either; give them "
                       "different priorities")
    return out


def lint_rule(kind: str, program: Program) -> list[str]:
    """Problems with one compiled expression, judged from what its variable holds in NVSentinel."""
    problems: list[str] = []
    for selection in program.selections:
        if selection.variable == "event":
            problem = _event_path_problem(selection.path, selection.tested)
        elif selection.variable == "node" and kind == NODE:
            problem = _node_path_problem(selection.path)
        else:
            problem = None
        if problem and problem not in problems:
            problems.append(problem)
    for comparison in program.comparisons:
        problem = _comparison_problem(kind, comparison)
        if problem and problem not in problems:
            problems.append(problem)
    return problems


def _suggest(name: str, options: Iterable[str]) -> str:
    folded = {option.lower(): option for option in options}
    if name.replace("_", "").lower() in folded:
        return f"; did you mean {folded[name.replace('_', '').lower()]!r}?"
    close = difflib.get_close_matches(name, list(options), n=1)
    return f"; did you mean {close[0]!r}?" if close else ""


def _event_path_problem(path: tuple[str, ...], tested: bool) -> str | None:
    if not path:
        return None
    head = path[0]
    outcome = "has() is always false" if tested and len(path) == 1 else "the rule errors and never matches"
    if head not in HEALTH_EVENT_FIELDS:
        return (f"event has no field {head!r}{_suggest(head, HEALTH_EVENT_FIELDS)} ({outcome}; HealthEvent "
                f"fields: {', '.join(HEALTH_EVENT_FIELDS)})")
    kind = HEALTH_EVENT_FIELDS[head]
    if len(path) < 2:
        return None
    if kind in ("strings", "entities"):
        element = "e.entityType == 'GPU'" if kind == "entities" else "e == '79'"
        return (f"event.{head} is a list (null when empty), so event.{head}.{path[1]} errors; use "
                f"event.{head} != null && event.{head}.exists(e, {element})")
    if kind in MESSAGE_FIELDS and path[1] not in MESSAGE_FIELDS[kind]:
        return (f"event.{head} has no field {path[1]!r}{_suggest(path[1], MESSAGE_FIELDS[kind])} (fields: "
                f"{', '.join(MESSAGE_FIELDS[kind])}); the rule errors and never matches")
    if kind in ("string", "bool", "uint32", "enum"):
        return f"event.{head} is a {_CEL_KIND[kind]}, so event.{'.'.join(path)} errors and never matches"
    return None


def _node_path_problem(path: tuple[str, ...]) -> str | None:
    if not path:
        return None
    if path[0] == "status":
        return ("fault-quarantine caches only the Node's metadata and spec, so node.status is never available "
                "and the rule never matches")
    if path[0] not in NODE_CACHED:
        return f"a Node has no field {path[0]!r}{_suggest(path[0], NODE_CACHED)}; the rule errors and never matches"
    return None


def _literal_kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return type(value).__name__


def _event_field(operand: Operand | None) -> str | None:
    if operand is None or operand.kind != "path":
        return None
    variable, path = operand.value
    if variable == "event" and len(path) == 1 and path[0] in HEALTH_EVENT_FIELDS:
        return str(path[0])
    return None


def _comparison_problem(kind: str, comparison: Comparison) -> str | None:
    if kind == "criterion":
        return _quantity_problem(comparison)
    if kind != HEALTH_EVENT:
        return None
    op, left, right = comparison
    if op == "in":
        name = _event_field(right)
        if name and left is not None and left.kind == "literal" and HEALTH_EVENT_FIELDS[name] == "string":
            return (f"{left.value!r} in event.{name} is an error: {name} is a string, not a list; use "
                    f"event.{name}.contains({left.value!r})")
        name = _event_field(left)
        if name and right is not None and right.kind == "list":
            for item in right.value:
                if item is not None and item.kind == "literal":
                    problem = _mismatch(name, op, item.value)
                    if problem:
                        return problem
        return None
    name = _event_field(left) or _event_field(right)
    other = right if _event_field(left) else left
    if name is None or other is None:
        return None
    if other.kind == "list" and not other.value and HEALTH_EVENT_FIELDS[name] in ("strings", "entities"):
        return (f"event.{name} {op} [] : NVSentinel presents empty lists as null, so compare with null "
                f"(event.{name} == null)")
    if other.kind == "literal":
        return _mismatch(name, op, other.value)
    return None


def _mismatch(name: str, op: str, literal: Any) -> str | None:
    field_kind = HEALTH_EVENT_FIELDS[name]
    cel_kind = _CEL_KIND[field_kind]
    got = _literal_kind(literal)
    verdict = {"!=": "is always true", "in": "never matches"}.get(op, "is never true")
    shown = _cel_repr(literal)
    written = f"the list element {shown}" if op == "in" else f"{op} {shown}"
    if got == cel_kind or (got == "null" and field_kind in _NULLABLE):
        return None
    if op not in ("==", "!=", "in"):
        return f"event.{name} is a {cel_kind}; comparing it with {op} to a {got} is an error, so the rule never matches"
    if field_kind == "enum" and got == "string":
        names = ENUMS[name]
        number = names.get(str(literal))
        hint = (f"; write {number} ({literal})" if number is not None
                else f"; the names are {', '.join(f'{k}={v}' for k, v in names.items())}")
        return (f"event.{name} is a number in NVSentinel's CEL (enums are numbers), so {written} "
                f"{verdict}{hint}")
    if got == "null":
        return f"event.{name} is a {cel_kind} and never null (empty when unset), so {written} {verdict}"
    if field_kind in ("strings", "entities") and got == "string":
        return (f"event.{name} is a list (or null), so {written} {verdict}; use "
                f"event.{name} != null && {shown} in event.{name}")
    return f"event.{name} is a {cel_kind}, so {written} (a {got}) {verdict}"


def _cel_repr(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return str(value).lower()
    return shorten(repr(value))


def _quantity_problem(comparison: Comparison) -> str | None:
    op, left, right = comparison
    if op not in ("<", "<=", ">", ">="):
        return None
    for side, other in ((left, right), (right, left)):
        if side is None or side.kind != "path" or other is None or other.kind != "literal":
            continue
        variable, path = side.value
        if variable == "node" and path[:2] in (("status", "allocatable"), ("status", "capacity")) \
                and _literal_kind(other.value) == "number":
            shown = "node." + ".".join(path[:2]) + "".join(f"[{p!r}]" for p in path[2:])
            return (f"{shown} is a quantity string (e.g. \"8\"), so comparing it with {op} to a number is an "
                    f"error; write quantity({shown}) {op} {other.value}")
    return None


# ------------------------------------------------------------------------------------------ events


def load_events(path: str) -> tuple[list[Event], list[str]]:
    """The HealthEvents under ``path`` (a file, or a folder read recursively, files sorted by name), as
    fault-quarantine's CEL sees them, and warnings about files that are not events."""
    events: list[Event] = []
    warnings: list[str] = []
    root = FilePath(path)
    files = _files(root, "--events")
    for name, file in files:
        source = _parse_file(_read(file, "--events"), str(file))
        if _is_other_object(source.data):
            message = (f"{file}: a {source.data.get('kind')}, not a HealthEvent"
                       + ("; skipped" if len(files) > 1 else ""))
            if len(files) == 1:
                raise InvalidInputError(message + "; give HealthEvent JSON/YAML files")
            warnings.append(message)
            continue
        found = list(_raw_events(source))
        if not found:
            raise InvalidInputError(f"{file}: no HealthEvent in the file")
        for index, (event_path, raw) in enumerate(found):
            label = name if len(found) == 1 else f"{name}[{index}]"
            cel = normalise_event(raw, _under(source.where, *event_path))
            events.append(Event(label, str(cel["nodeName"]), cel))
    return events, warnings


def _is_other_object(data: Any) -> bool:
    return (isinstance(data, Mapping) and isinstance(data.get("kind"), str) and "apiVersion" in data
            and data["kind"] != "HealthEventResource")


def _raw_events(source: _Source) -> Iterable[tuple[Path, Any]]:
    data = source.data
    if isinstance(data, list):
        for index, item in enumerate(data):
            yield from _unwrap_event(item, (index,))
        return
    if isinstance(data, Mapping) and isinstance(data.get("events"), list) and "agent" not in data:
        for index, item in enumerate(data["events"]):
            yield from _unwrap_event(item, ("events", index))
        return
    yield from _unwrap_event(data, ())


def _unwrap_event(item: Any, path: Path) -> Iterable[tuple[Path, Any]]:
    if isinstance(item, Mapping):
        for wrapper in ("healthevent", "healthEvent"):
            if isinstance(item.get(wrapper), Mapping):
                yield (*path, wrapper), item[wrapper]
                return
        if item.get("kind") == "HealthEventResource" and isinstance(item.get("spec"), Mapping):
            yield (*path, "spec"), item["spec"]
            return
    yield path, item


def normalise_event(raw: Any, where: Where) -> dict[str, Any]:
    """A HealthEvent (protojson: camelCase, enums as names or numbers, RFC 3339 timestamps) as
    fault-quarantine's CEL sees it. Unknown fields and wrong types are input errors, as protojson makes them."""
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"{where(())}: a HealthEvent must be a mapping, not {_describe(raw)}")
    for key in raw:
        if key not in HEALTH_EVENT_FIELDS:
            raise InvalidInputError(f"{where((key,))}: HealthEvent has no field {key!r}"
                                    f"{_suggest(str(key), HEALTH_EVENT_FIELDS)} (fields: "
                                    f"{', '.join(HEALTH_EVENT_FIELDS)})")
    event = {name: _field(name, kind, raw.get(name), _under(where, name))
             for name, kind in HEALTH_EVENT_FIELDS.items()}
    if not event["nodeName"]:
        raise InvalidInputError(f"{where(('nodeName',))}: nodeName is required (the node the event is about)")
    if event["processingStrategy"] == 0:
        event["processingStrategy"] = float(PROCESSING_STRATEGY["EXECUTE_REMEDIATION"])
    return event


def _field(name: str, kind: str, value: Any, where: Where) -> Any:
    if kind == "string":
        return _string(value, where)
    if kind == "bool":
        if value is None:
            return False
        if not isinstance(value, bool):
            raise InvalidInputError(f"{where(())}: must be true or false, not {_describe(value)}")
        return value
    if kind == "uint32":
        number = _integer(value, where)
        if not 0 <= number < 2**32:
            raise InvalidInputError(f"{where(())}: {number} is out of the uint32 range")
        return float(number)
    if kind == "enum":
        return float(_enum(name, value, where))
    if kind == "strings":
        items = _list(value, where)
        return [_string(item, _under(where, i)) for i, item in enumerate(items)] or None
    if kind == "entities":
        items = _list(value, where)
        return [_message("entity", item, _under(where, i)) for i, item in enumerate(items)] or None
    if kind == "map":
        if value is None:
            return None
        if not isinstance(value, Mapping):
            raise InvalidInputError(f"{where(())}: must be a mapping of strings, not {_describe(value)}")
        return {str(key): _string(item, _under(where, key)) for key, item in value.items()} or None
    if kind == "timestamp":
        return _timestamp(value, where)
    return None if value is None else _message("overrides", value, where)


def _string(value: Any, where: Where) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        hint = f"; quote it: '{value}'" if isinstance(value, (int, float)) and not isinstance(value, bool) else ""
        raise InvalidInputError(f"{where(())}: must be a string, not {_describe(value)}{hint}")
    return value


def _integer(value: Any, where: Where) -> int:
    if value is None:
        return 0
    if isinstance(value, str) and value.lstrip("-").isdigit():
        return int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{where(())}: must be an integer, not {_describe(value)}")
    return value


def _enum(name: str, value: Any, where: Where) -> int:
    names = ENUMS[name]
    if isinstance(value, str) and not value.lstrip("-").isdigit():
        if value not in names:
            raise InvalidInputError(f"{where(())}: {value!r} is not a {name} (one of "
                                    f"{', '.join(f'{k}={v}' for k, v in names.items())})")
        return names[value]
    number = _integer(value, where)
    if not -(2**31) <= number < 2**31:
        raise InvalidInputError(f"{where(())}: {number} is out of the enum (int32) range")
    return number


def _list(value: Any, where: Where) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InvalidInputError(f"{where(())}: must be a list, not {_describe(value)}")
    return value


def _message(kind: str, value: Any, where: Where) -> dict[str, Any]:
    fields = MESSAGE_FIELDS[kind]
    if not isinstance(value, Mapping):
        raise InvalidInputError(f"{where(())}: must be a mapping ({', '.join(fields)}), not {_describe(value)}")
    for key in value:
        if key not in fields:
            raise InvalidInputError(f"{where((key,))}: no field {key!r}{_suggest(str(key), fields)} (fields: "
                                    f"{', '.join(fields)})")
    if kind == "entity":
        return {key: _string(value.get(key), _under(where, key)) for key in fields}
    out: dict[str, Any] = {}
    for key in fields:
        item = value.get(key)
        if item is not None and not isinstance(item, bool):
            raise InvalidInputError(f"{where((key,))}: must be true or false, not {_describe(item)}")
        out[key] = bool(item)
    return out


def _timestamp(value: Any, where: Where) -> dict[str, float] | None:
    if value is None:
        return None
    if isinstance(value, Mapping):
        for key in value:
            if key not in ("seconds", "nanos"):
                raise InvalidInputError(f"{where((key,))}: a timestamp has seconds and nanos, not {key!r}")
        return {"seconds": float(_integer(value.get("seconds"), _under(where, "seconds"))),
                "nanos": float(_integer(value.get("nanos"), _under(where, "nanos")))}
    if not isinstance(value, str):
        raise InvalidInputError(f"{where(())}: must be an RFC 3339 time such as 2025-01-02T03:04:05Z, not "
                                f"{_describe(value)}")
    try:
        instant = parse_timestamp(value)
    except CelError as err:
        raise InvalidInputError(f"{where(())}: {err}") from None
    seconds = int(instant.timestamp() // 1)
    fraction = value.partition(".")[2].rstrip("Zz").split("+")[0].split("-")[0]
    nanos = int(fraction[:9].ljust(9, "0")) if fraction.isdigit() else 0
    return {"seconds": float(seconds), "nanos": float(nanos)}


# -------------------------------------------------------------------------------------------- nodes


def load_nodes(path: str | None) -> dict[str, dict[str, Any]]:
    """Nodes by name: a Node, a List/NodeList or a YAML/JSON list, in a file or a folder. As
    fault-quarantine caches them: metadata and spec only."""
    if path is None:
        return {}
    nodes: dict[str, dict[str, Any]] = {}
    for _name, file in _files(FilePath(path), "--nodes"):
        source = _parse_file(_read(file, "--nodes"), str(file))
        data = source.data
        items: list[tuple[Path, Any]]
        if isinstance(data, list):
            items = [((index,), item) for index, item in enumerate(data)]
        elif isinstance(data, Mapping) and isinstance(data.get("items"), list):
            items = [(("items", index), item) for index, item in enumerate(data["items"])]
        else:
            items = [((), data)]
        for item_path, item in items:
            name = _node_name(source, item_path, item)
            if name in nodes:
                raise InvalidInputError(f"{source.where(item_path)}: node {name!r} is given twice; keep one")
            nodes[name] = node_view(item)
    return nodes


def _node_name(source: _Source, path: Path, item: Any) -> str:
    if not isinstance(item, Mapping) or item.get("kind", "Node") != "Node":
        kind = item.get("kind") if isinstance(item, Mapping) else None
        raise InvalidInputError(f"{source.where(path)}: not a Node ({'a ' + str(kind) if kind else _describe(item)})"
                                "; give Node objects, e.g. `kubectl get node NAME -o yaml`")
    name = _get(item, ("metadata", "name"))
    if not isinstance(name, str) or not name:
        raise InvalidInputError(f"{source.where(path)}: a Node without metadata.name")
    return name


def node_view(node: Mapping[str, Any]) -> dict[str, Any]:
    """What fault-quarantine's Node rules see: the object without status (its informer caches metadata and
    spec) and without managedFields."""
    view = {key: value for key, value in node.items() if key != "status"}
    metadata = view.get("metadata")
    if isinstance(metadata, Mapping):
        view["metadata"] = {key: value for key, value in metadata.items() if key != "managedFields"}
    try:
        converted: dict[str, Any] = to_cel(view)
    except ValueError as err:
        raise InvalidInputError(f"node {_get(node, ('metadata', 'name'))!r}: {err}") from None
    return converted


def bare_node(name: str) -> dict[str, Any]:
    """A Node of that name with no labels, for events whose node is not given."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}, "annotations": {}},
            "spec": {}}


# --------------------------------------------------------------------------------------- evaluation


class _Problems:
    """Evaluation errors and non-boolean results per rule, counted, with the first event that hit them."""

    def __init__(self) -> None:
        self.by_rule: dict[str, list[Any]] = {}

    def add(self, where: str, subject: str, message: str, unit: str) -> None:
        entry = self.by_rule.setdefault(where, [0, subject, message, unit])
        entry[0] += 1

    def warnings(self) -> list[str]:
        return [f"{where}: failed on {count} {unit}(s), so it did not match there (fault-quarantine logs 'Rule "
                f"evaluation failed'); first: {subject}: {message}"
                for where, (count, subject, message, unit) in self.by_rule.items()]


class Evaluator:
    """Evaluates events against a RuleConfig; caches Node rule results per node."""

    def __init__(self, config: RuleConfig, nodes: Mapping[str, dict[str, Any]], *, nodes_given: bool) -> None:
        self.config = config
        self.nodes = nodes
        self.nodes_given = nodes_given
        self.problems = _Problems()
        self.node_results: dict[tuple[int, str], bool] = {}
        self.missing_nodes: dict[str, int] = {}
        self.bare: dict[str, dict[str, Any]] = {}
        self._by_name = _by_name(config.rule_sets)

    def _node(self, name: str) -> dict[str, Any]:
        node = self.nodes.get(name)
        if node is not None:
            return node
        if self.nodes_given:
            self.missing_nodes[name] = self.missing_nodes.get(name, 0) + 1
        if name not in self.bare:
            self.bare[name] = bare_node(name)
        return self.bare[name]

    def _run(self, rule: Rule, activation: Mapping[str, Any], event: Event) -> bool:
        subject, unit = (event.name, "event") if rule.kind == HEALTH_EVENT else (f"node {event.node_name}", "node")
        try:
            result = rule.program.evaluate(activation)
        except CelError as err:
            self.problems.add(rule.where, subject, str(err), unit)
            return False
        except CelLimitError as err:
            raise InvalidInputError(f"{rule.where}: {err} (on event {event.name})") from None
        if type(result) is not bool:
            self.problems.add(rule.where, subject, f"the result is a {type(result).__name__}, not a boolean", unit)
            return False
        return result

    def _rule(self, rule: Rule, event: Event, event_results: dict[int, bool], node: dict[str, Any]) -> bool:
        if rule.kind == HEALTH_EVENT:
            key = id(rule.program)
            if key not in event_results:
                event_results[key] = self._run(rule, {"event": event.cel}, event)
            return event_results[key]
        node_key = (id(rule.program), event.node_name)
        if node_key not in self.node_results:
            self.node_results[node_key] = self._run(rule, {"node": node}, event)
        return self.node_results[node_key]

    def matches(self, rule_set: RuleSet, event: Event, event_results: dict[int, bool], node: dict[str, Any]) -> bool:
        if not rule_set.enabled:
            return False
        if rule_set.any and any(self._rule(rule, event, event_results, node) for rule in rule_set.any):
            return True
        return bool(rule_set.all) and all(self._rule(rule, event, event_results, node) for rule in rule_set.all)

    def evaluate(self, event: Event) -> Outcome:
        node = self._node(event.node_name)
        results: dict[int, bool] = {}
        matched_sets = [rule_set for rule_set in self.config.rule_sets if self.matches(rule_set, event, results, node)]
        matched = list(dict.fromkeys(rule_set.name for rule_set in matched_sets))
        validation = ([rule_set for rule_set in self.config.validation
                       if self.matches(rule_set, event, results, node)] if self.config.validation else None)
        skipped = self._skipped(event, node)
        if skipped is not None:
            return Outcome(event.name, event.node_name, matched, False, [], {}, skipped, validation)
        force = bool((event.cel.get("quarantineOverrides") or {}).get("force"))
        cordon, taints, labels = _actions(matched, self._by_name)
        return Outcome(event.name, event.node_name, matched, cordon or force, taints, labels, None, validation,
                       forced=force)

    def _skipped(self, event: Event, node: Mapping[str, Any]) -> str | None:
        strategy = int(event.cel["processingStrategy"])
        if strategy != PROCESSING_STRATEGY["EXECUTE_REMEDIATION"]:
            names = {v: k for k, v in PROCESSING_STRATEGY.items()}
            return (f"processingStrategy {names.get(strategy, strategy)}: fault-quarantine acts only on "
                    "EXECUTE_REMEDIATION events")
        if (event.cel.get("quarantineOverrides") or {}).get("skip"):
            return "quarantineOverrides.skip is set"
        labels = _get(node, ("metadata", "labels"))
        labels = labels if isinstance(labels, Mapping) else {}
        for key, value in self.config.skip_node_labels:
            if labels.get(key) == value:
                return f"the node carries skip label {key}={value}"
        gpu = self.config.gpu_node_label
        if gpu is not None and event.node_name in self.nodes and labels.get(gpu[0]) != gpu[1]:
            return (f"the node lacks the gpuNodeLabel {gpu[0]}={gpu[1]}, so fault-quarantine does not watch it "
                    "(its Node rules fail and it takes no action)")
        if event.cel["isHealthy"]:
            return "a healthy event: fault-quarantine only uses it to end an existing quarantine"
        return None

    def warnings(self) -> list[str]:
        out = self.problems.warnings()
        out.extend(f"{count} event(s) name node {name!r}, which is not in --nodes; they were evaluated against a "
                   "bare Node with no labels" for name, count in self.missing_nodes.items())
        return out


@dataclass(frozen=True)
class _Actions:
    cordon: bool
    taint: Taint | None
    label: tuple[str, str] | None
    priority: int
    order: int


def _by_name(rule_sets: Sequence[RuleSet]) -> dict[str, _Actions]:
    """Per name, the actions of its last definition (fault-quarantine's buildRulesetsConfig)."""
    return {rule_set.name: _Actions(rule_set.cordon, rule_set.taint, rule_set.label, max(rule_set.priority, 0), order)
            for order, rule_set in enumerate(rule_sets)}


def _actions(matched: Sequence[str], by_name: Mapping[str, _Actions]) -> tuple[bool, list[Taint], dict[str, str]]:
    cordon = False
    effects: dict[tuple[str, str], tuple[str, int]] = {}
    labels: dict[str, tuple[str, int, int]] = {}
    for name in matched:
        actions = by_name[name]
        cordon = cordon or actions.cordon
        if actions.taint is not None:
            key = (actions.taint.key, actions.taint.value)
            current = effects.get(key)
            if current is None or actions.priority > current[1]:
                effects[key] = (actions.taint.effect, actions.priority)
        if actions.label is not None:
            key_, value = actions.label
            chosen = labels.get(key_)
            if chosen is None or not (chosen[1] > actions.priority
                                      or (chosen[1] == actions.priority and chosen[2] > actions.order)):
                labels[key_] = (value, actions.priority, actions.order)
    taints = [Taint(key, value, effect) for (key, value), (effect, _p) in sorted(effects.items())]
    return cordon, taints, {key: labels[key][0] for key in sorted(labels)}


def evaluate(config: RuleConfig, events: Sequence[Event], nodes: Mapping[str, dict[str, Any]], *,
             nodes_given: bool) -> tuple[list[Outcome], list[str]]:
    """Outcomes in event order, and warnings about rules that failed and nodes that were missing."""
    evaluator = Evaluator(config, nodes, nodes_given=nodes_given)
    outcomes = [evaluator.evaluate(event) for event in events]
    return outcomes, evaluator.warnings()


# ------------------------------------------------------------------------------------ expectations


_EXPECT_KEYS = ("node", "matched", "cordon", "taints", "labels", "skipped", "validation")


def load_expectations(path: str) -> dict[str, dict[str, Any]]:
    """Expected outcomes by event name: a mapping ``event name -> {matched, cordon, taints, labels, ...}``
    (any subset of keys), or a list shaped like ``--format json`` output."""
    source = _parse_file(_read(FilePath(path), "--expect"), path)
    data = source.data
    entries: list[tuple[Path, str, Any]]
    if isinstance(data, list):
        entries = []
        for index, item in enumerate(data):
            _expect_type(source, (index,), item, Mapping, "a mapping with event: and the expected outcome")
            _expect_type(source, (index, "event"), item.get("event"), str, "the event's name")
            entries.append(((index,), item["event"], {k: v for k, v in item.items() if k != "event"}))
    elif isinstance(data, Mapping):
        entries = [((name,), str(name), item) for name, item in data.items()]
    else:
        raise InvalidInputError(f"{path}: expectations must be a mapping (event name -> outcome) or a list")
    out: dict[str, dict[str, Any]] = {}
    for where, name, item in entries:
        _expect_type(source, where, item, Mapping, f"a mapping of {', '.join(_EXPECT_KEYS)}")
        for key in item:
            if key not in _EXPECT_KEYS:
                raise InvalidInputError(f"{source.where((*where, key))}: unknown key {key!r}"
                                        f"{_suggest(str(key), _EXPECT_KEYS)} (keys: {', '.join(_EXPECT_KEYS)})")
        if name in out:
            raise InvalidInputError(f"{source.where(where)}: event {name!r} is expected twice; keep one")
        out[name] = _expected(source, where, item)
    return out


def _expected(source: _Source, where: Path, item: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in item.items():
        path = (*where, key)
        if key in ("matched", "validation"):
            _expect_type(source, path, value, list, "a list of rule set names")
            names = [entry.get("name") if isinstance(entry, Mapping) else entry for entry in value]
            for index, name in enumerate(names):
                _expect_type(source, (*path, index), name, str, "a rule set name")
            out[key] = names
        elif key == "cordon":
            _expect_type(source, path, value, bool, "true or false")
            out[key] = value
        elif key == "taints":
            _expect_type(source, path, value, list, "a list of {key, value, effect}")
            taints = []
            for index, taint in enumerate(value):
                _expect_type(source, (*path, index), taint, Mapping, "a mapping {key, value, effect}")
                taints.append(Taint(str(taint.get("key", "")), str(taint.get("value", "")),
                                    str(taint.get("effect", ""))))
            out[key] = sorted(taints, key=lambda t: (t.key, t.value, t.effect))
        elif key == "labels":
            _expect_type(source, path, value, Mapping, "a mapping of label key -> value")
            out[key] = {str(k): str(v) for k, v in value.items()}
        else:
            if value is not None:
                _expect_type(source, path, value, str, "a string")
            out[key] = value
    return out


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    if isinstance(value, Taint):
        return f"{value.key}={value.value}:{value.effect}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={v}" for k, v in value.items()) + "}"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def compare(outcomes: Sequence[Outcome], expected: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Readable differences between outcomes and expectations (empty when everything matches)."""
    got = {outcome.event: outcome for outcome in outcomes}
    diffs: list[str] = []
    for name, want in expected.items():
        outcome = got.get(name)
        if outcome is None:
            close = difflib.get_close_matches(name, list(got), n=1)
            diffs.append(f"{name}: expected, but no such event{f' (did you mean {close[0]!r}?)' if close else ''}")
            continue
        actual: dict[str, Any] = {
            "node": outcome.node, "matched": outcome.matched, "cordon": outcome.cordon, "taints": outcome.taints,
            "labels": outcome.labels, "skipped": outcome.skipped,
            "validation": [r.name for r in outcome.validation or []],
        }
        lines = []
        for key, value in want.items():
            same = (sorted(actual[key]) == sorted(value) if key in ("matched", "validation")
                    else actual[key] == value)
            if same:
                continue
            line = f"{key}: expected {_show(value)}, got {_show(actual[key])}"
            if key in ("matched", "validation"):
                missing = [n for n in value if n not in actual[key]]
                extra = [n for n in actual[key] if n not in value]
                detail = [f"missing {_show(missing)}" if missing else "", f"unexpected {_show(extra)}" if extra else ""]
                line += f" ({'; '.join(d for d in detail if d)})"
            lines.append(line)
        if lines:
            diffs.append(f"{name}:\n      " + "\n      ".join(lines))
    return diffs
