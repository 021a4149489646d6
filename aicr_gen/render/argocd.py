"""The ``argocd`` deployer: one Argo CD Application per unit plus an app-of-apps that syncs them all.

Argo CD has no dependencies between Applications, only sync waves inside the app-of-apps, so install
order is encoded as ``wave = level * 4 + {pre 0, main 1, post 2}`` (AICR's bands; 3 is left for
readiness checks). A unit only waits for units of components at a lower level or for earlier units of
its own component, so every dependency syncs in an earlier wave.

Upstream charts are multi-source Applications: the chart from its repository, and ``values.yaml`` read
from this bundle's Git repository through a ``ref: values`` source. Local charts and Kustomize sources are
single-source Applications. A bundle published to an OCI registry (``bundle --output oci://``) is read from
there (``repoURL: oci://...``, Argo CD 3.1's OCI source, the tag as ``targetRevision``) and its upstream charts
carry their values inline (``helm.valuesObject``): Argo CD reads a ``ref: values`` source from Git only (AICR
does the same).

``deployer:extraPaths`` folders of the repository (certification and snapshot-agent CronJobs next to the
bundle, say) get one directory Application each in ``extra-<name>/``, in the band after the last
component's, so they sync once the whole stack has; ``DIR=NAMESPACE`` makes NAMESPACE its destination,
created by ``CreateNamespace=true``.

One Argo CD for many clusters (``deployer:shared``, set from a ClusterSpec's ``spec.argocd``): every Argo CD
object of the cluster is named ``<cluster>-...`` (the root ``<cluster>-aicr-stack``), so clusters sharing
the Argo CD namespace never replace each other's Applications. Their Helm releases keep the unit names
(``helm.releaseName``), so the objects in the cluster are the same whether its Argo CD is shared or not. A
name over 63 characters (the label value an Argo CD tracking by label writes the Application name into) is
cut and ends in 8 hex digits of the SHA-256 of the whole name: deterministic, and unique as long as the
names it was made from are.
"""

from __future__ import annotations

import posixpath
import re
import shlex
from collections.abc import Mapping, Sequence

from aicr_gen.bundle import Bundle, check_path
from aicr_gen.errors import InvalidInputError
from aicr_gen.render import charts, readme
from aicr_gen.render.names import DNS_LABEL, hashed
from aicr_gen.render.options import IN_CLUSTER, Options, extra_names
from aicr_gen.render.plan import KUSTOMIZE, LOCAL, MAIN, POST, PRE, READINESS, Plan, Unit
from aicr_gen.yaml import dump

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

API_VERSION = "argoproj.io/v1alpha1"
SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = ("CreateNamespace=true", "ServerSideApply=true")
# Argo CD names the Helm release after the Application; Helm caps release names at 53 characters.
MAX_NAME = 53
SHARED_MAX_NAME = DNS_LABEL
"""The longest Application name of a shared Argo CD, whose Helm releases are named apart (``helm.releaseName``)."""
ROOT_NAME = "aicr-stack"
APPLICATIONS = "*/application.yaml"
_WAVE_OFFSET = {PRE: 0, MAIN: 1, POST: 2, READINESS: 3}
APPLICATION_HEALTH = """hs = {status = "Progressing", message = "waiting for the Application to sync"}
if obj.status ~= nil and obj.status.health ~= nil and obj.status.health.status ~= nil then
  local synced = obj.status.sync ~= nil and obj.status.sync.status == "Synced"
  if obj.status.health.status ~= "Healthy" or synced then
    hs.status = obj.status.health.status
    hs.message = obj.status.health.message or ""
  end
end
return hs"""
"""Lua health check of an Application for argocd-cm: its own health once it is synced, Progressing before."""
_BAND = 4
_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_PREFIX = re.compile(r"^([a-z0-9][-a-z0-9]*)?\Z")
_SEMVER_V = re.compile(r"^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)([-+][0-9A-Za-z.+-]*)?\Z")


def sync_wave(unit: Unit) -> int:
    """The unit's sync wave: its component's dependency level in bands of four, then its role."""
    return unit.level * _BAND + _WAVE_OFFSET[unit.role]


def check_prefix(prefix: str) -> str:
    """A ``namePrefix`` that keeps Application names DNS labels."""
    if not _PREFIX.fullmatch(prefix):
        raise InvalidInputError(
            f"--set deployer:namePrefix={prefix}: use lower-case letters, digits and '-', starting with a letter "
            "or digit")
    return prefix


