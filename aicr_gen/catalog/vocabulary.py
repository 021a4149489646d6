"""AICR's criteria vocabulary and API versions (kept free of pydantic so start-up stays fast)."""

from __future__ import annotations

# ADR-022: AICR 0.22 writes the 1.0 headers, AICR <= 0.21 the alpha ones; 0.21 and 0.22 read both, 1.0 only
# the new ones. Each kind is on one track; profile-bearing overlays and recipes have their own header.
STABLE = "aicr.run/v1"
AUTHORING = "aicr.run/v1beta1"
PROFILED = "aicr.run/v1beta2"
ALPHA = "aicr.run/v1alpha2"
ALPHA_PROFILED = "aicr.run/v1alpha3"

API_VERSION = STABLE
"""The header of a recipe we write by default (the generation ``--api-version`` names)."""
API_VERSION_PROFILED = PROFILED
GENERATIONS = (STABLE, ALPHA)
"""``--api-version`` values: the unprofiled recipe header of each generation, newest first."""

_TRACKS = {
    "Snapshot": (STABLE, ALPHA), "RecipeResult": (STABLE, ALPHA), "RecipeCriteria": (STABLE, ALPHA),
    "BundleProvenance": (STABLE, ALPHA), "AICRConfig": (AUTHORING, ALPHA), "RecipeMetadata": (AUTHORING, ALPHA),
    "RecipeMixin": (AUTHORING, ALPHA), "ComponentRegistry": (AUTHORING, ALPHA),
}
_PROFILED_TRACK = (PROFILED, ALPHA_PROFILED)
PROFILED_KINDS = frozenset({"RecipeResult", "RecipeMetadata"})


def headers(kind: str, *, profiled: bool = False) -> tuple[str, str]:
    """The apiVersions AICR reads for ``kind``: the 1.0 header, then the alpha one."""
    return _PROFILED_TRACK if profiled and kind in PROFILED_KINDS else _TRACKS[kind]


def header(kind: str, generation: str = API_VERSION, *, profiled: bool = False) -> str:
    """The apiVersion of ``kind`` in ``generation`` (one of ``GENERATIONS``)."""
    return headers(kind, profiled=profiled)[GENERATIONS.index(generation)]


def generation_of(api_version: str) -> str:
    """The generation (``GENERATIONS``) an accepted apiVersion belongs to."""
    return ALPHA if api_version in (ALPHA, ALPHA_PROFILED) else STABLE


SERVICES = ("eks", "gke", "aks", "oke", "ocp", "kind", "lke", "bcm", "metal3", "generic")
ACCELERATORS = ("h100", "h200", "gb200", "gb300", "b200", "a100", "l40", "l40s", "rtx-pro-6000", "vr200")
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
