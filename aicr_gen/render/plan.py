"""The deployment plan every deployer renders: deployable units in install order, with their values.

A component becomes up to three units: ``<c>-pre`` (its preManifestFiles), ``<c>`` (the upstream chart,
a Kustomize source, or a local chart of its manifests when it has no chart) and ``<c>-post`` (its
manifestFiles, when it also has a chart). Each unit gets a folder ``NNN-<unit>`` in install order and
the dependency depth of its component. Pure: files come in as bytes.
"""

from __future__ import annotations

import posixpath
from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError, refusal
from aicr_gen.render import bundle_time, readiness
from aicr_gen.render import values as values_mod
from aicr_gen.render.manifest_text import has_objects, helm_literal
from aicr_gen.render.scheduling import apply as schedule
from aicr_gen.resolve import graph
from aicr_gen.resolve.refs import is_enabled
from aicr_gen.spec.overrides import Override
from aicr_gen.spec.scheduling import Scheduling
from aicr_gen.text.kube_names import DNS_LABEL, is_dns_label

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

PRE, MAIN, POST, READINESS = "pre", "main", "post", "readiness"
FLAGS = ("hasSelfRefCRDs", "manifestsUseChartCRDs")
UPSTREAM, LOCAL, KUSTOMIZE = "upstream", "local", "kustomize"


class Vendored(NamedTuple):
    """An upstream chart pulled into the bundle at bundle time (``--vendor-charts``)."""

    tarball: str
    """The file name ``helm pull`` gave it (``<chart>-<version>.tgz``), kept under the unit's ``charts/``."""
    data: bytes
    puller: str = ""
    """What pulled it (``helm-cli v4.1.4+g...``), for provenance.yaml."""


class Unit(NamedTuple):
    """One deployable unit (a Helm release, Argo CD Application or Flux HelmRelease)."""

    name: str
    component: str
    role: str
    kind: str
    namespace: str
    folder: str
    level: int
    depends_on: tuple[str, ...]
    values: Mapping[str, Any] = {}  # shared, and never changed: a unit is a value
    chart: str = ""
    repository: str = ""
    version: str = ""
    path: str = ""
    tag: str = ""
    manifests: tuple[tuple[str, bytes], ...] = ()
    dynamic: Mapping[str, Any] = {}  # shared, and never changed
    """Values left to install time (``--dynamic``): taken out of ``values``, each at its path with the recipe's
    value (or '' when the recipe has none), for the deployer to expose."""
    flags: frozenset[str] = frozenset()
    """The registry's deployer hints of the component: ``hasSelfRefCRDs`` (its chart creates objects of its own
    CRDs), ``manifestsUseChartCRDs`` (its manifests do)."""
    vendored: Vendored | None = None
    """The upstream chart ``chart``/``version`` from ``repository``, pulled into the bundle: the unit is then a
    local wrapper chart depending on it, its values nested under the chart name."""


