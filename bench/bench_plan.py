"""Benchmarks for the plan targets; prints medians (not a test: timings vary by machine).

    python bench/bench_plan.py [--runs N] [--clusters N] [--fleet N [--pin-code-digest] [--render-path]]

A temporary Git repository holds committed trees of ClusterSpecs made from the three examples (argocd + flux),
each spec then edited in the work tree as a pull request would (gpu-operator pinned one minor newer, every other
one also given a driver value). Targets, whole process of `aicr-gen plan` (Markdown): one cluster < 1.5 s;
50 clusters < 30 s on a 2-core machine; the 50-cluster Markdown under GitHub's 65,000-character comment limit.

``--fleet N`` times a fleet instead: N ClusterSpecs extending one fleet file, synced and committed on ``main``,
then a branch that pins gpu-operator one minor newer in the fleet file and is synced too (as the pre-commit hook
or the Action leaves a pull request), planned with ``aicr-gen plan 'specs/*.yaml' --base main`` in Markdown and
JSON: the committed trees are compared, nothing is rendered. Target for 1,000 clusters: <= 15 s. The repository
is built once (two syncs of N specs, minutes) and kept under the temporary folder by a digest of what it is made
of, aicr-gen's code digest included (the records name it: other code renders again). ``--pin-code-digest`` pins
that digest in the records and the runs (as ``scripts/corpus.py`` does), so a repository built once serves while
the code changes; ``--render-path`` also times the same plan on the bump before it is synced (every spec
rendered: what ``plan`` costs without committed trees).
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

from common import clean_env, command, kept

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


FLEET = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Fleet
metadata:
  name: bench-fleet
spec:
  deployers: [argocd]
  repo:
    url: "https://github.com/example/gitops.git"
  versions:
    gpu-operator: {version}
  sentinel:
    mode: monitor
  argocd:
    shared: true
    namespace: argocd
"""
FLEET_SPEC = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: "{name}"
spec:
  extends: ../fleet.yaml
  criteria: {{service: "{service}", accelerator: "h100", intent: "inference", os: "ubuntu", platform: "dynamo"}}
  repo:
    path: "clusters/{name}"
  argocd:
    destinationServer: "https://{name}.example.com"
"""
FLEET_PINS = ("v26.3.3", "v26.4.0")  # main, then the pull request's fleet-wide bump
FLEET_SERVICES = ("eks", "aks", "kind")
FLEET_TARGET = 15.0
_PIN = '''"""bench_plan.py --pin-code-digest: aicr-gen's code digest pinned in every inputs record."""
import aicr_gen.gitops.records.fingerprint as _fingerprint

