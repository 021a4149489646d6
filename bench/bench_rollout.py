"""Benchmark of ``aicr-gen rollout`` over a fleet from exported evidence (issue 28 item 5); prints medians and
ok/MISS (not a test).

    python bench/bench_rollout.py [--fleet N] [--runs R] [--profile] [--save-json FILE] [--rebuild]

``bench_fleet.generate`` writes N ClusterSpecs (default 1,000; its training criteria, whose recipes deploy NVCRE)
extending one Fleet that certifies after every change (``spec.certification.postChange``) and rolls out in three
waves: ``canary`` (the first 10 clusters, by name), ``ring-1`` (every tenth other cluster, label ``ring: "1"``) and
``ring-2`` (the rest, ``ring: "2"``). They are synced on gpu-operator v26.3.3, then the canary's bump to v26.4.0 is
committed and synced (10 trees change). Each cluster then gets exported evidence as ``kubectl get -o yaml`` writes
it (``tests/rollout/exported.py``, the tests' fixtures): a Certification of a previous stack and one of the tree's
stack, each with its Workflow and BandwidthMeasurement, the root Application at HEAD, 8-64 GPU Nodes, NVSentinel's
breaker ConfigMap and an AICR snapshot of the recipe's versions; every 97th cluster of ring-2 is still certifying
(its gate waits).

Timed, whole process, at a time after the canary's soak: ``aicr-gen rollout status FLEET --evidence DIR --format
json``, target <= 10 s for 1,000 clusters (median of R runs; peak RSS of the process tree as ``bench_fleet`` samples
it), and ``rollout advance --dry-run`` (which decides "advance ring-1 (from canary)"). ``--profile`` prints where
one status run's time goes (cProfile of one run in one process: aicr_gen's top 15 by cumulative time, the top 10 by
own time); ``--save-json`` keeps the status document (to compare the output of two versions of aicr-gen).
``--node-status`` reads Nodes as the API server lists them instead of the fixtures' minimal ones (the kubelet's
status, NFD and GFD labels, 12 images: about 5 KiB each, 195 MiB of evidence for 1,000 clusters), as ``kubectl get
nodes -o yaml`` exports them.

The repository and the evidence are built once (two syncs of N specs: minutes) and kept under the temporary
folder by a digest of what they are made of; ``rollout`` reads the committed trees whatever code synced them, so
aicr-gen's code is not part of the digest (``--rebuild`` builds them again).
"""

from __future__ import annotations

import argparse
import hashlib
import inspect
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml
from bench_fleet import CRITERIA, FLEET, PINS, POLICY_FILE, generate, timed
from common import Verdicts, clean_env, command, kept

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.rollout import exported  # noqa: E402

TARGET_S = 10.0
CANARY = 10
FINISHED = "2026-12-01T11:00:00Z"
"""When the clusters' Certifications of their trees finished (after the canary's apply at 09:30)."""
NOW = "2026-12-02T12:00:00Z"
"""The time the runs judge at: the canary soaked its 24 h."""
TRAINING = [criteria for criteria in CRITERIA if criteria[2] == "training"]
"""bench_fleet's training clusters: their recipes deploy NVCRE, which runs the certification."""
WAVES = [{"name": "canary", "soak": "24h"}, {"name": "ring-1", "selector": {"ring": "1"}, "soak": "24h"},
         {"name": "ring-2", "selector": {"ring": "2"}, "soak": "48h"}]


def _names(count: int) -> list[str]:
    return [f"c{number:05d}" for number in range(count)]


def _labels(count: int) -> dict[str, dict[str, str]]:
    """Cluster -> its labels: none for the canary (listed by name), ``ring`` 1 for every tenth other, else 2."""
    return {name: {} if index < CANARY else {"ring": "1" if index % 10 == 0 else "2"}
            for index, name in enumerate(_names(count))}


def _fleet(count: int, canary: str) -> str:
    """bench_fleet's fleet, certifying after every change, with the waves (the canary on ``canary``)."""
    data = yaml.safe_load(FLEET.format(pin=PINS[0], policy=POLICY_FILE))
    data["spec"]["certification"]["postChange"] = True
    waves = [{**wave, "spec": {"versions": {"gpu-operator": canary if wave["name"] == "canary" else PINS[0]}}}
             for wave in WAVES]
    waves[0]["clusters"] = _names(count)[:CANARY]
    data["rollout"] = {"waves": waves}
    return yaml.safe_dump(data, sort_keys=False)


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


