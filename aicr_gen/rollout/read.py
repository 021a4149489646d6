"""The IO of ``aicr-gen rollout``: the fleet's clusters and what their committed trees say (``members``,
``expectations``), and what each cluster proves, read from an exported folder or through kubeconfig contexts
(``observe``).

The clusters of a fleet are the ClusterSpecs given, else every spec whose inputs record at HEAD names the fleet file
(``sync`` wrote one per tree), loaded in worker processes as ``sync`` loads them (``run_all``). From HEAD's tree of
each cluster: its stack digest and its certifications (the ``certification/`` folders, cluster-wide and per pool),
its recipe (``recipe.yaml``, the versions ``no-drift`` compares with; each distinct blob read once, as a fleet's
trees share a few) and the tree's object id (``healthy`` compares it with the tree at the revision the deployer
applied, read with one ``git cat-file --batch-check``).

Exported evidence: ``EVIDENCE/<cluster>/`` holds any YAML or JSON files of ``kubectl get -o yaml`` output (a
``List`` or one object each); a file holding an AICR ``Snapshot`` is the cluster's snapshot for ``no-drift``. A
cluster without its folder is ``unknown``. The folders are read in worker processes (``run_all``: CPU bound). Live
evidence: through the context ``--context CLUSTER=CTX``, else the
spec's ``spec.snapshot.context``, else the context named like the cluster (never the current context), aicr-gen lists
our Certifications (label ``app.kubernetes.io/managed-by=aicr-gen``) with NVCRE's Workflows and
BandwidthMeasurements, the deployer's Applications (``spec.argocd.namespace``) or Kustomizations
(``flux-system``), the GPU nodes and NVSentinel's ``circuit-breaker`` ConfigMap, and reads the snapshot the spec's
agent writes (``spec.snapshot.configmap``); ``READERS`` clusters at a time. The deployer's root object is read
where it lives (``deployer_place``): a shared Argo CD's through ``--argocd-context``, a Flux spoke's on its hub.
Exported, it must be in the cluster's own folder (export it from the hub there). A kind whose CRD is not installed
lists as none; a cluster that cannot be reached is ``unknown`` with the reason. The context needs no more than
``list`` of those kinds and ``get`` of the snapshot ConfigMap: the breaker is listed by the field selector
``metadata.name=circuit-breaker``, which RBAC authorizes as that name (``resourceNames``), so no other ConfigMap
need be readable (``READER_RULES`` in ``tests/rollout/test_live.py``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.errors import AicrGenError, InvalidInputError, UnreachableError
from aicr_gen.rollout.evidence import Evidence, evidence
from aicr_gen.rollout.gates import Expected, Observed

if TYPE_CHECKING:
    from aicr_gen.edges.git import Repo
    from aicr_gen.spec.cluster import ClusterSpec
    from aicr_gen.yaml import Document

READERS = 8
"""Clusters read at once (network bound: threads, each its own API client)."""
_DIGEST = re.compile(rb"aicr-gen\.dev/stack-digest:\s*['\"]?(sha256:[0-9a-f]{64})")
_CERTIFICATION = re.compile(r"^(?:pools/([^/]+)/)?certification/")


class Member(NamedTuple):
    """A cluster of the fleet: its spec file (as given or as the record names it), the spec and its wave."""

    spec_file: str
    cluster: ClusterSpec
    wave: str


def members(repo: Repo, fleet_file: Path, specs: Sequence[str]) -> list[Member]:
    """The fleet's clusters: ``specs``, else those whose inputs record at HEAD names ``fleet_file``; each loaded
    (every problem at once, exit 2) and in exactly one wave."""
    from aicr_gen.gitops.render_many import run_all, workers_for
    from aicr_gen.spec.fleet import wave_name

    root = Path(repo.working_tree_dir).resolve()
    listed = list(specs) or _recorded(repo, root, fleet_file)
    if not listed:
        raise InvalidInputError(f"{fleet_file}: no ClusterSpec extends this fleet in a tree synced at HEAD; give the "
                                "specs, or sync them first (aicr-gen sync SPEC...)")
    found: list[Member] = []
    failed: list[str] = []
    target = fleet_file.resolve()
    for spec_file, cluster in zip(listed, run_all(_loaded, listed, workers_for(len(listed), None), str),
                                  strict=True):
        if isinstance(cluster, _Failed):
            if not isinstance(cluster.error, InvalidInputError):
                raise cluster.error
            failed.append(str(cluster.error))
            continue
        extends = cluster.spec.extends
        if extends is None or (Path(spec_file).resolve().parent / extends).resolve() != target:
            failed.append(f"{spec_file}: spec.extends does not name {fleet_file}; give only the fleet's specs")
            continue
        wave = wave_name(cluster.metadata.name, cluster.metadata.labels or {}, fleet_file)
        if wave is None:
            failed.append(f"{fleet_file}: has no rollout.waves; add them (docs/fleets.md: Rollout waves)")
            break
        found.append(Member(spec_file, cluster, wave))
    if failed:
        raise InvalidInputError("\n".join(failed) if len(failed) == 1 else
                                f"{len(failed)} spec(s) failed; nothing was read:\n" + "\n".join(failed))
    return found


class _Failed(NamedTuple):
    """The error of one spec or cluster, returned (``run_all`` would raise an error it is given back): every
    cluster's is reported at once."""

    error: AicrGenError


