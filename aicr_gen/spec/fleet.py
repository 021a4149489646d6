"""``Fleet`` (``aicr-gen.dev/v1alpha1``): defaults many ClusterSpecs share, and the layering that makes a
cluster's effective spec.

A ClusterSpec names its fleet with ``spec.extends`` (a path relative to the spec's folder). The fleet's
``spec`` lies under the cluster's as Helm layers values files: maps merge key by key, a list or a scalar of
the cluster replaces the fleet's, and a ``null`` in the cluster removes the fleet's value (the field then
takes its ClusterSpec default). One level only: a fleet extends nothing, so there are no chains or cycles.
Per cluster, never in a fleet: ``spec.criteria`` (what the cluster is) and ``spec.repo.path`` (its own
folder: a shared one would make every cluster's tree replace the others').

The paths a fleet names (catalogs, policies, sentinel.rules) are relative to the fleet file's folder;
layering rewrites them relative to the cluster's, so the effective spec reads the same files. The effective
document remembers for every value the file and line it came from (``Layered``): errors name the fleet or
the cluster file, and ``aicr-gen spec show`` prints the origins.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, Field, create_model

from aicr_gen import limits
from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import Strict
from aicr_gen.spec import cluster as cluster_spec
from aicr_gen.spec.layered import Layered, Origin, Origins
from aicr_gen.spec.validate import check_paths
from aicr_gen.yaml import Document, FieldPath

KIND = "Fleet"
PER_CLUSTER = {
    ("spec", "criteria"): "criteria are per cluster; set them in each ClusterSpec",
    ("spec", "repo", "path"): "repo.path is per cluster (each cluster's tree needs its own folder); set it in "
                              "each ClusterSpec",
    ("spec", "argocd", "destinationServer"): "a destination is per cluster; set it in each ClusterSpec",
    ("spec", "argocd", "destinationName"): "a destination is per cluster; set it in each ClusterSpec",
    ("spec", "extends"): "a Fleet extends nothing (one level: ClusterSpec -> Fleet); merge the two fleets "
                         "into one",
}
REBASED: tuple[FieldPath, ...] = (("spec", "catalogs"), ("spec", "policies"), ("spec", "sentinel", "rules"))
"""The fleet's fields holding paths relative to its folder (a list of them, or one)."""

_IN_FLEET = "the Fleet file's folder (aicr-gen rebases it onto each cluster's)"


def _defaults_of(model: type[BaseModel], *, drop: tuple[str, ...] = (), nested: Mapping[str, Any] | None = None,
                 paths: tuple[str, ...] = ()) -> type[BaseModel]:
    """``Fleet<model>``: ``model`` with every field optional and no default (absent: the cluster's value or the
    ClusterSpec default), less ``drop``; ``nested`` replaces a field's type, ``paths`` name path fields."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        if name in drop:
            continue
        annotation = (nested or {}).get(name, info.annotation)
        typed = Annotated[annotation, *info.metadata] if info.metadata else annotation
        description = info.description or ""
        if name in paths:
            assert "the spec's folder" in description, name
            description = description.replace("the spec's folder", _IN_FLEET)
        fields[name] = (typed | None, Field(None, description=description))
    return create_model(f"Fleet{model.__name__}", __base__=Strict, __doc__=model.__doc__,
                        **fields)


class FleetMetadata(Strict):
    """Identifies the fleet."""

    name: cluster_spec.DnsLabel = Field(description="Fleet name: a DNS label")


class _FleetHead(Strict):
    """Defaults shared by the ClusterSpecs naming this file in spec.extends: maps merge, the cluster's lists and
    scalars replace the fleet's, a null in the cluster removes the fleet's value."""

    apiVersion: Literal["aicr-gen.dev/v1alpha1"] = Field(description=f"Always {cluster_spec.API_VERSION}")
    kind: Literal["Fleet"] = Field(description=f"Always {KIND}")
    metadata: FleetMetadata = Field(description="Name of the fleet")


Gate = Literal["certified", "healthy", "no-drift", "no-quarantine"]
GATES: tuple[Gate, ...] = ("certified", "healthy", "no-drift", "no-quarantine")
"""What a wave must show before the next one gets its baseline (issue 28: read back by ``rollout``)."""


class WaveSpec(Strict):
    """A wave's baseline: the pins and settings its clusters run, over the fleet's spec (maps merge, lists and
    scalars replace) and under each cluster's."""

    versions: cluster_spec.Versions | None = Field(None, description="Component version pins over the fleet's "
                                                                     "(component: chart version)")
    overrides: cluster_spec.Overrides | None = Field(None, description="Component value overrides over the fleet's")


