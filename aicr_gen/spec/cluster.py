"""``ClusterSpec`` (``aicr-gen.dev/v1alpha1``): one cluster, end to end, in one reviewed file.

The criteria and catalog layers of its recipe, the deployer(s) and Git location of its bundle, value
overrides, NVCRE certification, NVSentinel operation, snapshot capture and the policies to enforce. The
pydantic models are the contract (and the source of ``aicr-gen schema clusterspec``); ``load_spec`` adds
the checks a JSON Schema cannot express (cron syntax, threshold expressions, ``--set`` syntax, ...),
each reported as ``file:line: field.path: problem``. A spec may take defaults from a Fleet (``spec.extends``):
``load_spec`` validates the layered spec (``spec/fleet.py``), naming the file each offending value came from.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path as FilePath
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr, WithJsonSchema

from aicr_gen import limits
from aicr_gen.catalog.models import Criteria
from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yamlio import Document, Path, format_path

API_VERSION = "aicr-gen.dev/v1alpha1"
KIND = "ClusterSpec"
DEFAULT_SNAPSHOT_SCHEDULE = "0 * * * *"
PLACEHOLDER_URL = "https://replace-me.invalid/your-org/gitops.git"
"""What ``spec init`` writes as spec.repo.url: on the reserved ``.invalid`` domain (RFC 2606), which never
resolves, so ``lint`` and ``sync`` refuse it (and any other ``.invalid`` URL) until it is replaced."""

Deployer = Literal["helm", "argocd", "argocd-helm", "flux", "helmfile"]
DnsLabel = Annotated[str, Field(pattern=r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", max_length=63)]
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


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)


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

    def where(self, path: Path) -> str:
        """``file:line: field.path`` of ``path`` in the file the spec was loaded from (the path alone if none)."""
        return self._source.where(path) if self._source is not None else format_path(path)

    def error(self, path: Path, message: str) -> InvalidInputError:
        """An input error at ``path`` (``where``)."""
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
        from aicr_gen.spec.fleet import origin_of

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


def _at(doc: Document, path: Path, check: Callable[[], object]) -> None:
    """Run ``check``; its input error is reported at ``path`` of ``doc``."""
    try:
        check()
    except InvalidInputError as err:
        raise _fail(doc, path, str(err)) from None


def _fail(doc: Document, path: Path, message: str) -> InvalidInputError:
    """An input error at ``path`` of ``doc``: ``file:line: field.path: message``."""
    return doc.error(path, message)


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


def _relative(doc: Document, path: Path, text: str) -> None:
    _at(doc, path, lambda: repo_folder(text))


def _option_text(value: str | int | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def certification_options(cert: Certification, where: Callable[[str], str]) -> dict[str, Any]:
    """spec.certification.options as NVCRE's typed option tree (``where(key)`` names a bad one)."""
    from aicr_gen.certify import nvcre

    options: dict[str, Any] = {}
    for key, value in cert.options.items():
        option_path, typed = nvcre.parse_option(key, _option_text(value), where(key))
        nvcre.set_option(options, option_path, typed, where(key))
    return options


def check_certification(doc: Document, cert: Certification, base: Path = ("spec", "certification")) -> None:
    """spec.certification (or a pool's, at ``base``): categories, thresholds, options and schedule."""
    from aicr_gen.certify import nvcre, thresholds
    from aicr_gen.text.cron import check_schedule

    entries = []
    for index, name in enumerate(cert.categories):
        if name in cert.categories[:index]:
            raise _fail(doc, (*base, "categories", index), f"category {name!r} is listed twice; list it once")
        entries.append(nvcre.category(name, doc.where((*base, "categories", index))))
    for key, expression in cert.thresholds.items():  # each refused at its own key
        _at(doc, (*base, "thresholds", key), partial(thresholds.compile_thresholds, {key: expression}, "threshold"))
    options = certification_options(cert, lambda key: doc.where((*base, "options", key)))
    if options:
        nvcre.check_global_options(entries, options, doc.where((*base, "options")))
    if cert.schedule is not None:
        schedule = cert.schedule
        _at(doc, (*base, "schedule"), lambda: check_schedule(schedule, repr(schedule)))
    if (cert.schedule is not None or cert.postChange) and not cert.categories:
        raise _fail(doc, (*base, "categories"), "a schedule or postChange certifies with categories; list at least "
                                                "one, e.g. communication/nccl-all-reduce")
    if cert.thresholds and not cert.categories:  # no category, no Certification: render_tree drops them
        raise _fail(doc, (*base, "thresholds"), "thresholds apply to the certification's categories, and it lists "
                                                "none, so nothing uses them; list the categories they are for (e.g. "
                                                "communication/nccl-all-reduce) or drop the field")


