"""Pydantic models of AICR's catalog and recipe kinds, in both header generations (ADR-022: the 1.0 headers
``aicr.run/v1``/``v1beta1``/``v1beta2`` and the alpha ones ``aicr.run/v1alpha2``/``v1alpha3``).

They validate what we load (unknown fields are rejected) and are the source of the JSON Schemas printed
by ``aicr-gen schema``. Resolution itself works on the validated plain data for speed; the models are
the contract, documented field by field.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, Field

from aicr_gen.catalog.vocabulary import ACCELERATORS, INTENTS, OSES, PLATFORMS, SERVICES
from aicr_gen.limits import MAX_NODES
from aicr_gen.modelcheck import Strict as _Strict
from aicr_gen.text.kube_names import DNS_LABEL

# A criterion value: AICR's vocabulary (see vocabulary.py), "any"/"" for a wildcard, or a value a site
# catalog introduces (AICR's criteria registry): lower-case letters, digits, '-' and '.'.
CriterionValue = Annotated[str, Field(pattern=r"^([a-z0-9][a-z0-9.-]*)?$")]
# Component names become release, folder and Application names: DNS labels, short enough for prefixes.
ComponentName = Annotated[str, Field(pattern=f"^{DNS_LABEL.pattern}$", max_length=48)]


def _canonical_type(value: Any) -> Any:
    if isinstance(value, str):
        return {"helm": "Helm", "kustomize": "Kustomize"}.get(value.lower(), value)
    return value


ComponentType = Annotated[Literal["Helm", "Kustomize"], BeforeValidator(_canonical_type)]


class Criteria(_Strict):
    """Which clusters an overlay applies to (or, in a recipe, which cluster it was resolved for).

    An absent field or ``any`` is a wildcard in an overlay; in a query it matches only wildcard overlays.
    """

    service: CriterionValue | None = Field(None, description=f"Kubernetes service: {', '.join(SERVICES)} or any")
    accelerator: CriterionValue | None = Field(None, description=f"GPU type: {', '.join(ACCELERATORS)} or any")
    intent: CriterionValue | None = Field(None, description=f"Workload intent: {', '.join(INTENTS)} or any")
    os: CriterionValue | None = Field(None, description=f"Node operating system: {', '.join(OSES)} or any")
    platform: CriterionValue | None = Field(None, description=f"Workload platform: {', '.join(PLATFORMS)} or any")
    nodes: int | None = Field(None, ge=0, le=MAX_NODES, description="Advisory GPU node count; never used for "
                                                                   "matching")


class RecipeCriteria(_Strict):
    """A criteria document (AICR ``RecipeCriteria``), e.g. the body of a recipe request."""

    kind: Literal["RecipeCriteria"] = Field(description="Always RecipeCriteria")
    apiVersion: Literal["aicr.run/v1", "aicr.run/v1alpha2"] = Field(
        description="aicr.run/v1 (AICR >= 0.22), or aicr.run/v1alpha2 (AICR <= 0.22)")
    metadata: dict[str, Any] | None = Field(None, description="Free-form metadata (name, labels)")
    spec: Criteria = Field(description="The criteria to resolve")


class Constraint(_Strict):
    """A readiness check on a snapshot measurement, e.g. ``K8s.server.version`` ``>= 1.30``."""

    name: str = Field(min_length=1, description="Measurement path {Type}.{subtype}.{key}, or a phase setting name")
    value: str = Field(description="Expected value: an exact value or an operator (>=, <=, >, <, ==, !=) and a value")
    severity: Literal["error", "warning"] | None = Field(None, description="error (default) fails validation")
    remediation: str | None = Field(None, description="What to do when the constraint fails")
    unit: str | None = Field(None, description="Unit of the measured value, for reports")


class NodeSelection(_Strict):
    """Which nodes a validation phase runs on."""

    selector: dict[str, str] | None = Field(None, description="Node label selector")
    maxNodes: int | None = Field(None, ge=0, le=MAX_NODES, description="Upper bound of nodes to use")
    excludeNodes: list[str] | None = Field(None, description="Node names never to use")


class ValidationPhase(_Strict):
    """Checks and constraints of one validation phase. ``[]`` clears inherited lists; absent inherits."""

    timeout: str | None = Field(None, description="Phase timeout, a Go duration such as 30m")
    constraints: list[Constraint] | None = Field(None, description="Phase constraints, merged by name")
    checks: list[str] | None = Field(None, description="Validator catalog check names, unioned")
    nodeSelection: NodeSelection | None = Field(None, description="Replaces the inherited node selection")
    infrastructure: str | None = Field(None, description="Replaces the inherited infrastructure name")


class Validation(_Strict):
    """Validation phases run by ``aicr validate``."""

    readiness: ValidationPhase | None = Field(None, description="Inline constraint checks, always first")
    deployment: ValidationPhase | None = Field(None, description="Are the components deployed and healthy")
    performance: ValidationPhase | None = Field(None, description="NCCL and inference performance checks")
    conformance: ValidationPhase | None = Field(None, description="Kubernetes AI conformance checks")


class ExpectedResource(_Strict):
    """A resource the deployment validator expects to find."""

    kind: str = Field(min_length=1, description="Kubernetes kind, e.g. Deployment")
    name: str = Field(min_length=1, description="Object name")
    namespace: str | None = Field(None, description="Namespace; the component's when absent")


class ComponentRef(_Strict):
    """One component of a recipe: a Helm chart or a Kustomize source, with values and dependencies."""

    name: ComponentName = Field(description="Component name, the registry key (a DNS label)")
    namespace: str | None = Field(None, description="Target namespace; registry helm.defaultNamespace when absent")
    chart: str | None = Field(None, description="Chart name; last segment of registry helm.defaultChart when absent")
    type: ComponentType | None = Field(None, description="Helm or Kustomize (case-insensitive)")
    source: str | None = Field(None, description="Helm repository URL or oci:// reference; Git URL for Kustomize")
    version: str | None = Field(None, description="Exact chart version; the registry pins it")
    tag: str | None = Field(None, description="Kustomize only: Git tag or ref")
    valuesFile: str | None = Field(None, description="Values file relative to the catalog root")
    overrides: dict[str, Any] | None = Field(
        None, description="Inline Helm values, deep-merged; enabled: false disables the component")
    patches: list[str] | None = Field(None, description="Unsupported: an enabled component with patches is rejected")
    dependencyRefs: list[str] | None = Field(None, description="Components that must be deployed first")
    manifestFiles: list[str] | None = Field(None, description="Manifests applied after the chart (the -post unit)")
    preManifestFiles: list[str] | None = Field(None, description="Manifests applied before the chart (the -pre unit)")
    path: str | None = Field(None, description="Kustomize only: path inside the source")
    cleanup: bool | None = Field(None, description="Uninstall after validation (ephemeral validators)")
    expectedResources: list[ExpectedResource] | None = Field(
        None, description="Resources the deployment validator checks; an overlay replaces the list")
    healthCheckAsserts: str | None = Field(None, description="Chainsaw health check text, hydrated from the registry")
    healthCheckSkip: bool | None = Field(None, description="Do not hydrate the health check")


ProfileToken = Annotated[str, Field(pattern=r"^[A-Za-z0-9._-]+$")]


class ProfileComponentRef(_Strict):
    """A profile may only set overrides of components."""

    name: str = Field(min_length=1, description="Component name")
    overrides: dict[str, Any] | None = Field(None, description="Inline Helm values, deep-merged")


class ProfileValue(_Strict):
    """One selectable value of a configuration profile."""

    advertiser: Literal["", "external"] | None = Field(
        None, description="external when another system (e.g. GKE's device plugin) advertises the GPUs")
    constraints: list[Constraint] | None = Field(None, description="Constraints added by this value")
    componentRefs: list[ProfileComponentRef] | None = Field(None, description="Overrides added by this value")


class Profile(_Strict):
    """A configuration profile (profile-bearing overlays): named alternatives that only set overrides."""

    name: ProfileToken = Field(description="Profile name, e.g. gpuStack")
    description: str | None = Field(None, description="What the choice is about")
    default: ProfileToken = Field(description="The value used when none is selected")
    values: dict[ProfileToken, ProfileValue] = Field(min_length=1, description="The selectable values")


class OverlaySpec(_Strict):
    """What an overlay contributes on top of its parent."""

    base: str | None = Field(None, description="Parent overlay name; base when absent")
    criteria: Criteria | None = Field(None, description="Queries this overlay applies to; not inherited")
    mixins: list[str] | None = Field(None, description="RecipeMixin names composed into this overlay")
    constraints: list[Constraint] | None = Field(None, description="Constraints, merged by name (later wins)")
    componentRefs: list[ComponentRef] | None = Field(None, description="Components, merged by name field by field")
    validation: Validation | None = Field(None, description="Validation phases, merged per phase")
    profile: Profile | None = Field(
        None, description="Configuration profile (only with apiVersion aicr.run/v1beta2 or aicr.run/v1alpha3)")


class NamedMetadata(_Strict):
    """Object metadata: the name is the reference used by spec.base and spec.mixins."""

    name: str = Field(min_length=1, pattern=r"^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$", description="Unique name")


class RecipeMetadata(_Strict):
    """An overlay (AICR ``RecipeMetadata``); ``base`` is the one without criteria."""

    kind: Literal["RecipeMetadata"] = Field(description="Always RecipeMetadata")
    apiVersion: Literal["aicr.run/v1beta1", "aicr.run/v1beta2", "aicr.run/v1alpha2", "aicr.run/v1alpha3"] = Field(
        description="aicr.run/v1beta1, or aicr.run/v1beta2 when spec.profile is set (AICR >= 0.22); "
                    "aicr.run/v1alpha2, or aicr.run/v1alpha3 with a profile (AICR <= 0.22)")
    metadata: NamedMetadata = Field(description="Overlay name (equal to the file name without .yaml)")
    spec: OverlaySpec = Field(description="The overlay content")


class MixinSpec(_Strict):
    """A mixin carries only constraints and components."""

    constraints: list[Constraint] | None = Field(None, description="Constraints; a name already set is an error")
    componentRefs: list[ComponentRef] | None = Field(None, description="Components added by the mixin")


class RecipeMixin(_Strict):
    """A reusable fragment (AICR ``RecipeMixin``) composed by overlays through ``spec.mixins``."""

    kind: Literal["RecipeMixin"] = Field(description="Always RecipeMixin")
    apiVersion: Literal["aicr.run/v1beta1", "aicr.run/v1alpha2"] = Field(
        description="aicr.run/v1beta1 (AICR >= 0.22), or aicr.run/v1alpha2 (AICR <= 0.22)")
    metadata: NamedMetadata = Field(description="Mixin name")
    spec: MixinSpec = Field(description="The mixin content")


class HelmDefaults(_Strict):
    """Registry defaults of a Helm component; the single source of truth for its version."""

    defaultRepository: str | None = Field(None, description="Helm repository URL or oci:// reference")
    defaultChart: str | None = Field(None, description="Chart, optionally repo-prefixed (nvidia/gpu-operator)")
    defaultVersion: str | None = Field(None, description="Pinned chart version")
    defaultNamespace: str | None = Field(None, description="Namespace the chart installs into")


class KustomizeDefaults(_Strict):
    """Registry defaults of a Kustomize component."""

    defaultSource: str | None = Field(None, description="Git repository URL")
    defaultPath: str | None = Field(None, description="Path inside the repository")
    defaultTag: str | None = Field(None, description="Git tag or ref")


class HealthCheck(_Strict):
    """Where the component's Chainsaw health check lives."""

    assertFile: str = Field(min_length=1, description="Catalog-relative path, e.g. checks/nfd/health-check.yaml")


