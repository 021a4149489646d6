"""Every ``sync`` tree converges: applied as Argo CD or Flux applies it, to a real API server with the real CRDs,
nothing is refused (tests/cluster/converge.py says what is real and what is emulated)."""

from __future__ import annotations

import subprocess
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from io import BytesIO
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.cli.main import main
from tests.cluster.converge import (
    Api,
    Outcome,
    assert_no_empty_applications,
    converge_argocd,
    converge_flux,
    service_account_can,
)
from tests.cluster.envtest import ControlPlane

REPO_URL = "https://github.com/example/gitops.git"


@dataclass(frozen=True)
class Case:
    """One ClusterSpec of the matrix."""

    name: str
    criteria: dict[str, str]
    certification: dict[str, Any] | None
    sentinel: dict[str, Any]
    snapshot: dict[str, Any] | None


INFERENCE = {"service": "eks", "accelerator": "h100", "intent": "inference", "os": "ubuntu", "platform": "dynamo"}
TRAINING = {"service": "gke", "accelerator": "h100", "intent": "training", "os": "cos", "platform": "kubeflow"}
NCCL = ["communication/nccl-all-reduce"]
CASES = [
    Case("inference-everything", INFERENCE,
         {"categories": NCCL, "thresholds": {"busBandwidthGBps": "value >= 300"}, "schedule": "0 3 * * 0",
          "postChange": True},
         {"mode": "monitor"}, {"configmap": "cm://aicr/snapshot"}),
    Case("training-quarantine-lifecycle", TRAINING,
         {"categories": [*NCCL, "training/nemotron5-8b"], "thresholds": {"busBandwidthGBps": "value >= 300"},
          "schedule": "0 3 * * 0", "postChange": True},
         {"mode": "quarantine", "lifecycle": True, "validation": True,
          "breaker": {"percentage": 20, "duration": "10m", "maxNodes": 4}},
         {"configmap": "cm://gpu-drift/snapshot", "schedule": "*/30 * * * *"}),
    Case("inference-bare-quarantine", INFERENCE, None, {"mode": "quarantine", "breaker": {"percentage": 10}}, None),
    Case("training-post-change-only", TRAINING,
         {"categories": NCCL, "thresholds": {"busBandwidthGBps": "value >= 300"}, "postChange": True},
         {"mode": "monitor", "dryRun": True}, {"configmap": "cm://nvcre-system/snapshot"}),
]


def spec_for(case: Case) -> dict[str, Any]:
    spec: dict[str, Any] = {"criteria": case.criteria, "deployers": ["argocd", "flux"],
                            "repo": {"url": REPO_URL, "path": f"clusters/{case.name}", "branch": "main"},
                            "sentinel": case.sentinel}
    if case.certification is not None:
        spec["certification"] = case.certification
    if case.snapshot is not None:
        spec["snapshot"] = case.snapshot
    return {"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": case.name},
            "spec": spec}


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True)
    return done.stdout.decode()


@pytest.fixture(scope="module")
def checkouts(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Case], Path]:
    """Each case ``sync``ed into a new repository once; its committed tree (``git archive HEAD``), as a controller
    clones it."""
    made: dict[str, Path] = {}

    def checkout(case: Case) -> Path:
        if case.name not in made:
            folder = tmp_path_factory.mktemp(case.name)
            repo = folder / "gitops"
            repo.mkdir()
            git(repo, "init", "-q", "-b", "main")
            git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty",
                "-m", "initial")
            spec = folder / "cluster.yaml"
            document = spec_for(case)
            if case.certification is not None and case.criteria == INFERENCE:  # NVCRE installed elsewhere
                from tests.nvcre_elsewhere import POLICY_FILE, write_policy

                write_policy(folder)
                document["spec"]["policies"] = [POLICY_FILE]
            spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
            assert main(["sync", str(spec), "--repo", str(repo)]) == 0
            made[case.name] = folder / "checkout"
            made[case.name].mkdir()
            archive = subprocess.run(["git", "-C", str(repo), "archive", "HEAD"], capture_output=True,
                                     check=True).stdout
            with tarfile.open(fileobj=BytesIO(archive)) as tar:
                tar.extractall(made[case.name], filter="data")
        return made[case.name]

    return checkout


