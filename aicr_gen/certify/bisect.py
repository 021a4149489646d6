"""Bisection of a failed Certification down to the nodes at fault, one round of Certifications at a time.

NVCRE's ``testScale: diagnose`` isolates faults inside one Certification. This does the same across
Certifications a user (or CI) applies: every failing group's suspects are halved into two new
Certifications targeting ``spec.target.nodeNames``, until a group has one suspect left or cannot be split
without falling below ``minGroupSize``. A half smaller than ``minGroupSize`` is padded with a node already
proven healthy (rotating through the known-healthy ones), so its failure still points at the suspect.
Faults follow the OR model NVCRE assumes: a group fails iff it holds a bad node, so every node of a
passing group is healthy.

Generated Certifications use ``nvcre.nvidia.com/v1alpha1`` whatever the input's group: only it has
``spec.target.nodeNames``. They run only the categories that failed, with their options unchanged. The
round's state travels in the Certifications themselves: labels ``aicr-gen.dev/bisect-of`` and
``aicr-gen.dev/bisect-round`` select a round with kubectl, and annotations carry the padding, a pool of
healthy nodes and the suspects confirmed so far. A pool's Certification (label ``aicr-gen.dev/pool``) passes its label
on to each round, whose generateName still holds the pool. Pure: values in, values and a :class:`Bundle` out.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from aicr_gen.bundle import Bundle
from aicr_gen.certify.nvcre import API_VERSION, MANAGED_BY, POOL_LABEL
from aicr_gen.certify.nvcre_status import NODE_NAME
from aicr_gen.certify.report_model import INCOMPLETE, PASSED, RUNNING, Certification, FailedNode
from aicr_gen.errors import InvalidInputError

PREFIX = "aicr-gen.dev/"
LABEL_OF = PREFIX + "bisect-of"
LABEL_ROUND = PREFIX + "bisect-round"
LABEL_GROUP = PREFIX + "bisect-group"
ANN_ROOT = PREFIX + "bisect-root"
ANN_PADDING = PREFIX + "bisect-padding"
ANN_HEALTHY = PREFIX + "bisect-healthy"
ANN_SUSPECTS = PREFIX + "bisect-suspects"
HEALTHY_POOL = 16
"""Healthy nodes a round carries forward for padding; more only make the annotation longer."""

PER_NODE_VARIANTS = frozenset({"dcgm-level3", "dcgm-level4", "nccl-loopback", "nccl-loopback-nvswitch"})
"""Catalog entries that test every node on its own: their failed nodes need no bisection."""

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?\Z")


@dataclass(frozen=True, slots=True)
class Group:
    """Nodes one Certification targets; ``padding`` are known-healthy nodes added to reach minGroupSize."""

    nodes: tuple[str, ...]
    padding: tuple[str, ...] = ()

    @property
    def suspects(self) -> tuple[str, ...]:
        return tuple(node for node in self.nodes if node not in self.padding)


@dataclass(frozen=True, slots=True)
class Outcome:
    """How a group's Certification ended: passed, or failed naming ``failed`` nodes (empty: the whole group)."""

    group: Group
    passed: bool
    failed: tuple[FailedNode, ...] = ()


@dataclass(frozen=True, slots=True)
class Suspect:
    """A node the bisection blames, with NVCRE's reason and why the bisection concluded it."""

    name: str
    reason: str
    message: str
    evidence: str


@dataclass(frozen=True, slots=True)
class Plan:
    """The next round: groups to test (none when done), suspects confirmed so far, nodes proven healthy."""

    round: int
    groups: tuple[Group, ...]
    suspects: tuple[Suspect, ...]
    healthy: tuple[str, ...]

    @property
    def done(self) -> bool:
        return not self.groups


