"""The rendered objects a merge changes in one cluster, per deployer unit, and each changed component's upgrade
verdict (pure over the two trees; charts come through a ``Renderer``: ``mirror.chart_render`` in ``plan``).

Units are matched by kind and name between the base tree and the merge's (``releases.py``). A unit whose inputs
are byte-identical at both sides (``Release.digest``) renders the same objects and is skipped without rendering;
the others are rendered — manifests and chart folders whose templates hold no template action are read as they
are, any other chart goes to the renderer — then compared (``objects.py``) and judged (``upgrade.py``). Results are
remembered by digest for the life of the process: a fleet whose clusters make the same change renders and compares
it once.

The Kubernetes version charts render for is ``kube_version`` when given, else the lowest the recipe's
``K8s.server.version`` constraint allows (``>= 1.34`` renders for 1.34.0), else helm's default.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, Protocol

from pydantic import Field

from aicr_gen.gitops.review import objects, upgrade
from aicr_gen.gitops.review.objects import Key, ObjectChange
from aicr_gen.gitops.review.releases import Release, releases
from aicr_gen.gitops.review.upgrade import BUILTIN_GROUPS, UpgradeVerdict
from aicr_gen.modelcheck import Strict

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")
_CONSTRAINT = re.compile(rb"\n  - name: K8s\.server\.version\n    value: ([^\n]+)\n")
_MEMO_LIMIT = 4096


class Renderer(Protocol):
    """Renders charts (``mirror.chart_render.ChartRenderer``): YAML text or None, and why not."""

    def remote(self, repository: str, chart: str, version: str, *, release: str, namespace: str, values: str,
               kube_version: str) -> tuple[str | None, str]: ...

    def local(self, files: Mapping[str, bytes], *, release: str, namespace: str, values: str,
              kube_version: str) -> tuple[str | None, str]: ...

    def crds(self, repository: str, chart: str, version: str) -> tuple[str, ...] | None: ...


class ApplicationChange(Strict, frozen=True):
    """One deployer unit whose rendered objects change."""

    kind: str = Field(description="Application (Argo CD), HelmRelease or Kustomization (Flux), or Release (helm, "
                                  "helmfile, argocd-helm)")
    name: str = Field(description="Its name")
    deployer: str = Field(description="The deployer folder read: argocd, flux, helmfile, helm or argocd-helm")
    component: str = Field(description="The recipe component it deploys (its own name for other units)")
    source: str = Field(description="Where its objects come from, base -> merge when it changes")
    rendered: bool = Field(description="Both sides were rendered: objects lists every change")
    note: str = Field(description="Why a side was not rendered (empty when rendered)")
    objects: list[ObjectChange] = Field(description="Objects added, removed, changed, renamed or moved, biggest "
                                                    "diff first")
    lines: int = Field(description="Diff lines of all its objects")


def kube_version(tree: Mapping[str, bytes]) -> str:
    """The lowest Kubernetes version the tree's recipe allows, ``X.Y.Z`` ('' when it says none). The recipe is
    large and only this constraint matters: it is found in the text as sync writes it (name, then value), and
    only parsed when written otherwise."""
    from aicr_gen.yaml.fast import mappings

    data = tree.get("recipe.yaml", b"")
    quick = _CONSTRAINT.search(data)
    if quick is not None:
        value = quick[1].decode(errors="replace")
    else:
        try:
            recipe = next(iter(mappings(data)), {}) if b"K8s.server.version" in data else {}
        except Exception:  # a broken recipe renders with helm's default
            recipe = {}
        value = next((str(item.get("value", "")) for item in recipe.get("constraints") or []
                      if isinstance(item, dict) and item.get("name") == "K8s.server.version"), "")
    found = _VERSION.search(value)
    return f"{found[1]}.{found[2]}.{found[3] or 0}" if found else ""


def _plain(release: Release, tree: Mapping[str, bytes]) -> list[str | bytes] | None:
    """The texts of a unit that needs no rendering: manifests, or a chart folder without template actions."""
    if release.chart is None:
        return [tree[name] for name in release.manifests if name in tree]
    if release.chart.local:
        folder = release.chart.name
        texts: list[str | bytes] = [tree[name] for name in release.files if name.endswith((".yaml", ".yml"))
                                    and name.startswith((f"{folder}/templates/", f"{folder}/crds/"))]
        if not any(b"{{" in text for text in texts if isinstance(text, bytes)):
            return texts
    return None


class _Side:
    """One unit at one side of the merge (``label`` old or new): the release, its tree, its Kubernetes version and
    its inputs digest."""

    def __init__(self, release: Release, label: str, tree: Mapping[str, bytes], version: str) -> None:
        self.release, self.label, self.tree, self.version = release, label, tree, version
        self.digest = release.digest(tree)

    def narrowed(self, changed: frozenset[str]) -> _Side:
        """A manifests unit read from its changed files alone: an unchanged file holds the same objects at both
        sides, so only the others can differ (the app of apps reads one Application, not every one)."""
        kept = tuple(name for name in self.release.manifests if name in changed)
        return _Side(replace(self.release, manifests=kept, files=kept), self.label, self.tree, self.version)


class Review:
    """Renders, compares and judges units for one ``plan`` run, remembering results by digest."""

    def __init__(self, renderer: Renderer | None, *, kube_version: str = "") -> None:
        self.renderer = renderer
        self.kube_version = kube_version
        self._objects: dict[str, tuple[list[Mapping[str, Any]] | None, str]] = {}
        self._compared: dict[tuple[str, str], tuple[list[ObjectChange], UpgradeVerdict]] = {}
        self._shapes: dict[str, str] = {}
        self._by_shape: dict[tuple[str, ...], tuple[str, str, str]] = {}

    def objects_of(self, release: Release, tree: Mapping[str, bytes], digest: str,
                   version: str) -> tuple[list[Mapping[str, Any]] | None, str]:
        """The unit's objects (None when they cannot be rendered) and why not."""
        if digest in self._objects:
            return self._objects[digest]
        texts, why = _plain(release, tree), ""
        if texts is None:
            texts, why = self._render(release, tree, version)
        try:
            found = (objects.parse(texts), "") if texts is not None else (None, why)
        except Exception as err:  # output no deployer could apply: say so instead of failing
            found = None, f"its objects are not YAML: {str(err).splitlines()[0]}"
        if len(self._objects) >= _MEMO_LIMIT:
            self._objects.clear()
            self._shapes.clear()
        self._objects[digest] = found
        if texts is not None and release.release:
            self._shapes[digest] = _shape(texts, release)
        return found

    def _render(self, release: Release, tree: Mapping[str, bytes],
                version: str) -> tuple[list[str | bytes] | None, str]:
        chart = release.chart
        assert chart is not None
        if self.renderer is None:
            return None, "charts are not rendered (--no-render)"
        if chart.local:
            prefix = f"{chart.name}/"
            files = {name.removeprefix(prefix): tree[name] for name in release.files
                     if name.startswith(prefix) and name in tree}
            text, why = self.renderer.local(files, release=release.release, namespace=release.namespace,
                                            values=release.values, kube_version=version)
        else:
            text, why = self.renderer.remote(chart.repository, chart.name, chart.version, release=release.release,
                                             namespace=release.namespace, values=release.values,
                                             kube_version=version)
        return ([text] if text is not None else None), why

    def review(self, old: Mapping[str, bytes], new: Mapping[str, bytes],
               path: str) -> tuple[list[ApplicationChange], list[UpgradeVerdict]]:
        """Every unit whose objects change between the trees, biggest first, and the verdict of each component
        whose objects change."""
        sides = {"old": (old, self.kube_version or kube_version(old)),
                 "new": (new, self.kube_version or kube_version(new))}
        changed = frozenset(name for name in old.keys() | new.keys() if old.get(name) != new.get(name))
        before = {(item.kind, item.name, item.chart is None): item for item in releases(old, path, changed)}
        after = {(item.kind, item.name, item.chart is None): item for item in releases(new, path, changed)}
        crds: dict[str, list[Mapping[str, Any]]] = {}
        units: list[tuple[ApplicationChange, UpgradeVerdict | None, bool]] = []
        for key in [*after, *(key for key in before if key not in after)]:
            was = _Side(before[key], "old", *sides["old"]) if key in before else None
            now = _Side(after[key], "new", *sides["new"]) if key in after else None
            if (was.digest if was else "") != (now.digest if now else ""):
                if was and now and was.release.chart is None and now.release.chart is None:
                    was, now = was.narrowed(changed), now.narrowed(changed)
                units.append((*self._unit(was, now, path, crds), (now or was).release.root))  # type: ignore[union-attr]
        verdicts: dict[str, list[UpgradeVerdict]] = {}
        for unit, judged, root in units:
            if judged is not None and not root:
                verdicts.setdefault(unit.component, []).append(judged)
        return (sorted((unit for unit, _, _ in units), key=lambda item: (-item.lines, item.kind, item.name)),
                [_merged(name, found) for name, found in verdicts.items()])

    def _unit(self, was: _Side | None, now: _Side | None, path: str,
              crds: dict[str, list[Mapping[str, Any]]]) -> tuple[ApplicationChange, UpgradeVerdict | None]:
        either = now or was
        assert either is not None
        shown = either.release
        found_old, why_old = self.objects_of(was.release, was.tree, was.digest, was.version) if was else ([], "")
        found_new, why_new = self.objects_of(now.release, now.tree, now.digest, now.version) if now else ([], "")
        note = "; ".join(why for why in (why_old and f"base: {why_old}", why_new and f"merge: {why_new}") if why)
        unit = ApplicationChange(kind=shown.kind, name=shown.name, deployer=shown.deployer,
                                 component=shown.component, rendered=False, note=note, objects=[], lines=0,
                                 source=_source(was.release if was else None, now.release if now else None))
        if found_old is None or found_new is None:
            return unit, None
        digests = (was.digest if was else "", now.digest if now else "")
        kept = self._kept(was, now)
        pair = self._shapes_of(was, now)
        shapes = (*pair, *sorted(kept)) if pair is not None else None
        if digests not in self._compared and shapes in self._by_shape and was and now:
            self._compared[digests] = _renamed(self._by_shape[shapes], was.release.release)
        if digests not in self._compared:
            scoped = objects.scoped_kinds([*found_old, *found_new])
            keyed_old: dict[Key, Mapping[str, Any]] = objects.keyed(found_old, was.release.namespace if was else "",
                                                                 scoped)
            keyed_new = objects.keyed(found_new, now.release.namespace if now else "", scoped)
            changed = objects.changes(keyed_old, keyed_new)
            custom = {key[:2] for key in set(keyed_old) & set(keyed_new)
                      if key[0] not in BUILTIN_GROUPS and keyed_old[key] != keyed_new[key]}
            for side in (was, now) if custom else ():
                if side is not None and side.label not in crds:
                    crds[side.label] = self._cluster_crds(side, path)
            judged = upgrade.verdict_of(shown.component, keyed_old, keyed_new, changed,
                                        crds_old=crds.get("old", []), crds_new=crds.get("new", []), kept=kept,
                                        deployer={"flux": "Flux"}.get(shown.deployer, "Helm"))
            if len(self._compared) >= _MEMO_LIMIT:
                self._compared.clear()
                self._by_shape.clear()
            self._compared[digests] = (changed, judged)
            if shapes is not None and was and not custom and all(item.change not in ("renamed", "moved")
                                                                  for item in changed):
                self._by_shape[shapes] = _template(changed, judged, was.release.release)
        changed, judged = self._compared[digests]
        return unit.model_copy(update={"rendered": True, "objects": changed,
                                       "lines": sum(item.lines for item in changed)}), judged

    def _kept(self, was: _Side | None, now: _Side | None) -> frozenset[str]:
        """The CRDs of the unit's charts' ``crds/`` folders when its deployer never updates them (else none)."""
        names: set[str] = set()
        for side in (was, now):
            chart = side.release.chart if side else None
            if side is None or chart is None or not side.release.crds_kept:
                continue
            if chart.local:
                texts = [data for name, data in side.tree.items() if name.startswith(f"{chart.name}/crds/")]
                names |= {str((doc.get("metadata") or {}).get("name", "")) for doc in objects.parse(texts)
                          if doc.get("kind") == "CustomResourceDefinition"}
            elif self.renderer is not None:
                names |= set(self.renderer.crds(chart.repository, chart.name, chart.version) or ())
        return frozenset(names - {""})

    def _shapes_of(self, was: _Side | None, now: _Side | None) -> tuple[str, str] | None:
        """The two sides' renders with their release name taken out, when both are known under one name."""
        if not was or not now or was.release.release != now.release.release:
            return None
        old, new = self._shapes.get(was.digest), self._shapes.get(now.digest)
        return (old, new) if old is not None and new is not None else None

    def _cluster_crds(self, side: _Side, path: str) -> list[Mapping[str, Any]]:
        """Every CustomResourceDefinition the side's units render (a custom resource's CRD often comes with another
        component's chart): asked for only when a custom resource changes, rendered through the memo."""
        out: list[Mapping[str, Any]] = []
        for release in releases(side.tree, path):
            found, _why = self.objects_of(release, side.tree, release.digest(side.tree), side.version)
            out += [item for item in found or [] if item.get("kind") == "CustomResourceDefinition"]
        return out


