"""``aicr-gen snapshot`` against the real API server: Nodes (labels, taints, status), Helm release Secrets and
Pods created with kubectl, captured read-only (GET, paged with limit/continue) into an AICR snapshot."""

from __future__ import annotations

import argparse
import datetime
import json
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.commands import snapshot as command
from aicr_gen.drift.load import load_snapshot
from aicr_gen.edges.kube import client
from tests.cluster.envtest import ControlPlane, apply_json
from tests.drift.test_capture import SECRETS, release_secret
from tests.kubeapi import subtype_data, without_proxies

NOW = datetime.datetime(2026, 3, 2, 9, 15, 0, tzinfo=datetime.UTC)
GPU = "gpu-0,gpu-1"
DIGEST = "sha256:" + "cd" * 32


def _node(name: str, labels: dict[str, str], kernel: str, taints: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {
        "kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **labels}}, "spec": {"taints": taints or []},
        "status": {"nodeInfo": {"osImage": "Ubuntu 24.04.1 LTS", "kernelVersion": kernel,
                                "containerRuntimeVersion": "containerd://1.7.27", "kubeletVersion": "v1.33.0"}}}


GPU_LABELS = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
              "nvidia.com/gpu.count": "8", "node.kubernetes.io/instance-type": "p5.48xlarge"}
NODES = [_node("cpu-0", {"node.kubernetes.io/instance-type": "m5.xlarge"}, "6.8.0-1016-aws"),
         *(_node(f"gpu-{i}", {**GPU_LABELS, **({"nvidia.com/cuda.driver-version.full": "570.124.06"} if i else {})},
                 "6.8.0-1015-aws", [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}])
           for i in range(2))]


def _pod(name: str, spec: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "apps"},
            "spec": {"automountServiceAccountToken": False, **spec}}


PODS = [_pod("web", {"containers": [{"name": "web", "image": "docker.io/library/nginx:1.27"}]}),
        _pod("tools", {"initContainers": [{"name": "wait", "image": "busybox"}],
                       "containers": [{"name": "pause", "image": f"registry.k8s.io/pause@{DIGEST}"},
                                      {"name": "old", "image": "nginx"}]}),
        _pod("operator", {"containers": [{"name": "op", "image": "nvcr.io/nvidia/gpu-operator:v25.10.1"}]})]


@pytest.fixture(scope="module")
def cluster(control_plane: ControlPlane) -> ControlPlane:
    """The control plane holding three Nodes (two with GPUs), Helm releases and Pods (Pending: no kubelet)."""
    namespaces = ("gpu-operator", "nvsentinel", "apps")
    apply_json(control_plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
                               for name in namespaces])
    apply_json(control_plane, [{"apiVersion": "v1", "kind": "ServiceAccount",
                                "metadata": {"name": "default", "namespace": "apps"}}])
    unlabelled = release_secret("hidden", "apps", 1, "deployed", "hidden", version="v0.0.1")
    unlabelled["metadata"]["labels"].pop("owner")  # Helm's own label selects the releases
    apply_json(control_plane, [*({key: node[key] for key in node if key != "status"} for node in NODES),
                               *SECRETS["items"], unlabelled, *PODS])
    for node in NODES:  # a Node's status is a subresource, written apart
        control_plane.kubectl("patch", "node", node["metadata"]["name"], "--subresource=status", "--type=merge",
                              "--patch", json.dumps({"status": node["status"]}))
    status = {"containerStatuses": [{"name": "web", "image": "docker.io/library/nginx:1.27", "ready": False,
                                     "restartCount": 0, "imageID": f"docker.io/library/nginx@{DIGEST}"}]}
    control_plane.kubectl("patch", "pod", "web", "--namespace=apps", "--subresource=status", "--type=merge",
                          "--patch", json.dumps({"status": status}))
    return control_plane


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)