def plan_round(outcomes: Sequence[Outcome], *, round_number: int, min_group_size: int,
               healthy: Iterable[str] = (), suspects: Iterable[Suspect] = ()) -> Plan:
    """The round after ``round_number`` from its outcomes, the healthy nodes and suspects known before."""
    if min_group_size < 1:
        raise InvalidInputError(f"--min-group-size {min_group_size}: give 1 or more")
    known = set(healthy)
    for outcome in outcomes:
        if outcome.passed:
            known.update(outcome.group.nodes)
    found = {suspect.name: suspect for suspect in suspects}
    pending: list[tuple[list[str], Outcome]] = []
    for outcome in outcomes:
        if outcome.passed:
            continue
        members = list(outcome.group.suspects)
        named = {row.name for row in outcome.failed}
        if named & set(members):
            # NVCRE named only some members (a node cordoned mid-run, a per-node test): the rest passed.
            known.update(node for node in members if node not in named)
            members = [node for node in members if node in named]
        pending.append(([node for node in members if node not in known and node not in found], outcome))
    pool = sorted(known)
    groups: list[Group] = []
    cursor = 0
    for members, outcome in pending:
        if len(members) == 1:
            found[members[0]] = _suspect(members[0], outcome, _alone(outcome.group))
            continue
        half = (len(members) + 1) // 2
        parts = [members[:half], members[half:]] if members else []
        if parts and max(min_group_size - len(part) for part in parts) > len(pool):
            evidence = (f"in a failing group of {len(members)} that cannot be split below minGroupSize "
                        f"{min_group_size}: no known-healthy node to pad with")
            found.update((node, _suspect(node, outcome, evidence)) for node in members)
            continue
        for part in parts:
            need = max(0, min_group_size - len(part))
            pads = tuple(pool[(cursor + j) % len(pool)] for j in range(need))
            cursor += need
            groups.append(Group(tuple(part) + pads, pads))
    return Plan(round=round_number + 1, groups=tuple(groups),
                suspects=tuple(found[name] for name in sorted(found)), healthy=tuple(sorted(known)))


def _alone(group: Group) -> str:
    if group.padding:
        return f"failed in a group whose other member(s) {', '.join(group.padding)} are known healthy"
    if len(group.nodes) == 1:
        return "failed on its own"
    return "the only member of a failing group not proven healthy"


def _suspect(node: str, outcome: Outcome, evidence: str) -> Suspect:
    row = next((r for r in outcome.failed if r.name == node), outcome.failed[0] if outcome.failed else None)
    if row is None:
        return Suspect(node, "GroupFailed", "", evidence)
    return Suspect(node, row.reason, row.message, evidence)


# ------------------------------------------------------------------------------------------------ simulation


@dataclass(frozen=True, slots=True)
class Simulation:
    """What a simulated bisection cost: rounds of Certifications (the first, whole group included),
    Certifications run in all, the most run in one round, and the suspects it ended with."""

    rounds: int
    tests: int
    widest: int
    suspects: tuple[str, ...]


def simulate(nodes: Sequence[str], bad: Iterable[str], min_group_size: int = 2) -> Simulation:
    """Bisect ``nodes`` with the oracle "a group passes iff it holds no bad node", as the CLI would
    over successive rounds (failed groups name every member, as NVCRE does for a failed multi-node job)."""
    broken = set(bad)

    def run(group: Group) -> Outcome:
        if broken.isdisjoint(group.nodes):
            return Outcome(group, passed=True)
        return Outcome(group, passed=False,
                       failed=tuple(FailedNode(node, "WorkloadFailed", "simulated") for node in group.nodes))

    plan = plan_round([run(Group(tuple(nodes)))], round_number=0, min_group_size=min_group_size)
    rounds, tests, widest = 1, 1, 1
    while not plan.done:
        rounds += 1
        tests += len(plan.groups)
        widest = max(widest, len(plan.groups))
        plan = plan_round([run(group) for group in plan.groups], round_number=plan.round,
                          min_group_size=min_group_size, healthy=plan.healthy, suspects=plan.suspects)
    return Simulation(rounds=rounds, tests=tests, widest=widest, suspects=tuple(s.name for s in plan.suspects))


# ------------------------------------------------------------------------------------------------ Certifications


@dataclass(frozen=True)
class Round:
    """A round read back from the cluster: its Certifications as outcomes, and what earlier rounds knew."""

    root: str
    """The first Certification's name."""
    number: int
    namespace: str
    outcomes: tuple[Outcome, ...]
    healthy: tuple[str, ...]
    suspects: tuple[Suspect, ...]
    template: Certification
    categories: tuple[Any, ...]
    """The spec.categories the next round runs: those that failed."""