def _check_sentinel(doc: Document, sentinel: Sentinel) -> None:
    from aicr_gen.sentinel.values import MAX_WINDOW_SECONDS, duration_seconds

    if sentinel.rules is not None and not sentinel.rules.strip():
        raise _fail(doc, ("spec", "sentinel", "rules"), "give a rule-set file path or drop the field")
    if sentinel.mode == "monitor":
        acting = [name for name, on in (("rules", sentinel.rules is not None),
                                        ("ruleSetPools", bool(sentinel.ruleSetPools)),
                                        ("lifecycle", sentinel.lifecycle), ("validation", sentinel.validation),
                                        ("breaker", sentinel.breaker is not None))
                  if on]
        if acting:
            raise _fail(doc, ("spec", "sentinel", acting[0]), "configures actions, and monitor mode takes none; set "
                                                              "spec.sentinel.mode: quarantine or drop the field")
    if sentinel.validation and not sentinel.lifecycle:
        raise _fail(doc, ("spec", "sentinel", "validation"), "needs lifecycle: true (the lifecycle manager runs the "
                                                             "validation tests and lifts the cordon when they pass)")
    duration = sentinel.breaker.duration if sentinel.breaker else None
    if duration is not None:
        seconds = duration_seconds(duration)
        if seconds is None or not 0 < seconds <= MAX_WINDOW_SECONDS:
            raise _fail(doc, ("spec", "sentinel", "breaker", "duration"),
                        f"{duration!r} is not a Go duration between 0 and 24h; e.g. 5m or 1h30m")


def _check_snapshot(doc: Document, snapshot: Snapshot) -> None:
    from aicr_gen.drift.snapshot import parse_cm_source
    from aicr_gen.text.cron import check_schedule

    _at(doc, ("spec", "snapshot", "schedule"), lambda: check_schedule(snapshot.schedule, repr(snapshot.schedule)))
    _at(doc, ("spec", "snapshot", "configmap"), lambda: parse_cm_source(snapshot.configmap))
    if snapshot.baseline is not None:
        _relative(doc, ("spec", "snapshot", "baseline"), snapshot.baseline)


def _check_argocd(doc: Document, argocd: ArgoCD) -> None:
    base: Path = ("spec", "argocd")
    if argocd.destinationServer is not None and argocd.destinationName is not None:
        raise _fail(doc, (*base, "destinationName"), "the destination is already given by destinationServer; give "
                                                    "the API server URL or the registered cluster name, not both")
    server = argocd.destinationServer
    if server is not None and not re.match(r"^https?://[^/\s]+", server):
        raise _fail(doc, (*base, "destinationServer"), f"{server!r} is not an API server URL; give it as Argo CD's "
                                                      "cluster list shows it, e.g. https://10.0.0.1:6443")
    rollout = argocd.rollout
    if rollout is not None:
        for index, value in enumerate(rollout.order):
            if value in rollout.order[:index]:
                raise _fail(doc, (*base, "rollout", "order", index), f"{value!r} is listed twice; list each once")


def _check_flux(doc: Document, cluster: ClusterSpec, flux: FluxSettings) -> None:
    base: Path = ("spec", "flux")
    if (flux.hub is None) != (flux.kubeConfigSecret is None):
        given, missing = ("hub", "kubeConfigSecret") if flux.hub is not None else ("kubeConfigSecret", "hub")
        raise _fail(doc, (*base, given), f"a hub reaches its spokes through their kubeconfig Secrets; give "
                                         f"{missing} too, or neither (the cluster's own Flux)")
    if flux.hub == cluster.metadata.name:
        raise _fail(doc, (*base, "hub"), "names this cluster; its own Flux applies its tree without hub")


