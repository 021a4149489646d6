"""``aicr-gen snapshot`` without a cluster: the snapshot built from recorded EKS API objects, Helm release
decoding, image names and the agent CronJob bundle (tests/cluster/test_capture_real.py captures a real one)."""

from __future__ import annotations

import base64
import datetime
import gzip
import json
import random
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen import __version__
from aicr_gen.cli.main import main
from aicr_gen.commands.snapshot import configmap_payload
from aicr_gen.drift import capture
from aicr_gen.drift.agent import agent_bundle
from aicr_gen.errors import InvalidInputError
from tests.consumers import validate_manifests
from tests.kubeapi import subtype_data

FIXTURES = Path(__file__).parents[1] / "fixtures" / "capture"
NOW = datetime.datetime(2026, 3, 2, 9, 15, 0, tzinfo=datetime.UTC)


def release_secret(name: str, namespace: str, revision: int, status: str, chart: str, *,
                   version: str) -> dict[str, Any]:
    """A Helm 3 release Secret as Helm stores it (also what to create on a test server): data.release is
    base64 (by the API) of Helm's base64 of the gzip'ed release JSON."""
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
        "apiVersion": "v1", "kind": "Secret",
        "metadata": {"name": f"sh.helm.release.v1.{name}.v{revision}", "namespace": namespace,
                     "labels": {"name": name, "owner": "helm", "status": status, "version": str(revision)}},
        "type": "helm.sh/release.v1",
        "data": {"release": base64.b64encode(helm_encoded).decode()},
    }


SECRETS = {"kind": "SecretList", "apiVersion": "v1", "metadata": {"resourceVersion": "4713"}, "items": [
    release_secret("gpu-operator", "gpu-operator", 1, "superseded", "gpu-operator", version="v25.3.0"),
    release_secret("gpu-operator", "gpu-operator", 2, "deployed", "gpu-operator", version="v25.10.1"),
    release_secret("gpu-operator", "gpu-operator", 3, "failed", "gpu-operator", version="v26.3.1"),
    release_secret("nvsentinel", "nvsentinel", 1, "deployed", "nvsentinel", version="v1.9.0"),
]}


GPU_NODES = "ip-10-0-12-34.ec2.internal,ip-10-0-12-35.ec2.internal"
ALL_NODES = f"ip-10-0-1-10.ec2.internal,{GPU_NODES}"


def _recorded(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text())


def test_snapshot_of_recorded_eks_objects() -> None:
    """Objects as an EKS API server returns them (kubelet-set statuses and digests the test server lacks)."""
    snapshot = capture.build_snapshot(_recorded("version.json"), _recorded("nodes.json")["items"], SECRETS["items"],
                                      _recorded("pods.json")["items"], NOW)
    assert snapshot["kind"] == "Snapshot" and snapshot["apiVersion"] == "aicr.run/v1"
    assert snapshot["metadata"] == {"timestamp": "2026-03-02T09:15:00Z", "version": __version__, "source": "aicr-gen"}
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


def test_bad_helm_secrets_are_skipped() -> None:
    good = SECRETS["items"][1]
    broken = {**good, "data": {"release": base64.b64encode(b"not base64 !!").decode()}}
    other = {**good, "type": "Opaque"}
    assert capture.decode_release(broken) is None and capture.decode_release(other) is None
    assert capture.helm_data([broken, other, good]) == {
        "gpu-operator.chart": "gpu-operator", "gpu-operator.version": "v25.10.1",
        "gpu-operator.namespace": "gpu-operator"}
    failed_only = release_secret("kai", "kai-scheduler", 1, "failed", "kai-scheduler", version="v0.14.1")
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


def test_configmap_payload_gzips_above_900_kib_and_refuses_what_stays_too_big() -> None:
    assert configmap_payload("measurements: []\n", "T") == (
        {"snapshot.yaml": "measurements: []\n", "format": "yaml", "timestamp": "T"}, {})
    noise = base64.b64encode(random.Random(0).randbytes(1_100_000)).decode()
    with pytest.raises(InvalidInputError, match="even gzip'ed, over the 1 MiB ConfigMap limit; write it to a file"):
        configmap_payload(noise, "T")
