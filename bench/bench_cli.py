"""Benchmarks for issue #2 targets; prints medians (not a test: timings vary by machine).

    python bench/bench_cli.py [--runs N] [--catalog DIR]

Targets: `aicr-gen --version` cold < 100 ms; `aicr-gen recipe` on AICR's catalog (cuj2 criteria), whole
process < 120 ms; resolving all of AICR's 45 leaves in one process < 500 ms.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from common import command

ROOT = Path(__file__).resolve().parent.parent
CUJ2 = ["--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo"]



def _median_ms(argv: list[str], runs: int, env: dict[str, str]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def _report(label: str, value: float, target: float, unit: str) -> None:
    verdict = "ok" if value < target else "OVER TARGET"
    print(f"{label:<58} median {value:8.1f} {unit}   target < {target:g} {unit}   {verdict}")


def _resolve_all(catalog: Path) -> tuple[int, float]:
    from aicr_gen.catalog.load import load
    from aicr_gen.commands.recipe import leaf_rows
    from aicr_gen.resolve import recipe
    from aicr_gen.resolve.criteria import normalise

    start = time.perf_counter()
    loaded = load([catalog])
    rows = leaf_rows(loaded)
    for row in rows:
        recipe.resolve(loaded, normalise(row["criteria"]))
    return len(rows), (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--catalog", type=Path, default=ROOT.parent / "shared" / "reference" / "aicr" / "recipes")
    args = parser.parse_args()
    aicr_gen = command()
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "AICR_GEN_CACHE_DIR": cache}
        _report("aicr-gen --version (cold process)", _median_ms([*aicr_gen, "--version"], args.runs, env), 100, "ms")
        recipe_argv = [*aicr_gen, "recipe", "--catalog", str(args.catalog), *CUJ2]
        subprocess.run(recipe_argv, check=True, stdout=subprocess.DEVNULL, env=env)
        _report("aicr-gen recipe, AICR catalog, cuj2 (process, parse cache)",
                _median_ms(recipe_argv, args.runs, env), 120, "ms")
        no_cache = {**env, "AICR_GEN_CACHE_DIR": "off"}
        print(f"{'aicr-gen recipe, AICR catalog, cuj2 (process, no cache)':<58} median "
              f"{_median_ms(recipe_argv, max(3, args.runs // 4), no_cache):8.1f} ms   (first run after a catalog edit)")
        os.environ["AICR_GEN_CACHE_DIR"] = cache
        count, elapsed = statistics.median_low([_resolve_all(args.catalog) for _ in range(5)])
        _report(f"resolve all {count} leaves in one process (catalog load included)", elapsed, 500, "ms")


if __name__ == "__main__":
    main()
