"""Which rendered objects Argo CD and Flux's helm-controller treat as hooks, when each runs and when it is deleted.

Pure functions over rendered objects: ``converge.py`` applies the plans they return. Each rule names its source,
read at these revisions:

- Argo CD: argoproj/argo-cd 37ee009 (gitops-engine lives in its ``gitops-engine/`` folder since v3), and the user
  guide pages https://argo-cd.readthedocs.io/en/latest/user-guide/helm/#helm-hooks and
  https://argo-cd.readthedocs.io/en/latest/user-guide/sync-waves/;
- Helm: helm/helm e9b85e4 (Helm 4, which helm-controller runs: fluxcd/helm-controller 0f61a86 requires
  helm.sh/helm/v4 v4.2.1); https://helm.sh/docs/topics/charts_hooks/.

What no API server can tell us is emulated: a hook "succeeds" when the API server accepts it (no kubelet runs a
Job or Pod here), so a hook fails only when it is refused.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

ARGOCD_HOOK = "argocd.argoproj.io/hook"
ARGOCD_HOOK_DELETE_POLICY = "argocd.argoproj.io/hook-delete-policy"
ARGOCD_SYNC_WAVE = "argocd.argoproj.io/sync-wave"
HELM_HOOK = "helm.sh/hook"
HELM_HOOK_WEIGHT = "helm.sh/hook-weight"
HELM_HOOK_DELETE_POLICY = "helm.sh/hook-delete-policy"

BEFORE_HOOK_CREATION = "BeforeHookCreation"
HOOK_SUCCEEDED = "HookSucceeded"
HOOK_FAILED = "HookFailed"


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return (obj.get("metadata") or {}).get("annotations") or {}


def _csv(obj: Mapping[str, Any], key: str) -> list[str]:
    """An annotation's comma-separated values, trimmed, empty ones and repeats dropped (gitops-engine
    pkg/sync/resource/annotations.go GetAnnotationCSVs; Helm's manifest_sorter.go operateAnnotationValues also
    trims)."""
    values: list[str] = []
    for item in str(_annotations(obj).get(key, "")).split(","):
        if item.strip() and item.strip() not in values:
            values.append(item.strip())
    return values


def _atoi(text: str | None) -> int:
    """Go's strconv.Atoi, 0 when it fails: both controllers read waves and weights this way."""
    return int(text) if text is not None and re.fullmatch(r"[+-]?\d+", text) else 0


# ------------------------------------------------------------------------------------------ Argo CD

ARGOCD_PHASES = ("PreSync", "Sync", "PostSync", "SyncFail")
"""Sync phases in the order a sync runs them (gitops-engine pkg/sync/sync_tasks.go syncPhaseOrder); SyncFail
runs only once a sync has failed (sync_context.go executeSyncFailPhase)."""

_ARGOCD_TYPES = ("PreSync", "Sync", "PostSync", "SyncFail", "Skip")
"""The hook types gitops-engine knows (pkg/sync/common/types.go NewHookType); others are ignored."""

_HELM_TO_ARGOCD = {"pre-install": "PreSync", "pre-upgrade": "PreSync", "post-install": "PostSync",
                   "post-upgrade": "PostSync"}
"""Helm hooks as Argo CD hook types (gitops-engine pkg/sync/hook/helm/type.go hookTypes). Every other Helm hook
(test, test-success, pre-/post-rollback, ...) maps to nothing: still a hook, so never a managed resource, and with
no phase, so never applied (pkg/sync/ignore/ignore.go Ignore; helm.md: "Unsupported hooks are ignored")."""

_HELM_DELETE_TO_ARGOCD = {"before-hook-creation": BEFORE_HOOK_CREATION, "hook-succeeded": HOOK_SUCCEEDED,
                          "hook-failed": HOOK_FAILED}
"""gitops-engine pkg/sync/hook/helm/delete_policy.go hookDeletePolicies."""

_DELETE_HOOKS = {"PreDelete": "pre-delete", "PostDelete": "post-delete"}
"""Hooks that run only when the Application is deleted, never on a sync, written either way (argo-cd
controller/hook.go hookTypeAnnotations; sync-waves.md "PreDelete ... not during normal sync operations")."""

ARGOCD_KIND_ORDER = ("Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
                     "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
                     "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
                     "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList",
                     "RoleBinding", "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController",
                     "ReplicaSet", "Deployment", "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob",
                     "IngressClass", "Ingress", "APIService")
"""Inside one phase and wave, kinds in this order and every other kind after them (gitops-engine
pkg/sync/sync_tasks.go kindOrder, copied there from Helm's kind_sorter.go)."""