def read_round(certs: Sequence[Certification]) -> Round:
    """Outcomes of a round: one failed Certification (round 0), or every Certification of a later round."""
    if not certs:
        raise InvalidInputError("--certification: the file holds no Certification")
    roots = sorted({cert.annotations.get(ANN_ROOT, cert.labels.get(LABEL_OF, "")) for cert in certs})
    numbers = sorted({cert.labels.get(LABEL_ROUND, "0") for cert in certs})
    if len(roots) > 1 or len(numbers) > 1:
        raise InvalidInputError(f"{certs[0].source}: the Certifications come from different bisections or rounds "
                                f"({', '.join(r or '(none)' for r in roots)}; rounds {', '.join(numbers)}); select one "
                                f"round with -l {LABEL_OF}=ROOT,{LABEL_ROUND}=N")
    if not roots[0] and len(certs) > 1:
        raise InvalidInputError(f"{certs[0].source}: {len(certs)} Certifications that no bisection made; give the "
                                "one failed Certification to start from")
    if not numbers[0].isdigit():
        raise InvalidInputError(f"{certs[0].source}: label {LABEL_ROUND}={numbers[0]!r} is not a round number")
    healthy: set[str] = set()
    suspects: dict[str, Suspect] = {}
    outcomes: list[Outcome] = []
    for cert in sorted(certs, key=lambda c: c.name):
        healthy.update(_annotation_nodes(cert, ANN_HEALTHY))
        for suspect in _annotation_suspects(cert):
            suspects.setdefault(suspect.name, suspect)
        healthy.update(cert.succeeded_nodes or ())
        outcomes.extend(_outcomes(cert))
    failed = [cert for cert in sorted(certs, key=lambda c: c.name) if cert.result()[0] != PASSED]
    template = failed[0] if failed else certs[0]
    return Round(root=roots[0] or template.name, number=int(numbers[0]), namespace=template.namespace,
                 outcomes=tuple(outcomes), healthy=tuple(sorted(healthy)),
                 suspects=tuple(suspects[name] for name in sorted(suspects)), template=template,
                 categories=_failed_categories(failed or [template]))


def _outcomes(cert: Certification) -> list[Outcome]:
    result = cert.result()[0]
    where = f"{cert.source}:{cert.line}: Certification {cert.name}"
    if result == RUNNING:
        raise InvalidInputError(f"{where} has not finished (no Succeeded or Failed condition); wait for it")
    padding = tuple(_annotation_nodes(cert, ANN_PADDING))
    rows = cert.failed_nodes
    nodes = cert.target_nodes
    if nodes is None:
        if result == PASSED:
            return []
        if not rows:
            raise InvalidInputError(f"{where} targets a node selector and no failed-nodes list names its nodes; "
                                    "give the ConfigMap its status.categoryStatuses[].failedNodesRef names, or a "
                                    "Certification with spec.target.nodeNames")
        nodes = tuple(row.name for row in rows)
    if result == PASSED:
        return [Outcome(Group(nodes, padding), passed=True)]
    if result == INCOMPLETE:
        return [Outcome(Group(nodes, padding), passed=False)]
    failing = [cat for cat in cert.categories if cat.status == "Failed"]
    if rows and failing and all(_per_node(cert, cat.domain, cat.variant) for cat in failing):
        named = {row.name for row in rows}
        outcomes = [Outcome(Group((row.name,)), passed=False, failed=(row,)) for row in rows]
        rest = tuple(node for node in nodes if node not in named)
        return outcomes + ([Outcome(Group(rest), passed=True)] if rest else [])
    return [Outcome(Group(nodes, padding), passed=False, failed=rows)]


def _per_node(cert: Certification, domain: str, variant: str) -> bool:
    if variant in PER_NODE_VARIANTS or domain == "diagnostics":
        return True
    for entry in cert.spec.get("categories") or []:
        if isinstance(entry, dict) and (entry.get("domain"), entry.get("variant")) == (domain, variant):
            options = entry.get("options") if isinstance(entry.get("options"), dict) else {}
            scale = (options or {}).get("testScale", cert.spec.get("testScale"))
            return bool(scale == "intra-node")
    return False


