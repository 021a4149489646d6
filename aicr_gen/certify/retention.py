"""Retention of the Certifications aicr-gen's jobs create (``certify/cron.py``): the jobs never delete one, so a
cluster certified after every change and on a schedule gathers them for ever. The rule (``plan``, pure), for the
Certifications of one namespace as the API lists them:

- only ours are ever deleted: labelled ``app.kubernetes.io/managed-by=aicr-gen`` and ``aicr-gen.dev/trigger`` (a
  job made it). The bundle's one-off ``certification.yaml``, created by hand, and anybody else's are kept;
- one being deleted (``metadata.deletionTimestamp`` set) is left to go: neither counted nor deleted again;
- one still running (no ``Succeeded`` or ``Failed`` condition True) is never deleted, nor counted: ``keep`` counts
  results, so a run in progress never costs the group its last verdict;
- the finished ones of each group (label ``aicr-gen.dev/pool`` or none, label ``aicr-gen.dev/trigger``) are ordered
  newest first by ``metadata.creationTimestamp``, then by name (the API server stamps whole seconds; the name breaks
  a tie the same way every time), and the newest ``keep`` of each group are kept;
- for each protected stack digest (annotation ``aicr-gen.dev/stack-digest``: a stack whose evidence a rollout still
  needs) and pool, the newest passed one (``Succeeded``, no ``Failed`` or ``ValidationFailed`` True: what the
  ``certified`` gate reads) is kept, and so is the newest finished one, so that pruning never leaves an older pass
  where a later failure was.

``prune`` is the edge: it lists a namespace's Certifications made by our jobs (a label selector) through the kube
client, plans, and deletes each victim with ``propagationPolicy: Background`` and its uid as a precondition. NVCRE's
finalizer ``nvcre.nvidia.com/certification-finalizer`` has its controller delete the Certification's Workflows first,
so a delete returns while the object waits with a ``deletionTimestamp``; the next run sees it going.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, replace
from typing import Any, Literal, Protocol
from urllib.parse import quote

from aicr_gen.certify.cron import STACK_DIGEST, TRIGGER_LABEL
from aicr_gen.certify.nvcre import API_VERSION, MANAGED_BY, POOL_LABEL
from aicr_gen.errors import InvalidInputError, UnreachableError

LIST_PATH = f"/apis/{API_VERSION}/namespaces/{{namespace}}/certifications"
OBJECT_PATH = f"/apis/{API_VERSION}/namespaces/{{namespace}}/certifications/{{name}}"
OURS = ",".join([*(f"{key}={value}" for key, value in MANAGED_BY.items()), TRIGGER_LABEL])
"""The label selector of the Certifications our jobs make."""
PASSED, FAILED, RUNNING = "passed", "failed", "running"

Action = Literal["keep", "delete", "going"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What happens to one Certification, and why (a ``--dry-run`` table's row)."""

    namespace: str
    name: str
    uid: str
    created: str
    """``metadata.creationTimestamp`` as listed."""
    trigger: str
    """Label ``aicr-gen.dev/trigger`` ("" when no job of ours made it)."""
    pool: str
    """Label ``aicr-gen.dev/pool`` ("" for the cluster-wide Certification)."""
    digest: str
    """Annotation ``aicr-gen.dev/stack-digest`` ("" without)."""
    state: str
    """``passed``, ``failed`` or ``running``."""
    action: Action
    reason: str


@dataclass(frozen=True, slots=True)
class Plan:
    """Every listed Certification's decision: ours by namespace, pool and trigger, newest first; then others."""

    keep: int
    protected: frozenset[str]
    decisions: tuple[Decision, ...]

    @property
    def victims(self) -> tuple[Decision, ...]:
        """The Certifications to delete."""
        return tuple(decision for decision in self.decisions if decision.action == "delete")


class Api(Protocol):
    """What ``prune`` asks of a cluster: ``aicr_gen.edges.kube.client.Cluster`` (``certify`` imports no edge)."""

    def list_items(self, path: str, what: str, selector: str | None = None) -> list[dict[str, Any]]: ...

    def delete(self, path: str, what: str, *, params: Mapping[str, str] | None = None, uid: str = "",
               propagation: str = "Background") -> dict[str, Any] | None: ...


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _state(item: Mapping[str, Any]) -> str:
    conditions = _mapping(item.get("status")).get("conditions")
    true = {str(condition.get("type")) for condition in conditions if isinstance(condition, Mapping)
            and condition.get("status") == "True"} if isinstance(conditions, list) else set()
    if not true & {"Succeeded", "Failed"}:
        return RUNNING
    return FAILED if true & {"Failed", "ValidationFailed"} else PASSED


def _created(decision: Decision) -> dt.datetime:
    try:
        stamp = dt.datetime.fromisoformat(decision.created)
    except ValueError:
        raise InvalidInputError(f"Certification {decision.namespace}/{decision.name}: metadata.creationTimestamp "
                                f"{decision.created!r} is not an RFC 3339 time") from None
    return stamp if stamp.tzinfo else stamp.replace(tzinfo=dt.UTC)


