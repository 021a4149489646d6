"""Apply a committed ``sync`` tree to a real API server the way its controller would, and list every refusal.

What is real: the API server (schemas, CRD validation, namespace admission, RBAC), the CRDs of Argo CD, Flux,
the GPU Operator and NVSentinel from ``../shared/reference``, ``helm template`` (helm 3 of ``scripts/tools.sh``),
``kubectl kustomize``, and server-side apply with ``fieldValidation=Strict`` under the controller's field
manager. What is emulated, because nothing here can fetch a remote chart or repository:

- a source outside our repository (a Helm or OCI chart, another Git repository) is not rendered; only the
  namespace its Application (``CreateNamespace=true``) or HelmRelease (``install.createNamespace``) creates is;
- a kind that only such a remote chart would install (say ``Gateway`` from the gateway-api chart) gets a
  schemaless stand-in CRD, so the API server still checks its metadata and namespace; each stand-in is listed
  in ``Outcome.emulated``. Kinds whose real CRDs we have never get a stand-in.

Argo CD (``argocd/``): the app-of-apps is applied into ``argocd``, its directory source (recurse, include,
exclude) is rendered and applied, then every child Application in sync-wave order: its destination namespace
created when ``CreateNamespace=true``, each of its sources in our repository rendered (a local chart with
``helm template`` and its value files, a ``kustomization.yaml`` with ``kubectl kustomize``, else the folder's
manifests) and applied, namespaceless namespaced objects going to the destination namespace; inside one
Application, Namespaces and CRDs first, then by resource sync wave, hooks in PreSync, Sync, PostSync order.

Flux (``flux/``): ``kubectl kustomize flux/`` applied into ``flux-system``, then every HelmRelease and
Kustomization as their dependencies are done (``dependsOn``, the same kind only, as Flux does; objects a
Kustomization applies can be new HelmReleases and Kustomizations): a HelmRelease's ``targetNamespace`` created
with ``install.createNamespace``, its chart rendered when it comes from our GitRepository; a Kustomization on our
GitRepository built (its ``kustomization.yaml``, else every manifest below the path) and applied with its
``targetNamespace``. A namespaced object with neither a namespace nor a ``targetNamespace`` is refused, as
kustomize-controller refuses it.
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import http.client
import json
import ssl
import subprocess
import tempfile
import time
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.cluster.envtest import ADMIN_TOKEN, ControlPlane, no_proxy_env
from tests.conftest import REFERENCE, tool, use_reference

CRDS = [
    "crds/argo-cd/application-crd.yaml", "crds/argo-cd/applicationset-crd.yaml", "crds/argo-cd/appproject-crd.yaml",
    "crds/flux-helm-controller/helm.toolkit.fluxcd.io_helmreleases.yaml",
    "crds/flux-kustomize-controller/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
    *(f"crds/flux-source-controller/source.toolkit.fluxcd.io_{name}.yaml"
      for name in ("buckets", "externalartifacts", "gitrepositories", "helmcharts", "helmrepositories",
                   "ocirepositories")),
    "crds/gpu-operator/nvidia.com_clusterpolicies.yaml", "crds/gpu-operator/nvidia.com_nvidiadrivers.yaml",
    "nvsentinel/distros/kubernetes/nvsentinel/charts/lifecycle-manager/crds/nvsentinel.nvidia.com_validationrequests.yaml",
]
"""The real CRDs installed before a tree is applied (as Argo CD's and Flux's installations would)."""

AGGREGATED_DISCOVERY = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"
ARGOCD_MANAGER = "argocd-controller"
FLUX_MANAGER = "kustomize-controller"
HELM_MANAGER = "helm-controller"
MANIFEST_SUFFIXES = (".yaml", ".yml", ".json")
_PHASES = {"PreSync": 0, "Sync": 1, "PostSync": 2}
"""Argo CD's sync phases in order; hooks of other phases (Skip, SyncFail, PreDelete, PostDelete) are not applied."""
_HELM_HOOKS = {"pre-install": "PreSync", "pre-upgrade": "PreSync", "post-install": "PostSync",
               "post-upgrade": "PostSync"}
"""Helm hooks of a chart Argo CD renders, as the phases it maps them to (others, like test, are not synced)."""
_FIRST_KINDS = {"Namespace": 0, "CustomResourceDefinition": 1}


