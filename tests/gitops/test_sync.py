"""``aicr-gen sync``: one deterministic tree, committed once, idempotent, atomic, limited to its path."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.cli.main import main
from tests.conftest import ROOT
from tests.nvcre_elsewhere import certifying

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


def init_repo(folder: Path, *extra: str) -> Path:
    """A new repository with one commit on main (``extra``: more ``git init`` options)."""
    folder.mkdir()
    git(folder, "init", "-q", "-b", "main", *extra)
    (folder / "README.md").write_text("hello\n")
    git(folder, "add", "README.md")
    git(folder, "commit", "-q", "-m", "init")
    return folder


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "gitops")


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    target = tmp_path / "spec.yaml"
    target.write_text(certifying(EXAMPLE.read_text(), tmp_path))
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
    record = f".aicr-gen/inputs/{MANAGED}.json"  # what the tree was rendered from, beside it
    assert record in touched and all(name.startswith(f"{MANAGED}/") for name in touched if name != record)
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
    assert head(repo) == first  # the committed tree was already right: no commit, our file restored
    # --force replaces only what sync wrote: the user's untracked file is kept (it used to be deleted)
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == f"?? {MANAGED}/stray.txt"
    assert (repo / MANAGED / "stray.txt").read_text() == "new\n"


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
    assert "NVSentinel:\n- mode monitor -> quarantine\n" in body
    assert "- circuit breaker percentage unset -> 10%" in body and " - -> " not in body
    assert "Certification:\n- certification removed\n- category removed: communication/nccl-all-reduce\n" in body
    assert f"  removed {MANAGED}/certification/certification.yaml" in body
    assert "- certification/: " in body and " removed" in body
    assert "missing " not in body and "stale " not in body and "extra " not in body  # the --check words
    assert not (repo / MANAGED / "certification").exists()
    assert git(repo, "status", "--porcelain", "--untracked-files=all").strip() == ""
    assert "quarantine" in (repo / MANAGED / "sentinel" / "values.yaml").read_text() or \
        "faultQuarantine" in (repo / MANAGED / "sentinel" / "values.yaml").read_text()


def test_message_reports_bumped_version(spec: Path, repo: Path) -> None:
    from aicr_gen.gitops.review import commit_message as command
    from aicr_gen.gitops.review.compare import compare
    assert sync(spec, repo) == 0
    old_text = (repo / MANAGED / "recipe.yaml").read_text()
    old = yaml.safe_load(old_text)
    ref = old["componentRefs"][0]
    bumped = {**old, "componentRefs": [{**ref, "version": "v999.0.0"}, *old["componentRefs"][1:]]}
    changes = compare({"recipe.yaml": old_text.encode()}, {"recipe.yaml": yaml.safe_dump(bumped).encode()})
    text = command.message("c", MANAGED, changes, "0" * 64)
    assert f"- bumped {ref['name']} {ref['version']} -> v999.0.0" in text
    assert "- (top): 1 changed" in text
    assert f"  changed {MANAGED}/recipe.yaml" in text
    titled = command.message("c", MANAGED, changes, "0" * 64, title="Bump the first component")
    assert titled.startswith("Bump the first component\n\nComponents:\n")  # --message: title, body kept
    assert f"- bumped {ref['name']}" in titled and "Aicr-Gen-Recipe-Digest: sha256:" in titled


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


@pytest.mark.parametrize("step", ["_commit", "settle"])
def test_failure_leaves_repo_unchanged(spec: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, step: str) -> None:
    from aicr_gen.gitops.commit import advance
    from aicr_gen.gitops.commit import sync as gitsync
    assert sync(spec, repo) == 0
    data = yaml.safe_load(spec.read_text())
    data["spec"]["sentinel"]["dryRun"] = True
    del data["spec"]["certification"]
    spec.write_text(yaml.safe_dump(data))
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", "notes.txt")
    before = state(repo)
    files = sorted(str(p.relative_to(repo)) for p in (repo / MANAGED).rglob("*"))
    module = advance if step == "settle" else gitsync  # where the step is called from
    real = getattr(module, step)

    def boom(*args: object, **kwargs: object) -> object:
        if step == "settle":
            left = real(*args, **kwargs)  # fail after the files were changed (the roll-back goes through)
            if not kwargs["forward"]:
                return left
        raise RuntimeError("injected")

    monkeypatch.setattr(module, step, boom)
    assert sync(spec, repo) == 2
    assert state(repo) == before
    assert sorted(str(p.relative_to(repo)) for p in (repo / MANAGED).rglob("*")) == files
    assert subprocess.run(["git", "-C", str(repo), "diff", "--quiet", "--", MANAGED], check=False).returncode == 0


def test_not_a_repo(spec: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, tmp_path / "nowhere") == 2
    assert "not inside a Git work tree" in capsys.readouterr().err
    (tmp_path / "plain").mkdir()
    assert sync(spec, tmp_path / "plain") == 2
    assert "not inside a Git work tree" in capsys.readouterr().err


def test_a_bare_repository_is_refused_and_a_git_folder_means_its_work_tree(
        spec: Path, repo: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    subprocess.run(["git", "init", "-q", "--bare", str(tmp_path / "bare.git")], check=True)
    assert sync(spec, tmp_path / "bare.git") == 2
    assert "a bare repository has no work tree" in capsys.readouterr().err
    assert sync(spec, repo / ".git") == 0
    assert git(repo, "ls-files", f"{MANAGED}/recipe.yaml").strip() == f"{MANAGED}/recipe.yaml"


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
    assert "clusters/h100-gke-cos-training-kubeflow is not up to date" in captured.err
    assert captured.err.rstrip().endswith("1 of 2 tree(s) up to date with HEAD; stale: "
                                          "clusters/h100-gke-cos-training-kubeflow")
    assert sync(other, repo) == 0
    assert main(["sync", str(spec), str(other), "--repo", str(repo), "--check"]) == 0


@pytest.mark.parametrize(("extra", "message"), [(("--staged",), "--staged compares with the index"),
                                                (("SECOND",), "have the same managed path"),
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
    # a pattern matching no spec yet has nothing to check (the hook runs on every commit); sync refuses it
    assert main(["sync", "--check", "--repo", str(repo), "nothing/*.yaml"]) == 0
    assert "no ClusterSpec matches nothing/*.yaml yet; nothing to check" in capsys.readouterr().out
    assert main(["sync", "--repo", str(repo), "nothing/*.yaml"]) == 2
    assert "SPEC 'nothing/*.yaml' matches no file" in capsys.readouterr().err


# ------------------------------------------------------------------------------------------ pull requests


def _spec_in_repo(repo: Path) -> Path:
    """The example spec kept in the repository (committed), as a GitOps repository keeps its ClusterSpecs."""
    target = repo / "specs" / "cluster.yaml"
    target.parent.mkdir()
    target.write_text(EXAMPLE.read_text())
    git(repo, "add", "specs")
    git(repo, "commit", "-q", "-m", "add the spec")
    return target


def _check_at(repo: Path, rev: str, tmp_path: Path) -> int:
    """``sync --check`` in a fresh clone of ``rev``: what CI runs on the pull request's head."""
    clone = tmp_path / f"clone-{rev.replace('/', '-')}"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    git(clone, "checkout", "-q", rev)
    return main(["sync", "--check", str(clone / "specs" / "cluster.yaml"), "--repo", str(clone)])


