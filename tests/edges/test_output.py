"""``aicr_gen/edges/output.py``: a reader that stops early is not an error; a path that cannot be written is refused
naming it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT
from tests.tiny_catalog import (
    Run,
    recipe,
    refused,
)


def test_a_reader_that_stops_early_is_not_an_error(catalog: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "aicr_gen", "recipe", "--catalog", str(catalog),
                             "--service", "eks"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -1` exiting before aicr-gen writes
    err = proc.stderr.read()
    proc.stderr.close()

    assert proc.wait(timeout=30) == 0
    assert err == b""


def test_output_into_proc_cannot_be_written(cli: Run, catalog: Path) -> None:
    refused(recipe(cli, catalog, "--service", "eks", "-o", "/proc/x.yaml"), "-o /proc/x.yaml: cannot write")