def _read(item: Mapping[str, Any]) -> Decision:
    """``item`` kept, with the reason when that is settled before the groups are ranked (being deleted, not ours,
    running) and none when it is one of ours, finished: ``trigger`` is set on ours only."""
    meta = _mapping(item.get("metadata"))
    labels, annotations = _mapping(meta.get("labels")), _mapping(meta.get("annotations"))
    ours = all(labels.get(key) == value for key, value in MANAGED_BY.items()) and bool(labels.get(TRIGGER_LABEL))
    decision = Decision(namespace=str(meta.get("namespace") or ""), name=str(meta.get("name") or ""),
                        uid=str(meta.get("uid") or ""), created=str(meta.get("creationTimestamp") or ""),
                        trigger=str(labels[TRIGGER_LABEL]) if ours else "", pool=str(labels.get(POOL_LABEL) or ""),
                        digest=str(annotations.get(STACK_DIGEST) or ""), state=_state(item), action="keep", reason="")
    if ours and not decision.name:
        raise InvalidInputError(f"a Certification of namespace {decision.namespace!r} has no metadata.name")
    if meta.get("deletionTimestamp"):
        return replace(decision, action="going", reason="already being deleted")
    if not ours:
        return replace(decision, reason="not made by an aicr-gen job")
    if decision.state == RUNNING:
        return replace(decision, reason="running (no Succeeded or Failed condition True yet)")
    return decision


def _evidence(finished: list[Decision], protected: Set[str]) -> dict[tuple[str, str], str]:
    """``(namespace, name)`` -> why it is kept for a protected stack digest, of the ``finished`` ones (newest
    first): the newest passed and the newest finished of each digest and pool."""
    found: dict[tuple[str, str], str] = {}
    seen: set[tuple[str, str, str, bool]] = set()
    for decision in finished:
        if decision.digest not in protected:
            continue
        for passed in (True, False) if decision.state == PASSED else (False,):
            key = (decision.namespace, decision.pool, decision.digest, passed)
            if key not in seen:
                seen.add(key)
                found.setdefault((decision.namespace, decision.name), f"newest {'passed' if passed else 'result'} "
                                 f"of protected stack {decision.digest[:len('sha256:') + 12]}")
    return found


def plan(items: Iterable[Mapping[str, Any]], keep: int, protected: Set[str] = frozenset()) -> Plan:
    """Which of the Certifications ``items`` (one namespace's, as the API lists them) to delete, and why each is
    kept or deleted: the module's rule, keeping the newest ``keep`` (at least 1) finished ones of each job and the
    evidence of each ``protected`` stack digest."""
    if keep < 1:
        raise InvalidInputError(f"the retention keeps at least 1 Certification of each job, not {keep}")
    read = [_read(item) for item in items]
    ours = sorted((decision for decision in read if decision.trigger),
                  key=lambda decision: (_created(decision), decision.name), reverse=True)
    evidence = _evidence([decision for decision in ours if not decision.reason], protected)
    ranks: dict[tuple[str, str, str], int] = {}
    decided: list[Decision] = []
    for decision in ours:
        if decision.reason:  # settled: going or running
            decided.append(decision)
            continue
        group = (decision.namespace, decision.pool, decision.trigger)
        rank = ranks[group] = ranks.get(group, 0) + 1
        if rank <= keep:
            decided.append(replace(decision, reason=f"newest finished #{rank} of its job (keeps {keep})"))
        elif (decision.namespace, decision.name) in evidence:
            decided.append(replace(decision, reason=evidence[decision.namespace, decision.name]))
        else:
            decided.append(replace(decision, action="delete",
                                   reason=f"older than the {keep} newest finished of its job"))
    decided.sort(key=lambda decision: (decision.namespace, decision.pool, decision.trigger))  # stable: newest first
    others = sorted((decision for decision in read if not decision.trigger),
                    key=lambda decision: (decision.namespace, decision.name))
    return Plan(keep=keep, protected=frozenset(protected), decisions=(*decided, *others))


def prune(cluster: Api, namespace: str, keep: int, protected: Set[str] = frozenset(), *,
          dry_run: bool = False) -> Plan:
    """Plan the retention of the Certifications our jobs made in ``namespace`` of ``cluster`` and, unless
    ``dry_run``, delete its victims (``propagationPolicy: Background``, each only while it is still the object
    listed); the plan. A failed request is an ``UnreachableError`` that says how many were deleted before it."""
    items = cluster.list_items(LIST_PATH.format(namespace=quote(namespace, safe="")),
                               f"Certification list of namespace {namespace}", OURS)
    found = plan(items, keep, protected)
    if dry_run:
        return found
    for done, victim in enumerate(found.victims):
        try:
            cluster.delete(OBJECT_PATH, f"Certification {victim.namespace}/{victim.name}",
                           params={"namespace": victim.namespace, "name": victim.name}, uid=victim.uid)
        except UnreachableError as err:
            raise UnreachableError(f"{err} ({done} of the {len(found.victims)} Certifications to prune were "
                                   "deleted before)") from None
    return found