def _failed_categories(certs: Sequence[Certification]) -> tuple[Any, ...]:
    chosen: list[Any] = []
    for cert in certs:
        spec_categories = [c for c in cert.spec.get("categories") or [] if isinstance(c, dict)]
        failed_keys = {(cat.domain, cat.variant) for cat in cert.categories if cat.status == "Failed"}
        aligned = len(spec_categories) == len(cert.categories)
        for i, entry in enumerate(spec_categories):
            failed = (cert.categories[i].status == "Failed" if aligned
                      else (entry.get("domain"), entry.get("variant")) in failed_keys)
            if (failed or not failed_keys) and entry not in chosen:
                chosen.append(entry)
    return tuple(chosen)


def _annotation_nodes(cert: Certification, key: str) -> list[str]:
    value = cert.annotations.get(key, "")
    names = [part.strip() for part in value.split(",") if part.strip()]
    for name in names:
        if not NODE_NAME.match(name):
            raise InvalidInputError(f"{cert.source}: Certification {cert.name}: annotation {key}: {name[:60]!r} is "
                                    "not a node name")
    return names


def _annotation_suspects(cert: Certification) -> list[Suspect]:
    value = cert.annotations.get(ANN_SUSPECTS)
    if not value:
        return []
    where = f"{cert.source}: Certification {cert.name}: annotation {ANN_SUSPECTS}"
    try:
        data = json.loads(value)
    except ValueError:
        raise InvalidInputError(f"{where}: not JSON; it is written by aicr-gen bisect, do not edit it") from None
    if not isinstance(data, list):
        raise InvalidInputError(f"{where}: expected a JSON list")
    out = []
    for item in data:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not NODE_NAME.match(item["name"]):
            raise InvalidInputError(f"{where}: each entry needs a node name")
        texts = [item.get(key, "") for key in ("reason", "message", "evidence")]
        out.append(Suspect(item["name"], *(t if isinstance(t, str) else "" for t in texts)))
    return out


# ------------------------------------------------------------------------------------------------ output


def _label_value(name: str) -> str:
    if _LABEL_VALUE.match(name):
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[:54].rstrip('-.')}-{digest}"


def _prefix(label: str, pool: str | None, room: int = 40) -> str:
    """The generateName prefix of a round's Certifications: the root's name cut to ``room``, still holding
    the pool of a pool's Certification (``gpu-certification-gb200``), so each round says which pool it tests."""
    cut = label[:room].rstrip("-.")
    if not pool or f"-{pool}-" in f"-{cut}-":
        return cut
    return f"{label[:max(room - len(pool) - 1, 1)].rstrip('-.')}-{pool}"[:room].rstrip("-.")


def suspect_json(suspect: Suspect) -> dict[str, str]:
    return {"name": suspect.name, "reason": suspect.reason, "message": suspect.message,
            "evidence": suspect.evidence}


def certification(state: Round, plan: Plan, index: int, group: Group) -> dict[str, Any]:
    """The Certification that tests ``group`` in ``plan``'s round."""
    spec = dict(state.template.spec)
    target: dict[str, Any] = {"nodeNames": list(group.nodes)}
    old_target = spec.get("target")
    if isinstance(old_target, dict) and old_target.get("taintSelectors"):
        target["taintSelectors"] = old_target["taintSelectors"]
    rest = {key: value for key, value in spec.items() if key not in ("target", "categories")}
    annotations = {ANN_ROOT: state.root, ANN_HEALTHY: ",".join(plan.healthy[:HEALTHY_POOL])}
    if group.padding:
        annotations[ANN_PADDING] = ",".join(group.padding)
    if plan.suspects:
        annotations[ANN_SUSPECTS] = json.dumps([suspect_json(s) for s in plan.suspects], separators=(",", ":"))
    label = _label_value(state.root)
    pool = state.template.labels.get(POOL_LABEL)
    metadata: dict[str, Any] = {"generateName": f"{_prefix(label, pool)}-r{plan.round}-"}
    if state.namespace:
        metadata["namespace"] = state.namespace
    metadata["labels"] = {**MANAGED_BY, LABEL_OF: label, LABEL_ROUND: str(plan.round), LABEL_GROUP: str(index),
                          **({POOL_LABEL: pool} if pool else {})}
    metadata["annotations"] = annotations
    return {"apiVersion": API_VERSION, "kind": "Certification", "metadata": metadata,
            "spec": {"target": target, "categories": list(state.categories), **rest}}


