"""aicr-gen side by side with the Go AICR binary (issue 12); prints ratios and ok/MISS (not a test).

    AICR_BIN=$(../shared/tools/aicr/install) python bench/bench_aicr.py [--runs N] [--large-runs N]

Whole processes, paired (ours and AICR in the same loop, the side that starts alternating, one warm-up each),
medians, ratio = ours / AICR. AICR is ``$AICR_BIN`` or ``aicr`` on PATH; without it the AICR column and the ratio
targets are skipped. A diff path's ratio is the median of the pairs' ratios, printed with both sides' median CPU
time (user + system) beside their wall time.
Targets: diff on the 256-node pair in YAML and JSON <= 0.8x AICR, peak RSS <= AICR's; recipe vs live (``diff
--baseline RECIPE`` against the 256-node target in JSON and YAML, ``diff --spec SPEC``) <= 0.8x AICR's closest
command: AICR's diff takes snapshots only, so a recipe against a snapshot is ``aicr validate --recipe --snapshot
--no-cluster`` (reads both, checks the recipe's constraints against the snapshot), and a spec, which AICR has not,
is ``aicr recipe`` of its criteria then that validate; 4,096 nodes <= 0.5 s; 8,192 nodes <= 2.2x of 4,096; recipe
(AICR catalog, cuj2) and bundle per deployer <= 1.0x; validate on AICR's mock snapshot <= 1.0x; ours only:
--version < 50 ms, sync --check up to date < 0.4 s, rules test 10,000 events < 1 s.
Exits 0 either way.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_diff import write_pair
from bench_rules import DEFAULT_REFERENCE, make_events, make_nodes
from bench_sync import _git_repo, _write_spec
from common import (
    CATALOG,
    CUJ2,
    ROOT,
    Times,
    Verdicts,
    aicr_bin,
    clean_env,
    command,
    median_ms,
    paired_ms,
    paired_times,
    peak_rss_mib,
    run_ms,
    spread,
)

MOCK = ROOT.parent / "shared" / "reference" / "aicr" / "tests" / "chainsaw" / "cli" / "cuj1-training" / \
    "mock-snapshot.yaml"
REPO = "https://git.example.com/platform/gitops.git"
DEPLOYERS = ("argocd", "flux", "helm", "helmfile")
AICR_LIMIT = 1 << 20
DIFF_TARGET = 0.8
"""Every diff path at most this ratio of AICR's time (issue 30)."""


def _row(label: str, ours: list[float], theirs: list[float]) -> float | None:
    mine = statistics.median(ours)
    if not theirs:
        print(f"  {label:<40} ours {mine:7.0f} ms ({spread(ours)})   AICR -", flush=True)
        return None
    other = statistics.median(theirs)
    ratio = mine / other
    print(f"  {label:<40} ours {mine:7.0f} ms ({spread(ours)})   AICR {other:6.0f} ms ({spread(theirs)})   "
          f"{ratio:5.2f}x", flush=True)
    return ratio


def _ratio_check(verdicts: Verdicts, label: str, ratio: float | None, target: float = 1.0) -> None:
    if ratio is None:
        print(f"skip  {label:<44} (no AICR binary)")
    else:
        verdicts.check(label, ratio <= target, f"{ratio:.2f}x AICR <= {target:g}x")


def _paired_row(label: str, ours: list[Times], theirs: list[Times]) -> float | None:
    """Prints both sides' median wall (range) and CPU time and the median of the pairs' ratios; that wall ratio."""
    walls = [wall for wall, _ in ours]
    mine = f"ours {statistics.median(walls):5.0f} ms ({spread(walls)}) cpu {statistics.median(c for _, c in ours):4.0f}"
    if not theirs:
        print(f"  {label:<36} {mine}   AICR -", flush=True)
        return None
    their_walls = [wall for wall, _ in theirs]
    ratio = statistics.median(a / b for (a, _), (b, _) in zip(ours, theirs, strict=True))
    cpu_ratio = statistics.median(a / b for (_, a), (_, b) in zip(ours, theirs, strict=True))
    print(f"  {label:<36} {mine}   AICR {statistics.median(their_walls):5.0f} ms ({spread(their_walls)}) cpu "
          f"{statistics.median(c for _, c in theirs):4.0f}   {ratio:5.2f}x (cpu {cpu_ratio:4.2f}x)", flush=True)
    return ratio


