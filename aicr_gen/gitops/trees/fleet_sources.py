"""The inputs of ``aicr-gen diff --fleet``: each ClusterSpec's recipe (resolved as ``sync`` resolves it, with its
version pins) and the Helm releases of the cluster's snapshot. The only IO of fleet drift.

Where a cluster's snapshot comes from, first match wins:

1. ``--snapshot CLUSTER=SRC`` (a file or ``cm://NS/NAME``);
2. the spec's ``spec.snapshot.configmap`` (where its snapshot agent writes).

A ``cm://`` source is read through one kubeconfig context per cluster, never the current context (that would
read one cluster's ConfigMap for every spec): ``--context CLUSTER=CTX``, else the spec's
``spec.snapshot.context``, else the context named like the cluster (``metadata.name``).

A problem with the input (a spec, an argument, a snapshot that is not valid, a context the kubeconfig lacks) is
collected, and all of them end the run with exit 2 before anything is written. A cluster whose ConfigMap cannot
be reached (API server down, refused, no such ConfigMap) is reported as ``unreachable`` in its row instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.drift.fleet import Cluster
from aicr_gen.errors import AicrGenError, InvalidInputError, UnreachableError

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import ClusterSpec

READERS = 8
"""ConfigMaps read at once (network bound: threads, each its own API client)."""


class Source(NamedTuple):
    """One cluster to read: its spec, recipe componentRefs, snapshot source and kubeconfig context."""

    cluster: str
    spec: str
    refs: list[dict[str, Any]]
    source: str
    context: str | None


def pairs(values: Sequence[str], flag: str) -> dict[str, str]:
    """``CLUSTER=VALUE`` arguments as a mapping; a cluster given twice or a value missing is an input error."""
    found: dict[str, str] = {}
    for text in values:
        cluster, sep, value = text.partition("=")
        if not (sep and cluster and value):
            raise InvalidInputError(f"{flag} {text!r}: expected CLUSTER=VALUE, e.g. {flag} eks-prod-1="
                                    f"{'snapshots/eks-prod-1.yaml' if flag == '--snapshot' else 'prod-1-admin'}")
        if cluster in found:
            raise InvalidInputError(f"{flag} {cluster}=...: given twice ({found[cluster]!r}, {value!r}); give one")
        found[cluster] = value
    return found


def _collected(failed: list[tuple[str, AicrGenError]], what: str) -> None:
    if len(failed) == 1:
        raise failed[0][1]
    if failed:
        raise InvalidInputError(f"{len(failed)} {what} failed; nothing was written:\n" + "\n".join(
            f"  {name}: {str(error).replace(chr(10), chr(10) + '    ')}" for name, error in failed))


class _Recipes:
    """Recipes of many specs: each catalog opened once, each (catalog, criteria, pins) resolved once."""

    def __init__(self) -> None:
        self.catalogs: dict[tuple[str, ...], Any] = {}
        self.recipes: dict[tuple[Any, ...], dict[str, Any]] = {}

    def refs(self, cluster: ClusterSpec, base: Path) -> list[dict[str, Any]]:
        from aicr_gen.gitops.trees.recipes import open_spec_catalog, resolve_spec
        from aicr_gen.spec.cluster import criteria_values
        folders = tuple(str((base / folder).resolve()) for folder in cluster.spec.catalogs)
        catalog = self.catalogs.get(folders)
        if catalog is None:
            catalog = self.catalogs[folders] = open_spec_catalog(cluster, base)
        key = (folders, tuple(sorted(criteria_values(cluster).items(), key=lambda item: item[0])),
               cluster.spec.criteria.nodes, tuple(sorted(cluster.spec.versions.items())))
        recipe = self.recipes.get(key)
        if recipe is None:
            recipe = self.recipes[key] = resolve_spec(cluster, base, catalog)
        return list(recipe.get("componentRefs") or [])


def survey(spec_files: Sequence[str], snapshots: Mapping[str, str], contexts: Mapping[str, str]) -> list[Source]:
    """Load every spec and find its snapshot source; all problems at once (exit 2)."""
    from aicr_gen.spec.load import load_spec
    from aicr_gen.spec.patterns import expand

    recipes = _Recipes()
    failed: list[tuple[str, AicrGenError]] = []
    found: list[Source] = []
    owners: dict[str, str] = {}
    for spec_file in expand(list(spec_files)):
        try:
            cluster = load_spec(spec_file)
            name = cluster.metadata.name
            if name in owners:
                raise InvalidInputError(f"cluster {name!r} is also {owners[name]}'s metadata.name; each cluster "
                                        "needs its own")
            owners[name] = spec_file
            refs = recipes.refs(cluster, Path(spec_file).resolve().parent)
            found.append(_source(cluster, spec_file, refs, snapshots, contexts))
        except InvalidInputError as err:
            failed.append((spec_file, err))
    for flag, given in (("--snapshot", snapshots), ("--context", contexts)):
        for name in sorted(given.keys() - owners.keys()):
            failed.append((f"{flag} {name}=...", InvalidInputError(
                f"no spec given names cluster {name!r}; clusters: {', '.join(sorted(owners)) or 'none'}")))
    _collected(failed, "spec(s) or source(s)")
    return found


def _source(cluster: ClusterSpec, spec_file: str, refs: list[dict[str, Any]], snapshots: Mapping[str, str],
            contexts: Mapping[str, str]) -> Source:
    from aicr_gen.text.configmap_source import CM_PREFIX, parse_cm_source
    name = cluster.metadata.name
    agent = cluster.spec.snapshot
    source = snapshots.get(name) or (agent.configmap if agent is not None else None)
    if source is None:
        raise cluster.error(("spec",), f"cluster {name!r} has no spec.snapshot.configmap; "
                            f"give --snapshot {name}=FILE|cm://NS/NAME or set spec.snapshot")
    if source == "-":
        raise InvalidInputError(f"--snapshot {name}=-: a fleet reads no standard input; give a file or cm://NS/NAME")
    context = None
    if source.startswith(CM_PREFIX):
        parse_cm_source(source)
        context = contexts.get(name) or (agent.context if agent is not None else None) or name
    return Source(name, spec_file, refs, source, context)


def read(sources: Sequence[Source], kubeconfig: str | None) -> list[Cluster]:
    """Each source's Helm releases; files in this thread, ConfigMaps ``READERS`` at a time. An unreachable
    ConfigMap makes its cluster ``unreachable``; any input error ends the run (all of them listed)."""
    from aicr_gen.text.configmap_source import CM_PREFIX
    remote = [index for index, source in enumerate(sources) if source.source.startswith(CM_PREFIX)]
    outcomes: dict[int, Cluster | AicrGenError] = {}
    if remote:
        from aicr_gen.edges.kube.client import preload

        preload()
        with ThreadPoolExecutor(min(READERS, len(remote))) as pool:
            outcomes.update(zip(remote, pool.map(lambda index: _read(sources[index], kubeconfig), remote),
                                strict=True))
    failed: list[tuple[str, AicrGenError]] = []
    clusters: list[Cluster] = []
    for index, source in enumerate(sources):
        outcome = outcomes[index] if index in outcomes else _read(source, kubeconfig)
        if isinstance(outcome, AicrGenError):
            failed.append((f"{source.cluster} ({source.source})", outcome))
        else:
            clusters.append(outcome)
    _collected(failed, "snapshot(s)")
    return clusters


def _read(source: Source, kubeconfig: str | None) -> Cluster | AicrGenError:
    from aicr_gen.drift.diff import helm_releases
    from aicr_gen.drift.load import load_snapshot
    try:
        snapshot = load_snapshot(source.source, kubeconfig=kubeconfig, context=source.context)
    except UnreachableError as err:
        return Cluster(source.cluster, source.spec, source.source, source.refs, None, str(err))
    except AicrGenError as err:
        return err
    return Cluster(source.cluster, source.spec, source.source, source.refs, helm_releases(snapshot))
