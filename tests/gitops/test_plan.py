"""``aicr-gen plan``: a pull request's effect on each cluster, read from Git without writing to it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aicr_gen.gitops.review.model import ComponentChange, FileChanges, HighRisk, ValueChange
from aicr_gen.gitops.review.plan import API_VERSION, ClusterPlan, cluster_plan, plan
from aicr_gen.gitops.review.risks import loosened
from aicr_gen.report.plan import BUDGET, markdown
from tests.conftest import ROOT, Result
from tests.gitops.fleets import shared_repo
from tests.gitops.test_changes import recipe
from tests.gitops.test_sync import ENV, git, init_repo
from tests.nvcre_elsewhere import certifying, write_policy

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
MANAGED = "clusters/h100-eks-ubuntu-inference-dynamo"
GITHUB_COMMENT_LIMIT = 65_000
Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return init_repo(tmp_path / "gitops")


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    target = tmp_path / "spec.yaml"
    data = yaml.safe_load(certifying(EXAMPLE.read_text(), tmp_path))
    data["spec"]["certification"]["postChange"] = True
    target.write_text(yaml.safe_dump(data))
    return target


def edit(spec: Path, change: Callable[[dict[str, Any]], object]) -> None:
    data = yaml.safe_load(spec.read_text())
    change(data)
    spec.write_text(yaml.safe_dump(data))


def plan_json(cli: Run, *args: str) -> dict[str, Any]:
    result = cli("plan", *args, "--format", "json")
    assert result.code == 0, result.err
    data: dict[str, Any] = json.loads(result.out)
    return data


def _upgrade(data: dict[str, Any]) -> None:
    """A gpu-operator bump with a driver and a secret value, and NVSentinel into quarantine with lifecycle."""
    data["spec"]["versions"] = {"gpu-operator": "v26.4.0"}
    data["spec"]["overrides"]["set"] = ["gpu-operator:driver.version=590.48.01",
                                        "gpu-operator:driver.licensingConfig.nlsToken=hunter2"]
    data["spec"]["sentinel"].update(mode="quarantine", lifecycle=True, breaker={"percentage": 10})


def test_a_new_cluster_adds_everything(cli: Run, spec: Path, repo: Path) -> None:
    found = plan_json(cli, str(spec), "--repo", str(repo))
    assert found["apiVersion"] == API_VERSION and found["kind"] == "Plan" and found["base"] == "HEAD"
    assert found["baseCommit"] == git(repo, "rev-parse", "HEAD").strip()
    (cluster,) = found["clusters"]
    assert cluster["new"] is True and cluster["changed"] is True and cluster["path"] == MANAGED
    assert cluster["components"] and {item["change"] for item in cluster["components"]} == {"added"}
    assert "added gpu-operator v26.3.3" in [item["text"] for item in cluster["components"]]
    assert cluster["values"] == []  # an added component's values are its files
    assert cluster["files"]["changed"] == [] and cluster["files"]["removed"] == []
    assert {"recipe.yaml", "argocd/012-gpu-operator/values.yaml"} <= set(cluster["files"]["added"])
    assert [effect["kind"] for effect in cluster["onMerge"]] == ["post-change-certification"]
    assert "first post-change run" in cluster["onMerge"][0]["text"]
    assert found["changedClusters"] == 1 and found["policyErrors"] == 0


def _snapshot(repo: Path) -> dict[str, tuple[bytes, int]]:
    """Every file of the repository, .git included, with its content and modification time."""
    return {str(path.relative_to(repo)): (path.read_bytes(), path.stat().st_mtime_ns)
            for path in sorted(repo.rglob("*")) if path.is_file()}


def test_plan_writes_nothing_to_the_repository(cli: Run, spec: Path, repo: Path, tmp_path: Path) -> None:
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    git(repo, "branch", "base")
    edit(spec, _upgrade)
    (repo / "notes.txt").write_text("untracked\n")
    git(repo, "add", "README.md")  # an index that git could refresh
    status = git(repo, "status", "--porcelain")  # which may refresh the index: plan must not, after it
    before = _snapshot(repo)
    for extra in ([], ["--format", "json"], ["--base", "base", "-o", str(tmp_path / "plan.md")]):
        result = cli("plan", str(spec), "--repo", str(repo), *extra)
        assert result.code == 0, result.err
    assert _snapshot(repo) == before
    assert git(repo, "status", "--porcelain") == status
    assert "bumped gpu-operator v26.3.3 -> v26.4.0" in (tmp_path / "plan.md").read_text()


def test_a_change_shows_components_values_sentinel_risks_and_what_merging_sets_off(
        cli: Run, spec: Path, repo: Path) -> None:
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    edit(spec, _upgrade)
    result = cli("plan", str(spec), "--repo", str(repo))
    assert result.code == 0, result.err
    text = result.out
    assert "hunter2" not in text
    for line in ("- bumped gpu-operator v26.3.3 -> v26.4.0", "gpu-operator: driver.version 580.173.02 -> 590.48.01",
                 "gpu-operator: + driver.licensingConfig: {\"nlsToken\": \"<redacted>\"}",
                 "- mode monitor -> quarantine", "- lifecycle manager on", "- circuit breaker percentage unset -> 10%",
                 "NVSentinel: NVSentinel leaves monitor mode: monitor -> quarantine",
                 "GPU operator: bumped gpu-operator v26.3.3 -> v26.4.0",
                 "changed argocd/012-gpu-operator/values.yaml", "added   validation/validation-request.yaml"):
        assert line in text, f"{line!r} not in:\n{text}"
    # high-risk changes first: the summary, then in the section before everything else
    assert text.index("### \u26a0\ufe0f High-risk changes") < text.index("<details")
    assert text.index("**High-risk**") < text.index("**Components**") < text.index("**Values**")
    assert "post-change certification runs once the deployer has applied the stack (stack digest " in text
    assert "gpu-operator, nvidia-dra-driver-gpu, nvsentinel changed under NVSentinel's lifecycle manager" in text
    assert f"--values {MANAGED}/sentinel/values.yaml" in text

    (cluster,) = plan_json(cli, str(spec), "--repo", str(repo))["clusters"]
    assert not cluster["new"]
    categories = [item["category"] for item in cluster["highRisk"]]
    # driver changes first: the gpu-operator driver values, then the DRA driver pods the bump restarts
    assert categories[:5] == ["gpu-driver", "gpu-driver", "gpu-driver", "gpu-driver", "gpu-operator"], categories
    driver = next(item for item in cluster["values"] if item["path"] == "driver.version")
    assert driver == {"component": "gpu-operator", "path": "driver.version", "change": "changed",
                      "old": "580.173.02", "new": "590.48.01", "redacted": False,
                      "text": "gpu-operator: driver.version 580.173.02 -> 590.48.01"}
    assert [item["kind"] for item in cluster["onMerge"]] == ["driver-rollout", "post-change-certification",
                                                             "validation-request"]
    assert cluster["onMerge"][0]["text"].startswith("GPU driver cluster-wide 580.173.02 -> 590.48.01: the GPU operator")


def test_post_change_certification_only_when_the_stack_changes(cli: Run, spec: Path, repo: Path) -> None:
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    edit(spec, lambda data: data["spec"]["certification"].update(schedule="0 3 * * 0"))
    (cluster,) = plan_json(cli, str(spec), "--repo", str(repo))["clusters"]
    assert cluster["changed"] and cluster["certification"] == ["schedule added: '0 3 * * 0'"]
    assert cluster["onMerge"] == [] and cluster["highRisk"] == []
    edit(spec, lambda data: data["spec"]["versions"].update({"nfd": "0.19.1"}))
    (cluster,) = plan_json(cli, str(spec), "--repo", str(repo))["clusters"]
    assert [item["kind"] for item in cluster["onMerge"]] == ["post-change-certification"]
    assert cluster["highRisk"] == []  # nfd is not a GPU-stack component; and no lifecycle manager: no request


def test_loosened_certification_thresholds_are_high_risk(cli: Run, spec: Path, repo: Path) -> None:
    edit(spec, lambda data: data["spec"]["certification"].update(
        thresholds={"busBandwidthGBps": "value >= 300", "algBandwidthGBps": "value >= 100"}))
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    edit(spec, lambda data: data["spec"]["certification"].update(thresholds={"busBandwidthGBps": "value >= 250"}))
    (cluster,) = plan_json(cli, str(spec), "--repo", str(repo))["clusters"]
    assert [item["text"] for item in cluster["highRisk"]] == [
        "threshold algBandwidthGBps removed (was value >= 100)",
        "threshold busBandwidthGBps loosened: value >= 300 -> value >= 250"]
    assert "threshold busBandwidthGBps: value >= 300 -> value >= 250" in cluster["certification"]
    edit(spec, lambda data: data["spec"]["certification"].update(
        thresholds={"busBandwidthGBps": "value >= 350", "algBandwidthGBps": "value >= 100"}))
    (cluster,) = plan_json(cli, str(spec), "--repo", str(repo))["clusters"]
    assert cluster["highRisk"] == []  # tightened


@pytest.mark.parametrize(("old", "new", "looser"), [
    ("value >= 300", "value >= 250", True), ("value >= 300", "value >= 350", False),
    ("value > 300", "value >= 300", True), ("value <= 5", "value <= 8", True), ("value < 5", "value < 2", False),
    ("300 <= value", "value >= 200", True), ("value >= 300", "value <= 300", None),
    ("value >= 300 && value < 900", "value >= 200", None)])
def test_threshold_direction(old: str, new: str, looser: bool | None) -> None:
    assert loosened(old, new) is looser


def test_high_risk_order_kernel_constraints_network_operator_and_sentinel() -> None:
    old = {"recipe.yaml": recipe("network-operator", "nfd", versions={"network-operator": "26.1.0", "nfd": "1"},
                                 constraints={"OS.release.VERSION_ID": "22.04"}),
           "sentinel/values.yaml": b"global:\n  faultQuarantine:\n    enabled: true\n  dryRun: true\n"}
    new = {"recipe.yaml": recipe("network-operator", "nfd", versions={"network-operator": "26.4.1", "nfd": "2"},
                                 constraints={"OS.release.VERSION_ID": "24.04", "K8s.server.version": ">= 1.34"}),
           "sentinel/values.yaml": b"global:\n  faultQuarantine:\n    enabled: true\n  dryRun: false\n"}
    found = cluster_plan("c", "c.yaml", "clusters/c", old=old, new=new, findings=[])
    assert [(item.category, item.text) for item in found.highRisk] == [
        ("network-operator", "bumped network-operator 26.1.0 -> 26.4.1"),
        ("os-constraint", "constraint OS.release.VERSION_ID: 22.04 -> 24.04"),
        ("nvsentinel", "NVSentinel dry run off: quarantine actions are now taken")]
    assert [item.text for item in found.components] == ["bumped network-operator 26.1.0 -> 26.4.1",
                                                        "bumped nfd 1 -> 2"]
    assert found.onMerge == []  # the lifecycle manager is off


def _policy_error(data: dict[str, Any]) -> None:
    data["spec"]["sentinel"]["mode"] = "quarantine"  # without a breaker: sentinel-monitor-unless-opted-in


def test_policy_results_and_fail_on_policy(cli: Run, spec: Path, repo: Path) -> None:
    edit(spec, _policy_error)
    result = cli("plan", str(spec), "--repo", str(repo))
    assert result.code == 0, result.err
    assert "\u274c error sentinel-monitor-unless-opted-in at spec.sentinel.mode: quarantine mode needs" in result.out
    assert "1 policy error" in result.out
    failing = cli("plan", str(spec), "--repo", str(repo), "--fail-on", "policy")
    assert failing.code == 1 and failing.out == result.out
    assert failing.err.startswith(f"aicr-gen: plan: 1 policy error(s) in {spec} ")
    (cluster,) = plan_json(cli, str(spec), "--repo", str(repo))["clusters"]
    assert cluster["policies"][0] == {
        "policy": "sentinel-monitor-unless-opted-in", "severity": "error", "path": "spec.sentinel.mode",
        "message": cluster["policies"][0]["message"]}


def test_several_specs_by_glob_and_duplicates_refused(cli: Run, repo: Path, spec: Path) -> None:
    folder = repo / "clusters"
    folder.mkdir()
    write_policy(folder)
    for name in ("a", "b"):
        data = yaml.safe_load(spec.read_text())
        data["metadata"]["name"] = f"cluster-{name}"
        data["spec"]["repo"]["path"] = f"clusters/{name}"
        (folder / f"{name}.yaml").write_text(yaml.safe_dump(data))
    found = plan_json(cli, str(folder / "*.yaml"), "--repo", str(repo))
    assert [cluster["name"] for cluster in found["clusters"]] == ["cluster-a", "cluster-b"]
    assert cli("sync", str(folder / "a.yaml"), "--repo", str(repo)).code == 0
    found = plan_json(cli, str(folder / "*.yaml"), "--repo", str(repo))
    assert [cluster["changed"] for cluster in found["clusters"]] == [False, True]
    text = cli("plan", str(folder / "*.yaml"), "--repo", str(repo)).out
    assert "Unchanged (1): `cluster-a`" in text and "<b>cluster-b</b>" in text
    clash = cli("plan", str(folder / "a.yaml"), str(spec), str(folder / "a.yaml"), "--repo", str(repo))
    assert clash.code == 0  # the same file twice is one spec
    twin = folder / "twin.yaml"
    twin.write_text((folder / "a.yaml").read_text())
    result = cli("plan", str(folder / "a.yaml"), str(twin), "--repo", str(repo))
    assert result.code == 2 and "have the same managed path 'clusters/a'" in result.err


def test_invalid_base_and_repository_are_input_errors(cli: Run, spec: Path, repo: Path, tmp_path: Path) -> None:
    result = cli("plan", str(spec), "--repo", str(repo), "--base", "no-such-branch")
    assert result.code == 2
    assert result.err.startswith("aicr-gen: error: --base no-such-branch: not a commit in ")
    assert "origin/main" in result.err
    (tmp_path / "plain").mkdir()
    result = cli("plan", str(spec), "--repo", str(tmp_path / "plain"))
    assert result.code == 2 and "not inside a Git work tree" in result.err
    result = cli("plan", str(tmp_path / "nothing-*.yaml"), "--repo", str(repo))
    assert result.code == 2 and "matches no file" in result.err


def test_an_unchanged_cluster_in_a_sha256_repository(cli: Run, spec: Path, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "sha256", "--object-format=sha256")
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    found = plan_json(cli, str(spec), "--repo", str(repo))
    assert len(found["baseCommit"]) == 64
    (cluster,) = found["clusters"]
    assert not cluster["changed"] and cluster["files"] == {"added": [], "changed": [], "removed": []}
    text = cli("plan", str(spec), "--repo", str(repo)).out
    assert "Merging changes no cluster's tree." in text and "Unchanged (1): `h100-eks-ubuntu-inference-dynamo`" in text


def test_json_output_validates_against_the_documented_schema(cli: Run, spec: Path, repo: Path) -> None:
    schema_run = cli("schema", "plan")
    assert schema_run.code == 0
    schema = json.loads(schema_run.out)
    assert schema["$id"] == "https://aicr-gen.dev/schemas/plan.json"
    assert {"clusters", "baseCommit", "apiVersion", "kind"} <= set(schema["required"])
    validator = jsonschema.Draft202012Validator(schema)
    validator.validate(plan_json(cli, str(spec), "--repo", str(repo)))
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    edit(spec, _upgrade)
    validator.validate(plan_json(cli, str(spec), "--repo", str(repo)))
    with pytest.raises(jsonschema.ValidationError):
        validator.validate({"apiVersion": API_VERSION, "kind": "Plan"})


def _cluster(index: int, *, files: int = 3, values: int = 2, risky: bool = False) -> ClusterPlan:
    name = f"cluster-{index:04d}"
    return ClusterPlan(
        name=name, spec=f"clusters/{name}.yaml", path=f"clusters/{name}", new=False, changed=True,
        highRisk=[HighRisk(category="gpu-operator", text="bumped gpu-operator v26.3.3 -> v26.4.0")] if risky else [],
        components=[ComponentChange(name="gpu-operator", change="bumped", oldVersion="v26.3.3", newVersion="v26.4.0",
                                    details=[], text="bumped gpu-operator v26.3.3 -> v26.4.0")],
        values=[ValueChange(component="gpu-operator", path=f"daemonsets.labels.key{number}", change="added", old=None,
                            new="x" * 60, redacted=False, text=f"gpu-operator: + daemonsets.labels.key{number}: "
                                                                 + "x" * 60) for number in range(values)],
        constraints=[], sentinel=[], certification=[], policies=[],
        files=FileChanges(added=[f"argocd/{number:03d}-component-with-a-long-name/values.yaml"
                                 for number in range(files)], changed=[], removed=[]),
        onMerge=[])


def test_markdown_of_50_clusters_and_a_huge_change_fits_one_comment() -> None:
    clusters = [_cluster(index, risky=index % 7 == 0) for index in range(60)]
    clusters.insert(30, _cluster(9999, files=5000, values=3000, risky=True))
    text = markdown(plan("main", "a" * 40, clusters))
    assert len(text) <= BUDGET < GITHUB_COMMENT_LIMIT
    assert text.count("<details") == 61 and all(cluster.name in text for cluster in clusters)
    assert "\u2026 and " in text and " more files" in text and " more values" in text
    small = text[text.index("<b>cluster-0001</b>"):]
    assert "argocd/002-component-with-a-long-name/values.yaml" in small  # small sections keep everything
    # the high-risk summary comes first, then the high-risk clusters' sections, then the others
    sections = [line.split("<b>")[1].split("</b>")[0] for line in text.splitlines() if line.startswith("<details")]
    risky = [cluster.name for cluster in clusters if cluster.highRisk]
    assert sections[:len(risky)] == risky
    assert text.index("High-risk changes") < text.index("<details")


def test_markdown_counts_the_clusters_it_cannot_show() -> None:
    text = markdown(plan("main", "a" * 40, [_cluster(index) for index in range(2000)]))
    assert len(text) <= BUDGET
    shown = text.count("<details")
    assert 0 < shown < 2000
    assert f"\u2026 and {2000 - shown} more clusters with changes not shown" in text


def test_plan_answers_unchanged_specs_from_their_records(cli: Any, tmp_path: Path, renders: list[str]) -> None:
    repo = shared_repo(tmp_path / "gitops")
    pattern = str(repo / "specs" / "*.yaml")
    assert cli("sync", pattern, "--repo", str(repo), "--jobs", "1").code == 0
    spec = repo / "specs" / "gpu-b.yaml"
    spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.4.0}\n")
    renders.clear()
    result = cli("plan", pattern, "--repo", str(repo), "--format", "json", "--jobs", "1")
    assert result.code == 0, result
    assert renders == ["clusters/gpu-b"]
    skipped = json.loads(result.out)
    assert [(item["name"], item["changed"]) for item in skipped["clusters"]] == \
        [("gpu-a", False), ("gpu-b", True), ("gpu-c", False)]
    git(repo, "rm", "-q", "-r", ".aicr-gen")  # no records: every spec rendered
    git(repo, "commit", "-q", "-m", "records gone")
    result = cli("plan", pattern, "--repo", str(repo), "--format", "json", "--jobs", "1", "--base", "HEAD")
    rendered = json.loads(result.out)
    assert rendered["clusters"] == skipped["clusters"]  # the same plan, warnings included
    assert any(item["policy"] == "certification-needs-nvcre" for item in rendered["clusters"][0]["policies"])
    assert "Unchanged (2): `gpu-a`, `gpu-c`" in cli("plan", pattern, "--repo", str(repo), "--base", "HEAD~1").out


def test_a_synced_pull_request_is_planned_from_its_committed_trees(cli: Any, tmp_path: Path,
                                                                  renders: list[str]) -> None:
    """A branch that ran ``sync`` (a fleet-wide bump, a value, a new cluster): ``plan`` compares HEAD's trees
    with the base's and renders none, and its plan is byte for byte the plan of rendering every spec."""
    from tests.gitops.fleets import write_spec

    repo = shared_repo(tmp_path / "gitops", ("gpu-a", "gpu-b", "gpu-c", "gpu-d"))
    pattern = str(repo / "specs" / "*.yaml")
    assert cli("sync", pattern, "--repo", str(repo), "--jobs", "1").code == 0
    git(repo, "checkout", "-q", "-b", "bump")
    fleet = repo / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("gpu-operator: v26.3.3", "gpu-operator: v26.4.0"))
    spec = repo / "specs" / "gpu-b.yaml"
    spec.write_text(spec.read_text() + "  overrides: {set: ['gpu-operator:driver.version=590.48.01']}\n")
    write_spec(repo, "gpu-e", "gpu-e")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bump")
    unsynced = git(repo, "rev-parse", "HEAD").strip()
    assert cli("sync", pattern, "--repo", str(repo), "--jobs", "1").code == 0

    def planned(*extra: str) -> tuple[str, str]:
        args = (pattern, "--repo", str(repo), "--base", "main", "--jobs", "1", *extra)
        found = cli("plan", *args, "--format", "json"), cli("plan", *args)
        assert [result.code for result in found] == [0, 0], found
        return found[0].out, found[1].out

    renders.clear()
    committed = planned()
    assert renders == []
    clusters = json.loads(committed[0])["clusters"]
    assert [(item["name"], item["changed"], item["new"]) for item in clusters] == [
        ("gpu-a", True, False), ("gpu-b", True, False), ("gpu-c", True, False), ("gpu-d", True, False),
        ("gpu-e", True, True)]
    assert "bumped gpu-operator v26.3.3 -> v26.4.0" in [item["text"] for item in clusters[0]["components"]]
    assert any(item["policy"] == "certification-needs-nvcre" for item in clusters[0]["policies"])
    git(repo, "checkout", "-q", "--detach", unsynced)  # the same specs, their trees not synced: all rendered
    assert planned() == committed
    assert sorted(renders) == sorted([f"clusters/gpu-{name}" for name in "abcde"] * 2)  # JSON, then Markdown

    git(repo, "checkout", "-q", "bump")
    recipe = repo / "clusters" / "gpu-c" / "recipe.yaml"
    recipe.write_text(recipe.read_text() + "# edited, not committed\n")  # the work tree's trees are never read
    git(repo, "add", str(recipe))
    (repo / "clusters" / "gpu-a" / "recipe.yaml").write_text("unstaged: edit\n")
    renders.clear()
    assert planned() == committed and renders == []
    git(repo, "commit", "-q", "-m", "a hand edit of gpu-c's tree")  # HEAD's tree is no longer its record's
    spec.write_text(spec.read_text() + "  versions: {gpu-operator: v26.3.3}\n")  # an input edited since sync
    renders.clear()
    json_text, _markdown = planned()
    assert sorted(set(renders)) == ["clusters/gpu-b", "clusters/gpu-c"]
    clusters = json.loads(json_text)["clusters"]
    assert clusters[1]["components"] == [] and clusters[1]["changed"]  # gpu-b back on the base's version
    assert clusters[2] == json.loads(committed[0])["clusters"][2]  # gpu-c rendered: the hand edit is not planned


