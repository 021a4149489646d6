"""The verdict of every gate of every cluster, of each wave and of the rollout (pure: expectations and evidence
in, the ``RolloutStatus`` document out).

A verdict is ``pass``, ``wait`` (not yet: nothing failed), ``fail`` (a gate failed: the rollout halts) or
``unknown`` (the evidence could not be read). Per gate:

- ``certified``: for each certification of the cluster's tree (cluster-wide and per pool), the newest finished
  Certification stamped with the tree's stack digest decides: PASSED passes (``certified 412 GB/s >= 300``),
  FAILED or INCOMPLETE fails with NVCRE's reasons; none finished yet waits (running, or none of this stack yet).
  A Certification of another stack never counts: it certified something else; nor does one created before the
  deployer applied the tree (when ``healthy`` knows that time): a scheduled job synced ahead of the stack stamps
  the new digest while the old stack still runs.
- ``healthy``: the deployer's object (Argo CD Application or Flux Kustomization of the cluster's root, named as
  the tree names it: ``<cluster>-aicr-stack`` in a shared Argo CD, read where ``read.deployer_place`` says) applied a
  revision whose tree of the cluster is the one at the rollout's commit, and is Synced and Healthy (Ready). An
  older revision, or a newer one that changed the cluster's tree again, waits; Degraded, a failed operation or a
  Stalled Kustomization fails. helm and helmfile have no deployer object: the gate fails naming the fix.
- ``no-drift``: the cluster's snapshot (``diff --fleet``'s row) shows every component at its recipe's version.
  While ``healthy`` has not passed, or the snapshot is older than the apply, drift is the change still arriving
  (wait); after, it fails.
- ``no-quarantine``: no GPU node carries NVSentinel's ``quarantineHealthEvent`` annotation and its circuit
  breaker is not TRIPPED.

A wave has passed when every gate of every cluster passed; it then soaks from the latest time its clusters
proved it (the Certification's finish and the deployer's apply, whichever are gated) for the wave's ``soak``.
The baseline the rollout moves is the first wave's ``spec``: a wave whose spec equals it is at the target.
The next step (``next``) is ``advance`` (the first wave behind the target gets it from the one before) when
every wave at the target passed and the last of them soaked, ``wait`` while any is waiting or soaking, ``halt``
when a gate of a wave at the target failed or could not be read, and ``complete`` when every wave is at the
target and proved it. A wave is never skipped.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from aicr_gen.rollout.evidence import UNITS, Deployed, Evidence, Run

KIND = "RolloutStatus"
PASS, WAIT, FAIL, UNKNOWN = "pass", "wait", "fail", "unknown"
ORDER = {PASS: 0, WAIT: 1, UNKNOWN: 2, FAIL: 3}
"""Worse verdicts sort later: a cluster's verdict is its worst gate's."""


class Verdict(NamedTuple):
    """A gate's verdict, its reason, and when the cluster proved it (RFC 3339; "" when no time)."""

    status: str
    text: str
    since: str = ""


class Expected(NamedTuple):
    """What a cluster's committed tree says it runs."""

    cluster: str
    spec: str
    wave: str
    path: str
    deployer: str
    """``argocd``, ``flux``, or the deployer that has no status to read (``helm``, ``helmfile``)."""
    stack: str
    """The tree's stack digest ("" when the tree certifies nothing)."""
    pools: tuple[str, ...]
    """The certifications of the tree: "" cluster-wide, else a pool name."""
    roots: tuple[str, ...]
    """The name of the deployer's root object (``aicr-stack``; ``<cluster>-aicr-stack`` in a shared Argo CD); none
    for a deployer without one."""


class Observed(NamedTuple):
    """What was read back from a cluster: its evidence (None with ``error`` when unreachable), whether each
    revision its deployer reports has the tree of the rollout's commit (None: the revision is not in the
    repository), and its drift row (``drift.fleet.matrix``; None when not read) with the snapshot's time."""

    evidence: Evidence | None
    error: str = ""
    trees: Mapping[str, bool | None] = {}
    drift: Mapping[str, Any] | None = None
    snapshot_time: str = ""


def when(text: str) -> datetime | None:
    """An RFC 3339 time, or None."""
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None
    except ValueError:
        return None


