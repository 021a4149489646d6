"""``rollout prune`` against a real API server with NVCRE's Certification CRD: per cluster, the newest
``rollout.retention.keep`` finished Certifications of each job are kept, with the newest pass of the stack its tree
runs, and the rest of what our jobs made is deleted; ``--dry-run`` deletes nothing."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.envtest import ControlPlane, binaries_or_skip, start
from tests.rollout import exported
from tests.rollout.test_rollout import _clone, bumped  # noqa: F401 - the repository fixture
from tests.rollout.world import certification, install_nvcre_crds

NAMESPACE = "nvcre-system"


@pytest.fixture(scope="module")
def plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    from tests.cluster.converge import Api

    found = start(tmp_path_factory.mktemp("prune"), binaries_or_skip())
    try:
        install_nvcre_crds(Api(found))
        found.kubectl("create", "namespace", NAMESPACE)
        yield found
    finally:
        found.stop()


def _names(plane: ControlPlane) -> list[str]:
    listed = json.loads(plane.kubectl("get", "certifications.nvcre.nvidia.com", "-n", NAMESPACE, "-o",
                                      "json").stdout)
    return sorted(item["metadata"]["name"] for item in listed["items"]
                  if not item["metadata"].get("deletionTimestamp"))


def test_prune_keeps_the_newest_and_the_evidence(cli: Any, bumped: Path, tmp_path: Path,  # noqa: F811
                                                 plane: ControlPlane) -> None:
    from tests.cluster.converge import Api

    repo = _clone(bumped, tmp_path)
    fleet = repo / "fleet.yaml"
    data = yaml.safe_load(fleet.read_text())
    data["rollout"]["retention"] = {"keep": 2}
    fleet.write_text(yaml.safe_dump(data, sort_keys=False))
    from tests.gitops.test_sync import git

    git(repo, "commit", "-qam", "keep 2")
    digest = exported.stack_digest(repo, "clusters/a")
    api = Api(plane)
    # the stack's one pass is the oldest; four newer runs of another stack failed after it
    certification(api, name="c0-pass", namespace=NAMESPACE, stack_digest=digest, bus_bw=412.0,
                  finished_at="2026-12-01T10:00:00Z")
    for index in range(1, 5):
        certification(api, name=f"c{index}-other", namespace=NAMESPACE, stack_digest="sha256:" + "0" * 64,
                      outcome="Failed", bus_bw=100.0, finished_at=f"2026-12-01T1{index}:00:00Z")
    assert len(_names(plane)) == 5
    args = ["rollout", "prune", str(fleet), str(repo / "clusters" / "a.yaml"), "--kubeconfig", str(plane.kubeconfig),
            "--context", "a=admin"]
    dry = cli(*args, "--dry-run")
    assert dry.code == 0, dry.err
    assert "a (nvcre-system): would delete 2, kept 3" in dry.out
    assert len(_names(plane)) == 5
    done = cli(*args, "--format", "json")
    assert done.code == 0, done.err
    decisions = {item["name"]: item["action"] for item in json.loads(done.out)["clusters"][0]["decisions"]}
    kept = sorted(name for name, action in decisions.items() if action == "keep")
    assert "c0-pass" in kept and len(kept) == 3  # the two newest of the job, and the stack's pass
    assert _names(plane) == kept


def test_an_unreachable_cluster_is_exit_3(cli: Any, bumped: Path, tmp_path: Path) -> None:  # noqa: F811
    repo = _clone(bumped, tmp_path)
    config = tmp_path / "dead.kubeconfig"
    config.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "dead", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "dead", "user": "u"}}]}))
    result = cli("rollout", "prune", str(repo / "fleet.yaml"), str(repo / "clusters" / "a.yaml"),
                 "--kubeconfig", str(config))
    assert result.code == 3
    assert "a (nvcre-system): unreachable:" in result.out
