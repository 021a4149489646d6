"""The rollout world on a real API server: NVCRE's CRDs (written from its Go types) enforce what its markers say,
the writers leave objects shaped as ``/work/notes/rollout-contract.md`` lists, statuses land only through the
status subresource where there is one, and ``export`` gives back what ``kubectl get -o yaml`` prints."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aicr_gen.certify import nvcre
from aicr_gen.certify.nvcre_status import certification_report, parse_certifications
from tests.cluster.converge import Api, Refused, install_crds
from tests.cluster.envtest import ControlPlane, binaries_or_skip, start
from tests.rollout import world

DIGEST = "sha256:" + "ab" * 32
FINISHED = "2026-12-01T10:00:00Z"
NAMESPACE = "nvcre-system"


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane of this module's own: the world writes Nodes, which other tests count."""
    started = start(tmp_path_factory.mktemp("rollout-world"), binaries_or_skip())
    try:
        yield started
    finally:
        started.stop()


@pytest.fixture(scope="module")
def api(plane: ControlPlane) -> Api:
    """The plane with NVCRE's CRDs served (no reference data needed: they live in this repository)."""
    client = Api(plane)
    world.install_nvcre_crds(client)
    return client


@pytest.fixture(scope="module")
def deployers(api: Api) -> Api:
    """The plane with Argo CD's and Flux's real CRDs too (skips without the reference data)."""
    install_crds(api)
    return api


def _get(api: Api, api_version: str, kind: str, name: str, namespace: str | None = None) -> dict[str, Any]:
    found = api.resource(api_version, kind)
    assert found is not None
    got: dict[str, Any] = api.call("GET", api.path(api_version, found[0], namespace if found[1] else None, name))
    return got


