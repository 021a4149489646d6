"""What changed between two ``sync`` trees, in a reviewer's words (pure: two trees in, a value out).

A tree is the managed folder's files (relative path -> bytes), as ``render_tree`` makes them or as a commit holds
them. The semantic parts are read from the tree's own files: components from ``recipe.yaml``, NVSentinel from
``sentinel/values.yaml``, certification from ``certification/``. The commit message of ``sync`` and
``aicr-gen plan`` both say what this finds.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RECIPE = "recipe.yaml"
SENTINEL = "sentinel/values.yaml"
CERTIFICATION = "certification/certification.yaml"
CRONJOB = "certification/schedule/cronjob.yaml"
POST_CHANGE = "certification/post-change/argocd/job.yaml"


@dataclass(frozen=True)
class ComponentChange:
    """One component: ``added``, ``removed``, ``bumped`` (version) or ``changed`` (namespace or source)."""

    name: str
    kind: str
    old_version: str = ""
    new_version: str = ""
    details: tuple[str, ...] = ()

    def describe(self) -> str:
        version = {"added": self.new_version, "removed": self.old_version,
                   "bumped": f"{self.old_version} -> {self.new_version}"}.get(self.kind, self.new_version)
        extra = f" ({'; '.join(self.details)})" if self.details else ""
        return f"{self.kind} {self.name} {version}".rstrip() + extra


@dataclass(frozen=True)
class Changes:
    """Everything that differs; empty lists where nothing did."""

    components: list[ComponentChange] = field(default_factory=list)
    sentinel: list[str] = field(default_factory=list)
    certification: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    changed: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)

    @property
    def files(self) -> int:
        return len(self.added) + len(self.changed) + len(self.removed)


def _yaml(tree: Mapping[str, bytes], name: str) -> dict[str, Any]:
    """A tree file as a mapping; absent or unreadable (a hand-edited commit) is empty."""
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.yamlio import load_text

    if name not in tree:
        return {}
    try:
        data = load_text(tree[name].decode("utf-8"), name).data
    except (InvalidInputError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _refs(recipe: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(ref["name"]): ref for ref in recipe.get("componentRefs") or []
            if isinstance(ref, dict) and ref.get("name")}


def component_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ComponentChange]:
    """Components added, removed, bumped or moved (namespace, source), by name."""
    before, after = _refs(_yaml(old, RECIPE)), _refs(_yaml(new, RECIPE))
    out = [ComponentChange(name, "added", new_version=str(after[name].get("version", "")))
           for name in sorted(set(after) - set(before))]
    out += [ComponentChange(name, "removed", old_version=str(before[name].get("version", "")))
            for name in sorted(set(before) - set(after))]
    for name in sorted(set(before) & set(after)):
        was, now = before[name], after[name]
        details = tuple(f"{key} {was.get(key, '') or '-'} -> {now.get(key, '') or '-'}"
                        for key in ("namespace", "source", "chart") if was.get(key) != now.get(key))
        old_version, new_version = str(was.get("version", "")), str(now.get("version", ""))
        if old_version != new_version:
            out.append(ComponentChange(name, "bumped", old_version, new_version, details))
        elif details:
            out.append(ComponentChange(name, "changed", old_version, new_version, details))
    return out


def _mode(values: Mapping[str, Any]) -> str:
    return "quarantine" if _get(values, "global", "faultQuarantine", "enabled") else "monitor"


def _switch(label: str, was: Any, now: Any) -> list[str]:
    return [] if bool(was) == bool(now) else [f"{label} {'on' if now else 'off'}"]


def sentinel_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """NVSentinel: deployed or not, mode, dry run, lifecycle manager, validation, rule sets, circuit breaker."""
    if (SENTINEL in old) != (SENTINEL in new):
        return [f"NVSentinel values {'added' if SENTINEL in new else 'removed'} (mode "
                f"{_mode(_yaml(new if SENTINEL in new else old, SENTINEL))})"]
    was, now = _yaml(old, SENTINEL), _yaml(new, SENTINEL)
    out = [f"mode {_mode(was)} -> {_mode(now)}"] if _mode(was) != _mode(now) else []
    out += _switch("dry run", _get(was, "global", "dryRun"), _get(now, "global", "dryRun"))
    out += _switch("lifecycle manager", _get(was, "global", "lifecycleManager", "enabled"),
                   _get(now, "global", "lifecycleManager", "enabled"))
    out += _switch("post-remediation validation", _get(was, "fault-quarantine", "validation", "enabled"),
                   _get(now, "fault-quarantine", "validation", "enabled"))
    sets = [{str(item.get("name")): item for item in _get(values, "fault-quarantine", "ruleSets") or []
             if isinstance(item, dict)} for values in (was, now)]
    out += [f"rule set added: {name}" for name in sorted(set(sets[1]) - set(sets[0]))]
    out += [f"rule set removed: {name}" for name in sorted(set(sets[0]) - set(sets[1]))]
    out += [f"rule set changed: {name}" for name in sorted(set(sets[0]) & set(sets[1]))
            if sets[0][name] != sets[1][name]]
    breakers = [_get(values, "fault-quarantine", "circuitBreaker") or {} for values in (was, now)]
    for key in ("percentage", "duration", "maxNodes"):
        before, after = breakers[0].get(key), breakers[1].get(key)
        if before != after:
            out.append(f"circuit breaker {key} {'-' if before is None else before} -> "
                       f"{'-' if after is None else after}")
    return out


def certification_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """NVCRE certification: added or removed, categories, thresholds (old -> new), schedule, post-change."""
    if (CERTIFICATION in old) != (CERTIFICATION in new):
        return [f"certification {'added' if CERTIFICATION in new else 'removed'}"]
    was, now = _yaml(old, CERTIFICATION).get("spec") or {}, _yaml(new, CERTIFICATION).get("spec") or {}
    categories = [{f"{item.get('domain')}/{item.get('variant')}" for item in spec.get("categories") or []
                   if isinstance(item, dict)} for spec in (was, now)]
    out = [f"category added: {name}" for name in sorted(categories[1] - categories[0])]
    out += [f"category removed: {name}" for name in sorted(categories[0] - categories[1])]
    before, after = was.get("thresholds") or {}, now.get("thresholds") or {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out.append(f"threshold {key}: {before.get(key, '-')} -> {after.get(key, '-')}"
                       if key in before and key in after else
                       f"threshold {key} {'added' if key in after else 'removed'}: {after.get(key, before.get(key))}")
    schedules = [_get(_yaml(tree, CRONJOB), "spec", "schedule") for tree in (old, new)]
    if schedules[0] != schedules[1]:
        out.append(f"schedule added: {schedules[1]!r}" if schedules[0] is None else
                   f"schedule removed (was {schedules[0]!r})" if schedules[1] is None else
                   f"schedule {schedules[0]!r} -> {schedules[1]!r}")
    out += _switch("post-change certification", POST_CHANGE in old, POST_CHANGE in new)
    return out


def compare(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> Changes:
    """How ``new`` differs from ``old`` (both trees of the managed folder)."""
    return Changes(components=component_changes(old, new), sentinel=sentinel_changes(old, new),
                   certification=certification_changes(old, new),
                   added=sorted(set(new) - set(old)), removed=sorted(set(old) - set(new)),
                   changed=sorted(name for name in set(old) & set(new) if old[name] != new[name]))
