"""What changed between two ``sync`` trees, in a reviewer's words (pure: two trees in, a value out).

A tree is the managed folder's files (relative path -> bytes), as ``render_tree`` makes them or as a commit holds
them. The semantic parts are read from the tree's own files: components and constraints from ``recipe.yaml``,
each component's values from a deployer bundle (``NNN-<unit>/values.yaml``, Flux's ``helmrelease.yaml``
``spec.values``), NVSentinel from ``sentinel/values.yaml``, certification from ``certification/``. The commit
message of ``sync`` and ``aicr-gen plan`` both say what this finds.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

RECIPE = "recipe.yaml"
SENTINEL = "sentinel/values.yaml"
CERTIFICATION = "certification/certification.yaml"
CRONJOB = "certification/schedule/cronjob.yaml"
POST_CHANGE = "certification/post-change/argocd/job.yaml"
POST_CHANGE_FOLDER = "certification/post-change/"
# Where a tree keeps each component's values, most preferred first: the same folder is read on both sides
# whenever both trees have it, so a deployer added next to another does not read as a values change.
VALUES_FOLDERS = ("argocd", "helm", "helmfile", "argocd-helm", "flux")
# A values key with one of these words holds a value a plan must not print (booleans and nulls are shown).
SECRET_WORDS = frozenset({"password", "passwd", "passphrase", "pass", "pwd", "token", "tokens", "secret", "secrets",
                          "key", "keys", "apikey", "credential", "credentials", "creds", "auth", "authorization",
                          "cert", "certs", "certificate", "certificates", "crt", "pem", "private", "privatekey",
                          "salt", "signature", "kubeconfig", "dockerconfigjson"})
_WORDS = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")
REDACTED = "<redacted>"
_UNIT_FILE = re.compile(r"^\d{3}-(?P<unit>[^/]+)/(?P<file>values\.yaml|helmrelease\.yaml|chart/values\.yaml)\Z")
_STATIC_FILE = re.compile(r"^static/(?P<unit>[^/]+)\.yaml\Z")  # argocd-helm: the baked values of a chart unit
_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*\Z")
_PLAIN_TEXT = re.compile(r"^[\w./:@+-]+\Z")


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
class ValueChange:
    """One value of a component present on both sides, by key path: ``added``, ``removed`` or ``changed``.
    ``old``/``new`` are display texts (``<redacted>`` under a secret-looking key), None where absent."""

    component: str
    path: str
    kind: str
    old: str | None = None
    new: str | None = None
    redacted: bool = False

    def describe(self) -> str:
        if self.kind == "added":
            return f"{self.component}: + {self.path}: {self.new}"
        if self.kind == "removed":
            return f"{self.component}: - {self.path} (was {self.old})"
        return f"{self.component}: {self.path} {self.old} -> {self.new}"


@dataclass(frozen=True)
class ConstraintChange:
    """One recipe constraint (``constraints[].name``, e.g. ``OS.release.VERSION_ID``); None where absent."""

    name: str
    old: str | None = None
    new: str | None = None

    def describe(self) -> str:
        if self.old is None:
            return f"constraint {self.name} added: {self.new}"
        if self.new is None:
            return f"constraint {self.name} removed (was {self.old})"
        return f"constraint {self.name}: {self.old} -> {self.new}"


@dataclass(frozen=True)
class Changes:
    """Everything that differs; empty lists where nothing did."""

    components: list[ComponentChange] = field(default_factory=list)
    values: list[ValueChange] = field(default_factory=list)
    constraints: list[ConstraintChange] = field(default_factory=list)
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
    """NVCRE certification: added or removed, categories, thresholds (old -> new), schedule, post-change; then
    each pool's (``pools/<pool>/certification/``), its lines led by ``pool <name>:``."""
    out = _certification_changes(old, new, "")
    for pool in _pools(old, new, CERTIFICATION):
        out += [f"pool {pool}: {line}" for line in _certification_changes(old, new, f"pools/{pool}/")]
    return out


