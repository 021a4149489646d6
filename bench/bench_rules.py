"""Benchmark for `aicr-gen rules test`; prints medians (not a test: timings vary by machine).

    python bench/bench_rules.py [--runs N] [--events N] [--reference DIR]

The chart's six default fault-quarantine rule sets against 10,000 HealthEvents made from NVSentinel's
tests/data samples (agents, components, fatality, error codes, actions and nodes varied so every rule set
matches some events), on 200 Nodes of which some opted out. Timed as users run it: a whole process,
events as one file per event in a folder, and as ten files of 1,000. Target: < 5 s.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from common import command

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_REFERENCE = ROOT.parent / "shared" / "reference"
TARGET_SECONDS = 5.0

AGENTS = [("gpu-health-monitor", "GPU", "GpuXidError"), ("syslog-health-monitor", "GPU", "SysLogsXIDError"),
          ("syslog-health-monitor", "NIC", "SysLogsSXIDError"), ("csp-health-monitor", "EC2", "CSPMaintenance"),
          ("nic-health-monitor", "NIC", "InfiniBandDegradationCheck"),
          ("kubernetes-object-monitor", "Node", "NodeNotReady"), ("preflight-dcgm-diag", "GPU", "DcgmDiag")]
XIDS = ["13", "31", "43", "45", "48", "63", "64", "74", "79", "94", "95", "119", "145"]
ACTIONS = [0, 2, 5, 15, 24, 25]


def make_events(samples: list[dict[str, object]], count: int, nodes: int) -> list[dict[str, object]]:
    """``count`` events: each a sample with its agent, fatality, error code, action and node varied."""
    rng = random.Random(20260801)
    events = []
    for index in range(count):
        event = dict(samples[index % len(samples)])
        agent, component, check = AGENTS[rng.randrange(len(AGENTS))]
        fatal = rng.random() < 0.7
        event.update(agent=agent, componentClass=component, checkName=check, isFatal=fatal, isHealthy=not fatal,
                     errorCode=[rng.choice(XIDS)] if fatal else [], recommendedAction=rng.choice(ACTIONS),
                     nodeName=f"gpu-node-{rng.randrange(nodes):03d}", message=f"event {index}",
                     generatedTimestamp=f"2026-08-01T{index // 3600 % 24:02d}:{index // 60 % 60:02d}:"
                                        f"{index % 60:02d}Z")
        events.append(event)
    return events


def make_nodes(count: int) -> dict[str, object]:
    items = []
    for index in range(count):
        labels = {"kubernetes.io/hostname": f"gpu-node-{index:03d}", "nvidia.com/gpu.present": "true",
                  "nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}
        if index % 10 == 0:
            labels["nvsentinel.dgxc.nvidia.com/managed"] = "false"
        items.append({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"gpu-node-{index:03d}",
                                                                      "labels": labels}, "spec": {}})
    return {"apiVersion": "v1", "kind": "List", "items": items}



def _median(argv: list[str], runs: int) -> tuple[float, str]:
    times, out = [], ""
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, check=True, capture_output=True, text=True)
        times.append(time.perf_counter() - start)
        out = proc.stdout
    return statistics.median(times), out


def _report(label: str, seconds: float) -> None:
    verdict = "ok" if seconds < TARGET_SECONDS else "OVER TARGET"
    print(f"{label:<58} median {seconds:6.2f} s   target < {TARGET_SECONDS:g} s   {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--events", type=int, default=10_000)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--reference", type=Path,
                        default=Path(os.environ.get("AICR_GEN_REFERENCE", DEFAULT_REFERENCE)))
    args = parser.parse_args()
    nvsentinel = args.reference / "nvsentinel"
    values = nvsentinel / "distros" / "kubernetes" / "nvsentinel" / "charts" / "fault-quarantine" / "values.yaml"
    samples = [json.loads(path.read_text(encoding="utf-8"))
               for path in sorted((nvsentinel / "tests" / "data").glob("*.json"))]
    if not samples or not values.is_file():
        sys.exit(f"NVSentinel reference not found under {args.reference} (use --reference)")
    events = make_events(samples, args.events, args.nodes)
    with tempfile.TemporaryDirectory(prefix="bench-rules-") as tmp:
        root = Path(tmp)
        one_per_file, batched = root / "events", root / "batched"
        one_per_file.mkdir()
        batched.mkdir()
        for index, event in enumerate(events):
            (one_per_file / f"event-{index:05d}.json").write_text(json.dumps(event), encoding="utf-8")
        for start in range(0, len(events), 1000):
            chunk = events[start:start + 1000]
            (batched / f"events-{start // 1000:02d}.json").write_text(json.dumps(chunk), encoding="utf-8")
        nodes = root / "nodes.json"
        nodes.write_text(json.dumps(make_nodes(args.nodes)), encoding="utf-8")
        base = [*command(), "rules", "test", "--values", str(values), "--nodes", str(nodes), "--format", "json"]
        print(f"{len(events)} events, {args.nodes} nodes, 6 default rule sets, {args.runs} runs each")
        seconds, out = _median([*base, "--events", str(one_per_file)], args.runs)
        _report(f"rules test, {len(events)} files of one event", seconds)
        matched: dict[str, int] = {}
        for item in json.loads(out):
            for name in item["matched"]:
                matched[name] = matched.get(name, 0) + 1
        seconds, _out = _median([*base, "--events", str(batched)], args.runs)
        _report(f"rules test, {len(events) // 1000} files of 1000 events", seconds)
        cordoned = sum(1 for item in json.loads(out) if item["cordon"])
        print(f"cordoned {cordoned} of {len(events)}; matches per rule set: "
              + ", ".join(f"{name} {count}" for name, count in sorted(matched.items())))


if __name__ == "__main__":
    main()
