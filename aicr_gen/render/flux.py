"""The ``flux`` deployer: Flux sources, one HelmRelease (or Flux Kustomization) per unit, and a root
``kustomization.yaml`` that lists them all, so one Flux Kustomization pointed at the bundle folder
installs the stack.

- Sources live in ``sources/``, one object per distinct URL (and ref): a ``HelmRepository`` for each
  https chart repository; an ``OCIRepository`` per ``oci://`` chart (the source-controller docs point OCI
  Helm charts to ``OCIRepository`` + ``HelmRelease.spec.chartRef`` rather than ``HelmRepository``
  ``type: oci``); a ``GitRepository`` for the bundle repository itself (local charts are built from it)
  and one per Kustomize source.
- Chart versions are written as the recipe pins them: source-controller first looks for a chart whose
  version string is exactly the requested one, then falls back to a semver match, so ``v26.3.3`` selects
  the ``v26.3.3`` entry itself. OCI tags are the version with ``+`` replaced by ``_``, as ``helm push``
  writes them.
- Local units (manifests wrapped in a chart) keep their chart in ``NNN-<unit>/chart/``, next to (not around)
  their ``helmrelease.yaml``, which builds it from the bundle's GitRepository with ``reconcileStrategy:
  Revision``: the wrapper chart's version never changes, so every bundle commit must rebuild it.
- ``dependsOn`` mirrors the plan: a component's first unit waits for the last unit of each dependency,
  and ``<c>-pre`` -> ``<c>`` -> ``<c>-post``. A HelmRelease can only wait for HelmReleases and a Flux
  Kustomization only for Kustomizations, so a HelmRelease on either side of an edge to a Kustomize unit
  is applied through a Flux Kustomization of the same name (``wait: true``) that carries the edge.
- Published to an OCI registry (``repo`` is ``oci://...``, ``bundle --output oci://``), the bundle is read from
  the ``OCIRepository`` the cluster defines (``flux_oci_source``, AICR's default ``aicr-bundle``), which the bundle
  does not carry: a local chart then reaches its HelmRelease through an ``ArtifactGenerator`` (Flux 2.7's
  source-watcher) that copies the chart folder out of that artifact into an ``ExternalArtifact``
  (``<unit>-chart``), the HelmRelease's ``chartRef``, as AICR's OCI bundles do; Flux Kustomizations read their
  folders from the OCIRepository itself.
- ``deployer:extraPaths`` folders of the bundle repository get a Flux Kustomization each, in
  ``extra-<name>/``, that waits for the units nothing else waits for, so it applies after the whole stack.
  A folder given with its namespace (``DIR=NAMESPACE``) that no component creates gets that Namespace in
  ``extra-<name>/namespace.yaml``, applied with the bundle (Flux Kustomizations create no namespace).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence

from aicr_gen.bundle import Bundle
from aicr_gen.errors import InvalidInputError
from aicr_gen.render import charts, readme
from aicr_gen.render.names import DNS_LABEL, hashed, url_name
from aicr_gen.render.options import Options, extra_names
from aicr_gen.render.plan import KUSTOMIZE, LOCAL, Plan, Unit
from aicr_gen.yaml import dump

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

HELM_API = "helm.toolkit.fluxcd.io/v2"
SOURCE_API = "source.toolkit.fluxcd.io/v1"
KUSTOMIZE_API = "kustomize.toolkit.fluxcd.io/v1"
KUSTOMIZE_CONFIG_API = "kustomize.config.k8s.io/v1beta1"
HELM_REPOSITORY, OCI_REPOSITORY, GIT_REPOSITORY = "HelmRepository", "OCIRepository", "GitRepository"
EXTERNAL_ARTIFACT = "ExternalArtifact"
GENERATOR_API = "source.extensions.fluxcd.io/v1beta1"
HELM_RELEASE, FLUX_KUSTOMIZATION = "HelmRelease", "Kustomization"
INTERVAL = "10m"
TIMEOUT = "10m"
HELM_CHART_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
_OCI = "oci://"
_PREFIX = {HELM_REPOSITORY: "helmrepo", OCI_REPOSITORY: "ocirepo", GIT_REPOSITORY: "gitrepo"}
_COMMIT = re.compile(r"^[0-9a-f]{40}\Z")
_SCP_URL = re.compile(r"^(?P<user>[^@/:]+)@(?P<host>[^:/]+):(?P<path>.+)\Z")
_GIT_SCHEMES = ("https://", "http://", "ssh://")


class Source(NamedTuple):
    """One Flux source object; ``ref`` is the GitRepository/OCIRepository reference."""

    kind: str
    url: str
    ref: tuple[tuple[str, str], ...] = ()
    helm_chart: bool = False


class Named(NamedTuple):
    """A source with its object name and bundle file."""

    source: Source
    name: str

    @property
    def file(self) -> str:
        return f"sources/{_PREFIX[self.source.kind]}-{self.name}.yaml"


def git_url(url: str, what: str) -> str:
    """A URL Flux clones: http(s) or ssh; scp-style ``git@host:org/repo`` becomes ``ssh://git@host/org/repo``."""
    scp = _SCP_URL.match(url)
    if scp and "://" not in url:
        return f"ssh://{scp['user']}@{scp['host']}/{scp['path']}"
    if not url.startswith(_GIT_SCHEMES):
        raise InvalidInputError(f"{what} {url!r}: Flux clones Git over https://, http:// or ssh://; use one of those")
    return url


