"""``aicr-gen snapshot``: read-only capture from a local fake API server serving recorded API objects,
cm:// output (plain and gzip), unreachable clusters and the agent CronJob bundle."""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.cli import main
from aicr_gen.drift import capture
from aicr_gen.drift.agent import agent_bundle
from aicr_gen.drift.kube import KubeClient
from aicr_gen.drift.snapshot import load_snapshot
from tests.consumers import validate_manifests
from tests.kubeapi import FakeApi, kubeconfig, serve, subtype_data, url, without_proxies

FIXTURES = Path(__file__).parent / "fixtures" / "capture"
NOW = datetime.datetime(2026, 3, 2, 9, 15, 0, tzinfo=datetime.UTC)


def _release(name: str, namespace: str, revision: int, status: str, chart: str, *, version: str) -> dict[str, Any]:
    """A Helm 3 release Secret exactly as the API returns it: data.release is base64 (by the API) of Helm's
    base64 of the gzip'ed release JSON."""
    release = {
        "name": name,
        "info": {"first_deployed": "2026-03-01T08:00:00Z", "last_deployed": f"2026-03-0{revision}T08:00:00Z",
                 "deleted": "", "description": "Install complete" if revision == 1 else "Upgrade complete",
                 "status": status},
        "chart": {"metadata": {"name": chart, "version": version, "appVersion": version, "apiVersion": "v2",
                               "description": f"{chart} chart", "type": "application"},
                  "lock": None, "templates": [{"name": "templates/deployment.yaml", "data": "YXBpVmVyc2lvbjogdjE="}],
                  "values": {"replicaCount": 1}, "schema": None, "files": []},
        "config": {"driver": {"enabled": True}},
        "manifest": "---\n# Source: x/templates/deployment.yaml\napiVersion: apps/v1\nkind: Deployment\n",
        "version": revision,
        "namespace": namespace,
    }
    helm_encoded = base64.b64encode(gzip.compress(json.dumps(release).encode()))
    return {
        "metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": namespace,
                     "uid": f"22222222-0000-4000-8000-00000000000{revision}", "resourceVersion": str(100 + revision),
                     "labels": {"name": name, "owner": "helm", "status": status, "version": str(revision)}},
        "type": "helm.sh/release.v1",
        "data": {"release": base64.b64encode(helm_encoded).decode()},
    }


SECRETS = {"kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": "4713"}, "items": [
    _release("gpu-operator", "gpu-operator", 1, "superseded", "gpu-operator", version="v25.3.0"),
    _release("gpu-operator", "gpu-operator", 2, "deployed", "gpu-operator", version="v25.10.1"),
    _release("gpu-operator", "gpu-operator", 3, "failed", "gpu-operator", version="v26.3.1"),
    _release("nvsentinel", "nvsentinel", 1, "deployed", "nvsentinel", version="v1.9.0"),
]}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    without_proxies(monkeypatch)
    yield from serve({
        "/version": (FIXTURES / "version.json").read_bytes(),
        "/api/v1/nodes": (FIXTURES / "nodes.json").read_bytes(),
        "/api/v1/pods": (FIXTURES / "pods.json").read_bytes(),
        "/api/v1/secrets": json.dumps(SECRETS).encode(),
    })


GPU_NODES = "ip-10-0-12-34.ec2.internal,ip-10-0-12-35.ec2.internal"
ALL_NODES = f"ip-10-0-1-10.ec2.internal,{GPU_NODES}"