def _loaded(spec_file: str) -> ClusterSpec | _Failed:
    """``load_spec(spec_file)``, or its error."""
    from aicr_gen.spec.load import load_spec

    try:
        return load_spec(spec_file)
    except AicrGenError as err:
        return _Failed(err)


def _recorded(repo: Repo, root: Path, fleet_file: Path) -> list[str]:
    from aicr_gen.gitops.committed import all_records
    from aicr_gen.gitops.records import fingerprint, record

    name = fingerprint.name_of(fleet_file, root)
    out = []
    for data in all_records(repo, "HEAD").values():
        parsed = record.parse(data)
        if parsed is not None and any(key == name or key.startswith(f"{name}{fingerprint.WAVE}")
                                      for key in parsed.inputs):
            out.append(str(root / parsed.spec))
    return sorted(out)


def _deployer(cluster: ClusterSpec) -> str:
    names = [str(item) for item in cluster.spec.deployers]
    return next((name for name in names if name in ("argocd", "flux")), names[0] if names else "helm")


def expectations(repo: Repo, found: Sequence[Member]) -> tuple[list[Expected], dict[str, list[dict[str, Any]]]]:
    """What each cluster's tree at HEAD says (``Expected``), and each cluster's recipe componentRefs."""
    from aicr_gen.edges.git_objects import read_blobs
    from aicr_gen.gitops.committed import folder_files
    from aicr_gen.gitops.trees.render_tree import deployer_options
    from aicr_gen.yaml import load_bytes

    files = folder_files(repo, "HEAD", sorted({item.cluster.spec.repo.path for item in found}))
    wanted = [sha for names in files.values() for rel, sha in names.items()
              if rel == "recipe.yaml" or (_CERTIFICATION.match(rel) and rel.endswith("configmap.yaml"))]
    blobs = read_blobs(repo, wanted)
    out: list[Expected] = []
    recipes: dict[str, list[dict[str, Any]]] = {}
    loaded: dict[str, Any] = {}  # blob -> its recipe: a fleet's trees share a few recipes, each is read once
    for item in found:
        name, path = item.cluster.metadata.name, item.cluster.spec.repo.path
        names = files[path]
        pools = sorted({match.group(1) or "" for rel in names if (match := _CERTIFICATION.match(rel))})
        stack = next((hit.group(1).decode() for rel, sha in sorted(names.items())
                      if _CERTIFICATION.match(rel) and rel.endswith("configmap.yaml")
                      and (hit := _DIGEST.search(blobs[sha]))), "")
        blob = names.get("recipe.yaml")
        if blob is not None and blob not in loaded:
            loaded[blob] = load_bytes(blobs[blob], f"HEAD:{path}/recipe.yaml").data
        recipe = loaded[blob] if blob is not None else {}
        recipes[name] = list((recipe or {}).get("componentRefs") or [])
        deployer = _deployer(item.cluster)
        roots = (deployer_options(item.cluster, deployer, path).app_name,) if deployer in ("argocd", "flux") else ()
        out.append(Expected(name, item.spec_file, item.wave, path, deployer, stack, tuple(pools), roots))
    return out, recipes


def trees(repo: Repo, asked: Mapping[str, Sequence[str]],
          paths: Mapping[str, str]) -> dict[str, dict[str, bool | None]]:
    """Cluster -> revision -> whether the cluster's tree at that revision is the one at HEAD (None when the
    repository lacks the revision)."""
    lines = [f"HEAD:{paths[name]}" for name in asked]
    lines += [f"{revision}:{paths[name]}" for name, revisions in asked.items() for revision in revisions]
    if not lines:
        return {}
    answer = repo.run("cat-file", "--batch-check=%(objectname)", stdin="".join(f"{line}\n" for line in lines)
                      .encode()).split("\n")
    ids = dict(zip(lines, answer, strict=True))
    out: dict[str, dict[str, bool | None]] = {}
    for name, revisions in asked.items():
        head = ids[f"HEAD:{paths[name]}"]
        out[name] = {revision: None if ids[f"{revision}:{paths[name]}"].endswith(" missing")
                     else ids[f"{revision}:{paths[name]}"] == head for revision in revisions}
    return out


