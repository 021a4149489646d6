"""``aicr-gen plan``'s value: what merging a change to ClusterSpecs would do to each cluster (pure: the trees and
policy findings in, a ``Plan`` out).

Per cluster it holds what ``changes.compare`` finds between the tree committed at the base and the tree the spec
renders now, the spec's policy results, the high-risk changes a reviewer must see first (GPU driver and operator,
network operator, kernel/OS constraints, NVSentinel starting to act, certification loosened) and what merging
sets off (post-change certification when the stack digest changes, a ValidationRequest to ask for when a
GPU-stack component changed under the lifecycle manager). The pydantic models are the JSON contract
(``aicr-gen schema plan``); ``plan_format`` renders them as Markdown.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from aicr_gen.gitops import changes as tree_changes

API_VERSION = "aicr-gen.dev/v1alpha1"
# Components whose change reaches the GPU nodes themselves: after one, the lifecycle manager should validate them.
GPU_STACK = ("gpu-operator", "network-operator", "nvidia-dra-driver-gpu", "nvsentinel")
RISKY_COMPONENTS = {"gpu-operator": "gpu-operator", "network-operator": "network-operator",
                    "nvidia-dra-driver-gpu": "gpu-driver"}
DRIVER_PREFIX = "NVIDIADriver/"
"""How a pool's NVIDIADriver is named among the component changes (``gitops.changes``)."""
RISK_ORDER = ("gpu-driver", "gpu-operator", "network-operator", "os-constraint", "nvsentinel", "certification")
_DRIVER = re.compile(r"driver", re.IGNORECASE)
_KERNEL = re.compile(r"^OS\.|kernel", re.IGNORECASE)
_NUMBER = r"(-?\d+(?:\.\d+)?)"
_LOWER_FIRST = re.compile(rf"^\s*value\s*(>=|>|<=|<)\s*{_NUMBER}\s*\Z")
_NUMBER_FIRST = re.compile(rf"^\s*{_NUMBER}\s*(<=|<|>=|>)\s*value\s*\Z")
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<="}

Risk = Literal["gpu-driver", "gpu-operator", "network-operator", "os-constraint", "nvsentinel", "certification"]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ComponentChange(_Model):
    """A component added, removed, bumped (version) or changed (namespace, source or chart)."""

    name: str = Field(description="Component name (recipe componentRefs[].name)")
    change: Literal["added", "removed", "bumped", "changed"] = Field(description="What happened to it")
    oldVersion: str | None = Field(description="Chart version at the base; null when added")
    newVersion: str | None = Field(description="Chart version after the merge; null when removed")
    details: list[str] = Field(description="Namespace, source or chart changes, e.g. 'namespace a -> b'")
    text: str = Field(description="One line for a reviewer, e.g. 'bumped gpu-operator v26.3.3 -> v26.4.0'")


class ValueChange(_Model):
    """One Helm value of a component present at both sides, by key path."""

    component: str = Field(description="Component name")
    path: str = Field(description="Key path in the component's values, e.g. driver.version or env[0].name")
    change: Literal["added", "removed", "changed"] = Field(description="What happened to the value")
    old: str | None = Field(description="The value at the base (JSON unless a plain word); null when added")
    new: str | None = Field(description="The value after the merge; null when removed")
    redacted: bool = Field(description="The key looks secret (password, token, key, cert, auth...): values "
                                       "are shown as <redacted>")
    text: str = Field(description="One line, e.g. 'gpu-operator: driver.version 580.1 -> 590.2'")


class ConstraintChange(_Model):
    """A recipe constraint (constraints[].name) added, removed or changed."""

    name: str = Field(description="Constraint name, e.g. OS.sysctl./proc/sys/kernel/osrelease")
    old: str | None = Field(description="The constraint at the base; null when added")
    new: str | None = Field(description="The constraint after the merge; null when removed")
    text: str = Field(description="One line for a reviewer")


class PolicyResult(_Model):
    """A policy finding (shipped policies/ and spec.policies) over the spec and its recipe."""

    policy: str = Field(description="Policy name")
    severity: Literal["error", "warning"] = Field(description="error: sync refuses the spec; warning: reported")
    path: str = Field(description="Where in the recipe or spec, e.g. recipe.componentRefs[gpu-operator].version")
    message: str = Field(description="Why")


