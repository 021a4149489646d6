"""``--values``: rule sets, validation rule sets and criteria, checked as fault-quarantine's config loader
does and every expression compiled."""

from __future__ import annotations

import datetime as _dt
import difflib
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aicr_gen.cel import CelCompileError, CelLimitError, Program
from aicr_gen.cel.environments import lifecycle_criterion, nvsentinel_rule
from aicr_gen.edges.inputs import read_input
from aicr_gen.errors import InvalidInputError
from aicr_gen.limits import MAX_RULE_SETS
from aicr_gen.sentinel.rules.lints import lint
from aicr_gen.sentinel.rules.locate import _Found, _locate, _locate_toml
from aicr_gen.sentinel.rules.model import (
    DEFAULT_GPU_NODE_LABEL,
    HEALTH_EVENT,
    KINDS,
    NODE,
    TAINT_EFFECTS,
    Criterion,
    Rule,
    RuleConfig,
    RuleSet,
    Taint,
)
from aicr_gen.sentinel.rules.source import _expect_type, _get, _parse_file, _Source
from aicr_gen.yaml import FieldPath, decode, load_bytes


class _Compiler:
    """Compiles every expression of a values file, sharing programs between identical expressions, and
    gathers all compile errors so one run reports them all (as fault-quarantine's multierror does)."""

    def __init__(self, now: _dt.datetime) -> None:
        self.environments = {
            HEALTH_EVENT: nvsentinel_rule("event"),
            NODE: nvsentinel_rule("node"),
            "criterion": lifecycle_criterion(now),
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
    file = Path(path)
    raw = read_input(str(file), "--values")
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


_RULE_SET_KEYS = ("enabled", "version", "name", "priority", "match", "cordon", "taint", "label")


def _rule_sets(source: _Source, base: FieldPath | None, toml: bool, compiler: _Compiler, warnings: list[str], *,
               validation: bool) -> list[RuleSet]:
    if base is None:
        return []
    items = _get(source.data, base)
    _expect_type(source, base, items, list, "a list of rule sets")
    if len(items) > MAX_RULE_SETS:
        raise source.error(base, f"{len(items)} rule sets, over the limit of {MAX_RULE_SETS} "
                           "(NVSentinel reads them from a ConfigMap of at most 1 MiB)")
    return [_rule_set(source, (*base, index), item, toml=toml, compiler=compiler, warnings=warnings,
                      validation=validation) for index, item in enumerate(items)]


def _rule_set(source: _Source, path: FieldPath, item: Any, *, toml: bool, compiler: _Compiler, warnings: list[str],
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


def _cordon(source: _Source, path: FieldPath, item: Mapping[str, Any], optional: bool, validation: bool) -> bool:
    cordon = item.get("cordon")
    if cordon is None and (optional or validation):
        return False
    if cordon is None:
        raise source.error(path, "cordon.shouldCordon is missing; the chart renders "
                           "`shouldCordon = <no value>` and fault-quarantine does not start; add "
                           "cordon: {shouldCordon: true} (or false)")
    _expect_type(source, (*path, "cordon"), cordon, Mapping, "a mapping {shouldCordon: true|false}")
    should = cordon.get("shouldCordon")
    _expect_type(source, (*path, "cordon", "shouldCordon"), should, bool, "true or false")
    return bool(should)


def _taint(source: _Source, path: FieldPath, taint: Any) -> Taint | None:
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
        raise source.error((*path, "taint", "effect"), "taint effect "
                           f"{parts['effect']!r} is not one of {', '.join(TAINT_EFFECTS)}; Kubernetes "
                           "would reject the taint")
    return Taint(parts["key"], parts["value"], parts["effect"])


def _label(source: _Source, path: FieldPath, label: Any) -> tuple[str, str] | None:
    if not label:
        return None
    _expect_type(source, (*path, "label"), label, Mapping, "a mapping {key, value}")
    key, value = label.get("key", ""), label.get("value", "")
    _expect_type(source, (*path, "label", "key"), key, str, "a string")
    _expect_type(source, (*path, "label", "value"), value, str, "a string")
    return (key, value) if key else None


def _rule(source: _Source, path: FieldPath, raw: Any, *, compiler: _Compiler, enabled: bool, warnings: list[str],
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


def _criteria(source: _Source, path: FieldPath, compiler: _Compiler) -> list[Criterion]:
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