def _pools(old: Mapping[str, bytes], new: Mapping[str, bytes], file: str) -> list[str]:
    """The pools either tree has a ``pools/<pool>/<file>`` of, sorted."""
    return sorted({parts[1] for tree in (old, new) for name in tree
                   if len(parts := name.split("/", 2)) == 3 and parts[0] == "pools" and parts[2] == file})


def _certification_changes(old: Mapping[str, bytes], new: Mapping[str, bytes], prefix: str) -> list[str]:
    cert = f"{prefix}{CERTIFICATION}"
    if (cert in old) != (cert in new):
        return [f"certification {'added' if cert in new else 'removed'}"]
    was, now = _yaml(old, cert).get("spec") or {}, _yaml(new, cert).get("spec") or {}
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
    schedules = [_get(_yaml(tree, f"{prefix}{CRONJOB}"), "spec", "schedule") for tree in (old, new)]
    if schedules[0] != schedules[1]:
        out.append(f"schedule added: {schedules[1]!r}" if schedules[0] is None else
                   f"schedule removed (was {schedules[0]!r})" if schedules[1] is None else
                   f"schedule {schedules[0]!r} -> {schedules[1]!r}")
    out += _switch("post-change certification", f"{prefix}{POST_CHANGE}" in old, f"{prefix}{POST_CHANGE}" in new)
    return out


def _drivers(tree: Mapping[str, bytes], other: Mapping[str, bytes]) -> dict[str, dict[str, Any]]:
    """The pools' NVIDIADriver specs (pool -> spec) of a tree, from its deployer folder ``_values_folder`` picks
    (``.../nvidia-drivers.yaml``, written by render/nvidia_driver.py as documents joined by ``---``)."""
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.render.nvidia_driver import MANIFEST
    from aicr_gen.yamlio import load_text

    folder = _values_folder(tree, other)
    name = next((name for name in sorted(tree) if name.startswith(f"{folder}/") and name.endswith(f"/{MANIFEST}")),
                None)
    if folder is None or name is None:
        return {}
    found: dict[str, dict[str, Any]] = {}
    for index, text in enumerate(re.split(r"(?m)^---[ \t]*$", tree[name].decode("utf-8", "replace"))):
        try:
            doc = load_text(text, f"{name}#{index}").data
        except InvalidInputError:
            continue
        if isinstance(doc, dict) and doc.get("kind") == "NVIDIADriver" and isinstance(doc.get("spec"), dict):
            found[str(_get(doc, "metadata", "name"))] = doc["spec"]
    return found


def driver_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ComponentChange]:
    """The pools' NVIDIADrivers as components named ``NVIDIADriver/<pool>``: added, removed, bumped (version) or
    changed (other settings, as details). A new tree (no recipe before) lists none: its components say it."""
    if RECIPE not in old:
        return []
    before, after = _drivers(old, new), _drivers(new, old)
    out = [ComponentChange(f"NVIDIADriver/{pool}", "added", new_version=str(after[pool].get("version", "")))
           for pool in sorted(set(after) - set(before))]
    out += [ComponentChange(f"NVIDIADriver/{pool}", "removed", old_version=str(before[pool].get("version", "")))
            for pool in sorted(set(before) - set(after))]
    for pool in sorted(set(before) & set(after)):
        was, now = before[pool], after[pool]
        details = tuple(f"{key} {show(was[key]) if key in was else '-'} -> {show(now[key]) if key in now else '-'}"
                        for key in sorted(set(was) | set(now), key=str)
                        if key != "version" and was.get(key) != now.get(key))
        old_version, new_version = str(was.get("version", "")), str(now.get("version", ""))
        if old_version != new_version or details:
            out.append(ComponentChange(f"NVIDIADriver/{pool}", "bumped" if old_version != new_version else "changed",
                                       old_version, new_version, details))
    return out