class HighRisk(_Model):
    """A change a reviewer should look at before anything else."""

    category: Risk = Field(description="gpu-driver, gpu-operator, network-operator, os-constraint (kernel or OS "
                                       "constraint), nvsentinel (starts acting on nodes) or certification "
                                       "(loosened or removed)")
    text: str = Field(description="The change, in one line")


class Effect(_Model):
    """Something merging sets off in the cluster, or that should follow it."""

    kind: Literal["post-change-certification", "validation-request"] = Field(
        description="post-change-certification: the stack digest changed, so the post-change certification runs "
                    "after the deployer applies the stack; validation-request: a GPU-stack component changed and "
                    "NVSentinel's lifecycle manager is on, so ask it to validate the nodes once rolled out")
    text: str = Field(description="What happens and what to do, in one line")


class FileChanges(_Model):
    """Files of the managed folder, relative to it."""

    added: list[str] = Field(description="Files the base does not have")
    changed: list[str] = Field(description="Files whose content changes")
    removed: list[str] = Field(description="Files the merge deletes")


class ClusterPlan(_Model):
    """One ClusterSpec: its tree at the base against the tree it renders now."""

    name: str = Field(description="metadata.name of the ClusterSpec")
    spec: str = Field(description="The ClusterSpec file, as given")
    path: str = Field(description="The managed folder in the repository (spec.repo.path)")
    new: bool = Field(description="Nothing is committed at the path at the base: everything is added")
    changed: bool = Field(description="Any file of the managed folder differs from the base")
    highRisk: list[HighRisk] = Field(description="High-risk changes, most serious category first")
    components: list[ComponentChange] = Field(description="Components added, removed, bumped or changed")
    values: list[ValueChange] = Field(description="Values changed per component present at both sides (an added "
                                                  "or removed component's values are its files)")
    constraints: list[ConstraintChange] = Field(description="Recipe constraints (kernel, OS, Kubernetes) changed")
    sentinel: list[str] = Field(description="NVSentinel changes: mode, dry run, lifecycle manager, validation, "
                                            "rule sets, circuit breaker")
    certification: list[str] = Field(description="Certification changes: categories, thresholds old -> new, "
                                                 "schedule, post-change")
    policies: list[PolicyResult] = Field(description="Every policy finding, errors first")
    files: FileChanges = Field(description="Files added, changed and removed")
    onMerge: list[Effect] = Field(description="What merging sets off")


class ChangeGroup(_Model):
    """One change several clusters share (a fleet-wide bump, a value set in the fleet file)."""

    change: str = Field(description="The change, as each cluster lists it (a component, value or constraint line)")
    clusters: list[str] = Field(description="The clusters it is in (metadata.name), in the order given")


class Plan(_Model):
    """What merging would change: each ClusterSpec rendered as ``aicr-gen sync`` would, against a base commit."""

    apiVersion: Literal["aicr-gen.dev/v1alpha1"] = Field(description=f"Always {API_VERSION}")
    kind: Literal["Plan"] = Field(description="Always Plan")
    base: str = Field(description="The base as given (--base, default HEAD)")
    baseCommit: str = Field(description="The commit the base names")
    clusters: list[ClusterPlan] = Field(description="One entry per ClusterSpec, in the order given")
    changedClusters: int = Field(description="Clusters whose managed folder changes")
    highRisk: int = Field(description="High-risk changes in all clusters")
    policyErrors: int = Field(description="Policy findings of severity error in all clusters")
    groups: list[ChangeGroup] = Field(description="Each change two or more clusters share, once with the clusters "
                                                  "it is in, the most widespread first (per-cluster detail stays "
                                                  "in clusters)")


def plan(base: str, base_commit: str, clusters: Sequence[ClusterPlan]) -> Plan:
    """The whole plan, with its totals."""
    shared = tree_changes.grouped([(cluster.name, [*(item.text for item in cluster.components),
                                                   *(item.text for item in cluster.values),
                                                   *(item.text for item in cluster.constraints)])
                                   for cluster in clusters])
    return Plan(apiVersion=API_VERSION, kind="Plan", base=base, baseCommit=base_commit, clusters=list(clusters),
                changedClusters=sum(1 for cluster in clusters if cluster.changed),
                highRisk=sum(len(cluster.highRisk) for cluster in clusters),
                policyErrors=sum(1 for cluster in clusters for item in cluster.policies if item.severity == "error"),
                groups=[ChangeGroup(change=change, clusters=names) for change, names in shared if len(names) > 1])


