"""AICR's criteria vocabulary and API versions (kept free of pydantic so start-up stays fast)."""

from __future__ import annotations

API_VERSION = "aicr.run/v1alpha2"
API_VERSION_PROFILED = "aicr.run/v1alpha3"
API_VERSIONS = (API_VERSION, API_VERSION_PROFILED)

SERVICES = ("eks", "gke", "aks", "oke", "ocp", "kind", "lke", "bcm", "metal3")
ACCELERATORS = ("h100", "h200", "gb200", "gb300", "b200", "a100", "l40", "l40s", "rtx-pro-6000")
INTENTS = ("training", "inference")
OSES = ("ubuntu", "rhel", "cos", "amazonlinux", "ol", "talos")
PLATFORMS = ("dynamo", "kubeflow", "nim", "runai", "slurm")
ALIASES: dict[str, dict[str, str]] = {
    "service": {"self-managed": "any", "self": "any", "vanilla": "any", "openshift": "ocp"},
    "os": {"al2": "amazonlinux", "al2023": "amazonlinux"},
}
DIMENSIONS: dict[str, tuple[str, ...]] = {
    "service": SERVICES,
    "accelerator": ACCELERATORS,
    "intent": INTENTS,
    "os": OSES,
    "platform": PLATFORMS,
}
