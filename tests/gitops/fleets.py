"""A shared-Argo-CD fleet in one repository, for the gitops and spec tests: the Fleet file, specs extending it, and
a committed repository holding them."""

from __future__ import annotations

from pathlib import Path

from tests.gitops.test_sync import git, init_repo
from tests.nvcre_elsewhere import write_policy

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
