"""Readiness gates (``aicr bundle --readiness-hooks``): for each component whose catalog folder holds a
``readiness.yaml`` (a Chainsaw ``Test``), a chart installed after the component whose Job runs AICR's gate CLI
on that test until the component is really ready (e.g. the GPU Operator's ClusterPolicy ``ready``), so the
deployer blocks on it: helm with ``--wait-for-jobs``, Argo CD through the Job's health in a later sync wave.

AICR's rules (8703d8cf, pkg/bundler/readiness.go, pkg/bundler/gatemanifest, pkg/defaults/timeouts.go): the
gate image is ``ghcr.io/nvidia/aicr-gate`` tagged with the AICR version (``dev`` for development builds, else
``v<version>``); the Job may retry 6 times; the gate polls every 10 s, needs 30 s of passing in a row, gives
one Chainsaw run 2 min and itself 90 min; helm waits 95 min for it. The flux and helmfile deployers have no
gates (AICR refuses the flag there).
"""

from __future__ import annotations

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

GATE_REPOSITORY = "ghcr.io/nvidia/aicr-gate"
FILE = "readiness.yaml"
SUFFIX = "-readiness"
DEPLOYERS = ("helm", "argocd", "argocd-helm")
MAX_WAIT_MINUTES = 90
HELM_TIMEOUT = (MAX_WAIT_MINUTES + 5) * 60
"""Seconds helm waits for a gate: its own deadline and a margin, so helm never cuts it short."""
_BACKOFF_LIMIT = 6
_JOB_ANNOTATIONS = {
    "helm": {"helm.sh/hook": "post-install,post-upgrade", "helm.sh/hook-delete-policy": "before-hook-creation"},
    "argocd": {"argocd.argoproj.io/sync-options": "Replace=true"},
    "argocd-helm": {"argocd.argoproj.io/sync-options": "Replace=true"},
}


def gate_image(version: str) -> str:
    """AICR's gate image for the AICR ``version`` a recipe records: ``dev`` for a development build."""
    if not version or version == "dev" or "-next" in version:
        return f"{GATE_REPOSITORY}:dev"
    return f"{GATE_REPOSITORY}:{version if version.startswith('v') else 'v' + version}"


def check_test(component: str, text: bytes) -> None:
    """A readiness gate must be a Chainsaw ``Test``."""
    from aicr_gen.yaml import decode, load_text

    rel = f"components/{component}/{FILE}"
    data = load_text(decode(text, rel), rel).data
    head = data if isinstance(data, dict) else {}
    if "chainsaw.kyverno.io" not in str(head.get("apiVersion", "")) or head.get("kind") != "Test":
        raise InvalidInputError(f"{rel}: a readiness gate is a Chainsaw Test (apiVersion chainsaw.kyverno.io/*, "
                                f"kind Test), not {head.get('apiVersion')!r} {head.get('kind')!r}; fix the file")


def gate_chart(component: str, image: str, test: bytes, deployer: str) -> bytes:
    """The gate's templates (Helm renders the release namespace in): a ServiceAccount that may read the
    cluster, the test in a ConfigMap and the Job that runs the gate on it."""
    from aicr_gen.yaml import dump

    account, bundle = f"{component}{SUFFIX}-gate", f"{component}{SUFFIX}-bundle"
    namespace = "@@namespace@@"
    reads = [{"apiGroups": [""], "resources": ["pods", "nodes", "namespaces", "services", "configmaps", "events"]},
             {"apiGroups": ["apps"], "resources": ["deployments", "daemonsets", "statefulsets", "replicasets"]},
             {"apiGroups": ["batch"], "resources": ["jobs", "cronjobs"]},
             {"apiGroups": ["nvidia.com"], "resources": ["*"]},
             {"apiGroups": ["operators.coreos.com"], "resources": ["clusterserviceversions"]},
             {"apiGroups": ["apiextensions.k8s.io"], "resources": ["customresourcedefinitions"]}]
    role = f"{account}-{namespace}"
    job_metadata: dict[str, Any] = {"name": account, "namespace": namespace}
    if _JOB_ANNOTATIONS.get(deployer):
        job_metadata["annotations"] = _JOB_ANNOTATIONS[deployer]
    documents: list[dict[str, Any]] = [
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": account, "namespace": namespace}},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": role},
         "rules": [{**rule, "verbs": ["get", "list", "watch"]} for rule in reads]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": role},
         "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": bundle, "namespace": namespace},
         "data": {f"{component}.yaml": test.decode("utf-8")}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": job_metadata, "spec": {
            "backoffLimit": _BACKOFF_LIMIT, "template": {"spec": {
                "restartPolicy": "Never", "serviceAccountName": account,
                "containers": [{"name": "gate", "image": image, "imagePullPolicy": "IfNotPresent",
                                "args": ["--bundle-dir=/bundle", f"--namespace={namespace}", "--timeout=2m0s",
                                         "--poll-interval=10s", "--stability-window=30s",
                                         f"--max-wait={MAX_WAIT_MINUTES // 60}h{MAX_WAIT_MINUTES % 60}m0s"],
                                "volumeMounts": [{"name": "bundle", "mountPath": "/bundle", "readOnly": True}]}],
                "volumes": [{"name": "bundle", "configMap": {"name": bundle}}]}}}},
    ]
    from aicr_gen.render.manifest_text import helm_literal

    text = helm_literal("---\n".join(dump(document) for document in documents).encode())
    return text.replace(namespace.encode(), b"{{ .Release.Namespace }}")
