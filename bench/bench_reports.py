"""Benchmarks for the offline reports; prints medians (not a test: timings vary by machine).

    python bench/bench_reports.py [--runs N] [--reference DIR]

Target: parsing the 10-node nccl-tests log (5 collectives, 80 ranks, 46 KB) in-process < 50 ms.
Also shown: the Markdown rendering of it, a 64-node bisection simulated with two bad nodes, and the
whole `aicr-gen report nccl` process.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TEN_NODES = ("nccl/xxrjun-nccl-tests-cluster/benchmarks/example-cluster01/nccl-benchmark-results/multi-node/runs/"
             "20260129-180219/without-debug/logs/nccl_N10_G8.log")


def _median_ms(function: Callable[[], object], runs: int) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        function()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _report(label: str, value: float, target: float | None = None) -> None:
    verdict = "" if target is None else f"   target < {target:g} ms   {'ok' if value < target else 'OVER TARGET'}"
    print(f"{label:<58} median {value:8.2f} ms{verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=51)
    parser.add_argument("--reference", type=Path, default=ROOT.parent / "shared" / "reference")
    args = parser.parse_args()
    sys.path.insert(0, str(ROOT))
    from aicr_gen.certify import bisect, nccl
    from aicr_gen.report import results as report_format
    log = args.reference / TEN_NODES
    raw = log.read_bytes()
    report = nccl.parse_nccl(raw, log.name)
    print(f"{log.name}: {len(raw)} bytes, {len(report.nccl)} runs, "
          f"{sum(len(run.rows) for run in report.nccl)} rows, result {report.result}")
    _report("parse the 10-node nccl-tests log (in-process)",
            _median_ms(lambda: nccl.parse_nccl(raw, log.name), args.runs), 50)
    _report("render it as Markdown", _median_ms(lambda: report_format.render(report, "markdown"), args.runs))
    nodes = [f"gpu-node-{i:02d}" for i in range(64)]
    _report("simulate bisecting 64 nodes with 2 bad",
            _median_ms(lambda: bisect.simulate(nodes, {"gpu-node-17", "gpu-node-42"}), args.runs))
    script = shutil.which("aicr-gen", path=str(Path(sys.executable).parent))
    command = [script] if script else [sys.executable, "-m", "aicr_gen"]
    process = [*command, "report", "nccl", str(log)]
    _report("aicr-gen report nccl, 10-node log (whole process)",
            _median_ms(lambda: subprocess.run(process, check=True, stdout=subprocess.DEVNULL),
                       max(5, args.runs // 5)))


if __name__ == "__main__":
    main()