@dataclass
class Outcome:
    """What applying a tree did: each object as ``Kind namespace/name``."""

    applied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    emulated: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)


class Refused(Exception):
    """An object the controller could not apply."""


class Api:
    """Raw calls to the control plane as its admin (discovery, server-side apply, reads)."""

    def __init__(self, plane: ControlPlane) -> None:
        self.address = urllib.parse.urlsplit(plane.server)
        self.context = ssl.create_default_context(cafile=str(plane.ca_file))
        self.connection = http.client.HTTPSConnection(str(self.address.hostname), self.address.port,
                                                      context=self.context, timeout=30)
        self.resources: dict[tuple[str, str], tuple[str, bool]] = {}

    def call(self, method: str, path: str, body: Any = None, content_type: str = "application/json",
             accept: str = "application/json") -> Any:
        """One request on the kept-alive connection; an error answer is ``Refused`` with the server's message."""
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Accept": accept,
                   "Content-Type": content_type}
        for _ in range(100):  # 429 while a new CRD's storage initialises: controllers retry, so does this
            self.connection.request(method, path, None if body is None else json.dumps(body).encode(), headers)
            answer = self.connection.getresponse()
            payload = answer.read()
            if answer.status != 429:
                break
            time.sleep(0.1)
        if answer.status >= 400:
            detail = payload.decode("utf-8", "replace")
            with contextlib.suppress(ValueError):
                detail = json.loads(detail).get("message", detail)
            raise Refused(f"HTTP {answer.status}: {detail}")
        return json.loads(payload or b"null")

    def discover(self) -> None:
        """Every served kind, from the aggregated discovery documents (two requests)."""
        self.resources.clear()
        for root in ("/api", "/apis"):
            listing = self.call("GET", root, accept=AGGREGATED_DISCOVERY)
            for group in listing.get("items") or []:
                name = group["metadata"].get("name", "")
                for version in group.get("versions") or []:
                    api_version = f"{name}/{version['version']}" if name else version["version"]
                    for resource in version.get("resources") or []:
                        kind = (resource.get("responseKind") or {}).get("kind")
                        if kind:
                            self.resources[(api_version, kind)] = (resource["resource"],
                                                                   resource.get("scope") == "Namespaced")

    def resource(self, api_version: str, kind: str) -> tuple[str, bool] | None:
        """``(plural, namespaced)`` of a served kind (discovery is refreshed once on a miss)."""
        if (api_version, kind) not in self.resources:
            self.discover()
        return self.resources.get((api_version, kind))

    def path(self, api_version: str, plural: str, namespace: str | None, name: str | None = None) -> str:
        base = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
        scoped = f"{base}/namespaces/{urllib.parse.quote(namespace)}/{plural}" if namespace else f"{base}/{plural}"
        return f"{scoped}/{urllib.parse.quote(name)}" if name else scoped

    def apply(self, obj: Mapping[str, Any], manager: str) -> dict[str, Any]:
        """Server-side apply (strict field validation, conflicts forced as controllers do)."""
        found = self.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
        if found is None:
            raise Refused(f"no kind {obj.get('kind')} in {obj.get('apiVersion')} is served")
        plural, namespaced = found
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") if namespaced else None
        if namespaced and not namespace:
            raise Refused("namespaced object without a namespace")
        query = urllib.parse.urlencode({"fieldManager": manager, "force": "true", "fieldValidation": "Strict"})
        path = self.path(str(obj["apiVersion"]), plural, namespace, str(meta.get("name")))
        answer: dict[str, Any] = self.call("PATCH", f"{path}?{query}", obj, "application/apply-patch+yaml")
        return answer

    def items(self, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
        found = self.resource(api_version, kind)
        assert found is not None, f"{kind} is not served"
        items: list[dict[str, Any]] = self.call("GET", self.path(api_version, found[0], namespace))["items"]
        return items

    def exists(self, api_version: str, kind: str, name: str, namespace: str | None = None) -> bool:
        found = self.resource(api_version, kind)
        if found is None:
            return False
        try:
            self.call("GET", self.path(api_version, found[0], namespace if found[1] else None, name))
        except Refused:
            return False
        return True


@functools.cache
def real_crds() -> tuple[dict[str, Any], ...]:
    texts = [use_reference(REFERENCE / rel).read_text(encoding="utf-8") for rel in CRDS]
    return tuple(doc for text in texts for doc in yaml.load_all(text, Loader=yaml.CSafeLoader) if doc)


def service_account_can(api: Api, namespace: str, account: str, verb: str, resource: str, *, group: str = "",
                        in_namespace: str | None = None, name: str = "") -> bool:
    """What the real RBAC authorizer answers for the ServiceAccount (with the groups its tokens carry)."""
    attributes = {"verb": verb, "resource": resource, "group": group,
                  **({"namespace": in_namespace} if in_namespace else {}), **({"name": name} if name else {})}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": f"system:serviceaccount:{namespace}:{account}",
                       "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}",
                                  "system:authenticated"],
                       "resourceAttributes": attributes}}
    answer = api.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    return bool(answer["status"].get("allowed"))