class Wave(Strict):
    """One step of a fleet's rollout: which clusters, how long they soak, what they must prove, what they run."""

    name: cluster_spec.DnsLabel = Field(description="Wave name: a DNS label, unique in the fleet")
    clusters: list[cluster_spec.DnsLabel] = Field(default_factory=list,
                                                  description="ClusterSpecs in this wave by metadata.name")
    selector: cluster_spec.Labels | None = Field(None, description="ClusterSpecs in this wave by metadata.labels "
                                                                   "(every label equal)")
    soak: str = Field("0s", description="How long the wave's clusters run the baseline, every gate passed, "
                                        "before the next wave may get it (a duration: 30m, 24h, 1h30m)")
    gates: list[Gate] = Field(
        default_factory=lambda: list(GATES), description="What the wave's clusters must show: certified (a "
        "Certification of the running stack passed), healthy (the deployer applied the revision and it is "
        "healthy), no-drift (the live cluster matches its recipe), no-quarantine (NVSentinel quarantined no node)")
    spec: WaveSpec = Field(default_factory=WaveSpec, description="The wave's baseline over the fleet's spec")


class Retention(Strict):
    """Which Certifications the fleet's jobs created ``rollout prune`` keeps."""

    keep: int = Field(5, ge=1, le=1000, description="The newest finished Certifications kept per job (trigger) and "
                                                    "pool; the newest result and newest pass of the stack a cluster "
                                                    "runs are kept too, whatever their age")


class Rollout(Strict):
    """Ordered waves: every cluster extending the fleet is in exactly one; a change reaches a wave's baseline
    first in the first wave and moves on wave by wave."""

    waves: list[Wave] = Field(min_length=1, max_length=limits.MAX_ENTRIES, description="The waves, in order")
    retention: Retention = Field(default_factory=Retention, description="Certifications rollout prune keeps")


def _fleet_model() -> type[BaseModel]:
    repo = _defaults_of(cluster_spec.Repo, drop=("path",))
    sentinel = _defaults_of(cluster_spec.Sentinel, paths=("rules",))
    snapshot = _defaults_of(cluster_spec.Snapshot)
    argocd = _defaults_of(cluster_spec.ArgoCD, drop=("destinationServer", "destinationName"))
    flux = _defaults_of(cluster_spec.FluxSettings)
    spec = _defaults_of(cluster_spec.Spec, drop=("criteria", "extends"), paths=("catalogs", "policies"),
                        nested={"repo": repo, "sentinel": sentinel, "snapshot": snapshot, "argocd": argocd,
                                "flux": flux})
    spec.__doc__ = "Defaults for the clusters' spec (every field as in ClusterSpec, all optional)."
    return create_model(KIND, __base__=_FleetHead, __doc__=_FleetHead.__doc__,
                        spec=(spec, Field(description="Defaults for the clusters' spec; not criteria, extends or "
                                                      "repo.path")),
                        rollout=(Rollout | None, Field(None, description="Waves the fleet's changes roll out in")))


Fleet = _fleet_model()


# ------------------------------------------------------------------------------------------- loading


def _get(data: Any, path: FieldPath) -> Any:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return None
        data = data[part]
    return data


