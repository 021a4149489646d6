"""``ClusterSpec`` (``aicr-gen.dev/v1alpha1``): one cluster, end to end, in one reviewed file.

The criteria and catalog layers of its recipe, the deployer(s) and Git location of its bundle, value
overrides, NVCRE certification, NVSentinel operation, snapshot capture and the policies to enforce. The
pydantic models are the contract (and the source of ``aicr-gen schema clusterspec``); ``load_spec`` adds
the checks a JSON Schema cannot express (cron syntax, threshold expressions, ``--set`` syntax, ...),
each reported as ``file:line: field.path: problem``. A spec may take defaults from a Fleet (``spec.extends``):
``load_spec`` validates the layered spec (``spec/fleet.py``), naming the file each offending value came from.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, ConfigDict, Field, PrivateAttr, WithJsonSchema

from aicr_gen import limits
from aicr_gen.catalog.models import Criteria
from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import Strict as _Strict
from aicr_gen.text.kube_names import DNS_LABEL, MAX_LABEL
from aicr_gen.yaml import Document, FieldPath, format_path

API_VERSION = "aicr-gen.dev/v1alpha1"
KIND = "ClusterSpec"
DEFAULT_SNAPSHOT_SCHEDULE = "0 * * * *"
PLACEHOLDER_URL = "https://replace-me.invalid/your-org/gitops.git"
"""What ``spec init`` writes as spec.repo.url: on the reserved ``.invalid`` domain (RFC 2606), which never
resolves, so ``lint`` and ``sync`` refuse it (and any other ``.invalid`` URL) until it is replaced."""

Deployer = Literal["helm", "argocd", "argocd-helm", "flux", "helmfile"]
DnsLabel = Annotated[str, Field(pattern=f"^{DNS_LABEL.pattern}$", max_length=MAX_LABEL)]
# The field types that carry the limits and grammars of limits.py (its table says where each comes from).
Text = Annotated[str, Field(max_length=limits.MAX_TEXT), AfterValidator(limits.one_line)]
NonEmpty = Annotated[str, Field(min_length=1, max_length=limits.MAX_TEXT), AfterValidator(limits.one_line)]
LongText = Annotated[str, Field(max_length=16 * limits.MAX_TEXT), AfterValidator(limits.one_line)]
"""A ``--set-json`` text: a JSON document on one line."""
# ... and say them in the JSON Schema (``aicr-gen schema``), so that an editor or check-jsonschema refuses early
Subdomain = Annotated[str, AfterValidator(limits.subdomain), WithJsonSchema(
    {"type": "string", "pattern": f"^{limits.DNS_SUBDOMAIN.pattern}$", "maxLength": limits.MAX_SUBDOMAIN})]
LabelValue = Annotated[str, AfterValidator(limits.label_value), WithJsonSchema(
    {"type": "string", "pattern": f"^({limits.LABEL_VALUE.pattern})?$", "maxLength": limits.MAX_LABEL})]
Version = Annotated[str, AfterValidator(limits.version), WithJsonSchema(
    {"type": "string", "pattern": f"^{limits.VERSION.pattern}$", "maxLength": limits.MAX_VERSION})]
Url = Annotated[str, AfterValidator(limits.url), WithJsonSchema(
    {"type": "string", "pattern": r"^\S+$", "maxLength": limits.MAX_URL})]
Branch = Annotated[str, AfterValidator(limits.branch), WithJsonSchema(
    {"type": "string", "pattern": r"^[^\s~^:?*\[\\]+$", "maxLength": limits.MAX_REF})]
SecretKey = Annotated[str, AfterValidator(limits.secret_key), WithJsonSchema(
    {"type": "string", "pattern": f"^{limits.SECRET_KEY.pattern}$", "maxLength": limits.MAX_SUBDOMAIN})]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
Options = Annotated[dict[Text, Text | Int64 | bool], Field(max_length=limits.MAX_ENTRIES)]
PathText = Annotated[str, Field(min_length=1), AfterValidator(limits.path), WithJsonSchema(
    {"type": "string", "minLength": 1, "maxLength": limits.MAX_PATH})]
Labels = Annotated[dict[Annotated[str, AfterValidator(limits.label_key), WithJsonSchema(
    {"type": "string", "maxLength": limits.MAX_SUBDOMAIN + 1 + limits.MAX_LABEL})], LabelValue],
                   Field(max_length=limits.MAX_ENTRIES)]
Texts = Annotated[list[NonEmpty], Field(max_length=limits.MAX_ITEMS)]
Paths = Annotated[list[PathText], Field(max_length=limits.MAX_ITEMS)]
Versions = Annotated[dict[NonEmpty, Version], Field(max_length=limits.MAX_ENTRIES)]


class Metadata(_Strict):
    """Identifies the cluster."""

    name: DnsLabel = Field(description="Cluster name: a DNS label (lower-case letters, digits, '-'; 63 at most)")
    labels: Labels | None = Field(None, description="Kubernetes labels, e.g. env: prod")


def _fleet_may_fill(schema: dict[str, Any]) -> None:
    """The Spec schema: with ``extends``, only the criteria must be in the file (the fleet may give the rest;
    ``aicr-gen lint`` checks the layered spec); without, deployers and repo (with url and path) as well."""
    schema["required"] = ["criteria"]
    schema["if"] = {"required": ["extends"]}
    schema["else"] = {"required": ["criteria", "deployers", "repo"],
                      "properties": {"repo": {"required": ["url", "path"]}}}


def _url_from_fleet(schema: dict[str, Any]) -> None:
    schema["required"] = ["path"]  # and url unless the spec extends a fleet: see _fleet_may_fill


class Repo(_Strict):
    """Where the rendered bundle lives in Git."""

    model_config = ConfigDict(json_schema_extra=_url_from_fleet)

    url: Url = Field(description="Git repository URL the bundle is committed to (argocd and flux read it)")
    path: PathText = Field(description="Folder of the bundle inside the repository: relative POSIX path, no '..'")
    branch: Branch = Field("main", description="Branch the deployer follows")


class Overrides(_Strict):
    """Component value overrides applied when rendering the bundle (as ``aicr-gen bundle --set``)."""

    set: Annotated[list[Text], Field(max_length=limits.MAX_ITEMS)] = Field(default_factory=list,
                           description="COMPONENT:PATH=VALUE, typed as AICR types --set "
                                       "(e.g. gpu-operator:driver.enabled=false)")
    setJson: Annotated[list[LongText], Field(max_length=limits.MAX_ITEMS)] = Field(default_factory=list,
                               description="COMPONENT:PATH=JSON; maps are deep-merged (a null deletes its key), "
                                           "lists replaced")
    dynamic: Annotated[list[Annotated[Text, Field(pattern=r"^[^:\s]+:[^.\s]+(\.[^.\s]+)*$")]],
                       Field(max_length=limits.MAX_ITEMS)] = Field(
        default_factory=list, description="COMPONENT:PATH values left to install time, as `aicr-gen bundle "
                                          "--dynamic` (argocd-helm: the chart's values.yaml; flux: a <unit>-values "
                                          "ConfigMap; helm and helmfile: cluster-values.yaml); not for argocd")


class Certification(_Strict):
    """NVCRE certification of the cluster (``aicr-gen certification``)."""

    categories: Annotated[list[Text], Field(max_length=limits.MAX_ITEMS)] = Field(default_factory=list,
                                  description="NVCRE catalog entries DOMAIN/VARIANT, "
                                              "e.g. communication/nccl-all-reduce")
    thresholds: Annotated[dict[Text, Text], Field(max_length=limits.MAX_ENTRIES)] = Field(default_factory=dict,
                                       description="Threshold key (NVCRE registry, e.g. busBandwidthGBps) -> CEL "
                                                   "expression over `value`, e.g. 'value >= 300'")
    options: Options = Field(default_factory=dict,
                                                 description="NVCRE options as for --option KEY=VALUE "
                                                             "(e.g. gpusPerNode: 8)")
    nodeSelector: Labels = Field(default_factory=dict, description="Label selector of the nodes to certify")
    schedule: Text | None = Field(None, description="Cron schedule of a certifying CronJob, e.g. '0 3 * * 0'; "
                                                   "absent: no CronJob")
    postChange: bool = Field(False, description="Certify after every change the deployer applies "
                                                "(Argo CD PostSync hook, Flux dependent Kustomization)")


class Breaker(_Strict):
    """NVSentinel circuit breaker: stop cordoning past these bounds (absent: upstream defaults)."""

    percentage: int | None = Field(None, ge=1, le=100, description="Most nodes cordoned, in percent (default 50)")
    duration: Text | None = Field(None, description="Window of the breaker, a Go duration such as 5m (default 5m)")
    maxNodes: int | None = Field(None, ge=1, le=limits.MAX_NODES,
                                 description="Most nodes cordoned, absolute (default: no bound)")


class Sentinel(_Strict):
    """NVSentinel operation (``aicr-gen sentinel values``)."""

    mode: Literal["monitor", "quarantine"] = Field(
        "monitor", description="monitor: detect and report only; quarantine: cordon and taint faulty nodes")
    rules: PathText | None = Field(None, description="File of extra fault-quarantine rule sets (YAML list or "
                                                 "ruleSets:), relative to the spec's folder")
    breaker: Breaker | None = Field(None, description="Circuit breaker bounds")
    lifecycle: bool = Field(False, description="Enable the lifecycle manager (scheduling gate)")
    validation: bool = Field(False, description="Enable post-remediation validation")
    dryRun: bool = Field(False, description="global.dryRun: log actions without taking them")
    ruleSetPools: Annotated[dict[NonEmpty, Annotated[list[DnsLabel], Field(max_length=limits.MAX_POOLS)]],
                            Field(max_length=limits.MAX_ENTRIES)] = Field(
        default_factory=dict, description="Rule set name (an upstream default or one of spec.sentinel.rules) -> "
                                          "the spec.pools it is limited to: a Node rule matching the pools' "
                                          "nodeSelectors is added to its match.all")


class Snapshot(_Strict):
    """Cluster snapshots for drift detection (``aicr-gen snapshot --agent-cronjob``, ``aicr-gen diff``)."""

    schedule: Text = Field(DEFAULT_SNAPSHOT_SCHEDULE, description="Cron schedule of the snapshot agent CronJob")
    configmap: Annotated[Text, Field(pattern=r"^cm://")] = Field( description="Where the agent stores snapshots: cm://NAMESPACE/NAME")
    baseline: PathText | None = Field(None, description="Golden snapshot file in the repository to diff against")
    context: NonEmpty | None = Field(None, description="Kubeconfig context through which aicr-gen diff --fleet reads "
                                                       "the configmap (absent: the context named like the cluster, "
                                                       "metadata.name)")


class Rollout(_Strict):
    """A progressive sync of the fleet's ApplicationSet (Argo CD RollingSync): the clusters whose
    ``metadata.labels[label]`` is the first value sync first, the next value's once those are healthy, ..."""

    label: DnsLabel = Field(description="Cluster label (metadata.labels) that orders the rollout, e.g. stage")
    order: Annotated[list[Annotated[LabelValue, Field(min_length=1)]], Field(max_length=limits.MAX_ITEMS)] = Field(
        min_length=1, description="Label values in rollout order, e.g. [canary, prod]; every cluster of the "
                                  "ApplicationSet must have one (Argo CD never syncs a cluster no step selects)")
    maxUpdate: (Annotated[int, Field(ge=0, le=limits.MAX_NODES)]
                | Annotated[str, Field(pattern=r"^(100|[1-9]?[0-9])%$")] | None) = Field(
        None, description="Most clusters of a step syncing at once: a number or a percentage (absent: all of the "
                          "step's; 0 waits for a manual sync)")


