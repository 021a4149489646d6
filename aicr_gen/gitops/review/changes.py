"""What changed between two ``sync`` trees, in a reviewer's words (pure: two trees in, a value out).

A tree is the managed folder's files (relative path -> bytes), as ``render_tree`` makes them or as a commit holds
them. The semantic parts are read from the tree's own files: components and constraints from ``recipe.yaml``,
each component's values from a deployer bundle (``NNN-<unit>/values.yaml``, Flux's ``helmrelease.yaml``
``spec.values``), NVSentinel from ``sentinel/values.yaml``, certification from ``certification/``. The commit
message of ``sync`` and ``aicr-gen plan`` both say what this finds.
"""

from __future__ import annotations

import functools
import json
import re
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Literal

from aicr_gen.gitops.review.model import ComponentChange, ConstraintChange, ValueChange

if TYPE_CHECKING:
    from aicr_gen.mirror.refs import FileRefs
    from aicr_gen.text.image_reference import ImageRef

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


def _yaml(tree: Mapping[str, bytes], name: str) -> dict[str, Any]:
    """A tree file as a mapping; absent or unreadable (a hand-edited commit) is empty. Shared between the trees
    that hold the same file (``_parsed``): read, never changed."""
    return _parsed(name, tree[name]) if name in tree else {}


@functools.lru_cache(maxsize=4096)
def _parsed(name: str, data: bytes) -> dict[str, Any]:
    """A file's mapping, parsed once for all the trees that hold it (a fleet's share most files)."""
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.yaml import load_text

    try:
        parsed = load_text(data.decode("utf-8"), name).data
    except (InvalidInputError, UnicodeDecodeError):
        return {}
    return parsed if isinstance(parsed, dict) else {}


def _get(data: Any, *keys: str) -> Any:
    for key in keys:
        data = data.get(key) if isinstance(data, dict) else None
    return data


