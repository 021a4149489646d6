"""``aicr-gen bundle --config FILE``: AICR's ``AICRConfig`` file (``aicr bundle --config``) as defaults for the
bundle flags. A flag given on the command line replaces the file's value (lists too), as AICR's CLI does
(pkg/cli/bundle_config.go). Only ``spec.bundle`` is read; the other sections (snapshot, recipe, validate,
verify) are accepted and left to the commands that own them."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import Strict
from aicr_gen.spec.cluster import Scheduling
from aicr_gen.spec.validate import scheduling_of

KIND = "AICRConfig"
API_VERSIONS = ("aicr.run/v1alpha2", "aicr.run/v1")


class _Strict(Strict, strict=True):
    """Typed as AICR's Go structs decode the file: no coercion."""


class _Input(_Strict):
    recipe: str | None = Field(None, description="Recipe file (--recipe)")


class _Output(_Strict):
    target: str | None = Field(None, description="Bundle folder (--output)")
    imageRefs: str | None = Field(None, description="Published image references file (OCI output)")


class _Registry(_Strict):
    insecureTLS: bool = Field(False, description="--insecure-tls")
    plainHTTP: bool = Field(False, description="--plain-http")


class _Deployment(_Strict):
    deployer: str | None = Field(None, description="--deployer")
    repo: str | None = Field(None, description="--repo")
    set: list[str] = Field(default_factory=list, description="--set values")
    dynamic: list[str] = Field(default_factory=list, description="--dynamic paths")
    vendorCharts: bool = Field(False, description="--vendor-charts")
    appName: str | None = Field(None, description="--app-name")


class _Bundle(_Strict):
    input: _Input | None = None
    output: _Output | None = None
    deployment: _Deployment | None = None
    scheduling: Scheduling | None = None
    attestation: dict[str, Any] | None = None
    registry: _Registry | None = None


class _Spec(_Strict):
    snapshot: dict[str, Any] | None = None
    recipe: dict[str, Any] | None = None
    bundle: _Bundle | None = None
    validate_: dict[str, Any] | None = Field(None, alias="validate")
    verify: dict[str, Any] | None = None


class AicrConfig(_Strict):
    """AICR's AICRConfig document (the parts ``bundle`` reads)."""

    kind: Literal["AICRConfig"]
    apiVersion: Literal["aicr.run/v1alpha2", "aicr.run/v1"]
    metadata: dict[str, Any] = Field(default_factory=dict)
    spec: _Spec


def _load(path: str) -> AicrConfig:
    if path.startswith(("http://", "https://")):
        raise InvalidInputError(f"--config {path}: aicr-gen reads a config file, not a URL; download it first")
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.modelcheck import check
    from aicr_gen.yaml import load_bytes

    doc = load_bytes(read_input(path, "--config"), path)
    config = check(doc, AicrConfig)
    if config.spec.bundle is not None and config.spec.bundle.scheduling is not None:
        scheduling_of(config.spec.bundle.scheduling,
                      lambda path, message: doc.error(("spec", "bundle", "scheduling", *path), message))
    return config


def apply(args: Any) -> Any:
    """``args`` of ``aicr-gen bundle`` with the flags not given taken from ``--config``."""
    bundle = _load(args.config).spec.bundle
    if bundle is not None:
        _fill(args, bundle)
    return args


def _fill(args: Any, bundle: _Bundle) -> None:
    deployment = bundle.deployment or _Deployment()
    for flag, value in (("recipe", bundle.input.recipe if bundle.input else None),
                        ("output", bundle.output.target if bundle.output else None),
                        ("deployer", deployment.deployer), ("repo", deployment.repo),
                        ("app_name", deployment.appName),
                        ("image_refs", bundle.output.imageRefs if bundle.output else None)):
        if getattr(args, flag) is None and value is not None:
            setattr(args, flag, value)
    if not args.set:
        args.set = list(deployment.set)
    if not args.dynamic:
        args.dynamic = list(deployment.dynamic)
    args.vendor_charts = args.vendor_charts or deployment.vendorCharts
    registry = bundle.registry or _Registry()
    args.plain_http = args.plain_http or registry.plainHTTP
    args.insecure_tls = args.insecure_tls or registry.insecureTLS
    given = bundle.scheduling
    if given is None:
        return
    from_file: dict[str, Any] = {
        "system_node_selector": [f"{key}={value}" for key, value in given.systemNodeSelector.items()],
        "system_node_toleration": given.systemNodeTolerations,
        "accelerated_node_selector": [f"{key}={value}" for key, value in given.acceleratedNodeSelector.items()],
        "accelerated_node_toleration": given.acceleratedNodeTolerations,
        "workload_gate": given.workloadGate or "",
        "workload_selector": [f"{key}={value}" for key, value in given.workloadSelector.items()],
        "nodes": given.nodes, "storage_class": given.storageClass or "",
        "shared_storage_class": given.sharedStorageClass or ""}
    for flag, value in from_file.items():
        if getattr(args, flag) in ([], "", 0):  # not given: the file's value
            setattr(args, flag, list(value) if isinstance(value, list) else value)
