"""The rule model (rule sets, rules, criteria, events, outcomes) and the HealthEvent as NVSentinel defines
it (health_event.proto)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

from aicr_gen.cel import Program

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


class Rule(NamedTuple):
    """One ``{kind, expression}`` of a rule set's match group, compiled."""

    kind: str
    program: Program
    where: str


class Taint(NamedTuple):
    key: str
    value: str
    effect: str


class RuleSet(NamedTuple):
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


class Criterion(NamedTuple):
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


class Event(NamedTuple):
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