def _refs(recipe: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {str(ref["name"]): ref for ref in recipe.get("componentRefs") or []
            if isinstance(ref, dict) and ref.get("name")}


def component_change(name: str, was: Mapping[str, Any] | None, now: Mapping[str, Any] | None,
                     details: tuple[str, ...] = ()) -> ComponentChange | None:
    """One component's change (None when nothing of it did): its version compared as ``drift.versions`` compares
    versions (``v26.3.3`` and ``26.3.3`` are one version, ``1.34.0-rc.1`` comes before ``1.34.0``, a driver's
    ``580.95.05`` before ``590.48.01``): newer is ``bumped``, older ``downgraded``, a change between texts that are
    not versions ``changed``; the same version elsewhere (``details``) is ``moved``."""
    from aicr_gen.text.versions import compare as compare_versions

    old_version = str(was.get("version", "")) if was is not None else ""
    new_version = str(now.get("version", "")) if now is not None else ""
    if was is None or now is None:
        kind = "added" if was is None else "removed"
        shown = new_version if was is None else old_version
    elif old_version != new_version:
        order = compare_versions(new_version, old_version)
        kind = {1: "bumped", -1: "downgraded"}.get(order if order is not None else 0, "changed")
        shown = f"{old_version or 'unset'} -> {new_version or 'unset'}"
        if order == 0:  # the same version spelt another way (v26.3.3 / 26.3.3)
            kind, shown = ("moved", new_version) if details else ("changed", shown)
    elif details:
        kind, shown = "moved", new_version
    else:
        return None
    words = {"downgraded": "DOWNGRADED"}.get(kind, kind)
    extra = f" ({'; '.join(details)})" if details else ""
    return ComponentChange(name=name, change=kind, oldVersion=old_version or None, newVersion=new_version or None,
                           details=list(details), text=f"{words} {name} {shown}".rstrip() + extra)


def _moved(was: Mapping[str, Any], now: Mapping[str, Any], keys: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(f"{key} {setting(was.get(key))} -> {setting(now.get(key))}"
                 for key in keys if was.get(key) != now.get(key))


def setting(value: Any) -> str:
    """A setting as a reviewer reads it: ``unset`` where it is absent or empty."""
    return "unset" if value in (None, "") else show(value)


def component_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ComponentChange]:
    """Components added, removed, bumped, downgraded or moved (namespace, source, chart), by name: added and
    removed first, then the others."""
    before, after = _refs(_yaml(old, RECIPE)), _refs(_yaml(new, RECIPE))
    names = [*sorted(set(after) - set(before)), *sorted(set(before) - set(after)), *sorted(set(before) & set(after))]
    found = (component_change(name, before.get(name), after.get(name),
                              _moved(before[name], after[name], ("namespace", "source", "chart"))
                              if name in before and name in after else ()) for name in names)
    return [item for item in found if item is not None]


def _mode(values: Mapping[str, Any]) -> str:
    return "quarantine" if _get(values, "global", "faultQuarantine", "enabled") else "monitor"


def _switch(label: str, was: Any, now: Any) -> list[str]:
    return [] if bool(was) == bool(now) else [f"{label} {'on' if now else 'off'}"]


BREAKER_UNSET = {"percentage": "unset", "duration": "unset", "maxNodes": "no bound"}
"""How an absent circuit-breaker setting reads: no percentage or window where NVSentinel takes no action (monitor
mode or not deployed: sentinel/values.py writes both whenever it quarantines), no absolute bound without
``maxNodes``."""


def breaker(values: Mapping[str, Any]) -> dict[str, Any]:
    """NVSentinel's circuit breaker in its values (``fault-quarantine.circuitBreaker``), empty without one."""
    found = _get(values, "fault-quarantine", "circuitBreaker")
    return found if isinstance(found, dict) else {}


def breaker_text(key: str, value: Any) -> str:
    """A circuit-breaker setting as a reviewer reads it: ``10%``, ``5m``, ``2``, or what its absence means."""
    if value is None:
        return BREAKER_UNSET[key]
    return f"{value}%" if key == "percentage" else str(value)


def rule_sets(values: Mapping[str, Any]) -> dict[str, Any]:
    """NVSentinel's fault-quarantine rule sets by name."""
    return {str(item.get("name")): item for item in _get(values, "fault-quarantine", "ruleSets") or []
            if isinstance(item, dict)}


def sentinel_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """NVSentinel: deployed or not, mode, dry run, lifecycle manager, validation, rule sets (by name), circuit
    breaker (each setting old -> new, an absent one named by what it means: ``unset``, ``no bound``)."""
    out = [f"NVSentinel {'deployed' if SENTINEL in new else 'removed'}"] if (SENTINEL in old) != (SENTINEL in new) \
        else []
    was, now = _yaml(old, SENTINEL), _yaml(new, SENTINEL)
    modes = [_mode(was) if SENTINEL in old else "not deployed", _mode(now) if SENTINEL in new else "not deployed"]
    out += [f"mode {modes[0]} -> {modes[1]}"] if modes[0] != modes[1] else []
    out += _switch("dry run", _get(was, "global", "dryRun"), _get(now, "global", "dryRun"))
    out += _switch("lifecycle manager", _get(was, "global", "lifecycleManager", "enabled"),
                   _get(now, "global", "lifecycleManager", "enabled"))
    out += _switch("post-remediation validation", _get(was, "fault-quarantine", "validation", "enabled"),
                   _get(now, "fault-quarantine", "validation", "enabled"))
    sets = [rule_sets(was), rule_sets(now)]
    out += [f"rule set added: {name}" for name in sorted(set(sets[1]) - set(sets[0]))]
    out += [f"rule set removed: {name}" for name in sorted(set(sets[0]) - set(sets[1]))]
    out += [f"rule set changed: {name}" for name in sorted(set(sets[0]) & set(sets[1]))
            if sets[0][name] != sets[1][name]]
    breakers = [breaker(was), breaker(now)]
    if breakers[0] and breakers[1]:
        out += _switch("circuit breaker", breakers[0].get("enabled", True), breakers[1].get("enabled", True))
    for key in BREAKER_UNSET:
        before, after = breakers[0].get(key), breakers[1].get(key)
        if before != after:
            out.append(f"circuit breaker {key} {breaker_text(key, before)} -> {breaker_text(key, after)}")
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
    """One certification's changes; one added or removed lists what it enforces (or enforced) line by line, as
    against an empty one, so a reviewer reads its categories and thresholds, not just ``certification added``."""
    cert = f"{prefix}{CERTIFICATION}"
    out = [f"certification {'added' if cert in new else 'removed'}"] if (cert in old) != (cert in new) else []
    was, now = _yaml(old, cert).get("spec") or {}, _yaml(new, cert).get("spec") or {}
    categories = [{f"{item.get('domain')}/{item.get('variant')}" for item in spec.get("categories") or []
                   if isinstance(item, dict)} for spec in (was, now)]
    out += [f"category added: {name}" for name in sorted(categories[1] - categories[0])]
    out += [f"category removed: {name}" for name in sorted(categories[0] - categories[1])]
    before, after = was.get("thresholds") or {}, now.get("thresholds") or {}
    for key in sorted(set(before) | set(after)):
        if before.get(key) != after.get(key):
            out.append(f"threshold {key}: {before[key]} -> {after[key]}" if key in before and key in after else
                       f"threshold {key} added: {after[key]}" if key in after else
                       f"threshold {key} removed (was {before[key]})")
    if cert in new and not after and (cert not in old or before):
        out.append("no thresholds: results are reported, none fails the run")
    schedules = [_get(_yaml(tree, f"{prefix}{CRONJOB}"), "spec", "schedule") for tree in (old, new)]
    if schedules[0] != schedules[1]:
        out.append(f"schedule added: {schedules[1]!r}" if schedules[0] is None else
                   f"schedule removed (was {schedules[0]!r})" if schedules[1] is None else
                   f"schedule {schedules[0]!r} -> {schedules[1]!r}")
    out += _switch("post-change certification", f"{prefix}{POST_CHANGE}" in old, f"{prefix}{POST_CHANGE}" in new)
    return out


def _drivers(tree: Mapping[str, bytes], other: Mapping[str, bytes]) -> dict[str, dict[str, Any]]:
    """The pools' NVIDIADriver specs (pool -> spec) of a tree, from its deployer folder ``values_folder`` picks
    (``.../nvidia-drivers.yaml``, written by render/nvidia_driver.py as documents joined by ``---``)."""
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.render.nvidia_driver import MANIFEST
    from aicr_gen.yaml import load_text

    folder = values_folder(tree, other)
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
    """The pools' NVIDIADrivers as components named ``NVIDIADriver/<pool>``, as ``component_change`` names them
    (other settings as details). A new tree (no recipe before) lists none: its components say it."""
    if RECIPE not in old:
        return []
    before, after = _drivers(old, new), _drivers(new, old)
    pools = [*sorted(set(after) - set(before)), *sorted(set(before) - set(after)), *sorted(set(before) & set(after))]
    found = (component_change(f"NVIDIADriver/{pool}", before.get(pool), after.get(pool),
                              _moved(before[pool], after[pool], tuple(sorted((set(before[pool]) | set(after[pool]))
                                                                             - {"version"}, key=str)))
                              if pool in before and pool in after else ()) for pool in pools)
    return [item for item in found if item is not None]


def constraint_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ConstraintChange]:
    """Recipe constraints added, removed or changed, by name."""
    before, after = (
        {str(item.get("name")): str(item.get("value")) for item in _yaml(tree, RECIPE).get("constraints") or []
         if isinstance(item, dict) and item.get("name")} for tree in (old, new))
    return [ConstraintChange(name=name, old=before.get(name), new=after.get(name),
                             text=_constraint_text(name, before.get(name), after.get(name)))
            for name in sorted(set(before) | set(after)) if before.get(name) != after.get(name)]