def plan_json(state: Round, plan: Plan, min_group_size: int) -> dict[str, Any]:
    """The round as data (``bisect.json`` / ``suspects.json``)."""
    return {"root": state.root, "round": plan.round if not plan.done else state.number,
            "minGroupSize": min_group_size, "done": plan.done,
            "groups": [{"file": _group_file(i), "nodes": list(g.nodes), "suspects": list(g.suspects),
                        "padding": list(g.padding)} for i, g in enumerate(plan.groups, start=1)],
            "suspects": [suspect_json(s) for s in plan.suspects], "healthyNodes": len(plan.healthy)}


def _group_file(index: int) -> str:
    return f"certifications/group-{index:02d}.yaml"


def _nodes(nodes: Sequence[str], limit: int = 6) -> str:
    shown = ", ".join(nodes[:limit])
    return shown + (f" (+{len(nodes) - limit} more)" if len(nodes) > limit else "")


def plan_text(state: Round, plan: Plan, min_group_size: int, output: str) -> str:
    """What a user reads: the groups to test next and how to feed their results back, or the suspects."""
    lines: list[str] = []
    if plan.done:
        after = f"round {state.number}" if state.number else "the original Certification"
        lines.append(f"Bisection of {state.root} finished after {after}: {len(plan.suspects)} suspect "
                     f"node(s) (minGroupSize {min_group_size}, {len(plan.healthy)} node(s) proven healthy)")
    else:
        lines.append(f"Bisection of {state.root}, round {plan.round}: {len(plan.groups)} Certification(s) to run "
                     f"(minGroupSize {min_group_size}, {len(plan.healthy)} node(s) proven healthy)")
        for i, group in enumerate(plan.groups, start=1):
            pad = f"  padded with {', '.join(group.padding)}" if group.padding else ""
            lines.append(f"  {_group_file(i)}  {len(group.suspects)} suspect(s): {_nodes(group.suspects)}{pad}")
    if plan.suspects:
        lines.append("Suspects:" if plan.done else "Suspects confirmed so far:")
        width = max(len(s.name) for s in plan.suspects)
        for s in plan.suspects:
            message = f" ({s.message})" if s.message else ""
            lines.append(f"  {s.name:<{width}}  {s.reason}{message}: {s.evidence}")
    elif plan.done:
        lines.append("No suspect: every group passed.")
    if not plan.done:
        ns = f" -n {state.namespace}" if state.namespace else ""
        selector = f"{LABEL_OF}={_label_value(state.root)},{LABEL_ROUND}={plan.round}"
        lines += ["", "Next:",
                  f"  kubectl create -f {output}/certifications/",
                  "  # when they have finished:",
                  f"  kubectl get certifications{ns} -l {selector} -o yaml > round-{plan.round}.yaml",
                  f"  kubectl get configmaps{ns} -o yaml > round-{plan.round}-configmaps.yaml",
                  f"  aicr-gen bisect --certification round-{plan.round}.yaml --failed-nodes "
                  f"round-{plan.round}-configmaps.yaml --min-group-size {min_group_size} "
                  f"--output round-{plan.round + 1}"]
    return "\n".join(lines) + "\n"


def render(state: Round, plan: Plan, min_group_size: int, output: str) -> Bundle:
    """The bundle ``bisect`` writes: the next Certifications and the plan, or the final suspects."""
    from aicr_gen.yaml import dump, dump_json

    text = plan_text(state, plan, min_group_size, output)
    data = plan_json(state, plan, min_group_size)
    if plan.done:
        files = {"suspects.json": dump_json(data), "suspects.txt": text}
    else:
        files = {"bisect.json": dump_json(data), "README.txt": text}
        for i, group in enumerate(plan.groups, start=1):
            files[_group_file(i)] = dump(certification(state, plan, i, group))
    return Bundle({path: content.encode() for path, content in files.items()}).with_checksums()