def _conditions(obj: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {condition["type"]: condition for condition in obj["status"]["conditions"]}


def _certification_body(name: str, **spec: Any) -> dict[str, Any]:
    return {"apiVersion": nvcre.API_VERSION, "kind": "Certification",
            "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                     "categories": [{"domain": "communication", "variant": "nccl-all-reduce"}], **spec}}


def test_each_nvcre_crd_installs_namespaced_with_a_status_subresource(api: Api) -> None:
    for crd in world.nvcre_crds():
        live = api.call("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
        version = live["spec"]["versions"][0]
        assert (live["spec"]["group"], version["name"], live["spec"]["scope"]) == (
            "nvcre.nvidia.com", "v1alpha1", "Namespaced")
        assert version["subresources"] == {"status": {}}
        assert api.resource(nvcre.API_VERSION, crd["spec"]["names"]["kind"]) == (crd["spec"]["names"]["plural"], True)
        assert api.items(nvcre.API_VERSION, crd["spec"]["names"]["kind"], "default") == []


def test_the_certification_schema_refuses_what_nvcre_markers_refuse(api: Api) -> None:
    world.certification(api, name="immutable", namespace=NAMESPACE, stack_digest=DIGEST, bus_bw=412.0,
                        finished_at=FINISHED)
    path = api.path(nvcre.API_VERSION, "certifications", NAMESPACE, "immutable")
    merge = "application/merge-patch+json"
    with pytest.raises(Refused, match="spec is immutable after creation"):
        api.call("PATCH", path, {"spec": {"thresholds": {"busBandwidthGBps": "value >= 1"}}}, merge)
    relabelled = api.call("PATCH", path, {"metadata": {"labels": {"kept": "yes"}}}, merge)
    assert relabelled["metadata"]["labels"]["kept"] == "yes"
    categories = [{"domain": "communication", "variant": "nccl-all-reduce"}]
    refusals: dict[str, tuple[dict[str, Any], str]] = {
        "no-categories": ({"categories": []}, "should have at least 1 items"),
        "too-many": ({"categories": categories * 65}, "must have at most 64 items"),
        "scale": ({"testScale": "galaxy"}, 'supported values: "intra-node"'),
        "per-job": ({"nodesPerJob": 0}, "should be greater than or equal to 1"),
        "requests": ({"resources": {"requests": {"cpu": "8"}, "limits": {"cpu": "4"}}},
                     "requests.cpu must not exceed limits.cpu")}
    for name, (spec, message) in refusals.items():
        with pytest.raises(Refused, match=message):
            api.apply(_certification_body(name, **spec), world.JOB_MANAGER)


@pytest.mark.parametrize("kind", ["Certification", "Workflow", "BandwidthMeasurement"])
def test_status_goes_only_through_the_status_subresource(api: Api, kind: str) -> None:
    name = f"subresource-{kind.lower()}"
    spec: dict[str, Any] = {"Certification": _certification_body(name)["spec"],
            "Workflow": {"jobTemplate": {"spec": {"workload": {"trainJob": {}}}}, "orchestration": {}},
            "BandwidthMeasurement": {"logProfileRef": "nccl-tests"}}[kind]
    status = {"conditions": [{"type": "Succeeded", "status": "True", "reason": "Done", "message": "",
                              "lastTransitionTime": FINISHED}]}
    body = {"apiVersion": nvcre.API_VERSION, "kind": kind, "metadata": {"name": name, "namespace": NAMESPACE},
            "spec": spec, "status": status}
    created = api.apply(body, world.JOB_MANAGER)
    assert "status" not in created
    written = world.put_status(api, created, status, world.NVCRE_MANAGER)
    assert written["status"] == status
    path = api.path(nvcre.API_VERSION, api.resource(nvcre.API_VERSION, kind)[0], NAMESPACE, name)  # type: ignore[index]
    api.call("PUT", path, {**written, "status": {"conditions": []}})
    assert _get(api, nvcre.API_VERSION, kind, name, NAMESPACE)["status"] == status


def test_a_certification_run_can_be_followed_to_its_measured_bandwidth(api: Api) -> None:
    for node in ("gpu-a", "gpu-b"):
        world.gpu_node(api, node)
    world.gpu_node(api, "gpu-c", cordoned=True)
    cert = world.certification(api, name="canary-pass", namespace=NAMESPACE, stack_digest=DIGEST, pool="h100",
                               bus_bw=412.5, finished_at=FINISHED)
    meta = cert["metadata"]
    assert meta["labels"] == {"app.kubernetes.io/managed-by": "aicr-gen", "aicr-gen.dev/trigger": "post-change",
                              "aicr-gen.dev/pool": "h100"}
    assert meta["annotations"] == {"aicr-gen.dev/stack-digest": DIGEST}
    assert meta["creationTimestamp"]
    assert cert["spec"]["thresholds"] == {"busBandwidthGBps": "value >= 300"}
    conditions = _conditions(cert)
    assert {kind: condition["status"] for kind, condition in conditions.items()} == {
        "InProgress": "False", "Succeeded": "True", "Failed": "False"}
    assert conditions["Succeeded"]["lastTransitionTime"] == FINISHED
    [category] = cert["status"]["categoryStatuses"]
    assert category == {"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded",
                        "workflowRef": {"name": "canary-pass-communication-nccl-all-reduce", "namespace": NAMESPACE}}

    workflow = _get(api, nvcre.API_VERSION, "Workflow", category["workflowRef"]["name"], NAMESPACE)
    assert workflow["metadata"]["labels"]["nvcre.nvidia.com/certification"] == "canary-pass"
    orchestration = workflow["status"]["orchestration"]
    assert orchestration["excludedNodes"] == ["gpu-c"]
    jobs = [group["jobRef"]["name"] for group in orchestration["groups"]]
    assert orchestration["groups"][0]["nodes"] == ["gpu-a", "gpu-b"]
    measurements = [item for item in api.items(nvcre.API_VERSION, "BandwidthMeasurement", NAMESPACE)
                    if item["spec"].get("jobRef", {}).get("name") in jobs]
    assert [item["spec"]["jobRef"]["kind"] for item in measurements] == ["Job"]
    assert max(float(result["busBW"]) for result in measurements[0]["status"]["results"]) == 412.5
    assert _conditions(measurements[0])["Complete"]["status"] == "True"

    [parsed] = parse_certifications(yaml.safe_dump(cert).encode(), "live")
    assert certification_report(parsed).result == "PASSED"
    contract = {key: cert[key] for key in ("apiVersion", "kind", "spec", "status")}
    contract["metadata"] = {key: meta[key] for key in ("name", "namespace", "labels", "annotations")}
    jsonschema.validate(contract, nvcre.load_schema())


def test_a_threshold_failure_reads_as_nvcre_writes_it(api: Api) -> None:
    cert = world.certification(api, name="canary-fail", namespace=NAMESPACE, stack_digest=None, trigger="post-sync",
                               outcome="Failed", bus_bw=250.0, finished_at=FINISHED)
    assert "annotations" not in cert["metadata"]
    conditions = _conditions(cert)
    assert conditions["Failed"]["status"] == "True"
    assert conditions["ValidationFailed"]["status"] == "True"
    assert conditions["ValidationFailed"]["message"] == (
        'Threshold "busBandwidthGBps" violated: measured 250.0000, expression: value >= 300')
    assert cert["status"]["categoryStatuses"][0]["status"] == "Failed"
    [parsed] = parse_certifications(yaml.safe_dump(cert).encode(), "live")
    assert certification_report(parsed).result == "FAILED"

    running = world.certification(api, name="canary-running", namespace=NAMESPACE, stack_digest=DIGEST,
                                  outcome="InProgress", bus_bw=100.0, finished_at=FINISHED)
    assert set(_conditions(running)) == {"InProgress", "Succeeded", "Failed"}
    [measurement] = [item for item in api.items(nvcre.API_VERSION, "BandwidthMeasurement", NAMESPACE)
                     if item["metadata"]["name"].startswith("canary-running-")]
    assert "completionTime" not in measurement["status"]
    assert _conditions(measurement)["Measuring"]["status"] == "True"


def test_quarantine_marks_come_and_go_with_their_manager(api: Api) -> None:
    node = world.gpu_node(api, "gpu-q", quarantined=True)
    assert node["metadata"]["labels"]["k8saas.nvidia.com/cordon-by"] == "nvsentinel"
    assert node["spec"]["unschedulable"] is True
    events = json.loads(node["metadata"]["annotations"]["quarantineHealthEvent"])
    assert [event["nodeName"] for event in events] == ["gpu-q"]

    released = world.gpu_node(api, "gpu-q")
    assert "quarantineHealthEvent" not in (released["metadata"].get("annotations") or {})
    assert "k8saas.nvidia.com/cordon-by" not in released["metadata"]["labels"]
    assert not released["spec"].get("unschedulable")

    world.gpu_node(api, "gpu-q", quarantined=True, cordoned=True)
    still_cordoned = world.gpu_node(api, "gpu-q", cordoned=True)
    assert still_cordoned["spec"]["unschedulable"] is True
    assert "quarantineHealthEvent" not in (still_cordoned["metadata"].get("annotations") or {})

    assert world.circuit_breaker(api, tripped=True)["data"] == {"status": "TRIPPED"}
    assert world.circuit_breaker(api, tripped=False)["data"] == {"status": "CLOSED"}


def test_the_deployers_report_the_revision_they_applied(deployers: Api) -> None:
    app = world.argo_application(deployers, revision="a" * 40, finished_at=FINISHED)
    stored = _get(deployers, "argoproj.io/v1alpha1", "Application", "nvidia-stack", "argocd")
    assert stored["status"] == app["status"]
    assert (stored["status"]["sync"]["status"], stored["status"]["sync"]["revision"]) == ("Synced", "a" * 40)
    assert stored["status"]["health"]["status"] == "Healthy"
    operation = stored["status"]["operationState"]
    assert (operation["phase"], operation["finishedAt"], operation["syncResult"]["revision"]) == (
        "Succeeded", FINISHED, "a" * 40)
    failed = world.argo_application(deployers, name="edge-aicr-stack", revision="b" * 40, synced=False,
                                    health="Degraded", finished_at=FINISHED)
    assert (failed["status"]["sync"]["status"], failed["status"]["operationState"]["phase"]) == ("OutOfSync", "Failed")

    ready = world.flux_kustomization(deployers, revision="c" * 40, at=FINISHED)
    assert ready["status"]["lastAppliedRevision"] == "main@sha1:" + "c" * 40
    assert ready["status"]["observedGeneration"] == ready["metadata"]["generation"]
    assert _conditions(ready)["Ready"]["status"] == "True"
    broken = world.flux_kustomization(deployers, revision="d" * 40, ready=False, at="2026-12-01T11:00:00Z")
    assert broken["status"]["lastAttemptedRevision"] == "main@sha1:" + "d" * 40
    assert broken["status"]["lastAppliedRevision"] == "main@sha1:" + "c" * 40
    assert _conditions(broken)["Ready"] == {
        "type": "Ready", "status": "False", "reason": "ReconciliationFailed", "observedGeneration": 1,
        "message": f"Reconciliation of revision main@sha1:{'d' * 40} failed",
        "lastTransitionTime": "2026-12-01T11:00:00Z"}


def test_export_is_what_kubectl_get_prints(api: Api, plane: ControlPlane, tmp_path: Path) -> None:
    world.gpu_node(api, "gpu-export", quarantined=True)
    world.circuit_breaker(api, tripped=True)
    world.certification(api, name="exported", namespace=NAMESPACE, stack_digest=DIGEST, bus_bw=400.0,
                        finished_at=FINISHED)
    written = world.export(api, tmp_path / "evidence")
    assert {path.name for path in written} >= {"certifications.yaml", "workflows.yaml",
                                               "bandwidthmeasurements.yaml", "nodes.yaml", "configmaps.yaml"}
    for path in written:
        exported = yaml.safe_load(path.read_text(encoding="utf-8"))
        printed = yaml.safe_load(plane.kubectl("get", path.stem, "--all-namespaces", "-o", "yaml").stdout)
        assert exported == printed, path.name
        assert exported["items"], path.name
    names = [item["metadata"]["name"] for item in yaml.safe_load((tmp_path / "evidence" / "certifications.yaml")
                                                                 .read_text(encoding="utf-8"))["items"]]
    assert "exported" in names