def git_ref(revision: str, default: str) -> tuple[tuple[str, str], ...]:
    """GitRepository ``ref``: a full SHA is a commit, ``refs/...`` a reference name, anything else ``default``."""
    if _COMMIT.match(revision):
        return (("commit", revision),)
    if revision.startswith("refs/"):
        return (("name", revision),)
    return ((default, revision),)


def source_path(parts: Sequence[str], what: str) -> str:
    """``./a/b``: ``parts`` joined into a path inside a source, which Flux never lets a path leave."""
    pieces = [piece for piece in (part.strip("/").removeprefix("./") for part in parts) if piece and piece != "."]
    if any(segment in ("", ".", "..") or "\\" in segment for piece in pieces for segment in piece.split("/")):
        raise InvalidInputError(f"{what} must be a plain folder path inside the repository (no '..', '.', '//' or "
                                "'\\')")
    return "./" + "/".join(pieces)


def repo_path(options: Options, *parts: str) -> str:
    """``./<bundle path>/<parts>``, the path Flux reads inside the bundle repository."""
    return source_path([options.path, *parts], f"--set deployer:path={options.path}")


def published(options: Options) -> bool:
    """Whether the bundle is an OCI artifact (read from the cluster's own OCIRepository) rather than a Git folder."""
    return options.repo.startswith(_OCI)


def bundle_source(options: Options) -> Source:
    """The GitRepository of the repository this bundle is committed to, or the OCIRepository it is published
    to."""
    if published(options):
        return Source(OCI_REPOSITORY, options.repo, (("tag", options.revision),))
    return Source(GIT_REPOSITORY, git_url(options.repo, "--repo"), git_ref(options.revision, "branch"))


def chart_artifact_name(unit: Unit) -> str:
    """The ExternalArtifact a published bundle's local chart is copied into (AICR's ``<unit>-chart``)."""
    return f"{unit.name}-chart"


def artifact_generator(unit: Unit, options: Options) -> bytes:
    """The ArtifactGenerator that copies a local chart's folder out of the published bundle."""
    spec = {"sources": [{"alias": "bundle", "kind": OCI_REPOSITORY, "name": options.flux_oci_source}],
            "artifacts": [{"name": chart_artifact_name(unit), "copy": [
                {"from": f"@bundle/{repo_path(options, unit.folder, 'chart').removeprefix('./')}/**",
                 "to": f"@artifact/{unit.name}/"}]}]}
    return _document(GENERATOR_API, "ArtifactGenerator", chart_artifact_name(unit), options.flux_namespace, spec)


