"""Evaluating events against the rule sets and resolving the actions as fault-quarantine would."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from aicr_gen.cel import CelError, CelLimitError
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.rules.model import (
    HEALTH_EVENT,
    PROCESSING_STRATEGY,
    Event,
    Outcome,
    Rule,
    RuleConfig,
    RuleSet,
    Taint,
)
from aicr_gen.sentinel.rules.nodes import bare_node
from aicr_gen.sentinel.rules.source import _get


class _Problems:
    """Evaluation errors and non-boolean results per rule, counted, with the first event that hit them, and the
    rules that gave a boolean at least once."""

    def __init__(self) -> None:
        self.by_rule: dict[str, list[Any]] = {}
        self.count = 0
        self.worked: set[str] = set()

    def add(self, where: str, subject: str, message: str, unit: str) -> None:
        entry = self.by_rule.setdefault(where, [0, subject, message, unit])
        entry[0] += 1
        self.count += 1

    def warnings(self) -> list[str]:
        return [f"{where}: failed on {count} {unit}(s), so it did not match there (fault-quarantine logs 'Rule "
                f"evaluation failed'); first: {subject}: {message}"
                for where, (count, subject, message, unit) in self.by_rule.items() if where in self.worked]

    def dead(self) -> list[str]:
        """The rules that failed on every event (or node) they were evaluated on: they never match."""
        return [f"{where}: failed on every {unit} it was evaluated on ({count}), so it never matches "
                f"(fault-quarantine logs 'Rule evaluation failed'); first: {subject}: {message}"
                for where, (count, subject, message, unit) in self.by_rule.items() if where not in self.worked]


class Evaluator:
    """Evaluates events against a RuleConfig; caches Node rule results per node and shares HealthEvent rule
    outcomes (and, per node, the rule sets matched) between events alike in every field those rules read
    (``Program.fields_read``): 10,000 events then cost as many evaluations as they hold distinct combinations
    of those fields."""

    def __init__(self, config: RuleConfig, nodes: Mapping[str, dict[str, Any]], *, nodes_given: bool) -> None:
        self.config = config
        self.nodes = nodes
        self.nodes_given = nodes_given
        self.problems = _Problems()
        self.node_results: dict[tuple[int, str], bool] = {}
        self.missing_nodes: dict[str, int] = {}
        self.bare: dict[str, dict[str, Any]] = {}
        self._by_name = _by_name(config.rule_sets)
        self._event_fields = _event_fields_read(config)
        self._shared: dict[tuple[Any, ...], dict[int, bool | str]] = {}
        self._by_alike: dict[tuple[Any, ...], tuple[tuple[str, ...], tuple[RuleSet, ...] | None]] = {}

    def _node(self, name: str) -> dict[str, Any]:
        node = self.nodes.get(name)
        if node is not None:
            return node
        if self.nodes_given:
            self.missing_nodes[name] = self.missing_nodes.get(name, 0) + 1
        if name not in self.bare:
            self.bare[name] = bare_node(name)
        return self.bare[name]

    def _run(self, rule: Rule, activation: Mapping[str, Any], event: Event,
             outcomes: dict[int, bool | str] | None = None) -> bool:
        """The rule's result on this event; a failure counts against the rule (once per event, as every caller
        keeps the result per event). ``outcomes``: shared with alike events, keyed by program."""
        outcome = None if outcomes is None else outcomes.get(id(rule.program))
        if outcome is None:
            outcome = self._outcome(rule, activation, event)
            if outcomes is not None:
                outcomes[id(rule.program)] = outcome
        if isinstance(outcome, str):
            subject, unit = (event.name, "event") if rule.kind == HEALTH_EVENT else (f"node {event.node_name}", "node")
            self.problems.add(rule.where, subject, outcome, unit)
            return False
        self.problems.worked.add(rule.where)
        return outcome

    @staticmethod
    def _outcome(rule: Rule, activation: Mapping[str, Any], event: Event) -> bool | str:
        """The rule's result, or why it does not match (an evaluation error, a result that is not a boolean)."""
        try:
            result = rule.program.evaluate(activation)
        except CelError as err:
            return str(err)
        except CelLimitError as err:
            raise InvalidInputError(f"{rule.where}: {err} (on event {event.name})") from None
        return result if type(result) is bool else f"the result is a {type(result).__name__}, not a boolean"

    def _rule(self, rule: Rule, event: Event, event_results: dict[int, bool], node: dict[str, Any],
              shared: dict[int, bool | str] | None) -> bool:
        if rule.kind == HEALTH_EVENT:
            key = id(rule.program)
            if key not in event_results:
                event_results[key] = self._run(rule, {"event": event.cel}, event, shared)
            return event_results[key]
        node_key = (id(rule.program), event.node_name)
        if node_key not in self.node_results:
            self.node_results[node_key] = self._run(rule, {"node": node}, event)
        return self.node_results[node_key]

    def matches(self, rule_set: RuleSet, event: Event, event_results: dict[int, bool], node: dict[str, Any],
                shared: dict[int, bool | str] | None = None) -> bool:
        if not rule_set.enabled:
            return False
        if rule_set.any and any(self._rule(rule, event, event_results, node, shared) for rule in rule_set.any):
            return True
        return bool(rule_set.all) and all(self._rule(rule, event, event_results, node, shared)
                                          for rule in rule_set.all)

    def _alike(self, event: Event) -> tuple[Any, ...] | None:
        """``event``'s values at every field the HealthEvent rules read (None: not known what they read)."""
        if self._event_fields is None:
            return None
        cel = event.cel
        key = tuple([_freeze(cel[name]) if name in cel else _ABSENT for name in self._event_fields])
        return None if None in key else key

    def _matched(self, event: Event, node: dict[str, Any]) -> tuple[list[str], list[RuleSet] | None]:
        """The names of the rule sets ``event`` matches, and the validation rule sets it matches (None when there
        are none). Events alike on the same node match the same: reused, unless working it out counted a
        failure, which every such event must count again."""
        alike = self._alike(event)
        found = None if alike is None else self._by_alike.get((alike, event.node_name))
        if found is not None:
            return list(found[0]), None if found[1] is None else list(found[1])
        shared = None if alike is None else self._shared.setdefault(alike, {})
        failures = self.problems.count
        results: dict[int, bool] = {}
        matched_sets = [rule_set for rule_set in self.config.rule_sets
                        if self.matches(rule_set, event, results, node, shared)]
        matched = list(dict.fromkeys(rule_set.name for rule_set in matched_sets))
        validation = ([rule_set for rule_set in self.config.validation
                       if self.matches(rule_set, event, results, node, shared)] if self.config.validation else None)
        if alike is not None and self.problems.count == failures:
            self._by_alike[alike, event.node_name] = (tuple(matched), None if validation is None else tuple(validation))
        return matched, validation

    def evaluate(self, event: Event) -> Outcome:
        node = self._node(event.node_name)
        matched, validation = self._matched(event, node)
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


