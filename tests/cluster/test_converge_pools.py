"""A mixed-pool tree converges: the example's H100 + GB200 cluster, synced and applied as Argo CD and Flux apply it
to a real API server with the GPU Operator CRDs installed; its two NVIDIADrivers are accepted and stored on
disjoint selectors, and each pool's certification CronJob (and, with Argo CD, its post-change hook) is applied
with a ServiceAccount that may only create Certifications (tests/gitops/test_pools.py and tests/certify/test_pools.py
cover the rendering)."""

from __future__ import annotations

import subprocess
import tarfile
from io import BytesIO
from pathlib import Path

import pytest
import yaml

from aicr_gen.cli.main import main
from tests.cluster.converge import (
    Api,
    assert_no_empty_applications,
    converge_argocd,
    converge_flux,
    service_account_can,
)
from tests.cluster.envtest import ControlPlane
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "pools" / "eks-h100-gb200.yaml"
REPO_URL = "https://github.com/example/gitops.git"


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True).stdout


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example (with both GitOps deployers) synced into a new repository, as a controller clones it."""
    folder = tmp_path_factory.mktemp("pools")
    repo = folder / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "i")
    spec = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    spec["spec"]["deployers"] = ["argocd", "flux"]
    (folder / "cluster.yaml").write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    rules = EXAMPLE.parent / "gb200-rules.yaml"  # the example's spec.sentinel.rules, beside it
    (folder / rules.name).write_bytes(rules.read_bytes())
    assert main(["sync", str(folder / "cluster.yaml"), "--repo", str(repo)]) == 0
    out = folder / "checkout"
    out.mkdir()
    with tarfile.open(fileobj=BytesIO(git(repo, "archive", "HEAD"))) as tar:
        tar.extractall(out, filter="data")
    return out


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_mixed_pool_tree_converges_with_two_drivers(checkout: Path, cluster_with_crds: ControlPlane,
                                                    deployer: str) -> None:
    converge = converge_argocd if deployer == "argocd" else converge_flux
    outcome = converge(cluster_with_crds, checkout, f"clusters/training-mixed/{deployer}", REPO_URL)
    assert not outcome.refused, "refused:\n" + "\n".join(outcome.refused)
    assert {"NVIDIADriver h100", "NVIDIADriver gb200"} <= set(outcome.applied)
    if deployer == "argocd":
        assert_no_empty_applications(checkout, REPO_URL)
    stored = {item["metadata"]["name"]: item["spec"]
              for item in Api(cluster_with_crds).items("nvidia.com/v1alpha1", "NVIDIADriver")}
    assert stored["h100"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "p5.48xlarge"}
    assert stored["gb200"]["nodeSelector"] == {"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}
    assert stored["gb200"]["kernelModuleConfig"] == {"name": "nvidia-kernel-module-params"}
    assert stored["h100"]["default"] is False  # the API server defaulted the field the v26.3.x CR leaves out


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
def test_each_pool_certifies_on_its_own_schedule(checkout: Path, cluster_with_crds: ControlPlane,
                                                 deployer: str) -> None:
    converge = converge_argocd if deployer == "argocd" else converge_flux
    outcome = converge(cluster_with_crds, checkout, f"clusters/training-mixed/{deployer}", REPO_URL)
    assert not outcome.refused, "refused:\n" + "\n".join(outcome.refused)
    applied = set(outcome.applied)
    api = Api(cluster_with_crds)
    schedules = {item["metadata"]["name"]: item["spec"]["schedule"]
                 for item in api.items("batch/v1", "CronJob", "nvcre-system")}
    assert schedules == {"gpu-certification-h100-schedule": "0 3 * * 0",
                         "gpu-certification-gb200-schedule": "0 4 * * 0"}
    for pool in ("h100", "gb200"):
        if deployer == "argocd":
            assert f"Job nvcre-system/gpu-certification-{pool}-post-sync" in applied
        account = f"gpu-certification-{pool}-schedule"
        assert service_account_can(api, "nvcre-system", account, "create", "certifications", group="nvcre.nvidia.com",
                                   in_namespace="nvcre-system")
        assert not service_account_can(api, "nvcre-system", account, "delete", "certifications",
                                       group="nvcre.nvidia.com", in_namespace="nvcre-system")
        assert not service_account_can(api, "nvcre-system", account, "patch", "nodes")
