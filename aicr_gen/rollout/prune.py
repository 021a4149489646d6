"""``rollout prune``: the retention of each cluster's Certifications (``certify/retention``), cluster by cluster
through kubeconfig contexts as ``rollout status`` reads them, ``read.READERS`` at a time. The namespace is the one
the cluster's tree puts its Certifications in (its recipe's nvcre component's); the protected stack is the one its
tree at HEAD runs, so the evidence ``certified`` reads is never pruned. A cluster that cannot be reached is
reported with the reason (exit 3) and the others are still pruned."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen.errors import UnreachableError
from aicr_gen.rollout.read import READERS, Member, context_of

if TYPE_CHECKING:
    from aicr_gen.certify.retention import Plan
    from aicr_gen.rollout.gates import Expected


class Pruned(NamedTuple):
    """One cluster's retention: its plan (None with ``error`` when unreachable)."""

    cluster: str
    namespace: str
    plan: Plan | None
    error: str = ""


def prune_fleet(found: Sequence[Member], expected: Sequence[Expected], recipes: Mapping[str, list[dict[str, Any]]],
                *, keep: int, kubeconfig: str | None, contexts: Mapping[str, str], dry_run: bool) -> list[Pruned]:
    """Plan (and unless ``dry_run`` apply) the retention of every cluster, in ``expected``'s order."""
    from aicr_gen.certify.retention import prune
    from aicr_gen.edges.kube.client import connect, preload
    from aicr_gen.gitops.trees.render_tree import certification_namespace

    def one(index: int) -> Pruned:
        item = expected[index]
        namespace = certification_namespace({"componentRefs": recipes[item.cluster]})
        try:
            with connect(kubeconfig, context_of(found[index].cluster, contexts)) as api:
                return Pruned(item.cluster, namespace, prune(api, namespace, keep, {item.stack} - {""},
                                                             dry_run=dry_run))
        except UnreachableError as err:
            return Pruned(item.cluster, namespace, None, str(err))

    preload()
    with ThreadPoolExecutor(max(1, min(READERS, len(expected)))) as pool:
        return list(pool.map(one, range(len(expected))))