def shared_name(name: str) -> str:
    """A name of a shared Argo CD's object: as it is when it fits ``SHARED_MAX_NAME``, else cut and hashed."""
    return name if len(name) <= SHARED_MAX_NAME else hashed(name, name, SHARED_MAX_NAME)


def shared_names(cluster: str, root: str = ROOT_NAME) -> tuple[str, str]:
    """``(namePrefix, appName)`` of a cluster whose Argo CD holds other clusters' Applications too."""
    return f"{cluster}-", shared_name(f"{cluster}-{root}")


def application_name(options: Options, unit: Unit) -> str:
    """``namePrefix`` + unit name, refused when Helm could not use it as a release name (a shared Argo CD's
    is shortened instead: ``shared_name``)."""
    name = check_prefix(options.name_prefix) + unit.name
    if options.shared:
        name = shared_name(name)
    elif len(name) > MAX_NAME or not _NAME.fullmatch(name):
        raise InvalidInputError(
            f"Application name {name!r} ({len(name)} characters) is longer than {MAX_NAME}, the limit Argo CD "
            "inherits from Helm release names; shorten --set deployer:namePrefix")
    if name == options.app_name:
        raise InvalidInputError(
            f"Application name {name!r} is also the app-of-apps name; change --set deployer:namePrefix or appName")
    return name


def repo_path(options: Options, *parts: str) -> str:
    """A path inside the bundle's Git repository (``options.path`` is the bundle's folder there)."""
    base = check_path(options.path.strip("/")) if options.path.strip("/") else ""
    joined = posixpath.join(base, *parts) if parts else base
    return joined or "."


def is_oci(unit: Unit) -> bool:
    """Whether the chart comes from an OCI registry."""
    return unit.repository.startswith("oci://")


def target_revision(unit: Unit) -> str:
    """The chart version as Argo CD should ask for it.

    Classic Helm repositories are looked up through ``index.yaml`` with semver matching, and their
    versions are conventionally written without the ``v`` (AICR strips it too); ``v1.2.3`` and ``1.2.3``
    select the same entry, so the plain form is used. An OCI registry is asked for the exact tag first
    (Argo CD's native OCI client only falls back to listing tags for constraints), and tags like
    ``v1.3.1`` exist only as written, so OCI versions are kept verbatim.
    """
    if not unit.version:
        raise InvalidInputError(
            f"component {unit.component!r} has no chart version; Argo CD needs a pinned targetRevision, so set "
            "version in the recipe")
    if is_oci(unit) or not _SEMVER_V.match(unit.version):
        return unit.version
    return unit.version[1:]


def destination(options: Options, namespace: str | None) -> dict[str, str]:
    """Where a child deploys: the cluster by ``server`` URL or by registered ``name``, and the namespace."""
    cluster = {"name": options.destination_name} if options.destination_name else {"server": options.destination_server}
    return {**cluster, **({"namespace": namespace} if namespace else {})}


def chart_source(unit: Unit) -> dict[str, Any]:
    """The Argo CD source of an upstream chart, without values.

    OCI charts use Argo CD's native OCI source (v3.1+): ``repoURL: oci://registry/path/chart`` with
    ``path: .``. The older Helm-type form (``repoURL`` without the scheme plus ``chart``) only works when
    a Helm repository Secret with ``enableOCI: true`` exists, which a bundle cannot ship.
    """
    if is_oci(unit):
        return {"repoURL": f"{unit.repository.rstrip('/')}/{unit.chart}", "targetRevision": target_revision(unit),
                "path": "."}
    return {"repoURL": unit.repository, "chart": unit.chart, "targetRevision": target_revision(unit)}


def kustomize_source(unit: Unit) -> dict[str, Any]:
    """A Kustomize component, read straight from its Git repository."""
    if not unit.repository or not unit.path:
        raise InvalidInputError(f"Kustomize component {unit.component!r} needs both source and path in the recipe")
    return {"repoURL": unit.repository, "targetRevision": unit.tag or "HEAD", "path": unit.path}


def sync_policy() -> dict[str, Any]:
    """Automated sync; ServerSideApply because large CRDs exceed the client-side apply annotation limit."""
    return {"automated": {"prune": True, "selfHeal": True}, "syncOptions": list(SYNC_OPTIONS)}


