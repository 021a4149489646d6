"""The fleet's entry points, rendered once for the repository from its ClusterSpecs (``aicr-gen fleet entry``).

Layout (relative to the output folder)::

    argocd/applicationset.yaml          one ApplicationSet creating every shared cluster's root Application
    flux/clusters/<cluster>/aicr-stack.yaml   a cluster's own Flux: the Kustomization applying its flux tree
    flux/clusters/<hub>/spokes/<spoke>.yaml   a hub's Flux: a Namespace per spoke (for its kubeconfig Secret) and the
                                        Kustomization applying the spoke's flux tree into the spoke
    checksums.txt

**Argo CD: a list generator, not a git files generator.** aicr-gen already knows every cluster from its spec,
so the ApplicationSet carries one element per cluster (its root Application's name, project, repository,
revision and tree path, and its rollout label): the file a reviewer reads is the whole fleet, a cluster joins
or leaves in the same pull request as its spec, and nothing else in the trees must be kept in step. A git
files generator would need a config file per tree and globbing that is greedy unless the controller opts in
(``clusters/*/x.json`` also matches deeper files). The template is the tree's own ``app-of-apps.yaml`` with
the per-cluster fields as parameters (``argocd.app_of_apps``), so a cluster is the same Application whether the
ApplicationSet or ``kubectl apply`` created it. Only clusters with a shared Argo CD (``spec.argocd``) take part:
their Applications are named after the cluster, so many live in one Argo CD namespace.

With ``spec.argocd.rollout`` (the same in every cluster, best given in their Fleet) the ApplicationSet uses
a RollingSync: one step per label value in order, each selecting the root Applications whose cluster label
has that value. Argo CD then syncs the roots itself, step by step (auto-sync of the generated Applications is
off, so the template has none), and a cluster no step selects would never sync: it is refused. Progressive
syncs are off in Argo CD unless the ApplicationSet controller runs with them enabled.

**Flux: the clusters/<name> layout.** Each Flux instance is bootstrapped at ``flux/clusters/<name>`` of this
folder (``flux bootstrap ... --path=<folder>/flux/clusters/<name>``), whose bootstrap GitRepository
(``flux-system``) is the repository of the trees. A cluster with its own Flux gets one Kustomization there;
a spoke (``spec.flux.hub``) gets its Kustomization in the hub's folder, in a namespace of its own on the hub
holding its kubeconfig Secret (``spec.kubeConfig.secretRef``), so the hub's kustomize-controller applies the
spoke's flux tree into the spoke, where Flux's controllers (``flux install``, no bootstrap) reconcile it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from aicr_gen.bundle import Bundle
from aicr_gen.errors import InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import ClusterSpec, Rollout

APPLICATIONSET = "argocd/applicationset.yaml"
DEFAULT_NAME = "aicr-fleet"
CLUSTER_LABEL = "aicr-gen.dev/cluster"
ROLLOUT_PARAMETER = "rollout"
_PARAMETERS = ("app", "project", "repoURL", "targetRevision", "path")
"""The per-cluster fields of a root Application, as ApplicationSet parameters."""
_RESERVED_NAMESPACES = ("default", "flux-system")


def _managed_path(cluster: ClusterSpec) -> str:
    from aicr_gen.spec.cluster import managed_path
    return managed_path(cluster)


def _root(cluster: ClusterSpec) -> dict[str, Any]:
    from aicr_gen.gitops.trees.render_tree import deployer_options
    from aicr_gen.render.argocd import app_of_apps

    return app_of_apps(deployer_options(cluster, "argocd", _managed_path(cluster)))


def _element(cluster: ClusterSpec, root: Mapping[str, Any], rollout: Rollout | None) -> dict[str, str]:
    source = root["spec"]["source"]
    element = {"cluster": cluster.metadata.name, "app": root["metadata"]["name"], "project": root["spec"]["project"],
               "repoURL": source["repoURL"], "targetRevision": source["targetRevision"], "path": source["path"]}
    if rollout is not None:
        value = (cluster.metadata.labels or {}).get(rollout.label)
        if value not in rollout.order:
            raise cluster.error(("metadata", "labels"), f"cluster {cluster.metadata.name!r} has "
                                f"no {rollout.label} label with one of {', '.join(rollout.order)} (the rollout "
                                "order), so no RollingSync step would ever sync it; label it")
        element[ROLLOUT_PARAMETER] = value
    return element


def _template(root: Mapping[str, Any], rollout: Rollout | None) -> dict[str, Any]:
    """The root Application with its per-cluster fields as parameters; no auto-sync under a RollingSync."""
    labels = {CLUSTER_LABEL: "{{.cluster}}", **({rollout.label: f"{{{{.{ROLLOUT_PARAMETER}}}}}"} if rollout else {})}
    spec = {**root["spec"], "project": "{{.project}}",
            "source": {**root["spec"]["source"], "repoURL": "{{.repoURL}}", "targetRevision": "{{.targetRevision}}",
                       "path": "{{.path}}"}}
    if rollout is not None:
        spec.pop("syncPolicy", None)
    return {"metadata": {"name": "{{.app}}", "labels": labels}, "spec": spec}


def _strategy(rollout: Rollout) -> dict[str, Any]:
    steps = []
    for value in rollout.order:
        step: dict[str, Any] = {"matchExpressions": [{"key": rollout.label, "operator": "In", "values": [value]}]}
        if rollout.maxUpdate is not None:
            step["maxUpdate"] = rollout.maxUpdate
        steps.append(step)
    return {"type": "RollingSync", "rollingSync": {"steps": steps}}


def _one(clusters: Sequence[ClusterSpec], what: str, values: Sequence[Any], field: tuple[str, ...]) -> Any:
    """The value every cluster agrees on (``values`` in cluster order); the first that differs is an input error."""
    first = values[0]
    for cluster, value in zip(clusters[1:], values[1:], strict=True):
        if value != first:
            raise cluster.error(field, f"cluster {cluster.metadata.name!r} has another {what} "
                                f"than {clusters[0].metadata.name!r}; the clusters of one ApplicationSet share it "
                                "(set it once in their Fleet)")
    return first


def applicationset(clusters: Sequence[ClusterSpec], name: str = DEFAULT_NAME) -> dict[str, Any]:
    """The ApplicationSet of the clusters that deploy with argocd through a shared Argo CD."""
    from aicr_gen.render.argocd import API_VERSION

    settings = []
    for cluster in clusters:
        argocd = cluster.spec.argocd
        if argocd is None or not argocd.is_shared():
            raise cluster.error(("spec",), f"cluster {cluster.metadata.name!r} has its own "
                                "Argo CD (its tree's app-of-apps.yaml); set spec.argocd.shared: true (or a "
                                "destination) to manage it from the fleet's ApplicationSet")
        settings.append(argocd)
    namespace = _one(clusters, "Argo CD namespace", [item.namespace for item in settings],
                     ("spec", "argocd", "namespace"))
    rollout = _one(clusters, "rollout", [item.rollout for item in settings], ("spec", "argocd", "rollout"))
    roots = [_root(cluster) for cluster in clusters]
    elements = [_element(cluster, root, rollout) for cluster, root in zip(clusters, roots, strict=True)]
    spec: dict[str, Any] = {"goTemplate": True, "goTemplateOptions": ["missingkey=error"],
                            "generators": [{"list": {"elements": elements}}],
                            "template": _template(roots[0], rollout)}
    if rollout is not None:
        spec["strategy"] = _strategy(rollout)
    return {"apiVersion": API_VERSION, "kind": "ApplicationSet", "metadata": {"name": name, "namespace": namespace},
            "spec": spec}


def _flux_entry(cluster: ClusterSpec, namespace: str) -> dict[str, Any]:
    """The Kustomization applying the cluster's flux tree (into the spoke, through its kubeconfig, on a hub)."""
    from aicr_gen.gitops.trees.render_tree import deployer_options
    from aicr_gen.render import flux

    options = deployer_options(cluster, "flux", _managed_path(cluster))
    spec: dict[str, Any] = {"interval": flux.INTERVAL, "retryInterval": "2m", "timeout": flux.TIMEOUT,
                            "sourceRef": {"kind": flux.GIT_REPOSITORY, "name": "flux-system",
                                          "namespace": "flux-system"},
                            "path": flux.repo_path(options), "prune": True}
    settings = cluster.spec.flux
    if settings is not None and settings.kubeConfigSecret is not None:
        ref = settings.kubeConfigSecret
        spec["kubeConfig"] = {"secretRef": {"name": ref.name, **({"key": ref.key} if ref.key else {})}}
    return {"apiVersion": flux.KUSTOMIZE_API, "kind": flux.FLUX_KUSTOMIZATION,
            "metadata": {"name": options.app_name, "namespace": namespace}, "spec": spec}