def cluster_plan(name: str, spec: str, path: str, *, old: Mapping[str, bytes], new: Mapping[str, bytes],
                 findings: Sequence[Mapping[str, str]]) -> ClusterPlan:
    """The plan of one cluster: ``old`` is its managed folder at the base (empty for a new cluster), ``new`` the
    tree its spec renders, ``findings`` its policy findings (policy, severity, path, message)."""
    found = tree_changes.compare(old, new)
    components = [ComponentChange(name=item.name, change=item.kind,
                                  oldVersion=item.old_version or None, newVersion=item.new_version or None,
                                  details=list(item.details), text=item.describe()) for item in found.components]
    values = [ValueChange(component=item.component, path=item.path, change=item.kind,
                          old=item.old, new=item.new, redacted=item.redacted, text=item.describe())
              for item in found.values]
    constraints = [ConstraintChange(name=item.name, old=item.old, new=item.new, text=item.describe())
                   for item in found.constraints]
    policies = sorted((PolicyResult(**dict(item)) for item in findings),
                      key=lambda item: item.severity != "error")
    return ClusterPlan(name=name, spec=spec, path=path, new=not old, changed=found.files > 0,
                       highRisk=high_risk(found, old, new), components=components, values=values,
                       constraints=constraints, sentinel=found.sentinel, certification=found.certification,
                       policies=policies,
                       files=FileChanges(added=found.added, changed=found.changed, removed=found.removed),
                       onMerge=effects(found, old, new, path))


def unchanged_plan(name: str, spec: str, path: str, findings: Sequence[Mapping[str, str]]) -> ClusterPlan:
    """The plan of a cluster whose tree at the base is what its spec renders (its inputs record says so):
    nothing changes; ``findings`` are its policy findings as the record keeps them."""
    policies = sorted((PolicyResult(**dict(item)) for item in findings), key=lambda item: item.severity != "error")
    return ClusterPlan(name=name, spec=spec, path=path, new=False, changed=False, highRisk=[], components=[],
                       values=[], constraints=[], sentinel=[], certification=[], policies=policies,
                       files=FileChanges(added=[], changed=[], removed=[]), onMerge=[])


def _bound(expression: str) -> tuple[str, float] | None:
    """``value OP NUMBER`` (or ``NUMBER OP value``) as (OP, NUMBER) with value on the left; else None."""
    match = _LOWER_FIRST.match(expression)
    if match:
        return match.group(1), float(match.group(2))
    match = _NUMBER_FIRST.match(expression)
    return (_FLIP[match.group(2)], float(match.group(1))) if match else None


def loosened(old: str, new: str) -> bool | None:
    """Whether threshold ``new`` accepts more than ``old``: True, False, or None when it cannot be told (not both
    one bound of ``value`` in the same direction)."""
    was, now = _bound(old), _bound(new)
    if was is None or now is None or was[0][0] != now[0][0]:
        return None
    if was[1] != now[1]:
        return now[1] < was[1] if was[0][0] == ">" else now[1] > was[1]
    return len(now[0]) > len(was[0])  # > -> >= (or < -> <=) admits the bound itself


def _certification_risks(old: Mapping[str, bytes], new: Mapping[str, bytes],
                         lines: Sequence[str]) -> list[HighRisk]:
    """Certification that accepts more than before: a threshold loosened or removed (or changed in a way that
    cannot be compared), a category or the post-change run removed, certification removed."""
    out = [HighRisk(category="certification", text=line) for line in lines
           if line in ("certification removed", "post-change certification off")
           or line.startswith("category removed: ")]
    if tree_changes.CERTIFICATION not in new:
        return out
    before, after = tree_changes.thresholds(old), tree_changes.thresholds(new)
    for key in sorted(before):
        if key not in after:
            out.append(HighRisk(category="certification", text=f"threshold {key} removed (was {before[key]})"))
        elif before[key] != after[key]:
            looser = loosened(before[key], after[key])
            if looser is not False:
                verdict = "loosened" if looser else "changed (check it is not looser)"
                out.append(HighRisk(category="certification",
                                    text=f"threshold {key} {verdict}: {before[key]} -> {after[key]}"))
    return out