_ABSENT = ("absent",)


def _event_fields_read(config: RuleConfig) -> tuple[str, ...] | None:
    """Every event field a HealthEvent rule of ``config`` reads, or None when one may read the whole event."""
    found: set[str] = set()
    for rule_set in (*config.rule_sets, *config.validation):
        for rule in (*rule_set.any, *rule_set.all):
            if rule.kind != HEALTH_EVENT:
                continue
            reads = rule.program.fields_read
            if reads is None:
                return None
            found.update(reads.get("event", ()))
    return tuple(sorted(found))


def _freeze(value: Any) -> Any:
    """``value`` as a hashable that equals another only for the same CEL value (types, ``-0.0``, NaN and map
    order included), or None for a value of another type."""
    kind = type(value)
    if kind in (str, bool, int) or value is None:
        return kind, value
    if kind is float:
        return kind, value.hex()
    if kind is list:
        parts = [_freeze(item) for item in value]
    elif kind is dict:
        parts = [_freeze(part) for item in value.items() for part in item]
    else:
        return None
    return None if None in parts else (kind, tuple(parts))


class _Actions(NamedTuple):
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
             nodes_given: bool) -> tuple[list[Outcome], list[str], list[str]]:
    """Outcomes in event order, warnings about rules that failed on some events and nodes that were missing,
    and the rules that failed on every event they were evaluated on (``_Problems.dead``)."""
    evaluator = Evaluator(config, nodes, nodes_given=nodes_given)
    outcomes = [evaluator.evaluate(event) for event in events]
    return outcomes, evaluator.warnings(), evaluator.problems.dead()