def bench_diff(work: Path, aicr: str | None, runs: int, large_runs: int, verdicts: Verdicts) -> None:
    ours = command()
    print(f"diff ({runs} pairs at 256 nodes, {large_runs} runs at 4,096 / 8,192)")
    medians: dict[int, float] = {}
    refused = False
    for nodes in (256, 4096, 8192):
        for fmt, (base, target) in write_pair(work, nodes).items():
            mine = [*ours, "diff", "--baseline", str(base), "--target", str(target), "--format", "json"]
            theirs = [aicr, "diff", "--baseline", str(base), "--target", str(target), "--format", "json"] \
                if aicr else None
            label = f"{nodes} nodes {fmt} ({base.stat().st_size / 1e6:.1f} MB)"
            if theirs and base.stat().st_size > AICR_LIMIT:
                if not refused:
                    proc = subprocess.run(theirs, capture_output=True, text=True, check=False)
                    message = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
                    print(f"  AICR from {label} on: n/a (AICR refuses >1 MiB): exit {proc.returncode}: {message[:120]}")
                    refused = True
                theirs = None
            count = runs if nodes == 256 else large_runs
            mine_times, their_times = paired_times([mine], [theirs] if theirs else None, count)
            ratio = _paired_row(label, mine_times, their_times)
            if nodes == 256:
                _ratio_check(verdicts, f"diff 256 nodes {fmt}", ratio, DIFF_TARGET)
                if theirs and fmt == "yaml":
                    _memory_check(verdicts, mine, theirs)
            elif fmt == "yaml":
                medians[nodes] = statistics.median(wall for wall, _ in mine_times)
    verdicts.check("diff 4,096 nodes yaml <= 0.5 s", medians[4096] <= 500, f"{medians[4096]:.0f} ms")
    linear = medians[8192] / medians[4096]
    verdicts.check("diff 8,192 / 4,096 nodes <= 2.2", linear <= 2.2, f"{linear:.2f}")


def _memory_check(verdicts: Verdicts, mine: list[str], theirs: list[str]) -> None:
    ours_mib = statistics.median(peak_rss_mib(mine) for _ in range(3))
    their_mib = statistics.median(peak_rss_mib(theirs) for _ in range(3))
    print(f"  {'peak RSS, 256 nodes yaml':<40} ours {ours_mib:7.1f} MiB   AICR {their_mib:6.1f} MiB")
    verdicts.check("diff 256 nodes peak RSS <= AICR", ours_mib <= their_mib,
                   f"{ours_mib:.1f} MiB vs {their_mib:.1f} MiB")