def _check_mirror(doc: Document, mirror: Mirror) -> None:
    from aicr_gen.mirror.rewrite import chart_mirror
    from aicr_gen.text.image_reference import parse_mirror_prefix

    if mirror.charts is None and mirror.images is None:
        raise _fail(doc, ("spec", "mirror"), "names no mirror; give charts: oci://HOST/PATH and/or images: "
                                             "HOST/PATH, or drop the field")
    if mirror.charts is not None:
        charts = mirror.charts
        _at(doc, ("spec", "mirror", "charts"), lambda: chart_mirror(charts))
    if mirror.images is not None:
        images = mirror.images
        _at(doc, ("spec", "mirror", "images"), lambda: parse_mirror_prefix(images))


def reserved_host(url: str) -> bool:
    """Whether ``url`` (https://, ssh:// or scp-like git@host:path) names a host on the ``.invalid`` domain."""
    match = re.match(r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]*@)?\[?([^/:\]]+)", url.strip(), re.IGNORECASE)
    host = match.group(1).lower().rstrip(".") if match else ""
    return host == "invalid" or host.endswith(".invalid")


def scheduling_of(given: Scheduling | None, where: Callable[..., str]) -> Any:
    """spec.scheduling as the renderer's ``Scheduling``; ``where(field, index)`` names a bad entry."""
    from aicr_gen.render import scheduling

    if given is None:
        return scheduling.Scheduling()

    def tolerations(field: str, items: list[str]) -> Any:
        for index, item in enumerate(items):
            try:
                scheduling.parse_tolerations("toleration", [item])
            except InvalidInputError as err:
                raise InvalidInputError(f"{where(field, index)}: {err}") from None
        return scheduling.parse_tolerations(field, items)

    try:
        gate = scheduling.parse_taint("workloadGate", given.workloadGate or "")
    except InvalidInputError as err:
        raise InvalidInputError(f"{where('workloadGate')}: {err}") from None
    return scheduling.Scheduling(
        system_node_selector=tuple(given.systemNodeSelector.items()),
        system_tolerations=tolerations("systemNodeTolerations", given.systemNodeTolerations),
        accelerated_node_selector=tuple(given.acceleratedNodeSelector.items()),
        accelerated_tolerations=tolerations("acceleratedNodeTolerations", given.acceleratedNodeTolerations),
        workload_gate=gate, workload_selector=tuple(given.workloadSelector.items()), nodes=given.nodes,
        storage_class=given.storageClass or "", shared_storage_class=given.sharedStorageClass or "")


def check_semantics(doc: Document, cluster: ClusterSpec, *, template: bool = False) -> None:
    """The checks beyond the schema; the first problem is an input error naming file, line and field. A
    ``template`` (what ``spec init`` writes) may keep the placeholder repository URL."""
    from aicr_gen.render.values import parse

    spec = cluster.spec
    for index, deployer in enumerate(spec.deployers):
        if deployer in spec.deployers[:index]:
            raise _fail(doc, ("spec", "deployers", index), f"deployer {deployer!r} is listed twice; list it once")
    _relative(doc, ("spec", "repo", "path"), spec.repo.path)
    if spec.overrides is not None:
        for field, flag in (("set", "--set"), ("setJson", "--set-json")):
            texts: list[str] = getattr(spec.overrides, field)
            for index, text in enumerate(texts):
                try:
                    parse(flag, text)
                except InvalidInputError as err:
                    raise _fail(doc, ("spec", "overrides", field, index), str(err)) from None
    if spec.scheduling is not None:
        scheduling_of(spec.scheduling, lambda *path: doc.where(("spec", "scheduling", *path)))
    if spec.certification is not None:
        check_certification(doc, spec.certification)
        if spec.certification.nodeSelector and not spec.certification.categories and \
                not any(pool.certification for pool in spec.pools):  # no Certification targets it
            raise _fail(doc, ("spec", "certification", "nodeSelector"), "selects the nodes the certification's "
                        "categories run on, and no category is listed (nor does a pool certify, whose target it "
                        "narrows), so nothing uses it; list the categories or drop the field")
    if spec.sentinel is not None:
        _check_sentinel(doc, spec.sentinel)
        if spec.sentinel.ruleSetPools and not spec.pools:
            raise _fail(doc, ("spec", "sentinel", "ruleSetPools"), "limits rule sets to pools, and the spec has no "
                                                                   "spec.pools; define the pools or drop the field")
    if spec.snapshot is not None:
        _check_snapshot(doc, spec.snapshot)
    if spec.argocd is not None:
        _check_argocd(doc, spec.argocd)
    if spec.flux is not None:
        _check_flux(doc, cluster, spec.flux)
    if spec.mirror is not None:
        _check_mirror(doc, spec.mirror)
    if spec.pools:
        from aicr_gen.gitops.pools import check_pools

        check_pools(doc, spec)
    for field in ("catalogs", "policies"):
        for index, text in enumerate(getattr(spec, field)):
            if not text.strip():
                raise _fail(doc, ("spec", field, index), "an empty path; give a file or folder path")
    if not template and reserved_host(spec.repo.url):
        raise _fail(doc, ("spec", "repo", "url"),
                    f"{spec.repo.url!r} is a placeholder (.invalid never resolves); set the URL of your GitOps "
                    "repository, which Argo CD and Flux pull, e.g. https://github.com/ORG/gitops.git")