def application(name: str, options: Options, unit: Unit, sources: list[dict[str, Any]]) -> dict[str, Any]:
    """A child Application of one unit."""
    spec: dict[str, Any] = {"project": options.project}
    if len(sources) == 1:
        spec["source"] = sources[0]
    else:
        spec["sources"] = sources
    spec["destination"] = destination(options, unit.namespace)
    spec["syncPolicy"] = sync_policy()
    return {"apiVersion": API_VERSION, "kind": "Application",
            "metadata": {"name": name, "namespace": options.argocd_namespace,
                         "annotations": {SYNC_WAVE: str(sync_wave(unit))}},
            "spec": spec}


def unit_sources(options: Options, unit: Unit) -> list[dict[str, Any]]:
    """Where Argo CD finds the unit: chart plus values ref, a bundle folder, or a Kustomize source."""
    if unit.kind == KUSTOMIZE:
        return [kustomize_source(unit)]
    release = {"releaseName": unit.name} if options.shared else {}
    if unit.kind == LOCAL:
        local = {"repoURL": options.repo, "targetRevision": options.revision, "path": repo_path(options, unit.folder)}
        return [{**local, "helm": release} if release else local]
    chart = chart_source(unit)
    if options.inline_values:  # Argo CD reads a $values source from Git only (AICR inlines them for OCI bundles)
        chart["helm"] = {**release, "valuesObject": dict(unit.values)}
        return [chart]
    chart["helm"] = {**release, "valueFiles": [f"$values/{repo_path(options, unit.folder, 'values.yaml')}"]}
    return [chart, {"repoURL": options.repo, "targetRevision": options.revision, "ref": "values"}]


def extra_waves_start(plan: Plan) -> int:
    """The first sync wave after every unit's: the band above the highest dependency level."""
    return (max((unit.level for unit in plan.units), default=-1) + 1) * _BAND


def extra_applications(plan: Plan, options: Options) -> dict[str, dict[str, Any]]:
    """Application name -> the directory Application of each ``extraPaths`` folder (Argo CD detects a
    ``kustomization.yaml`` there itself). A folder given with its namespace has it as the destination, which
    ``CreateNamespace=true`` creates before the sync (Argo CD creates only a destination namespace)."""
    taken = [options.app_name, *(application_name(options, unit) for unit in plan.units)]
    names = extra_names(options.extra_paths, taken, check_prefix(options.name_prefix),
                        SHARED_MAX_NAME if options.shared else MAX_NAME, options.path)
    wave = str(extra_waves_start(plan))
    return {name: {"apiVersion": API_VERSION, "kind": "Application",
                   "metadata": {"name": name, "namespace": options.argocd_namespace,
                                "annotations": {SYNC_WAVE: wave}},
                   "spec": {"project": options.project, "source": _extra_source(options, folder),
                            "destination": _extra_destination(options, folder),
                            "syncPolicy": sync_policy()}}
            for folder, name in names.items()}


def _extra_source(options: Options, folder: str) -> dict[str, Any]:
    source: dict[str, Any] = {"repoURL": options.repo, "targetRevision": options.revision, "path": folder}
    annotations = options.extra_annotations_of(folder)
    if annotations:
        source["kustomize"] = {"commonAnnotations": annotations}
    return source


def _extra_destination(options: Options, folder: str) -> dict[str, str]:
    return destination(options, options.extra_namespace(folder))


def app_of_apps(options: Options) -> dict[str, Any]:
    """The parent Application: every ``*/application.yaml`` of the bundle folder in the repository.

    The Applications it creates live in Argo CD's own cluster, so its destination is always in-cluster;
    ``destinationServer`` only applies to the children.
    """
    return {"apiVersion": API_VERSION, "kind": "Application",
            "metadata": {"name": options.app_name, "namespace": options.argocd_namespace},
            "spec": {"project": options.project,
                     "source": {"repoURL": options.repo, "targetRevision": options.revision,
                                "path": repo_path(options), "directory": {"recurse": True, "include": APPLICATIONS}},
                     "destination": {"server": IN_CLUSTER, "namespace": options.argocd_namespace},
                     "syncPolicy": {"automated": {"prune": True, "selfHeal": True}}}}


def yaml_file(document: Mapping[str, Any]) -> bytes:
    """A generated YAML manifest."""
    return (charts.GENERATED + dump(document)).encode()


def check_options(options: Options) -> None:
    """Settings every Argo CD bundle needs."""
    for label, value in (("--repo", options.repo), ("targetRevision", options.revision),
                         ("appName", options.app_name), ("project", options.project),
                         ("destinationServer", options.destination_server),
                         ("argocdNamespace", options.argocd_namespace)):
        if not value:
            raise InvalidInputError(f"{label} is empty; Argo CD Applications need it")