def assert_converged(outcome: Outcome) -> None:
    assert not outcome.refused, "refused:\n" + "\n".join(outcome.refused)
    assert outcome.applied


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
@pytest.mark.parametrize("case", CASES, ids=[case.name for case in CASES])
def test_sync_tree_converges_with_zero_refusals(checkouts: Callable[[Case], Path], cluster_with_crds: ControlPlane,
                                                case: Case, deployer: str) -> None:
    checkout = checkouts(case)
    converge = converge_argocd if deployer == "argocd" else converge_flux
    outcome = converge(cluster_with_crds, checkout, f"clusters/{case.name}/{deployer}", REPO_URL)
    assert_converged(outcome)
    if deployer == "argocd":
        assert_no_empty_applications(checkout, REPO_URL)
    applied = set(outcome.applied)
    cert = case.certification or {}
    namespace = "nvcre-system"
    if cert.get("schedule"):
        assert f"CronJob {namespace}/gpu-certification-schedule" in applied
    if cert.get("postChange") and deployer == "argocd":
        assert f"Job {namespace}/gpu-certification-post-sync" in applied
    if case.snapshot is not None:
        snapshot_ns = case.snapshot["configmap"].removeprefix("cm://").split("/")[0]
        assert f"CronJob {snapshot_ns}/aicr-snapshot-agent" in applied
    # only sources outside the repository are emulated, never one of ours; stand-in CRDs only for the kinds
    # that charts we cannot fetch here would install
    assert not [line for line in outcome.emulated if REPO_URL in line], outcome.emulated
    stand_ins = {line.split()[2] for line in outcome.emulated if line.startswith("stand-in CRD")}
    assert stand_ins <= STAND_INS, stand_ins - STAND_INS
    assert_least_privilege(Api(cluster_with_crds), case, deployer)


STAND_INS = {"agentgatewayparameters.agentgateway.dev", "gateways.gateway.networking.k8s.io"}
"""CRDs of the agentgateway-crds and gateway-api-crds charts, which agentgateway's manifests use."""

FORBIDDEN = [("delete", "nodes", ""), ("patch", "nodes", ""), ("create", "rolebindings", "rbac.authorization.k8s.io"),
             ("create", "clusterrolebindings", "rbac.authorization.k8s.io"),
             ("escalate", "roles", "rbac.authorization.k8s.io"), ("bind", "clusterroles", "rbac.authorization.k8s.io"),
             ("get", "secrets", ""), ("list", "secrets", ""), ("watch", "secrets", ""), ("create", "pods", ""),
             ("delete", "certifications", "nvcre.nvidia.com"), ("impersonate", "users", "")]
"""What no ServiceAccount of a tree may do, in any namespace."""


def assert_least_privilege(api: Api, case: Case, deployer: str) -> None:
    """Each ServiceAccount the tree created can do its job, and nothing on the FORBIDDEN list anywhere."""
    accounts: list[tuple[str, str, list[tuple[str, str, str, str | None, str]]]] = []
    cert = case.certification or {}
    runners = [*(["gpu-certification-schedule"] if cert.get("schedule") else []),
               *(["gpu-certification-post-sync"] if cert.get("postChange") and deployer == "argocd" else [])]
    for runner in runners:
        needs = [("create", "certifications", "nvcre.nvidia.com", "nvcre-system", "")]
        accounts.append(("nvcre-system", runner, needs))
    if case.snapshot is not None:
        namespace, name = case.snapshot["configmap"].removeprefix("cm://").split("/")
        accounts.append((namespace, "aicr-snapshot-agent", [
            ("list", "nodes", "", None, ""), ("get", "nodes", "", None, ""), ("list", "pods", "", None, ""),
            ("get", "clusterpolicies", "nvidia.com", None, ""), ("create", "configmaps", "", namespace, ""),
            ("patch", "configmaps", "", namespace, name), ("get", "configmaps", "", namespace, name)]))
    for namespace, account, needed in accounts:
        for verb, resource, group, where, name in needed:
            assert service_account_can(api, namespace, account, verb, resource, group=group, in_namespace=where,
                                       name=name), f"{namespace}/{account} cannot {verb} {resource} ({where})"
        for verb, resource, group in FORBIDDEN:
            for where in (None, namespace, "kube-system"):
                assert not service_account_can(api, namespace, account, verb, resource, group=group,
                                               in_namespace=where), f"{namespace}/{account} can {verb} {resource}"
    for namespace, account, _ in accounts:  # no job reaches beyond its own namespace for its writes
        assert not service_account_can(api, namespace, account, "create", "certifications", group="nvcre.nvidia.com",
                                       in_namespace="default")
        assert not service_account_can(api, namespace, account, "patch", "configmaps", in_namespace=namespace,
                                       name="someone-elses")
    assert accounts or (case.certification is None and case.snapshot is None)
