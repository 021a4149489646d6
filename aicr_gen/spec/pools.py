"""GPU node pools of a ClusterSpec (``spec.pools``): the checks a schema cannot express, and the names and
targets of each pool's Certification.

Two pools must never select one node: the GPU Operator (v26.3.x, what the catalog pins) reports a node that two
NVIDIADrivers select as a conflict and installs neither driver. A ``nodeSelector`` is a conjunction of label
equalities, so two selectors can both match one node unless they require different values of one label:
**two selectors are disjoint iff some key appears in both with different values.** Anything else (no shared key,
or shared keys with equal values) can overlap on a node that carries both sets of labels, and is refused.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from aicr_gen.errors import InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import Pool, Spec

CERT_NAME = "gpu-certification"
"""The name of the cluster's Certification; a pool's is ``CERT_NAME-POOL``."""
OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"
"""The label the operator sets on each GPU node to record its NVIDIADriver; a selector on it is rejected."""


def disjoint(first: Mapping[str, str], second: Mapping[str, str]) -> bool:
    """Whether no node can match both equality selectors: some key is in both with different values."""
    return any(key in second and second[key] != value for key, value in first.items())


def pool_tolerations(items: list[str]) -> tuple[dict[str, Any], ...] | None:
    """Given tolerations, parsed; None when none are given (the GPU Operator's operand tolerations hold)."""
    from aicr_gen.spec.scheduling import parse_tolerations
    return tuple(dict(item) for item in parse_tolerations("tolerations", items)) if items else None


def certification_name(pool: str) -> str:
    """The name of a pool's Certification (and the prefix of its jobs' objects)."""
    return f"{CERT_NAME}-{pool}"


def certification_selector(spec: Spec, pool: Pool) -> dict[str, str]:
    """The target of a pool's Certification: the pool's nodeSelector with spec.certification's and the pool
    certification's own added; a label two of them give different values is an error (no node would match)."""
    layers = [("the pool's nodeSelector", pool.nodeSelector),
              ("spec.certification.nodeSelector", spec.certification.nodeSelector if spec.certification else {}),
              ("its own nodeSelector", pool.certification.nodeSelector if pool.certification else {})]
    merged: dict[str, tuple[str, str]] = {}
    for what, selector in layers:
        for key, value in selector.items():
            if key in merged and merged[key][0] != value:
                raise InvalidInputError(f"label {key} is {merged[key][0]!r} in {merged[key][1]} and {value!r} in "
                                        f"{what}, so the Certification would target no node; give it one value")
            merged.setdefault(key, (value, what))
    return {key: value for key, (value, _) in merged.items()}


def selector_text(selector: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in selector.items()) + "}"