def span(seconds: float) -> str:
    """``3h``, ``1h30m``, ``45m``, ``20s``: a duration as a reader says it (rounded up to the unit shown)."""
    whole = int(-(-seconds // 1))
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d{hours}h" if hours else f"{days}d"
    if hours:
        return f"{hours}h{minutes}m" if minutes else f"{hours}h"
    return f"{minutes}m" if minutes else f"{secs}s"


def _number(value: float) -> str:
    return f"{value:.1f}".rstrip("0").rstrip(".")


def _measured(run: Run) -> tuple[str, str] | None:
    """The first measured value with its unit (``412 GB/s``) and the bound its threshold sets (``>= 300``;
    "" without one)."""
    thresholds = dict(run.thresholds)
    for key, value in run.measured:
        unit = f" {UNITS[key]}" if key in UNITS else ""
        expression = thresholds.get(key, "")
        return f"{_number(value)}{unit}", expression[len("value"):].strip() if expression.startswith("value") \
            else expression
    return None


def certified(expected: Expected, evidence: Evidence, applied: str = "") -> Verdict:
    """The ``certified`` gate (see the module's docstring); ``applied``: when the deployer applied the tree (a
    Certification created before certified the stack that ran then, whatever its stamp says)."""
    if not expected.pools:
        return Verdict(FAIL, "the tree runs no certification; set spec.certification (or drop the certified gate)")
    if not expected.stack:
        return Verdict(FAIL, "no certification job of the tree names the stack it certifies; set "
                             "spec.certification.postChange: true (or a schedule)")
    verdicts = [_certified_pool(expected.stack, pool, [run for run in evidence.runs if run.pool == pool
                                                       and not _before(run.created, applied)])
                for pool in expected.pools]
    worst = max(verdicts, key=lambda verdict: ORDER[verdict.status])
    if worst.status != PASS:
        return worst
    since = max(verdict.since for verdict in verdicts)
    return Verdict(PASS, "; ".join(verdict.text for verdict in verdicts), since)


def _certified_pool(stack: str, pool: str, runs: Sequence[Run]) -> Verdict:
    where = f"pool {pool}: " if pool else ""
    ours = [run for run in runs if run.digest == stack]  # newest first
    done = next((run for run in ours if run.result != "RUNNING"), None)
    if done is None:
        running = next((run for run in ours), None)
        if running is not None:
            return Verdict(WAIT, f"{where}certifying ({running.name} running)")
        return Verdict(WAIT, f"{where}no Certification of stack {stack[:19]} yet")
    measured = _measured(done)
    if done.result == "PASSED":
        shown = f" {measured[0]} {measured[1]}".rstrip() if measured else f" ({done.name})"
        return Verdict(PASS, f"{where}certified{shown}", done.finished)
    reasons = f"{measured[0]}, needs {measured[1]}" if measured and measured[1] else \
        "; ".join(done.reasons[:2]) or done.result.lower()
    nodes = f" [{len(done.failed_nodes)} failed node(s): {', '.join(done.failed_nodes[:5])}]" \
        if done.failed_nodes else ""
    return Verdict(FAIL, f"{where}{done.name} {done.result}: {reasons}{nodes}", done.finished)


def healthy(expected: Expected, evidence: Evidence, trees: Mapping[str, bool | None]) -> Verdict:
    """The ``healthy`` gate (see the module's docstring)."""
    if expected.deployer not in ("argocd", "flux"):
        return Verdict(FAIL, f"{expected.deployer} reports no deployment status; deploy with argocd or flux, or drop "
                             "the healthy gate")
    kind = "Application" if expected.deployer == "argocd" else "Kustomization"
    found: Deployed | None = next((item for item in evidence.deployed if item.kind == kind
                                   and item.name in expected.roots), None)
    if found is None:
        return Verdict(WAIT, f"no {kind} {' or '.join(expected.roots)} yet")
    short = found.revision[:12] or "no revision"
    same = trees.get(found.revision) if found.revision else False
    if same is None:
        return Verdict(WAIT, f"{kind} {found.name} at {short}, which this repository lacks (git fetch)")
    if not same:
        return Verdict(WAIT, f"{kind} {found.name} at {short}, not yet at this tree")
    if found.state == "failed":
        return Verdict(FAIL, f"{kind} {found.name} at {short}: {found.detail}")
    if found.state != "healthy":
        return Verdict(WAIT, f"{kind} {found.name} at {short}: {found.detail}")
    return Verdict(PASS, f"{found.detail} at {short}", found.applied)


def no_drift(row: Mapping[str, Any] | None, applied: Verdict, snapshot_time: str) -> Verdict:
    """The ``no-drift`` gate from the cluster's drift row, given its ``healthy`` verdict (or a pass when the
    wave does not gate on health)."""
    if row is None:
        return Verdict(UNKNOWN, "no snapshot read")
    if row["status"] == "unreachable":
        return Verdict(UNKNOWN, f"snapshot unreachable: {row.get('error') or ''}".strip())
    moved = [cell for cell in row["components"] if cell["status"] != "ok"]
    if not moved:
        return Verdict(PASS, f"no drift (snapshot {snapshot_time})" if snapshot_time else "no drift")
    texts = []
    for cell in moved[:3]:
        want, have = cell.get("desired") or {}, cell.get("live") or {}
        texts.append(f"{cell['component']} {have.get('version') or 'missing'} -> {want.get('version') or 'none'}"
                     if cell["status"] in ("drifted", "missing") else f"{cell['component']} {cell['status']}")
    text = "drift: " + ", ".join(texts) + (f" (+{len(moved) - 3})" if len(moved) > 3 else "")
    stale = bool(applied.since) and _before(snapshot_time, applied.since)
    if applied.status != PASS or stale:
        return Verdict(WAIT, f"{text}; the change is still arriving" if applied.status != PASS
                       else f"{text}; snapshot {snapshot_time} is older than the apply")
    return Verdict(FAIL, text)


def _before(first: str, second: str) -> bool:
    a, b = when(first), when(second)
    return a is not None and b is not None and a < b


def no_quarantine(evidence: Evidence) -> Verdict:
    """The ``no-quarantine`` gate."""
    found = evidence.quarantine
    if found.breaker == "TRIPPED":
        return Verdict(FAIL, "NVSentinel circuit breaker TRIPPED")
    if found.nodes is None:
        return Verdict(UNKNOWN, "no Node read")
    if found.quarantined:
        names = ", ".join(found.quarantined[:5]) + (" ..." if len(found.quarantined) > 5 else "")
        return Verdict(FAIL, f"{len(found.quarantined)} node{'s' if len(found.quarantined) > 1 else ''} "
                             f"quarantined: {names}")
    return Verdict(PASS, f"no quarantine ({found.nodes} GPU node{'' if found.nodes == 1 else 's'})")


def cluster_verdicts(expected: Expected, observed: Observed, gates: Sequence[str]) -> dict[str, Verdict]:
    """Every gate of ``gates`` for one cluster."""
    evidence = observed.evidence
    if evidence is None:
        return {gate: Verdict(UNKNOWN, observed.error or "unreachable") for gate in gates}
    out: dict[str, Verdict] = {}
    applied = healthy(expected, evidence, observed.trees)
    for gate in gates:
        if gate == "certified":
            out[gate] = certified(expected, evidence, applied.since if applied.status == PASS else "")
        elif gate == "healthy":
            out[gate] = applied
        elif gate == "no-drift":
            out[gate] = no_drift(observed.drift, applied if "healthy" in gates else Verdict(PASS, ""),
                                 observed.snapshot_time)
        else:
            out[gate] = no_quarantine(evidence)
    return out


def _worst(verdicts: Sequence[str]) -> str:
    return max(verdicts, key=ORDER.__getitem__, default=PASS)


def status(fleet: str, waves: Sequence[Mapping[str, Any]], clusters: Sequence[tuple[Expected, Observed]],
           now: datetime, soak_of: Callable[[Mapping[str, Any]], float], *, name: str = "") -> dict[str, Any]:
    """The rollout's status document: every wave (in order) with its clusters' gate verdicts, its own verdict
    and soak, and the next step (see the module's docstring)."""
    target = _canonical(waves[0].get("spec") or {}) if waves else ""
    rows: list[dict[str, Any]] = []
    for wave in waves:
        gates = list(wave.get("gates") or ("certified", "healthy", "no-drift", "no-quarantine"))
        members = sorted((item for item in clusters if item[0].wave == wave["name"]), key=lambda item: item[0].cluster)
        found = []
        for expected, observed in members:
            verdicts = cluster_verdicts(expected, observed, gates)
            found.append({"name": expected.cluster, "spec": expected.spec, "path": expected.path,
                          "status": _worst([verdict.status for verdict in verdicts.values()]),
                          "since": max((verdict.since for verdict in verdicts.values()), default=""),
                          "gates": {gate: verdict._asdict() for gate, verdict in verdicts.items()}})
        rows.append(_wave_row(wave, gates, found, target=target, now=now, soak=soak_of(wave)))
    decision = _next(rows)
    counts = {state: sum(1 for row in rows for item in row["clusters"] if item["status"] == state)
              for state in (PASS, WAIT, FAIL, UNKNOWN)}
    return {"kind": KIND, "fleet": fleet, "fleetName": name, "now": now.isoformat().replace("+00:00", "Z"),
            "summary": {"waves": len(rows), "clusters": sum(len(row["clusters"]) for row in rows), **counts},
            "next": decision, "waves": rows}


def _canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"))


def _wave_row(wave: Mapping[str, Any], gates: Sequence[str], found: list[dict[str, Any]], *, target: str,
              now: datetime, soak: float) -> dict[str, Any]:
    state = _worst([item["status"] for item in found]) if found else WAIT
    row: dict[str, Any] = {"name": wave["name"], "atTarget": _canonical(wave.get("spec") or {}) == target,
                           "spec": wave.get("spec") or {}, "soak": wave.get("soak", "0s"), "gates": list(gates),
                           "status": state, "text": "", "soakLeft": None, "clusters": found}
    if not found:
        row["text"] = "no cluster"
    elif state == PASS and not row["atTarget"]:
        row["text"] = "passed (on the previous baseline)"
    elif state == PASS:
        start = max((moment for item in found if (moment := when(item["since"])) is not None), default=None)
        left = soak - (now - start).total_seconds() if start is not None else (soak or 0.0)
        if left > 0:
            row.update(status="soaking", soakLeft=left, text=f"soaking, {span(left)} left")
        else:
            row["text"] = "passed" + (f", soaked {span(soak)}" if soak else "")
    else:
        counts = {key: sum(1 for item in found if item["status"] == key) for key in (FAIL, UNKNOWN, WAIT)}
        row["text"] = ", ".join(f"{count} {key if key != WAIT else 'waiting'}" for key, count in counts.items()
                                if count)
    return row


def _next(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    behind = next((index for index, row in enumerate(rows) if not row["atTarget"]), None)
    ahead = rows[:behind] if behind is not None else rows
    source = ahead[-1]
    reasons = []
    for row in ahead:
        for item in row["clusters"]:
            for gate, verdict in item["gates"].items():
                if verdict["status"] != PASS:
                    reasons.append(f"{row['name']}/{item['name']} {gate}: {verdict['text']}")
        if not row["clusters"]:
            reasons.append(f"{row['name']}: no cluster is in this wave")
    states = {row["status"] for row in ahead}
    if states & {FAIL, UNKNOWN}:
        action = "halt"
    elif states - {PASS}:
        action = "wait"
        if source["status"] == "soaking":
            reasons.append(f"{source['name']}: {source['text']}")
    else:
        action = "advance" if behind is not None else "complete"
    return {"action": action, "wave": rows[behind]["name"] if behind is not None else None,
            "from": source["name"] if behind is not None else None, "reasons": reasons}


def evidence_digest(document: Mapping[str, Any]) -> str:
    """``sha256:...`` of the verdicts the next step rests on (the waves at the target, each cluster's gates):
    the ``Rollout-Evidence`` trailer of the commit that advances."""
    rows = [{"wave": row["name"], "clusters": [{"name": item["name"], "gates": item["gates"]}
                                              for item in row["clusters"]]}
            for row in document["waves"] if row["atTarget"]]
    return "sha256:" + hashlib.sha256(_canonical(rows).encode()).hexdigest()
