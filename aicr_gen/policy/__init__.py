"""CEL policies over a ClusterSpec and its resolved recipe (``aicr-gen policy check``): the engine is
``aicr_gen.policy.check``, imported on first use of these names (``shipped`` alone loads no CEL)."""

from __future__ import annotations

from typing import Any

__all__ = ["Finding", "Policy", "evaluate", "load_policies", "shipped_root"]


def __getattr__(name: str) -> Any:
    if name == "shipped_root":
        from aicr_gen.policy.shipped import shipped_root

        return shipped_root
    if name in __all__:
        from aicr_gen.policy import check

        return getattr(check, name)
    raise AttributeError(f"module 'aicr_gen.policy' has no attribute {name!r}")
