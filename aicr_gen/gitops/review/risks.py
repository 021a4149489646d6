"""Which changes a reviewer must see first (pure: a ``Changes`` and its two trees in, ``HighRisk`` records out).

High-risk, most serious category first (``change_model.RISK_ORDER``):

- the GPU driver (a pool's NVIDIADriver, a driver value of the GPU Operator), the GPU Operator, the network
  operator, the DRA driver: any version, place or value change;
- kernel and OS constraints of the recipe;
- sources: chart repositories or image registries that move (``spec.mirror`` added or changed moves every one:
  the cluster pulls everything from elsewhere), counted per move;
- NVSentinel starting to act (leaving monitor mode, dry run off) or its circuit breaker loosened: a higher
  percentage, a shorter window, a higher ``maxNodes`` or none, or the breaker off. The breaker trips when more
  nodes than its bound were cordoned within its window (NVSentinel's fault-quarantine docs, "Circuit Breaker"),
  so a shorter window counts fewer cordons and trips later: looser; a longer one is stricter;
- certification loosened: a threshold loosened or removed (or changed so it cannot be compared), a category or
  the post-change run removed, certification removed;
- a component's version going back (``DOWNGRADED``), where no category above already names it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aicr_gen.gitops.review import changes as tree_changes
from aicr_gen.gitops.review.model import RISK_ORDER, Changes, HighRisk, Risk

RISKY_COMPONENTS: dict[str, Risk] = {"gpu-operator": "gpu-operator", "network-operator": "network-operator",
                                     "nvidia-dra-driver-gpu": "gpu-driver"}
DRIVER_PREFIX = "NVIDIADriver/"
"""How a pool's NVIDIADriver is named among the component changes (``gitops.changes``)."""
_DRIVER = re.compile(r"driver", re.IGNORECASE)
_KERNEL = re.compile(r"^OS\.|kernel", re.IGNORECASE)
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_LOWER_FIRST = re.compile(rf"^\s*value\s*(>=|>|<=|<)\s*{_NUMBER}\s*\Z")
_NUMBER_FIRST = re.compile(rf"^\s*{_NUMBER}\s*(<=|<|>=|>)\s*value\s*\Z")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}


def _bound(expression: str) -> tuple[str, float] | None:
    """``value OP NUMBER`` (or ``NUMBER OP value``) as (OP, NUMBER) with value on the left; else None."""
    match = _LOWER_FIRST.match(expression)
    if match:
        return match.group(1), float(match.group(2))
    match = _NUMBER_FIRST.match(expression)
    return (_FLIP[match.group(2)], float(match.group(1))) if match else None


def loosened(old: str, new: str) -> bool | None:
    """Whether threshold ``new`` accepts more than ``old``: True, False, or None when it cannot be told (not both
    one bound of ``value`` in the same direction)."""
    was, now = _bound(old), _bound(new)
    if was is None or now is None or was[0][0] != now[0][0]:
        return None
    if was[1] != now[1]:
        return now[1] < was[1] if was[0][0] == ">" else now[1] > was[1]
    return len(now[0]) > len(was[0])  # > -> >= (or < -> <=) admits the bound itself


def _unpooled(line: str) -> str:
    """A certification line without its ``pool <name>: `` lead."""
    return line.split(": ", 1)[1] if line.startswith("pool ") and ": " in line else line


def _certification_risks(old: Mapping[str, bytes], new: Mapping[str, bytes],
                         lines: list[str]) -> list[HighRisk]:
    """The cluster's certification and each pool's (its lines led by ``pool <name>:``)."""
    out = [HighRisk(category="certification", text=line) for line in lines
           if _unpooled(line) in ("certification removed", "post-change certification off")
           or _unpooled(line).startswith("category removed: ")]
    for pool in ["", *tree_changes.certification_pools(old, new)]:
        prefix, lead = (f"pools/{pool}/", f"pool {pool}: ") if pool else ("", "")
        if f"{prefix}{tree_changes.CERTIFICATION}" not in new:
            continue
        before, after = tree_changes.thresholds(old, prefix), tree_changes.thresholds(new, prefix)
        for key in sorted(before):
            if key not in after:
                out.append(HighRisk(category="certification",
                                    text=f"{lead}threshold {key} removed (was {before[key]})"))
            elif before[key] != after[key]:
                looser = loosened(before[key], after[key])
                if looser is not False:
                    verdict = "loosened" if looser else "changed (check it is not looser)"
                    out.append(HighRisk(category="certification",
                                        text=f"{lead}threshold {key} {verdict}: {before[key]} -> {after[key]}"))
    return out