def argocd_types(obj: Mapping[str, Any]) -> list[str]:
    """The hook types of an object: its own ``argocd.argoproj.io/hook`` values, and only when it has none of those
    its Helm hooks mapped (gitops-engine pkg/sync/hook/hook.go Types: "we ignore Helm hooks if we have Argo
    hook")."""
    types = [value for value in _csv(obj, ARGOCD_HOOK) if value in _ARGOCD_TYPES]
    return types or [_HELM_TO_ARGOCD[value] for value in _csv(obj, HELM_HOOK) if value in _HELM_TO_ARGOCD]


def _only_skip(obj: Mapping[str, Any]) -> bool:
    """gitops-engine pkg/sync/hook/hook.go Skip: ``Skip`` and no other type."""
    return argocd_types(obj) == ["Skip"]


def argocd_is_hook(obj: Mapping[str, Any]) -> bool:
    """A hook is not one of the Application's resources: it does not count for its sync status and is created only
    while a sync runs (argo-cd controller/state.go CompareAppState leaves hooks out of the sync status;
    gitops-engine pkg/sync/sync_context.go getSyncTasks skips hooks among the managed resources).

    An object with ``argocd.argoproj.io/hook`` is a hook unless that says only ``Skip``; else one with
    ``helm.sh/hook`` other than ``crd-install`` (gitops-engine pkg/sync/hook/hook.go IsHook, helm/hook.go IsHook:
    "Helm use the same annotation to identify CRD as hooks, but they are not"); else a PreDelete or PostDelete hook
    (argo-cd controller/hook.go isHook)."""
    annotations = _annotations(obj)
    if ARGOCD_HOOK in annotations:
        return not _only_skip(obj)
    if HELM_HOOK in annotations and annotations[HELM_HOOK] != "crd-install":
        return True
    return any(value in _csv(obj, ARGOCD_HOOK) or helm in _csv(obj, HELM_HOOK)
               for value, helm in _DELETE_HOOKS.items())


def argocd_phases(obj: Mapping[str, Any]) -> list[str]:
    """The phases a sync applies an object in: a resource in Sync; a hook in each sync phase among its types, so a
    hook of two types runs twice; ``Skip`` alone in none (gitops-engine pkg/sync/sync_phase.go syncPhases)."""
    if _only_skip(obj):
        return []
    if not argocd_is_hook(obj):
        return ["Sync"]
    types = argocd_types(obj)
    return [phase for phase in ARGOCD_PHASES if phase in types]


def argocd_wave(obj: Mapping[str, Any]) -> int:
    """``argocd.argoproj.io/sync-wave``, else ``helm.sh/hook-weight``, else 0, for hooks and resources alike
    (gitops-engine pkg/sync/syncwaves/waves.go Wave, helm/weight.go Weight)."""
    annotations = _annotations(obj)
    if ARGOCD_SYNC_WAVE in annotations and re.fullmatch(r"[+-]?\d+", str(annotations[ARGOCD_SYNC_WAVE])):
        return int(annotations[ARGOCD_SYNC_WAVE])
    return _atoi(annotations.get(HELM_HOOK_WEIGHT))


def argocd_delete_policies(obj: Mapping[str, Any]) -> frozenset[str]:
    """Both annotations' policies together, ``BeforeHookCreation`` when neither names one (gitops-engine
    pkg/sync/hook/delete_policy.go DeletePolicies; sync-waves.md "if no deletion policy is specified, Argo CD will
    automatically assume BeforeHookCreation")."""
    policies = {value for value in _csv(obj, ARGOCD_HOOK_DELETE_POLICY)
                if value in (BEFORE_HOOK_CREATION, HOOK_SUCCEEDED, HOOK_FAILED)}
    policies |= {_HELM_DELETE_TO_ARGOCD[value] for value in _csv(obj, HELM_HOOK_DELETE_POLICY)
                 if value in _HELM_DELETE_TO_ARGOCD}
    return frozenset(policies or {BEFORE_HOOK_CREATION})


@dataclass(frozen=True)
class Task:
    """One object applied in one phase and wave of a sync."""

    phase: str
    wave: int
    obj: dict[str, Any]
    hook: bool
    delete: frozenset[str]
    rendered: int
    """``id()`` of the rendered object: a hook's task applies a copy of it."""


