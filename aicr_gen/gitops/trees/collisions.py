"""Objects of two clusters' trees that one controller would hold under the same name.

A repository of many clusters is safe only if no two trees define the same Argo CD or Flux object (kind,
namespace and name) in the same control plane: the later sync would silently take the object over, and two
clusters would fight over it. ``collisions`` is a pure function over rendered trees (``render_tree``'s
bundles, keyed by cluster name) so that ``lint`` and multi-spec ``sync``/``plan`` can all refuse them.

Which objects share a control plane is the caller's knowledge (``planes``): by default all Argo CD objects of
the repository are taken to land in one Argo CD and each cluster's Flux objects in its own Flux
(``repository_planes``); ``planes_of`` derives it from ClusterSpecs (a shared Argo CD
holds every shared cluster's Applications, anything else lives in the cluster's own controllers). Only plain
YAML manifests are read: the Argo CD and Flux objects of the ``argocd`` and ``flux`` bundles (the
``argocd-helm`` bundle's templates become objects only at install time, named by their install-time values).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, NamedTuple

from aicr_gen.errors import InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.bundle import Bundle
    from aicr_gen.spec.cluster import ClusterSpec

ARGOCD, FLUX = "argocd", "flux"
CONTROLLERS = {"argoproj.io": ARGOCD}
"""API group -> controller; every ``*.toolkit.fluxcd.io`` group is Flux's."""

Planes = Callable[[str, str], str]
"""``(cluster, controller)`` -> the control plane holding that cluster's objects of that controller."""


class Placed(NamedTuple):
    """One Argo CD or Flux object of a cluster's tree."""

    cluster: str
    file: str
    controller: str
    kind: str
    namespace: str
    name: str

    def key(self) -> tuple[str, str, str]:
        return self.kind, self.namespace, self.name


class Collision(NamedTuple):
    """Two clusters' trees defining the same object in one control plane."""

    plane: str
    first: Placed
    second: Placed

    def message(self) -> str:
        kind, namespace, name = self.first.key()
        if self.first.cluster == self.second.cluster:
            fix = ("two ClusterSpecs name this cluster: give one of them another metadata.name, or remove the "
                   "other's tree and its record under .aicr-gen/inputs/")
        elif self.first.controller == ARGOCD:
            fix = ("set spec.argocd.shared: true in both (every Argo CD object is then named after its cluster), "
                   "or, when they share it already, give one of them another metadata.name")
        else:
            fix = "give each cluster its own Flux (or a hub: spec.flux.hub)"
        return (f"{kind} {namespace}/{name} is defined by cluster {self.first.cluster!r} ({self.first.file}) and by "
                f"cluster {self.second.cluster!r} ({self.second.file}), which share the {self.first.controller} "
                f"control plane {self.plane!r}; {fix}")


def controller_of(api_version: str) -> str | None:
    """``argocd`` or ``flux`` for an apiVersion of theirs, else None."""
    group = api_version.rpartition("/")[0]
    if group.endswith(".toolkit.fluxcd.io"):
        return FLUX
    return CONTROLLERS.get(group)


def objects(cluster: str, tree: Mapping[str, bytes]) -> Iterator[Placed]:
    """The Argo CD and Flux objects of a tree's plain YAML manifests (``app-of-apps.yaml``,
    ``*/application.yaml``, the flux bundle's sources, releases and Kustomizations), in path order."""
    for path in sorted(tree):
        data = tree[path]
        if (not path.endswith((".yaml", ".yml")) or "/chart/" in f"/{path}" or "/templates/" in f"/{path}"
                or (b"argoproj.io/" not in data and b"toolkit.fluxcd.io/" not in data)):
            continue
        # only when a tree is read (a check answered by the records reads none)
        from aicr_gen.yaml.foreign import YAMLError, load_all

        try:
            documents = list(load_all(data))
        except YAMLError:
            continue  # values files and other data, never a controller's object
        for doc in documents:
            if not isinstance(doc, dict) or not isinstance(doc.get("metadata"), dict):
                continue
            controller = controller_of(str(doc.get("apiVersion", "")))
            if controller is None or not doc.get("kind"):
                continue
            meta = doc["metadata"]
            yield Placed(cluster, path, controller, str(doc["kind"]), str(meta.get("namespace") or ""),
                         str(meta.get("name") or ""))


def repository_planes(cluster: str, controller: str) -> str:
    """One Argo CD for the whole repository (every Argo CD object name unique across it), and each cluster's
    own Flux (Flux's fleet layout: every instance applies its own cluster's folder)."""
    return ARGOCD if controller == ARGOCD else f"{FLUX}/{cluster}"


