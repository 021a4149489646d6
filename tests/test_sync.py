"""``aicr-gen sync``: one deterministic tree, committed once, idempotent, atomic, limited to its path."""

from __future__ import annotations

import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

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
    data["spec"]["sentinel"]["breaker"] = {"percentage": 10}
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


def edit(spec: Path, change: Callable[[dict[str, Any]], None]) -> None:
    data = yaml.safe_load(spec.read_text())
    change(data)
    spec.write_text(yaml.safe_dump(data))


def test_failure_mid_render_leaves_repo_unchanged(spec: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen import render

    assert sync(spec, repo) == 0
    edit(spec, lambda data: data["spec"].update(deployers=["argocd", "flux"]))
    before = state(repo)
    real = render.render_bundle

    def second_fails(plan: Any, deployer: str, options: Any) -> Any:
        if deployer == "flux":
            raise RuntimeError("injected while rendering flux")
        return real(plan, deployer, options)

    monkeypatch.setattr(render, "render_bundle", second_fails)
    assert sync(spec, repo) == 2
    assert state(repo) == before


# ----------------------------------------------------------------------------------------- hostile input


def test_path_option_escaping_the_repo_is_refused(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = state(repo)
    for bad in ("../x", "/etc/x", "clusters/../../x", ".git/hooks", "a//b"):
        assert sync(spec, repo, "--path", bad) == 2, bad
        err = capsys.readouterr().err
        assert err.startswith("aicr-gen: error:") and "Traceback" not in err and bad.split("/")[0] in err
    assert state(repo) == before
    assert not (repo.parent / "x").exists()


def test_spec_path_escaping_the_repo_is_refused(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(spec, lambda data: data["spec"]["repo"].update(path="../outside"))
    before = state(repo)
    assert sync(spec, repo) == 2
    err = capsys.readouterr().err
    assert f"{spec}:" in err and "spec.repo.path" in err and "'..'" in err
    assert state(repo) == before and not (repo.parent / "outside").exists()


@pytest.mark.parametrize("where", ["worktree", "committed"])
def test_symlinked_managed_path_is_refused(spec: Path, repo: Path, tmp_path: Path, where: str,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (repo / "clusters").symlink_to(outside)
    if where == "committed":
        git(repo, "add", "clusters")
        git(repo, "commit", "-q", "-m", "a link")
    before = state(repo)
    assert sync(spec, repo) == 2
    assert "clusters is a symlink" in capsys.readouterr().err
    assert state(repo) == before
    assert list(outside.iterdir()) == []


# ----------------------------------------------------------------------------------------- policies, pins


def test_policy_error_refuses_the_sync(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    edit(spec, lambda data: data["spec"]["sentinel"].update(mode="quarantine"))  # no breaker: not opted in
    before = state(repo)
    assert sync(spec, repo) == 1
    err = capsys.readouterr().err
    assert "1 policy error(s); nothing was committed" in err
    assert "sentinel-monitor-unless-opted-in spec.sentinel.mode" in err
    assert state(repo) == before


def test_user_policy_from_the_spec_is_enforced(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (spec.parent / "no-dynamo.yaml").write_text(
        "apiVersion: aicr-gen.dev/v1alpha1\nkind: Policy\nmetadata:\n  name: no-dynamo\nspec:\n"
        "  description: no dynamo here\n  severity: error\n  target: component\n"
        "  rule: component.name != 'dynamo-platform'\n  path: componentRefs.{name}\n"
        "  message: dynamo is not allowed on this cluster\n")
    edit(spec, lambda data: data["spec"].update(policies=["no-dynamo.yaml"]))
    assert sync(spec, repo) == 1
    assert "no-dynamo" in capsys.readouterr().err


def test_version_pin_is_committed_and_summarised(spec: Path, repo: Path) -> None:
    assert sync(spec, repo) == 0
    old = {ref["name"]: ref["version"] for ref in
           yaml.safe_load((repo / MANAGED / "recipe.yaml").read_text())["componentRefs"]}
    edit(spec, lambda data: data["spec"].update(versions={"gpu-operator": "v99.1.0"}))
    assert sync(spec, repo) == 0
    body = git(repo, "log", "-1", "--format=%B")
    assert f"- bumped gpu-operator {old['gpu-operator']} -> v99.1.0" in body
    application = (repo / MANAGED / "argocd" / "012-gpu-operator" / "application.yaml").read_text()
    assert 'targetRevision: "99.1.0"' in application


def test_version_pin_of_an_unknown_component_is_refused(spec: Path, repo: Path,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    edit(spec, lambda data: data["spec"].update(versions={"gpu-operatr": "v1.0.0"}))
    assert sync(spec, repo) == 2
    err = capsys.readouterr().err
    assert f"{spec}:" in err and "spec.versions.gpu-operatr" in err and "gpu-operator" in err


# ----------------------------------------------------------------------------------------- check modes


def test_check_staged_compares_with_the_index(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo) == 0
    assert sync(spec, repo, "--check", "--staged") == 0
    target = repo / MANAGED / "recipe.yaml"
    target.write_text(target.read_text() + "# edited\n")
    assert sync(spec, repo, "--check", "--staged") == 0  # not staged yet
    git(repo, "add", str(target))
    capsys.readouterr()
    assert sync(spec, repo, "--check", "--staged") == 1
    assert f"stale   {MANAGED}/recipe.yaml" in capsys.readouterr().err
    assert sync(spec, repo, "--check") == 0  # HEAD is still right


def test_check_several_specs(spec: Path, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = tmp_path / "other.yaml"
    other.write_text((ROOT / "examples" / "gke-h100-training-kubeflow.yaml").read_text())
    assert sync(spec, repo) == 0
    capsys.readouterr()
    assert main(["sync", str(spec), str(other), "--repo", str(repo), "--check"]) == 1
    captured = capsys.readouterr()
    assert f"{MANAGED} is up to date" in captured.out
    assert "clusters/h100-gke-cos-training-kubeflow is not up to date" in captured.err
    assert sync(other, repo) == 0
    assert main(["sync", str(spec), str(other), "--repo", str(repo), "--check"]) == 0


@pytest.mark.parametrize(("extra", "message"), [(("--staged",), "--staged compares with the index"),
                                                (("SECOND",), "a sync commits one spec"),
                                                (("SECOND", "--check", "--path", "x"), "--path names the folder")])
def test_usage_errors(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str], extra: tuple[str, ...],
                      message: str) -> None:
    second = spec.with_name("second.yaml")
    second.write_text(spec.read_text())
    args = [str(second) if item == "SECOND" else item for item in extra]
    assert main(["sync", str(spec), *args, "--repo", str(repo)]) == 2
    assert message in capsys.readouterr().err


# ----------------------------------------------------------------------------------------- push


def test_push_sends_the_branch_to_origin(spec: Path, repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    git(repo, "push", "-q", "origin", "main")
    assert sync(spec, repo, "--branch", "aicr/pr", "--push") == 0
    assert git(remote, "rev-parse", "aicr/pr").strip() == git(repo, "rev-parse", "aicr/pr").strip()
    assert sync(spec, repo, "--push") == 0
    assert git(remote, "rev-parse", "main").strip() == head(repo)


def test_without_push_nothing_leaves(spec: Path, repo: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    assert sync(spec, repo, "--branch", "aicr/pr") == 0
    assert git(remote, "for-each-ref").strip() == ""


def test_push_to_an_unreachable_remote_is_exit_3_and_keeps_the_commit(spec: Path, repo: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    git(repo, "remote", "add", "origin", str(tmp_path / "no-such-remote.git"))
    assert sync(spec, repo, "--branch", "aicr/pr", "--push") == 3
    err = capsys.readouterr().err
    assert "pushing it to origin failed" in err and "git push origin refs/heads/aicr/pr" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
    assert git(repo, "rev-parse", "--verify", "aicr/pr").strip()


def test_check_expands_spec_patterns(spec: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo) == 0
    monkeypatch.chdir(tmp_path)
    capsys.readouterr()
    assert main(["sync", "--check", "--repo", str(repo), "sp*.yaml"]) == 0
    assert f"{MANAGED} is up to date with spec.yaml" in capsys.readouterr().out
    assert main(["sync", "--check", "--repo", str(repo), "nothing/*.yaml"]) == 2
    assert "SPEC 'nothing/*.yaml' matches no file" in capsys.readouterr().err