def _constraint_text(name: str, old: str | None, new: str | None) -> str:
    if old is None:
        return f"constraint {name} added: {new}"
    if new is None:
        return f"constraint {name} removed (was {old})"
    return f"constraint {name}: {old} -> {new}"


def values_folder(tree: Mapping[str, bytes], other: Mapping[str, bytes]) -> str | None:
    """The deployer folder to read ``tree``'s values from: the most preferred one both trees have, else its own."""
    have = [{name.split("/", 1)[0] for name in side} for side in (tree, other)]
    both = [folder for folder in VALUES_FOLDERS if folder in have[0] and folder in have[1]]
    own = [folder for folder in VALUES_FOLDERS if folder in have[0]]
    return next(iter(both or own), None)


def value_files(tree: Mapping[str, bytes], folder: str | None, components: set[str]) -> dict[str, list[str]]:
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
            yield _value(component, _key(path, key), "added" if key in now else "removed",
                         old=None if key in now else show(shown), new=show(shown) if key in now else None,
                         redacted=hidden)
    elif isinstance(was, list) and isinstance(now, list) and len(was) == len(now):
        for index, (before, after) in enumerate(zip(was, now, strict=True)):
            yield from _diff(component, before, after, _key(path, index), secret)
    elif was != now:
        (old, old_hidden), (new, new_hidden) = _redact(was, secret), _redact(now, secret)
        yield _value(component, path or "(values)", "changed", old=show(old), new=show(new),
                     redacted=old_hidden or new_hidden)