def test_capture_builds_a_valid_aicr_snapshot(api: FakeApi, tmp_path: Path) -> None:
    client = KubeClient.from_kubeconfig(kubeconfig(tmp_path, url(api)))
    snapshot = capture.capture(client, NOW)
    assert {r["method"] for r in api.requests} == {"GET"}
    assert [r["path"].partition("?")[0] for r in api.requests] == [
        "/version", "/api/v1/nodes", "/api/v1/secrets", "/api/v1/pods"]
    assert "labelSelector=owner%3Dhelm" in api.requests[2]["path"]
    assert snapshot["kind"] == "Snapshot" and snapshot["apiVersion"] == "aicr.run/v1alpha2"
    assert snapshot["metadata"] == {"timestamp": "2026-03-02T09:15:00Z", "version": "0.1.0", "source": "aicr-gen"}
    assert subtype_data(snapshot, "K8s", "server") == {"version": "v1.33.0-eks-4096722", "platform": "linux/amd64",
                                                "goVersion": "go1.24.2"}
    assert subtype_data(snapshot, "K8s", "helm") == {
        "gpu-operator.chart": "gpu-operator", "gpu-operator.version": "v25.10.1",
        "gpu-operator.namespace": "gpu-operator",
        "nvsentinel.chart": "nvsentinel", "nvsentinel.version": "v1.9.0", "nvsentinel.namespace": "nvsentinel"}
    assert subtype_data(snapshot, "K8s", "image") == {
        "602401143452.dkr.ecr.us-west-2.amazonaws.com/eks/coredns": "v1.11.4-eksbuild.2",
        "nginx": "1.27,latest",
        "nvcr.io/nvidia/cuda": "12.8.0-base-ubi9",
        "nvcr.io/nvidia/gpu-operator": "v25.10.1",
        "nvcr.io/nvidia/k8s-device-plugin": "v0.18.1",
        "registry.k8s.io/pause": "sha256:" + "cd" * 32}
    node = subtype_data(snapshot, "K8s", "node")
    assert node["os-image"] == "Ubuntu 24.04.1 LTS"
    assert node["kernel-version"] == f"6.8.0-1015-aws|{GPU_NODES};6.8.0-1016-aws|ip-10-0-1-10.ec2.internal"
    assert subtype_data(snapshot, "GPU", "hardware") == {"gpu-present": True, "gpu-count": 8, "driver-loaded": True,
                                                  "detection-source": "node-labels",
                                                  "model": "NVIDIA-H100-80GB-HBM3"}
    assert subtype_data(snapshot, "NodeTopology", "summary") == {"node-count": 3, "gpu-node-count": 2}
    labels = subtype_data(snapshot, "NodeTopology", "label")
    assert labels["nvidia.com/gpu.present"] == f"true|{GPU_NODES}"
    assert labels["kubernetes.io/os"] == f"linux|{ALL_NODES}"
    assert labels["node.kubernetes.io/instance-type"] == f"m5.xlarge|ip-10-0-1-10.ec2.internal;p5.48xlarge|{GPU_NODES}"
    assert "kubernetes.io/hostname" not in labels
    assert subtype_data(snapshot, "NodeTopology", "taint") == {"nvidia.com/gpu": f"NoSchedule|present|{GPU_NODES}"}


def test_images_list_is_sorted_and_unique() -> None:
    pods = json.loads((FIXTURES / "pods.json").read_text())["items"]
    found = capture.images(pods)
    assert found == sorted(set(found))
    assert "nginx:1.27" in found and "docker.io/library/nginx:1.27" not in found
    assert capture.split_image("localhost:5000/app") == ("localhost:5000/app", "latest")
    assert capture.split_image("r/app:1@sha256:ab") == ("r/app", "1@sha256:ab")