class ArgoCD(_Strict):
    """Where Argo CD deploys the cluster and which Argo CD holds its Applications (argocd, argocd-helm)."""

    shared: bool | None = Field(None, description="One Argo CD holds several clusters' Applications: every Argo CD "
                                                  "object of this cluster is named <cluster>-... (the root "
                                                  "<cluster>-aicr-stack); absent: true when a destination is given, "
                                                  "else false")
    destinationServer: Url | None = Field(None, description="API server URL of the cluster as Argo CD knows it "
                                                                 "(absent: in-cluster); not with destinationName")
    destinationName: NonEmpty | None = Field(None, description="Name of the cluster registered in Argo CD; not with "
                                                               "destinationServer")
    namespace: DnsLabel = Field("argocd", description="Namespace of the Argo CD holding the Applications")
    project: Subdomain = Field("default", description="Argo CD project of the Applications")
    rollout: Rollout | None = Field(None, description="Progressive sync of the fleet's ApplicationSet (aicr-gen "
                                                      "fleet entry); absent: all clusters at once")

    def is_shared(self) -> bool:
        """Whether the Argo CD holds other clusters' Applications too (``shared``, else implied by a destination)."""
        if self.shared is not None:
            return self.shared
        return self.destinationServer is not None or self.destinationName is not None


