"""``aicr-gen sync``: one deterministic tree, committed once, idempotent, atomic, limited to its path."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from aicr_gen.cli import main
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
MANAGED = "clusters/h100-eks-ubuntu-inference-dynamo"
ENV = {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "Test",
       "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, text=True).stdout


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "gitops"
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main")
    (folder / "README.md").write_text("hello\n")
    git(folder, "add", "README.md")
    git(folder, "commit", "-q", "-m", "init")
    return folder


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    target = tmp_path / "spec.yaml"
    target.write_text(EXAMPLE.read_text())
    return target


def sync(spec: Path, repo: Path, *extra: str) -> int:
    return main(["sync", str(spec), "--repo", str(repo), *extra])


def head(repo: Path) -> str:
    return git(repo, "rev-parse", "HEAD").strip()


def state(repo: Path) -> tuple[str, str, str, str]:
    """HEAD, the index, the work-tree status and the branches."""
    return (head(repo), git(repo, "ls-files", "-s"), git(repo, "status", "--porcelain", "--untracked-files=all"),
            git(repo, "for-each-ref"))


def test_first_sync_one_commit_only_path_then_noop(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (repo / "notes.txt").write_text("mine, uncommitted\n")
    before = head(repo)
    assert sync(spec, repo) == 0
    after = head(repo)
    assert git(repo, "rev-list", "--count", f"{before}..{after}").strip() == "1"
    touched = git(repo, "diff", "--name-only", before, after).split()
    assert touched and all(name.startswith(f"{MANAGED}/") for name in touched)
    for name in ("recipe.yaml", "checksums.txt", "argocd/app-of-apps.yaml", "certification/certification.yaml",
                 "sentinel/values.yaml"):
        assert f"{MANAGED}/{name}" in touched
    assert (repo / "notes.txt").read_text() == "mine, uncommitted\n"
    assert git(repo, "status", "--porcelain").strip() == "?? notes.txt"
    body = git(repo, "log", "-1", "--format=%B")
    assert body.startswith("aicr-gen: sync h100-eks-ubuntu-inference-dynamo")
    assert "Aicr-Gen-Recipe-Digest: sha256:" in body and "Aicr-Gen-Version: " in body
    assert "- added " in body
    capsys.readouterr()
    assert sync(spec, repo) == 0
    assert head(repo) == after
    assert "up to date" in capsys.readouterr().out
    assert sync(spec, repo, "--check") == 0


def test_check_lists_stale_files(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo, "--check") == 1
    assert f"missing {MANAGED}/recipe.yaml" in capsys.readouterr().err
    assert sync(spec, repo) == 0
    target = repo / MANAGED / "sentinel" / "values.yaml"
    target.write_text(target.read_text() + "# edited\n")
    git(repo, "commit", "-qam", "manual edit")
    capsys.readouterr()
    assert sync(spec, repo, "--check") == 1
    err = capsys.readouterr().err
    assert f"stale   {MANAGED}/sentinel/values.yaml" in err
    assert "recipe.yaml" not in err


def test_dirty_path_refused_unless_force(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo) == 0
    first = head(repo)
    (repo / MANAGED / "recipe.yaml").write_text("edited\n")
    (repo / MANAGED / "stray.txt").write_text("new\n")
    capsys.readouterr()
    assert sync(spec, repo) == 1
    err = capsys.readouterr().err
    assert f"{MANAGED}/recipe.yaml" in err and f"{MANAGED}/stray.txt" in err
    assert head(repo) == first and (repo / MANAGED / "recipe.yaml").read_text() == "edited\n"
    assert sync(spec, repo, "--force") == 0
    assert head(repo) == first  # the committed tree was already right: no commit, files restored
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == ""


def test_change_summarised_and_removed_files_deleted(spec: Path, repo: Path) -> None:
    assert sync(spec, repo) == 0
    first = head(repo)
    data = yaml.safe_load(spec.read_text())
    data["spec"]["sentinel"]["mode"] = "quarantine"
    del data["spec"]["certification"]
    spec.write_text(yaml.safe_dump(data))
    assert sync(spec, repo) == 0
    assert git(repo, "rev-list", "--count", f"{first}..HEAD").strip() == "1"
    body = git(repo, "log", "-1", "--format=%B")
    assert "NVSentinel values changed" in body and "- certification/:" in body
    assert f"extra   {MANAGED}/certification/certification.yaml" in body
    assert not (repo / MANAGED / "certification").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == ""
    assert "quarantine" in (repo / MANAGED / "sentinel" / "values.yaml").read_text() or \
        "faultQuarantine" in (repo / MANAGED / "sentinel" / "values.yaml").read_text()


def test_message_reports_bumped_version(spec: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.commands import sync as command

    assert sync(spec, repo) == 0
    old = yaml.safe_load((repo / MANAGED / "recipe.yaml").read_text())
    ref = old["componentRefs"][0]
    bumped = {**old, "componentRefs": [{**ref, "version": "v999.0.0"}, *old["componentRefs"][1:]]}
    text = command.message("c", MANAGED, old_recipe=old, new_recipe=bumped, changed=[f"stale   {MANAGED}/recipe.yaml"],
                           recipe_bytes=b"x")
    assert f"- bumped {ref['name']} {ref['version']} -> v999.0.0" in text
    assert "- (top): 1 file(s)" in text


def test_branch_leaves_checkout_alone(spec: Path, repo: Path) -> None:
    (repo / "notes.txt").write_text("mine\n")
    before = state(repo)
    assert sync(spec, repo, "--branch", "aicr/update", "--message", "Update the cluster") == 0
    assert state(repo)[:3] == before[:3]
    assert not (repo / MANAGED).exists()
    assert git(repo, "rev-list", "--count", "HEAD..aicr/update").strip() == "1"
    assert git(repo, "rev-parse", "aicr/update^").strip() == before[0]
    body = git(repo, "log", "-1", "--format=%B", "aicr/update")
    assert body.startswith("Update the cluster") and "Aicr-Gen-Recipe-Digest: sha256:" in body
    tip = git(repo, "rev-parse", "aicr/update").strip()
    assert sync(spec, repo, "--branch", "aicr/update") == 0
    assert git(repo, "rev-parse", "aicr/update").strip() == tip


@pytest.mark.parametrize("step", ["_commit", "_align_worktree"])
def test_failure_leaves_repo_unchanged(spec: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    from aicr_gen.gitops import sync as gitsync

    assert sync(spec, repo) == 0
    data = yaml.safe_load(spec.read_text())
    data["spec"]["sentinel"]["dryRun"] = True
    del data["spec"]["certification"]
    spec.write_text(yaml.safe_dump(data))
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", "notes.txt")
    before = state(repo)
    files = sorted(str(p.relative_to(repo)) for p in (repo / MANAGED).rglob("*"))
    real = getattr(gitsync, step)

    def boom(*args: object, **kwargs: object) -> object:
        if step == "_align_worktree":
            real(*args, **kwargs)  # fail after the files were changed
        raise RuntimeError("injected")

    monkeypatch.setattr(gitsync, step, boom)
    assert sync(spec, repo) == 2
    assert state(repo) == before
    assert sorted(str(p.relative_to(repo)) for p in (repo / MANAGED).rglob("*")) == files
    assert subprocess.run(["git", "-C", str(repo), "diff", "--quiet", "--", MANAGED], check=False).returncode == 0


def test_not_a_repo(spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, tmp_path / "nowhere") == 2
    assert "not a Git repository" in capsys.readouterr().err