def unit_source(unit: Unit, options: Options) -> Source:
    """Where a unit's chart or Kustomize tree comes from."""
    if unit.kind == LOCAL:
        return bundle_source(options)
    if unit.kind == KUSTOMIZE:
        if not unit.repository or not unit.tag:
            missing = "source" if not unit.repository else "tag"
            raise InvalidInputError(
                f"component {unit.component!r} is a Kustomize component without a {missing}; Flux builds it from a "
                "pinned Git or OCI source, so set kustomize.defaultSource and defaultTag in the registry (or source "
                "and tag in the overlay)")
        if unit.repository.startswith(_OCI):
            return Source(OCI_REPOSITORY, unit.repository, (("tag", unit.tag),))
        return Source(GIT_REPOSITORY, git_url(unit.repository, f"component {unit.component!r}: source"),
                      git_ref(unit.tag, "tag"))
    if unit.repository.startswith(_OCI):
        tag = (("tag", unit.version.replace("+", "_")),) if unit.version else ()
        return Source(OCI_REPOSITORY, f"{unit.repository.rstrip('/')}/{unit.chart}", tag, helm_chart=True)
    return Source(HELM_REPOSITORY, unit.repository)


def name_sources(sources: Sequence[Source]) -> dict[Source, Named]:
    """Each distinct source with a name unique among its kind; a second source whose URL names alike gets a
    short hash of its URL and ref appended."""
    named: dict[Source, Named] = {}
    taken: set[tuple[str, str]] = set()
    for source in dict.fromkeys(sources):
        name = url_name(source.url, fallback="source", source_only=True, limit=DNS_LABEL)
        if (source.kind, name) in taken:
            name = hashed(name, repr((source.url, source.ref)), DNS_LABEL)
        taken.add((source.kind, name))
        named[source] = Named(source, name)
    return named


def _document(api: str, kind: str, name: str, namespace: str, spec: Mapping[str, Any]) -> bytes:
    body = {"apiVersion": api, "kind": kind, "metadata": {"name": name, "namespace": namespace}, "spec": dict(spec)}
    return (charts.GENERATED + dump(body)).encode()


def source_document(named: Named, options: Options, interval: str) -> bytes:
    """The source object's YAML."""
    source = named.source
    spec: dict[str, Any] = {"interval": interval, "url": source.url}
    if source.ref:
        spec["ref"] = dict(source.ref)
    if source.helm_chart:
        spec["layerSelector"] = {"mediaType": HELM_CHART_LAYER, "operation": "copy"}
    return _document(SOURCE_API, source.kind, named.name, options.flux_namespace, spec)


def _reference(named: Named, options: Options) -> dict[str, str]:
    return {"kind": named.source.kind, "name": named.name, "namespace": options.flux_namespace}


def helm_release(unit: Unit, named: Named, depends_on: Sequence[str], options: Options) -> bytes:
    """The unit's HelmRelease, as AICR writes it: Flux's own release name (``<namespace>-<unit>``), Helm storage
    in the Flux namespace, Flux's default timeout and remediation, so a cluster AICR's flux bundle deployed keeps
    its releases when this bundle replaces it."""
    spec: dict[str, Any] = {"interval": INTERVAL, "targetNamespace": unit.namespace}
    if unit.kind == LOCAL and published(options):
        spec["chartRef"] = {"kind": EXTERNAL_ARTIFACT, "name": chart_artifact_name(unit),
                            "namespace": options.flux_namespace}
    elif named.source.kind == OCI_REPOSITORY:
        spec["chartRef"] = _reference(named, options)
    else:
        chart: dict[str, Any]
        if unit.kind == LOCAL:
            chart = {"chart": repo_path(options, unit.folder, "chart"), "reconcileStrategy": "Revision"}
        else:
            # a semver range to Flux: AICR drops the leading 'v' (v26.3.3 and 26.3.3 select the same chart)
            version = unit.version.removeprefix("v")
            chart = {"chart": unit.chart, **({"version": version} if version else {})}
        chart["sourceRef"] = _reference(named, options)
        spec["chart"] = {"spec": chart}
    spec["install"] = {"createNamespace": True}
    if depends_on:
        spec["dependsOn"] = [{"name": name} for name in depends_on]
    if unit.dynamic:  # merged under spec.values, which no longer holds these paths
        spec["valuesFrom"] = [{"kind": "ConfigMap", "name": values_configmap_name(unit)}]
    if unit.kind != LOCAL and unit.values:
        spec["values"] = dict(unit.values)  # local charts carry theirs in chart/values.yaml
    return _document(HELM_API, HELM_RELEASE, unit.name, options.flux_namespace, spec)


