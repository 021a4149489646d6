"""Benchmarks for the sync targets; prints medians (not a test: timings vary by machine).

    python bench/bench_sync.py [--runs N]

A temporary Git repository holds the tree of examples/eks-h100-inference-dynamo.yaml with two deployers
(argocd + flux), synced once. Targets: `aicr-gen sync --check` on that up-to-date repository, whole process
< 1 s; `aicr-gen sync` of a changed spec, whole process < 2 s (gpu-operator's spec.versions pin alternates
between two versions, so every run renders, commits and moves the branch).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from common import clean_env, command

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
PINS = ("v26.4.0", "v26.5.0")



def _report(label: str, value: float, target: float, unit: str) -> bool:
    ok = value < target
    print(f"{label:<58} median {value:8.1f} {unit}   target < {target:g} {unit}   {'ok' if ok else 'OVER TARGET'}")
    return ok


def _write_spec(path: Path, pin: str | None) -> None:
    from aicr_gen.yaml import dump, load_bytes

    doc: dict[str, Any] = load_bytes(EXAMPLE.read_bytes(), str(EXAMPLE)).data
    doc["spec"]["deployers"] = ["argocd", "flux"]
    doc["spec"]["versions"] = {"gpu-operator": pin} if pin else {}
    path.write_text(dump(doc), encoding="utf-8")


def _git_repo(path: Path) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", "-C", str(path), *args], check=True, stdout=subprocess.DEVNULL)

    subprocess.run(["git", "init", "-q", str(path)], check=True)
    git("symbolic-ref", "HEAD", "refs/heads/main")
    git("config", "user.name", "aicr-gen bench")
    git("config", "user.email", "bench@example.invalid")
    git("-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", "initial commit")


def _timed_ms(argv: list[str], env: dict[str, str], expect: str) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    if proc.returncode != 0 or expect not in proc.stderr + proc.stdout:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}, expected {expect!r}\n{proc.stdout}{proc.stderr}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    args = parser.parse_args()
    aicr_gen = command()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        env = clean_env(work)
        repo, base = work / "gitops", work / "base.yaml"
        _git_repo(repo)
        _write_spec(base, None)
        variants = [work / f"pin-{index}.yaml" for index in range(len(PINS))]
        for path, pin in zip(variants, PINS, strict=True):
            _write_spec(path, pin)
        sync = [*aicr_gen, "sync", "--repo", str(repo)]
        _timed_ms([*sync, str(base)], env, "committed")  # the first tree, and a warm parse cache
        check = [_timed_ms([*sync, "--check", str(base)], env, "up to date") for _ in range(args.runs)]
        changed = [_timed_ms([*sync, str(variants[run % len(variants)])], env, "committed")
                   for run in range(args.runs)]
    ok = _report("aicr-gen sync --check, up to date, argocd + flux (process)", statistics.median(check), 1000, "ms")
    ok &= _report("aicr-gen sync, changed spec, argocd + flux (process)", statistics.median(changed), 2000, "ms")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
