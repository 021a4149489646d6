"""Warnings for rules that can never match or do not do what they seem to, judged from what each variable
holds in NVSentinel."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from aicr_gen.cel import Comparison, Operand, Program
from aicr_gen.sentinel.rules.model import (
    _CEL_KIND,
    _NULLABLE,
    ENUMS,
    HEALTH_EVENT,
    HEALTH_EVENT_FIELDS,
    MESSAGE_FIELDS,
    NODE,
    NODE_CACHED,
    RuleConfig,
    RuleSet,
)
from aicr_gen.sentinel.rules.source import _suggest
from aicr_gen.yaml import shorten


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
