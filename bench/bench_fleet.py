"""Benchmark of a fleet in one repository (issue 14 items 2 and 3); prints times and ok/MISS (not a test).

    python bench/bench_fleet.py [--clusters N] [--jobs J]

A generator writes N ClusterSpecs (default 1,000) extending one Fleet file, on the embedded catalog, with a
mix of criteria (EKS H100/H200/GB200 inference and training, GKE H100 training, kind H100 for development), into a
new Git repository, then times whole `aicr-gen` processes:

- `sync specs/*.yaml`: the first sync, every tree rendered, one commit (no target: it is the one-off cost);
- `sync --check specs/*.yaml` of the up-to-date repository: target <= 5 s (answered from the inputs records);
- a fleet-wide pin bump (gpu-operator's version in the fleet file) then `sync specs/*.yaml`: target <= 60 s;
- `sync --check` again, which must pass on the bumped trees.

Peak memory is the largest sum of VmRSS over the aicr-gen process and its workers, sampled from /proc every
20 ms (and the kernel's peak of the largest single process, RUSAGE_CHILDREN's ru_maxrss): target <= 1 GiB.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from common import ROOT, Verdicts, clean_env, command

sys.path.insert(0, str(ROOT))

from tests.nvcre_elsewhere import POLICY_FILE, write_policy

CRITERIA = [  # (service, accelerator, intent, os, platform), each resolvable in the embedded catalog
    ("eks", "h100", "inference", "ubuntu", "dynamo"),
    ("eks", "h100", "training", "ubuntu", "kubeflow"),
    ("eks", "h200", "inference", "ubuntu", "dynamo"),
    ("gke", "h100", "training", "cos", "kubeflow"),
    ("eks", "gb200", "training", "ubuntu", "kubeflow"),
    ("kind", "h100", "inference", "ubuntu", "dynamo"),
]
FLEET = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Fleet
metadata:
  name: bench-fleet
spec:
  deployers: [argocd]
  repo:
    url: "https://github.com/example/gitops.git"
    branch: main
  versions:
    gpu-operator: {pin}
  certification:
    categories: [communication/nccl-all-reduce]
    thresholds:
      busBandwidthGBps: "value >= 300"
  sentinel:
    mode: monitor
  policies: [{policy}]
"""
SPEC = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: "{name}"{labels}
spec:
  extends: ../fleet.yaml
  criteria: {{service: "{0}", accelerator: "{1}", intent: "{2}", os: "{3}", platform: "{4}"}}
  repo:
    path: "clusters/{name}"
"""
PINS = ("v26.3.3", "v26.4.0")


def generate(repo: Path, count: int, fleet: str = FLEET.format(pin=PINS[0], policy=POLICY_FILE),
             labels: Callable[[str], Mapping[str, str]] = lambda name: {},
             criteria: Sequence[tuple[str, ...]] = CRITERIA) -> None:
    """A Git repository holding the ``fleet`` file and ``count`` specs extending it (named ``c00000``..., on
    ``criteria`` in turn, given ``labels(name)``), committed."""
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(repo), *args], check=True, stdout=subprocess.DEVNULL)

    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    git("config", "user.name", "aicr-gen bench")
    git("config", "user.email", "bench@example.invalid")
    git("config", "commit.gpgsign", "false")
    (repo / "fleet.yaml").write_text(fleet)
    write_policy(repo)  # the fleet certifies inference clusters too: NVCRE installed outside the repository
    specs = repo / "specs"
    specs.mkdir()
    for number in range(count):
        name = f"c{number:05d}"
        own = labels(name)
        (specs / f"{name}.yaml").write_text(SPEC.format(*criteria[number % len(criteria)], name=name, labels=(
            f"\n  labels: {json.dumps(dict(own), sort_keys=True)}" if own else "")))
    git("add", ".")
    git("commit", "-q", "-m", "the fleet's specs")


class Peak:
    """The largest total VmRSS of a process and its descendants, sampled while it runs."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak_kib, self._done = pid, 0, threading.Event()
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()

    def _tree(self) -> list[int]:
        children: dict[int, list[int]] = {}
        for entry in Path("/proc").iterdir():
            if entry.name.isdigit():
                try:
                    ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
                except (OSError, IndexError, ValueError):
                    continue
                children.setdefault(ppid, []).append(int(entry.name))
        found, todo = [], [self.pid]
        while todo:
            pid = todo.pop()
            found.append(pid)
            todo += children.get(pid, [])
        return found

    def _sample(self) -> None:
        while not self._done.is_set():
            total = 0
            for pid in self._tree():
                try:
                    status = Path(f"/proc/{pid}/status").read_text()
                except OSError:
                    continue
                total += next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:")), 0)
            self.peak_kib = max(self.peak_kib, total)
            self._done.wait(0.02)

    def stop(self) -> None:
        self._done.set()
        self._thread.join()


def timed(argv: list[str], env: dict[str, str], expect: str) -> tuple[float, float, float]:
    """Seconds, peak MiB of the process tree, kernel peak MiB of the largest process; exits on a surprise."""
    start = time.perf_counter()
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    peak = Peak(proc.pid)
    out, err = proc.communicate()
    elapsed = time.perf_counter() - start
    peak.stop()
    text = out.decode() + err.decode()
    if proc.returncode != 0 or expect not in text:
        sys.exit(f"{' '.join(argv[-4:])}: exit {proc.returncode}, expected {expect!r}\n{text[-3000:]}")
    import resource

    return elapsed, peak.peak_kib / 1024, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--clusters", type=int, default=1000)
    parser.add_argument("--jobs", type=int, help="aicr-gen sync --jobs (default: its own, one per CPU)")
    args = parser.parse_args()
    aicr_gen = command()
    verdicts = Verdicts()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = clean_env(work)
        repo = work / "gitops"
        generate(repo, args.clusters)
        jobs = ["--jobs", str(args.jobs)] if args.jobs else []
        sync = [*aicr_gen, "sync", str(repo / "specs" / "*.yaml"), "--repo", str(repo), *jobs]
        first, first_mib, _ = timed(sync, env, "committed")
        print(f"{'':6}{'sync, first (every tree rendered)':<44} {first:7.1f} s  peak {first_mib:6.0f} MiB", flush=True)
        check, check_mib, _ = timed([*sync, "--check"], env, f"{args.clusters} of {args.clusters} tree(s) up to date")
        verdicts.check(f"sync --check, {args.clusters} up to date", check <= 5, f"{check:7.2f} s   target <= 5 s")
        fleet = repo / "fleet.yaml"
        fleet.write_text(fleet.read_text().replace(PINS[0], PINS[1]))
        bump, bump_mib, bump_largest = timed(sync, env, f"{args.clusters} cluster(s) changed")
        verdicts.check(f"sync, fleet-wide pin bump of {args.clusters}", bump <= 60, f"{bump:7.1f} s   target <= 60 s")
        after, after_mib, _ = timed([*sync, "--check"], env, f"{args.clusters} of {args.clusters} tree(s) up to date")
        print(f"{'':6}{'sync --check after the bump':<44} {after:7.2f} s", flush=True)
        peak = max(first_mib, check_mib, bump_mib, after_mib)
        verdicts.check("peak memory (process tree, all runs)", peak <= 1024,
                       f"{peak:7.0f} MiB target <= 1024 MiB (largest process {bump_largest:.0f} MiB)")
    print(verdicts.summary())
    return 0 if verdicts.miss == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
