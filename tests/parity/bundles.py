"""Run both tools on every leaf of AICR's catalog and every deployer, and compare what their bundles deploy.

For each leaf AICR resolves the recipe (``aicr recipe`` with the leaf's criteria); that one recipe file is
the input of both ``aicr bundle`` and ``aicr-gen bundle --catalog <AICR's catalog>``, with the same
``--repo``. Work runs in threads (the tools and helm are subprocesses); ``run_all`` caches per process.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import multiprocessing
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping
from concurrent.futures import Future, ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.conftest import AICR_CATALOG, ROOT
from tests.parity.compare import Difference, compare
from tests.parity.normalize import DEPLOYERS, Deployment, read_bundle

REPO = "https://example.com/aicr-parity/bundle.git"
"""The Git repository both tools are told the bundle is committed to (Argo CD and Flux sources)."""
"""Unpacks the AICR binary of the reference catalog's commit and prints its path (``AICR_BIN`` wins)."""
CRITERIA = ("service", "accelerator", "intent", "os", "platform")


@dataclass(frozen=True)
class Leaf:
    name: str
    criteria: Mapping[str, str]


@dataclass
class Pair:
    """One leaf x deployer: both deployments (or why a tool made none) and their differences."""

    leaf: str
    deployer: str
    skip: str = ""
    """Why the pair cannot be compared (AICR resolves no recipe for the leaf's criteria)."""
    aicr: Deployment | None = None
    ours: Deployment | None = None
    diffs: list[Difference] = field(default_factory=list)


def _aicr_gen(*args: str, cache: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aicr_gen", *args], capture_output=True, text=True,
                          check=False, cwd=ROOT, env={**os.environ, "AICR_GEN_CACHE_DIR": str(cache)}, timeout=300)


def _worker_init(cache: str) -> None:
    os.environ["AICR_GEN_CACHE_DIR"] = cache


def _bundle_in_process(args: tuple[str, ...]) -> tuple[int, str]:
    """``aicr-gen ARGS`` in this worker process: (exit code, stderr). A worker imports aicr-gen once; a
    process per bundle would spend most of the harness's CPU starting Python."""
    from aicr_gen.cli.main import main

    err = io.StringIO()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
        try:
            code = main(list(args))
        except SystemExit as exit_:
            code = int(exit_.code or 0)
    return code, err.getvalue()


@functools.cache
def leaves() -> tuple[Leaf, ...]:
    """The leaves of AICR's catalog with their criteria, as ``aicr-gen recipe list`` reads them."""
    with tempfile.TemporaryDirectory(prefix="parity-cache-") as cache:
        proc = _aicr_gen("recipe", "list", "--catalog", str(AICR_CATALOG), "--format", "json", cache=Path(cache))
    if proc.returncode != 0:
        raise RuntimeError(f"aicr-gen recipe list failed: {proc.stderr}")
    return tuple(Leaf(str(e["name"]), {k: str(v) for k, v in e["criteria"].items()}) for e in json.loads(proc.stdout))


def _last_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1] if lines else "(no output)"


class Harness:
    """Bundles and comparisons under one work folder."""

    def __init__(self, workdir: Path, aicr: Path, *, jobs: int | None = None) -> None:
        self.workdir = workdir
        self.aicr = aicr
        self.jobs = jobs or max(4, 2 * (os.cpu_count() or 1))
        self.cache = workdir / "aicr-gen-cache"

    def run(self, selected: Iterable[Leaf], deployers: Iterable[str] = DEPLOYERS) -> list[Pair]:
        chosen, kinds = list(selected), list(deployers)
        context = multiprocessing.get_context("spawn")  # never fork a process that runs threads
        with ThreadPoolExecutor(self.jobs) as pool, ProcessPoolExecutor(
                max(1, (os.cpu_count() or 1)), mp_context=context, initializer=_worker_init,
                initargs=(str(self.cache),)) as workers:
            recipes = dict(zip([leaf.name for leaf in chosen], pool.map(self._recipe, chosen), strict=True))
            ours = {(leaf.name, d): workers.submit(_bundle_in_process, self._ours_args(leaf.name, d, recipe))
                    for leaf in chosen for d in kinds if isinstance(recipe := recipes[leaf.name], Path)}
            jobs = [(leaf.name, d) for leaf in chosen for d in kinds]
            return list(pool.map(lambda job: self._pair(job[0], job[1], recipes[job[0]], ours.get(job)), jobs))

    def _ours_args(self, leaf: str, deployer: str, recipe: Path) -> tuple[str, ...]:
        return ("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", deployer,
                "--output", str(self.workdir / leaf / deployer / "aicr-gen"), "--repo", REPO)

    def _recipe(self, leaf: Leaf) -> Path | str:
        """AICR's recipe for the leaf's criteria (``any`` is AICR's wildcard: left out), or why there is none."""
        path = self.workdir / leaf.name / "recipe.yaml"
        path.parent.mkdir(parents=True, exist_ok=True)
        args = [arg for key in CRITERIA if leaf.criteria.get(key, "any") != "any"
                for arg in (f"--{key}", leaf.criteria[key])]
        proc = subprocess.run([str(self.aicr), "recipe", *args, "-o", str(path)], capture_output=True, text=True,
                              check=False, timeout=300)
        if proc.returncode != 0:
            return f"AICR resolves no recipe for {dict(leaf.criteria)}: {_last_line(proc.stderr)}"
        return path

    def _pair(self, leaf: str, deployer: str, recipe: Path | str,
              ours_run: Future[tuple[int, str]] | None) -> Pair:
        if isinstance(recipe, str) or ours_run is None:
            return Pair(leaf, deployer, skip=str(recipe))
        base = self.workdir / leaf / deployer
        theirs, mine = base / "aicr", base / "aicr-gen"
        proc = subprocess.run([str(self.aicr), "bundle", "-r", str(recipe), "-d", deployer, "-o", str(theirs),
                               "--repo", REPO], capture_output=True, text=True, check=False, timeout=300)
        aicr = (proc.returncode, proc.stderr)
        ours = ours_run.result()
        pair = Pair(leaf, deployer)
        for (code, _), folder, side in ((aicr, theirs, "aicr"), (ours, mine, "ours")):
            if code != 0:
                continue
            try:
                setattr(pair, side, read_bundle(folder, deployer, repo=REPO))
            except (ValueError, KeyError, TypeError, OSError, yaml.YAMLError, AssertionError) as exc:
                pair.diffs.append(Difference("harness", "", f"read {side} bundle {folder}",
                                             f"{type(exc).__name__}: {exc}"[:600], ""))
        if pair.diffs:
            return pair
        if pair.aicr is not None and pair.ours is not None:
            pair.diffs = compare(pair.aicr, pair.ours)
        elif pair.aicr is not None or pair.ours is not None:
            pair.diffs = [Difference("refused", "", "bundle", "bundled" if aicr[0] == 0 else _last_line(aicr[1]),
                                     "bundled" if ours[0] == 0 else _last_line(ours[1]))]
        return pair


_results: dict[tuple[str, tuple[str, ...]], list[Pair]] = {}


def run_all(workdir: Path, aicr: Path, deployers: Iterable[str] = DEPLOYERS) -> list[Pair]:
    """Every leaf x deployer, run once per process."""
    key = (str(aicr), tuple(deployers))
    if key not in _results:
        _results[key] = Harness(workdir, aicr).run(leaves(), key[1])
    return _results[key]
