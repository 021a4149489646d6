"""The wheel ships the embedded catalog and works from it (no source checkout needed)."""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

from tests.conftest import ROOT, run_process, tool


def test_wheel_contains_the_catalog_and_resolves_from_it(tmp_path: Path) -> None:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(ROOT)], check=True, capture_output=True)
    wheel = next((tmp_path / "dist").glob("aicr_gen-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    shipped = {name.removeprefix("aicr_gen/_catalog/") for name in names if name.startswith("aicr_gen/_catalog/")}
    source = {p.relative_to(ROOT / "overlays").as_posix() for p in (ROOT / "overlays").rglob("*") if p.is_file()}
    assert shipped == source
    unpacked = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(unpacked)
    probe = "from aicr_gen.catalog.load import embedded_root; print(embedded_root())"
    where = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True,
                           env={"PYTHONPATH": str(unpacked)}, cwd=tmp_path)
    assert Path(where.stdout.strip()) == unpacked / "aicr_gen" / "_catalog"
    result = run_process("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "inference",
                         "--os", "ubuntu", "--platform", "dynamo", env={"PYTHONPATH": str(unpacked)}, cwd=tmp_path)
    assert result.code == 0, result.err
    from_source = run_process("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "inference",
                              "--os", "ubuntu", "--platform", "dynamo")
    assert result.out == from_source.out


def test_project_scripts_pass_shellcheck() -> None:
    scripts = [*sorted((ROOT / "scripts").glob("*.sh")), ROOT / ".ci" / "run"]
    proc = subprocess.run([tool("shellcheck"), "-x", *map(str, scripts)], capture_output=True, text=True, cwd=ROOT,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