def parse_fleet(doc: Document) -> BaseModel:
    """Validate a loaded document as a Fleet; a per-cluster field gets a message saying where it belongs."""
    from aicr_gen.modelcheck import check

    kind = _get(doc.data, ("kind",))
    if kind != KIND:
        raise doc.error(("kind",), f"kind is {kind!r}, not {KIND}; a fleet file says apiVersion: "
                                  f"{cluster_spec.API_VERSION} and kind: {KIND}")
    for path, problem in PER_CLUSTER.items():
        if _get(doc.data, path) is not None:
            raise doc.error(path, problem)
    fleet = check(doc, Fleet)
    _check_waves(doc)
    return fleet


def _check_waves(doc: Document) -> None:
    """Wave names are unique, each wave selects by name or labels, and soaks are durations."""
    from aicr_gen.cel.durations import seconds

    seen: dict[str, int] = {}
    for index, wave in enumerate(_get(doc.data, ("rollout", "waves")) or []):
        where = ("rollout", "waves", index)
        if wave["name"] in seen:
            raise doc.error((*where, "name"), f"wave {wave['name']!r} is already waves[{seen[wave['name']]}]; give "
                                              "each wave its own name")
        seen[wave["name"]] = index
        if not wave.get("clusters") and not wave.get("selector"):
            raise doc.error(where, f"wave {wave['name']!r} selects no cluster; list ClusterSpecs in clusters or "
                                   "match their labels with selector")
        soak = wave.get("soak", "0s")
        if seconds(str(soak)) is None or str(soak).startswith("-"):
            raise doc.error((*where, "soak"), f"soak {soak!r} is not a duration; give one such as 30m, 24h or "
                                              "1h30m")


def load_fleet(path: str | Path) -> tuple[BaseModel, Document]:
    """Read and validate a Fleet file."""
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.yaml import load_bytes

    source = str(path)
    doc = load_bytes(read_input(source, KIND), source)
    return parse_fleet(doc), doc


_CHECKED: dict[tuple[str, str, str], Document] = {}
"""Fleet documents that passed ``check_fleet``'s schema and path rules, by (name in messages, resolved file,
sha256 of the bytes): the specs of a fleet (a run's thousand) load and validate it once per process. The same
name keeps every message as it was; whether the named paths exist is asked again each time."""


def _checked_fleet(source: str, file: Path) -> Document:
    """The fleet at ``file`` (resolved; named ``source`` in messages), loaded and checked as ``check_fleet``
    does."""
    import hashlib

    from aicr_gen.edges.inputs import read_input
    from aicr_gen.yaml import load_bytes

    data = read_input(source, KIND)
    key = (source, str(file), hashlib.sha256(data).hexdigest())
    doc = _CHECKED.get(key)
    if doc is None:
        doc = load_bytes(data, source)
        parse_fleet(doc)
        check_paths(fleet_references(doc), doc.error, Path(doc.source), "fleet")
        _CHECKED[key] = doc
    _check_exists(doc)
    return doc


def fleet_references(doc: Document) -> list[tuple[FieldPath, str]]:
    """``(field path, text)`` of every path a fleet names, relative to its folder."""
    found: list[tuple[FieldPath, str]] = []
    for field in REBASED:
        value = _get(doc.data, field)
        if isinstance(value, str):
            found.append((field, value))
        elif isinstance(value, list):
            found += [((*field, index), text) for index, text in enumerate(value) if isinstance(text, str)]
    return found


def check_fleet(doc: Document) -> BaseModel:
    """A loaded fleet file as ``lint`` checks it alone: the schema and the per-cluster fields (``parse_fleet``),
    and the paths it names: each a file or folder that exists, not through ``.git`` and, in a Git work tree,
    inside it (as a spec's paths)."""
    fleet = parse_fleet(doc)
    if doc.source == "-":
        return fleet
    check_paths(fleet_references(doc), doc.error, Path(doc.source), "fleet")
    _check_exists(doc)
    return fleet