@pytest.mark.parametrize("branch", [None, "pr/x"])
def test_a_spec_in_the_repository_is_committed_with_its_tree(repo: Path, tmp_path: Path, branch: str | None) -> None:
    spec = _spec_in_repo(repo)
    assert main(["sync", str(spec), "--repo", str(repo)]) == 0
    edit(spec, lambda data: data["spec"]["versions"].update({"gpu-operator": "v26.4.0"}))
    assert main(["sync", str(spec), "--repo", str(repo), *(["--branch", branch] if branch else [])]) == 0
    rev = branch or "main"
    changed = git(repo, "diff-tree", "-r", "--name-only", "--no-commit-id", rev).split()
    assert "specs/cluster.yaml" in changed and f"{MANAGED}/recipe.yaml" in changed
    assert git(repo, "show", f"{rev}:specs/cluster.yaml") == spec.read_text()
    assert "Inputs committed with the tree:\n- specs/cluster.yaml" in git(repo, "log", "-1", "--format=%B", rev)
    assert _check_at(repo, rev, tmp_path) == 0  # self-consistent: the branch passes its own check
    if branch is None:
        assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""  # index and work tree in line
    else:
        assert git(repo, "status", "--porcelain") == " M specs/cluster.yaml\n"  # the checkout is left alone


