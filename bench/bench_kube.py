"""Benchmark aicr-gen against a real API server: etcd + kube-apiserver from ``KUBEBUILDER_ASSETS``, started by
``tests/cluster/envtest.py`` as the tests do, holding 4,096 GPU Nodes (labels, a taint, node info), 60 Helm
releases and 750 Pods (1,500 images). Prints medians against these targets:

* control plane start (etcd + kube-apiserver until /readyz): < 10 s;
* ``aicr-gen snapshot -o cm://bench/snapshot`` (capture, YAML over 900 KiB so gzip'ed binaryData, server-side
  apply), whole process: < 3 s;
* ``aicr-gen diff --baseline cm://bench/snapshot --target cm://bench/snapshot`` (two reads, gunzip, diff),
  whole process: < 2 s.

It also prints the floor every cluster command pays (an interpreter importing the official client) and, in
process, why aicr_gen.edges.kube reads raw JSON through ``ApiClient.call_api``: ``json.loads`` of 500 Nodes against the
client's model deserialisation, and the import of the generated ``CoreV1Api``.

    KUBEBUILDER_ASSETS=$(../shared/tools/envtest/assets) python bench/bench_kube.py [RUNS]
"""

from __future__ import annotations

import base64
import compileall
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from aicr_gen.edges.kube.client import Cluster, connect  # noqa: E402
from tests.cluster.envtest import ControlPlane, assets, missing_reason, no_proxy_env, start  # noqa: E402
from tests.drift.test_capture import release_secret  # noqa: E402

NODES = 4096
TARGET_START_S = 10
TARGET_SNAPSHOT_MS = 3000
TARGET_DIFF_MS = 2000
STARTS = 3


def _node(index: int) -> dict[str, Any]:
    name = f"gpu-{index:05d}"
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
              "node.kubernetes.io/instance-type": "p5.48xlarge",
              "topology.kubernetes.io/zone": f"us-west-2{'abcd'[index % 4]}",
              "nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3",
              "nvidia.com/gpu.count": "8", "nvidia.com/gpu.family": "hopper",
              "nvidia.com/cuda.driver-version.full": "570.124.06",
              **{f"feature.node.kubernetes.io/cpu-cpuid.AVX{n}": "true" for n in range(10)}}
    info = {"osImage": "Ubuntu 24.04.1 LTS", "kernelVersion": "6.8.0-1016-aws" if index % 64 else "6.8.0-1015-aws",
            "containerRuntimeVersion": "containerd://1.7.27", "kubeletVersion": "v1.33.0"}
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
            "status": {"nodeInfo": info}}


def _pod(index: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"app-{index}", "namespace": "bench"},
            "spec": {"automountServiceAccountToken": False, "containers": [
                {"name": f"c{n}", "image": f"registry.example.com/team-{index % 60}/service-{2 * index + n}:v1.{n}"}
                for n in range(2)]}}


def _fill(plane: ControlPlane) -> None:
    """Create everything with POSTs (a Node's status is accepted on create), eight at a time."""
    with connect(str(plane.kubeconfig)) as cluster:
        def post(path: str, body: dict[str, Any]) -> None:
            cluster.request("POST", path, body["kind"], body=body, content_type="application/json")

        post("/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "bench"}})
        post("/api/v1/namespaces/bench/serviceaccounts",
             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}})
        work = [("/api/v1/nodes", _node(i)) for i in range(NODES)]
        work += [("/api/v1/namespaces/bench/secrets", release_secret(f"rel{i}", "bench", 1, "deployed", f"chart{i}",
                                                                     version=f"1.{i}.0")) for i in range(60)]
        work += [("/api/v1/namespaces/bench/pods", _pod(i)) for i in range(750)]
        with ThreadPoolExecutor(8) as pool:
            list(pool.map(lambda item: post(*item), work))