def _check_exists(doc: Document) -> None:
    folder = Path(doc.source).parent
    for path, text in fleet_references(doc):
        if not (folder / text).exists():
            raise doc.error(path, f"{text!r}: no such file or folder beside the fleet ({folder / text}); paths in "
                                  "a fleet are relative to its folder")


# ------------------------------------------------------------------------------------------- layering


def _rebase(text: str, fleet_folder: Path, cluster_folder: Path) -> str:
    """A path relative to the fleet's folder as one relative to the cluster's (absolute ones stay)."""
    if Path(text).is_absolute() or fleet_folder == cluster_folder:
        return text
    return Path(os.path.relpath(fleet_folder / text, cluster_folder)).as_posix()


class _Layering:
    """Merges the fleet's document under the cluster's, recording each value's origin."""

    def __init__(self, fleet: Document, cluster: Document, rebased: Mapping[FieldPath, str]) -> None:
        self.fleet, self.cluster, self.rebased = fleet, cluster, rebased
        self.origins: dict[FieldPath, Origin] = {}

    def take(self, path: FieldPath, value: Any, doc: Document) -> Any:
        """``value`` of one layer as it is (nulls in maps dropped), every node's origin recorded."""
        written = self.rebased.get(path) if doc is self.fleet else None
        self.origins[path] = Origin(doc.source, doc.line_of(path), written)
        if isinstance(value, dict):
            return {key: self.take((*path, key), item, doc) for key, item in value.items() if item is not None}
        if isinstance(value, list):
            return [self.take((*path, index), item, doc) for index, item in enumerate(value)]
        return value

    def merge(self, path: FieldPath, low: Any, high: Any) -> Any:
        """``high`` (the cluster's) over ``low`` (the fleet's): maps merge, anything else replaces."""
        if not (isinstance(low, dict) and isinstance(high, dict)):
            return self.take(path, high, self.cluster)
        self.origins[path] = Origin(self.cluster.source, self.cluster.line_of(path))
        out: dict[str, Any] = {}
        for key, value in high.items():
            if value is None:
                continue  # a null removes the fleet's value
            out[key] = self.merge((*path, key), low[key], value) if low.get(key) is not None \
                else self.take((*path, key), value, self.cluster)
        for key, value in low.items():
            if key not in high and value is not None:
                out[key] = self.take((*path, key), value, self.fleet)
        return out


def _fleet_source(doc: Document, extends: str) -> tuple[str, Path]:
    """The fleet's name in messages (beside the cluster's, normalised) and its file."""
    if doc.source == "-":
        return posixpath.normpath(extends), Path(extends)
    named = posixpath.normpath(posixpath.join(posixpath.dirname(doc.source), extends))
    return named, Path(named)


def _check_extends(doc: Document, extends: Any) -> str:
    where = ("spec", "extends")
    if not isinstance(extends, str) or not extends.strip():
        raise doc.error(where, "give the path of a Fleet file relative to this spec's folder, e.g. ../fleet.yaml")
    try:
        limits.path(extends)
    except ValueError as err:
        raise doc.error(where, str(err)) from None
    if "\\" in extends or Path(extends).is_absolute():
        raise doc.error(where, f"{extends!r} must be a relative POSIX path from this spec's folder ('/' separators, "
                               "not absolute), e.g. ../fleet.yaml")
    return extends


def _named_by(err: InvalidInputError, note: str) -> InvalidInputError:
    """``err`` with ``note`` after its message (its last problem's, when it has located ones)."""
    if not err.problems:
        return InvalidInputError(f"{err}{note}")
    *first, last = err.problems
    noted = last._replace(message=last.message + note) if last.fix is None else last._replace(fix=last.fix + note)
    return InvalidInputError.at(*first, noted)


