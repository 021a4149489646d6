"""A fleet in one repository: ``sync SPEC...`` makes one commit for all, atomically; ``sync --check`` and ``plan``
take the same set; an inputs record beside each tree lets unchanged specs skip rendering."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Result
from tests.gitops.fleets import shared_repo
from tests.gitops.test_sync import git, init_repo, state

FLEET = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Fleet
metadata:
  name: test-fleet
spec:
  deployers: [argocd]
  repo:
    url: "https://github.com/example/gitops.git"
  versions:
    gpu-operator: v26.3.3
  sentinel:
    mode: monitor
"""
SPEC = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: "{name}"
spec:
  extends: ../fleet.yaml
  criteria: {{service: "{service}", accelerator: "h100", intent: "inference", os: "ubuntu", platform: "dynamo"}}
  repo:
    path: "clusters/{name}"
"""
POLICY = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Policy
metadata:
  name: prefer-monitor
spec:
  description: a warning only
  severity: warning
  target: spec
  rule: "true"
  message: "never shown"
"""


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"GIT_AUTHOR_NAME": "Test", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "Test",
                       "GIT_COMMITTER_EMAIL": "t@example.com", "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
                       "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z"}.items():
        monkeypatch.setenv(key, value)


def fleet_repo(folder: Path, count: int) -> Path:
    """A repository holding a fleet file and ``count`` specs extending it (eks and kind alternating)."""
    repo = init_repo(folder)
    (repo / "fleet.yaml").write_text(FLEET)
    (repo / "specs").mkdir()
    for number in range(count):
        name = f"c{number:02d}"
        (repo / "specs" / f"{name}.yaml").write_text(SPEC.format(name=name, service=("eks", "kind")[number % 2]))
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "specs")
    return repo


def specs_of(repo: Path) -> list[str]:
    return sorted(str(path) for path in (repo / "specs").glob("*.yaml"))


def bump(repo: Path, pin: str = "v26.4.0") -> None:
    fleet = repo / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("v26.3.3", pin))


def sync(cli: Any, repo: Path, *extra: str) -> Result:
    result: Result = cli("sync", str(repo / "specs" / "*.yaml"), "--repo", str(repo), *extra)
    return result


def message(repo: Path, rev: str = "HEAD") -> str:
    return git(repo, "log", "-1", "--format=%B", rev)


def test_many_specs_make_one_commit_with_a_tree_and_a_record_each(cli: Any, tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path / "gitops", 6)
    before = git(repo, "rev-parse", "HEAD").strip()
    result = sync(cli, repo)
    assert result.code == 0, result
    assert git(repo, "rev-list", "--count", f"{before}..HEAD").strip() == "1"
    for number in range(6):
        assert git(repo, "cat-file", "-t", f"HEAD:clusters/c{number:02d}/recipe.yaml").strip() == "blob"
        inputs = json.loads(git(repo, "show", f"HEAD:.aicr-gen/inputs/clusters/c{number:02d}.json"))
        assert inputs["spec"] == f"specs/c{number:02d}.yaml" and inputs["path"] == f"clusters/c{number:02d}"
        assert set(inputs["inputs"]) == {f"specs/c{number:02d}.yaml", "fleet.yaml", "aicr-gen:catalog"}
    text = message(repo)
    assert text.startswith("aicr-gen: sync 6 clusters: new clusters\n\n6 of 6 clusters changed (6 new).\n")
    assert "- c00: new cluster, " in text and "- c05: new cluster, " in text
    assert "Aicr-Gen-Recipe-Digest: sha256:" in text and "Aicr-Gen-Version: " in text
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert "6 cluster(s) changed" in result.out


