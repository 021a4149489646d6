"""Upgrade verdicts: whether the merge can roll a component forward as it is (pure: the component's rendered
objects before and after, and the cluster's CustomResourceDefinitions, in; ``UpgradeVerdict`` out).

``safe`` unless a reason below says otherwise; the most serious reason decides:

- ``blocked`` — the API server or the deployer would refuse or destroy something on its own:
  ``immutable-field`` (a field the API server refuses to change, ``immutable.py``: the sync fails until someone
  deletes the object; judged on the objects as rendered, noise included: a chart label or checksum annotation in a
  Job's template is refused too; Helm and Argo CD hooks are re-created, not updated, and exempt),
  ``transition-rule`` (a CRD's ``self == oldSelf`` rule the new object breaks, ``transition.py``),
  ``crd-storage-version-dropped`` (a version the base's CRD stores objects in is gone: the API server refuses a
  CRD whose ``status.storedVersions`` names a version no longer in ``spec.versions``),
  ``crd-removed`` (a CRD no longer rendered: pruning it deletes every object of its kinds).
- ``manual`` — it applies, but someone must act or accept a loss: ``crd-not-upgraded`` (Helm, and Flux unless
  a HelmRelease's ``upgrade.crds`` says Create or CreateReplace, install a chart's ``crds/`` once and never update
  or delete them [Helm docs: "Custom Resource Definitions"; helm-controller: ``spec.upgrade.crds`` defaults to
  Skip]: a changed CRD there never reaches the cluster, and a removed one stays, so the CRD reasons above do not
  apply to it), ``renamed`` and ``namespace-moved`` (the old
  object is deleted and a new one created: restarts, lost state, broken references), ``crd-version-dropped`` (a
  served version is gone: clients and manifests still using it fail), ``namespace-dropped`` (a Namespace the chart
  created is no longer rendered: pruning it deletes everything in it).

AICR's catalog at the reference commit carries no upgrade records; when one does, its verdicts belong here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from typing import Any, Literal

from pydantic import Field

from aicr_gen.gitops.review import immutable, transition
from aicr_gen.gitops.review.objects import Key, ObjectChange, changes, keyed, scoped_kinds
from aicr_gen.modelcheck import Strict

Verdict = Literal["safe", "manual", "blocked"]
Code = Literal["immutable-field", "transition-rule", "crd-storage-version-dropped", "crd-removed", "renamed",
               "namespace-moved", "crd-version-dropped", "namespace-dropped", "crd-not-upgraded"]
SEVERITY: dict[str, int] = {"safe": 0, "manual": 1, "blocked": 2}
BUILTIN_GROUPS = frozenset({
    "", "apps", "batch", "autoscaling", "policy", "rbac.authorization.k8s.io", "networking.k8s.io",
    "storage.k8s.io", "apiextensions.k8s.io", "admissionregistration.k8s.io", "scheduling.k8s.io",
    "coordination.k8s.io", "discovery.k8s.io", "node.k8s.io", "certificates.k8s.io", "resource.k8s.io",
    "flowcontrol.apiserver.k8s.io", "apiregistration.k8s.io", "events.k8s.io", "internal.apiserver.k8s.io",
    "storagemigration.k8s.io", "authentication.k8s.io", "authorization.k8s.io",
    "argoproj.io", "helm.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "source.toolkit.fluxcd.io"})
"""API groups Kubernetes serves itself, and those of the deployers (Argo CD, Flux), whose CRDs come with the
deployer, not with a tree: their objects are not looked up for transition rules."""


class UpgradeReason(Strict, frozen=True):
    """Why a component's upgrade is not safe."""

    verdict: Literal["manual", "blocked"] = Field(description="What this reason alone makes the upgrade")
    code: Code = Field(description="immutable-field, transition-rule, crd-storage-version-dropped, crd-removed "
                                   "(blocked); renamed, namespace-moved, crd-version-dropped, namespace-dropped, "
                                   "crd-not-upgraded "
                                   "(manual)")
    object: str = Field(description="The object, as 'Kind namespace/name' (or 'Kind name' when cluster-scoped)")
    text: str = Field(description="What happens and what to do, in one line")


