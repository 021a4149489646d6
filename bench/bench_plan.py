"""Benchmarks for the plan targets; prints medians (not a test: timings vary by machine).

    python bench/bench_plan.py [--runs N] [--clusters N]

A temporary Git repository holds committed trees of ClusterSpecs made from the three examples (argocd + flux),
each spec then edited in the work tree as a pull request would (gpu-operator pinned one minor newer, every other
one also given a driver value). Targets, whole process of `aicr-gen plan` (Markdown): one cluster < 1.5 s;
50 clusters < 30 s on a 2-core machine; the 50-cluster Markdown under GitHub's 65,000-character comment limit.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import clean_env, command

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = [ROOT / "examples" / name for name in ("eks-h100-inference-dynamo.yaml", "gke-h100-training-kubeflow.yaml",
                                                  "kind-h100-inference-dynamo.yaml")]
COMMENT_LIMIT = 65_000



def _report(label: str, value: float, target: float, unit: str, kind: str = "median") -> bool:
    ok = value < target
    print(f"{label:<58} {kind:<6} {value:8.1f} {unit}   target < {target:g} {unit}   {'ok' if ok else 'MISS'}")
    return ok


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, stdout=subprocess.DEVNULL)


def _spec(index: int, changed: bool) -> dict[str, Any]:
    from aicr_gen.yaml import load_bytes

    example = EXAMPLES[index % len(EXAMPLES)]
    doc: dict[str, Any] = load_bytes(example.read_bytes(), str(example)).data
    doc["metadata"]["name"] = f"cluster-{index:02d}"
    doc["spec"]["repo"]["path"] = f"clusters/cluster-{index:02d}"
    doc["spec"]["deployers"] = ["argocd", "flux"]
    if changed:
        doc["spec"]["versions"] = {"gpu-operator": "v26.4.0"}
        if index % 2:
            doc["spec"]["overrides"] = {"set": ["gpu-operator:driver.version=590.48.01"], "setJson": []}
    return doc


def _repo(path: Path, count: int) -> list[str]:
    """A repository with ``count`` specs' trees committed (rendered in this process, which is quicker than
    ``count`` syncs), the specs then edited in the work tree. Returns the spec paths."""
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    from aicr_gen.yaml import dump

    subprocess.run(["git", "init", "-q", "-b", "main", str(path)], check=True)
    _git(path, "config", "user.name", "aicr-gen bench")
    _git(path, "config", "user.email", "bench@example.invalid")
    specs = []
    for index in range(count):
        spec = path / "clusters" / f"cluster-{index:02d}.yaml"
        spec.parent.mkdir(parents=True, exist_ok=True)
        spec.write_text(dump(_spec(index, changed=False)), encoding="utf-8")
        cluster = load_spec(spec)
        for name, data in render_tree(cluster, spec.parent).items():
            target = path / cluster.spec.repo.path / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        specs.append(str(spec))
    _git(path, "add", "-A")
    _git(path, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "the clusters")
    for index, name in enumerate(specs):
        Path(name).write_text(dump(_spec(index, changed=True)), encoding="utf-8")
    return specs


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or "bumped gpu-operator" not in proc.stdout:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr}")
    return elapsed, proc.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clusters", type=int, default=50)
    args = parser.parse_args()
    aicr_gen = command()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = clean_env(work)
        os.environ["AICR_GEN_CACHE_DIR"] = env["AICR_GEN_CACHE_DIR"]
        one, many = work / "one", work / "many"
        one_spec = _repo(one, 1)
        many_specs = _repo(many, args.clusters)
        single = [_timed([*aicr_gen, "plan", *one_spec, "--repo", str(one)], env)[0] for _ in range(args.runs)]
        fleet = [_timed([*aicr_gen, "plan", *many_specs, "--repo", str(many)], env) for _ in range(args.runs)]
    ok = _report("aicr-gen plan, 1 cluster, argocd + flux (process)", statistics.median(single), 1.5, "s")
    ok &= _report(f"aicr-gen plan, {args.clusters} clusters, argocd + flux (process)",
                  statistics.median(elapsed for elapsed, _text in fleet), 30, "s")
    ok &= _report(f"plan Markdown of {args.clusters} clusters (characters)", len(fleet[0][1]) / 1000,
                  COMMENT_LIMIT / 1000, "k", kind="size")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