def test_a_bump_is_one_line_per_cluster_grouped_and_folded(cli: Any, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.gitops.review import commit_message
    repo = fleet_repo(tmp_path / "gitops", 6)
    assert sync(cli, repo).code == 0
    bump(repo)
    monkeypatch.setattr(commit_message, "CLUSTERS", 4)
    assert sync(cli, repo).code == 0
    text = message(repo)
    assert text.startswith("aicr-gen: sync 6 clusters: gpu-operator v26.3.3 -> v26.4.0\n")
    assert "- 6 clusters: bumped gpu-operator v26.3.3 -> v26.4.0\n" in text
    assert "- c00: gpu-operator v26.3.3 -> v26.4.0; " in text
    assert "- ... and 2 more clusters (aicr-gen plan lists them all)" in text and "- c04:" not in text
    assert "fleet.yaml" in git(repo, "diff-tree", "-r", "--name-only", "HEAD")
    assert cli("sync", str(repo / "specs" / "c01.yaml"), "--repo", str(repo), "--check").code == 0


def test_the_commit_is_the_same_whatever_the_order_and_the_workers(cli: Any, tmp_path: Path) -> None:
    trees = []
    for label, jobs, reverse in (("a", "1", False), ("b", "2", True)):
        repo = fleet_repo(tmp_path / label, 8)
        specs = specs_of(repo)
        assert cli("sync", *(reversed(specs) if reverse else specs), "--repo", str(repo), "--jobs", jobs).code == 0
        bump(repo)
        assert cli("sync", *(reversed(specs) if reverse else specs), "--repo", str(repo), "--jobs", jobs).code == 0
        trees.append((git(repo, "rev-parse", "HEAD^{tree}"), message(repo), git(repo, "rev-parse", "HEAD")))
    assert trees[0] == trees[1]


def _everything(repo: Path) -> tuple[Any, ...]:
    return (*state(repo), git(repo, "diff", "--cached"), git(repo, "diff"))


@pytest.mark.parametrize("failure", ["render", "git"])
def test_a_failure_anywhere_leaves_head_index_work_tree_and_refs_untouched(
        cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, failure: str) -> None:
    from aicr_gen.gitops.commit import advance
    repo = fleet_repo(tmp_path / "gitops", 6)
    assert sync(cli, repo).code == 0
    bump(repo)
    (repo / "notes.txt").write_text("mine\n")
    git(repo, "add", "notes.txt")
    if failure == "render":
        spec = repo / "specs" / "c03.yaml"
        spec.write_text(spec.read_text() + "  versions: {no-such-component: v1}\n")
    else:
        real = advance.settle

        def boom(*args: Any, **kwargs: Any) -> list[str]:
            left = real(*args, **kwargs)
            if kwargs["forward"]:  # fail once the files are written (the roll-back goes through)
                raise RuntimeError("injected")
            return left

        monkeypatch.setattr(advance, "settle", boom)
    before = _everything(repo)
    files = sorted(str(path.relative_to(repo)) for path in repo.rglob("*") if ".git" not in path.parts)
    result = sync(cli, repo, "--jobs", "1")
    assert result.code == 2, result
    if failure == "render":
        assert "specs/c03.yaml" in result.err and "no-such-component" in result.err
    assert _everything(repo) == before
    assert sorted(str(path.relative_to(repo)) for path in repo.rglob("*") if ".git" not in path.parts) == files


def test_every_invalid_spec_is_reported_and_nothing_is_written(cli: Any, tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path / "gitops", 4)
    for name in ("c01", "c03"):
        spec = repo / "specs" / f"{name}.yaml"
        spec.write_text(spec.read_text().replace('platform: "dynamo"', 'platform: "dynamo", colour: "red"'))
    before = _everything(repo)
    result = sync(cli, repo)
    assert result.code == 2
    assert "2 of 4 spec(s) failed; nothing was written" in result.err
    assert "c01.yaml" in result.err and "c03.yaml" in result.err
    assert _everything(repo) == before


def test_a_shared_path_or_another_repository_is_refused_naming_the_specs(cli: Any, tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path / "gitops", 3)
    spec = repo / "specs" / "c02.yaml"
    spec.write_text(spec.read_text().replace('path: "clusters/c02"', 'path: "clusters/c01"'))
    result = sync(cli, repo)
    assert result.code == 2 and "c01.yaml and" in result.err and "c02.yaml have the same managed path" in result.err
    spec.write_text(SPEC.format(name="c02", service="eks") + '    url: "https://github.com/example/other.git"\n')
    result = sync(cli, repo)
    assert result.code == 2 and "name 2 repositories" in result.err and "other.git: " in result.err
    assert git(repo, "rev-list", "--count", "HEAD").strip() == "2"


def test_check_lists_the_stale_clusters(cli: Any, tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path / "gitops", 5)
    assert sync(cli, repo).code == 0
    assert sync(cli, repo, "--check").code == 0
    spec = repo / "specs" / "c02.yaml"
    spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.5.0}\n")
    result = sync(cli, repo, "--check")
    assert result.code == 1
    assert "clusters/c02 is not up to date with" in result.err and "stale   clusters/c02/recipe.yaml" in result.err
    assert result.err.rstrip().endswith("4 of 5 tree(s) up to date with HEAD; stale: clusters/c02")
    assert result.out == ""  # several specs: the up-to-date ones are counted, not listed
    spec.write_text(SPEC.format(name="c02", service="eks"))
    assert sync(cli, repo, "--check").out == "aicr-gen: 5 of 5 tree(s) up to date with HEAD\n"


