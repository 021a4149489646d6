"""Resolve a catalog and criteria into an AICR ``RecipeResult`` (plain data, ready to dump).

The steps follow AICR: match overlays and keep the maximal leaves, guard against a missing OS, merge
``base`` and each leaf's chain root to leaf, compose the collected mixins, check coverage, apply the
profile, fill registry defaults, hydrate health checks, check coherence and dependencies, order the
enabled components, and apply the Slurm accounting mode. Pure: no IO, no clock, no environment.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

from aicr_gen import __version__
from aicr_gen.catalog.load import Catalog
from aicr_gen.catalog.vocabulary import API_VERSION, API_VERSION_PROFILED
from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve import accounting, coverage, criteria, graph, merge, profile, refs
from aicr_gen.resolve.criteria import Query
from aicr_gen.resolve.origins import Origins

BASE = "base"
PHASES = ("readiness", "deployment", "performance", "conformance")
PHASE_KEYS = ("timeout", "constraints", "checks", "nodeSelection", "infrastructure")
MIXIN_REF_FIELDS = {"name", "namespace", "manifestFiles", "preManifestFiles"}


class Options(NamedTuple):
    """Resolution settings that are not criteria."""

    nodes: int = 0
    profile: tuple[str, str] | None = None
    accounting_mode: str | None = None


class _Spec:
    """The merged spec while the chain's overlays and then the mixins are applied."""

    def __init__(self, constraints: list[dict[str, Any]], refs: list[dict[str, Any]], validation: dict[str, Any],
                 mixins: dict[str, str]) -> None:
        self.constraints = constraints
        self.refs = refs
        self.validation = validation
        self.mixins = mixins
        self.origins = Origins()


def _spec(catalog: Catalog, name: str) -> dict[str, Any]:
    spec: dict[str, Any] = catalog.overlays[name]["spec"]
    return spec


def chain(catalog: Catalog, name: str) -> list[str]:
    """The inheritance chain of overlay ``name``, ``base`` first."""
    names: list[str] = []
    current = name
    while current != BASE:
        if current in names:
            raise _chain_error(catalog, names, f"inheritance cycle {' -> '.join([*names, current])}; fix spec.base")
        if current not in catalog.overlays:
            raise _chain_error(catalog, names, f"overlay {current!r} does not exist; fix spec.base")
        names.append(current)
        current = _spec(catalog, current).get("base") or BASE
    return [BASE, *reversed(names)]


def _chain_error(catalog: Catalog, names: list[str], message: str) -> InvalidInputError:
    """An error in the chain ``names`` walked so far: at the spec.base of its last overlay, else the catalog's."""
    if not names:
        return InvalidInputError(f"{catalog.describe()}: {message}")
    return catalog.error(catalog.sources[f"overlays/{names[-1]}"], "base", "spec.base", message)


def leaves(catalog: Catalog, query: Query) -> list[str]:
    """Matching overlays that are no other match's ancestor, least specific first, then by name."""
    matched = [name for name, overlay in catalog.overlays.items()
               if name != BASE and "criteria" in overlay["spec"]
               and criteria.matches(overlay["spec"]["criteria"], query)]
    ancestors = {ancestor for name in matched for ancestor in chain(catalog, name)[:-1]}
    kept = [name for name in matched if name not in ancestors]
    return sorted(kept, key=lambda name: (criteria.specificity(_spec(catalog, name).get("criteria")), name))


def _merge_overlay(spec: _Spec, catalog: Catalog, name: str) -> None:
    overlay = _spec(catalog, name)
    spec.constraints = sorted(merge.merge_constraints(spec.constraints, overlay.get("constraints", [])),
                              key=lambda item: item["name"])
    source = catalog.sources[f"overlays/{name}"]
    for ref in overlay.get("componentRefs", []):
        spec.origins.record(source, ref)
    spec.refs = sorted(merge.merge_refs(spec.refs, overlay.get("componentRefs", [])), key=lambda ref: ref["name"])
    spec.validation = merge.merge_validation(spec.validation, overlay.get("validation", {}))
    for mixin in overlay.get("mixins", []):
        spec.mixins.setdefault(mixin, source)


