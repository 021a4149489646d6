"""Upgrade verdicts (``review/upgrade``, ``immutable``, ``transition``) from two renders of a component. What the
real API server refuses is pinned in test_upgrade_oracle.py; these cover every rule's edges."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from aicr_gen.gitops.review import immutable, transition
from aicr_gen.gitops.review.upgrade import verdict
from tests.conftest import REFERENCE, needs, use_reference

NVIDIADRIVER = REFERENCE / "crds" / "gpu-operator" / "nvidia.com_nvidiadrivers.yaml"


def crd(versions: list[tuple[str, bool, bool]], rule: str = "self == oldSelf") -> dict[str, Any]:
    schema = {"type": "object", "properties": {"spec": {"type": "object", "properties": {
        "size": {"type": "integer", "x-kubernetes-validations": [{"rule": rule, "message": "size is immutable"}]},
        "ports": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                  "items": {"type": "object", "properties": {"name": {"type": "string"}, "port": {
                      "type": "integer", "x-kubernetes-validations": [{"rule": "self >= oldSelf"}]}}}}}}}}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "widgets.example.com"},
            "spec": {"group": "example.com", "scope": "Namespaced", "names": {"kind": "Widget", "plural": "widgets"},
                     "versions": [{"name": name, "served": served, "storage": storage,
                                   "schema": {"openAPIV3Schema": schema}} for name, served, storage in versions]}}


def widget(size: int, ports: list[tuple[str, int]] = (), version: str = "v1") -> dict[str, Any]:  # type: ignore[assignment]
    return {"apiVersion": f"example.com/{version}", "kind": "Widget", "metadata": {"name": "w", "namespace": "n"},
            "spec": {"size": size, "ports": [{"name": name, "port": port} for name, port in ports]}}


def codes(result: Any) -> list[tuple[str, str]]:
    return [(reason.code, reason.object) for reason in result.reasons]


def test_nothing_but_a_mutable_change_is_safe() -> None:
    old = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "n"},
           "spec": {"replicas": 1, "selector": {"matchLabels": {"a": "1"}}}}
    new = copy.deepcopy(old)
    new["spec"]["replicas"] = 3
    result = verdict("c", [old], [new])
    assert (result.verdict, result.reasons) == ("safe", [])


@pytest.mark.parametrize(("group", "kind", "old", "new", "refused"), [
    ("apps", "Deployment", {"spec": {"selector": {"a": 1}}}, {"spec": {"selector": {"a": 2}}}, ["spec.selector"]),
    ("apps", "StatefulSet", {"spec": {"replicas": 1, "volumeClaimTemplates": [1], "serviceName": "s"}},
     {"spec": {"replicas": 2, "volumeClaimTemplates": [2], "serviceName": "t"}},
     ["spec.serviceName", "spec.volumeClaimTemplates"]),
    ("apps", "StatefulSet", {"spec": {"template": 1, "updateStrategy": 1, "minReadySeconds": 1}},
     {"spec": {"template": 2, "updateStrategy": 2, "minReadySeconds": 2}}, []),
    ("batch", "Job", {"spec": {"template": 1, "parallelism": 1}}, {"spec": {"template": 2, "parallelism": 2}},
     ["spec.template"]),
    ("", "Service", {"spec": {"clusterIP": "10.0.0.1"}}, {"spec": {"clusterIP": "10.0.0.2"}}, ["spec.clusterIP"]),
    ("", "Service", {"spec": {"clusterIP": ""}}, {"spec": {"clusterIP": "10.0.0.2"}}, []),
    ("", "Service", {"spec": {"clusterIP": "None"}}, {"spec": {"clusterIP": "None", "ports": [1]}}, []),
    ("", "PersistentVolumeClaim", {"spec": {"resources": {"requests": 1}, "storageClassName": "a"}},
     {"spec": {"resources": {"requests": 2}, "storageClassName": "b"}}, ["spec.storageClassName"]),
    ("", "ConfigMap", {"immutable": True, "data": {"a": "1"}}, {"immutable": True, "data": {"a": "2"}}, ["data"]),
    ("", "ConfigMap", {"data": {"a": "1"}}, {"data": {"a": "2"}}, []),
    ("", "Secret", {"type": "Opaque"}, {"type": "kubernetes.io/tls"}, ["type"]),
    ("rbac.authorization.k8s.io", "ClusterRoleBinding", {"roleRef": {"name": "a"}}, {"roleRef": {"name": "b"}},
     ["roleRef"]),
    ("storage.k8s.io", "StorageClass", {"provisioner": "a", "allowVolumeExpansion": False},
     {"provisioner": "b", "allowVolumeExpansion": True}, ["provisioner"]),
])
def test_the_api_servers_immutable_fields(group: str, kind: str, old: dict[str, Any], new: dict[str, Any],
                                           refused: list[str]) -> None:
    assert immutable.refused(group, kind, old, new) == refused


def test_an_immutable_field_change_is_blocked_naming_the_object_and_field() -> None:
    old = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "migrate", "namespace": "n"},
           "spec": {"template": {"spec": {"containers": [{"image": "a:1"}]}}}}
    new = copy.deepcopy(old)
    new["spec"]["template"]["spec"]["containers"][0]["image"] = "a:2"
    result = verdict("c", [old], [new])
    assert result.verdict == "blocked" and codes(result) == [("immutable-field", "Job n/migrate")]
    assert "spec.template changes but is immutable" in result.reasons[0].text


def test_transition_rules_are_evaluated_where_both_sides_have_a_value() -> None:
    definition = crd([("v1", True, True)])
    assert verdict("c", [widget(1)], [widget(1, [("a", 1)])], crds_new=[definition]).verdict == "safe"
    result = verdict("c", [widget(1, [("a", 5)])], [widget(2, [("a", 4), ("b", 1)])], crds_new=[definition])
    assert result.verdict == "blocked"
    assert [(reason.code, reason.text) for reason in result.reasons] == [  # by object, code, then text
        ("transition-rule", "spec.ports[0].port: failed rule: self >= oldSelf (the CRD's transition rule refuses "
                            "the update)"),
        ("transition-rule", "spec.size: size is immutable (the CRD's transition rule refuses the update)")]


@needs(NVIDIADRIVER)
def test_nvidiadriver_driver_type_is_immutable_as_the_gpu_operator_crd_says() -> None:
    definition = yaml.safe_load(use_reference(NVIDIADRIVER).read_text())
    old = {"apiVersion": "nvidia.com/v1alpha1", "kind": "NVIDIADriver", "metadata": {"name": "pool-a"},
           "spec": {"driverType": "gpu", "version": "580.95.05"}}
    new = copy.deepcopy(old)
    new["spec"]["version"] = "590.44.01"
    assert verdict("gpu-operator", [old], [new], crds_new=[definition]).verdict == "safe"
    new["spec"]["driverType"] = "vgpu"
    result = verdict("gpu-operator", [old], [new], crds_new=[definition])
    assert codes(result) == [("transition-rule", "NVIDIADriver pool-a")]  # cluster-scoped: no namespace
    assert "driverType is an immutable field" in result.reasons[0].text


def test_crd_versions_dropped_removed_and_storage_moves() -> None:
    base = crd([("v1alpha1", True, True), ("v1", True, False)])
    result = verdict("c", [base], [crd([("v1", True, True)])])
    assert codes(result) == [("crd-storage-version-dropped", "CustomResourceDefinition widgets.example.com")]
    assert "migrate the stored objects to v1" in result.reasons[0].text
    result = verdict("c", [base], [crd([("v1alpha1", False, True), ("v1", True, False)])])
    assert (result.verdict, codes(result)[0][0]) == ("manual", "crd-version-dropped")
    result = verdict("c", [base], [])
    assert (result.verdict, codes(result)[0][0]) == ("blocked", "crd-removed")
    assert verdict("c", [base], [crd([("v1alpha1", True, True), ("v1", True, False), ("v2", True, False)])]
                   ).verdict == "safe"


def test_a_namespace_no_longer_created_is_manual_even_with_objects_still_in_it() -> None:
    """Pruning the Namespace deletes what is in it, whoever still renders objects there."""
    namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "extra"}}
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "extra"}}
    result = verdict("c", [namespace, config], [config])
    assert codes(result) == [("namespace-dropped", "Namespace extra")] and result.verdict == "manual"


def test_a_rule_that_cannot_be_evaluated_is_a_refusal_with_its_reason() -> None:
    definition = crd([("v1", True, True)], rule="self.nosuch == oldSelf")
    failed = transition.failed(definition, widget(1), widget(2))
    assert failed and failed[0][0] == "spec.size" and "cannot be evaluated" in failed[0][1]