def bench_recipe_bundle(work: Path, aicr: str | None, runs: int, verdicts: Verdicts) -> None:
    ours = command()
    env = {**os.environ, "AICR_GEN_CACHE_DIR": str(work / "cache")}
    print(f"recipe, bundle, validate ({runs} pairs; AICR uses its embedded catalog, the same commit)")
    recipe = work / "recipe.yaml"
    # alpha headers: the reference AICR build predates ADR-022 and reads only those
    run_ms([*ours, "recipe", "--catalog", str(CATALOG), *CUJ2, "--api-version", "aicr.run/v1alpha2", "-o",
            str(recipe)], env)
    mine, theirs = paired_ms([*ours, "recipe", "--catalog", str(CATALOG), *CUJ2],
                             [aicr, "recipe", *CUJ2] if aicr else None, runs, env)
    _ratio_check(verdicts, "recipe eks/h100/ubuntu/inference/dynamo", _row("recipe cuj2", mine, theirs))
    for deployer in DEPLOYERS:
        out = work / f"bundle-{deployer}"
        mine_argv = [*ours, "bundle", "--recipe", str(recipe), "--deployer", deployer, "-o", str(out / "ours"),
                     "--catalog", str(CATALOG), "--repo", REPO, "--force"]  # AICR overwrites; ours asks --force
        their_argv = [aicr, "bundle", "--recipe", str(recipe), "--deployer", deployer, "--output",
                      str(out / "aicr"), "--repo", REPO] if aicr else None
        mine, theirs = paired_ms(mine_argv, their_argv, runs, env)
        _ratio_check(verdicts, f"bundle --deployer {deployer}", _row(f"bundle {deployer}", mine, theirs))
    # the mock snapshot's Kubernetes v1.33.0 fails the recipe's >= 1.34 constraint: both exit non-zero
    validate = [*ours, "validate", "--recipe", str(recipe), "--snapshot", str(MOCK)]
    their_validate = [aicr, "validate", "--recipe", str(recipe), "--snapshot", str(MOCK), "--no-cluster"] \
        if aicr else None
    mine, theirs = paired_ms(validate, their_validate, runs, env, ok_codes=(0, 1, 2))
    _ratio_check(verdicts, "validate mock snapshot, cuj2 recipe", _row("validate (4 constraints)", mine, theirs))
    # not targets: the row above is a pre-commit hook's run (the committed snapshot and recipe were read on an
    # earlier commit and are cached by content); a CronJob's new snapshot each time, and nothing cached at all
    mine, theirs = [], []
    for run in range(runs):
        fresh = work / f"snapshot-{run}.yaml"
        fresh.write_bytes(MOCK.read_bytes() + f"# run {run}\n".encode())
        mine.append(run_ms([*validate[:-1], str(fresh)], env, ok_codes=(0, 1, 2)))
        if their_validate:
            theirs.append(run_ms([*their_validate[:-2], str(fresh), "--no-cluster"], env, ok_codes=(0, 1, 2)))
    _row("validate, a new snapshot (info)", mine, theirs)
    mine, theirs = paired_ms(validate, their_validate, runs, {**env, "AICR_GEN_CACHE_DIR": "off"}, ok_codes=(0, 1, 2))
    _row("validate, nothing cached (info)", mine, theirs)


def bench_recipe_diff(work: Path, aicr: str | None, runs: int, verdicts: Verdicts) -> None:
    """Recipe vs live: ``diff --baseline RECIPE`` (bench_recipe_bundle's cuj2 recipe) and ``diff --spec SPEC`` (the
    example spec of the same criteria) against the 256-node target of ``bench_diff``, paired with AICR's closest
    commands (module docstring). The recipe is one read before (the warm-up run), as a committed golden recipe
    is; the same without any cache is printed, not a target."""
    ours = command()
    env = {**os.environ, "AICR_GEN_CACHE_DIR": str(work / "cache")}
    recipe, spec, their_recipe = work / "recipe.yaml", work / "spec.yaml", work / "aicr-recipe.yaml"
    _write_spec(spec, None)
    print(f"diff, recipe vs live ({runs} pairs; AICR: validate --recipe --snapshot --no-cluster, after recipe for a "
          "spec)")
    for fmt in ("json", "yaml"):
        target = work / f"b256.{fmt}"
        # the snapshot's Kubernetes v1.33.0 fails the recipe's >= 1.34 constraint: AICR exits 2 having read both
        validate = [aicr, "validate", "--recipe", str(recipe), "--snapshot", str(target), "--no-cluster"] \
            if aicr else None
        mine = [*ours, "diff", "--baseline", str(recipe), "--target", str(target), "--format", "json"]
        label = f"recipe vs 256 nodes {fmt}"
        mine_times, their_times = paired_times([mine], [validate] if validate else None, runs, env, (0, 2))
        _ratio_check(verdicts, f"diff {label}", _paired_row(label, mine_times, their_times), DIFF_TARGET)
        if fmt == "json":
            cold = {**env, "AICR_GEN_CACHE_DIR": "off"}
            mine_times, their_times = paired_times([mine], [validate] if validate else None, runs, cold, (0, 2))
            _paired_row(f"{label}, nothing cached (info)", mine_times, their_times)
            their_spec = [[aicr, "recipe", *CUJ2, "-o", str(their_recipe)],
                          [*validate[:3], str(their_recipe), *validate[4:]]] if validate else None
            mine = [*ours, "diff", "--spec", str(spec), "--target", str(target), "--format", "json"]
            label = f"spec vs 256 nodes {fmt}"
            mine_times, their_times = paired_times([mine], their_spec, runs, env, (0, 2))
            _ratio_check(verdicts, f"diff {label}", _paired_row(label, mine_times, their_times), DIFF_TARGET)