_NAME = "\x00release\x00"
"""Stands for a unit's release name in the renders and results shared between clusters (``_shape``)."""


def _shape(texts: Sequence[str | bytes], release: Release) -> str:
    """A render with its release name taken out, and the namespace and component it is judged in: two clusters
    whose units differ only by release name (a shared Argo CD hub names each release after its cluster) have the
    same shape, so their object changes and verdict are the same once the name is put back (``_renamed``)."""
    import hashlib

    hashed = hashlib.sha256(f"{len(release.release)}\0{release.namespace}\0{release.component}\0".encode())
    name = release.release.encode()
    for text in texts:
        hashed.update((text.encode() if isinstance(text, str) else text).replace(name, _NAME.encode()) + b"\0")
    return hashed.hexdigest()


def _template(changed: list[ObjectChange], judged: UpgradeVerdict, name: str) -> tuple[str, str, str]:
    """Object changes and a verdict as JSON with the release name taken out (``_renamed`` puts one back)."""
    import json

    from aicr_gen.yaml import dump_json

    escaped = json.dumps(name)[1:-1]
    return (dump_json([item.model_dump(mode="json") for item in changed]).replace(escaped, _NAME_JSON),
            judged.model_dump_json().replace(escaped, _NAME_JSON), judged.component)


_NAME_JSON = "\\u0000release\\u0000"


