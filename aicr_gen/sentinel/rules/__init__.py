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

from aicr_gen.sentinel.rules.config import default_now, load_config
from aicr_gen.sentinel.rules.evaluation import Evaluator, evaluate
from aicr_gen.sentinel.rules.events import load_events, normalise_event
from aicr_gen.sentinel.rules.expectations import compare, load_expectations
from aicr_gen.sentinel.rules.lints import lint, lint_rule
from aicr_gen.sentinel.rules.model import (
    HEALTH_EVENT_FIELDS,
    PROCESSING_STRATEGY,
    RECOMMENDED_ACTION,
    Outcome,
    RuleConfig,
)
from aicr_gen.sentinel.rules.nodes import bare_node, load_nodes, node_view

__all__ = [
    "HEALTH_EVENT_FIELDS",
    "PROCESSING_STRATEGY",
    "RECOMMENDED_ACTION",
    "Evaluator",
    "Outcome",
    "RuleConfig",
    "bare_node",
    "compare",
    "default_now",
    "evaluate",
    "lint",
    "lint_rule",
    "load_config",
    "load_events",
    "load_expectations",
    "load_nodes",
    "node_view",
    "normalise_event",
]