def effective(doc: Document) -> Document:
    """The effective ClusterSpec document of ``doc``: unchanged unless its ``spec.extends`` names a fleet, else
    the fleet's spec layered under the cluster's (a ``Layered`` document). The result is data only: the
    ClusterSpec model validates it next."""
    extends = _get(doc.data, ("spec", "extends"))
    if extends is None:
        return doc
    extends = _check_extends(doc, extends)
    source, file = _fleet_source(doc, extends)
    try:
        found = file.is_file()
    except OSError as err:  # e.g. ENAMETOOLONG: the spec's folder and the path together are too long
        raise doc.error(("spec", "extends"), f"{extends!r}: cannot read {source}: {err.strerror or err}; give a "
                                             "shorter path") from None
    if not found:
        raise doc.error(("spec", "extends"), f"{extends!r}: no such file ({source}); give the path of a Fleet file "
                                             "relative to this spec's folder, e.g. ../fleet.yaml")
    fleet_file = file.resolve()
    try:
        fleet_doc = _checked_fleet(source, fleet_file)
    except InvalidInputError as err:
        raise _named_by(err, f" (the fleet named by {doc.where(('spec', 'extends'))})") from None
    fleet_folder = fleet_file.parent
    cluster_folder = Path(doc.source).resolve().parent if doc.source != "-" else Path.cwd()
    rebased: dict[FieldPath, str] = {}
    fleet_spec: dict[str, Any] = dict(fleet_doc.data["spec"])
    for path, text in fleet_references(fleet_doc):
        moved = _rebase(text, fleet_folder, cluster_folder)
        if moved != text:
            rebased[path] = text
            _set(fleet_spec, path[1:], moved)
    fleet_spec, lines = _with_wave(doc, fleet_doc, fleet_spec)
    layering = _Layering(Document(source, {"spec": fleet_spec}, lines), doc, rebased)
    data = layering.merge((), {"spec": fleet_spec}, doc.data)
    return Layered(doc.source, data, Origins(layering.origins))


def waves_of(fleet_doc: Document) -> list[dict[str, Any]]:
    """The fleet's waves as written (checked by ``parse_fleet``), in order."""
    return list(_get(fleet_doc.data, ("rollout", "waves")) or [])


def _wave_index(name: Any, labels: Mapping[str, Any], waves: list[dict[str, Any]]) -> list[int]:
    """The indexes of the waves that take a cluster named ``name`` with ``labels``: listed in ``clusters``, or
    every label of ``selector`` equal."""
    return [index for index, wave in enumerate(waves)
            if name in (wave.get("clusters") or [])
            or (wave.get("selector") and all(labels.get(key) == value for key, value in wave["selector"].items()))]


def wave_of(doc: Document, fleet_doc: Document) -> int | None:
    """The index of the wave of the fleet ``doc``'s cluster is in (None when the fleet has no waves); exit 2 when
    it is in none or in several."""
    waves = waves_of(fleet_doc)
    if not waves:
        return None
    name = _get(doc.data, ("metadata", "name"))
    found = _wave_index(name, _get(doc.data, ("metadata", "labels")) or {}, waves)
    named = [repr(waves[index]["name"]) for index in found]
    if len(found) == 1:
        return found[0]
    where = ("spec", "extends")
    if not found:
        raise doc.error(where, f"cluster {name!r} is in no wave of the fleet {fleet_doc.source} (waves "
                               f"{', '.join(repr(wave['name']) for wave in waves)}); list it in a wave's clusters "
                               "or give it the labels a wave's selector matches")
    raise doc.error(where, f"cluster {name!r} is in waves {' and '.join(named)} of the fleet {fleet_doc.source}; "
                           "a cluster is in exactly one wave: take it out of all but one")


_PARSED: dict[tuple[str, str], Any] = {}
"""Fleet files' data by (resolved file, sha256 of the bytes), for ``wave_name`` and ``baseline_view``: a fleet's
thousand clusters parse it once."""


