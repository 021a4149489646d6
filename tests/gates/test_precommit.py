"""The hooks of .pre-commit-hooks.yaml, run for real by ``pre-commit run`` in a consumer repository whose
config names them, as a user's ``.pre-commit-config.yaml`` does.

The hook repository is a committed copy of the working tree (pre-commit installs a committed revision); one
session-wide PRE_COMMIT_HOME keeps it to a single hook environment install (from PyPI, ~30-60 s).
``pre-commit try-repo`` would install a new environment on every call: it keeps its store in a temporary folder.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import needs
from tests.consumers import SCHEMASTORE

ROOT = Path(__file__).resolve().parents[2]
HOOK_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "aicr_gen", "overlays", "policies")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
THRESHOLDS = "    thresholds: {}\n"
FLOOR = '    thresholds:\n      busBandwidthGBps: "value >= 300"\n'  # spec init's, eks/h100/training (with NVCRE)
REPO_URL = "https://github.com/example/gitops.git"
SYNC_HOOK = "aicr-gen-sync-check"
TRAINING, INFERENCE = "clusters/h100-eks-ubuntu-training-kubeflow", "clusters/h100-eks-ubuntu-inference"
HOOKS_SCHEMA = SCHEMASTORE / "pre-commit-hooks.json"

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is required")


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, env={**os.environ, **GIT_ENV})


@pytest.fixture(scope="session")
def hook_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The hook repository, made once per session at a fixed place: every test file that imports this fixture
    shares it, and so shares one hook environment in ``pre_commit_home``."""
    repo = tmp_path_factory.getbasetemp() / "hookrepo"
    if (repo / ".git").is_dir():
        return repo
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in HOOK_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=ignore)
        else:
            shutil.copy2(source, repo / name)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "hooks")
    return repo


@pytest.fixture(scope="session")
def pre_commit_home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.getbasetemp() / "pre-commit-home"
    home.mkdir(exist_ok=True)
    return home


def _aicr_gen(*args: str, cwd: Path) -> None:
    subprocess.run([sys.executable, "-m", "aicr_gen", *args], cwd=cwd, check=True, capture_output=True, text=True,
                   env={**os.environ, **GIT_ENV})


def _consumer(tmp_path: Path, edit: Callable[[str], str] | None = None) -> Path:
    repo = tmp_path / "consumer"
    (repo / "clusters").mkdir(parents=True)
    _git(repo, "init", "-q")
    _aicr_gen("spec", "init", "--service", "eks", "--accelerator", "h100", "--intent", "training",
              "--os", "ubuntu", "--platform", "kubeflow", "--repo-url", REPO_URL, "-o", "clusters/x.yaml", cwd=repo)
    spec = repo / "clusters" / "x.yaml"
    text = spec.read_text()
    assert FLOOR in text
    if edit:
        spec.write_text(edit(text))
    _git(repo, "add", "-A")
    return repo


def _synced_consumer(tmp_path: Path) -> Path:
    """A GitOps repository: two ClusterSpecs under clusters/, each with its tree committed by ``aicr-gen sync``."""
    repo = _consumer(tmp_path)
    _aicr_gen("spec", "init", "--service", "eks", "--accelerator", "h100", "--intent", "inference",
              "--os", "ubuntu", "--repo-url", REPO_URL, "-o", "clusters/y.yaml", cwd=repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "specs")
    for spec in ("clusters/x.yaml", "clusters/y.yaml"):
        _aicr_gen("sync", spec, "--repo", ".", cwd=repo)
    assert (repo / TRAINING / "checksums.txt").is_file() and (repo / INFERENCE / "checksums.txt").is_file()
    return repo


def _override_driver(spec: Path) -> None:
    text = spec.read_text()
    assert "    set: []" in text
    spec.write_text(text.replace("    set: []", '    set: ["gpu-operator:driver.enabled=false"]', 1))


def _run_hook(hook_repo: Path, home: Path, consumer: Path, hook: str, *,
              all_files: bool = True) -> subprocess.CompletedProcess[str]:
    """``pre-commit run HOOK`` from the hook repository's HEAD: on every file, or (``all_files=False``) on the
    staged ones as for a commit."""
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    revision = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True,
                              check=True).stdout.strip()
    config = consumer.parent / f"pre-commit-config-{hook}.yaml"  # outside the consumer's files
    config.write_text(f"repos:\n  - repo: {hook_repo}\n    rev: {revision}\n    hooks:\n      - id: {hook}\n",
                      encoding="utf-8")
    command = [sys.executable, "-m", "pre_commit", "run", hook, f"--config={config}", "--verbose",
               *(["--all-files"] if all_files else [])]
    return subprocess.run(command, cwd=consumer, capture_output=True, text=True, env=env, check=False)


