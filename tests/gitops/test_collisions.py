"""A fleet in one repository sharing one Argo CD: two clusters' trees colliding in it are refused by ``sync``,
``sync --check`` and ``plan`` (within the run, and against every other tree of the repository through its inputs
record) before anything is written; the examples' fleet never collides; ``fleet entry --check`` says whether the
committed entry points are current."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

from tests.conftest import ROOT
from tests.gitops import test_sync_specs
from tests.gitops.fleets import FLEET, shared_repo, write_spec
from tests.gitops.test_sync import git, init_repo, state

_identity = test_sync_specs._identity  # a fixed committer and dates


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


# ------------------------------------------------------------------------------------------- small gaps


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