def references(cluster: ClusterSpec) -> list[tuple[Path, str]]:
    """``(field path, text)`` of every file or folder the spec reads, relative to its folder: spec.extends (its
    fleet), spec.catalogs, spec.policies and spec.sentinel.rules (those from a fleet already rebased)."""
    spec = cluster.spec
    found: list[tuple[Path, str]] = [(("spec", "extends"), spec.extends)] if spec.extends is not None else []
    found += [(("spec", "catalogs", index), text) for index, text in enumerate(spec.catalogs)]
    found += [(("spec", "policies", index), text) for index, text in enumerate(spec.policies)]
    if spec.sentinel is not None and spec.sentinel.rules is not None:
        found.append((("spec", "sentinel", "rules"), spec.sentinel.rules))
    return found


def check_references(cluster: ClusterSpec, spec_file: FilePath) -> None:
    """The files a spec reads never go through ``.git`` and, for a spec inside a Git work tree, stay inside
    it (symlinks resolved): what a pull request's spec may make CI read, render and commit is the
    repository's own files, so every clone renders the same tree. A spec outside any repository may name
    any file of its machine."""
    check_paths(references(cluster), cluster.error, spec_file, "spec")


def check_paths(found: list[tuple[Path, str]], error: Callable[[Path, str], InvalidInputError], file: FilePath,
                what: str) -> None:
    """``check_references`` for the paths ``found`` in ``file`` (a ``what``: spec or fleet), relative to its
    folder; ``error(path, message)`` is the input error about a field path."""
    from aicr_gen.edges.git import work_tree

    base = file.resolve().parent
    root = work_tree(base)
    for path, text in found:
        if any(part.lower() == ".git" for part in FilePath(text).parts):
            raise error(path, f"{text!r} goes through .git; name a file of the work tree instead")
        if root is None:
            continue
        if FilePath(text).is_absolute():
            raise error(path, f"{text!r} is absolute; in a Git repository give a path relative to the {what}'s "
                              f"folder ({base}), inside the repository")
        if not (base / text).resolve().is_relative_to(root):
            raise error(path, f"{text!r} leads out of the Git repository the {what} is in ({root}); keep the files "
                              f"a {what} reads inside it (a path relative to the {what}'s folder), so every clone "
                              "renders the same tree")


def parse_spec(doc: Document, *, template: bool = False) -> ClusterSpec:
    """Validate a loaded document as a ``ClusterSpec`` (schema, then semantics; a ``template`` may keep the
    placeholder repository URL)."""
    from aicr_gen.modelcheck import check

    cluster = check(doc, ClusterSpec)
    check_semantics(doc, cluster, template=template)
    cluster._source = doc
    return cluster


def load_spec(path: str | FilePath) -> ClusterSpec:
    """Read and validate a ClusterSpec file, layered over the Fleet it extends (``fleet.effective``); any
    problem is an ``InvalidInputError`` at ``file:line`` of the file the offending value is in."""
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.yamlio import load_bytes

    source = str(path)
    return spec_of(load_bytes(read_input(source, "ClusterSpec"), source))