def _merge_mixins(spec: _Spec, catalog: Catalog) -> None:
    for name, user in spec.mixins.items():
        if name not in catalog.mixins:
            raise catalog.error(user, f"mixin:{name}", "spec.mixins", f"mixin {name!r} not found in mixins/; "
                                f"known mixins: {', '.join(sorted(catalog.mixins)) or 'none'}")
        mixin = catalog.mixins[name]["spec"]
        source = catalog.sources[f"mixins/{name}"]
        existing = {ref["name"] for ref in spec.refs}
        for ref in mixin.get("componentRefs", []):
            extra = [key for key in refs.KEY_ORDER if key not in MIXIN_REF_FIELDS and not merge.is_empty(ref.get(key))]
            if ref["name"] in existing and extra:
                raise catalog.error(
                    source, f"ref:{ref['name']}.{extra[0]}", "spec.componentRefs", f"mixin {name!r} "
                    f"sets {extra[0]!r} on component {ref['name']!r}, which the inheritance chain defines; a mixin may "
                    "only add namespace, manifestFiles or preManifestFiles to an existing component")
            spec.origins.record(source, ref)
        taken = {item["name"] for item in spec.constraints}
        for item in mixin.get("constraints", []):
            if item["name"] in taken:
                raise catalog.error(
                    source, f"constraint:{item['name']}", "spec.constraints", f"mixin {name!r} "
                    f"constraint {item['name']!r} conflicts with the inheritance chain or an earlier mixin; rename "
                    "or drop one")
        spec.constraints = sorted(merge.merge_constraints(spec.constraints, mixin.get("constraints", [])),
                                  key=lambda item: item["name"])
        spec.refs = sorted(merge.merge_refs(spec.refs, mixin.get("componentRefs", [])), key=lambda ref: ref["name"])


def _profile_declaration(catalog: Catalog, applied: list[str]) -> tuple[dict[str, Any], str] | None:
    declaring = [name for name in applied if "profile" in _spec(catalog, name)]
    wheres = [catalog.at(catalog.sources[f"overlays/{name}"], "profile", "spec.profile") for name in declaring]
    if len(declaring) > 1:
        raise InvalidInputError(
            f"the resolved overlays declare more than one profile ({', '.join(wheres)}); keep one per composition")
    if not declaring:
        return None
    return _spec(catalog, declaring[0])["profile"], wheres[0]


def _dependency_graph(catalog: Catalog, finished: list[dict[str, Any]], origins: Origins,
                      ) -> dict[str, list[str]]:
    """Enabled components and their enabled dependencies; unknown dependencies and cycles (disabled
    components included) are errors naming the overlay that declared the edge."""
    declared = {ref["name"] for ref in finished}
    enabled = {ref["name"] for ref in finished if refs.is_enabled(ref)}
    for ref in finished:
        for dep in ref.get("dependencyRefs", []):
            if dep not in declared:
                raise origins.error(
                    catalog, ref["name"], f"dependencyRefs:{dep}", f"component {ref['name']!r} "
                    f"references unknown dependency {dep!r}; add that component or remove the dependency")
    try:
        graph.deployment_order({ref["name"]: ref.get("dependencyRefs", []) for ref in finished})
    except graph.CycleError as err:
        edges = zip(err.cycle, err.cycle[1:], strict=False)
        declared_in = "; ".join(f"{a} -> {b} in {origins.where(catalog, a, f'dependencyRefs:{b}')}" for a, b in edges)
        raise InvalidInputError(f"{err} ({declared_in})") from None
    return {ref["name"]: [dep for dep in ref.get("dependencyRefs", []) if dep in enabled]
            for ref in finished if ref["name"] in enabled}


def _validation_block(validation: dict[str, Any]) -> dict[str, Any]:
    return {phase: {key: validation[phase][key] for key in PHASE_KEYS if validation[phase].get(key)}
            for phase in PHASES if phase in validation}


def query_for(catalog: Catalog, values: Mapping[str, str | None], options: Options | None = None) -> Query:
    """``values`` (dimension -> value or None) as a query in ``catalog``'s vocabulary; an unknown value is
    refused with the values of its dimension that resolve with the other criteria."""
    known = criteria.catalog_values(catalog.overlays.values())
    try:
        return criteria.normalise(values, known)
    except criteria.UnknownValueError as err:
        try:
            others = criteria.normalise({**values, err.dim: None}, known)
        except InvalidInputError:
            raise err from None
        raise InvalidInputError(f"{err}{coverage.hint(catalog, others, [err.dim], _Trial(catalog, options))}") \
            from None


