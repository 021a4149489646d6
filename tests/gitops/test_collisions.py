"""A fleet in one repository, the parts that keep it safe and fast: two clusters' trees colliding in one Argo CD
are refused by ``sync``, ``sync --check`` and ``plan`` (within the run, and against every other tree of the
repository through its inputs record) before anything is written; the Fleet file is read once per process;
``plan`` answers unchanged specs from their records; ``sync --check`` of many specs ends in one summary."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT
from tests.gitops import test_sync_specs
from tests.gitops.test_sync import git, init_repo, state
from tests.nvcre_elsewhere import write_policy

_identity = test_sync_specs._identity  # a fixed committer and dates
renders = test_sync_specs.renders  # the managed folders rendered in this process

FLEET = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Fleet
metadata:
  name: shared-fleet
spec:
  deployers: [argocd]
  repo:
    url: "https://github.com/example/gitops.git"
  argocd:
    shared: true
  versions:
    gpu-operator: v26.3.3
  certification:
    categories: [communication/nccl-all-reduce]
  policies: [policies/nvcre-elsewhere.yaml]  # inference clusters: NVCRE installed outside (tests/nvcre_elsewhere)
"""
SPEC = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: "{name}"
spec:
  extends: ../fleet.yaml
  criteria: {{service: "eks", accelerator: "h100", intent: "inference", os: "ubuntu", platform: "dynamo"}}
  repo:
    path: "{path}"
"""


def write_spec(repo: Path, file: str, name: str, path: str | None = None, extra: str = "") -> Path:
    spec = repo / "specs" / f"{file}.yaml"
    spec.parent.mkdir(parents=True, exist_ok=True)
    spec.write_text(SPEC.format(name=name, path=path or f"clusters/{name}") + extra)
    return spec


def shared_repo(folder: Path, names: tuple[str, ...] = ("gpu-a", "gpu-b", "gpu-c")) -> Path:
    """A repository whose clusters share one Argo CD (the fleet's spec.argocd.shared), committed."""
    repo = init_repo(folder)
    (repo / "fleet.yaml").write_text(FLEET)
    write_policy(repo)
    for name in names:
        write_spec(repo, name, name)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "specs")
    return repo


def renamed_nfd_catalog(repo: Path) -> None:
    """A copy of the embedded catalog at ``catalog/`` whose nfd component is called west-nfd: in a shared Argo CD,
    cluster gpu's Application gpu-west-nfd is then the one cluster gpu-west has for its nfd."""
    catalog = repo / "catalog"
    shutil.copytree(ROOT / "overlays", catalog)
    for kind in ("components", "checks"):
        (catalog / kind / "nfd").rename(catalog / kind / "west-nfd")
    for file in [catalog / "registry.yaml", *(catalog / "overlays").glob("*.yaml")]:
        text = re.sub(r"(name: |- )nfd$", r"\1west-nfd", file.read_text(), flags=re.MULTILINE)
        file.write_text(re.sub(r"(components|checks)/nfd/", r"\1/west-nfd/", text))


def _everything(repo: Path) -> tuple[Any, ...]:
    return (*state(repo), git(repo, "diff", "--cached"), git(repo, "diff"))


# ------------------------------------------------------------------------------------------- collisions


def test_two_clusters_colliding_in_one_run_are_refused_by_sync_check_and_plan(cli: Any, tmp_path: Path) -> None:
    repo = shared_repo(tmp_path / "gitops", names=("gpu-west",))
    renamed_nfd_catalog(repo)
    write_spec(repo, "gpu", "gpu", extra="  catalogs: [../catalog]\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "gpu, with its own catalog")
    specs = [str(repo / "specs" / "gpu.yaml"), str(repo / "specs" / "gpu-west.yaml")]
    before = _everything(repo)
    for command in (["sync"], ["sync", "--check"], ["plan"]):
        result = cli(*command, *specs, "--repo", str(repo))
        assert result.code == 2, (command, result)
        assert re.search(r"Application argocd/gpu-west-nfd is defined by cluster 'gpu' "
                         r"\(clusters/gpu/argocd/\S+/application.yaml\) and by cluster 'gpu-west' "
                         r"\(clusters/gpu-west/argocd/\S+/application.yaml\), which share the argocd control plane "
                         r"'argocd/argocd'", result.err), result.err
        assert result.out == ""
    assert _everything(repo) == before
    assert cli("sync", specs[1], "--repo", str(repo)).code == 0  # alone, each is fine


def test_a_new_cluster_colliding_with_a_committed_tree_is_refused_through_its_record(
        cli: Any, tmp_path: Path, renders: list[str]) -> None:
    repo = shared_repo(tmp_path / "gitops")
    assert cli("sync", str(repo / "specs" / "*.yaml"), "--repo", str(repo), "--jobs", "1").code == 0
    recorded = json.loads(git(repo, "show", "HEAD:.aicr-gen/inputs/clusters/gpu-b.json"))
    assert ["argocd/argocd", "argocd", "Application", "argocd", "gpu-b-aicr-stack",
            "argocd/app-of-apps.yaml"] in recorded["objects"]
    twin = write_spec(repo, "gpu-b-copy", "gpu-b", path="clusters/gpu-b-copy")  # another spec, the same name
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "a copy")
    before = _everything(repo)
    renders.clear()
    for command in (["sync"], ["sync", "--check"], ["plan"]):
        result = cli(*command, str(twin), "--repo", str(repo), "--jobs", "1")
        assert result.code == 2, (command, result)
        assert "Application argocd/gpu-b-aicr-stack is defined by cluster 'gpu-b' (clusters/gpu-b/argocd/" \
               "app-of-apps.yaml) and by cluster 'gpu-b' (clusters/gpu-b-copy/argocd/app-of-apps.yaml)" in result.err
        assert "two ClusterSpecs name this cluster" in result.err
    assert renders == ["clusters/gpu-b-copy"] * 3  # the committed trees are known from their records alone
    assert _everything(repo) == before
    git(repo, "rm", "-q", "-r", "clusters/gpu-b")  # the old tree gone (its record left behind): no collision
    git(repo, "commit", "-q", "-m", "gpu-b moves")
    assert cli("sync", str(twin), "--repo", str(repo)).code == 0