class KubeConfigRef(_Strict):
    """A Secret holding a kubeconfig (Flux ``spec.kubeConfig.secretRef``)."""

    name: DnsLabel = Field(description="Secret name, in the cluster's namespace on the hub")
    key: SecretKey | None = Field(None, description="Key holding the kubeconfig (absent: value or value.yaml)")


class FluxSettings(_Strict):
    """Which Flux applies the cluster's flux tree (flux deployer; ``aicr-gen fleet entry`` writes its entry)."""

    hub: DnsLabel | None = Field(None, description="The cluster whose Flux applies this cluster's tree remotely "
                                                   "(hub and spoke); absent: the cluster's own Flux")
    kubeConfigSecret: KubeConfigRef | None = Field(None, description="Kubeconfig Secret of this cluster on the hub "
                                                                     "(needed with hub)")


class Mirror(_Strict):
    """A site mirror for air-gapped clusters: every chart source and image reference of the tree is rewritten to
    it (``aicr-gen mirror list`` says what to push where)."""

    charts: Annotated[str, Field(pattern=r"^oci://[^/\s]+(/[^\s]*)?$")] | None = Field(
        None, description="OCI registry folder the charts are pulled from, oci://HOST[:PORT]/PATH; chart NAME is "
                          "read from oci://HOST/PATH/NAME:VERSION (helm push NAME-VERSION.tgz oci://HOST/PATH); "
                          "absent: the charts' own repositories")
    images: NonEmpty | None = Field(
        None, description="Registry prefix the images are pulled from, HOST[:PORT][/PATH]; an image keeps its "
                          "repository path under it (nvcr.io/nvidia/driver -> HOST/PATH/nvidia/driver); absent: the "
                          "images' own registries")


