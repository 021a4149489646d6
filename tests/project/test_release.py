"""The release: the workflow a tag runs is valid and its scripts pass shellcheck; the build of this checkout passes
``scripts/check_dist.py`` (the check the workflow runs); ``pipx install`` of the package with its cluster extra from a
tagged clone gives a working ``aicr-gen``; and every place that pins a release (the hooks file, the action examples,
the schema modelines) names this version's tag."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from aicr_gen import __version__
from tests.conftest import ROOT, tool

WORKFLOW = ROOT / ".github" / "workflows" / "release.yml"
TAG = f"v{__version__}"


def test_the_workflow_is_valid_and_its_scripts_pass_shellcheck(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(WORKFLOW)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    data = yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))
    assert data[True] == {"push": {"tags": ["v*"]}}  # PyYAML reads the key `on` as True
    assert data["permissions"] == {"contents": "read"}
    assert data["jobs"]["publish"]["permissions"] == {"id-token": "write"}  # trusted publishing, no stored token
    for index, step in enumerate(step for job in data["jobs"].values() for step in job["steps"] if "run" in step):
        assert "${{" not in step["run"]
        script = tmp_path / f"step{index}.sh"
        script.write_text(f"#!/usr/bin/env bash\n{step['run']}", encoding="utf-8")
        checked = subprocess.run([tool("shellcheck"), "--shell=bash", str(script)], capture_output=True, text=True,
                                 check=False)
        assert checked.returncode == 0, checked.stdout + checked.stderr


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel and sdist of this checkout, built as the release workflow builds them."""
    out = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "build", "--outdir", str(out), str(ROOT)], capture_output=True,
                           text=True, check=False, timeout=600)
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    return out


def test_the_build_passes_the_release_check(dist: Path) -> None:
    check = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_dist.py"), str(dist), TAG],
                           capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stderr
    wrong = subprocess.run([sys.executable, str(ROOT / "scripts" / "check_dist.py"), str(dist), "v9.9.9"],
                           capture_output=True, text=True, check=False)
    assert wrong.returncode == 1 and f"tag v9.9.9 is not {TAG}" in wrong.stderr


def test_pipx_installs_a_tagged_release_with_the_cluster_extra(tmp_path: Path) -> None:
    """As the README's first line, from a clone with the release tag (the dependencies from the package registry,
    as a user's pipx takes them)."""
    clone = tmp_path / "aicr-gen"
    subprocess.run(["git", "clone", "--quiet", "--no-local", str(ROOT), str(clone)], check=True)
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com", "PIPX_HOME": str(tmp_path / "pipx"),
           "PIPX_BIN_DIR": str(tmp_path / "bin"), "PIPX_MAN_DIR": str(tmp_path / "man")}
    subprocess.run(["git", "-C", str(clone), "tag", "--force", TAG], check=True, env=env, capture_output=True)
    installed = subprocess.run([sys.executable, "-m", "pipx", "install", f"aicr-gen[cluster] @ git+file://{clone}@{TAG}"],
                               capture_output=True, text=True, check=False, env=env, timeout=600)
    assert installed.returncode == 0, installed.stdout + installed.stderr
    version = subprocess.run([str(tmp_path / "bin" / "aicr-gen"), "--version"], capture_output=True, text=True,
                             check=False, env=env)
    assert version.stdout == f"aicr-gen {__version__}\n"


def test_every_pin_names_this_release() -> None:
    hooks = (ROOT / ".pre-commit-hooks.yaml").read_text(encoding="utf-8")
    assert f"#     rev: {TAG}" in hooks and "#   - repo: https://github.com/aicr-gen/aicr-gen" in hooks
    for example in sorted((ROOT / "examples" / "github").glob("*.yml")):
        text = example.read_text(encoding="utf-8")
        pins = re.findall(r"aicr-gen/aicr-gen@(v[0-9][^\s\"']*)", text)
        assert pins and set(pins) == {TAG}, (example.name, pins)
    installs = re.findall(r"pip install .*", (ROOT / "examples" / "github" / "plan.yml").read_text(encoding="utf-8"))
    assert installs and all(f'"aicr-gen @ git+https://github.com/aicr-gen/aicr-gen@{TAG}"' in line
                            for line in installs)  # a release tag, not a bare name no package index has yet


def test_without_the_cluster_extra_a_cluster_command_names_the_install(cli: object, monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    """The hooks' environment has no Kubernetes client: a command that talks to a cluster exits 2 saying how to
    get it, and one that does not still runs."""
    import importlib.util

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "kubernetes" else real(name, *args))
    result = cli("diff", "--baseline", "cm://aicr/snapshot", "--target", str(ROOT / "snapshots" / "example-live.yaml"),
                 "--kubeconfig", str(tmp_path / "none"))  # type: ignore[operator]
    assert result.code == 2
    assert "needs the official Kubernetes client, aicr-gen's cluster extra, which is not installed" in result.err
    assert f"aicr-gen[cluster] @ git+https://github.com/aicr-gen/aicr-gen@{TAG}" in result.err
    offline = cli("diff", "--baseline", str(ROOT / "snapshots" / "golden-baseline.yaml"), "--target",  # type: ignore[operator]
                  str(ROOT / "snapshots" / "example-live.yaml"))
    assert offline.code == 0
