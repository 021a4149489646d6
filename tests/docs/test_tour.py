"""The tour of docs/index.md runs as written, up to the pull request: its steps 1 to 4 (spec init, lint, sync, a
bump on a branch, plan) in a new GitOps repository, with ``aicr-gen`` on PATH. The steps after need a cluster. The
one step a reader does in an editor (``# in FILE, set:  KEY: VALUE``) is done here as a reader would: the spec's
line of that key is replaced."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

EDIT = re.compile(r"^# in (?P<file>\S+), set:\s+(?P<key>[\w-]+): (?P<value>.+)$")


def _steps() -> str:
    text = (ROOT / "docs" / "index.md").read_text(encoding="utf-8")
    return text[text.index("**1. "):text.index("**5. ")]


def _run(script: str, cwd: Path, env: dict[str, str]) -> str:
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", script], cwd=cwd, env=env, capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, f"{script}\n{proc.stdout}{proc.stderr}"
    return proc.stdout + proc.stderr


@pytest.mark.skipif(shutil.which("git") is None, reason="git is required")
def test_the_tour_reaches_a_planned_pull_request(tmp_path: Path) -> None:
    shim = tmp_path / "bin" / "aicr-gen"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m aicr_gen "$@"\n')
    shim.chmod(0o755)
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_") or "_NAME" in key
           or "_EMAIL" in key}
    env.update(PATH=f"{shim.parent}{os.pathsep}{env.get('PATH', '')}",
               PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])))
    blocks = re.findall(r"```bash\n(.*?)```", _steps(), re.DOTALL)
    assert len(blocks) == 4, blocks
    cwd, out = tmp_path, ""
    for block in blocks:
        lines: list[str] = []
        for line in block.splitlines():
            edit = EDIT.match(line)
            if not edit:
                lines.append(line)
                continue
            out += _run("\n".join(lines), cwd, env)
            lines = []
            spec = cwd / edit["file"]
            text, count = re.subn(rf"(?m)^  {edit['key']}:.*$", f"  {edit['key']}: {edit['value']}",
                                  spec.read_text(encoding="utf-8"))
            assert count == 1, f"{spec} has no spec.{edit['key']} line to edit"
            spec.write_text(text, encoding="utf-8")
        out += _run("\n".join(lines), cwd, env)
        if (cwd / "gitops").is_dir():  # step 1 makes the repository and works in it from then on
            cwd = cwd / "gitops"
    assert re.search(r"committed [0-9a-f]+ on refs/heads/main", out), out
    assert re.search(r"committed [0-9a-f]+ on refs/heads/bump-gpu-operator", out), out
    assert re.search(r"^gpu-a \(clusters/gpu-a\): gpu-operator v[\d.]+ -> v26\.4\.0$", out, re.MULTILINE), out
