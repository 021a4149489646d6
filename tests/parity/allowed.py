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
    # ocp's prometheus-adapter ClusterRoleBinding reads serviceAccount.name, which the catalog does not set:
    # AICR ships `name: <no value>` (a binding to no ServiceAccount, or under flux a chart helm cannot render);
    # aicr-gen refuses the bundle naming the template and line, and `--set prometheus-adapter-ocp:...` mends it.
    Rule("refused", "aicr-gen refuses a template that reads an unset value (AICR ships <no value>)",
         leaf="ocp-*"),
    # Flux polls the bundle's own Git repository every minute so a commit rolls out promptly, and re-reads an
    # OCI chart, pinned by tag (or digest), hourly; the interval changes when Flux looks, not what it deploys.
    Rule("settings", "flux: source polling intervals (Git 1m, pinned OCI charts 1h)", deployer="flux",
         path="*interval"),
    # aicr-gen's argocd-helm chart lives in the Git repository it is committed to and its parent Application
    # reads it from there; AICR publishes the chart to a registry (`--output oci://`, not in aicr-gen) and
    # points the parent at that. The children, and so every object, are the same.
    Rule("settings", "argocd-helm: the parent Application reads the bundle chart from Git, not a registry",
         deployer="argocd-helm", path="root.s*"),
)

KNOWN_GAPS: tuple[Rule, ...] = ()