@needs(HOOKS_SCHEMA)
def test_hooks_file_is_valid_against_schemastore() -> None:
    command = [sys.executable, "-m", "check_jsonschema", "--schemafile", str(HOOKS_SCHEMA),
               str(ROOT / ".pre-commit-hooks.yaml")]
    proc = subprocess.run(command, capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_spec_hook_passes_a_good_spec(hook_repo: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    proc = _run_hook(hook_repo, pre_commit_home, _consumer(tmp_path), "aicr-gen-spec")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_spec_hook_fails_on_a_policy_finding(hook_repo: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    proc = _run_hook(hook_repo, pre_commit_home, _consumer(tmp_path, lambda text: text.replace(FLOOR, THRESHOLDS)),
                     "aicr-gen-spec")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert "training-needs-thresholds" in proc.stdout
    assert "clusters/x.yaml" in proc.stdout


def test_spec_hook_refuses_the_placeholder_url_of_spec_init(hook_repo: Path, pre_commit_home: Path,
                                                          tmp_path: Path) -> None:
    from aicr_gen.spec.cluster import PLACEHOLDER_URL

    consumer = _consumer(tmp_path, lambda text: text.replace(REPO_URL, PLACEHOLDER_URL))
    proc = _run_hook(hook_repo, pre_commit_home, consumer, "aicr-gen-spec")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    line = next(n for n, text in enumerate((consumer / "clusters" / "x.yaml").read_text().splitlines(), 1)
                if "url:" in text)
    assert (f"clusters/x.yaml:{line}:5: error [input] spec.repo.url: '{PLACEHOLDER_URL}' is a placeholder"
            in proc.stdout), proc.stdout


def test_spec_hook_fails_on_a_typo_with_file_and_line(hook_repo: Path, pre_commit_home: Path,
                                                     tmp_path: Path) -> None:
    def typo(text: str) -> str:
        return text.replace("    postChange: false", "    postChnage: false")

    consumer = _consumer(tmp_path, typo)
    line = next(n for n, text in enumerate((consumer / "clusters" / "x.yaml").read_text().splitlines(), 1)
                if "postChnage" in text)
    proc = _run_hook(hook_repo, pre_commit_home, consumer, "aicr-gen-spec")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "postChnage" in proc.stdout
    assert f"clusters/x.yaml:{line}" in proc.stdout, proc.stdout


def test_sync_check_hook_passes_a_spec_change_staged_with_its_tree(hook_repo: Path, pre_commit_home: Path,
                                                                    tmp_path: Path) -> None:
    consumer = _synced_consumer(tmp_path)
    _override_driver(consumer / "clusters" / "x.yaml")
    _aicr_gen("sync", "clusters/x.yaml", "--repo", ".", cwd=consumer)
    # the spec edit and the sync's tree (its commit undone) staged together: the commit being made is in the
    # index, HEAD is behind it
    _git(consumer, "reset", "-q", "--soft", "HEAD~1")
    _git(consumer, "add", "-A")
    behind = subprocess.run([sys.executable, "-m", "aicr_gen", "sync", "--check", "--repo", ".", "clusters/x.yaml"],
                            cwd=consumer, capture_output=True, text=True, check=False)
    assert behind.returncode == 1, behind.stdout + behind.stderr
    proc = _run_hook(hook_repo, pre_commit_home, consumer, SYNC_HOOK, all_files=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "Passed" in proc.stdout


def test_sync_check_hook_fails_on_a_spec_change_without_a_sync(hook_repo: Path, pre_commit_home: Path,
                                                               tmp_path: Path) -> None:
    consumer = _synced_consumer(tmp_path)
    _override_driver(consumer / "clusters" / "x.yaml")
    _git(consumer, "add", "-A")
    proc = _run_hook(hook_repo, pre_commit_home, consumer, SYNC_HOOK, all_files=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert re.search(rf"stale +{TRAINING}/argocd/\d+-gpu-operator/values\.yaml", proc.stdout), proc.stdout
    assert f"stale   {TRAINING}/checksums.txt" in proc.stdout
    assert "aicr-gen sync" in proc.stdout
    assert not re.search(rf"(stale|missing|extra) +{INFERENCE}/", proc.stdout), proc.stdout


def test_sync_check_hook_fails_on_a_hand_edited_rendered_file(hook_repo: Path, pre_commit_home: Path,
                                                             tmp_path: Path) -> None:
    consumer = _synced_consumer(tmp_path)
    values = next((consumer / INFERENCE / "argocd").glob("*-gpu-operator/values.yaml"))
    values.write_text(values.read_text() + "# tuned by hand\n")
    _git(consumer, "add", "-A")
    proc = _run_hook(hook_repo, pre_commit_home, consumer, SYNC_HOOK, all_files=False)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Failed" in proc.stdout
    assert f"stale   {values.relative_to(consumer).as_posix()}" in proc.stdout, proc.stdout
    assert not re.search(rf"(stale|missing|extra) +{TRAINING}/", proc.stdout), proc.stdout
