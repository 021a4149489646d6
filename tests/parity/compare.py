"""Compare two deployments (AICR's, aicr-gen's) and sort every difference into a category.

Categories, in the order the report prints them:

- ``harness``: a bundle this harness cannot read (a reader to extend, or a malformed bundle).
- ``refused``: one tool bundles the recipe, the other refuses it.
- ``units``: a unit only one side deploys.
- ``chart``: chart, repository or version of a unit.
- ``release``: release name, namespace or create-namespace.
- ``render``: a local chart ``helm template`` cannot render on one side.
- ``hooks``: ``helm.sh/hook*`` annotations of a local chart's objects.
- ``scheduling``: values under a node-scheduling key (nodeSelector, tolerations, affinity).
- ``values``: every other value the deployer passes to a remote chart.
- ``objects``: what a local chart renders (objects present on one side, or their fields).
- ``order``: a pair of units installed in order on one side only.
- ``settings``: per-unit and bundle-wide deployer settings.

A local chart's values are not compared: what they produce, its objects, is.
"""

from __future__ import annotations

import fnmatch
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from tests.parity.normalize import Deployment, ObjectKey, Unit

CATEGORIES = ("harness", "refused", "units", "chart", "release", "render", "hooks", "scheduling", "values",
              "objects", "order", "settings")
ABSENT = "<absent>"
_SCHEDULING_KEYS = ("nodeselector", "toleration", "affinity", "nodescheduling", "nodename", "priorityclassname")
_HOOK_PREFIX = "helm.sh/hook"


@dataclass(frozen=True)
class Difference:
    category: str
    unit: str
    """The unit's name, or "" for the whole bundle."""
    path: str
    aicr: Any
    ours: Any

    def __str__(self) -> str:
        where = f"{self.unit}: " if self.unit else ""
        return f"[{self.category}] {where}{self.path}: AICR {_short(self.aicr)} | aicr-gen {_short(self.ours)}"


@dataclass(frozen=True)
class Rule:
    """A difference that is accepted: deliberate (``ALLOWED``) or a known gap (``KNOWN_GAPS``). Fields are
    globs (``fnmatch``); ``path`` matches the whole path."""

    category: str
    reason: str
    """Why it differs: for ``ALLOWED`` why it is deliberate, for ``KNOWN_GAPS`` the issue 23 item."""
    unit: str = "*"
    path: str = "*"
    deployer: str = "*"
    leaf: str = "*"

    def matches(self, leaf: str, deployer: str, difference: Difference) -> bool:
        return (fnmatch.fnmatchcase(difference.category, self.category)
                and fnmatch.fnmatchcase(difference.unit, self.unit)
                and fnmatch.fnmatchcase(difference.path, self.path)
                and fnmatch.fnmatchcase(deployer, self.deployer) and fnmatch.fnmatchcase(leaf, self.leaf))


def _short(value: Any, limit: int = 160) -> str:
    text = value if value == ABSENT else json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def compare(aicr: Deployment, ours: Deployment) -> list[Difference]:
    """Every difference between AICR's deployment and aicr-gen's, unit by unit, then order and settings."""
    diffs: list[Difference] = []
    theirs = {u.name: u for u in aicr.units}
    mine = {u.name: u for u in ours.units}
    for name in sorted(theirs.keys() - mine.keys()):
        diffs.append(Difference("units", name, "unit", _summary(theirs[name]), ABSENT))
    for name in sorted(mine.keys() - theirs.keys()):
        diffs.append(Difference("units", name, "unit", ABSENT, _summary(mine[name])))
    for name in [u.name for u in aicr.units if u.name in mine]:
        diffs.extend(_unit(theirs[name], mine[name]))
    shared = theirs.keys() & mine.keys()
    for a, b in sorted(aicr.before - ours.before):
        if a in shared and b in shared:
            diffs.append(Difference("order", "", f"{a} before {b}", True, False))
    for a, b in sorted(ours.before - aicr.before):
        if a in shared and b in shared:
            diffs.append(Difference("order", "", f"{a} before {b}", False, True))
    diffs.extend(Difference("settings", "", path.lstrip("."), x, y)
                 for path, x, y in tree_diff(aicr.settings, ours.settings))
    return diffs


def _summary(unit: Unit) -> str:
    return f"{unit.chart} {unit.version} from {unit.repository or 'the bundle'} into {unit.namespace}"


def _unit(aicr: Unit, ours: Unit) -> Iterator[Difference]:
    for field in ("chart", "repository", "version"):
        if getattr(aicr, field) != getattr(ours, field):
            yield Difference("chart", aicr.name, field, getattr(aicr, field), getattr(ours, field))
    for field in ("release", "namespace", "create_namespace"):
        if getattr(aicr, field) != getattr(ours, field):
            yield Difference("release", aicr.name, field, getattr(aicr, field), getattr(ours, field))
    if aicr.objects is None or ours.objects is None:
        for path, x, y in tree_diff(aicr.values, ours.values):
            category = "scheduling" if any(k in path.lower() for k in _SCHEDULING_KEYS) else "values"
            yield Difference(category, aicr.name, f"values{path}", x, y)
    if aicr.render_error or ours.render_error:
        yield Difference("render", aicr.name, "helm template", aicr.render_error or "renders",
                         ours.render_error or "renders")
    elif aicr.objects is not None and ours.objects is not None:
        yield from _objects(aicr.name, aicr.objects, ours.objects)
    for path, x, y in tree_diff(aicr.settings, ours.settings):
        yield Difference("settings", aicr.name, path.lstrip("."), x, y)