class Read(NamedTuple):
    """One cluster's evidence (None with ``error`` when unreachable) and its snapshot (None when not read)."""

    evidence: Evidence | None
    error: str
    snapshot: dict[str, Any] | None
    snapshot_error: str = ""


def exported(folder: Path, cluster: str) -> Read:
    """The evidence exported to ``folder/<cluster>/``; an unreadable file is an input error."""
    from aicr_gen.drift import snapshot as snapshots
    from aicr_gen.yaml import load_bytes

    place = folder / cluster
    if not place.is_dir():
        return Read(None, f"no evidence folder {place}", None)
    docs: list[Document] = []
    snapshot = None
    for file in sorted(place.iterdir()):
        if file.suffix not in (".yaml", ".yml", ".json") or not file.is_file():
            continue
        doc = load_bytes(file.read_bytes(), str(file))
        if isinstance(doc.data, dict) and doc.data.get("kind") == "Snapshot":
            snapshot = snapshots.validate_snapshot(doc)
        else:
            docs.append(doc)
    return Read(evidence(docs), "", snapshot, "" if snapshot is not None else f"no Snapshot in {place}")


def _exported_or_error(place: tuple[Path, str]) -> Read | _Failed:
    """``exported(*place)``, or its error."""
    try:
        return exported(*place)
    except AicrGenError as err:
        return _Failed(err)


_LISTS = (
    ("Certification", "/apis/nvcre.nvidia.com/v1alpha1/certifications", "app.kubernetes.io/managed-by=aicr-gen"),
    ("Workflow", "/apis/nvcre.nvidia.com/v1alpha1/workflows", None),
    ("BandwidthMeasurement", "/apis/nvcre.nvidia.com/v1alpha1/bandwidthmeasurements", None),
    ("Node", "/api/v1/nodes", "nvidia.com/gpu.present=true"),
)
"""What every cluster lists: kind, path, label selector."""


class Place(NamedTuple):
    """Where a cluster's deployer object lives: the kubeconfig context and the namespace."""

    context: str
    namespace: str


def deployer_place(cluster: ClusterSpec, deployer: str, context: str, contexts: Mapping[str, str],
                   argocd_context: str | None) -> Place | None:
    """Where ``live`` lists the deployer object of ``cluster`` (None: a deployer without one): Argo CD's
    Applications in ``spec.argocd.namespace``, through ``argocd_context`` when the Argo CD is shared (one Argo CD
    for many clusters) and it is given, else the cluster's own ``context``; a Flux spoke's Kustomization on its hub
    (``spec.flux.hub``'s context, picked as any cluster's), in the namespace named after the spoke; else the
    cluster's own Flux in ``flux-system``."""
    if deployer == "argocd":
        settings = cluster.spec.argocd
        shared = settings is not None and settings.is_shared()
        return Place(argocd_context if shared and argocd_context else context,
                     settings.namespace if settings is not None else "argocd")
    if deployer == "flux":
        hub = cluster.spec.flux.hub if cluster.spec.flux is not None else None
        if hub is not None:
            return Place(contexts.get(hub) or hub, cluster.metadata.name)
        return Place(context, "flux-system")
    return None


_DEPLOYER = {"argocd": ("Application", "/apis/argoproj.io/v1alpha1/namespaces/{namespace}/applications"),
             "flux": ("Kustomization", "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/{namespace}/kustomizations")}


def _listed(api: Any, lists: Sequence[tuple[str, str, str | None]]) -> list[dict[str, Any]]:
    from aicr_gen.edges.kube.client import NotFoundError

    items: list[dict[str, Any]] = []
    for kind, path, selector in lists:
        try:
            listed = api.list_items(path, f"{kind} list", selector)
        except NotFoundError:
            listed = []  # the CRD is not installed: none of that kind
        items += [{"kind": kind, "apiVersion": _API[kind], **item} for item in listed]
    return items