class Pool(_Strict):
    """One GPU node pool of a cluster with several (``spec.pools``): its accelerator and the nodes it is. Each
    pool resolves its own recipe (the cluster's criteria with this accelerator); ``aicr-gen sync`` merges them
    into one stack with one NVIDIADriver per pool where the GPU Operator owns the driver."""

    name: DnsLabel = Field(description="Pool name: a DNS label, unique in the cluster (names its NVIDIADriver)")
    accelerator: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")] = Field(
        description="GPU type of the pool's nodes (a criteria value, e.g. h100, gb200)")
    nodeSelector: Labels = Field(
        min_length=1, description="Node labels that select exactly this pool's nodes (equality only, as a "
                                  "Kubernetes nodeSelector); two pools' selectors must be disjoint")
    nodes: int | None = Field(None, ge=0, le=limits.MAX_NODES, description="Advisory GPU node count of the pool")
    tolerations: Texts = Field(
        default_factory=list, description="Taints the pool's driver pods tolerate (its NVIDIADriver), key=value:"
                                          "effect, key:effect or '*'; empty: spec.scheduling.acceleratedNode"
                                          "Tolerations, else the GPU Operator's operand tolerations")
    os: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]*$")] | None = Field(
        None, description="Node OS of the pool when it differs from spec.criteria.os")
    versions: Versions = Field(default_factory=dict,
                                          description="Component version pins for this pool's recipe, over "
                                                      "spec.versions (component -> chart version)")
    overrides: Overrides | None = Field(None, description="Component value overrides of this pool's recipe, "
                                                          "e.g. gpu-operator:driver.version=570.195.03 for its "
                                                          "driver; applied before the pools are merged")
    certification: Certification | None = Field(
        None, description="NVCRE certification of this pool alone (its own categories, thresholds, schedule and "
                          "postChange): one Certification named <certification>-<pool> targeting the pool's "
                          "nodeSelector (with spec.certification's and this nodeSelector added); absent: none")
    validationTests: Texts = Field(
        default_factory=list, description="Lifecycle tests of this pool's ValidationRequest template (needs "
                                          "spec.sentinel.lifecycle), e.g. [dcgm-diag-test, nccl-loopback-nvswitch]; "
                                          "empty: the lifecycle config's defaultTests")