def test_unchanged_specs_are_neither_rendered_nor_checked_by_rendering(cli: Any, tmp_path: Path,
                                                                       renders: list[str]) -> None:
    repo = fleet_repo(tmp_path / "gitops", 5)
    assert sync(cli, repo, "--jobs", "1").code == 0
    assert len(renders) == 5
    renders.clear()
    assert sync(cli, repo, "--check", "--jobs", "1").code == 0
    assert renders == []  # answered from the records
    spec = repo / "specs" / "c02.yaml"
    spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.5.0}\n")
    result = sync(cli, repo, "--jobs", "1")
    assert result.code == 0 and renders == ["clusters/c02"]
    assert "1 rendered, 4 unchanged since their record" in result.out
    assert message(repo).startswith("aicr-gen: sync c02: gpu-operator v26.3.3 -> v26.5.0\n\n1 of 5 clusters changed.")
    renders.clear()
    assert sync(cli, repo, "--jobs", "1").code == 0 and renders == []
    assert "nothing to commit" in sync(cli, repo, "--jobs", "1").out
    clone = tmp_path / "clone"  # CI: a fresh clone answers from the committed records too
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    assert sync(cli, clone, "--check", "--jobs", "1").code == 0 and renders == []


def _record(repo: Path, name: str = "c00") -> dict[str, Any]:
    loaded: dict[str, Any] = json.loads(git(repo, "show", f"HEAD:.aicr-gen/inputs/clusters/{name}.json"))
    return loaded


@pytest.mark.parametrize("change", ["fleet", "spec", "catalog file", "policy"])
def test_the_record_follows_every_input(cli: Any, tmp_path: Path, change: str) -> None:
    repo = fleet_repo(tmp_path / "gitops", 2)
    shutil.copytree(ROOT / "overlays", repo / "catalog")
    (repo / "policies").mkdir()
    (repo / "policies" / "prefer-monitor.yaml").write_text(POLICY)
    fleet = repo / "fleet.yaml"
    layers = "spec:\n  catalogs: [catalog]\n  policies: [policies/prefer-monitor.yaml]\n"
    fleet.write_text(fleet.read_text().replace("spec:\n", layers, 1))
    assert sync(cli, repo).code == 0
    first = _record(repo)
    assert {"catalog", "fleet.yaml", "specs/c00.yaml"} <= set(first["inputs"])
    assert set(first["policies"]) == {"aicr-gen:policies", "policies/prefer-monitor.yaml"}
    if change == "fleet":
        bump(repo)
    elif change == "spec":
        spec = repo / "specs" / "c00.yaml"
        spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.5.0}\n")
    elif change == "catalog file":
        values = repo / "catalog" / "components" / "gpu-operator" / "values.yaml"
        values.write_text(values.read_text() + "addedByTest: true\n")
    else:
        (repo / "policies" / "prefer-monitor.yaml").write_text(POLICY.replace("a warning only", "still a warning"))
    stale = sync(cli, repo, "--check")
    assert stale.code == (0 if change == "policy" else 1), stale  # a policy renders no file
    assert sync(cli, repo).code == 0
    second = _record(repo)
    assert second["digest"] != first["digest"]
    if change == "policy":
        assert second["inputs"] == first["inputs"] and second["tree"] == first["tree"]
        assert "- c00: inputs record refreshed (tree unchanged)" in message(repo)
    else:
        assert second["tree"] != first["tree"]
    assert sync(cli, repo, "--check").code == 0