def _sentinel_risks(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[HighRisk]:
    was, now = tree_changes.sentinel_mode(old), tree_changes.sentinel_mode(new)
    if now != "quarantine":
        return []
    if was != "quarantine":
        start = "deployed in quarantine mode" if was is None else "leaves monitor mode: monitor -> quarantine"
        when = " once dry run is off" if tree_changes.sentinel_switch(new, "dryRun") else ""
        return [HighRisk(category="nvsentinel", text=f"NVSentinel {start} (it cordons and taints faulty nodes{when})")]
    out = [HighRisk(category="nvsentinel", text="NVSentinel dry run off: quarantine actions are now taken")] \
        if tree_changes.sentinel_switch(old, "dryRun") and not tree_changes.sentinel_switch(new, "dryRun") else []
    return out + _breaker_risks(tree_changes.breaker(tree_changes.sentinel_values(old)),
                                tree_changes.breaker(tree_changes.sentinel_values(new)))


def _breaker_risks(was: Mapping[str, Any], now: Mapping[str, Any]) -> list[HighRisk]:
    """The circuit breaker of a quarantining NVSentinel letting more nodes be cordoned (see the module rules)."""
    from aicr_gen.cel.durations import seconds as duration_seconds

    if was.get("enabled", True) and not now.get("enabled", True):
        return [HighRisk(category="nvsentinel", text="circuit breaker off: nothing bounds how many nodes are "
                                                     "cordoned")]
    looser = []
    if isinstance(was.get("percentage"), int) and isinstance(now.get("percentage"), int) \
            and now["percentage"] > was["percentage"]:
        looser.append("percentage")
    seconds = [duration_seconds(str(item)) if item is not None else None
               for item in (was.get("duration"), now.get("duration"))]
    if seconds[0] is not None and seconds[1] is not None and seconds[1] < seconds[0]:
        looser.append("duration")
    if was.get("maxNodes") is not None and (now.get("maxNodes") is None or now["maxNodes"] > was["maxNodes"]):
        looser.append("maxNodes")
    return [HighRisk(category="nvsentinel", text=f"circuit breaker loosened: {key} "
                                                 f"{tree_changes.breaker_text(key, was.get(key))} -> "
                                                 f"{tree_changes.breaker_text(key, now.get(key))}")
            for key in looser]


def _source_risks(found: Changes) -> list[HighRisk]:
    """Chart repository moves counted per repository moved to (``17 charts now pulled from oci://mirror/charts,
    from 12 repositories before``), and every image registry move (already counted)."""
    moves: dict[str, list[str]] = {}
    for item in found.components:
        for detail in item.details:
            if detail.startswith("source ") and " -> " in detail:
                was, now = detail.removeprefix("source ").split(" -> ", 1)
                moves.setdefault(now, []).append(was)
    out = []
    for now, were in sorted(moves.items(), key=lambda item: (-len(item[1]), item[0])):
        origins = sorted(set(were))
        before = origins[0] if len(origins) == 1 else f"{len(origins)} repositories"
        out.append(HighRisk(category="sources", text=f"{len(were)} chart{'' if len(were) == 1 else 's'} now pulled "
                                                     f"from {now} (from {before} before)"))
    return out + [HighRisk(category="sources", text=f"{line} (pulled from elsewhere)") for line in found.sources]


def risk_of(component: str) -> Risk | None:
    """The high-risk category of a component change (None when none): a pool's NVIDIADriver
    (``NVIDIADriver/<pool>``) replaces that pool's GPU driver, as a driver change of the GPU Operator's values
    does."""
    return "gpu-driver" if component.startswith(DRIVER_PREFIX) else RISKY_COMPONENTS.get(component)


def high_risk(found: Changes, old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[HighRisk]:
    """The changes to look at first, most serious category first (``RISK_ORDER``)."""
    out = []
    for item in found.components:
        category = risk_of(item.name) or ("downgrade" if item.change == "downgraded" else None)
        if category is not None:
            out.append(HighRisk(category=category, text=item.text))
    for value in found.values:
        risky = RISKY_COMPONENTS.get(value.component)
        if risky is not None:
            out.append(HighRisk(category="gpu-driver" if _DRIVER.search(value.path) else risky, text=value.text))
    out += [HighRisk(category="os-constraint", text=item.text) for item in found.constraints
            if _KERNEL.search(item.name)]
    out += _source_risks(found)
    out += _sentinel_risks(old, new)
    out += _certification_risks(old, new, found.certification)
    return sorted(out, key=lambda risk: RISK_ORDER.index(risk.category))
