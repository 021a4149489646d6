"""The fields the Kubernetes API server refuses to change on an existing object (pure: two versions of one object in,
the refused changes out).

Each rule is the API server's update validation (kubernetes/kubernetes pkg/apis/<group>/validation, v1.36; the
messages a client gets are ``field is immutable`` or the StatefulSet one quoted below), checked against the real
kube-apiserver in tests/gitops/test_immutable_oracle.py (every row, and a mutable neighbour of each) and
tests/gitops/test_upgrade_oracle.py (whole chart upgrades). ``transition.py`` adds what CustomResourceDefinitions say
through ``self == oldSelf`` rules.

- Deployment, ReplicaSet, DaemonSet (apps/v1): ``spec.selector``.
- StatefulSet: every field of ``spec`` but ``replicas``, ``ordinals``, ``template``, ``updateStrategy``,
  ``revisionHistoryLimit``, ``persistentVolumeClaimRetentionPolicy`` and ``minReadySeconds`` ("updates to
  statefulset spec for fields other than ... are forbidden"): ``volumeClaimTemplates``, ``serviceName``,
  ``podManagementPolicy``, ``selector``.
- Job (batch/v1): ``spec.selector``, ``spec.template`` and ``spec.completionMode``.
- Service (v1): ``spec.clusterIP`` and ``spec.clusterIPs`` once set (not empty, not ``None``).
- PersistentVolumeClaim: ``spec`` but ``resources.requests``, ``volumeAttributesClassName`` and ``volumeName``
  being bound.
- ConfigMap, Secret marked ``immutable: true``: ``data``, ``binaryData``, ``stringData`` and ``immutable`` itself;
  Secret: ``type``.
- RoleBinding, ClusterRoleBinding: ``roleRef``.
- StorageClass: ``parameters``, ``provisioner``, ``reclaimPolicy``, ``volumeBindingMode``.
- CustomResourceDefinition: ``spec.scope`` and ``spec.group``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_STATEFULSET_MUTABLE = frozenset({"replicas", "ordinals", "template", "updateStrategy", "revisionHistoryLimit",
                                  "persistentVolumeClaimRetentionPolicy", "minReadySeconds"})
_FIELDS: dict[tuple[str, str], tuple[tuple[str, ...], ...]] = {
    ("apps", "Deployment"): (("spec", "selector"),),
    ("apps", "ReplicaSet"): (("spec", "selector"),),
    ("apps", "DaemonSet"): (("spec", "selector"),),
    ("batch", "Job"): (("spec", "selector"), ("spec", "template"), ("spec", "completionMode")),
    ("rbac.authorization.k8s.io", "RoleBinding"): (("roleRef",),),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding"): (("roleRef",),),
    ("storage.k8s.io", "StorageClass"): (("parameters",), ("provisioner",), ("reclaimPolicy",),
                                         ("volumeBindingMode",)),
    ("apiextensions.k8s.io", "CustomResourceDefinition"): (("spec", "scope"), ("spec", "group")),
}


def _at(item: Mapping[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = item
    for key in path:
        value = value.get(key) if isinstance(value, Mapping) else None
    return value


def refused(group: str, kind: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[str]:
    """The dotted paths of the fields of ``old`` the update to ``new`` changes although the API server refuses it."""
    paths = list(_FIELDS.get((group, kind), ()))
    spec_old, spec_new = old.get("spec") or {}, new.get("spec") or {}
    if (group, kind) == ("apps", "StatefulSet"):
        paths += [("spec", key) for key in sorted(set(spec_old) | set(spec_new)) if key not in _STATEFULSET_MUTABLE]
    elif (group, kind) == ("", "Service"):
        paths += [("spec", key) for key in ("clusterIP", "clusterIPs")
                  if spec_old.get(key) not in (None, "", [], "None") and spec_new.get(key) not in (None, "", [])]
    elif (group, kind) == ("", "PersistentVolumeClaim"):
        paths += [("spec", key) for key in sorted(set(spec_old) | set(spec_new))
                  if key not in ("resources", "volumeAttributesClassName", "volumeName")]
        paths += [("spec", "resources", key) for key in ("limits", "claims")]
    elif group == "" and kind in ("ConfigMap", "Secret"):
        if old.get("immutable") is True:
            paths += [("data",), ("binaryData",), ("stringData",), ("immutable",)]
        if kind == "Secret" and old.get("type") and new.get("type"):
            paths.append(("type",))
    return [".".join(path) for path in paths if _at(old, path) != _at(new, path)]