def uninstall_steps(plan: Plan, options: Options, parent: str, extra: Sequence[str] = ()) -> list[str]:
    """Delete the parent first (so it stops re-creating children), then each child with its resources; the
    ``extra`` Applications synced last go first."""
    q = shlex.quote
    ns = q(options.argocd_namespace)
    names = " ".join(q(name) for name in [*reversed(extra),
                                          *(application_name(options, unit) for unit in readme.reverse(plan.units))])
    finalizer = '{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io"]}}'
    return [
        "Delete the parent first so that it stops re-creating its children, then delete each child with the "
        "resources it deployed, in reverse install order. Namespaces created by `CreateNamespace` stay.", "",
        "```bash",
        f"kubectl delete application {q(parent)} --namespace {ns}",
        f"for app in {names}; do",
        f"    kubectl patch application \"$app\" --namespace {ns} --type merge -p {q(finalizer)}",
        f"    kubectl delete application \"$app\" --namespace {ns} --wait",
        "done",
        "```",
    ]


def _check_includes(bundle: Bundle, plan: Plan, extra: Sequence[str]) -> None:
    # Argo CD's include glob lets '*' cross '/', so a manifest named application.yaml inside a local
    # chart would be applied as a raw Application.
    wanted = {f"{folder}/application.yaml" for folder in [*(unit.folder for unit in plan.units), *extra]}
    stray = sorted(path for path in bundle if path.endswith("/application.yaml") and path not in wanted)
    if stray:
        raise InvalidInputError(
            f"bundle file {stray[0]!r} would be picked up by the app-of-apps include {APPLICATIONS!r}; "
            "rename the manifest in the catalog")


ENTRYPOINT = "app-of-apps.yaml"
"""What ``bundle-info.yaml`` names as the file a user applies."""


def release_files(unit: Unit) -> tuple[str, str]:
    """``bundle-info.yaml``'s path and manifest of ``unit``: its folder and its Application."""
    return unit.folder, f"{unit.folder}/application.yaml"


def render(plan: Plan, options: Options) -> Bundle:
    """The argocd bundle (without the shared recipe.yaml and checksums)."""
    check_options(options)
    bundle = Bundle({"app-of-apps.yaml": yaml_file(app_of_apps(options))})
    for unit in plan.units:
        name = application_name(options, unit)
        files: dict[str, bytes] = {"application.yaml": yaml_file(application(name, options, unit,
                                                                             unit_sources(options, unit)))}
        if unit.kind == LOCAL:
            files.update(charts.local_chart(unit))
        elif unit.kind != KUSTOMIZE:
            files["values.yaml"] = charts.values_file(unit)
        bundle = bundle.merge(Bundle(files).under(unit.folder))
    extra = extra_applications(plan, options)
    bundle = bundle.merge({f"extra-{name}/application.yaml": yaml_file(app) for name, app in extra.items()})
    _check_includes(bundle, plan, [f"extra-{name}" for name in extra])
    where = f"`{repo_path(options)}` of" if options.path.strip("/") else "the root of"
    first = (f"1. `aicr-gen bundle --output {options.repo}:{options.revision}` published this bundle; Argo CD 3.1 or "
             "later reads it (give Argo CD the registry's credentials in a repository Secret if it is private)."
             if options.repo.startswith("oci://") else
             f"1. Commit this folder to {where} `{options.repo}` on `{options.revision}` and push it.")
    install = [
        first,
        "2. Create the app-of-apps; Argo CD then syncs the children wave by wave:", "",
        "```bash",
        f"kubectl apply --namespace {shlex.quote(options.argocd_namespace)} -f app-of-apps.yaml",
        "```",
    ]
    if extra:
        install += ["", "After the last component, Argo CD also syncs these folders of the repository:", "",
                    *(f"- `{app['spec']['source']['path']}` (Application `{name}`)" for name, app in extra.items())]
    install += ["", "Sync waves hold a child Application back until the earlier waves' Applications are healthy only "
                "when Argo CD can tell an Application's health, which it stopped doing by default in v1.8. Give it a "
                "health check in `argocd-cm` (healthy once synced and healthy):", "",
                "```yaml", "data:", "  resource.customizations.health.argoproj.io_Application: |",
                *(f"    {line}" for line in APPLICATION_HEALTH.splitlines()), "```"]
    uninstall = uninstall_steps(plan, options, options.app_name, list(extra))
    return bundle.merge({"README.md": readme.render(plan, "argocd", install, uninstall)})