def _renamed(template: tuple[str, str, str], name: str) -> tuple[list[ObjectChange], UpgradeVerdict]:
    """A shared result with ``name`` put back, sorted as ``objects.changes`` and ``upgrade`` sort."""
    import json

    escaped = json.dumps(name)[1:-1]
    changed = [ObjectChange.model_validate(item) for item in json.loads(template[0].replace(_NAME_JSON, escaped))]
    judged = UpgradeVerdict.model_validate_json(template[1].replace(_NAME_JSON, escaped))
    return objects.ordered(changed), upgrade.ordered(judged)


def _source(was: Release | None, now: Release | None) -> str:
    """Where the unit's objects come from, ``base -> merge`` when that changes (one chart: its versions)."""
    if was and now and was.chart and now.chart and not was.chart.local and \
            (was.chart.repository, was.chart.name) == (now.chart.repository, now.chart.name) and \
            was.chart.version != now.chart.version:
        return f"{now.chart.name} {was.chart.version} -> {now.chart.version} from {now.chart.repository}"
    before, after = (item.chart.text() if item and item.chart else "manifests" if item else "(none)"
                     for item in (was, now))
    return after if before == after else f"{before} -> {after}"


def _merged(component: str, found: Sequence[UpgradeVerdict]) -> UpgradeVerdict:
    """One verdict for a component several units deploy (its chart and its -post manifests)."""
    reasons = sorted((reason for item in found for reason in item.reasons),
                     key=lambda item: -upgrade.SEVERITY[item.verdict])
    worst = max((item.verdict for item in found), key=upgrade.SEVERITY.__getitem__, default="safe")
    return UpgradeVerdict(component=component, verdict=worst, reasons=reasons,
                          unchecked=[name for item in found for name in item.unchecked])