def test_a_tree_of_the_same_spec_elsewhere_is_no_collision(cli: Any, tmp_path: Path) -> None:
    repo = shared_repo(tmp_path / "gitops", names=("gpu-a",))
    spec = str(repo / "specs" / "gpu-a.yaml")
    assert cli("sync", spec, "--repo", str(repo)).code == 0
    assert cli("sync", spec, "--repo", str(repo), "--path", "staging/gpu-a").code == 0


# ------------------------------------------------------------------------------------------- the fleet file


def test_the_fleet_is_read_and_validated_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.spec import fleet
    from aicr_gen.spec.cluster import load_spec

    repo = shared_repo(tmp_path / "gitops")
    real, parsed = fleet.parse_fleet, []
    monkeypatch.setattr(fleet, "parse_fleet", lambda doc: parsed.append(doc.source) or real(doc))
    loaded = [load_spec(path) for path in sorted((repo / "specs").glob("*.yaml"))]
    assert parsed == [str(repo / "fleet.yaml")]
    assert {cluster.spec.versions["gpu-operator"] for cluster in loaded} == {"v26.3.3"}
    (repo / "fleet.yaml").write_text(FLEET.replace("v26.3.3", "v26.4.0"))  # new bytes: read again
    assert load_spec(repo / "specs" / "gpu-a.yaml").spec.versions["gpu-operator"] == "v26.4.0"
    assert len(parsed) == 2
    (repo / "fleet.yaml").write_text(FLEET.replace("  argocd:", "  criteria: {service: eks}\n  argocd:"))
    messages = []
    for _ in range(2):  # an invalid fleet: the same message every time
        with pytest.raises(InvalidInputError) as err:
            load_spec(repo / "specs" / "gpu-a.yaml")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "criteria are per cluster" in messages[0]


def test_a_path_the_fleet_names_is_looked_for_on_every_load(tmp_path: Path) -> None:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.spec.cluster import load_spec

    repo = shared_repo(tmp_path / "gitops", names=("gpu-a",))
    shutil.copytree(ROOT / "overlays", repo / "catalog")
    (repo / "fleet.yaml").write_text(FLEET.replace("spec:\n", "spec:\n  catalogs: [catalog]\n", 1))
    assert load_spec(repo / "specs" / "gpu-a.yaml").spec.catalogs == ["../catalog"]
    shutil.rmtree(repo / "catalog")
    with pytest.raises(InvalidInputError, match=r"'catalog': no such file or folder beside the fleet"):
        load_spec(repo / "specs" / "gpu-a.yaml")


# ------------------------------------------------------------------------------------------- plan, check


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