@dataclass
class SyncPlan:
    """What one sync of an Application does with the objects its sources render."""

    tasks: list[Task] = field(default_factory=list)
    """PreSync, Sync and PostSync tasks in the order they run."""
    on_failure: list[Task] = field(default_factory=list)
    """SyncFail hooks: run only when the sync fails."""
    resources: list[dict[str, Any]] = field(default_factory=list)
    """The Application's managed resources (everything that is not a hook)."""
    hooks: list[dict[str, Any]] = field(default_factory=list)
    """Every hook, whether a sync runs it or not."""
    never: list[tuple[dict[str, Any], str]] = field(default_factory=list)
    """Objects no sync applies, with why."""


def _kind_rank(order: tuple[str, ...], kind: str) -> int:
    return order.index(kind) if kind in order else len(order)


def _why_never(obj: Mapping[str, Any]) -> str:
    if any(value in _csv(obj, ARGOCD_HOOK) or helm in _csv(obj, HELM_HOOK) for value, helm in _DELETE_HOOKS.items()):
        return "a PreDelete or PostDelete hook: runs only when the Application is deleted"
    named = _annotations(obj).get(ARGOCD_HOOK) or _annotations(obj).get(HELM_HOOK)
    return f"a hook of no sync phase ({named}): Argo CD ignores it"


def hook_target(obj: Mapping[str, Any], phase: str, revision: str, started: int) -> dict[str, Any]:
    """The object a hook task applies: a copy per phase, named ``generateName`` + revision, phase and start time
    when it has only a ``generateName`` (gitops-engine pkg/sync/sync_context.go getSyncTasks: "Hook resources names
    are deterministic")."""
    target = copy.deepcopy(dict(obj))
    meta = target.setdefault("metadata", {})
    if not meta.get("name") and meta.get("generateName"):
        meta["name"] = f"{meta['generateName']}{revision[:7]}-{phase}-{started}".lower()
    return target


def argocd_plan(objects: Iterable[dict[str, Any]], revision: str = "0000000", started: int = 0) -> SyncPlan:
    """One task per object and phase, sorted by phase, wave, kind, name (gitops-engine pkg/sync/sync_tasks.go
    Less; sync-waves.md "Combining Sync waves and hooks")."""
    plan = SyncPlan()
    for obj in objects:
        if _only_skip(obj):
            plan.never.append((obj, "argocd.argoproj.io/hook: Skip"))
            continue
        hook = argocd_is_hook(obj)
        (plan.hooks if hook else plan.resources).append(obj)
        phases = argocd_phases(obj)
        if not phases:
            plan.never.append((obj, _why_never(obj)))
        for phase in phases:
            target = hook_target(obj, phase, revision, started) if hook else obj
            task = Task(phase, argocd_wave(obj), target, hook, argocd_delete_policies(obj) if hook else frozenset(),
                        id(obj))
            (plan.on_failure if phase == "SyncFail" else plan.tasks).append(task)

    def key(task: Task) -> tuple[int, int, int, str]:
        meta = task.obj.get("metadata") or {}
        return (ARGOCD_PHASES.index(task.phase), task.wave,
                _kind_rank(ARGOCD_KIND_ORDER, str(task.obj.get("kind"))), str(meta.get("name")))
    plan.tasks.sort(key=key)
    plan.on_failure.sort(key=key)
    return plan


def waves(tasks: list[Task]) -> list[list[Task]]:
    """Consecutive tasks of the same phase and wave: a sync applies one such group, and goes on to the next only when
    all of it succeeded (gitops-engine pkg/sync/sync_context.go Sync: "Filtering tasks in correct phase and wave";
    sync-waves.md "How phases work?")."""
    groups: list[list[Task]] = []
    for task in tasks:
        if groups and (groups[-1][0].phase, groups[-1][0].wave) == (task.phase, task.wave):
            groups[-1].append(task)
        else:
            groups.append([task])
    return groups


# ------------------------------------------------------------------------------------------ Helm (Flux)

HELM_EVENTS = {"pre-install": "pre-install", "post-install": "post-install", "pre-delete": "pre-delete",
               "post-delete": "post-delete", "pre-upgrade": "pre-upgrade", "post-upgrade": "post-upgrade",
               "pre-rollback": "pre-rollback", "post-rollback": "post-rollback", "test": "test",
               "test-success": "test"}
"""The hook events Helm knows, ``test-success`` being Helm 2's name for ``test`` (helm pkg/release/v1/util/
manifest_sorter.go events). An object naming any other (``crd-install`` too) is dropped: neither hook nor release
object ("skipping unknown hooks", manifestFile.sort)."""