def test_branch_again_appends_to_its_tip_and_never_drops_a_commit(repo: Path) -> None:
    spec = _spec_in_repo(repo)
    main_before = head(repo)
    edit(spec, lambda data: data["spec"]["versions"].update({"gpu-operator": "v26.4.0"}))
    assert main(["sync", str(spec), "--repo", str(repo), "--branch", "pr/x"]) == 0
    first = git(repo, "rev-parse", "pr/x").strip()
    # a reviewer's commit on the branch (another file), then a second change of the spec
    git(repo, "worktree", "add", "-q", str(repo.parent / "wt"), "pr/x")
    (repo.parent / "wt" / "NOTES.md").write_text("review notes\n")
    git(repo.parent / "wt", "add", "NOTES.md")
    git(repo.parent / "wt", "commit", "-q", "-m", "notes")
    notes = git(repo, "rev-parse", "pr/x").strip()
    edit(spec, lambda data: data["spec"]["versions"].update({"gpu-operator": "v26.4.1"}))
    assert main(["sync", str(spec), "--repo", str(repo), "--branch", "pr/x"]) == 0
    assert git(repo, "rev-parse", "pr/x^").strip() == notes
    assert git(repo, "rev-list", "--reverse", f"{main_before}..pr/x").split()[:2] == [first, notes]
    assert git(repo, "show", "pr/x:NOTES.md") == "review notes\n"
    assert "bumped gpu-operator v26.4.0 -> v26.4.1" in git(repo, "log", "-1", "--format=%B", "pr/x")
    assert head(repo) == main_before
    # unchanged since: no empty commit on the branch
    assert main(["sync", str(spec), "--repo", str(repo), "--branch", "pr/x"]) == 0
    assert git(repo, "rev-list", "--count", f"{main_before}..pr/x").strip() == "3"