def spec_of(doc: Document) -> ClusterSpec:
    """The ClusterSpec of a loaded spec file (``load_spec`` after reading it)."""
    from aicr_gen.spec.fleet import KIND as FLEET
    from aicr_gen.spec.fleet import effective

    if isinstance(doc.data, dict) and doc.data.get("kind") == FLEET:
        raise _fail(doc, ("kind",), f"this file is a {FLEET} (defaults for ClusterSpecs), not a ClusterSpec; give "
                    "the ClusterSpecs that name it in spec.extends (lint takes both)")
    cluster = parse_spec(effective(doc))
    if doc.source != "-":
        check_references(cluster, FilePath(doc.source))
    return cluster


def criteria_values(cluster: ClusterSpec) -> dict[str, str | None]:
    """The spec's criteria as ``recipe``'s command-line values (dimension -> value or None)."""
    from aicr_gen.catalog.vocabulary import DIMENSIONS

    found = cluster.spec.criteria.model_dump()
    return {dim: found.get(dim) for dim in DIMENSIONS}


def check_present(cluster: ClusterSpec, base: FilePath, field: str) -> None:
    """The files or folders the spec names in ``spec.<field>`` (``catalogs``, ``policies`` or ``sentinel``: its
    rules file) exist under ``base`` (its folder); a missing one is an input error at the file, line and field
    that named it (the spec's, or its fleet's for a value it takes from there), before anything reads it."""
    for path, text in references(cluster):
        found = base / text
        folder = field == "catalogs"
        if path[1] != field or (found.is_dir() if folder else found.is_file()):
            continue
        written = cluster.origin(".".join(str(part) for part in path))
        message = (f"{'catalog folder' if folder else 'file'} {text!r} not found ({found}); create it or fix the "
                   "path (relative to the spec's folder)")
        raise InvalidInputError.at(Located(*written, message, path)) if written else cluster.error(path, message)


def open_spec_catalog(cluster: ClusterSpec, base: FilePath | None = None) -> Any:
    """The spec's catalog: its layers (relative to ``base``, the spec's folder; a missing one named at its line)
    or the embedded one."""
    from aicr_gen.commands.recipe import open_catalog

    check_present(cluster, base or FilePath.cwd(), "catalogs")
    return open_catalog([str((base or FilePath.cwd()) / folder) for folder in cluster.spec.catalogs])


def resolve_spec(cluster: ClusterSpec, base: FilePath | None = None, catalog: Any = None) -> dict[str, Any]:
    """Resolve the spec's recipe from ``catalog`` (default: ``open_spec_catalog``); with spec.pools, the pools'
    recipes merged (``gitops.pools.resolve_pools``)."""
    from aicr_gen.resolve import recipe

    if catalog is None:
        catalog = open_spec_catalog(cluster, base)
    if cluster.spec.pools:
        from aicr_gen.gitops.pools import resolve_pools

        return resolve_pools(cluster, base, catalog).merged
    try:
        query = recipe.query_for(catalog, criteria_values(cluster))
        result: dict[str, Any] = recipe.resolve(catalog, query,
                                                recipe.Options(nodes=cluster.spec.criteria.nodes or 0))
    except InvalidInputError as err:
        raise cluster.error(("spec", "criteria"), str(err)) from None
    return pin_versions(cluster, result)


def pin_versions(cluster: ClusterSpec, resolved: dict[str, Any]) -> dict[str, Any]:
    """``resolved`` with the spec's version pins (spec.versions) applied to its componentRefs; a pin naming a
    component the recipe does not have is an input error listing the ones it has."""
    if not cluster.spec.versions:
        return resolved
    return pinned(resolved, cluster.spec.versions, lambda name: cluster.where(("spec", "versions", name)),
                  "the recipe")


def pinned(resolved: dict[str, Any], versions: Mapping[str, str], where: Callable[[str], str],
           recipe: str) -> dict[str, Any]:
    """``resolved`` with ``versions`` (component -> version) applied to its componentRefs; a pin naming a
    component ``recipe`` does not have is an input error at ``where(name)`` listing the ones it has."""
    refs = resolved.get("componentRefs", [])
    names = sorted(str(ref.get("name")) for ref in refs)
    for name in versions:
        if name not in names:
            raise InvalidInputError(f"{where(name)}: {recipe} has no component {name!r}; pin one of "
                                    f"{', '.join(names)}")
    return {**resolved, "componentRefs": [{**ref, "version": versions[ref["name"]]} if ref.get("name") in versions
                                          else ref for ref in refs]}