def _median_ms(command: list[str], runs: int) -> float:
    times = []
    for _ in range(runs):
        began = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True, check=False, env=no_proxy_env())
        times.append(time.perf_counter() - began)
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(command[2:4])} exited {done.returncode}: {done.stderr}")
    return statistics.median(times) * 1000


def _verdict(ok: bool) -> str:
    return "ok  " if ok else "MISS"


def _why_raw_json(cluster: Cluster) -> None:
    prepared = cluster.api.param_serialize("GET", "/api/v1/nodes", query_params=[("limit", "500")],
                                           header_params={"Accept": "application/json"}, auth_settings=["BearerToken"])
    raw = cluster.api.call_api(*prepared).response.read()
    began = time.perf_counter()
    json.loads(raw)
    plain = time.perf_counter() - began
    began = time.perf_counter()
    cluster.api.deserialize(raw.decode(), "V1NodeList", "application/json")
    models = time.perf_counter() - began
    began = time.perf_counter()
    from kubernetes.client import CoreV1Api  # noqa: F401  (what the generated methods would add to every command)
    generated = time.perf_counter() - began
    print(f"500 Nodes ({len(raw) / 1e6:.1f} MB): json.loads {plain * 1000:.0f} ms, V1NodeList models "
          f"{models * 1000:.0f} ms; importing CoreV1Api {generated * 1000:.0f} ms", flush=True)


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 5
    binaries = assets()
    if binaries is None:
        raise SystemExit(missing_reason())
    import aicr_gen

    compileall.compile_dir(Path(aicr_gen.__file__).parent, quiet=1)  # as an installed wheel is
    with tempfile.TemporaryDirectory() as tmp:
        planes: list[ControlPlane] = []
        try:
            for index in range(STARTS):
                planes.append(start(Path(tmp, f"plane{index}"), binaries))
            starts = statistics.median(plane.started_seconds for plane in planes)
            for plane in planes[:-1]:
                plane.stop()
            plane = planes[-1]
            print(f"control plane start: median {starts:.1f} s of {STARTS}", flush=True)
            began = time.perf_counter()
            _fill(plane)
            print(f"created {NODES} Nodes, 60 Helm releases and 750 Pods in {time.perf_counter() - began:.1f} s",
                  flush=True)
            floor = _median_ms([sys.executable, "-c", "import kubernetes.client"], runs)
            print(f"floor: interpreter + import kubernetes.client {floor:.0f} ms", flush=True)
            cli = [sys.executable, "-m", "aicr_gen"]
            kubeconfig = ["--kubeconfig", str(plane.kubeconfig)]
            snapshot = _median_ms([*cli, "snapshot", *kubeconfig, "-o", "cm://bench/snapshot"], runs)
            with connect(str(plane.kubeconfig)) as cluster:
                stored = cluster.configmap("bench", "snapshot")
                _why_raw_json(cluster)
            packed = base64.b64decode(stored["binaryData"]["snapshot.yaml.gz"])
            print(f"snapshot: {len(gzip.decompress(packed)) / 1e6:.2f} MB of YAML, {len(packed) / 1e3:.0f} kB "
                  "gzip'ed in binaryData", flush=True)
            diff = _median_ms([*cli, "diff", "--baseline", "cm://bench/snapshot", "--target", "cm://bench/snapshot",
                               *kubeconfig, "--fail-on-drift"], runs)
        finally:
            for plane in planes:
                plane.stop()
    print(f"{_verdict(starts < TARGET_START_S)}  control plane start: {starts:.1f} s < {TARGET_START_S} s")
    print(f"{_verdict(snapshot < TARGET_SNAPSHOT_MS)}  snapshot -o cm:// of {NODES} nodes: {snapshot:.0f} ms < "
          f"{TARGET_SNAPSHOT_MS} ms")
    print(f"{_verdict(diff < TARGET_DIFF_MS)}  diff cm:// against cm://: {diff:.0f} ms < {TARGET_DIFF_MS} ms")


if __name__ == "__main__":
    main()