class SchedulingPaths(_Strict):
    """Helm value paths that receive node selectors, tolerations and taints."""

    nodeSelectorPaths: list[str] | None = Field(None, description="Value paths for node selectors")
    tolerationPaths: list[str] | None = Field(None, description="Value paths for tolerations")
    taintStrPaths: list[str] | None = Field(None, description="Value paths for taint strings")


class NodeScheduling(_Strict):
    """Where scheduling flags are written into the chart values."""

    system: SchedulingPaths | None = Field(None, description="System (non-GPU) node scheduling")
    accelerated: SchedulingPaths | None = Field(None, description="GPU node scheduling")
    nodeCountPaths: list[str] | None = Field(None, description="Value paths for the node count")


class WorkloadScheduling(_Strict):
    """Workload selector paths."""

    workloadSelectorPaths: list[str] | None = Field(None, description="Value paths for workload selectors")


class PodScheduling(_Strict):
    """Pod scheduling paths."""

    workload: WorkloadScheduling | None = Field(None, description="Workload pod scheduling")


class RegistryValidation(_Strict):
    """A bundle-time check on the component's values."""

    function: str = Field(min_length=1, description="Check function name")
    severity: Literal["error", "warning", "info"] = Field(description="error blocks; warning and info only report")
    conditions: dict[str, list[str]] | None = Field(None, description="Criteria under which the check runs")
    message: str | None = Field(None, description="Message shown when the check fires")