def test_check_of_many_specs_ends_in_one_summary(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.gitops import check_specs

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


# ------------------------------------------------------------------------------------------- small gaps


def test_fleet_entry_check_says_whether_the_committed_entry_points_are_current(cli: Any, tmp_path: Path) -> None:
    repo = shared_repo(tmp_path / "gitops", names=("gpu-a", "gpu-b"))
    (repo / "fleet.yaml").write_text(FLEET.replace("deployers: [argocd]", "deployers: [argocd, flux]"))
    pattern, out = str(repo / "specs" / "*.yaml"), str(repo / "fleet")
    missing = cli("fleet", "entry", pattern, "-o", out, "--check")
    assert missing.code == 1 and f"missing {out}/argocd/applicationset.yaml" in missing.err
    assert not (repo / "fleet").exists()
    assert cli("fleet", "entry", pattern, "-o", out).code == 0
    current = cli("fleet", "entry", pattern, "-o", out, "--check")
    assert (current.code, current.out) == (0, f"aicr-gen: {out} is up to date with the entry points of 2 clusters\n")
    write_spec(repo, "gpu-c", "gpu-c")
    before = sorted((repo / "fleet").rglob("*"))
    stale = cli("fleet", "entry", pattern, "-o", out, "--check")
    assert stale.code == 1, stale
    assert f"stale   {out}/argocd/applicationset.yaml" in stale.err and f"stale   {out}/checksums.txt" in stale.err
    assert sorted((repo / "fleet").rglob("*")) == before  # nothing written
    (repo / "specs" / "gpu-c.yaml").unlink()
    (repo / "specs" / "gpu-b.yaml").unlink()
    gone = cli("fleet", "entry", pattern, "-o", out, "--check")
    assert gone.code == 1 and f"extra   {out}/flux/clusters/gpu-b/aicr-stack.yaml" in gone.err
    assert cli("fleet", "entry", pattern, "-o", out, "--check", "--force").code == 2


def test_spec_init_extends_a_fleet_with_a_spec_that_lints(cli: Any, tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo")
    shutil.copytree(ROOT / "examples" / "fleet", root, dirs_exist_ok=True)
    target = root / "clusters" / "new.yaml"
    made = cli("spec", "init", "--extends", str(root / "fleet.yaml"), "--service", "eks", "--accelerator", "h100",
               "--intent", "training", "--os", "ubuntu", "--platform", "kubeflow", "-o", str(target))
    assert made.code == 0, made
    text = target.read_text()
    assert 'extends: "../fleet.yaml"' in text and "deployers" not in text and "url:" not in text
    assert 'path: "clusters/h100-eks-ubuntu-training-kubeflow"' in text
    assert "busBandwidthGBps" in text  # the fleet sets no thresholds, a training cluster needs some
    assert "# argocd:" in text  # the fleet's Argo CD is shared: say where a destination goes
    assert len(text.splitlines()) < 30
    assert cli("lint", str(root / "fleet.yaml"), str(target)).code == 0
    shown = cli("spec", "show", str(target))
    assert shown.code == 0 and 'gpu-operator: "v26.3.3"  # ' in shown.out and "fleet.yaml:15\n" in shown.out
    bad = cli("spec", "init", "--extends", str(root / "clusters" / "kind-h100-dev.yaml"), "--service", "eks")
    assert bad.code == 2 and "not Fleet" in bad.err


def test_examples_fleet_shares_one_argocd_and_its_clusters_never_collide(cli: Any, tmp_path: Path) -> None:
    import yaml

    root = init_repo(tmp_path / "repo")
    shutil.copytree(ROOT / "examples" / "fleet", root, dirs_exist_ok=True)
    fleet = yaml.safe_load((root / "fleet.yaml").read_text())
    assert fleet["spec"]["argocd"]["shared"] is True
    assert "# flux:\n  #   hub: mgmt" in (root / "fleet.yaml").read_text()
    eks = yaml.safe_load((root / "clusters" / "eks-h100-inference.yaml").read_text())
    assert eks["spec"]["argocd"]["destinationServer"].startswith("https://")
    clusters = sorted(str(path) for path in (root / "clusters").glob("*.yaml"))
    assert cli("lint", str(root / "fleet.yaml"), *clusters).code == 0
    assert cli("sync", *clusters, "--repo", str(root)).code == 0


def test_renovate_bumps_the_pins_of_fleet_files_too() -> None:
    from tests.project.test_github import RENOVATE, _recursive

    managers = {item["depNameTemplate"]: item for item in json.loads(RENOVATE.read_text())["customManagers"]}
    fleet = (ROOT / "examples" / "fleet" / "fleet.yaml").read_text()
    assert _recursive(managers["gpu-operator"]["matchStrings"], fleet) == ["v26.3.3"]
    assert _recursive(managers["nfd"]["matchStrings"], fleet) == []
    patterns = [re.compile(pattern.strip("/")) for pattern in managers["gpu-operator"]["managerFilePatterns"]]
    for path, tracked in (("fleet.yaml", True), ("examples/fleet/fleet.yaml", True), ("fleets/prod.yml", True),
                          ("clusters/a.yaml", True), ("fleet/argocd/applicationset.yaml", False),
                          ("values.yaml", False)):
        assert any(pattern.search(path) for pattern in patterns) == tracked, path
    other = fleet.replace("kind: Fleet", "kind: Policy")
    assert _recursive(managers["gpu-operator"]["matchStrings"], other) == []  # neither a spec nor a fleet


def test_the_markdown_plan_of_a_bump_of_two_thousand_clusters_names_every_one() -> None:
    from aicr_gen.gitops.plan import plan
    from aicr_gen.report.plan import BUDGET, markdown
    from tests.gitops.test_plan import _cluster

    clusters = [_cluster(index) for index in range(2000)]
    text = markdown(plan("main", "a" * 40, clusters))
    assert len(text) <= BUDGET
    shown = text.count("<details")
    assert 0 < shown < 2000
    last = text.rstrip().splitlines()[-1]
    assert last.startswith(f"\u2026 and {2000 - shown} more clusters with changes not shown")
    in_sections = re.findall(r"^<details><summary><b>([^<]+)</b>", text, flags=re.MULTILINE)
    assert in_sections + re.findall(r"`(cluster-[^`]+)`", last) == [cluster.name for cluster in clusters]
