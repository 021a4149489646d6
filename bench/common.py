"""Helpers shared by the benches: the commands under test, paired whole-process timing, verdict lines."""

from __future__ import annotations

import compileall
import functools
import hashlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CATALOG = ROOT.parent / "shared" / "reference" / "aicr" / "recipes"
CUJ2 = ["--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo"]


def command() -> list[str]:
    """How to run aicr-gen: the venv's console script, else ``python -m aicr_gen``; the venv must run this
    checkout (an editable install), byte-compiled as an installed wheel is, else the bench would time another
    copy or the compiler."""
    where = subprocess.run([sys.executable, "-I", "-c", "import aicr_gen; print(aicr_gen.__file__)"], cwd="/",
                           capture_output=True, text=True, check=True).stdout.strip()
    package = Path(where).resolve().parent
    if package != ROOT / "aicr_gen":
        sys.exit(f"{sys.executable} runs aicr_gen from {package}, not this checkout; run the bench with the venv of "
                 "an editable install (scripts/test.sh makes .venv-test)")
    _compile(package)
    script = shutil.which("aicr-gen", path=str(Path(sys.executable).parent))
    return [script] if script else [sys.executable, "-m", "aicr_gen"]


@functools.cache
def _compile(package: Path) -> None:
    compileall.compile_dir(package, quiet=1)


def clean_env(work: Path) -> dict[str, str]:
    """The environment for timed runs: no inherited ``GIT_*`` (a hook's GIT_DIR would redirect git) and a parse
    cache of the bench's own under ``work``."""
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env["AICR_GEN_CACHE_DIR"] = str(work / "cache")
    return env


def kept(kind: str, made_of: object) -> tuple[Path, bool]:
    """A folder under the temporary folder that outlives the bench, named by a digest of ``repr(made_of)`` (what
    it is built from), and whether it holds a finished build (its ``done`` marker). When not, it is removed (a
    build interrupted half-way) for the caller to build in and mark with ``done``."""
    key = hashlib.sha256(repr(made_of).encode()).hexdigest()
    base = Path(tempfile.gettempdir()) / f"aicr-gen-bench-{kind}-{key[:16]}"
    if (base / "done").exists():
        return base, True
    shutil.rmtree(base, ignore_errors=True)
    return base, False


def aicr_bin() -> str | None:
    """The Go AICR binary: ``$AICR_BIN``, else ``aicr`` on PATH, else None (its column is skipped)."""
    explicit = os.environ.get("AICR_BIN")
    if explicit:
        return explicit if os.access(explicit, os.X_OK) else None
    return shutil.which("aicr")


def run_ms(argv: list[str], env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)) -> float:
    """Wall time of one whole process in ms; exits with its stderr if its exit code is unexpected."""
    return run_times(argv, env, ok_codes)[0]


def run_times(argv: list[str], env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)) -> tuple[float,
                                                                                                            float]:
    """Wall and CPU time (user + system, of the process and its children) of one whole process in ms; exits with
    its stderr if its exit code is unexpected."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(argv, capture_output=True, text=True, env=env, check=False)
    elapsed = (time.perf_counter() - start) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode not in ok_codes:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}\n{proc.stdout[-2000:]}{proc.stderr[-2000:]}")
    cpu = (after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime) * 1000
    return elapsed, cpu


def median_ms(argv: list[str], runs: int, env: dict[str, str] | None = None,
              ok_codes: tuple[int, ...] = (0,)) -> float:
    return statistics.median(run_ms(argv, env, ok_codes) for _ in range(runs))


def paired_ms(ours: list[str], theirs: list[str] | None, runs: int, env: dict[str, str] | None = None,
              ok_codes: tuple[int, ...] = (0,)) -> tuple[list[float], list[float]]:
    """``paired_times`` of one process a side: both lists of wall times in ms."""
    mine, other = paired_times([ours], [theirs] if theirs else None, runs, env, ok_codes)
    return [wall for wall, _ in mine], [wall for wall, _ in other]


Times = tuple[float, float]
"""Wall and CPU ms of one run."""


def paired_times(ours: list[list[str]], theirs: list[list[str]] | None, runs: int,
                 env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)) -> tuple[list[Times],
                                                                                                list[Times]]:
    """Ours and theirs run by run in one loop (one warm-up each, not counted), the side that runs first
    alternating, so neither always finds the page cache and the CPU as the other left them. A side is one or
    more processes run in a row, timed as one (their times summed)."""
    _side(ours, env, ok_codes)
    if theirs:
        _side(theirs, env, ok_codes)
    mine: list[Times] = []
    other: list[Times] = []
    for run in range(runs):
        if theirs and run % 2:
            other.append(_side(theirs, env, ok_codes))
        mine.append(_side(ours, env, ok_codes))
        if theirs and not run % 2:
            other.append(_side(theirs, env, ok_codes))
    return mine, other


def _side(argvs: list[list[str]], env: dict[str, str] | None, ok_codes: tuple[int, ...]) -> Times:
    wall = cpu = 0.0
    for argv in argvs:
        one_wall, one_cpu = run_times(argv, env, ok_codes)
        wall, cpu = wall + one_wall, cpu + one_cpu
    return wall, cpu


def peak_rss_mib(argv: list[str], env: dict[str, str] | None = None, ok_codes: tuple[int, ...] = (0,)) -> float:
    """Peak resident memory of one whole process (its own ``wait4`` rusage, not the children's maximum)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode not in ok_codes:
        sys.exit(f"{' '.join(argv)}: exit {proc.returncode}")
    return usage.ru_maxrss / 1024  # KiB on Linux


def spread(times: list[float]) -> str:
    return f"{min(times):.0f}-{max(times):.0f}"


class Verdicts:
    """Collects ok / MISS lines; ``summary()`` counts them."""

    def __init__(self) -> None:
        self.ok = 0
        self.miss = 0

    def check(self, label: str, ok: bool, detail: str) -> None:
        if ok:
            self.ok += 1
        else:
            self.miss += 1
        print(f"{'ok  ' if ok else 'MISS'}  {label:<44} {detail}", flush=True)

    def summary(self) -> str:
        return f"{self.ok} ok, {self.miss} MISS"