class Scheduling(_Strict):
    """Where the stack's pods run and what storage they get, written into each component's registry paths at
    bundle time (AICR's AICRConfig ``spec.bundle.scheduling``, with its names and defaults)."""

    systemNodeSelector: Labels = Field(default_factory=dict, description="Node selector of system pods")
    systemNodeTolerations: Texts = Field(
        default_factory=list, description="Tolerations of system pods, key=value:effect, key:effect or '*' "
                                          "(empty: one wildcard, operator Exists)")
    acceleratedNodeSelector: Labels = Field(default_factory=dict,
                                                         description="Node selector of GPU-node pods")
    acceleratedNodeTolerations: Texts = Field(
        default_factory=list, description="Tolerations of GPU-node pods, key=value:effect, key:effect or '*' "
                                          "(empty: one wildcard, operator Exists)")
    workloadGate: NonEmpty | None = Field(None, description="Taint nodewright-operator requires on new nodes, "
                                                            "key=value:effect or key:effect")
    workloadSelector: Labels = Field(
        default_factory=dict, description="Labels of the training pods nodewright-customizations must not evict")
    nodes: int = Field(0, ge=0, le=limits.MAX_NODES, description="Estimated GPU node count (0: unset)")
    storageClass: Subdomain | None = Field(None, description="StorageClass of the components' volumes")
    sharedStorageClass: Subdomain | None = Field(None, description="RWX StorageClass of shared file systems")


class Spec(_Strict):
    """Everything that makes the cluster."""

    model_config = ConfigDict(json_schema_extra=_fleet_may_fill)

    extends: PathText | None = Field(None, description="A Fleet file holding defaults for this spec (relative POSIX "
                                                  "path from this spec's folder, e.g. ../fleet.yaml): its maps merge "
                                                  "under this spec's, this spec's lists and scalars replace its, "
                                                  "and a null here removes its value")
    criteria: Criteria = Field(description="The recipe criteria (service, accelerator, intent, os, platform, nodes); "
                                           "with spec.pools, the cluster-wide part only (no accelerator)")
    pools: list[Pool] = Field(default_factory=list, max_length=limits.MAX_POOLS,
                              description="GPU node pools of a mixed cluster, each with its accelerator and node "
                                          "selector (disjoint); empty: one accelerator, spec.criteria.accelerator")
    catalogs: Paths = Field(default_factory=list,
                                description="Catalog folders laid out like AICR's recipes/ (later wins), "
                                            "relative to the spec's folder; empty: the embedded catalog")
    deployers: list[Deployer] = Field(min_length=1, description="Bundle deployer(s), each at most once: "
                                                                "helm, argocd, argocd-helm, flux, helmfile")
    repo: Repo = Field(description="Git location of the bundle")
    versions: Versions = Field(default_factory=dict,
                                          description="Component version pins over the catalog's, component -> "
                                                      "chart version (e.g. gpu-operator: v25.10.1)")
    overrides: Overrides | None = Field(None, description="Component value overrides")
    scheduling: Scheduling | None = Field(None, description="Node selectors, tolerations, node count and storage "
                                                            "classes of the stack; absent: AICR's defaults")
    certification: Certification | None = Field(None, description="NVCRE certification; absent: none")
    sentinel: Sentinel | None = Field(None, description="NVSentinel operation; absent: not deployed by aicr-gen")
    snapshot: Snapshot | None = Field(None, description="Snapshot agent and golden baseline; absent: none")
    policies: Paths = Field(default_factory=list,
                                description="Policy files to enforce on the bundle, relative to the spec's folder")
    argocd: ArgoCD | None = Field(None, description="Argo CD destination and sharing; absent: in-cluster, own Argo CD")
    flux: FluxSettings | None = Field(None, description="Hub and spoke Flux; absent: the cluster's own Flux")
    mirror: Mirror | None = Field(None, description="Site mirror of an air-gapped cluster (charts and images); "
                                                    "absent: the upstream registries")
    aicrApiVersion: Literal["aicr.run/v1", "aicr.run/v1alpha2"] = Field(
        "aicr.run/v1", description="Headers of the AICR files written (recipe.yaml): aicr.run/v1, the 1.0 ones "
                                   "(AICR >= 0.22; profiled recipes aicr.run/v1beta2), or aicr.run/v1alpha2 for "
                                   "AICR <= 0.21")


