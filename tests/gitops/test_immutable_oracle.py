"""``review/immutable.py`` against the real kube-apiserver (envtest 1.36): every row of its table, and a mutable
neighbour of each, applied over an existing object the way Argo CD applies (server-side, forced): the API server
refuses exactly the updates the table names. test_upgrade_oracle.py does the same for whole chart upgrades."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.gitops.review import immutable
from aicr_gen.gitops.review.objects import group_of
from tests.cluster.converge import ARGOCD_MANAGER, Api, Refused
from tests.cluster.envtest import binaries_or_skip, start

pytestmark = pytest.mark.cluster
NS = "imm"


def _meta(name: str, namespaced: bool = True) -> dict[str, Any]:
    return {"name": name, **({"namespace": NS} if namespaced else {})}


def _pod(image: str = "busybox:1", label: str = "a", restart: str = "Never") -> dict[str, Any]:
    return {"metadata": {"labels": {"app": label}}, "spec": {"restartPolicy": restart,
                                                             "containers": [{"name": "c", "image": image}]}}


def _job(**spec: Any) -> dict[str, Any]:
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("job"),
            "spec": {"completionMode": "NonIndexed", "parallelism": 1, "completions": 1, "suspend": True,
                     "template": _pod(), **spec}}


def _crd(scope: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "gadgets.example.com"},
            "spec": {"group": "example.com", "scope": scope, "names": {"kind": "Gadget", "plural": "gadgets"},
                     "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def _changed(base: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    target = out
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return out


CONFIG = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("plain"), "data": {"a": "1"}}
FROZEN = {**CONFIG, "metadata": _meta("frozen"), "immutable": True}
SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("secret"), "type": "Opaque",
          "stringData": {"a": "1"}}
BINDING = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": _meta("binding"),
           "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
           "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}]}
CLASS = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": _meta("fast", False),
         "provisioner": "example.com/a", "reclaimPolicy": "Delete", "allowVolumeExpansion": False}
CLAIM = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": _meta("claim"),
         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "fast",
                  "resources": {"requests": {"storage": "1Gi"}}}}
DAEMONS = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": _meta("daemons"),
           "spec": {"selector": {"matchLabels": {"app": "a"}}, "template": _pod(restart="Always")}}
JOB = _job()

CASES = [  # (id, the object as installed, the update)
    ("configmap-data", CONFIG, _changed(CONFIG, ("data", "a"), "2")),
    ("immutable-configmap-data", FROZEN, _changed(FROZEN, ("data", "a"), "2")),
    ("secret-type", SECRET, _changed(SECRET, ("type",), "example.com/other")),
    ("secret-data", SECRET, _changed(SECRET, ("stringData", "a"), "2")),
    ("rolebinding-roleref", BINDING, _changed(BINDING, ("roleRef", "name"), "edit")),
    ("rolebinding-subjects", BINDING, _changed(BINDING, ("subjects", 0, "name"), "other")),  # type: ignore[arg-type]
    ("storageclass-provisioner", CLASS, _changed(CLASS, ("provisioner",), "example.com/b")),
    ("storageclass-expansion", CLASS, _changed(CLASS, ("allowVolumeExpansion",), True)),
    ("pvc-class", CLAIM, _changed(CLAIM, ("spec", "storageClassName"), "slow")),
    ("daemonset-selector", DAEMONS, {**DAEMONS, "spec": {"selector": {"matchLabels": {"app": "b"}},
                                                         "template": _pod(label="b", restart="Always")}}),
    ("daemonset-image", DAEMONS, _changed(DAEMONS, ("spec", "template"), _pod("busybox:2", restart="Always"))),
    ("job-template", JOB, _changed(JOB, ("spec", "template"), _pod("busybox:2"))),
    ("job-completion-mode", JOB, _changed(JOB, ("spec", "completionMode"), "Indexed")),
    ("job-parallelism", JOB, _changed(JOB, ("spec", "parallelism"), 2)),
    ("crd-scope", _crd("Namespaced"), _crd("Cluster")),
]


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Api]:
    plane = start(Path(tmp_path_factory.mktemp("immutable")), binaries_or_skip())
    try:
        client = Api(plane)
        client.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}, ARGOCD_MANAGER)
        yield client
    finally:
        plane.stop()


@pytest.mark.parametrize(("old", "new"), [case[1:] for case in CASES], ids=[case[0] for case in CASES])
def test_the_api_server_refuses_exactly_the_fields_the_table_names(api: Api, old: dict[str, Any],
                                                                  new: dict[str, Any]) -> None:
    api.apply(old, ARGOCD_MANAGER)
    if old["kind"] == "CustomResourceDefinition":  # names and scope are fixed once the API server serves it
        _established(api, str(old["metadata"]["name"]))
    try:
        api.apply(new, ARGOCD_MANAGER, dry_run=True)
        refused = ""
    except Refused as err:
        refused = str(err)
    # plan compares two renders, never the live object (its defaults and generated fields are not in a render)
    named = immutable.refused(group_of(str(new["apiVersion"])), str(new["kind"]), old, new)
    assert bool(named) == bool(refused), (named, refused)


def _established(api: Api, name: str) -> None:
    import time

    for _ in range(200):
        found = api.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        if any(item.get("type") == "Established" and item.get("status") == "True"
               for item in (found.get("status") or {}).get("conditions") or []):
            return
        time.sleep(0.05)
    raise AssertionError(f"CRD {name} never established")
