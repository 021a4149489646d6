"""Benchmarks for issue #3 targets; prints medians (not a test).

    python bench/bench_bundle.py [--runs N] [--catalog DIR]

Targets: `aicr-gen bundle` for the cuj2 recipe (AICR catalog), whole process, each deployer <= 200 ms;
all five deployers rendered in one process < 500 ms.
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
DEPLOYERS = ("helm", "argocd", "argocd-helm", "flux", "helmfile")
REPO = "https://git.example.com/platform/gitops.git"



def _render_all(recipe_file: Path, catalog: Path) -> float:
    from aicr_gen.catalog.load import open_catalog, read_files
    from aicr_gen.catalog.recipe_file import load_recipe
    from aicr_gen.render import render_bundle
    from aicr_gen.render.options import Options
    from aicr_gen.render.plan import build

    start = time.perf_counter()
    recipe = load_recipe(str(recipe_file))
    loaded = open_catalog([str(catalog)])
    wanted = [f"components/{ref['name']}/values.yaml" for ref in recipe["componentRefs"]]
    wanted += [rel for ref in recipe["componentRefs"]
               for rel in [ref.get("valuesFile", ""), *ref.get("manifestFiles", []), *ref.get("preManifestFiles", [])]
               if rel]
    plan = build(recipe, read_files(loaded, wanted), [], {})
    for deployer in DEPLOYERS:
        render_bundle(plan, deployer, Options(repo=REPO))
    return (time.perf_counter() - start) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=11)
    parser.add_argument("--catalog", type=Path, default=ROOT.parent / "shared" / "reference" / "aicr" / "recipes")
    args = parser.parse_args()
    aicr_gen = command()
    with tempfile.TemporaryDirectory() as scratch:
        work = Path(scratch)
        env = {**os.environ, "AICR_GEN_CACHE_DIR": str(work / "cache")}
        os.environ["AICR_GEN_CACHE_DIR"] = env["AICR_GEN_CACHE_DIR"]
        recipe = work / "recipe.yaml"
        subprocess.run([*aicr_gen, "recipe", "--catalog", str(args.catalog), *CUJ2, "-o", str(recipe)], check=True,
                       env=env)
        for deployer in DEPLOYERS:
            times = []
            for run in range(args.runs):
                out = work / f"{deployer}-{run}"
                start = time.perf_counter()
                subprocess.run([*aicr_gen, "bundle", "--recipe", str(recipe), "--deployer", deployer, "-o", str(out),
                                "--catalog", str(args.catalog), "--repo", REPO], check=True, env=env,
                               stderr=subprocess.DEVNULL)
                times.append((time.perf_counter() - start) * 1000)
            median = statistics.median(times)
            print(f"aicr-gen bundle --deployer {deployer:<12} (process) median {median:7.1f} ms   target <= 200 ms   "
                  f"{'ok' if median <= 200 else 'OVER TARGET'}")
        elapsed = statistics.median(_render_all(recipe, args.catalog) for _ in range(5))
        print(f"{'all five deployers in one process':<48} median {elapsed:7.1f} ms   target < 500 ms   "
              f"{'ok' if elapsed < 500 else 'OVER TARGET'}")


if __name__ == "__main__":
    main()