@pytest.mark.parametrize("deployer", ["argocd", "flux", "helm", "helmfile", "argocd-helm"])
def test_source_moves_read_from_the_differing_files_are_what_all_files_tell(
        deployer: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``changes.source_changes`` reads only the files that can tell a move (a fleet's trees differ in few):
    for a chart repository and a registry moved in any one file, or in all, it finds what reading every file
    finds (a Flux HelmRepository joined with an unchanged HelmRelease included)."""
    from aicr_gen.gitops.review import changes
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec

    data = yaml.safe_load(certifying(EXAMPLE.read_text(), tmp_path))
    data["spec"]["deployers"] = [deployer]
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(data))
    old = dict(render_tree(load_spec(spec), tmp_path))
    moves = [(b"https://helm.ngc.nvidia.com/nvidia", b"oci://mirror.example/nvidia"),
             (b"nvcr.io/", b"mirror.example:5000/"), (b"ghcr.io/", b"mirror.example:5000/")]

    def moved(names: list[str]) -> dict[str, bytes]:
        new = dict(old)
        for name in names:
            for was, now in moves:
                new[name] = new[name].replace(was, now)
        return new

    touched = [name for name, body in old.items() if any(was in body for was, _now in moves)]
    assert touched
    cases = [moved([name]) for name in touched] + [moved(touched)]
    fast = [changes.source_changes(old, new) for new in cases]
    monkeypatch.setattr(changes, "_telling", lambda before, after: (before, after))
    assert fast == [changes.source_changes(old, new) for new in cases]
    assert any(charts for charts, _images in fast) and any(images for _charts, images in fast)