def constraint_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ConstraintChange]:
    """Recipe constraints added, removed or changed, by name."""
    before, after = (
        {str(item.get("name")): str(item.get("value")) for item in _yaml(tree, RECIPE).get("constraints") or []
         if isinstance(item, dict) and item.get("name")} for tree in (old, new))
    return [ConstraintChange(name, before.get(name), after.get(name))
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def _values_folder(tree: Mapping[str, bytes], other: Mapping[str, bytes]) -> str | None:
    """The deployer folder to read ``tree``'s values from: the most preferred one both trees have, else its own."""
    have = [{name.split("/", 1)[0] for name in side} for side in (tree, other)]
    both = [folder for folder in VALUES_FOLDERS if folder in have[0] and folder in have[1]]
    own = [folder for folder in VALUES_FOLDERS if folder in have[0]]
    return next(iter(both or own), None)


def _value_files(tree: Mapping[str, bytes], folder: str | None, components: set[str]) -> dict[str, list[str]]:
    """Component -> the files holding its values in ``folder`` (its main unit; the -pre/-post units of local
    manifests carry the same values again and are skipped)."""
    found: dict[str, list[str]] = {}
    if folder is None:
        return found
    for name in sorted(tree):
        if not name.startswith(f"{folder}/"):
            continue
        rel = name[len(folder) + 1:]
        match = _UNIT_FILE.match(rel) or (_STATIC_FILE.match(rel) if folder == "argocd-helm" else None)
        if match and match.group("unit") in components:
            found.setdefault(match.group("unit"), []).append(name)
    return found


def component_values(tree: Mapping[str, bytes], files: list[str], component: str) -> dict[str, Any]:
    """The values a component's files hold: a values file, or a Flux HelmRelease's ``spec.values`` (a local
    chart's ``chart/values.yaml`` wins over it). A local chart nests them under the component's name."""
    chart = [name for name in files if name.endswith("chart/values.yaml")]
    plain = [name for name in files if name.endswith("/values.yaml") or name.startswith("argocd-helm/static/")]
    if chart or plain:
        name = (chart or plain)[0]
        values = _yaml(tree, name)
        local = f"{name.rsplit('/', 1)[0]}/Chart.yaml" in tree
        inner = values.get(component)
        return inner if local and set(values) == {component} and isinstance(inner, dict) else values
    release = _get(_yaml(tree, files[0]), "spec", "values")
    return release if isinstance(release, dict) else {}


def _key(prefix: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{prefix}[{key}]"
    text = str(key)
    part = text if _PLAIN_KEY.match(text) else f"[{json.dumps(text, ensure_ascii=False)}]"
    return f"{prefix}.{part}" if prefix and not part.startswith("[") else f"{prefix}{part}"


def secret_key(key: str) -> bool:
    """Whether a values key looks like it holds a secret: one of its words (camelCase, -, _ or . separated) is
    one of ``SECRET_WORDS``."""
    return any(word.lower() in SECRET_WORDS for word in _WORDS.findall(key))


def _redact(value: Any, secret: bool = False) -> tuple[Any, bool]:
    """``value`` with everything under a secret-looking key replaced by ``<redacted>`` (booleans, nulls and
    empty values are kept: they hold no secret), and whether anything was."""
    if isinstance(value, dict) and value:
        pairs = {key: _redact(item, secret or (isinstance(key, str) and secret_key(key)))
                 for key, item in value.items()}
        return {key: item for key, (item, _hidden) in pairs.items()}, any(hidden for _item, hidden in pairs.values())
    if isinstance(value, list) and value:
        items = [_redact(item, secret) for item in value]
        return [item for item, _hidden in items], any(hidden for _item, hidden in items)
    if secret and not isinstance(value, bool) and value not in (None, {}, []):
        return REDACTED, True
    return value, False


def show(value: Any, limit: int = 100) -> str:
    """A value as one short line: plain words as they are, anything else as JSON."""
    plain = isinstance(value, str) and value not in ("true", "false", "null") \
        and (value == REDACTED or _PLAIN_TEXT.match(value) is not None)
    text = value if plain else json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= limit else text[:limit - 1] + "\u2026"


def _diff(component: str, was: Any, now: Any, path: str, secret: bool) -> Iterator[ValueChange]:
    """The changes from ``was`` to ``now``: maps key by key, lists of the same length item by item; a key only
    one side has, or a list that changed length, is one change with its whole value."""
    if isinstance(was, dict) and isinstance(now, dict):
        for key in sorted(set(was) | set(now), key=str):
            below = secret or (isinstance(key, str) and secret_key(key))
            if key in was and key in now:
                yield from _diff(component, was[key], now[key], _key(path, key), below)
                continue
            shown, hidden = _redact(now[key] if key in now else was[key], below)
            yield ValueChange(component, _key(path, key), "added" if key in now else "removed",
                              None if key in now else show(shown), show(shown) if key in now else None, hidden)
    elif isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for index, (before, after) in enumerate(zip(was, now, strict=True)):
            yield from _diff(component, before, after, _key(path, index), secret)
    elif was != now:
        (old, old_hidden), (new, new_hidden) = _redact(was, secret), _redact(now, secret)
        yield ValueChange(component, path or "(values)", "changed", show(old), show(new), old_hidden or new_hidden)


def value_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ValueChange]:
    """Values changed per component present on both sides, by key path (an added or removed component's values
    are its files); values under secret-looking keys are ``<redacted>``."""
    components = set(_refs(_yaml(old, RECIPE))) & set(_refs(_yaml(new, RECIPE)))
    before = _value_files(old, _values_folder(old, new), components)
    after = _value_files(new, _values_folder(new, old), components)
    out: list[ValueChange] = []
    for component in sorted(set(before) & set(after)):
        if [old[name] for name in before[component]] != [new[name] for name in after[component]]:
            out += _diff(component, component_values(old, before[component], component),
                         component_values(new, after[component], component), "", False)
    return out


def sentinel_mode(tree: Mapping[str, bytes]) -> str | None:
    """NVSentinel's mode in the tree (``monitor``/``quarantine``), None when the tree has no NVSentinel values."""
    return _mode(_yaml(tree, SENTINEL)) if SENTINEL in tree else None


def sentinel_switch(tree: Mapping[str, bytes], name: str) -> bool:
    """An NVSentinel switch in the tree: ``dryRun`` or ``lifecycleManager`` (False without NVSentinel values)."""
    values = _yaml(tree, SENTINEL)
    return bool(_get(values, "global", "dryRun") if name == "dryRun" else
                _get(values, "global", name, "enabled"))


def thresholds(tree: Mapping[str, bytes]) -> dict[str, str]:
    """The certification's global thresholds (key -> CEL expression)."""
    found = _get(_yaml(tree, CERTIFICATION), "spec", "thresholds")
    return {str(key): str(value) for key, value in found.items()} if isinstance(found, dict) else {}


def stack_digest(tree: Mapping[str, bytes]) -> str | None:
    """The stack digest the tree's post-change certification objects carry (None without post-change)."""
    from aicr_gen.certify.cron import STACK_DIGEST

    pattern = re.compile(re.escape(STACK_DIGEST.encode()) + rb":\s*['\"]?([\w:]+)")
    for name in sorted(tree):
        if name.startswith(POST_CHANGE_FOLDER):
            match = pattern.search(tree[name])
            if match:
                return match.group(1).decode()
    return None


def compare(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> Changes:
    """How ``new`` differs from ``old`` (both trees of the managed folder)."""
    return Changes(components=component_changes(old, new) + driver_changes(old, new), values=value_changes(old, new),
                   constraints=constraint_changes(old, new), sentinel=sentinel_changes(old, new),
                   certification=certification_changes(old, new),
                   added=sorted(set(new) - set(old)), removed=sorted(set(old) - set(new)),
                   changed=sorted(name for name in set(old) & set(new) if old[name] != new[name]))


def grouped(per_cluster: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
    """The same change made in several clusters, once: ``(change, clusters)`` from ``(cluster, changes)``,
    the change most clusters share first (then by text); clusters in the order given."""
    found: dict[str, list[str]] = {}
    for cluster, lines in per_cluster:
        for line in dict.fromkeys(lines):
            found.setdefault(line, []).append(cluster)
    return sorted(found.items(), key=lambda item: (-len(item[1]), item[0]))