def _key(key: ObjectKey) -> str:
    api_version, kind, namespace, name = key
    return f"{kind}/{namespace + '/' if namespace else ''}{name} ({api_version})"


def _objects(unit: str, aicr: Mapping[ObjectKey, Mapping[str, Any]],
             ours: Mapping[ObjectKey, Mapping[str, Any]]) -> Iterator[Difference]:
    for key in sorted(aicr.keys() - ours.keys()):
        yield Difference("objects", unit, _key(key), "present", ABSENT)
    for key in sorted(ours.keys() - aicr.keys()):
        yield Difference("objects", unit, _key(key), ABSENT, "present")
    for key in sorted(aicr.keys() & ours.keys()):
        hooks_a, rest_a = _split_hooks(aicr[key])
        hooks_o, rest_o = _split_hooks(ours[key])
        for path, x, y in tree_diff(hooks_a, hooks_o):
            yield Difference("hooks", unit, f"{_key(key)} annotations{path}", x, y)
        for path, x, y in tree_diff(rest_a, rest_o):
            yield Difference("objects", unit, f"{_key(key)} {path}", x, y)


def _split_hooks(obj: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The object's Helm hook annotations, and the object without them (an emptied annotations map removed)."""
    meta = dict(obj.get("metadata") or {})
    annotations = dict(meta.get("annotations") or {})
    hooks = {k: v for k, v in annotations.items() if k.startswith(_HOOK_PREFIX)}
    rest = {k: v for k, v in annotations.items() if not k.startswith(_HOOK_PREFIX)}
    if rest:
        meta["annotations"] = rest
    else:
        meta.pop("annotations", None)
    return hooks, {**obj, "metadata": meta}


def tree_diff(a: Any, b: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    """(path, a's value, b's value) for each leaf where two YAML trees differ; maps by key, lists of the same
    length by index, anything else as a whole. A key on one side only is ``ABSENT`` on the other."""
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        for key in sorted(set(a) | set(b), key=str):
            sub = f"{path}.{key}" if _plain(key) else f"{path}[{json.dumps(str(key))}]"
            if key not in b:
                if isinstance(a[key], Mapping):  # down to the leaves, so each is categorised by its own path
                    yield from ((p, x, ABSENT) for p, x, _ in tree_diff(a[key], {}, sub))
                elif a[key] is not None:
                    yield sub, a[key], ABSENT
            elif key not in a:
                if isinstance(b[key], Mapping):
                    yield from ((p, ABSENT, y) for p, _, y in tree_diff({}, b[key], sub))
                elif b[key] is not None:
                    yield sub, ABSENT, b[key]
            else:
                yield from tree_diff(a[key], b[key], sub)
    elif (isinstance(a, Mapping) and b is None) or (a is None and isinstance(b, Mapping)):  # null: an empty map
        yield from tree_diff(a or {}, b or {}, path)
    elif isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        for index, (x, y) in enumerate(zip(a, b, strict=True)):
            yield from tree_diff(x, y, f"{path}[{index}]")
    elif not _same(a, b):
        yield path, a, b


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same YAML type: ``true`` is not ``1`` and ``"1"`` is not ``1``; ``1`` is ``1.0``."""
    def number(x: Any) -> bool:
        return isinstance(x, int | float) and not isinstance(x, bool)

    return bool(a == b and (type(a) is type(b) or (number(a) and number(b))))


def _plain(key: Any) -> bool:
    return isinstance(key, str) and key.replace("-", "").replace("_", "").isalnum()


def counts(diffs: Iterable[Difference]) -> dict[str, int]:
    """Differences per category, in ``CATEGORIES`` order, zero counts left out."""
    found: dict[str, int] = {}
    for diff in diffs:
        found[diff.category] = found.get(diff.category, 0) + 1
    return {c: found[c] for c in CATEGORIES if c in found}


def triage(leaf: str, deployer: str, diffs: Iterable[Difference], allowed: Iterable[Rule],
           gaps: Iterable[Rule]) -> tuple[list[Difference], dict[Rule, int]]:
    """The differences no rule accepts, and how many each rule accepted (``ALLOWED`` first, then gaps)."""
    rules = [*allowed, *gaps]
    used: dict[Rule, int] = {}
    unexplained = []
    for diff in diffs:
        rule = next((r for r in rules if r.matches(leaf, deployer, diff)), None)
        if rule is None:
            unexplained.append(diff)
        else:
            used[rule] = used.get(rule, 0) + 1
    return unexplained, used
