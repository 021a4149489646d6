"""``aicr-gen plan``'s value: what merging a change to ClusterSpecs would do to each cluster (pure: the trees and
policy findings in, a ``Plan`` out).

Per cluster it holds the change model (``change_model``: what ``review.compare`` finds between the tree committed
at the base and the tree the spec renders now, with the high-risk changes ``risks`` names), the spec's policy
results and what merging
sets off (post-change certification when the stack digest changes, a ValidationRequest to ask for when a
GPU-stack component changed under the lifecycle manager). The pydantic models are the JSON contract
(``aicr-gen schema plan``); ``plan_format`` renders them as Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from aicr_gen.gitops.review import changes as tree_changes
from aicr_gen.gitops.review import compare as review
from aicr_gen.gitops.review.model import (
    Changes,
    facts,
    grouped,
)
from aicr_gen.gitops.review.rendered import ApplicationChange, Review
from aicr_gen.gitops.review.risks import DRIVER_PREFIX
from aicr_gen.gitops.review.upgrade import UpgradeVerdict
from aicr_gen.modelcheck import Strict

API_VERSION = "aicr-gen.dev/v1alpha1"


class _Model(Strict, frozen=True):
    """A plan is a value: built once, copied (``model_copy``) to acknowledge a verdict."""


# Components whose change reaches the GPU nodes themselves: after one, the lifecycle manager should validate them.
GPU_STACK = ("gpu-operator", "network-operator", "nvidia-dra-driver-gpu", "nvsentinel")


class PolicyResult(_Model):
    """A policy finding (shipped policies/ and spec.policies) over the spec and its recipe."""

    policy: str = Field(description="Policy name")
    severity: Literal["error", "warning"] = Field(description="error: sync refuses the spec; warning: reported")
    path: str = Field(description="Where in the recipe or spec, e.g. recipe.componentRefs[gpu-operator].version")
    message: str = Field(description="Why")


class Effect(_Model):
    """Something merging sets off in the cluster, or that should follow it."""

    kind: Literal["post-change-certification", "validation-request", "driver-rollout"] = Field(
        description="post-change-certification: the stack digest changed, so the post-change certification runs "
                    "after the deployer applies the stack; validation-request: a GPU-stack component changed and "
                    "NVSentinel's lifecycle manager is on, so ask it to validate the nodes once rolled out; "
                    "driver-rollout: a GPU driver version changes, so the GPU operator replaces it node by node")
    text: str = Field(description="What happens and what to do, in one line")


class ClusterPlan(Changes):
    """One ClusterSpec: its tree at the base against the tree it renders now (its ``Changes``, and more)."""

    name: str = Field(description="metadata.name of the ClusterSpec")
    spec: str = Field(description="The ClusterSpec file, as given")
    path: str = Field(description="The managed folder in the repository (spec.repo.path)")
    new: bool = Field(description="Nothing is committed at the path at the base: everything is added")
    changed: bool = Field(description="Any file of the managed folder differs from the base")
    policies: list[PolicyResult] = Field(description="Every policy finding, errors first")
    onMerge: list[Effect] = Field(description="What merging sets off")
    applications: list[ApplicationChange] = Field(
        default_factory=list, description="Each Argo CD Application, Flux HelmRelease or Kustomization (or Helm "
                                          "release) whose rendered objects change, the biggest change first")
    upgrades: list[UpgradeVerdict] = Field(
        default_factory=list, description="Per component whose rendered objects change: safe, manual or blocked, "
                                          "with the reasons")


class ChangeGroup(_Model):
    """One change several clusters share (a fleet-wide bump, a value set in the fleet file)."""

    change: str = Field(description="The change, as each cluster lists it and the commit message says it "
                                    "(change_model.facts)")
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
    blocked: int = Field(default=0, description="Component upgrades judged blocked in all clusters (acknowledged "
                                                "ones included)")
    unacknowledged: int = Field(default=0, description="Blocked upgrades no --allow-blocked acknowledges: "
                                                       "--fail-on blocked exits 1 when this is not 0")
    manual: int = Field(default=0, description="Component upgrades judged manual in all clusters")


def plan(base: str, base_commit: str, clusters: Sequence[ClusterPlan], *,
         allow_blocked: Sequence[str] = ()) -> Plan:
    """The whole plan, with its totals; blocked upgrades of the components in ``allow_blocked`` (``*``: all) are
    acknowledged."""
    clusters = [acknowledged(cluster, allow_blocked) for cluster in clusters]
    shared = grouped([(cluster.name, facts(cluster)) for cluster in clusters])
    verdicts = [item for cluster in clusters for item in cluster.upgrades]
    return Plan(apiVersion=API_VERSION, kind="Plan", base=base, baseCommit=base_commit, clusters=list(clusters),
                changedClusters=sum(1 for cluster in clusters if cluster.changed),
                highRisk=sum(len(cluster.highRisk) for cluster in clusters),
                policyErrors=sum(1 for cluster in clusters for item in cluster.policies if item.severity == "error"),
                groups=[ChangeGroup(change=change, clusters=names) for change, names in shared if len(names) > 1],
                blocked=sum(1 for item in verdicts if item.verdict == "blocked"),
                unacknowledged=sum(1 for item in verdicts if item.verdict == "blocked" and not item.acknowledged),
                manual=sum(1 for item in verdicts if item.verdict == "manual"))


def acknowledged(cluster: ClusterPlan, allow_blocked: Sequence[str]) -> ClusterPlan:
    """``cluster`` with its blocked upgrades of the components in ``allow_blocked`` marked acknowledged."""
    if not allow_blocked or not any(item.verdict == "blocked" for item in cluster.upgrades):
        return cluster
    return cluster.model_copy(update={"upgrades": [
        item.model_copy(update={"acknowledged": True})
        if item.verdict == "blocked" and ("*" in allow_blocked or item.component in allow_blocked) else item
        for item in cluster.upgrades]})


def cluster_plan(name: str, spec: str, path: str, *, old: Mapping[str, bytes], new: Mapping[str, bytes],
                 findings: Sequence[Mapping[str, str]], objects: Review | None = None) -> ClusterPlan:
    """The plan of one cluster: ``old`` is its managed folder at the base (empty for a new cluster), ``new`` the
    tree its spec renders, ``findings`` its policy findings (policy, severity, path, message); with ``objects``,
    the rendered objects that change and the upgrade verdicts too."""
    found = review.compare(old, new)
    applications, upgrades = objects.review(old, new, path) if objects is not None and found.file_count else ([], [])
    policies = sorted((PolicyResult(**dict(item)) for item in findings),
                      key=lambda item: item.severity != "error")
    return ClusterPlan(**dict(found), name=name, spec=spec, path=path, new=not old, changed=found.file_count > 0,
                       policies=policies, onMerge=effects(found, old, new, path), applications=applications,
                       upgrades=upgrades)


def unchanged_plan(name: str, spec: str, path: str, findings: Sequence[Mapping[str, str]]) -> ClusterPlan:
    """The plan of a cluster whose tree at the base is what its spec renders (its inputs record says so):
    nothing changes; ``findings`` are its policy findings as the record keeps them."""
    policies = sorted((PolicyResult(**dict(item)) for item in findings), key=lambda item: item.severity != "error")
    return ClusterPlan(name=name, spec=spec, path=path, new=False, changed=False, policies=policies, onMerge=[])


def _gpu_stack_changed(found: Changes) -> list[str]:
    """The GPU-stack components whose version, place or values change, by name."""
    names = [item.name for item in found.components if item.name in GPU_STACK or item.name.startswith(DRIVER_PREFIX)]
    names += [value.component for value in found.values if value.component in GPU_STACK]
    return list(dict.fromkeys(names))


def effects(found: Changes, old: Mapping[str, bytes], new: Mapping[str, bytes],
            path: str) -> list[Effect]:
    """What merging sets off: the post-change certification when the stack digest changes, and a ValidationRequest
    to create once a GPU-stack change has rolled out under the lifecycle manager."""
    out: list[Effect] = [rollout] if (rollout := driver_rollout(found, new)) else []
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


def driver_rollout(found: Changes, new: Mapping[str, bytes]) -> Effect | None:
    """What a GPU driver version change does on the nodes: the GPU operator's upgrade controller replaces the
    driver node by node, ``maxParallelUpgrades`` at a time (``driver.upgradePolicy``, or the older
    ``driver.maxParallelUpgrades``; the chart's default is 1), draining each node's GPU pods first."""
    moves = [f"{item.name.removeprefix(DRIVER_PREFIX)} {item.oldVersion} -> {item.newVersion}"
             for item in found.components
             if item.name.startswith(DRIVER_PREFIX) and item.change in ("bumped", "downgraded", "changed")]
    moves += [f"cluster-wide {item.old} -> {item.new}" for item in found.values
              if item.component == "gpu-operator" and item.path == "driver.version" and item.change == "changed"]
    if not moves:
        return None
    files = tree_changes.value_files(new, tree_changes.values_folder(new, new), {"gpu-operator"})
    values = tree_changes.component_values(new, files["gpu-operator"], "gpu-operator") \
        if "gpu-operator" in files else {}
    driver = _mapping(values.get("driver"))
    parallel = _mapping(driver.get("upgradePolicy")).get("maxParallelUpgrades", driver.get("maxParallelUpgrades", 1))
    return Effect(kind="driver-rollout",
                  text=f"GPU driver {', '.join(moves)}: the GPU operator replaces the driver node by node, "
                       f"{parallel} at a time (driver.upgradePolicy.maxParallelUpgrades), evicting each node's GPU "
                       "pods first; every GPU node restarts its driver, so merge in a maintenance window")


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _short(digest: str | None) -> str:
    return (digest or "-").removeprefix("sha256:")[:12]