Keyed = tuple[str, Placed]
"""An object and the control plane holding it."""
Owned = tuple[str, Sequence[Keyed]]
"""A tree's spec (a repository path) and its objects."""


def keyed(cluster: str, tree: Mapping[str, bytes], planes: Planes) -> list[Keyed]:
    """The Argo CD and Flux objects of ``cluster``'s tree, each with its control plane."""
    return [(planes(cluster, placed.controller), placed) for placed in objects(cluster, tree)]


def _pairs(trees: Iterable[tuple[str, str, Sequence[Keyed]]]) -> Iterator[tuple[str, Collision]]:
    """Each object two trees (``(name, owner, objects)``: a tree's name, and the cluster or spec it belongs
    to) of different owners define alike in one control plane, each pair once with the later tree (in ``trees``
    order) second, and that tree's name. Two trees of one spec (``sync --path`` elsewhere) are that spec's
    business, not a collision."""
    seen: dict[tuple[str, str, str, str], tuple[str, Placed]] = {}
    for tree, owner, placed_objects in trees:
        for plane, placed in placed_objects:
            first_owner, first = seen.setdefault((plane, *placed.key()), (owner, placed))
            if first_owner != owner:
                yield tree, Collision(plane, first, placed)


def collisions_of(clusters: Iterable[tuple[str, Sequence[Keyed]]]) -> list[Collision]:
    """Every object two clusters define alike in one control plane, each pair once, the later cluster (in
    ``clusters`` order) second."""
    return [collision for _tree, collision in _pairs((name, name, found) for name, found in clusters)]


def collisions(trees: Mapping[str, Bundle], planes: Planes = repository_planes) -> list[Collision]:
    """Every object two clusters' trees define alike in one control plane, each pair once, the later cluster
    (in ``trees`` order) second."""
    return collisions_of((cluster, keyed(cluster, tree, planes)) for cluster, tree in trees.items())


def planes_of(clusters: Mapping[str, ClusterSpec]) -> Planes:
    """The control planes of ClusterSpecs: Argo CD objects of clusters with a shared Argo CD in the one named
    after its namespace (``argocd/<namespace>``), anything else in the cluster's own controllers (a hub's Flux
    applies a spoke's flux tree into the spoke, so only the entry Kustomization lives on the hub, and
    ``aicr-gen fleet entry`` names those apart)."""

    def plane(cluster: str, controller: str) -> str:
        spec = clusters[cluster].spec
        if controller == ARGOCD and spec.argocd is not None and spec.argocd.is_shared():
            return f"argocd/{spec.argocd.namespace}"
        return f"{controller}/{cluster}"

    return plane


def refuse(trees: Mapping[str, Bundle], planes: Planes = repository_planes) -> None:
    """Exit 2 (an input error naming both clusters of each collision) when there are any."""
    refuse_found(collisions(trees, planes))


def refuse_found(found: Sequence[Collision]) -> None:
    """Exit 2 (an input error naming both clusters of each collision) when there are any."""
    if found:
        raise InvalidInputError("\n".join(collision.message() for collision in found))


def in_repository(run: Mapping[str, Owned], others: Mapping[str, Owned]) -> list[Collision]:
    """The collisions of a run's trees (``run``: managed folder -> its spec and objects, as this run renders or
    records them) with each other and with the repository's other trees (``others``, from their inputs records;
    none of the run's folders). The other trees come first, so a run's cluster is named second; two other trees
    colliding are left out (not this run's doing: each was checked when synced). A tree of another spec naming
    the same cluster collides too: both would hold the cluster's objects."""
    ordered = [(folder, *owned) for folder, owned in [*sorted(others.items()), *sorted(run.items())]]
    return [collision for tree, collision in _pairs(ordered) if tree in run]


def as_rows(placed_objects: Sequence[Keyed], folder: str) -> list[list[str]]:
    """Objects of the tree at ``folder`` as an inputs record keeps them: ``[plane, controller, kind, namespace,
    name, file]``, the file relative to the folder."""
    return sorted([plane, placed.controller, placed.kind, placed.namespace, placed.name,
                   placed.file.removeprefix(f"{folder}/")] for plane, placed in placed_objects)


def from_rows(rows: Sequence[Sequence[str]], cluster: str, folder: str) -> list[Keyed]:
    """``as_rows``'s objects back, each file a repository path (in ``folder``)."""
    return [(plane, Placed(cluster, f"{folder}/{file}", controller, kind, namespace, name))
            for plane, controller, kind, namespace, name, file in rows]