def values_configmap_name(unit: Unit) -> str:
    """The ConfigMap holding a unit's install-time values (AICR's name: ``<unit>-values``)."""
    return f"{unit.name}-values"


def values_configmap(unit: Unit, options: Options) -> bytes:
    """The unit's install-time values (``--dynamic``) as a ConfigMap beside its HelmRelease, for the cluster's
    operators to fill in before Flux applies it."""
    body = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": values_configmap_name(unit), "namespace": options.flux_namespace},
            "data": {"values.yaml": dump(dict(unit.dynamic))}}
    return (charts.GENERATED + dump(body)).encode()


def flux_kustomization(name: str, named: Named, path: str, depends_on: Sequence[str], options: Options, *,
                       target_namespace: str = "") -> bytes:
    """A Flux Kustomization that applies ``path`` of the source, prunes what it applied, and is Ready only
    once everything it applied is healthy (so that units waiting for it wait for the workload)."""
    spec: dict[str, Any] = {"interval": INTERVAL, "retryInterval": "2m", "timeout": TIMEOUT,
                            "sourceRef": _reference(named, options), "path": path, "prune": True, "wait": True}
    if target_namespace:
        spec["targetNamespace"] = target_namespace
    if depends_on:
        spec["dependsOn"] = [{"name": dep} for dep in depends_on]
    return _document(KUSTOMIZE_API, FLUX_KUSTOMIZATION, name, options.flux_namespace, spec)


def kustomization(resources: Sequence[str]) -> bytes:
    """A plain ``kustomization.yaml`` listing ``resources`` in sorted order."""
    body = {"apiVersion": KUSTOMIZE_CONFIG_API, "kind": "Kustomization", "resources": sorted(resources)}
    return (charts.GENERATED + dump(body)).encode()