def _build_repo(repo: Path, count: int, aicr_gen: list[str], env: dict[str, str]) -> None:
    """The fleet synced on PINS[0], then the canary's bump to PINS[1] committed and synced."""
    labels = _labels(count)
    generate(repo, count, _fleet(count, PINS[0]), labels.__getitem__, TRAINING)
    sync = [*aicr_gen, "sync", "specs/*.yaml", "--repo", str(repo)]
    for step in ("first", "canary bump"):
        if step != "first":
            (repo / "fleet.yaml").write_text(_fleet(count, PINS[1]))
            _git(repo, "commit", "-qam", f"canary: gpu-operator {PINS[1]}")
        started = time.perf_counter()
        subprocess.run(sync, check=True, env=env, cwd=repo, stdout=subprocess.DEVNULL)
        print(f"built: sync of {count} clusters, {step}: {time.perf_counter() - started:.1f} s", flush=True)


def _breaker() -> dict[str, Any]:
    """NVSentinel's circuit breaker, closed."""
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "circuit-breaker", "namespace": "nvsentinel"},
            "data": {"status": "CLOSED"}}


def write_evidence(repo: Path, folder: Path, count: int) -> None:
    """Every cluster's exported evidence (see the module's docstring); the same for the same repository."""
    head = _git(repo, "rev-parse", "HEAD").strip()
    labels = _labels(count)
    rng = random.Random(28)
    for index, name in enumerate(_names(count)):
        path = f"clusters/{name}"
        before = "sha256:" + hashlib.sha256(f"{name} before".encode()).hexdigest()
        running = labels[name].get("ring") == "2" and index % 97 == 0
        certs = [*exported.certification(f"{name}-cert-1", before, bus_bw=rng.uniform(380, 460),
                                         created="2026-11-20T10:00:00Z", finished="2026-11-20T11:00:00Z"),
                 *exported.certification(f"{name}-cert-2", exported.stack_digest(repo, path),
                                         outcome="InProgress" if running else "Succeeded",
                                         bus_bw=None if running else rng.uniform(380, 460), finished=FINISHED)]
        exported.write(folder, name, [*certs, exported.application(head), *exported.nodes(rng.randint(8, 64)),
                                      _breaker()], exported.snapshot(exported.recipe_refs(repo, path)))


def built(count: int, aicr_gen: list[str], rebuild: bool) -> tuple[Path, Path, dict[str, str]]:
    """The fleet's repository and its evidence folder (built once, see the module's docstring), and the
    environment of the runs."""
    made_of = (count, CANARY, WAVES, PINS, FLEET, TRAINING, inspect.getsource(generate), inspect.getsource(_fleet),
               inspect.getsource(write_evidence), Path(exported.__file__).read_text())
    base, done = kept("rollout", made_of)
    if rebuild and done:
        shutil.rmtree(base)
        base, done = kept("rollout", made_of)
    env = clean_env(base)
    repo, evidence = base / "repo", base / "evidence"
    if not done:
        base.mkdir(parents=True)
        _build_repo(repo, count, aicr_gen, env)
        started = time.perf_counter()
        write_evidence(repo, evidence, count)
        print(f"built: evidence of {count} clusters: {time.perf_counter() - started:.1f} s", flush=True)
        (base / "done").touch()
    return repo, evidence, env


IMAGES = ("nvcr.io/nvidia/driver:580.95.05-ubuntu24.04", "nvcr.io/nvidia/k8s/container-toolkit:v1.17.8",
          "nvcr.io/nvidia/k8s-device-plugin:v0.17.4", "nvcr.io/nvidia/k8s/dcgm-exporter:4.2.3-4.3.1-ubuntu22.04",
          "nvcr.io/nvidia/cloud-native/dcgm:4.2.3-1-ubuntu22.04", "nvcr.io/nvidia/gpu-feature-discovery:v0.17.4",
          "registry.k8s.io/nfd/node-feature-discovery:v0.17.3", "nvcr.io/nvidia/cloud-native/k8s-mig-manager:v0.12.3",
          "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v25.3.4", "nvcr.io/nvidia/nvsentinel/agent:v0.9.0",
          "registry.k8s.io/kube-proxy:v1.33.0", "public.ecr.aws/eks/aws-vpc-cni:v1.19.6")