class RegistryComponent(_Strict):
    """One component of the registry."""

    name: ComponentName = Field(description="Component name, referenced by componentRefs (a DNS label)")
    displayName: str | None = Field(None, description="Human name")
    valueOverrideKeys: list[str] | None = Field(None, description="Aliases accepted by --set")
    helm: HelmDefaults | None = Field(None, description="Helm defaults")
    kustomize: KustomizeDefaults | None = Field(None, description="Kustomize defaults")
    healthCheck: HealthCheck = Field(description="Required health check")
    nodeScheduling: NodeScheduling | None = Field(None, description="Scheduling value paths")
    podScheduling: PodScheduling | None = Field(None, description="Pod scheduling value paths")
    storageClassPaths: list[str] | None = Field(None, description="Value paths for the storage class")
    sharedStorageClassPaths: list[str] | None = Field(None, description="Value paths for the shared storage class")
    validations: list[RegistryValidation] | None = Field(None, description="Bundle-time checks")
    gkeCriticalPriority: bool | None = Field(None, description="Needs a critical-priority quota on GKE")
    hasSelfRefCRDs: bool | None = Field(None, description="Chart creates CRs of its own CRDs")
    manifestsUseChartCRDs: bool | None = Field(None, description="Manifests use CRDs the chart installs")
    manifestFiles: list[str] | None = Field(None, description="Default manifests")