def test_snapshot_of_nodes_helm_releases_and_pods(cluster: ControlPlane, cli: Any, tmp_path: Path) -> None:
    out = tmp_path / "snapshot.yaml"
    assert cli("snapshot", "--kubeconfig", str(cluster.kubeconfig), "-o", str(out)).code == 0
    snapshot = load_snapshot(str(out))
    server = json.loads(cluster.kubectl("version", "--output=json").stdout)["serverVersion"]
    assert subtype_data(snapshot, "K8s", "server") == {"version": server["gitVersion"], "platform": server["platform"],
                                                       "goVersion": server["goVersion"]}
    node = subtype_data(snapshot, "K8s", "node")
    assert node["os-image"] == "Ubuntu 24.04.1 LTS" and node["kubelet-version"] == "v1.33.0"
    assert node["kernel-version"] == f"6.8.0-1015-aws|{GPU};6.8.0-1016-aws|cpu-0"
    helm = subtype_data(snapshot, "K8s", "helm")
    assert {key: helm[key] for key in helm if key.startswith(("gpu-operator.", "nvsentinel."))} == {
        "gpu-operator.chart": "gpu-operator", "gpu-operator.version": "v25.10.1",
        "gpu-operator.namespace": "gpu-operator",
        "nvsentinel.chart": "nvsentinel", "nvsentinel.version": "v1.9.0", "nvsentinel.namespace": "nvsentinel"}
    assert not any(key.startswith("hidden.") for key in helm)
    images = subtype_data(snapshot, "K8s", "image")
    assert {key: images[key] for key in ("nginx", "busybox", "registry.k8s.io/pause", "nvcr.io/nvidia/gpu-operator")} \
        == {"nginx": "1.27,latest", "busybox": "latest", "registry.k8s.io/pause": DIGEST,
            "nvcr.io/nvidia/gpu-operator": "v25.10.1"}
    assert subtype_data(snapshot, "GPU", "hardware") == {"gpu-present": True, "gpu-count": 8, "driver-loaded": True,
                                                         "detection-source": "node-labels",
                                                         "model": "NVIDIA-H100-80GB-HBM3"}
    count = len(cluster.kubectl("get", "nodes", "--output=name").stdout.split())
    gpus = len(cluster.kubectl("get", "nodes", "--output=name", "--selector=nvidia.com/gpu.count").stdout.split())
    assert subtype_data(snapshot, "NodeTopology", "summary") == {"node-count": count, "gpu-node-count": gpus}
    labels = subtype_data(snapshot, "NodeTopology", "label")
    assert labels["nvidia.com/gpu.present"] == f"true|{GPU}"
    assert labels["node.kubernetes.io/instance-type"] == f"m5.xlarge|cpu-0;p5.48xlarge|{GPU}"
    assert "kubernetes.io/hostname" not in labels
    assert subtype_data(snapshot, "NodeTopology", "taint")["nvidia.com/gpu"] == f"NoSchedule|present|{GPU}"


def test_capture_is_read_only_paged_and_the_same_for_every_user(cluster: ControlPlane, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    sent: list[tuple[str, dict[str, Any]]] = []
    request = client.Cluster.request

    def recording(self: client.Cluster, method: str, path: str, what: str, **options: Any) -> dict[str, Any]:
        sent.append((method, dict(options.get("query") or ())))
        return request(self, method, path, what, **options)

    monkeypatch.setattr(client.Cluster, "request", recording)
    outputs = []
    for context, page in (("admin", client.PAGE_SIZE), ("cert", 1)):
        monkeypatch.setattr(client, "PAGE_SIZE", page)
        out = tmp_path / f"{context}.yaml"
        args = argparse.Namespace(kubeconfig=str(cluster.kubeconfig), context=context, output=str(out),
                                  agent_cronjob=None)
        assert command.run(args, now=NOW) == 0
        outputs.append(out.read_bytes())
    assert outputs[0] == outputs[1]
    assert {method for method, _ in sent} == {"GET"}
    assert sum(1 for _, query in sent if query.get("limit") == "1" and "continue" in query) >= len(NODES) - 1
    assert {query.get("labelSelector") for _, query in sent} == {None, "owner=helm"}