def flux_entries(clusters: Sequence[ClusterSpec]) -> dict[str, list[dict[str, Any]]]:
    """File (below ``flux/``) -> its objects: each cluster's entry in the folder of the Flux that applies it."""
    files: dict[str, list[dict[str, Any]]] = {}
    for cluster in clusters:
        name = cluster.metadata.name
        hub = cluster.spec.flux.hub if cluster.spec.flux is not None else None
        if hub is None:
            files[f"clusters/{name}/aicr-stack.yaml"] = [_flux_entry(cluster, "flux-system")]
            continue
        if name in _RESERVED_NAMESPACES or name.startswith("kube-"):
            raise cluster.error(("metadata", "name"), "a spoke's entry lives in a hub namespace "
                                f"named after it, and {name!r} is one of the hub's own; rename the cluster")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        files[f"clusters/{hub}/spokes/{name}.yaml"] = [namespace, _flux_entry(cluster, name)]
    return files


def render(clusters: Sequence[ClusterSpec], name: str = DEFAULT_NAME) -> Bundle:
    """The entry points of ``clusters`` (argocd ones in the ApplicationSet, flux ones in the Flux layout), with
    checksums; at least one cluster must deploy with argocd or flux."""
    from aicr_gen.render import charts
    from aicr_gen.yaml import dump

    argocd = [cluster for cluster in clusters if "argocd" in cluster.spec.deployers]
    fluxed = [cluster for cluster in clusters if "flux" in cluster.spec.deployers]
    if not argocd and not fluxed:
        raise InvalidInputError("no cluster deploys with argocd or flux, the deployers a fleet entry point is for")
    files: dict[str, bytes] = {}
    if argocd:
        files[APPLICATIONSET] = (charts.GENERATED + dump(applicationset(argocd, name))).encode()
    for path, documents in flux_entries(fluxed).items():
        files[f"flux/{path}"] = (charts.GENERATED + "---\n".join(dump(doc) for doc in documents)).encode()
    return Bundle(files).with_checksums()
