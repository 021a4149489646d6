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
from aicr_gen.yamlio import Document

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import Pool, Spec

CERT_NAME = "gpu-certification"
"""The name of the cluster's Certification; a pool's is ``CERT_NAME-POOL``."""
OWNER_LABEL = "nvidia.com/gpu-operator.driver.owner"
"""The label the operator sets on each GPU node to record its NVIDIADriver; a selector on it is rejected."""


def disjoint(first: Mapping[str, str], second: Mapping[str, str]) -> bool:
    """Whether no node can match both equality selectors: some key is in both with different values."""
    return any(key in second and second[key] != value for key, value in first.items())


def check_pools(doc: Document, spec: Spec) -> None:
    """spec.pools: no cluster accelerator beside them, unique names, pool overrides that parse, no selector on
    the operator's owner label, and pairwise disjoint node selectors (the first overlap names both pools)."""
    from aicr_gen.render.values import parse

    if spec.criteria.accelerator not in (None, ""):
        raise InvalidInputError(f"{doc.where(('spec', 'criteria', 'accelerator'))}: with spec.pools each pool names "
                                "its accelerator; drop spec.criteria.accelerator (criteria hold the cluster-wide "
                                "service, intent, os and platform)")
    if spec.scheduling is not None and OWNER_LABEL in spec.scheduling.acceleratedNodeSelector:
        raise InvalidInputError(f"{doc.where(('spec', 'scheduling', 'acceleratedNodeSelector', OWNER_LABEL))}: "
                                f"every pool's NVIDIADriver takes this selector, and the GPU Operator sets "
                                f"{OWNER_LABEL} itself and rejects selectors on it; select GPU nodes by another label")
    for index, pool in enumerate(spec.pools):
        base = ("spec", "pools", index)
        twin = next((other for other in spec.pools[:index] if other.name == pool.name), None)
        if twin is not None:
            raise InvalidInputError(f"{doc.where((*base, 'name'))}: pool {pool.name!r} is named twice; give each "
                                    "pool its own name")
        if OWNER_LABEL in pool.nodeSelector:
            raise InvalidInputError(f"{doc.where((*base, 'nodeSelector', OWNER_LABEL))}: the GPU Operator sets "
                                    f"{OWNER_LABEL} itself and rejects selectors on it; select the pool by a label "
                                    "of its nodes (e.g. node.kubernetes.io/instance-type)")
        for number, text in enumerate(pool.tolerations):
            try:
                pool_tolerations([text])
            except InvalidInputError as err:
                raise InvalidInputError(f"{doc.where((*base, 'tolerations', number))}: {err}") from None
        for field, flag in (("set", "--set"), ("setJson", "--set-json")):
            for number, text in enumerate(getattr(pool.overrides, field) if pool.overrides else []):
                try:
                    parse(flag, text)
                except InvalidInputError as err:
                    raise InvalidInputError(f"{doc.where((*base, 'overrides', field, number))}: {err}") from None
        for earlier, other in enumerate(spec.pools[:index]):
            if not disjoint(other.nodeSelector, pool.nodeSelector):
                raise InvalidInputError(
                    f"{doc.where((*base, 'nodeSelector'))}: pools {other.name!r} (spec.pools[{earlier}]) and "
                    f"{pool.name!r} can select the same node ({_text(other.nodeSelector)} and "
                    f"{_text(pool.nodeSelector)}); selectors are disjoint only when a label key is in both with "
                    "different values: select both pools by one such label, e.g. node.kubernetes.io/instance-type")
        _check_operations(doc, spec, index, pool)
    _check_rule_set_pools(doc, spec)


def _text(selector: Mapping[str, str]) -> str:
    return "{" + ", ".join(f"{key}={value}" for key, value in selector.items()) + "}"


def pool_tolerations(items: list[str]) -> tuple[dict[str, Any], ...] | None:
    """Given tolerations, parsed; None when none are given (the GPU Operator's operand tolerations hold)."""
    from aicr_gen.render.scheduling import parse_tolerations

    return tuple(dict(item) for item in parse_tolerations("tolerations", items)) if items else None


def _check_operations(doc: Document, spec: Spec, index: int, pool: Pool) -> None:
    """A pool's selector as Kubernetes labels (it becomes NVCRE targets and NVSentinel rules), its certification
    (as spec.certification's, plus categories, a target that can match and names within their limits) and its
    validation tests (they need the lifecycle manager)."""
    from aicr_gen.certify.nvcre import label_key_problem
    from aicr_gen.limits import LABEL_VALUE

    base = ("spec", "pools", index)
    for key, value in pool.nodeSelector.items():
        problem = label_key_problem(key)
        if problem is None and value and not LABEL_VALUE.fullmatch(value):
            problem = f"label value {value!r} is not valid (at most 63 of [A-Za-z0-9-_.], alphanumeric ends)"
        if problem:
            raise InvalidInputError(f"{doc.where((*base, 'nodeSelector', key))}: {problem}")
    cert = pool.certification
    if cert is not None:
        where = (*base, "certification")
        check_certification(doc, cert, where)
        if not cert.categories:
            raise InvalidInputError(f"{doc.where((*where, 'categories'))}: a pool's certification is one "
                                    "Certification of its nodes; list at least one category, e.g. "
                                    "communication/nccl-all-reduce")
        try:
            certification_selector(spec, pool)
        except InvalidInputError as err:
            raise InvalidInputError(f"{doc.where((*where, 'nodeSelector'))}: {err}") from None
        from aicr_gen.certify.cron import name_room

        room = name_room(cert.schedule is not None, cert.postChange) - len(certification_name(""))
        if len(pool.name) > room:
            raise InvalidInputError(f"{doc.where((*base, 'name'))}: the pool's Certification "
                                    f"{certification_name(pool.name)!r} and the objects named after it (CronJob, "
                                    f"post-change Jobs) would go over their name limits; certify a pool whose name has "
                                    f"at most {room} characters")
    if pool.validationTests:
        where = (*base, "validationTests")
        if spec.sentinel is None or not spec.sentinel.lifecycle:
            raise InvalidInputError(f"{doc.where(where)}: the lifecycle manager runs these tests; set "
                                    "spec.sentinel.lifecycle: true (with mode: quarantine) or drop the field")
        for number, test in enumerate(pool.validationTests):
            if test in pool.validationTests[:number]:
                raise InvalidInputError(f"{doc.where((*where, number))}: test {test!r} is listed twice; list it once")


def _check_rule_set_pools(doc: Document, spec: Spec) -> None:
    limits = spec.sentinel.ruleSetPools if spec.sentinel is not None else {}
    names = [pool.name for pool in spec.pools]
    for rule_set, pools in limits.items():
        where = ("spec", "sentinel", "ruleSetPools", rule_set)
        if not pools:
            raise InvalidInputError(f"{doc.where(where)}: name the pools the rule set is limited to, or drop it")
        for number, name in enumerate(pools):
            if name not in names:
                raise InvalidInputError(f"{doc.where((*where, number))}: {name!r} is not a pool of spec.pools "
                                        f"({', '.join(names)})")


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
