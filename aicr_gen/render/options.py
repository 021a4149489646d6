"""Settings that shape a rendered bundle but are not part of the recipe."""

from __future__ import annotations

from dataclasses import dataclass

DEPLOYERS = ("helm", "argocd", "argocd-helm", "flux", "helmfile")


@dataclass(frozen=True)
class Options:
    """Deployer settings (``--repo``, ``--set deployer:...``)."""

    repo: str = "https://github.com/example/gitops.git"
    revision: str = "main"
    path: str = ""
    name_prefix: str = ""
    project: str = "default"
    destination_server: str = "https://kubernetes.default.svc"
    argocd_namespace: str = "argocd"
    app_name: str = "aicr-stack"
    flux_namespace: str = "flux-system"
    include_root_app: bool = True