def bench_ours_only(work: Path, runs: int, verdicts: Verdicts) -> None:
    ours = command()
    env = clean_env(work)
    print(f"ours only ({runs} runs)")
    version = median_ms([*ours, "--version"], runs, env)
    verdicts.check("--version < 50 ms", version < 50, f"{version:.0f} ms")
    repo, spec = work / "gitops", work / "spec.yaml"
    _git_repo(repo)
    _write_spec(spec, None)
    sync = [*ours, "sync", "--repo", str(repo)]
    run_ms([*sync, str(spec)], env)
    check = median_ms([*sync, "--check", str(spec)], runs, env)
    verdicts.check("sync --check up to date < 0.4 s", check < 400, f"{check:.0f} ms")
    nvsentinel = DEFAULT_REFERENCE / "nvsentinel"
    values = nvsentinel / "distros" / "kubernetes" / "nvsentinel" / "charts" / "fault-quarantine" / "values.yaml"
    samples = [json.loads(path.read_text(encoding="utf-8"))
               for path in sorted((nvsentinel / "tests" / "data").glob("*.json"))]
    if not samples or not values.is_file():
        print(f"skip  rules test (no NVSentinel reference under {DEFAULT_REFERENCE})")
        return
    events = make_events(samples, 10_000, 200)
    batched = work / "events"
    batched.mkdir()
    for start in range(0, len(events), 1000):
        (batched / f"events-{start // 1000:02d}.json").write_text(json.dumps(events[start:start + 1000]))
    nodes = work / "nodes.json"
    nodes.write_text(json.dumps(make_nodes(200)))
    rules = median_ms([*ours, "rules", "test", "--values", str(values), "--nodes", str(nodes), "--events",
                       str(batched), "--format", "json"], max(3, runs // 3), env)
    verdicts.check("rules test 10,000 events < 1 s", rules < 1000, f"{rules:.0f} ms (10 files of 1,000)")


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=9, help="pairs per AICR comparison (default 9)")
    parser.add_argument("--large-runs", type=int, default=3, help="runs at 4,096 / 8,192 nodes (default 3)")
    args = parser.parse_args()
    aicr = aicr_bin()
    if aicr:
        version = subprocess.run([aicr, "--version"], capture_output=True, text=True, check=False).stdout.strip()
        print(f"AICR: {aicr} ({version})")
    else:
        print("AICR: not found ($AICR_BIN or aicr on PATH): AICR column and ratio targets skipped")
    print(f"load: {os.getloadavg()[0]:.2f} {os.getloadavg()[1]:.2f} {os.getloadavg()[2]:.2f}")
    verdicts = Verdicts()
    with tempfile.TemporaryDirectory(prefix="bench-aicr-") as tmp:
        work = Path(tmp)
        bench_diff(work, aicr, args.runs, args.large_runs, verdicts)
        bench_recipe_bundle(work, aicr, args.runs, verdicts)
        bench_recipe_diff(work, aicr, args.runs, verdicts)
        bench_ours_only(work, args.runs, verdicts)
    print(f"bench_aicr: {verdicts.summary()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