def live(cluster: ClusterSpec, deployer: str, kubeconfig: str | None, context: str,
         place: Place | None = None) -> Read:
    """The evidence of one cluster read through ``context``, its deployer object at ``place``."""
    from aicr_gen.drift.load import load_snapshot
    from aicr_gen.edges.kube.client import connect
    from aicr_gen.yaml import Document

    lists = list(_LISTS)
    elsewhere: list[tuple[str, str, str | None]] = []
    if place is not None:
        kind, path = _DEPLOYER[deployer]
        (lists if place.context == context else elsewhere).append((kind, path.format(namespace=place.namespace),
                                                                   None))
    try:
        with connect(kubeconfig, context) as api:
            items = _listed(api, lists)
            breaker = api.request("GET", "/api/v1/configmaps", "circuit-breaker ConfigMap",
                                  query=[("fieldSelector", "metadata.name=circuit-breaker")]).get("items") or []
            items += [{"kind": "ConfigMap", "apiVersion": "v1", **item} for item in breaker if isinstance(item, dict)]
        if elsewhere and place is not None:
            with connect(kubeconfig, place.context) as hub:
                items += _listed(hub, elsewhere)
    except UnreachableError as err:
        return Read(None, str(err), None)
    found = evidence([Document(f"context {context}", {"kind": "List", "items": items}, {})], gpu_nodes_listed=True)
    agent = cluster.spec.snapshot
    if agent is None:
        return Read(found, "", None, "the spec has no spec.snapshot.configmap")
    try:
        return Read(found, "", load_snapshot(agent.configmap, kubeconfig=kubeconfig, context=context))
    except UnreachableError as err:
        return Read(found, "", None, str(err))


_API = {"Certification": "nvcre.nvidia.com/v1alpha1", "Workflow": "nvcre.nvidia.com/v1alpha1",
        "BandwidthMeasurement": "nvcre.nvidia.com/v1alpha1", "Node": "v1", "Application": "argoproj.io/v1alpha1",
        "Kustomization": "kustomize.toolkit.fluxcd.io/v1"}
"""A list's items carry no apiVersion and kind (the List has them): put back for ``evidence``."""


def context_of(cluster: ClusterSpec, contexts: Mapping[str, str]) -> str:
    """The kubeconfig context of ``cluster``, as ``diff --fleet`` picks it."""
    agent = cluster.spec.snapshot
    return contexts.get(cluster.metadata.name) or (agent.context if agent is not None and agent.context else None) \
        or cluster.metadata.name


def observe(repo: Repo, found: Sequence[Member], expected: Sequence[Expected],
            recipes: Mapping[str, list[dict[str, Any]]], *, folder: Path | None, kubeconfig: str | None,
            contexts: Mapping[str, str], argocd_context: str | None = None) -> list[Observed]:
    """What each cluster proves (``expected``'s order)."""
    from aicr_gen.drift.diff import helm_releases
    from aicr_gen.drift.fleet import Cluster, cells, cluster_status

    def one(index: int) -> Read | _Failed:
        member = found[index]
        try:
            context = context_of(member.cluster, contexts)
            deployer = expected[index].deployer
            return live(member.cluster, deployer, kubeconfig, context,
                        deployer_place(member.cluster, deployer, context, contexts, argocd_context))
        except AicrGenError as err:
            return _Failed(err)

    if folder is None:
        from aicr_gen.edges.kube.client import preload

        preload()
        with ThreadPoolExecutor(max(1, min(READERS, len(found)))) as pool:
            reads = list(pool.map(one, range(len(found))))
    else:
        from aicr_gen.gitops.render_many import run_all, workers_for

        reads = run_all(_exported_or_error, [(folder, member.cluster.metadata.name) for member in found],
                        workers_for(len(found), None), str)
    failed = [f"{found[index].cluster.metadata.name}: {item.error}" for index, item in enumerate(reads)
              if isinstance(item, _Failed)]
    if failed:
        raise InvalidInputError(failed[0] if len(failed) == 1 else
                                f"{len(failed)} cluster(s) gave evidence aicr-gen cannot read:\n" + "\n".join(failed))
    done = [item for item in reads if isinstance(item, Read)]
    asked = {item.cluster: sorted({deployed.revision for deployed in read.evidence.deployed if deployed.revision})
             for item, read in zip(expected, done, strict=True) if read.evidence is not None}
    known = trees(repo, asked, {item.cluster: item.path for item in expected})
    out = []
    for item, read in zip(expected, done, strict=True):
        row = None
        if read.snapshot is not None or read.snapshot_error:
            drift = Cluster(item.cluster, item.spec, "evidence", recipes[item.cluster],
                            helm_releases(read.snapshot) if read.snapshot is not None else None,
                            read.snapshot_error or None)
            found_cells = cells(drift)
            row = {"status": cluster_status(drift, found_cells), "error": drift.error, "components": found_cells}
        when = str((read.snapshot or {}).get("metadata", {}).get("timestamp") or "")
        out.append(Observed(read.evidence, read.error, known.get(item.cluster, {}), row, when))
    return out