class Plan(NamedTuple):
    """The units in install order, plus the recipe they came from."""

    recipe: Mapping[str, Any]
    units: tuple[Unit, ...]
    notes: tuple[tuple[str, str], ...] = ()
    """``(severity, message)`` of what bundling reports without refusing (registry validations, defaults it
    chose): ``warning`` or ``info``."""

    def digest(self) -> str:
        """``sha256:<hex>`` of what the stack deploys: every unit's chart, version, source, namespace, order,
        values and manifests (not the recipe's other fields, nor anything a deployer adds around the units),
        so it changes exactly when the stack applied to the cluster does."""
        import hashlib
        import json

        units = [{"name": unit.name, "component": unit.component, "kind": unit.kind, "namespace": unit.namespace,
                  "dependsOn": unit.depends_on, "values": unit.values, "chart": unit.chart,
                  "repository": unit.repository, "version": unit.version, "path": unit.path, "tag": unit.tag,
                  "manifests": [(rel, hashlib.sha256(data).hexdigest()) for rel, data in unit.manifests],
                  **({"dynamic": unit.dynamic} if unit.dynamic else {}),
                  **({"vendored": hashlib.sha256(unit.vendored.data).hexdigest()} if unit.vendored else {})}
                 for unit in self.units]
        text = json.dumps(units, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
        return "sha256:" + hashlib.sha256(text.encode()).hexdigest()

    def levels(self) -> list[list[Unit]]:
        """Units grouped by their component's dependency depth."""
        depth = max((unit.level for unit in self.units), default=-1)
        return [[unit for unit in self.units if unit.level == level] for level in range(depth + 1)]


def parse_values(rel: str, data: bytes) -> dict[str, Any]:
    """A values file as a mapping (empty or comment-only files are ``{}``)."""
    from aicr_gen.yaml import load_text

    text = data.decode("utf-8")
    if all(not line.strip() or line.lstrip().startswith(("#", "---")) for line in text.splitlines()):
        return {}
    parsed = load_text(text, rel).data
    if parsed is None:
        return {}
    if not isinstance(parsed, dict):
        raise InvalidInputError(f"{rel}:1: values must be a mapping, not a {type(parsed).__name__}")
    return parsed


def _load_values(name: str, rel: str, sources: Mapping[str, bytes], parsed: Mapping[str, Any]) -> dict[str, Any]:
    if rel in parsed:
        values: dict[str, Any] = parsed[rel]
        return values
    if rel not in sources:
        raise InvalidInputError(f"component {name!r}: values file {rel!r} is not in the catalog; pass --catalog")
    return parse_values(rel, sources[rel])


def component_values(ref: Mapping[str, Any], sources: Mapping[str, bytes],
                     parsed: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The component's base ``values.yaml`` (when its valuesFile is an overlay), the valuesFile, then the
    recipe's overrides (without ``enabled``/``install``, which only switch the component)."""
    name = ref["name"]
    files: list[dict[str, Any]] = []
    base = f"components/{name}/values.yaml"
    rel = ref.get("valuesFile")
    parsed = parsed or {}
    if rel and rel != base and (base in sources or base in parsed):
        files.append(_load_values(name, base, sources, parsed))
    if rel:
        files.append(_load_values(name, rel, sources, parsed))
    overrides = {key: value for key, value in (ref.get("overrides") or {}).items() if key not in ("enabled", "install")}
    return values_mod.layered(files, overrides)


def _manifests(ref: Mapping[str, Any], key: str, sources: Mapping[str, bytes], target: tuple[Any, ...], *,
               extra: tuple[tuple[str, bytes], ...] = (),
               memo: dict[bytes, bytes | None] | None = None) -> tuple[tuple[str, bytes], ...]:
    """The component's ``key`` manifests (plus ``extra``, already rendered) as its local chart holds them:
    rendered as AICR renders them at bundle time, so a template that cannot render fails here naming the catalog
    file; a manifest left with no object is dropped."""
    out: list[tuple[str, bytes]] = []
    for rel in ref.get(key) or []:
        if rel not in sources:
            raise InvalidInputError(f"component {ref['name']!r}: {key} {rel!r} is not in the catalog; pass --catalog")
        rendered = _memoized(sources[rel], rel, target, memo)
        out += [(posixpath.basename(rel), rendered)] if rendered is not None else []
    out += extra
    names = [name for name, _ in out]
    if len(set(names)) != len(names):
        raise InvalidInputError(f"component {ref['name']!r}: two {key} share a file name; rename one")
    return tuple(out)


def _memoized(raw: bytes, rel: str, target: tuple[Any, ...], memo: dict[bytes, bytes | None] | None) -> bytes | None:
    """``_rendered`` through ``memo``, for manifests that need the template engine."""
    if memo is None or (b"{{" not in raw and b"helm.sh/hook" not in raw):
        return _rendered(raw, rel, target)
    import marshal

    from aicr_gen.edges.cache import digest

    key = digest(rel.encode() + b"\0" + raw + b"\0" + marshal.dumps(target))
    if key not in memo:
        memo[key] = _rendered(raw, rel, target)
    return memo[key]


def _rendered(raw: bytes, rel: str, target: tuple[Any, ...]) -> bytes | None:
    """One catalog manifest rendered (Go template, then AICR's removal of sync-phase Helm hooks, the documents
    written again as yaml.v3 writes them) and escaped as a Helm template that reproduces it; None when it holds no
    object. ``target``: ``manifests.RenderInput``'s fields, then whether to keep the template (it is rendered
    all the same, to fail here). Text with no template action and no hook is what rendering gives but for
    its layout, so it is taken as it is (the template engine is not even imported)."""
    *fields, keep = target
    if b"{{" not in raw and (keep or b"helm.sh/hook" not in raw):
        return raw if has_objects(raw.decode("utf-8", "replace")) else None
    from aicr_gen.render import hooks, manifests

    try:
        text = manifests.render_template(raw, rel, manifests.RenderInput(*fields), strict=True)
    except InvalidInputError as err:
        raise InvalidInputError(f"component {fields[0]!r}: {err}; set the value (--set {fields[0]}:PATH=VALUE) or "
                                "fix the template") from None
    if keep:
        return raw if has_objects(text) else None
    text = hooks.strip_hooks(text, rel)
    return helm_literal(text.encode()) if has_objects(text) else None


def _switches(overrides: Sequence[Override], ref: Mapping[str, Any]) -> bool:
    """Whether ``--set COMP:enabled=...`` keeps the component; re-enabling a disabled one is refused."""
    keep = is_enabled(ref)
    for item in overrides:
        if item.path in (("enabled",), ("install",)):
            if item.value is True and not is_enabled(ref):
                raise refusal(item.flag)(
                    f"component {ref['name']!r} is disabled by the recipe; re-enabling it here would "
                    "skip the checks resolution does; enable it in the catalog overlay instead")
            if item.value is not False and item.value is not True:
                raise refusal(item.flag)("enabled takes true or false")
            keep = keep and item.value is not False
    return keep


def build(recipe: Mapping[str, Any], sources: Mapping[str, bytes], overrides: Sequence[Override],
          aliases: Mapping[str, str], *, parsed: Mapping[str, Any] | None = None,
          built: Mapping[str, bytes] | None = None, registry: Mapping[str, Mapping[str, Any]] | None = None,
          scheduling: Scheduling | None = None, serial: bool = False,
          dynamic: Mapping[str, Sequence[str]] | None = None, templates: bool = False,
          memo: dict[bytes, bytes | None] | None = None, gates: Mapping[str, bytes] | None = None) -> Plan:
    """The plan for ``recipe``: kept components in deploymentOrder, each split into its units. Values files
    come from ``parsed`` (already-parsed mappings) or are parsed from ``sources``. ``built`` holds the
    ``kustomize build`` output of Kustomize components for deployers that install them as local charts.
    ``registry`` (name -> registry entry) says where ``scheduling`` goes and what AICR adds at bundle time.
    ``serial``: each component waits for the one before it in deploymentOrder, none in parallel (``--serial``).
    ``dynamic``: component -> value paths left to install time (``--dynamic``). ``templates``: local charts
    keep the catalog's manifests as Helm templates, hooks and all, for Helm to render at install (AICR's flux
    bundles); they are still rendered here, so one that cannot render fails now. ``memo``: rendered manifests
    by a digest of their inputs, read and filled (the caller may keep it between runs). ``gates``: component ->
    its readiness gate chart (``--readiness-hooks``), a unit installed after the component's own."""
    refs = _checked_refs(recipe)
    registry = registry or {}
    scheduling = scheduling or Scheduling()
    resolved = values_mod.resolve_names(overrides, list(refs.values()), aliases)
    per_component: dict[str, list[Override]] = {name: [] for name in refs}
    for item in resolved:
        per_component[item.component].append(item)
    kept = [name for name in recipe.get("deploymentOrder", []) if name in refs
            and _switches(per_component[name], refs[name])]
    dependencies = {name: [dep for dep in refs[name].get("dependencyRefs", []) if dep in kept] for name in kept}
    _check_order(kept, dependencies)
    if serial:
        dependencies = {name: kept[index - 1:index] for index, name in enumerate(kept)}
    depth = _depths(dependencies)
    dynamic = dynamic or {}
    unknown = sorted(set(dynamic) - set(kept))
    if unknown:
        raise InvalidInputError(f"--dynamic {unknown[0]}: the component is not deployed by this recipe; use one of "
                                f"{', '.join(kept)}")
    given = {name: [values_mod.dotted(item.path) for item in items if item.path]
             for name, items in per_component.items()}
    policy_notes = bundle_time.allocation_policy(dynamic, given)
    values = {name: _values(refs[name], per_component[name], sources, parsed, entry=registry.get(name),
                            scheduling=scheduling, dynamic=frozenset(dynamic.get(name, ())))
              for name in kept}
    bundle_time.dra_annotation(values, [refs[name] for name in kept])
    notes = [("warning", text) for text in [*policy_notes, *bundle_time.agentgateway_exposure(values)]]
    disabled = frozenset(name for name in refs if name not in kept and is_enabled(refs[name]))
    set_values = {(item.component, values_mod.dotted(item.path)): item.value for item in resolved if not item.merge}
    owned = bundle_time.owned_paths(recipe)
    bundle_time.profile_lock(recipe, {name: component_values(refs[name], sources, parsed) for name in owned
                                      if name in refs}, values, dynamic)
    notes += bundle_time.validations(recipe, registry, kept, scheduling=scheduling, disabled=disabled,
                                     set_values=set_values, values=values, dynamic=dynamic)
    nodes = int((recipe.get("criteria") or {}).get("nodes") or 0)
    units: list[Unit] = []
    last: dict[str, str] = {}
    for name in kept:
        ref = refs[name]
        quota = ((bundle_time.GKE_QUOTA_FILE, bundle_time.gke_quota(ref.get("namespace") or name, nodes)),) \
            if bundle_time.needs_gke_quota(recipe, registry.get(name)) else ()
        after = [last[dep] for dep in dependencies[name]]
        flags = frozenset(flag for flag in FLAGS if (registry.get(name) or {}).get(flag))
        for unit in _units(ref, values[name], sources, level=depth[name], after=after, built=(built or {}).get(name),
                           extra_pre=quota, flags=flags, templates=templates, memo=memo):
            if unit.kind == UPSTREAM and dynamic.get(name):
                static, install_time = split_dynamic(unit.values, dynamic[name])
                units.append(unit._replace(values=static, dynamic=install_time))
            else:
                units.append(unit)
            last[name] = unit.name
        if gates and name in gates:
            units.append(Unit(name=f"{name}{readiness.SUFFIX}", component=name, role=READINESS, kind=LOCAL,
                              namespace=ref.get("namespace") or name, folder="", level=depth[name],
                              depends_on=(last[name],), manifests=(("readiness-gate.yaml", gates[name]),)))
            last[name] = units[-1].name
    seen: set[str] = set()
    for unit in units:
        if unit.name in seen:
            raise InvalidInputError(f"two units are named {unit.name!r} (a component named like another's "
                                    "-pre, -post or -readiness unit); rename one")
        seen.add(unit.name)
    numbered = tuple(_number(unit, index) for index, unit in enumerate(units, start=1))
    return Plan(recipe=recipe, units=numbered, notes=tuple(notes))


def _checked_refs(recipe: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    """The recipe's componentRefs by name, each with a DNS-label name and namespace and a pinned chart."""
    refs = {ref["name"]: ref for ref in recipe["componentRefs"]}
    for name, ref in refs.items():
        if not DNS_LABEL.fullmatch(name) or len(name) > 48:
            raise InvalidInputError(
                f"component name {name!r} is not a DNS label (lower-case letters, digits and '-', at most 48 "
                "characters); rename it in the catalog")
        namespace = ref.get("namespace") or name
        if not is_dns_label(namespace):
            raise InvalidInputError(f"component {name!r}: namespace {namespace!r} is not a DNS label; fix it")
        if ref.get("source") and ref.get("type") != "Kustomize" and not ref.get("version"):
            raise InvalidInputError(f"component {name!r}: chart from {ref['source']} has no version; pin one")
    return refs


def _depths(dependencies: Mapping[str, list[str]]) -> dict[str, int]:
    """Each component's dependency depth: 0 without dependencies, else one more than its deepest one."""
    depth: dict[str, int] = {}
    for name in graph.deployment_order(dependencies):
        depth[name] = 1 + max((depth[dep] for dep in dependencies[name]), default=-1)
    return depth


def _values(ref: Mapping[str, Any], overrides: list[Override], sources: Mapping[str, bytes],
            parsed: Mapping[str, Any] | None, *, entry: Mapping[str, Any] | None,
            scheduling: Scheduling, dynamic: frozenset[str]) -> dict[str, Any]:
    """A component's values in AICR's order: catalog and recipe, ``--set``, scheduling, ``--set-json``."""
    settings = [item for item in overrides if item.path not in (("enabled",), ("install",))]
    values = values_mod.apply_sets(component_values(ref, sources, parsed), settings)
    set_paths = frozenset(values_mod.dotted(item.path) for item in settings if item.path and not item.merge)
    values = schedule(values, entry, overrides=ref.get("overrides") or {}, set_paths=set_paths, scheduling=scheduling,
                      opted_out=dynamic)
    return values_mod.apply_typed(values, settings)


def split_dynamic(values: Mapping[str, Any], paths: Sequence[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``(static, install-time)`` values: each path moved out of ``values`` into the install-time map, with ''
    where ``values`` has nothing at it (AICR's ``splitDynamicPaths``)."""
    from aicr_gen.render.scheduling import set_at, value_at
    from aicr_gen.resolve.merge import copy_tree

    static: dict[str, Any] = copy_tree(dict(values))
    install_time: dict[str, Any] = {}
    for path in paths:
        found, value = value_at(static, path)
        if found:
            *parents, key = path.split(".")
            node: Any = static
            for part in parents:
                node = node[part]
            del node[key]
        set_at(install_time, path, value if found else "")
    return static, install_time


def parse_dynamic(items: Sequence[str], aliases: Mapping[str, str]) -> dict[str, tuple[str, ...]]:
    """``--dynamic COMPONENT:PATH`` items (a registry alias names its component) as component -> paths."""
    found: dict[str, list[str]] = {}
    for item in items:
        component, colon, path = item.partition(":")
        if not colon or not component or not path or any(not part for part in path.split(".")):
            raise InvalidInputError(f"--dynamic {item!r}: use COMPONENT:PATH, e.g. alloy:clusterName")
        found.setdefault(aliases.get(component, component), []).append(path)
    return {name: tuple(dict.fromkeys(paths)) for name, paths in found.items()}


def _check_order(order: list[str], dependencies: Mapping[str, list[str]]) -> None:
    """The recipe's deploymentOrder must put every component after its dependencies."""
    position = {name: index for index, name in enumerate(order)}
    for name in order:
        for dep in dependencies[name]:
            if position[dep] > position[name]:
                raise InvalidInputError(
                    f"recipe deploymentOrder puts {name!r} before its dependency {dep!r}; regenerate the recipe")


def _number(unit: Unit, index: int) -> Unit:
    return unit._replace(folder=f"{index:03d}-{unit.name}")


def _units(ref: Mapping[str, Any], component: dict[str, Any], sources: Mapping[str, bytes], *, level: int,
           after: list[str], built: bytes | None, extra_pre: tuple[tuple[str, bytes], ...] = (),
           flags: frozenset[str] = frozenset(), templates: bool = False,
           memo: dict[bytes, bytes | None] | None = None) -> list[Unit]:
    name, namespace = ref["name"], ref.get("namespace") or ref["name"]
    common: dict[str, Any] = {"component": name, "namespace": namespace, "folder": "", "level": level,
                              "flags": flags}
    units: list[Unit] = []
    previous = tuple(after)
    target = (name, namespace, ref.get("chart") or name, ref.get("version") or "", component, templates)
    pre = _manifests(ref, "preManifestFiles", sources, target, extra=extra_pre, memo=memo)
    if pre:
        units.append(Unit(name=f"{name}-pre", role=PRE, kind=LOCAL, depends_on=previous,
                          values={name: component}, manifests=pre, **common))
        previous = (f"{name}-pre",)
    post = _manifests(ref, "manifestFiles", sources, target, memo=memo)
    if ref.get("type") == "Kustomize" and built is not None:
        units.append(Unit(name=name, role=MAIN, kind=LOCAL, depends_on=previous, values={name: component},
                          manifests=(("kustomize-build.yaml", helm_literal(built)),), **common))
    elif ref.get("type") == "Kustomize":
        units.append(Unit(name=name, role=MAIN, kind=KUSTOMIZE, depends_on=previous, repository=ref.get("source", ""),
                          path=ref.get("path", ""), tag=ref.get("tag", ""), **common))
    elif ref.get("source"):
        units.append(Unit(name=name, role=MAIN, kind=UPSTREAM, depends_on=previous, values=component,
                          chart=ref.get("chart") or name, repository=ref["source"], version=ref.get("version", ""),
                          **common))
    else:
        units.append(Unit(name=name, role=MAIN, kind=LOCAL, depends_on=previous, values={name: component},
                          manifests=post, **common))
        return units
    if post:
        units.append(Unit(name=f"{name}-post", role=POST, kind=LOCAL, depends_on=(name,),
                          values={name: component}, manifests=post, **common))
    return units