def test_a_non_fast_forward_push_says_so_and_what_to_do(spec: Path, repo: Path, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(repo, "remote", "add", "origin", str(remote))
    assert sync(spec, repo, "--branch", "pr/x", "--push") == 0
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", "pr/x", str(remote), str(other)], check=True)
    (other / "THEIRS.md").write_text("pushed by someone else\n")
    git(other, "add", "THEIRS.md")
    git(other, "commit", "-q", "-m", "theirs")
    git(other, "push", "-q", "origin", "pr/x")
    edit(spec, lambda data: data["spec"]["versions"].update({"gpu-operator": "v26.4.0"}))
    capsys.readouterr()
    assert sync(spec, repo, "--branch", "pr/x", "--push") == 3
    err = capsys.readouterr().err
    assert "non-fast-forward" in err and "git rebase origin/pr/x pr/x" in err and "kept locally" in err
    assert "\n" not in err.strip()


def test_detached_head_without_branch_is_refused(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    git(repo, "checkout", "-q", "--detach")
    before = state(repo)
    assert sync(spec, repo) == 2
    err = capsys.readouterr().err
    assert "HEAD is detached" in err and "--branch" in err
    assert state(repo) == before
    assert sync(spec, repo, "--branch", "pr/detached") == 0  # forks from the detached commit
    assert git(repo, "rev-parse", "pr/detached^").strip() == before[0]


def test_repo_from_a_subfolder_works_on_the_root(spec: Path, repo: Path) -> None:
    (repo / "docs" / "deep").mkdir(parents=True)
    assert sync(spec, repo / "docs" / "deep") == 0
    assert git(repo, "ls-files", f"{MANAGED}/recipe.yaml").strip() == f"{MANAGED}/recipe.yaml"
    assert not (repo / "docs" / "deep" / MANAGED).exists()


def test_force_never_overwrites_a_file_the_last_sync_did_not_write(spec: Path, repo: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo) == 0
    data = yaml.safe_load(spec.read_text())
    data["spec"]["sentinel"]["lifecycle"] = True
    data["spec"]["sentinel"]["mode"] = "quarantine"
    data["spec"]["sentinel"]["breaker"] = {"percentage": 10}
    spec.write_text(yaml.safe_dump(data))
    mine = repo / MANAGED / "validation" / "validation-request.yaml"  # a file the new tree will hold
    mine.parent.mkdir()
    mine.write_text("my own notes\n")
    before = state(repo)
    capsys.readouterr()
    assert sync(spec, repo, "--force") == 1
    assert f"{MANAGED}/validation/validation-request.yaml" in capsys.readouterr().err
    assert state(repo) == before and mine.read_text() == "my own notes\n"


def test_specs_sharing_a_managed_path_or_a_name_are_refused_naming_both(spec: Path, repo: Path, tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo) == 0
    twin = tmp_path / "twin.yaml"
    twin.write_text(spec.read_text().replace('name: "h100-eks-ubuntu-inference-dynamo"', 'name: "other"'))
    capsys.readouterr()
    assert main(["sync", "--check", str(spec), str(twin), "--repo", str(repo)]) == 2
    err = capsys.readouterr().err
    assert f"{spec} and {twin} have the same managed path {MANAGED!r}" in err
    namesake = tmp_path / "namesake.yaml"
    namesake.write_text(spec.read_text().replace(f'path: "{MANAGED}"', 'path: "clusters/elsewhere"'))
    assert main(["sync", "--check", str(spec), str(namesake), "--repo", str(repo)]) == 2
    assert "have the same cluster name 'h100-eks-ubuntu-inference-dynamo'" in capsys.readouterr().err


def test_check_ends_with_a_count(spec: Path, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert sync(spec, repo) == 0
    capsys.readouterr()
    assert main(["sync", "--check", str(spec), "--repo", str(repo)]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == "aicr-gen: 1 of 1 tree(s) up to date with HEAD"


def test_sha256_repositories_work(spec: Path, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "sha256", "--object-format=sha256")
    assert sync(spec, repo) == 0
    assert main(["sync", "--check", str(spec), "--repo", str(repo)]) == 0
    assert main(["sync", "--check", "--staged", str(spec), "--repo", str(repo)]) == 0
    assert len(head(repo)) == 64
    subprocess.run(["git", "-C", str(repo), "fsck", "--strict", "--no-dangling"], check=True, capture_output=True)
    edit(spec, lambda data: data["spec"]["versions"].update({"gpu-operator": "v26.4.0"}))
    assert sync(spec, repo) == 0
    assert "bumped gpu-operator" in git(repo, "log", "-1", "--format=%B")


def test_message_names_certification_and_sentinel_changes(spec: Path, repo: Path) -> None:
    edit(spec, lambda data: data["spec"]["certification"].update(thresholds={"busBandwidthGBps": "value >= 300"}))
    assert sync(spec, repo) == 0
    edit(spec, lambda data: (
        data["spec"]["certification"].update(thresholds={"busBandwidthGBps": "value >= 250",
                                                         "algBandwidthGBps": "value >= 100"},
                                             schedule="0 3 * * 0"),
        data["spec"]["sentinel"].update(mode="quarantine", breaker={"percentage": 10, "maxNodes": 2})))
    assert sync(spec, repo) == 0
    body = git(repo, "log", "-1", "--format=%B")
    for line in ("- threshold busBandwidthGBps: value >= 300 -> value >= 250",
                 "- threshold algBandwidthGBps added: value >= 100", "- schedule added: '0 3 * * 0'",
                 "- mode monitor -> quarantine", "- circuit breaker percentage unset -> 10%",
                 "- circuit breaker maxNodes no bound -> 2", "- rule set added: GPU fatal error ruleset"):
        assert line in body, f"{line!r} not in:\n{body}"
    edit(spec, lambda data: data["spec"]["certification"].pop("schedule"))
    assert sync(spec, repo) == 0
    assert "- schedule removed (was '0 3 * * 0')" in git(repo, "log", "-1", "--format=%B")


RULES = """\
ruleSets:
  - name: NVLink degradation
    match:
      all:
        - kind: HealthEvent
          expression: "event.checkName == 'GpuNvlinkWatch'"
    cordon: {shouldCordon: true}
"""


def spec_with_inputs(tmp_path: Path) -> Path:
    """A quarantine-mode spec reading a catalog folder and a rules file beside it."""
    shutil.copytree(ROOT / "overlays", tmp_path / "catalog")
    (tmp_path / "rules.yaml").write_text(RULES)
    data = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["catalogs"] = ["catalog"]
    data["spec"]["sentinel"].update(mode="quarantine", rules="rules.yaml", breaker={"percentage": 10})
    target = tmp_path / "inputs.yaml"
    target.write_text(yaml.safe_dump(data))
    return target


def test_an_unchanged_check_is_answered_without_rendering(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from aicr_gen.gitops.trees import render_tree
    spec = spec_with_inputs(tmp_path)
    assert sync(spec, repo) == 0
    other = tmp_path / "other.yaml"
    other.write_text((ROOT / "examples" / "gke-h100-training-kubeflow.yaml").read_text())
    assert sync(other, repo) == 0
    capsys.readouterr()
    assert main(["sync", str(spec), str(other), "--repo", str(repo), "--check"]) == 0  # renders, remembers
    rendered = capsys.readouterr().out

    def boom(*args: object, **kwargs: object) -> object:
        raise AssertionError("rendered again")

    monkeypatch.setattr(render_tree, "render_tree", boom)
    assert main(["sync", str(spec), str(other), "--repo", str(repo), "--check"]) == 0
    assert main(["sync", str(spec), str(other), "--repo", str(repo), "--check", "--staged"]) == 0
    assert capsys.readouterr().out == rendered + rendered.replace("HEAD", "the index")
    assert sync(other, repo, "--check") == 0  # the sync of it alone remembered it alone


def test_a_check_after_a_sync_of_one_spec_renders_nothing(spec: Path, repo: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.gitops.trees import render_tree
    assert sync(spec, repo) == 0
    real, renders = render_tree.render_tree, []

    def counted(*args: Any, **kwargs: Any) -> Any:
        renders.append(args)
        return real(*args, **kwargs)

    monkeypatch.setattr(render_tree, "render_tree", counted)
    assert sync(spec, repo, "--check") == 0
    assert not renders
    assert sync(spec, repo, "--check", "--path", "elsewhere") == 1  # another question: rendered
    assert len(renders) == 1


@pytest.mark.parametrize("change", ["catalog file", "new catalog file", "rules file", "committed tree", "spec"])
def test_check_renders_again_when_an_input_changed(tmp_path: Path, repo: Path, capsys: pytest.CaptureFixture[str],
                                                    change: str) -> None:
    spec = spec_with_inputs(tmp_path)
    assert sync(spec, repo) == 0
    assert sync(spec, repo, "--check") == 0
    values = tmp_path / "catalog" / "components" / "nvsentinel" / "values.yaml"
    if change == "catalog file":
        values.write_text(values.read_text() + "addedByTest: true\n")
    elif change == "new catalog file":
        (tmp_path / "catalog" / "components" / "nvsentinel" / "extra.yaml").write_text("not: used\n")
    elif change == "rules file":
        (tmp_path / "rules.yaml").write_text(RULES.replace("shouldCordon: true", "shouldCordon: false"))
    elif change == "committed tree":
        target = repo / MANAGED / "recipe.yaml"
        target.write_text(target.read_text() + "# edited\n")
        git(repo, "commit", "-qam", "manual edit")
    else:
        edit(spec, lambda data: data["spec"]["versions"].update({"gpu-operator": "v26.5.0"}))
    capsys.readouterr()
    code = sync(spec, repo, "--check")
    err = capsys.readouterr().err
    if change == "new catalog file":  # read by no component: rendered again, and still the same tree
        assert code == 0, err
        return
    assert code == 1
    stale = {"catalog file": "argocd/018-nvsentinel/values.yaml", "rules file": "sentinel/values.yaml",
             "committed tree": "recipe.yaml", "spec": "recipe.yaml"}[change]
    assert f"stale   {MANAGED}/{stale}" in err


def test_an_input_changed_while_rendering_is_not_remembered(tmp_path: Path, repo: Path,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.gitops.trees import render_tree
    spec = spec_with_inputs(tmp_path)
    rules, edited = tmp_path / "rules.yaml", RULES.replace("shouldCordon: true", "shouldCordon: false")
    rules.write_text(edited)
    assert sync(spec, repo) == 0  # the tree of the edited rules
    rules.write_text(RULES)
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path / "fresh-cache"))
    real = render_tree.render_tree

    def edit_then_render(*args: Any, **kwargs: Any) -> Any:  # the rules change after they were digested
        rules.write_text(edited)
        return real(*args, **kwargs)

    monkeypatch.setattr(render_tree, "render_tree", edit_then_render)
    assert sync(spec, repo, "--check") == 0
    monkeypatch.setattr(render_tree, "render_tree", real)
    rules.write_text(RULES)
    assert sync(spec, repo, "--check") == 1  # rendered: not taken for the tree of the edited rules