def install_crds(api: Api) -> None:
    """The real CRDs of every controller a tree talks to; waits until each is served."""
    documents = real_crds()
    for crd in documents:
        api.apply(crd, "aicr-gen-tests")
    wanted = {(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
              for crd in documents for version in crd["spec"]["versions"] if version.get("served", True)}
    for _ in range(300):
        api.discover()
        if wanted <= set(api.resources):
            return
        time.sleep(0.05)
    raise AssertionError(f"CRDs not served: {sorted(wanted - set(api.resources))}")


def describe(obj: Mapping[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    where = f"{meta['namespace']}/" if meta.get("namespace") else ""
    return f"{obj.get('kind')} {where}{meta.get('name')}"


# ------------------------------------------------------------------------------------------ rendering


def load_manifests(text: str) -> list[dict[str, Any]]:
    """The objects of a multi-document YAML stream (Lists unpacked, empty documents dropped)."""
    objects: list[dict[str, Any]] = []
    for doc in yaml.load_all(text, Loader=yaml.CSafeLoader):
        if isinstance(doc, dict) and doc.get("kind") == "List":
            objects += [item for item in doc.get("items") or [] if isinstance(item, dict)]
        elif isinstance(doc, dict):
            objects.append(doc)
    return objects


def _run(*args: str, cwd: Path | None = None) -> str:
    done = subprocess.run(list(args), capture_output=True, text=True, check=False, cwd=cwd, env=no_proxy_env(),
                          timeout=120)
    if done.returncode != 0:
        raise Refused(f"{Path(args[0]).name} {' '.join(args[1:3])} failed: {done.stderr.strip()}")
    return done.stdout


def kustomize(folder: Path) -> list[dict[str, Any]]:
    return load_manifests(_run(tool("kubectl"), "kustomize", str(folder)))


def helm_template(chart: Path, release: str, namespace: str, value_files: Iterable[Path],
                  values: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """``helm template`` as Argo CD and helm-controller render a chart (CRDs included)."""
    from tests.consumers import tool_path

    args = [str(tool_path("helm3")), "template", release, str(chart), f"--namespace={namespace}", "--include-crds"]
    args += [f"--values={file}" for file in value_files]
    with tempfile.NamedTemporaryFile("w", suffix=".yaml", encoding="utf-8") as inline:
        if values:
            inline.write(json.dumps(dict(values)))
            inline.flush()
            args.append(f"--values={inline.name}")
        return load_manifests(_run(*args))


def folder_manifests(folder: Path, recurse: bool, include: str = "", exclude: str = "") -> list[dict[str, Any]]:
    """A directory source: every manifest file (below ``folder`` with ``recurse``) matching include/exclude,
    globs over the path relative to the folder in which ``*`` also crosses ``/`` (as Argo CD matches them)."""
    files = sorted(folder.rglob("*") if recurse else folder.glob("*"))
    objects: list[dict[str, Any]] = []
    for file in files:
        rel = file.relative_to(folder).as_posix()
        if not file.is_file() or not rel.endswith(MANIFEST_SUFFIXES):
            continue
        if include and not any(fnmatch.fnmatchcase(rel, glob) for glob in _globs(include)):
            continue
        if exclude and any(fnmatch.fnmatchcase(rel, glob) for glob in _globs(exclude)):
            continue
        objects += load_manifests(file.read_text(encoding="utf-8"))
    return objects


def _globs(text: str) -> list[str]:
    inner = text[1:-1] if text.startswith("{") and text.endswith("}") else text
    return [part.strip() for part in inner.split(",") if part.strip()]


def _phase(obj: Mapping[str, Any]) -> str | None:
    """The sync phase an object is applied in (None: a hook Argo CD does not run when syncing)."""
    annotations = (obj.get("metadata") or {}).get("annotations") or {}
    if "argocd.argoproj.io/hook" in annotations:
        named = [part.strip() for part in str(annotations["argocd.argoproj.io/hook"]).split(",")]
    elif "helm.sh/hook" in annotations:
        named = [_HELM_HOOKS.get(part.strip(), "") for part in str(annotations["helm.sh/hook"]).split(",")]
    else:
        return "Sync"
    return min((phase for phase in named if phase in _PHASES), key=_PHASES.__getitem__, default=None)


def _order(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Argo CD's order: phase, then sync wave, then kind (Namespaces and CRDs first), then name; hooks that do not
    run on a sync are left out."""
    def key(obj: dict[str, Any]) -> tuple[int, int, int, str]:
        meta = obj.get("metadata") or {}
        annotations = meta.get("annotations") or {}
        wave = int(annotations.get("argocd.argoproj.io/sync-wave", annotations.get("helm.sh/hook-weight", "0")))
        return (_PHASES[str(_phase(obj))], wave, _FIRST_KINDS.get(str(obj.get("kind")), 2), str(meta.get("name")))
    return sorted((obj for obj in objects if _phase(obj) is not None), key=key)


# ------------------------------------------------------------------------------------------ the applier


class Converger:
    """Applies sources of one repository checkout to the control plane, recording every outcome."""

    def __init__(self, plane: ControlPlane, checkout: Path, repo_url: str) -> None:
        self.api = Api(plane)
        self.checkout = checkout
        self.repo_url = repo_url
        self.outcome = Outcome()
        self.api.discover()
        missing = sorted({(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                          for crd in real_crds() for version in crd["spec"]["versions"]} - set(self.api.resources))
        assert not missing, f"install the CRDs first (install_crds): {missing} are not served"
        self.served_groups = {api_version.rpartition("/")[0] for api_version, _ in self.api.resources}

    def ours(self, url: str) -> bool:
        return url.rstrip("/") == self.repo_url.rstrip("/")

    def namespace(self, name: str, why: str) -> None:
        if not self.api.exists("v1", "Namespace", name):
            self.api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}, why)
            self.outcome.namespaces.append(name)

    def stand_in(self, obj: Mapping[str, Any], namespace: str | None) -> None:
        """A schemaless CRD for a kind of a group nothing serves yet: one only a remote chart would install
        (namespaced when the object names a namespace). A missing kind of a served group stays a refusal."""
        group, _, version = str(obj["apiVersion"]).rpartition("/")
        kind = str(obj["kind"])
        if not group or group in self.served_groups:
            return
        plural = kind.lower() if kind.lower().endswith("s") else kind.lower() + "s"
        scope = "Namespaced" if (obj.get("metadata") or {}).get("namespace") or namespace else "Cluster"
        # groups under k8s.io (gateway-api) need the API-review annotation their real CRDs carry
        approval = {"api-approved.kubernetes.io": "unapproved, a test stand-in"} if group.endswith(".k8s.io") else {}
        crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
               "metadata": {"name": f"{plural}.{group}", "annotations": approval},
               "spec": {"group": group, "scope": scope,
                        "names": {"kind": kind, "plural": plural, "singular": kind.lower(), "listKind": f"{kind}List"},
                        "versions": [{"name": version, "served": True, "storage": True,
                                      "schema": {"openAPIV3Schema": {"type": "object",
                                                                     "x-kubernetes-preserve-unknown-fields": True}}}]}}
        self.api.apply(crd, "aicr-gen-tests")
        for _ in range(300):
            if self.api.resource(str(obj["apiVersion"]), kind) is not None:
                break
            time.sleep(0.05)
        self.outcome.emulated.append(f"stand-in CRD {plural}.{group} ({kind}, {scope})")

    def apply_all(self, objects: list[dict[str, Any]], namespace: str | None, manager: str,
                  source: str) -> bool:
        """Apply in controller order; namespaceless namespaced objects go to ``namespace`` (``force``: a
        ``targetNamespace`` that overrides theirs). True when nothing was refused."""
        clean = True
        for obj in _order(objects):
            try:
                if self.api.resource(str(obj.get("apiVersion")), str(obj.get("kind"))) is None:
                    self.stand_in(obj, namespace)
                found = self.api.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
                meta = obj.setdefault("metadata", {})
                if found is not None and found[1] and namespace and not meta.get("namespace"):
                    meta["namespace"] = namespace
                self.api.apply(obj, manager)
                self.outcome.applied.append(describe(obj))
            except Refused as err:
                clean = False
                self.outcome.refused.append(f"{describe(obj)} (from {source}): {err}")
        return clean

    def repo_folder(self, path: str) -> Path:
        folder = (self.checkout / path.removeprefix("./")).resolve()
        assert folder.is_relative_to(self.checkout.resolve()), path
        return folder


# ------------------------------------------------------------------------------------------ Argo CD


def _sync_options(app: Mapping[str, Any]) -> list[str]:
    return list(((app.get("spec") or {}).get("syncPolicy") or {}).get("syncOptions") or [])


def _argocd_source(run: Converger, app: Mapping[str, Any], source: Mapping[str, Any],
                   refs: Mapping[str, Path]) -> list[dict[str, Any]] | None:
    """The objects of one source in our repository (None: a remote source, emulated)."""
    if not run.ours(str(source.get("repoURL"))) or ("ref" in source and "path" not in source):
        return None
    folder = run.repo_folder(str(source.get("path", ".")))
    destination = app["spec"]["destination"]
    if (folder / "Chart.yaml").is_file():
        helm = source.get("helm") or {}
        files = []
        for value_file in helm.get("valueFiles") or []:
            ref, slash, rest = str(value_file).partition("/")
            if ref.startswith("$") and slash and ref[1:] not in refs:
                raise Refused(f"valueFiles {value_file}: no source of this repository has ref {ref[1:]!r}")
            files.append(refs[ref[1:]] / rest if ref.startswith("$") and slash else folder / value_file)
        values = helm.get("valuesObject") or (yaml.safe_load(helm["values"]) if helm.get("values") else None)
        return helm_template(folder, str(helm.get("releaseName") or app["metadata"]["name"]),
                             str(destination.get("namespace") or "default"), files, values)
    if (folder / "kustomization.yaml").is_file():
        objects = kustomize(folder)
        common = (source.get("kustomize") or {}).get("commonAnnotations") or {}
        for obj in objects:  # as Argo CD's `kustomize edit add annotation` before the build
            meta = obj.setdefault("metadata", {})
            meta["annotations"] = {**(meta.get("annotations") or {}), **common}
        return objects
    directory = source.get("directory") or {}
    return folder_manifests(folder, bool(directory.get("recurse")), str(directory.get("include") or ""),
                            str(directory.get("exclude") or ""))


def sync_application(run: Converger, app: dict[str, Any]) -> None:
    """One Argo CD sync of ``app``."""
    name = app["metadata"]["name"]
    spec = app["spec"]
    if not run.api.exists("argoproj.io/v1alpha1", "AppProject", str(spec.get("project")), "argocd"):
        run.outcome.refused.append(f"Application {name}: project {spec.get('project')!r} does not exist")
        return
    destination = spec.get("destination") or {}
    namespace = destination.get("namespace")
    if "CreateNamespace=true" in _sync_options(app) and namespace:
        run.namespace(str(namespace), ARGOCD_MANAGER)
    sources = spec.get("sources") or [spec["source"]]
    refs = {str(src["ref"]): run.checkout for src in sources if src.get("ref") and run.ours(str(src.get("repoURL")))}
    for source in sources:
        label = f"Application {name} source {source.get('repoURL')} {source.get('path') or source.get('chart', '')}"
        try:
            objects = _argocd_source(run, app, source, refs)
        except Refused as err:
            run.outcome.refused.append(f"{label}: {err}")
            continue
        if objects is None:
            if not source.get("ref"):
                run.outcome.emulated.append(f"{label}: remote, only its namespace {namespace} emulated")
            continue
        run.apply_all(objects, str(namespace) if namespace else None, ARGOCD_MANAGER, label)


def _wave(app: Mapping[str, Any]) -> int:
    return int(((app.get("metadata") or {}).get("annotations") or {}).get("argocd.argoproj.io/sync-wave", "0"))


def converge_argocd(plane: ControlPlane, checkout: Path, bundle: str, repo_url: str) -> Outcome:
    """Apply ``bundle`` (the argocd folder of the checkout) as Argo CD would."""
    run = Converger(plane, checkout, repo_url)
    run.namespace("argocd", "argocd-install")
    # what an Argo CD installation creates: the default project, allowing everything
    run.api.apply({"apiVersion": "argoproj.io/v1alpha1", "kind": "AppProject",
                   "metadata": {"name": "default", "namespace": "argocd"},
                   "spec": {"sourceRepos": ["*"], "destinations": [{"server": "*", "namespace": "*"}],
                            "clusterResourceWhitelist": [{"group": "*", "kind": "*"}]}}, "argocd-install")
    root = load_manifests((run.repo_folder(bundle) / "app-of-apps.yaml").read_text(encoding="utf-8"))
    run.apply_all(root, "argocd", "kubectl-client-side-apply", "app-of-apps.yaml")
    synced: set[str] = set()
    for parent in root:
        sync_application(run, parent)
        synced.add(parent["metadata"]["name"])
    while True:
        pending = [app for app in run.api.items("argoproj.io/v1alpha1", "Application", "argocd")
                   if app["metadata"]["name"] not in synced]
        if not pending:
            return run.outcome
        app = min(pending, key=lambda item: (_wave(item), item["metadata"]["name"]))
        sync_application(run, app)
        synced.add(app["metadata"]["name"])


# ------------------------------------------------------------------------------------------ Flux


def _flux_build(run: Converger, path: str) -> list[dict[str, Any]]:
    folder = run.repo_folder(path)
    if (folder / "kustomization.yaml").is_file():
        return kustomize(folder)
    return folder_manifests(folder, recurse=True)


def _our_sources(run: Converger) -> set[str]:
    return {item["metadata"]["name"] for item in run.api.items("source.toolkit.fluxcd.io/v1", "GitRepository",
                                                                "flux-system")
            if run.ours(str(item["spec"].get("url")))}


def reconcile_helmrelease(run: Converger, release: Mapping[str, Any], ours: set[str]) -> bool:
    spec = release["spec"]
    namespace = str(spec.get("targetNamespace") or release["metadata"]["namespace"])
    label = f"HelmRelease {release['metadata']['name']}"
    if (spec.get("install") or {}).get("createNamespace"):
        run.namespace(namespace, HELM_MANAGER)
    chart = (spec.get("chart") or {}).get("spec") or {}
    source = chart.get("sourceRef") or spec.get("chartRef") or {}
    if source.get("kind") != "GitRepository" or source.get("name") not in ours:
        url = _flux_source_url(run, source, str(release["metadata"]["namespace"]))
        if url is None:
            run.outcome.refused.append(f"{label}: its source {source.get('kind')} {source.get('name')} does not exist")
            return False
        run.outcome.emulated.append(f"{label}: remote chart {url}, only its namespace {namespace} emulated")
        if run.api.exists("v1", "Namespace", namespace):
            return True
        run.outcome.refused.append(f"{label}: target namespace {namespace} does not exist")
        return False
    if spec.get("valuesFrom"):
        run.outcome.refused.append(f"{label}: valuesFrom is not emulated")
        return False
    folder = run.repo_folder(str(chart["chart"]))
    try:
        objects = helm_template(folder, str(spec.get("releaseName") or release["metadata"]["name"]), namespace,
                                [], spec.get("values"))
    except Refused as err:
        run.outcome.refused.append(f"{label}: {err}")
        return False
    return run.apply_all(objects, namespace, HELM_MANAGER, label)


def _flux_source_url(run: Converger, source: Mapping[str, Any], default_namespace: str) -> str | None:
    """The URL of the Flux source object a HelmRelease or Kustomization names, or None when it does not exist
    (Flux would wait on it forever)."""
    namespace = str(source.get("namespace") or default_namespace)
    found = [item for item in run.api.items("source.toolkit.fluxcd.io/v1", str(source.get("kind")), namespace)
             if item["metadata"]["name"] == source.get("name")] if run.api.resource(
                 "source.toolkit.fluxcd.io/v1", str(source.get("kind"))) else []
    return str(found[0]["spec"].get("url")) if found else None


FluxKey = tuple[str, str]
"""(kind, name) of a HelmRelease or Kustomization in flux-system."""


def reconcile_kustomization(run: Converger, kustomization: Mapping[str, Any],
                            ours: set[str]) -> tuple[bool, list[FluxKey]]:
    """Apply one Kustomization; with ``wait: true`` it is Ready only once the HelmReleases and Kustomizations it
    applied are: those are returned, to wait for."""
    spec = kustomization["spec"]
    label = f"Kustomization {kustomization['metadata']['name']}"
    source = spec.get("sourceRef") or {}
    if source.get("kind") != "GitRepository" or source.get("name") not in ours:
        url = _flux_source_url(run, source, str(kustomization["metadata"]["namespace"]))
        if url is None:
            run.outcome.refused.append(f"{label}: its source {source.get('kind')} {source.get('name')} does not exist")
            return False, []
        run.outcome.emulated.append(f"{label}: remote source {url}, not applied")
        return True, []
    try:
        objects = _flux_build(run, str(spec.get("path") or "./"))
    except Refused as err:
        run.outcome.refused.append(f"{label}: {err}")
        return False, []
    target = spec.get("targetNamespace")
    if target:
        for obj in objects:
            found = run.api.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
            if found is not None and found[1]:
                obj.setdefault("metadata", {})["namespace"] = target
    children = [(str(obj["kind"]), str(obj["metadata"]["name"])) for obj in objects
                if obj.get("kind") in ("HelmRelease", "Kustomization")] if spec.get("wait") else []
    return run.apply_all(objects, None, FLUX_MANAGER, label), children


def _flux_objects(run: Converger) -> dict[FluxKey, dict[str, Any]]:
    return {(kind, item["metadata"]["name"]): item
            for api_version, kind in (("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
                                      ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"))
            for item in run.api.items(api_version, kind, "flux-system")}


def converge_flux(plane: ControlPlane, checkout: Path, bundle: str, repo_url: str) -> Outcome:
    """Apply ``bundle`` (the flux folder of the checkout) as Flux would, from the flux-system Kustomization:
    each object once every ``dependsOn`` entry is Ready (reconciled, and for a waiting Kustomization everything
    it applied Ready too)."""
    run = Converger(plane, checkout, repo_url)
    run.namespace("flux-system", "flux-install")
    # the flux-system Kustomization has no targetNamespace: every namespaced object must name its namespace
    run.apply_all(kustomize(run.repo_folder(bundle)), None, FLUX_MANAGER, f"kubectl kustomize {bundle}")
    reconciled: dict[FluxKey, bool] = {}
    children: dict[FluxKey, list[FluxKey]] = {}

    def state(key: FluxKey) -> bool | None:
        """True: Ready; False: failed; None: not yet."""
        if key not in reconciled:
            return None
        if not reconciled[key]:
            return False
        waits = [state(child) for child in children.get(key, [])]
        return False if False in waits else None if None in waits else True

    while True:
        objects = _flux_objects(run)
        ours = _our_sources(run)
        progress = False
        for key in sorted(set(objects) - set(reconciled)):
            deps = [(key[0], dep["name"]) for dep in objects[key]["spec"].get("dependsOn") or []]
            states = [state(dep) for dep in deps]
            if None in states:
                continue
            progress = True
            if False in states:
                failed = [dep[1] for dep, ok in zip(deps, states, strict=True) if ok is False]
                run.outcome.refused.append(f"{key[0]} {key[1]}: blocked by failed dependencies {failed}")
                reconciled[key] = False
            elif key[0] == "HelmRelease":
                reconciled[key] = reconcile_helmrelease(run, objects[key], ours)
            else:
                reconciled[key], children[key] = reconcile_kustomization(run, objects[key], ours)
        if not progress:
            for key in sorted(set(objects) - set(reconciled)):
                deps = [dep["name"] for dep in objects[key]["spec"].get("dependsOn") or []]
                run.outcome.refused.append(f"{key[0]} {key[1]}: dependsOn {deps} never became Ready")
            missing = sorted({child for kids in children.values() for child in kids} - set(objects))
            run.outcome.refused += [f"{kind} {name}: applied but never found" for kind, name in missing]
            return run.outcome