class ClusterSpec(_Strict):
    """A cluster described end to end: recipe, deployment, certification, operation and drift watch."""

    apiVersion: Literal["aicr-gen.dev/v1alpha1"] = Field(description=f"Always {API_VERSION}")
    kind: Literal["ClusterSpec"] = Field(description=f"Always {KIND}")
    metadata: Metadata = Field(description="Name and labels of the cluster")
    spec: Spec = Field(description="The cluster")
    _source: Document | None = PrivateAttr(None)

    def error(self, path: FieldPath, message: str) -> InvalidInputError:
        """An input error at ``path`` in the file the spec was loaded from (``file:line: field.path: message``), or
        at the path alone when it was loaded from none."""
        if self._source is None:
            return InvalidInputError(f"{format_path(path)}: {message}")
        return self._source.error(path, message)

    def line_of(self, dotted: str) -> int | None:
        """The line of a dotted field path (``spec.certification.thresholds``, as policies report them) in the
        file it was written in, or None for a path outside the spec (a recipe's ``componentRefs...``)."""
        found = self.origin(dotted)
        return None if found is None else found[1]

    def origin(self, dotted: str) -> tuple[str, int] | None:
        """``(file, line)`` where a dotted field path was written: the spec's file, or its fleet's for a value
        the spec takes from it; None for a path outside the spec."""
        from aicr_gen.spec.layered import origin_of

        path = tuple(int(part) if part.isdigit() else part for part in dotted.split("."))
        if self._source is None or path[0] not in ("apiVersion", "kind", "metadata", "spec"):
            return None
        found = origin_of(self._source, path)
        return found.source, found.line

    @property
    def document(self) -> Document | None:
        """The (effective) document the spec was validated from."""
        return self._source


# ------------------------------------------------------------------------------------------- loading


def repo_folder(text: str) -> str:
    """``text`` as a folder of the repository: a plain relative path (``check_path``) outside ``.git``;
    anything else is an input error saying what to give."""
    from aicr_gen.bundle import check_path

    try:
        if any(part.lower() == ".git" for part in text.split("/")):
            raise InvalidInputError(".git")
        return check_path(text.removesuffix("/"))
    except InvalidInputError:
        raise InvalidInputError(f"{text!r} must be a relative POSIX path inside the repository, outside .git, "
                                "without '..', '.' or empty parts (e.g. clusters/prod)") from None


def managed_path(cluster: ClusterSpec, override: str | None = None) -> str:
    """The folder the tree lives in: ``--path``, else spec.repo.path (required by the schema)."""
    if override is None:
        return repo_folder(cluster.spec.repo.path)  # checked at load, with its line
    try:
        return repo_folder(override)
    except InvalidInputError as err:
        raise InvalidInputError(f"--path {err}") from None


def references(cluster: ClusterSpec) -> list[tuple[FieldPath, str]]:
    """``(field path, text)`` of every file or folder the spec reads, relative to its folder: spec.extends (its
    fleet), spec.catalogs, spec.policies and spec.sentinel.rules (those from a fleet already rebased)."""
    spec = cluster.spec
    found: list[tuple[FieldPath, str]] = [(("spec", "extends"), spec.extends)] if spec.extends is not None else []
    found += [(("spec", "catalogs", index), text) for index, text in enumerate(spec.catalogs)]
    found += [(("spec", "policies", index), text) for index, text in enumerate(spec.policies)]
    if spec.sentinel is not None and spec.sentinel.rules is not None:
        found.append((("spec", "sentinel", "rules"), spec.sentinel.rules))
    return found


def criteria_values(cluster: ClusterSpec) -> dict[str, str | None]:
    """The spec's criteria as ``recipe``'s command-line values (dimension -> value or None)."""
    from aicr_gen.catalog.vocabulary import DIMENSIONS

    found = cluster.spec.criteria.model_dump()
    return {dim: found.get(dim) for dim in DIMENSIONS}