def leaf_overlays(catalog: Catalog) -> list[str]:
    """The leaf overlays (no other overlay's base, with criteria), by name."""
    bases = {overlay["spec"].get("base", BASE) for overlay in catalog.overlays.values()}
    return [name for name in sorted(catalog.overlays)
            if name not in bases and "criteria" in catalog.overlays[name]["spec"]]


class _Trial:
    """``coverage.Trial`` by resolving in ``catalog`` with ``options``."""

    def __init__(self, catalog: Catalog, options: Options | None) -> None:
        self.catalog = catalog
        self.options = options or Options()

    def resolves(self, query: Query) -> bool:
        return resolves(self.catalog, query, self.options)

    def leaves(self) -> list[Query]:
        known = criteria.catalog_values(self.catalog.overlays.values())
        return [criteria.normalise(self.catalog.overlays[name]["spec"]["criteria"], known)
                for name in leaf_overlays(self.catalog)]


def resolves(catalog: Catalog, query: Query, options: Options | None = None) -> bool:
    """Whether ``query`` resolves (quietly: without the hints an error would carry)."""
    try:
        _resolve(catalog, query, options or Options(), None)
    except InvalidInputError:
        return False
    return True


def resolve(catalog: Catalog, query: Query, options: Options | None = None) -> dict[str, Any]:
    """The ``RecipeResult`` for a normalised ``query``, as ordered plain data. Uncovered criteria are refused
    as AICR refuses them, plus the values of each that resolve with the other criteria."""
    return _resolve(catalog, query, options or Options(), _Trial(catalog, options))


def _resolve(catalog: Catalog, query: Query, options: Options, trial: coverage.Trial | None) -> dict[str, Any]:
    if BASE not in catalog.overlays:
        raise InvalidInputError(
            f"{catalog.describe()}: overlays/base.yaml not found; every catalog needs a base overlay")
    mode = accounting.normalise(options.accounting_mode, query["platform"])
    found = leaves(catalog, query)
    coverage.require_os(catalog, query, found, trial)
    applied = [BASE]
    base = _spec(catalog, BASE)
    base_source = catalog.sources[f"overlays/{BASE}"]
    spec = _Spec(constraints=list(base.get("constraints", [])), refs=list(base.get("componentRefs", [])),
                 validation=dict(base.get("validation", {})),
                 mixins=dict.fromkeys(base.get("mixins", []), base_source))
    for ref in spec.refs:
        spec.origins.record(base_source, ref)
    for leaf in found:
        for name in chain(catalog, leaf)[1:]:
            if name not in applied:
                _merge_overlay(spec, catalog, name)
                applied.append(name)
    _merge_mixins(spec, catalog)
    coverage.check(catalog, query, applied, options.nodes, trial)
    metadata: dict[str, Any] = {"version": __version__, "appliedOverlays": applied}
    api_version = API_VERSION
    declaration = _profile_declaration(catalog, applied)
    if declaration is not None:
        spec.refs, spec.constraints, metadata["selectedProfile"] = profile.apply(
            declaration[0], declaration[1], options.profile, spec.refs, spec.constraints)
        api_version = API_VERSION_PROFILED
    elif options.profile is not None:
        raise InvalidInputError(f"--profile {options.profile[0]}: the resolved recipe declares no profile")
    finished = refs.finish(catalog, spec.refs, spec.origins)
    configuration = None
    if mode is not None:
        finished = [refs.ordered(ref) for ref in accounting.apply(mode, finished)]
        configuration = {"slurm": {"accounting": {"mode": mode}}}
        api_version = API_VERSION_PROFILED
    result: dict[str, Any] = {"kind": "RecipeResult", "apiVersion": api_version, "metadata": metadata,
                              "criteria": {**query, **({"nodes": options.nodes} if options.nodes else {})}}
    if configuration:
        result["configuration"] = configuration
    if spec.constraints:
        result["constraints"] = spec.constraints
    result["componentRefs"] = finished
    result["deploymentOrder"] = graph.deployment_order(_dependency_graph(catalog, finished, spec.origins))
    if spec.validation:
        result["validation"] = _validation_block(spec.validation)
    return result