def _sentinel_risks(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[HighRisk]:
    """NVSentinel starting to act on nodes: leaving monitor mode (or deployed in quarantine mode), or dry run
    turned off in quarantine mode."""
    was, now = tree_changes.sentinel_mode(old), tree_changes.sentinel_mode(new)
    if now != "quarantine":
        return []
    if was != "quarantine":
        start = "deployed in quarantine mode" if was is None else "leaves monitor mode: monitor -> quarantine"
        when = " once dry run is off" if tree_changes.sentinel_switch(new, "dryRun") else ""
        return [HighRisk(category="nvsentinel", text=f"NVSentinel {start} (it cordons and taints faulty nodes{when})")]
    if tree_changes.sentinel_switch(old, "dryRun") and not tree_changes.sentinel_switch(new, "dryRun"):
        return [HighRisk(category="nvsentinel", text="NVSentinel dry run off: quarantine actions are now taken")]
    return []


def _risk_of(component: str) -> str:
    """The high-risk category of a component change ("" when none): a pool's NVIDIADriver (``NVIDIADriver/<pool>``)
    replaces that pool's GPU driver, as a driver change of the GPU Operator's values does."""
    return "gpu-driver" if component.startswith(DRIVER_PREFIX) else RISKY_COMPONENTS.get(component, "")


def high_risk(found: tree_changes.Changes, old: Mapping[str, bytes], new: Mapping[str, bytes]) -> list[HighRisk]:
    """The changes to look at first, most serious category first (``RISK_ORDER``)."""
    out = [HighRisk(category=_risk_of(item.name), text=item.describe())
           for item in found.components if _risk_of(item.name)]
    for value in found.values:
        category = RISKY_COMPONENTS.get(value.component)
        if category:
            category = "gpu-driver" if _DRIVER.search(value.path) else category
            out.append(HighRisk(category=category, text=value.describe()))
    out += [HighRisk(category="os-constraint", text=item.describe()) for item in found.constraints
            if _KERNEL.search(item.name)]
    out += _sentinel_risks(old, new)
    out += _certification_risks(old, new, found.certification)
    return sorted(out, key=lambda risk: RISK_ORDER.index(risk.category))


def _gpu_stack_changed(found: tree_changes.Changes) -> list[str]:
    """The GPU-stack components whose version, place or values change, by name."""
    names = [item.name for item in found.components if item.name in GPU_STACK or item.name.startswith(DRIVER_PREFIX)]
    names += [value.component for value in found.values if value.component in GPU_STACK]
    return list(dict.fromkeys(names))


def effects(found: tree_changes.Changes, old: Mapping[str, bytes], new: Mapping[str, bytes],
            path: str) -> list[Effect]:
    """What merging sets off: the post-change certification when the stack digest changes, and a ValidationRequest
    to create once a GPU-stack change has rolled out under the lifecycle manager."""
    out: list[Effect] = []
    was, now = tree_changes.stack_digest(old), tree_changes.stack_digest(new)
    if now is not None and now != was:
        since = f"stack digest {_short(was)} -> {_short(now)}" if was else "first post-change run"
        out.append(Effect(kind="post-change-certification",
                          text=f"post-change certification runs once the deployer has applied the stack ({since}); "
                               f"see {path}/certification/README.md"))
    touched = _gpu_stack_changed(found)
    if touched and tree_changes.sentinel_switch(new, "lifecycleManager"):
        out.append(Effect(kind="validation-request",
                          text=f"{', '.join(touched)} changed under NVSentinel's lifecycle manager: after the rollout, "
                               f"have it validate the GPU nodes with a ValidationRequest ('aicr-gen validation-request "
                               f"--node NODE... --values {path}/sentinel/values.yaml', or fill in "
                               f"{path}/validation/validation-request.yaml)"))
    return out


def _short(digest: str | None) -> str:
    return (digest or "-").removeprefix("sha256:")[:12]