def _value(component: str, path: str, kind: Literal["added", "removed", "changed"], *, old: str | None,
           new: str | None, redacted: bool) -> ValueChange:
    text = (f"{component}: + {path}: {new}" if kind == "added" else f"{component}: - {path} (was {old})"
            if kind == "removed" else f"{component}: {path} {old} -> {new}")
    return ValueChange(component=component, path=path, change=kind, old=old, new=new, redacted=redacted, text=text)


def value_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[ValueChange]:
    """Values changed per component present on both sides, by key path (an added or removed component's values
    are its files); values under secret-looking keys are ``<redacted>``."""
    components = set(_refs(_yaml(old, RECIPE))) & set(_refs(_yaml(new, RECIPE)))
    before = value_files(old, values_folder(old, new), components)
    after = value_files(new, values_folder(new, old), components)
    out: list[ValueChange] = []
    for component in sorted(set(before) & set(after)):
        if [old[name] for name in before[component]] != [new[name] for name in after[component]]:
            out += _diff(component, component_values(old, before[component], component),
                         component_values(new, after[component], component), "", False)
    return out


def sentinel_values(tree: Mapping[str, bytes]) -> dict[str, Any]:
    """NVSentinel's values in the tree (empty without them)."""
    return _yaml(tree, SENTINEL)


def sentinel_mode(tree: Mapping[str, bytes]) -> str | None:
    """NVSentinel's mode in the tree (``monitor``/``quarantine``), None when the tree has no NVSentinel values."""
    return _mode(_yaml(tree, SENTINEL)) if SENTINEL in tree else None


def sentinel_switch(tree: Mapping[str, bytes], name: str) -> bool:
    """An NVSentinel switch in the tree: ``dryRun`` or ``lifecycleManager`` (False without NVSentinel values)."""
    values = _yaml(tree, SENTINEL)
    return bool(_get(values, "global", "dryRun") if name == "dryRun" else
                _get(values, "global", name, "enabled"))