def _fleet_data(data: bytes, file: Path) -> Any:
    import hashlib

    from aicr_gen.yaml import load_bytes

    key = (str(file), hashlib.sha256(data).hexdigest())
    if key not in _PARSED:
        try:
            _PARSED[key] = load_bytes(data, str(file)).data
        except InvalidInputError:
            _PARSED[key] = None
    return _PARSED[key]


def wave_name(name: str, labels: Mapping[str, str], fleet_file: Path) -> str | None:
    """The name of the one wave of the fleet at ``fleet_file`` that takes the cluster ``name`` with ``labels``;
    None when the fleet has no waves, cannot be read, or the cluster is not in exactly one (loading the spec
    refuses that)."""
    try:
        data = _fleet_data(fleet_file.read_bytes(), fleet_file.resolve())
    except OSError:
        return None
    waves = _get(data, ("rollout", "waves"))
    if not isinstance(waves, list) or not all(isinstance(wave, dict) for wave in waves):
        return None
    found = _wave_index(name, labels, waves)
    return str(waves[found[0]].get("name")) if len(found) == 1 else None


def baseline_view(data: bytes, file: Path, wave: str) -> bytes:
    """What of the fleet file ``data`` a cluster of ``wave`` is rendered from, as canonical JSON: the fleet less
    its rollout, but every wave's membership and the wave's own baseline (its ``spec``). Editing another wave's
    baseline, a soak, gates or the retention leaves it the same; an unreadable file is its bytes."""
    import json

    parsed = _fleet_data(data, file)
    if not isinstance(parsed, dict):
        return data
    waves = _get(parsed, ("rollout", "waves"))
    members = [{key: item.get(key) for key in ("name", "clusters", "selector", *(("spec",) if
               item.get("name") == wave else ()))} for item in waves if isinstance(item, dict)] \
        if isinstance(waves, list) else waves
    view = {**{key: value for key, value in parsed.items() if key != "rollout"}, "waves": members, "wave": wave}
    return json.dumps(view, sort_keys=True, separators=(",", ":"), default=str).encode()


def _with_wave(doc: Document, fleet_doc: Document,
               fleet_spec: dict[str, Any]) -> tuple[dict[str, Any], Mapping[FieldPath, int]]:
    """The fleet's spec with the cluster's wave's baseline over it (maps merge, anything else replaces), and the
    line of every field: a wave's value is on its line under ``rollout.waves[i].spec``."""
    index = wave_of(doc, fleet_doc)
    if index is None:
        return fleet_spec, fleet_doc.lines
    prefix = ("rollout", "waves", index, "spec")
    lines = dict(fleet_doc.lines)

    def over(path: FieldPath, low: Any, high: Any) -> Any:
        lines[("spec", *path)] = fleet_doc.line_of((*prefix, *path))
        if not (isinstance(low, dict) and isinstance(high, dict)):
            for key in high if isinstance(high, dict) else ():
                over((*path, key), None, high[key])
            return high
        out = dict(low)
        for key, value in high.items():
            if value is not None:
                out[key] = over((*path, key), low.get(key), value)
        return out

    wave_spec = waves_of(fleet_doc)[index].get("spec") or {}
    merged = dict(fleet_spec)
    for key, value in wave_spec.items():
        if value is not None:
            merged[key] = over((key,), fleet_spec.get(key), value)
    return merged, lines


def _set(data: dict[str, Any], path: FieldPath, value: str) -> None:
    """Set ``path`` in ``data``, copying each map and list on the way (the loaded fleet stays as it was)."""
    head, rest = path[0], path[1:]
    if not rest:
        data[head] = value  # type: ignore[index]
        return
    child = data[head]  # type: ignore[index]
    copied = dict(child) if isinstance(child, dict) else list(child)
    data[head] = copied  # type: ignore[index]
    if isinstance(copied, list):
        copied[rest[0]] = value  # type: ignore[index]
    else:
        _set(copied, rest, value)