def namespace_document(namespace: str) -> bytes:
    """The target namespace of a Kustomize unit (Flux Kustomizations do not create one). Pruning it would
    delete whatever else lives there, so Flux is told to leave it when the bundle is removed."""
    body = {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": namespace, "annotations": {"kustomize.toolkit.fluxcd.io/prune": "disabled"}}}
    return (charts.GENERATED + dump(body)).encode()


def wrapped_releases(plan: Plan) -> set[str]:
    """HelmRelease units on either end of a dependency edge with a Kustomize unit."""
    kinds = {unit.name: unit.kind for unit in plan.units}
    wrapped: set[str] = set()
    for unit in plan.units:
        for dep in unit.depends_on:
            if (kinds[dep] == KUSTOMIZE) != (unit.kind == KUSTOMIZE):
                wrapped.add(dep if unit.kind == KUSTOMIZE else unit.name)
    return wrapped


def last_units(plan: Plan) -> list[str]:
    """Units no other unit waits for, in install order: once they are Ready, every unit has been."""
    waited = {dep for unit in plan.units for dep in unit.depends_on}
    return [unit.name for unit in plan.units if unit.name not in waited]


def _install(plan: Plan, options: Options, repo: Named, extra: Mapping[str, str]) -> list[str]:
    q = shlex.quote
    flag = {"branch": "--branch", "tag": "--tag", "commit": "--commit", "name": "--ref-name"}
    ref = " ".join(f"{flag[key]}={q(value)}" for key, value in repo.source.ref)
    ns = q(options.flux_namespace)
    if published(options):
        first = [f"1. `aicr-gen bundle --output {options.repo}:{options.revision}` published this bundle.",
                 "2. Point Flux at it (once per cluster; Flux 2.7 or later with the source-watcher controller, "
                 "which builds the local charts' ExternalArtifacts, and `--secret-ref` on the source for a private "
                 "registry):", "", "```bash",
                 f"flux create source oci {q(repo.name)} --url={q(options.repo)} --tag={q(options.revision)} "
                 f"--interval=1m --namespace={ns}"]
    else:
        where = f"folder `{repo_path(options)}`" if repo_path(options) != "./" else "the repository root"
        first = [f"1. Commit this folder to {options.repo} as {where}, on `{options.revision}`.",
                 "2. Point Flux at it (once per cluster; add `--secret-ref` to the source for a private repository):",
                 "", "```bash",
                 f"flux create source git {q(repo.name)} --url={q(repo.source.url)} {ref} --interval=1m "
                 f"--namespace={ns}"]
    return [
        *first,
        f"flux create kustomization {q(options.app_name)} --source={repo.source.kind}/{q(repo.name)} "
        f"--path={q(repo_path(options))} --prune=true --interval={INTERVAL} --namespace={ns}",
        f"flux get helmreleases --namespace={ns} --watch",
        "```", "",
        f"Flux installs the {len(plan.units)} units in dependency order (`dependsOn`)"
        + ("." if published(options) else "; the bundle manages the GitRepository created above from then on."),
        *(["", "Once the stack is Ready, Flux also applies these folders of the repository:", "",
           *(f"- `{folder}` (Kustomization `{name}`)" for folder, name in extra.items())] if extra else []),
    ]


def _uninstall(plan: Plan, options: Options, kustomizations: set[str], extra: Sequence[str]) -> list[str]:
    q = shlex.quote
    ns = q(options.flux_namespace)
    lines = ["Suspend the stack, remove the units in reverse install order (each deletion waits until Flux has "
             "uninstalled the unit), then the stack itself:", "", "```bash",
             f"flux suspend kustomization {q(options.app_name)} --namespace={ns}"]
    resource = "kustomizations.kustomize.toolkit.fluxcd.io"
    lines += [f"flux delete kustomization {q(name)} --namespace={ns} --silent && "
              f"kubectl wait --for=delete {resource}/{q(name)} --namespace={ns} --timeout={TIMEOUT}"
              for name in reversed(extra)]
    for unit in readme.reverse(plan.units):
        kind, resource = (("kustomization", "kustomizations.kustomize.toolkit.fluxcd.io")
                          if unit.name in kustomizations else ("helmrelease", "helmreleases.helm.toolkit.fluxcd.io"))
        lines.append(f"flux delete {kind} {q(unit.name)} --namespace={ns} --silent && "
                     f"kubectl wait --for=delete {resource}/{q(unit.name)} --namespace={ns} --timeout={TIMEOUT}")
    lines += [f"flux delete kustomization {q(options.app_name)} --namespace={ns} --silent", "```"]
    if any(unit.kind == KUSTOMIZE for unit in plan.units):
        lines += ["", "Namespaces created for Kustomize components are kept "
                      "(`kustomize.toolkit.fluxcd.io/prune: disabled`); delete them by hand if nothing else uses them."]
    return lines


ENTRYPOINT = "kustomization.yaml"
"""What ``bundle-info.yaml`` names as the file Flux applies."""


def release_files(unit: Unit) -> tuple[str, str]:
    """``bundle-info.yaml``'s path and manifest of ``unit``: its folder and its HelmRelease (a Flux
    Kustomization for a Kustomize unit)."""
    name = "flux-kustomization.yaml" if unit.kind == KUSTOMIZE else "helmrelease.yaml"
    return unit.folder, f"{unit.folder}/{name}"


def _named_sources(repo: Source, sources: list[Source], options: Options) -> dict[Source, Named]:
    """Every source named; a published bundle's is the cluster's own OCIRepository (``flux_oci_source``)."""
    named = name_sources([repo, *sources])
    if published(options):  # the cluster defines it: never in the bundle, which it would then own
        named[repo] = Named(repo, options.flux_oci_source)
        if any(item.name == options.flux_oci_source and item.source.kind == OCI_REPOSITORY
               for source, item in named.items() if source != repo):
            raise InvalidInputError(f"--flux-oci-source-name {options.flux_oci_source}: a chart's OCIRepository has "
                                    "that name already; choose another name")
    return named


def _source_files(named: Mapping[Source, Named], repo: Source, options: Options) -> dict[str, bytes]:
    """The source objects the bundle carries (not a published bundle's own). The bundle repository is polled
    often so commits roll out; every other source is pinned."""
    ours = [item for item in named.values() if not (published(options) and item.source == repo)]
    return {item.file: source_document(item, options, "1m" if item.source == repo else "1h") for item in ours}


def _generator(unit: Unit, options: Options, files: dict[str, bytes]) -> list[str]:
    """A published bundle's local chart: its ArtifactGenerator added to ``files``; the resources to list."""
    if not published(options):
        return []
    files[f"{unit.folder}/artifactgenerator.yaml"] = artifact_generator(unit, options)
    return [f"{unit.folder}/artifactgenerator.yaml"]


def render(plan: Plan, options: Options) -> Bundle:
    """The flux bundle (without the shared recipe.yaml and checksums)."""
    repo = bundle_source(options)
    by_unit = {unit.name: unit_source(unit, options) for unit in plan.units}
    named = _named_sources(repo, list(by_unit.values()), options)
    kinds = {unit.name: unit.kind for unit in plan.units}
    wrapped = wrapped_releases(plan)
    extra = extra_names(options.extra_paths, [options.app_name, *kinds], "", DNS_LABEL, options.path)
    last = last_units(plan) if extra else []
    # A Flux Kustomization can only wait for Kustomizations (healthChecks are checked after it applies, so
    # they cannot hold it back), so the last HelmReleases are wrapped like those next to a Kustomize unit.
    wrapped |= {name for name in last if kinds[name] != KUSTOMIZE}
    files = _source_files(named, repo, options)
    resources = list(files)
    namespaces: set[str] = {options.flux_namespace}
    for unit in plan.units:
        folder = unit.folder
        source = named[by_unit[unit.name]]
        if unit.kind == KUSTOMIZE:
            path = source_path([unit.path], f"component {unit.component!r}: path {unit.path!r}")
            files[f"{folder}/flux-kustomization.yaml"] = flux_kustomization(
                unit.name, source, path, unit.depends_on, options, target_namespace=unit.namespace)
            resources.append(f"{folder}/flux-kustomization.yaml")
            if unit.namespace not in namespaces:
                namespaces.add(unit.namespace)
                files[f"{folder}/namespace.yaml"] = namespace_document(unit.namespace)
                resources.append(f"{folder}/namespace.yaml")
            continue
        releases = [dep for dep in unit.depends_on if kinds[dep] != KUSTOMIZE]
        files[f"{folder}/helmrelease.yaml"] = helm_release(unit, source, releases, options)
        if unit.dynamic:
            files[f"{folder}/values-configmap.yaml"] = values_configmap(unit, options)
            resources.append(f"{folder}/values-configmap.yaml")
        if unit.kind == LOCAL:
            files.update(charts.local_chart(unit).under(f"{folder}/chart"))
            resources += _generator(unit, options, files)
        if unit.name in wrapped:
            after = [dep for dep in unit.depends_on if kinds[dep] == KUSTOMIZE]
            files[f"{folder}/kustomization.yaml"] = kustomization(["helmrelease.yaml"])
            files[f"{folder}/flux-kustomization.yaml"] = flux_kustomization(
                unit.name, named[repo], repo_path(options, folder), after, options)
            resources.append(f"{folder}/flux-kustomization.yaml")
        else:
            resources.append(f"{folder}/helmrelease.yaml")
    namespaces |= {unit.namespace for unit in plan.units}  # HelmReleases create theirs (install.createNamespace)
    for path, name in extra.items():
        files[f"extra-{name}/flux-kustomization.yaml"] = flux_kustomization(
            name, named[repo], source_path([path], f"--set deployer:extraPaths: {path!r}"), last, options)
        resources.append(f"extra-{name}/flux-kustomization.yaml")
        namespace = options.extra_namespace(path)
        if namespace and namespace not in namespaces:  # applied with the bundle, so before the folder is
            namespaces.add(namespace)
            files[f"extra-{name}/namespace.yaml"] = namespace_document(namespace)
            resources.append(f"extra-{name}/namespace.yaml")
    files["kustomization.yaml"] = kustomization(resources)
    kustomizations = wrapped | {name for name, kind in kinds.items() if kind == KUSTOMIZE}
    files["README.md"] = readme.render(plan, "flux", _install(plan, options, named[repo], extra),
                                       _uninstall(plan, options, kustomizations, list(extra.values())))
    return Bundle(files)