def kubelet_status(node: dict[str, Any], index: int) -> dict[str, Any]:
    """``node`` as the API server lists it: with the labels node-feature-discovery and GPU feature discovery add
    and the status the kubelet writes (addresses, capacity, allocatable, conditions, node info, images)."""
    gpus = {"cpu": "192", "memory": "2113929216Ki", "nvidia.com/gpu": "8", "pods": "110", "rdma/ib": "8",
            "ephemeral-storage": "3750000000Ki", "hugepages-1Gi": "0", "hugepages-2Mi": "0"}
    meta = {**node["metadata"], "uid": f"{index:08d}-0000-4000-8000-000000000000", "resourceVersion": str(1000 + index),
            "creationTimestamp": "2026-11-01T00:00:00Z"}
    meta["labels"] = {**meta["labels"], "kubernetes.io/hostname": meta["name"], "kubernetes.io/os": "linux",
                      "kubernetes.io/arch": "amd64", "node.kubernetes.io/instance-type": "p5.48xlarge",
                      "topology.kubernetes.io/zone": f"us-west-2{'abcd'[index % 4]}",
                      "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8",
                      "nvidia.com/cuda.driver-version.full": "580.95.05",
                      **{f"feature.node.kubernetes.io/cpu-cpuid.AVX{n}": "true" for n in range(10)}}
    conditions = [{"type": kind, "status": "True" if kind == "Ready" else "False", "reason": f"Kubelet{kind}",
                   "message": f"kubelet reports {kind}", "lastHeartbeatTime": "2026-12-01T11:59:00Z",
                   "lastTransitionTime": "2026-11-01T00:05:00Z"}
                  for kind in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")]
    status = {"addresses": [{"type": "InternalIP", "address": f"10.{index // 250}.{index % 250}.10"},
                            {"type": "Hostname", "address": meta["name"]}],
              "capacity": gpus, "allocatable": {**gpus, "cpu": "191", "memory": "2097152000Ki"},
              "conditions": conditions, "daemonEndpoints": {"kubeletEndpoint": {"Port": 10250}},
              "nodeInfo": {"architecture": "amd64", "bootID": f"{index:036d}", "containerRuntimeVersion":
                           "containerd://1.7.27", "kernelVersion": "6.8.0-1016-aws", "kubeProxyVersion": "",
                           "kubeletVersion": "v1.33.0", "machineID": f"{index:032x}", "operatingSystem": "linux",
                           "osImage": "Ubuntu 24.04.1 LTS", "systemUUID": f"ec2{index:033d}"},
              "images": [{"names": [f"{image.split(':')[0]}@sha256:{hashlib.sha256(image.encode()).hexdigest()}",
                                    image], "sizeBytes": 100_000_000 + 7_919 * number}
                         for number, image in enumerate(IMAGES)]}
    return {**node, "metadata": meta, "status": status}


def _with_kubelet_status(evidence: Path) -> Path:
    """A copy of ``evidence`` whose Nodes are as the API server lists them (``kubelet_status``), built once next
    to it (libyaml's emitter: hundreds of MiB)."""
    key = hashlib.sha256((inspect.getsource(kubelet_status) + repr(IMAGES)).encode()).hexdigest()[:16]
    folder = evidence.parent / f"evidence-kubelet-{key}"
    if (folder / "done").exists():
        return folder
    shutil.rmtree(folder, ignore_errors=True)
    started = time.perf_counter()
    shutil.copytree(evidence, folder)
    for file in sorted(folder.glob("*/nodes.yaml")):
        data = yaml.load(file.read_text(), Loader=yaml.CSafeLoader)
        data["items"] = [kubelet_status(node, index) for index, node in enumerate(data["items"])]
        file.write_text(yaml.dump(data, Dumper=yaml.CSafeDumper, sort_keys=False))
    (folder / "done").touch()
    print(f"built: evidence with full Nodes: {time.perf_counter() - started:.1f} s", flush=True)
    return folder


def _size(folder: Path) -> str:
    files = [item for item in folder.rglob("*") if item.is_file()]
    return f"{len(files)} files, {sum(item.stat().st_size for item in files) / 2**20:.0f} MiB"


def _runs(argv: list[str], env: dict[str, str], expect: str, runs: int) -> tuple[float, float, float]:
    """Median seconds and median CPU seconds (the process and its workers) of ``runs`` runs, and the largest peak
    MiB of the process tree (``bench_fleet.timed``)."""
    found = []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        seconds, peak, _largest = timed(argv, env, expect)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        found.append((seconds, after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime, peak))
    return (statistics.median(row[0] for row in found), statistics.median(row[1] for row in found),
            max(row[2] for row in found))


_PROFILED = """\
import sys

import aicr_gen.gitops.render_many as render_many
from aicr_gen.cli.main import main

render_many.workers_for = lambda count, jobs: 1  # one process: cProfile sees what the workers would do
sys.exit(main(sys.argv[1:]))
"""


def _profile(argv: list[str], env: dict[str, str], work: Path) -> None:
    """One status run under cProfile, in one process: the top 15 of aicr-gen's functions by cumulative time and
    the top 10 of all by own time."""
    import pstats

    out, script = work / "status.prof", work / "profiled.py"
    script.write_text(_PROFILED)
    proc = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(out), str(script), *argv], capture_output=True,
                          text=True, env=env, check=False)
    if proc.returncode != 0:
        sys.exit(f"profile run: exit {proc.returncode}\n{proc.stderr[-2000:]}")
    stats = pstats.Stats(str(out), stream=sys.stdout)
    print("\nprofile of one `rollout status` in one process (cProfile): aicr_gen, top 15 by cumulative time")
    stats.sort_stats("cumulative").print_stats("/aicr_gen/", 15)
    print("all functions, top 10 by own time")
    stats.sort_stats("tottime").print_stats(10)


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--fleet", type=int, default=1000, metavar="N", help="clusters in the fleet (default 1000)")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--profile", action="store_true", help="print a cProfile of one status run")
    parser.add_argument("--save-json", metavar="FILE", help="keep the status document of the runs in FILE")
    parser.add_argument("--node-status", action="store_true", help="Nodes as the API server lists them (kubelet "
                        "status, labels, images) instead of the tests' minimal ones")
    parser.add_argument("--rebuild", action="store_true", help="build the repository and the evidence again")
    args = parser.parse_args()
    aicr_gen = command()
    repo, evidence, env = built(args.fleet, aicr_gen, args.rebuild)
    if args.node_status:
        evidence = _with_kubelet_status(evidence)
    print(f"{'':6}{'evidence':<44} {args.fleet} clusters, {_size(evidence)}", flush=True)
    verdicts = Verdicts()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        document = work / "status.json"
        status = ["rollout", "status", str(repo / "fleet.yaml"), "--evidence", str(evidence), "--now", NOW,
                  "--format", "json", "--output", str(document)]
        median, cpu, peak = _runs([*aicr_gen, *status], env, "", args.runs)
        found = json.loads(document.read_text())
        if found["summary"]["clusters"] != args.fleet or found["next"]["action"] != "advance":
            sys.exit(f"rollout status: unexpected summary {found['summary']}, next {found['next']['action']}")
        nodes = ", full Nodes" if args.node_status else ""
        verdicts.check(f"rollout status, {args.fleet} clusters (JSON{nodes})", median <= TARGET_S,
                       f"{median:7.2f} s   target <= {TARGET_S:g} s (CPU {cpu:.2f} s, peak {peak:.0f} MiB)")
        advance = ["rollout", "advance", str(repo / "fleet.yaml"), "--evidence", str(evidence), "--now", NOW,
                   "--dry-run"]
        median, cpu, peak = _runs([*aicr_gen, *advance], env, "would advance ring-1 (from canary)", args.runs)
        print(f"{'':6}{f'rollout advance --dry-run, {args.fleet} clusters':<44} {median:7.2f} s   (CPU {cpu:.2f} s, "
              f"peak {peak:.0f} MiB)", flush=True)
        if args.save_json:
            shutil.copyfile(document, args.save_json)
        if args.profile:
            _profile(status, env, work)
    print(verdicts.summary())
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())} on {os.cpu_count()} CPU(s)")
    return 0 if verdicts.miss == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