class ComponentRegistry(_Strict):
    """The component registry (AICR ``ComponentRegistry``)."""

    apiVersion: Literal["aicr.run/v1beta1", "aicr.run/v1alpha2"] = Field(
        description="aicr.run/v1beta1 (AICR >= 0.22), or aicr.run/v1alpha2 (AICR <= 0.22)")
    kind: Literal["ComponentRegistry"] = Field(description="Always ComponentRegistry")
    components: list[RegistryComponent] = Field(description="The components")


class ExcludedOverlay(_Strict):
    """An overlay left out in snapshot mode."""

    name: str = Field(description="Overlay name")
    reason: str = Field(description="Why it was left out")


class RecipeResultMetadata(_Strict):
    """Provenance of a resolved recipe."""

    version: str | None = Field(None, description="Version of the tool that resolved it")
    appliedOverlays: list[str] | None = Field(None, description="Overlays in application order, base first")
    excludedOverlays: list[ExcludedOverlay | str] | None = Field(None, description="Snapshot mode only")
    constraintWarnings: list[dict[str, Any]] | None = Field(None, description="Snapshot mode only")
    gpuDriverState: str | None = Field(None, description="Snapshot mode only: preinstalled or absent")
    selectedProfile: dict[str, Any] | None = Field(None, description="Profiled recipes only: the selected profile")
    mariaDBOperatorState: str | None = Field(None, description="Snapshot mode only")


class RecipeResult(_Strict):
    """A resolved, version-locked recipe (AICR ``RecipeResult``)."""

    kind: Literal["RecipeResult"] = Field(description="Always RecipeResult")
    apiVersion: Literal["aicr.run/v1", "aicr.run/v1beta2", "aicr.run/v1alpha2", "aicr.run/v1alpha3"] = Field(
        description="aicr.run/v1, or aicr.run/v1beta2 with a profile or configuration (AICR >= 0.22); "
                    "aicr.run/v1alpha2, or aicr.run/v1alpha3 with a profile or configuration (AICR <= 0.22)")
    metadata: RecipeResultMetadata | None = Field(None, description="Provenance")
    criteria: Criteria | None = Field(None, description="The query the recipe was resolved for")
    configuration: dict[str, Any] | None = Field(
        None, description="Profiled recipes only: configuration (slurm accounting)")
    constraints: list[Constraint] | None = Field(None, description="Readiness constraints, sorted by name")
    componentRefs: list[ComponentRef] = Field(description="The resolved components")
    deploymentOrder: list[str] | None = Field(None, description="Topological install order of enabled components")
    validation: Validation | None = Field(None, description="Validation phases")


SCHEMA_KINDS: dict[str, type[BaseModel]] = {
    "recipe": RecipeResult,
    "overlay": RecipeMetadata,
    "mixin": RecipeMixin,
    "registry": ComponentRegistry,
    "criteria": RecipeCriteria,
}
