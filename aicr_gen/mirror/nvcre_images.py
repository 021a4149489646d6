"""The workload images NVCRE's certification categories run, which no manifest of the tree names: the
NVCRE controller picks them from its catalog when it runs a Certification (AICR's mirror discovery misses
them, aicr #2687).

Facts read from NVCRE's catalog entries (NVIDIA/cluster-readiness-engine ``pkg/catalog/entries/<domain>/
<variant>.yaml``: the base ``jobTemplate`` trainer image and the TrainingRuntime containers, then the
``overrides[].when`` blocks that replace the trainer image on a platform or GPU). The NCCL entries share one
image layout (all-reduce read; all-gather, alltoall and the loopback variants use the same images). A
category option ``image`` (``spec.certification.options.image``) replaces the trainer image, so the list
then names that image instead.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

PYTORCH_NCCL = "nvcr.io/nvidia/pytorch:26.01-py3"
PYTORCH_GCP_H100 = "nvcr.io/nvidia/pytorch:25.06-py3"
EFA_NCCL_TESTS = "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"
NCCL_TESTS_LATEST = "public.ecr.aws/hpc-cloud/nccl-tests:latest"
DCGM = "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04"
PYTORCH_TRAINING = "nvcr.io/nvidia/pytorch:25.08-py3"

PLATFORMS = {"eks": "aws", "gke": "gcp", "aks": "azure", "oke": "oci"}
"""AICR service -> the platform NVCRE detects on it (others: on-prem or unknown, the base images)."""


class Variant(NamedTuple):
    """An image a category runs when the platform and GPU match (empty: any)."""

    image: str
    platform: str = ""
    gpus: tuple[str, ...] = ()
    not_gpus: tuple[str, ...] = ()


_NCCL = (Variant(PYTORCH_NCCL),
         Variant(EFA_NCCL_TESTS, "aws", not_gpus=("gb200", "gb300")),
         Variant(EFA_NCCL_TESTS, "aws", ("gb200",)),
         Variant(NCCL_TESTS_LATEST, "aws", ("gb300",)),
         Variant(PYTORCH_GCP_H100, "gcp", ("h100",)))
CATEGORY_IMAGES: dict[str, tuple[Variant, ...]] = {
    **{f"communication/{variant}": _NCCL for variant in ("nccl-all-reduce", "nccl-all-gather", "nccl-alltoall",
                                                        "nccl-loopback", "nccl-loopback-nvswitch")},
    "diagnostics/dcgm-level4": (Variant(DCGM),),
    "training/nemotron5-8b": (Variant(PYTORCH_TRAINING),),
    "training/nemotron5-56b": (Variant(PYTORCH_TRAINING),),
}


def category_images(category: str, service: str | None, accelerator: str | None) -> list[str]:
    """The images ``category`` runs on a cluster of ``service`` with ``accelerator`` GPUs (None or ``any``:
    every variant, since the site is not known), base image first."""
    variants: Sequence[Variant] = CATEGORY_IMAGES.get(category, ())
    platform = PLATFORMS.get(service or "") if service not in (None, "any") else None
    gpu = accelerator if accelerator not in (None, "any") else None
    images: list[str] = []
    for variant in variants:
        if variant.platform and platform is not None and variant.platform != platform:
            continue
        if gpu is not None and ((variant.gpus and gpu not in variant.gpus) or gpu in variant.not_gpus):
            continue
        if service not in (None, "any") and variant.platform and platform is None:
            continue
        if variant.image not in images:
            images.append(variant.image)
    return images
