"""CEL policies over a ClusterSpec and its resolved recipe (``aicr-gen policy check``)."""

from __future__ import annotations

from aicr_gen.policy.check import Finding, Policy, evaluate, load_policies, shipped_root

__all__ = ["Finding", "Policy", "evaluate", "load_policies", "shipped_root"]