_real = _fingerprint.code
_fingerprint.code = lambda: {**_real(), "code": "sha256:" + "0" * 64}
'''


def _fleet_env(base: Path, pin: bool) -> dict[str, str]:
    """The environment of the fleet's runs: a test identity for the syncs' commits, the code digest pinned."""
    env = {**clean_env(base), "GIT_AUTHOR_NAME": "aicr-gen bench", "GIT_AUTHOR_EMAIL": "bench@example.invalid",
           "GIT_COMMITTER_NAME": "aicr-gen bench", "GIT_COMMITTER_EMAIL": "bench@example.invalid"}
    if pin:
        (base / "pin").mkdir(parents=True, exist_ok=True)
        (base / "pin" / "sitecustomize.py").write_text(_PIN, encoding="utf-8")
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(base / "pin"), os.environ.get("PYTHONPATH")]))
    return env


def _fleet_repo(count: int, aicr_gen: list[str], pin: bool) -> tuple[Path, dict[str, str]]:
    """The fleet's repository (work tree on the synced bump, ``main`` the synced fleet before it) and the
    environment to run in, built once per digest of its making under the temporary folder."""
    from aicr_gen.gitops.records import fingerprint

    code = "pinned" if pin else fingerprint.code()["code"]
    base, built = kept("fleet", (count, FLEET, FLEET_SPEC, FLEET_PINS, FLEET_SERVICES, code))
    repo, env = base / "repo", _fleet_env(base, pin)
    if built:
        return repo, env
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "fleet.yaml").write_text(FLEET.format(version=FLEET_PINS[0]), encoding="utf-8")
    (repo / "specs").mkdir()
    for index in range(count):
        name = f"cluster-{index:04d}"
        (repo / "specs" / f"{name}.yaml").write_text(
            FLEET_SPEC.format(name=name, service=FLEET_SERVICES[index % len(FLEET_SERVICES)]), encoding="utf-8")
    sync = [*aicr_gen, "sync", "specs/*.yaml", "--repo", str(repo)]
    _git(repo, "add", "-A")
    _git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-m", "the fleet's specs")
    started = time.perf_counter()
    subprocess.run(sync, check=True, env=env, cwd=repo, stdout=subprocess.DEVNULL)
    print(f"built: sync of {count} clusters on main {time.perf_counter() - started:.1f} s", flush=True)
    _git(repo, "checkout", "-q", "-b", "bump")
    (repo / "fleet.yaml").write_text(FLEET.format(version=FLEET_PINS[1]), encoding="utf-8")
    _git(repo, "-c", "commit.gpgsign=false", "commit", "-q", "-am", f"gpu-operator {FLEET_PINS[1]} fleet-wide")
    _git(repo, "branch", "bump-unsynced")
    started = time.perf_counter()
    subprocess.run(sync, check=True, env=env, cwd=repo, stdout=subprocess.DEVNULL)
    print(f"built: sync of the bump {time.perf_counter() - started:.1f} s", flush=True)
    (base / "done").touch()
    return repo, env


def _fleet_timed(argv: list[str], env: dict[str, str], cwd: Path) -> tuple[float, str]:
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, cwd=cwd, check=False)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0 or "gpu-operator" not in proc.stdout:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr}")
    return elapsed, proc.stdout


def fleet_bench(count: int, runs: int, *, pin: bool, render_path: bool) -> bool:
    """Time ``plan --base main`` of the fleet's synced bump (Markdown, JSON) and, with ``render_path``, of the
    bump before it is synced; the plans of both must be the same bytes."""
    aicr_gen = command()
    repo, env = _fleet_repo(count, aicr_gen, pin)
    plan = [*aicr_gen, "plan", "specs/*.yaml", "--base", "main"]
    markdown = [_fleet_timed(plan, env, repo) for _ in range(runs)]
    json_ = [_fleet_timed([*plan, "--format", "json"], env, repo) for _ in range(runs)]
    ok = _report(f"aicr-gen plan, {count} clusters, fleet bump, committed trees (Markdown)",
                 statistics.median(elapsed for elapsed, _text in markdown), FLEET_TARGET, "s")
    ok &= _report(f"aicr-gen plan, {count} clusters, fleet bump, committed trees (JSON)",
                  statistics.median(elapsed for elapsed, _text in json_), FLEET_TARGET, "s")
    if render_path:
        unsynced = repo.parent / "unsynced"
        if not unsynced.exists():
            _git(repo, "worktree", "add", "-q", str(unsynced), "bump-unsynced")
        elapsed, text = _fleet_timed([*plan, "--format", "json"], env, unsynced)
        print(f"{f'aicr-gen plan, {count} clusters, fleet bump, rendered (JSON)':<58} once   {elapsed:8.1f} s   "
              f"{'same plan' if text == json_[0][1] else 'PLANS DIFFER'}")
        ok &= text == json_[0][1]
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--clusters", type=int, default=50)
    parser.add_argument("--fleet", type=int, metavar="N", help="time a synced fleet bump of N clusters instead")
    parser.add_argument("--pin-code-digest", action="store_true", help="with --fleet: pin aicr-gen's code digest")
    parser.add_argument("--render-path", action="store_true", help="with --fleet: also time the rendering plan")
    args = parser.parse_args()
    if args.fleet:
        return 0 if fleet_bench(args.fleet, args.runs, pin=args.pin_code_digest, render_path=args.render_path) else 1
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