def test_cli_writes_yaml_file_that_loads_and_is_deterministic(api: FakeApi, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import argparse

    from aicr_gen.commands import snapshot as command

    config = kubeconfig(tmp_path, url(api))
    outputs = []
    for name in ("a.yaml", "b.yaml"):
        args = argparse.Namespace(kubeconfig=config, output=str(tmp_path / name), agent_cronjob=None)
        assert command.run(args, now=NOW) == 0
        outputs.append((tmp_path / name).read_bytes())
    assert outputs[0] == outputs[1]
    loaded = load_snapshot(str(tmp_path / "a.yaml"))
    assert loaded["metadata"]["timestamp"] == "2026-03-02T09:15:00Z"
    assert main(["snapshot", "--kubeconfig", config, "-o", str(tmp_path / "c.yaml")]) == 0
    assert load_snapshot(str(tmp_path / "c.yaml"))["measurements"] == loaded["measurements"]


def test_cm_output_is_a_server_side_apply(api: FakeApi, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path, url(api))
    assert main(["snapshot", "--kubeconfig", config, "-o", "cm://aicr-system/live"]) == 0
    patch = api.requests[-1]
    assert patch["method"] == "PATCH"
    assert patch["path"] == "/api/v1/namespaces/aicr-system/configmaps/live?fieldManager=aicr-gen&force=true"
    assert patch["headers"]["Content-Type"] == "application/apply-patch+yaml"
    body = json.loads(patch["body"])
    assert body["metadata"] == {"name": "live", "namespace": "aicr-system", "labels": {
        "app.kubernetes.io/name": "aicr", "app.kubernetes.io/component": "Snapshot",
        "app.kubernetes.io/version": "0.1.0"}}
    assert sorted(body["data"]) == ["format", "snapshot.yaml", "timestamp"]
    assert body["data"]["format"] == "yaml" and "binaryData" not in body
    assert body["data"]["timestamp"].endswith("Z")
    (tmp_path / "from-cm.yaml").write_text(body["data"]["snapshot.yaml"])
    assert subtype_data(load_snapshot(str(tmp_path / "from-cm.yaml")), "NodeTopology", "summary")["node-count"] == 3


def test_cm_output_gzips_above_900_kib(api: FakeApi, tmp_path: Path) -> None:
    pods = json.loads((FIXTURES / "pods.json").read_text())
    template = pods["items"][0]
    many = [f"registry.example.com/team-{i // 100}/service-{i}:v1.{i}.0" for i in range(16_000)]
    pods["items"].append({**template, "spec": {"containers": [{"name": f"c{i}", "image": image}
                                                               for i, image in enumerate(many)]}})
    api.routes["/api/v1/pods"] = json.dumps(pods).encode()
    assert main(["snapshot", "--kubeconfig", kubeconfig(tmp_path, url(api)), "-o", "cm://aicr-system/big"]) == 0
    body = json.loads(api.requests[-1]["body"])
    assert sorted(body["data"]) == ["format", "timestamp"]
    packed = base64.b64decode(body["binaryData"]["snapshot.yaml.gz"])
    text = gzip.decompress(packed)
    assert len(text) > 900 * 1024 > len(packed)
    (tmp_path / "big.yaml.gz").write_bytes(packed)
    image = subtype_data(load_snapshot(str(tmp_path / "big.yaml.gz")), "K8s", "image")
    assert image["registry.example.com/team-159/service-15999"] == "v1.15999.0"


def test_unreachable_cluster_exits_3(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    config = kubeconfig(tmp_path, f"http://127.0.0.1:{port}")
    assert main(["snapshot", "--kubeconfig", config]) == 3
    assert "cannot reach the Kubernetes API" in capsys.readouterr().err


def test_bad_helm_secrets_are_skipped() -> None:
    good = SECRETS["items"][1]
    broken = {**good, "data": {"release": base64.b64encode(b"not base64 !!").decode()}}
    other = {**good, "type": "Opaque"}
    assert capture.decode_release(broken) is None and capture.decode_release(other) is None
    assert capture.helm_data([broken, other, good]) == {
        "gpu-operator.chart": "gpu-operator", "gpu-operator.version": "v25.10.1",
        "gpu-operator.namespace": "gpu-operator"}
    failed_only = _release("kai", "kai-scheduler", 1, "failed", "kai-scheduler", version="v0.14.1")
    assert capture.helm_data([failed_only])["kai.status"] == "failed"


def test_agent_cronjob_bundle_validates(tmp_path: Path) -> None:
    bundle = agent_bundle("aicr-system", "aicr-snapshot", "0 * * * *")
    assert validate_manifests(dict(bundle)) >= 6
    out = tmp_path / "agent"
    assert main(["snapshot", "--agent-cronjob", str(out), "--schedule", "@hourly"]) == 0
    files = sorted(p.name for p in out.iterdir())
    assert files == ["README.md", "checksums.txt", "clusterrole.yaml", "clusterrolebinding.yaml", "cronjob.yaml",
                     "kustomization.yaml", "role.yaml", "rolebinding.yaml", "serviceaccount.yaml"]
    assert main(["verify", str(out)]) == 0
    role = (out / "role.yaml").read_text()
    assert "aicr-snapshot" in role and "resourceNames" in role
    cronjob = yaml.safe_load((out / "cronjob.yaml").read_text())
    container = cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]
    assert container["image"] == "ghcr.io/nvidia/aicr:v0.19.0"
    assert container["command"] == ["aicr", "snapshot", "--output=cm://aicr-system/aicr-snapshot"]
    assert {"name": "AICR_AGENT_MODE", "value": "true"} in container["env"]
    assert main(["snapshot", "--agent-cronjob", str(out), "--schedule", "61 * * * *", "--force"]) == 2
