"""Which differences from AICR's bundles are accepted, and why.

``ALLOWED``: deliberate differences; each says why aicr-gen differs on purpose. ``KNOWN_GAPS``: differences
that are bugs to fix, each naming its issue 23 item; the list must shrink: a gap that no longer occurs
anywhere fails ``test_every_rule_still_matches``, so fixing one means deleting its entry here.

Files (bundle-info.yaml, recipe.yaml, checksums, READMEs) are never compared: the harness compares what
is deployed, so aicr-gen's extra files need no entry. Fields are globs (see ``compare.Rule``); ``?``
stands for a bracket of a path (``labels?"helm.sh/chart"?``), as ``[`` opens a character class in a glob.
"""

from __future__ import annotations

from tests.parity.compare import Rule

ALLOWED: tuple[Rule, ...] = (
    # Flux: an OCI chart is an OCIRepository (chartRef) rather than a HelmRepository of type oci: Flux
    # recommends OCIRepository for OCI charts (digest pinning, layer selection). Same chart, repository and
    # version: only the source object's kind and shape differ.
    Rule("settings", "flux: OCI charts come from an OCIRepository", deployer="flux",
         path="source.kind"),
    Rule("settings", "flux: OCI charts come from an OCIRepository", deployer="flux",
         path="source.type"),
    Rule("settings", "flux: OCI charts come from an OCIRepository", deployer="flux",
         path="source.layerSelector*"),
    # A chart in the Git repository reconciles on every commit that changes it, not only on a Chart.yaml
    # version bump (which aicr-gen's wrapper charts never make): values and templates edits must roll out.
    Rule("settings", "flux: local charts reconcile by Git revision", deployer="flux",
         path="source.chart.reconcileStrategy"),
    # Argo CD's native OCI source (repoURL oci://.../chart, path ".") for OCI charts: same chart, repository
    # and version as AICR's Helm-OCI form.
    Rule("settings", "argocd: OCI charts use Argo CD's native OCI source", deployer="argocd*",
         path="sourceKind"),
)

KNOWN_GAPS: tuple[Rule, ...] = (
    Rule("refused", "issue 23: AICR refuses a wildcard accelerated-node toleration for nodewright on AKS "
                    "(NVIDIA/nodewright#296); aicr-gen bundles it", leaf="*-aks-*"),
    Rule("units", "issue 23: GKE aicr-gke-critical-pods ResourceQuota (AICR's gpu-operator-pre unit)",
         unit="gpu-operator-pre", leaf="*-gke-*"),
    Rule("hooks", "issue 23: AICR strips helm.sh/hook annotations from local charts; aicr-gen keeps them"),
    Rule("scheduling", "issue 23: AICR injects node scheduling (default accelerated toleration "
                       "[{operator: Exists}] into the registry's nodeScheduling paths); aicr-gen does not"),
    Rule("objects", "issue 23: node scheduling injected into local chart values (kubeflow-trainer-post, "
                    "agentgateway-post tolerations)", path="*tolerations*"),
    Rule("values", "issue 23: agentgateway allowedSourceRanges private-range default", unit="agentgateway",
         path="values.allowedSourceRanges"),
    Rule("objects", "issue 23: agentgateway allowedSourceRanges private-range default (its Service)",
         unit="agentgateway-post", path="*loadBalancerSourceRanges*"),
    Rule("values", "issue 23: DRA driver aicr.run/gpu-operator-chart-version pod annotation",
         unit="nvidia-dra-driver-gpu*", path="values.*.podAnnotations*aicr.run/gpu-operator-chart-version*"),
    Rule("settings", "issue 23: helmfile disableValidation for charts with self-referencing CRDs or "
                     "manifests using the chart's CRDs", deployer="helmfile", path="disableValidation"),
    Rule("settings", "issue 23: async components (kai-scheduler) installed without --wait, 20m timeout",
         unit="kai-scheduler", deployer="helm*", path="wait"),
    Rule("settings", "issue 23: async components (kai-scheduler) installed without --wait, 20m timeout",
         unit="kai-scheduler", deployer="helm*", path="timeout"),
    Rule("settings", "issue 23: Argo CD root Application name nvidia-stack (aicr-gen: aicr-stack)",
         deployer="argocd", path="root.name"),
    # found by this harness, beyond the list
    Rule("settings", "parity: helm --force-conflicts on helm 4 (AICR adds it; server-side apply conflicts "
                     "on operator-owned fields)", deployer="helm", path="force_conflicts"),
    Rule("settings", "parity: deploy.sh retries (AICR 5 retries, 1 for kai-scheduler and readiness gates; "
                     "aicr-gen 2)", deployer="helm", path="retries"),
    Rule("chart", "parity: flux chart version without the leading v (AICR: 1.20.2; aicr-gen: v1.20.2)",
         deployer="flux", path="version"),
    Rule("release", "parity: flux release name and storage namespace (AICR leaves Flux's defaults: "
                    "<targetNamespace>-<name>, stored in flux-system; aicr-gen sets releaseName and "
                    "storageNamespace)", deployer="flux", path="release"),
    Rule("settings", "parity: flux storageNamespace (see the release name gap)", deployer="flux",
         path="storageNamespace"),
    Rule("settings", "parity: flux HelmRelease timeout (AICR: Flux's default 5m; aicr-gen 10m)",
         deployer="flux", path="timeout"),
    Rule("settings", "parity: flux install/upgrade remediation retries (aicr-gen sets 3, AICR none)",
         deployer="flux", path="install*"),
    Rule("settings", "parity: flux install/upgrade remediation retries (aicr-gen sets 3, AICR none)",
         deployer="flux", path="upgrade*"),
    Rule("settings", "parity: flux source intervals (AICR: HelmRepository 10m, chart 5m, GitRepository 10m; "
                     "aicr-gen: OCIRepository 1h, GitRepository 1m)", deployer="flux", path="*interval"),
    Rule("settings", "parity: argocd-helm root Application (AICR: the bundle chart from a chart repository "
                     "at the chart version, CreateNamespace/ServerSideApply; aicr-gen: path '.' of the Git "
                     "repository)", deployer="argocd-helm", path="root.s*"),
    Rule("objects", "parity: local charts labelled with AICR's chart name and version (helm.sh/chart)",
         path='*.metadata.labels?"helm.sh/chart"?'),
    Rule("objects", "parity: gpu-operator-pre kernel module parameters end in a newline (aicr-gen) or not",
         unit="gpu-operator-pre", path='*nvidia-kernel-module-params*.data?"nvidia.conf"?'),
    Rule("objects", "parity: OpenShift dcgm-exporter metrics ConfigMap starts with an empty line (aicr-gen)",
         unit="gpu-operator-ocp", path='*dcgm-exporter*.data?"dcgm-metrics.csv"?'),
    Rule("render", "parity: prometheus-adapter-ocp-post fails helm template (serviceAccount.name of a nil "
                   "map in templates/rbac.yaml)", unit="prometheus-adapter-ocp-post"),
)
