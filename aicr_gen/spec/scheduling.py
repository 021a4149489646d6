"""A cluster's scheduling and storage settings, as ``aicr bundle``'s flags and ``spec.scheduling`` give them:
node selectors (``key=value``), tolerations and the workload-gate taint (``key=value:effect``, ``key:effect``,
``*``), read as AICR reads them (pkg/snapshotter ``ParseTolerations``/``ParseTaint``, AICR 8703d8cf). Writing
them into chart values is ``render/scheduling.py``."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple


WILDCARD: tuple[Mapping[str, Any], ...] = ({"operator": "Exists"},)
"""AICR's default toleration for system and accelerated pods: tolerate every taint."""


_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


class Scheduling(NamedTuple):
    """A cluster's scheduling and storage settings (``aicr bundle`` flags, ``spec.scheduling``)."""

    system_node_selector: tuple[tuple[str, str], ...] = ()
    system_tolerations: tuple[Mapping[str, Any], ...] = WILDCARD
    accelerated_node_selector: tuple[tuple[str, str], ...] = ()
    accelerated_tolerations: tuple[Mapping[str, Any], ...] = WILDCARD
    workload_gate: str = ""
    """The nodewright runtime-required taint, ``key=value:effect`` or ``key:effect``."""
    workload_selector: tuple[tuple[str, str], ...] = ()
    nodes: int = 0
    """Estimated GPU node count (0: unset)."""
    storage_class: str = ""
    shared_storage_class: str = ""


def parse_selector(flag: str, items: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """``key=value`` items as a node selector (a later key wins, as in a map)."""
    selector: dict[str, str] = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise InvalidInputError(f"{flag} {item!r}: expected key=value, e.g. nodeGroup=gpu-nodes")
        selector[key] = value
    return tuple(selector.items())


def _taint_parts(flag: str, text: str) -> tuple[str, str, str]:
    head, colon, effect = text.partition(":")
    if not colon or ":" in effect:
        raise InvalidInputError(f"{flag} {text!r}: expected key=value:effect or key:effect, "
                                "e.g. nvidia.com/gpu=present:NoSchedule")
    if effect not in _EFFECTS:
        raise InvalidInputError(f"{flag} {text!r}: the effect {effect!r} is not one of {', '.join(_EFFECTS)}")
    key, _, value = head.partition("=")
    return key, value, effect


def parse_tolerations(flag: str, items: Sequence[str]) -> tuple[Mapping[str, Any], ...]:
    """``key=value:effect``, ``key:effect`` or ``*`` items as tolerations; none given is the wildcard."""
    if not items:
        return WILDCARD
    tolerations: list[Mapping[str, Any]] = []
    for item in items:
        if item == "*":
            tolerations.append({"operator": "Exists"})
            continue
        key, value, effect = _taint_parts(flag, item)
        toleration: dict[str, Any] = {"key": key} if key else {}
        toleration["operator"] = "Equal" if value else "Exists"
        if value:
            toleration["value"] = value
        toleration["effect"] = effect
        tolerations.append(toleration)
    return tuple(tolerations)


def parse_taint(flag: str, text: str) -> str:
    """A workload-gate taint, checked, in Kubernetes' ``key=value:effect`` string form ('' for none)."""
    if not text:
        return ""
    key, value, effect = _taint_parts(flag, text)
    if not key:
        raise InvalidInputError(f"{flag} {text!r}: the taint needs a key, e.g. "
                                "nodewright.io/runtime-required:NoSchedule")
    return f"{key}={value}:{effect}" if value else f"{key}:{effect}"