HELM_INSTALL_ORDER = ("PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange",
                      "PodSecurityPolicy", "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList",
                      "ConfigMap", "StorageClass", "PersistentVolume", "PersistentVolumeClaim",
                      "CustomResourceDefinition", "ClusterRole", "ClusterRoleList", "ClusterRoleBinding",
                      "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding", "RoleBindingList", "Service",
                      "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
                      "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress",
                      "APIService", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
"""helm pkg/release/v1/util/kind_sorter.go InstallOrder."""


def helm_kind_sorted(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Known kinds in install order, then the others by kind name, the rendered order kept within a kind (helm
    kind_sorter.go lessByKind, a stable sort)."""
    def key(obj: dict[str, Any]) -> tuple[int, str]:
        kind = str(obj.get("kind"))
        rank = _kind_rank(HELM_INSTALL_ORDER, kind)
        return (rank, kind if rank == len(HELM_INSTALL_ORDER) else "")
    return sorted(objects, key=key)


@dataclass(frozen=True)
class HelmHook:
    """A hook of a Helm release."""

    obj: dict[str, Any]
    events: tuple[str, ...]
    weight: int
    delete: frozenset[str]


@dataclass
class HelmRelease:
    """A rendered chart as Helm splits it: the release's objects (the only ones it tracks, diffs and uninstalls)
    and its hooks, which run at their events and are no part of the release manifest."""

    manifests: list[dict[str, Any]] = field(default_factory=list)
    hooks: list[HelmHook] = field(default_factory=list)
    dropped: list[tuple[dict[str, Any], str]] = field(default_factory=list)


def helm_release(objects: Iterable[dict[str, Any]]) -> HelmRelease:
    """helm pkg/release/v1/util/manifest_sorter.go SortManifests: an object with ``helm.sh/hook`` is a hook of the
    (lower-cased, trimmed) events it names, weighted by ``helm.sh/hook-weight`` (0 when absent or not a number,
    calculateHookWeight), with the delete policies of ``helm.sh/hook-delete-policy``; every other object is part
    of the release."""
    release = HelmRelease()
    for obj in objects:
        if HELM_HOOK not in _annotations(obj):
            release.manifests.append(obj)
            continue
        names = [value.lower() for value in _csv(obj, HELM_HOOK)]
        unknown = [name for name in names if name not in HELM_EVENTS]
        if unknown or not names:
            release.dropped.append((obj, f"unknown Helm hook {', '.join(unknown) or '(empty)'}, skipped by Helm"))
            continue
        events = tuple(dict.fromkeys(HELM_EVENTS[name] for name in names))
        policies = frozenset(value.lower() for value in _csv(obj, HELM_HOOK_DELETE_POLICY))
        release.hooks.append(HelmHook(obj, events, _atoi(_annotations(obj).get(HELM_HOOK_WEIGHT)), policies))
    return release


def helm_hooks(release: HelmRelease, event: str) -> list[HelmHook]:
    """The hooks of one event in the order Helm runs them: kind order first (the release's hooks come sorted so,
    sortHooksByKind), then a stable sort by weight and name (helm pkg/action/hooks.go execHookWithDelayedShutdown,
    hookByWeight)."""
    chosen = [hook for hook in release.hooks if event in hook.events]
    by_kind = sorted(chosen, key=lambda hook: _kind_rank(HELM_INSTALL_ORDER, str(hook.obj.get("kind"))))
    return sorted(by_kind, key=lambda hook: (hook.weight, str((hook.obj.get("metadata") or {}).get("name"))))


def helm_delete_policies(hook: HelmHook) -> frozenset[str]:
    """``before-hook-creation`` when a hook names none (helm pkg/action/hooks.go hookSetDeletePolicy; charts_hooks
    docs: "If no hook deletion policy annotation is specified, the before-hook-creation behavior applies by
    default"); a CustomResourceDefinition hook is never deleted (hooks.go deleteHookByPolicy)."""
    if hook.obj.get("kind") == "CustomResourceDefinition":
        return frozenset()
    return hook.delete or frozenset({"before-hook-creation"})


def helm_test_filter(hooks: list[HelmHook], filters: Iterable[Mapping[str, Any]]) -> list[HelmHook]:
    """A HelmRelease's ``spec.test.filters``: excluded names left out, and when some names are included only those
    run (helm-controller internal/action/test.go newTest; helm pkg/action/release_testing.go RunWithContext)."""
    filters = list(filters)
    excluded = {str(item.get("name")) for item in filters if item.get("exclude")}
    included = {str(item.get("name")) for item in filters if not item.get("exclude")}
    names = [(hook, str((hook.obj.get("metadata") or {}).get("name"))) for hook in hooks]
    return [hook for hook, name in names if name not in excluded and (not included or name in included)]