def test_a_hand_edit_of_a_committed_tree_is_caught_without_the_record_lying(cli: Any, tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path / "gitops", 3)
    assert sync(cli, repo).code == 0
    target = repo / "clusters" / "c01" / "recipe.yaml"
    target.write_text(target.read_text() + "# edited\n")
    git(repo, "commit", "-qam", "hand edit")
    result = sync(cli, repo, "--check")
    assert result.code == 1 and "stale   clusters/c01/recipe.yaml" in result.err
    assert sync(cli, repo).code == 0 and sync(cli, repo, "--check").code == 0


def test_plan_groups_the_changes_clusters_share(cli: Any, tmp_path: Path) -> None:
    repo = fleet_repo(tmp_path / "gitops", 6)
    assert sync(cli, repo).code == 0
    bump(repo)
    spec = repo / "specs" / "c02.yaml"
    spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.5.0}\n")
    pattern = str(repo / "specs" / "*.yaml")
    result = cli("plan", pattern, "--repo", str(repo), "--format", "json", "--jobs", "2")
    assert result.code == 0, result
    data = json.loads(result.out)
    groups = {group["change"]: group["clusters"] for group in data["groups"]}
    assert groups["bumped gpu-operator v26.3.3 -> v26.4.0"] == ["c00", "c01", "c03", "c04", "c05"]
    assert "bumped gpu-operator v26.3.3 -> v26.5.0" not in groups  # one cluster: its own section only
    assert [cluster["name"] for cluster in data["clusters"]] == [f"c{number:02d}" for number in range(6)]
    text = cli("plan", pattern, "--repo", str(repo)).out
    assert "### Changes in several clusters" in text
    assert "- bumped gpu-operator v26.3.3 -> v26.4.0 on 5 clusters: `c00`, `c01`, `c03`, `c04`, `c05`" in text
    assert "GPU operator: bumped gpu-operator v26.3.3 -> v26.4.0 on 5 clusters" in text


def test_check_of_many_specs_ends_in_one_summary(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.commands import sync as check_specs

    names = tuple(f"gpu-{number}" for number in range(5))
    repo = shared_repo(tmp_path / "gitops", names=names)
    pattern = str(repo / "specs" / "*.yaml")
    assert cli("sync", pattern, "--repo", str(repo)).code == 0
    result = cli("sync", "--check", pattern, "--repo", str(repo))
    assert (result.code, result.out) == (0, "aicr-gen: 5 of 5 tree(s) up to date with HEAD\n")
    for name in names[1:4]:
        spec = repo / "specs" / f"{name}.yaml"
        spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.4.0}\n")
    monkeypatch.setattr(check_specs, "LISTED", 2)
    result = cli("sync", "--check", pattern, "--repo", str(repo))
    assert result.code == 1 and result.out == ""
    assert result.err.count("is not up to date with") == 3
    assert result.err.rstrip().endswith("2 of 5 tree(s) up to date with HEAD; stale: clusters/gpu-1, clusters/gpu-2 "
                                        "and 1 more")
    one = cli("sync", "--check", str(repo / "specs" / "gpu-0.yaml"), "--repo", str(repo))
    assert one.out.splitlines() == [f"aicr-gen: clusters/gpu-0 is up to date with {repo / 'specs' / 'gpu-0.yaml'} in "
                                    "HEAD", "aicr-gen: 1 of 1 tree(s) up to date with HEAD"]
