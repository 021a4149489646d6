"""Run every bench in one command, each bench's table then a summary of ok / MISS counts (not a test).

    AICR_BIN=$(../shared/tools/aicr/install) python bench/run_all.py [--quick]

bench_aicr.py (side by side with the Go AICR binary, issue 12's targets) at its defaults, then the older
per-issue benches with fewer repetitions to keep the whole run near 5 minutes on 2 cores; bench_kube.py only
when KUBEBUILDER_ASSETS is set. Lines starting "ok" count as ok, "MISS" or containing "OVER TARGET" as MISS.
Exits 0 either way.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

BENCHES: list[tuple[str, list[str]]] = [
    ("bench_aicr.py", []),
    ("bench_cli.py", ["--runs", "9"]),
    ("bench_bundle.py", ["--runs", "5"]),
    ("bench_diff.py", ["3"]),
    ("bench_sync.py", ["--runs", "5"]),
    ("bench_rules.py", ["--runs", "3"]),
    ("bench_plan.py", ["--runs", "2", "--clusters", "20"]),
    ("bench_fleet.py", ["--clusters", "1000"]),
    ("bench_rollout.py", ["--runs", "3"]),
    ("bench_reports.py", ["--runs", "21"]),
    ("bench_kube.py", ["3"]),
]


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", nargs="*", help="bench file names to run (default: all)")
    args = parser.parse_args()
    rows = []
    for name, extra in BENCHES:
        if args.only and name not in args.only:
            continue
        if name == "bench_kube.py" and not os.environ.get("KUBEBUILDER_ASSETS"):
            print(f"== {name}: skipped (KUBEBUILDER_ASSETS not set)\n", flush=True)
            rows.append((name, 0, 0, "skipped"))
            continue
        print(f"== {name} {' '.join(extra)}", flush=True)
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(HERE / name), *extra], capture_output=True, text=True,
                              check=False)
        elapsed = time.perf_counter() - start
        print(proc.stdout, end="")
        if proc.returncode != 0:
            print(proc.stderr[-2000:], end="")
        lines = proc.stdout.splitlines()
        ok = sum(1 for line in lines if line.startswith("ok") or line.rstrip().endswith("   ok"))
        miss = sum(1 for line in lines if line.startswith("MISS") or "OVER TARGET" in line)
        note = f"{elapsed:.0f} s" + ("" if proc.returncode in (0, 1) else f", exit {proc.returncode}")
        rows.append((name, ok, miss, note))
        print(flush=True)
    print("summary")
    for name, ok, miss, note in rows:
        print(f"  {name:<18} {ok:3d} ok  {miss:3d} MISS   ({note})")
    print(f"  {'total':<18} {sum(r[1] for r in rows):3d} ok  {sum(r[2] for r in rows):3d} MISS")
    print(f"load: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
