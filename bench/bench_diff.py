"""Benchmark whole-process ``aicr-gen diff`` on generated AICR snapshots with known drift.

For 256, 4,096 and 8,192 GPU nodes: thousands of sysctl keys, ~1,500 images (items keyed by context),
200 NodeTopology labels whose node lists cover the cluster. Prints the median wall time of a few runs and
the peak RSS of the child processes (resource.getrusage(RUSAGE_CHILDREN)) against issue 5's targets:

* 256 nodes: at most 2x the Go AICR binary (~65 ms) -> median <= 130 ms;
* 4,096 and 8,192 nodes: under 2 s each, linear (8,192 <= 2.2x 4,096), peak RSS < 500 MiB.

It also prints the floor no diff can go under: a bare interpreter.

    python bench/bench_diff.py [RUNS]
"""

from __future__ import annotations

import compileall
import json
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def snapshot(nodes: int, drift: bool) -> dict[str, Any]:
    names = [f"gpu-{i:05d}" for i in range(nodes)]
    helm = {}
    for i in range(60):
        helm[f"rel{i}.chart"] = f"chart{i}"
        helm[f"rel{i}.version"] = f"1.{i}.{1 if drift and i == 3 else 0}"
        helm[f"rel{i}.namespace"] = f"ns{i}"
    sysctl = {f"/proc/sys/net/key{i}": str(i) for i in range(4000)}
    sysctl["/proc/sys/kernel/osrelease"] = "6.8.0-1020-aws" if drift else "6.8.0-1015-aws"
    images = [{"context": {"name": f"img{i}", "namespace": f"ns{i % 60}"},
               "data": {"tag": f"v{i}.{1 if drift and i == 7 else 0}"}} for i in range(1500)]
    if drift:
        images.reverse()
    members = names[:-1] if drift else names  # the last node left
    labels = {f"label{i}": f"value{i}|{','.join(members)}" for i in range(199)}
    labels["nvidia.com/gpu.present"] = f"true|{','.join(members)}"
    return {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2",
            "metadata": {"timestamp": f"2026-01-0{2 if drift else 1}T00:00:00Z"},
            "measurements": [
                {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.0"}},
                                             {"subtype": "helm", "data": helm},
                                             {"subtype": "image", "items": images}]},
                {"type": "OS", "subtypes": [{"subtype": "sysctl", "data": sysctl}]},
                {"type": "NodeTopology", "subtypes": [{"subtype": "label", "data": labels}]}]}


_PLAIN = re.compile(r"[A-Za-z/][\w.\-/|,]*")
_RESERVED = {"true", "false", "yes", "no", "on", "off", "y", "n", "null", "~"}


def _scalar(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return str(value)
    text = str(value)
    if _PLAIN.fullmatch(text) and text.lower() not in _RESERVED:
        return text
    return json.dumps(text)


def _emit(value: object, indent: str, out: list[str]) -> None:
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(item, dict | list) and item:
                out.append(f"{indent}{_scalar(key)}:")
                _emit(item, indent + "  ", out)
            else:
                out.append(f"{indent}{_scalar(key)}: {_scalar(item) if not isinstance(item, dict | list) else '{}'}")
    else:
        for item in value:  # type: ignore[attr-defined]
            lines: list[str] = []
            _emit(item, indent + "  ", lines) if isinstance(item, dict | list) else lines.append(
                indent + "  " + _scalar(item))
            first = lines[0]
            out.append(f"{indent}- {first[len(indent) + 2:]}")
            out.extend(lines[1:])


def to_yaml(doc: dict[str, Any]) -> str:
    """Block-style YAML as ``aicr snapshot`` writes it: 2-space indents, sequences indented under their key,
    strings plain unless YAML would read them as something else (then double-quoted)."""
    out: list[str] = []
    _emit(doc, "", out)
    return "\n".join(out) + "\n"


def write_pair(folder: Path, nodes: int) -> dict[str, tuple[Path, Path]]:
    """The baseline and drifted target for ``nodes``, as YAML and as JSON of the same content."""
    pairs = {}
    for fmt, dump in (("yaml", to_yaml), ("json", json.dumps)):
        base, target = folder / f"a{nodes}.{fmt}", folder / f"b{nodes}.{fmt}"
        base.write_text(dump(snapshot(nodes, False)))
        target.write_text(dump(snapshot(nodes, True)))
        pairs[fmt] = (base, target)
    return pairs


AICR_MS = 65
TARGET_256_MS = 2 * AICR_MS
TARGET_LARGE_MS = 2000
LINEAR = 2.2
TARGET_RSS_MIB = 500


def _median_ms(command: list[str], runs: int) -> tuple[float, subprocess.CompletedProcess[str]]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(command, capture_output=True, text=True, check=False)
        times.append(time.perf_counter() - start)
        if proc.returncode != 0:
            raise SystemExit(proc.stderr)
    return statistics.median(times) * 1000, proc


def _verdict(ok: bool) -> str:
    return "ok  " if ok else "MISS"


def main() -> None:
    runs = int(sys.argv[1]) if len(sys.argv) > 1 else 9
    # as an installed wheel is (pip byte-compiles at install), even where PYTHONDONTWRITEBYTECODE is set
    import aicr_gen

    compileall.compile_dir(Path(aicr_gen.__file__).parent, quiet=1)
    bare, _ = _median_ms([sys.executable, "-c", "pass"], runs)
    print(f"floor: interpreter {bare:.0f} ms", flush=True)
    medians: dict[int, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for nodes in (256, 4096, 8192):
            base, target = Path(tmp, f"a{nodes}.json"), Path(tmp, f"b{nodes}.json")
            base.write_text(json.dumps(snapshot(nodes, False)))
            target.write_text(json.dumps(snapshot(nodes, True)))
            medians[nodes], proc = _median_ms([sys.executable, "-m", "aicr_gen", "diff", "--baseline", str(base),
                                               "--target", str(target), "--format", "json"], runs)
            total = json.loads(proc.stdout)["summary"]["total"]
            peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
            print(f"{nodes:5d} nodes  {base.stat().st_size / 1e6:6.1f} MB  median {medians[nodes]:7.0f} ms"
                  f"  changes {total}  peak RSS so far {peak:5.0f} MiB", flush=True)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    ratio = medians[8192] / medians[4096]
    print(f"{_verdict(medians[256] <= TARGET_256_MS)}  256 nodes: {medians[256]:.0f} ms <= {TARGET_256_MS} ms "
          f"(2x AICR's ~{AICR_MS} ms): {medians[256] / AICR_MS:.2f}x AICR")
    for nodes in (4096, 8192):
        print(f"{_verdict(medians[nodes] < TARGET_LARGE_MS)}  {nodes} nodes: {medians[nodes]:.0f} ms < "
              f"{TARGET_LARGE_MS} ms")
    print(f"{_verdict(ratio <= LINEAR)}  linear: 8192 / 4096 = {ratio:.2f} <= {LINEAR}")
    print(f"{_verdict(peak < TARGET_RSS_MIB)}  peak RSS {peak:.0f} MiB < {TARGET_RSS_MIB} MiB")


if __name__ == "__main__":
    main()