def certification_pools(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[str]:
    """The pools with a certification of their own in either tree, sorted."""
    return _pools(old, new, CERTIFICATION)


def thresholds(tree: Mapping[str, bytes], prefix: str = "") -> dict[str, str]:
    """The certification's thresholds (key -> CEL expression): the cluster's, or with ``prefix``
    (``pools/<pool>/``) a pool's."""
    found = _get(_yaml(tree, f"{prefix}{CERTIFICATION}"), "spec", "thresholds")
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


def source_changes(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> tuple[list[ComponentChange], list[str]]:
    """Where the cluster pulls from, as the deployer files say it (``mirror.refs.discover``; a site mirror moves
    them without touching the recipe): each chart whose repository moved, as a ``moved`` component (named as the
    recipe names the component of that chart), and the image references whose registry moved, counted per move
    (``12 image references: nvcr.io -> mirror.example:5000``). Read from the deployer folder values are read
    from and the files outside deployer folders."""
    from aicr_gen.mirror.refs import Chart, discover
    from aicr_gen.text.image_reference import ImageRef

    charts: list[dict[str, Chart]] = []
    images: list[dict[tuple[str, str], ImageRef]] = []
    read = [{name: data for name, data in tree.items()
             if (folder is not None and name.startswith(f"{folder}/")) or name.split("/", 1)[0] not in VALUES_FOLDERS}
            for tree, other in ((old, new), (new, old)) for folder in [values_folder(tree, other)]]
    for side in _telling(read[0], read[1]):
        found = discover(side, _file_refs) if RECIPE in old else []
        charts.append({item.ref.name: item.ref for item in found if isinstance(item.ref, Chart)})
        images.append({(item.origin.file, item.origin.field): item.ref for item in found
                       if isinstance(item.ref, ImageRef)})
    component = {str(ref.get("chart") or name): name for name, ref in _refs(_yaml(new, RECIPE)).items()}
    moved = [component_change(component.get(name, name), {"version": charts[0][name].version},
                              {"version": charts[1][name].version},
                              (f"source {charts[0][name].repository} -> {charts[1][name].repository}",))
             for name in sorted(set(charts[0]) & set(charts[1]))
             if charts[0][name].repository != charts[1][name].repository]
    registries = Counter(f"{images[0][key].domain} -> {_registry(images[1][key], images[0][key].path)}"
                         for key in set(images[0]) & set(images[1]) if images[0][key].name != images[1][key].name)
    lines = [f"{count} image reference{'' if count == 1 else 's'}: {move}" for move, count in
             sorted(registries.items(), key=lambda item: (-item[1], item[0]))]
    return [item for item in moved if item is not None], lines


def _registry(image: ImageRef, path: str) -> str:
    """Where ``image`` is pulled from, less the repository path it keeps (``mirror.example:5000/site`` of
    ``mirror.example:5000/site/nvidia/driver`` for ``nvidia/driver``)."""
    return image.name.removesuffix(f"/{path}") if image.name.endswith(f"/{path}") else image.domain


@functools.lru_cache(maxsize=8192)
def _file_refs(path: str, data: bytes) -> FileRefs:
    """``mirror.refs.file_refs``, read once for all the trees that hold the file (read, never changed)."""
    from aicr_gen.mirror.refs import file_refs

    return file_refs(path, data)


_FLUX_KINDS = frozenset({"HelmRelease", "HelmRepository", "OCIRepository"})
_CHART_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9._-]*\Z")


def _telling(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> tuple[Mapping[str, bytes], Mapping[str, bytes]]:
    """The files of both sides ``source_changes`` needs to read to find what it finds in all of them (a fleet's
    tree mostly holds the same files before and after): the files that differ or one side lacks, and the files
    both hold the same that may name a chart one of those names (its name in their bytes, or bytes that could
    spell it otherwise: an escape, a template, a script). A file both sides hold the same gives both the same
    references, so it moves no image; and a chart no differing file names has the same last reference on both
    sides, so it does not move. Where a Flux object could join references across files, or a chart's name could
    be spelt another way, both sides are read whole."""
    from aicr_gen.mirror.refs import Chart

    differ = {name for name in {*old, *new} if old.get(name) != new.get(name)}
    read = [_file_refs(name, side[name]) for side in (old, new) for name in sorted(differ) if name in side]
    names = {item.ref.name for refs, _objects in read for item in refs if isinstance(item.ref, Chart)}
    if _flux_objects(read) or any(not _CHART_NAME.match(name) or name in ("True", "False", "None") for name in names):
        return old, new
    probes = [name.encode() for name in names]
    same = {name for name in set(old) - differ
            if probes and (name.endswith(".sh") or any(probe in old[name] for probe in (*probes, b"\\", b"{{")))}
    if _flux_objects([_file_refs(name, old[name]) for name in same]):
        return old, new
    keep = differ | same
    return ({name: data for name, data in old.items() if name in keep},
            {name: data for name, data in new.items() if name in keep})


def _flux_objects(read: list[FileRefs]) -> bool:
    return any(isinstance(doc, dict) and doc.get("kind") in _FLUX_KINDS for _refs, objects in read
               for _path, doc in objects)