class UpgradeVerdict(Strict, frozen=True):
    """One component's upgrade: safe, manual or blocked, with every reason."""

    component: str = Field(description="Component name (recipe componentRefs[].name)")
    verdict: Verdict = Field(description="safe: nothing to do; manual: applies, but someone must act or accept a "
                                         "loss; blocked: the API server or deployer refuses or destroys something")
    reasons: list[UpgradeReason] = Field(description="Every reason, blocked first")
    acknowledged: bool = Field(default=False, description="A blocked upgrade the pull request acknowledges "
                                                          "(plan --allow-blocked)")
    unchecked: list[str] = Field(default_factory=list,
                                 description="Changed custom resources whose CustomResourceDefinition was not "
                                             "rendered, so their transition rules were not evaluated")


def _ref(key: Key) -> str:
    return f"{key[1]} {key[2]}/{key[3]}" if key[2] else f"{key[1]} {key[3]}"


def _crds(objects: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], Mapping[str, Any]]:
    """(group, kind) -> CustomResourceDefinition."""
    out: dict[tuple[str, str], Mapping[str, Any]] = {}
    for item in objects:
        if item.get("kind") == "CustomResourceDefinition":
            spec = item.get("spec") or {}
            out[(str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", "")))] = item
    return out


def _versions(crd: Mapping[str, Any]) -> dict[str, tuple[bool, bool]]:
    """Version name -> (served, storage)."""
    return {str(item.get("name")): (bool(item.get("served")), bool(item.get("storage")))
            for item in (crd.get("spec") or {}).get("versions") or [] if isinstance(item, Mapping)}


def _crd_reasons(name: str, old: Mapping[str, Any], new: Mapping[str, Any] | None) -> list[UpgradeReason]:
    ref = f"CustomResourceDefinition {name}"
    if new is None:
        return [UpgradeReason(verdict="blocked", code="crd-removed", object=ref,
                              text=f"{name} is no longer rendered: pruning it deletes every object of its kind; "
                                   "keep it (e.g. with Prune=false) or delete those objects on purpose first")]
    was, now = _versions(old), _versions(new)
    out: list[UpgradeReason] = []
    for version, (served, storage) in sorted(was.items()):
        if storage and version not in now:
            out.append(UpgradeReason(
                verdict="blocked", code="crd-storage-version-dropped", object=ref,
                text=f"{version} is dropped but the base stores {name} objects in it: the API server refuses the CRD "
                     f"while status.storedVersions lists {version}; migrate the stored objects to "
                     f"{next((v for v, (_s, st) in now.items() if st), 'the new storage version')} and remove "
                     f"{version} from status.storedVersions first"))
        elif served and not now.get(version, (False, False))[0]:
            out.append(UpgradeReason(
                verdict="manual", code="crd-version-dropped", object=ref,
                text=f"{version} is no longer served: manifests and clients using {name} {version} fail; move "
                     "them to a served version"))
    return out


def _hook(item: Mapping[str, Any]) -> bool:
    """A Helm or Argo CD hook: created anew by its hook, never updated in place."""
    annotations = (item.get("metadata") or {}).get("annotations") or {}
    return "helm.sh/hook" in annotations or "argocd.argoproj.io/hook" in annotations


def _kept(name: str, old: Mapping[str, Any], new: Mapping[str, Any] | None, deployer: str) -> list[UpgradeReason]:
    """A CRD of a chart's ``crds/`` folder under a deployer that installs it once and never updates or deletes it
    (Helm; Flux unless ``upgrade.crds`` says otherwise): its removal removes nothing, its change never arrives."""
    if new is None or new == old:
        return []
    return [UpgradeReason(
        verdict="manual", code="crd-not-upgraded", object=f"CustomResourceDefinition {name}",
        text=f"{deployer} does not update CRDs of a chart's crds/ folder: the cluster keeps the old {name}; apply "
             "the new one yourself (kubectl apply --server-side) before the upgrade")]


def verdict_of(component: str, old: Mapping[Key, Mapping[str, Any]], new: Mapping[Key, Mapping[str, Any]],
               found: Sequence[ObjectChange], *, crds_old: Sequence[Mapping[str, Any]] = (),
               crds_new: Sequence[Mapping[str, Any]] = (), kept: frozenset[str] = frozenset(),
               deployer: str = "") -> UpgradeVerdict:
    """The verdict for keyed objects (``objects.keyed``) and their changes (``objects.changes``); ``crds_*`` are
    every CustomResourceDefinition of the cluster before and after (a custom resource's CRD may come from
    another component); ``kept`` names the CRDs ``deployer`` never updates or deletes (a chart's ``crds/`` folder
    under Helm or Flux)."""
    reasons: list[UpgradeReason] = []
    unchecked: list[str] = []
    for item in found:
        if item.change in ("renamed", "moved"):
            code: Code = "renamed" if item.change == "renamed" else "namespace-moved"
            now = f"{item.namespace}/{item.name}" if item.namespace else item.name
            how = f"renamed to {item.name}" if item.change == "renamed" else f"moved to namespace {item.namespace}"
            reasons.append(UpgradeReason(
                verdict="manual", code=code, object=f"{item.kind} {item.was}",
                text=f"{how}: the deployer deletes this object and creates {now} (restarts; state and references "
                     "to the old one are lost)"))
    mine_old, mine_new = _crds(list(old.values())), _crds(list(new.values()))
    for (group, kind), definition in sorted(mine_old.items()):
        name = str((definition.get("metadata") or {}).get("name", f"{kind}.{group}"))
        judge = partial(_kept, deployer=deployer) if name in kept else _crd_reasons
        reasons += judge(name, definition, mine_new.get((group, kind)))
    everywhere = {**_crds(crds_old), **_crds(crds_new)}
    for key in sorted(set(old) & set(new)):
        if old[key] == new[key] or _hook(new[key]):
            continue
        for path in immutable.refused(key[0], key[1], old[key], new[key]):
            reasons.append(UpgradeReason(
                verdict="blocked", code="immutable-field", object=_ref(key),
                text=f"{path} changes but is immutable: the API server refuses the update (field is immutable); "
                     "the object must be deleted and re-created"))
        crd = everywhere.get((key[0], key[1]))
        if crd is None and key[0] not in BUILTIN_GROUPS:
            unchecked.append(_ref(key))
        if crd is not None:
            for path, message in transition.failed(crd, old[key], new[key]):
                reasons.append(UpgradeReason(
                    verdict="blocked", code="transition-rule", object=_ref(key),
                    text=f"{path}: {message} (the CRD's transition rule refuses the update)"))
    for key in sorted(set(old) - set(new)):
        if key[1] == "Namespace":
            reasons.append(UpgradeReason(
                verdict="manual", code="namespace-dropped", object=_ref(key),
                text=f"namespace {key[3]} is no longer created: pruning it deletes everything in it"))
    worst = max((item.verdict for item in reasons), key=SEVERITY.__getitem__, default="safe")
    return ordered(UpgradeVerdict(component=component, verdict=worst, reasons=reasons, unchecked=unchecked))


def ordered(judged: UpgradeVerdict) -> UpgradeVerdict:
    """``judged`` with its reasons blocked first, then by object, code and text, and its unchecked objects sorted:
    an order that does not depend on how the objects were found."""
    reasons = sorted(judged.reasons, key=lambda item: (-SEVERITY[item.verdict], item.object, item.code, item.text))
    return judged.model_copy(update={"reasons": reasons, "unchecked": sorted(judged.unchecked)})


def verdict(component: str, old: Sequence[Mapping[str, Any]], new: Sequence[Mapping[str, Any]], *,
            crds_old: Sequence[Mapping[str, Any]] = (), crds_new: Sequence[Mapping[str, Any]] = (),
            namespace: str = "default") -> UpgradeVerdict:
    """The verdict for two renders of a component (parsed manifests; namespaced objects without a namespace are
    in ``namespace``)."""
    scoped = scoped_kinds([*old, *new, *crds_old, *crds_new])
    before, after = keyed(old, namespace, scoped), keyed(new, namespace, scoped)
    return verdict_of(component, before, after, changes(before, after), crds_old=crds_old, crds_new=crds_new)
