"""The README's main job: scripts/demo.sh tells the whole story offline, and the quick start scripts are clean."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, tool

DEMO = ROOT / "scripts" / "demo.sh"


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_demo_syncs_bumps_and_diffs_offline_in_a_temporary_folder(tmp_path: Path) -> None:
    # the demo's own git calls must not follow a repository of the caller (e.g. when run from a git hook)
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    env.pop("AICR_GEN", None)
    env.update(PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}", TMPDIR=str(tmp_path))
    start = time.perf_counter()
    proc = subprocess.run(["bash", str(DEMO)], capture_output=True, text=True, env=env, cwd=tmp_path, check=False)
    elapsed = time.perf_counter() - start
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert elapsed < 30, f"demo took {elapsed:.1f} s"

    assert len(re.findall(r"^aicr-gen: committed [0-9a-f]+ on refs/heads/main", out, re.MULTILINE)) == 2, out
    title = r"aicr-gen: sync h100-eks-ubuntu-inference-dynamo: new cluster, \d+ components"
    assert re.search(rf"^commit [0-9a-f]+  {title}$", out, re.MULTILINE), out
    assert re.search(r"^ \d+ files changed, \d+ insertions", out, re.MULTILINE), out
    up_to_date, stale = out.index("is up to date"), out.index("stale   clusters/")
    assert up_to_date < stale, out
    assert "(exit 1)" in out
    bump = re.search(r"^- bumped gpu-operator v(\d+)\.(\d+)\.\d+ -> v(\d+)\.(\d+)\.0$", out, re.MULTILINE)
    assert bump, out
    assert bump[3] == bump[1] and int(bump[4]) == int(bump[2]) + 1, bump[0]
    assert out.index("is up to date") < bump.start()
    assert re.search(r"012-gpu-operator/application\.yaml +\| +\d+ \+-", out), out
    assert "Drift between snapshots/golden-baseline.yaml and snapshots/example-live.yaml" in out
    assert re.search(r"modified +K8s\.helm\.gpu-operator\.version +v26\.3\.3 +v26\.3\.1", out), out
    assert re.search(r"==> done in \d+\.\d s", out), out
    assert list(tmp_path.iterdir()) == [], "the demo left its temporary folder behind"


@pytest.mark.parametrize("script", ["demo.sh", "quickstart.sh"])
def test_quickstart_scripts_pass_shellcheck(script: str) -> None:
    proc = subprocess.run([tool("shellcheck"), "--external-sources", f"scripts/{script}"], cwd=ROOT,
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
