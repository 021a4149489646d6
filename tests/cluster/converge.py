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
exclude) is rendered and applied, then every child Application in sync-wave order: each of its sources in our
repository rendered (a local chart with ``helm template`` and its value files, a ``kustomization.yaml`` with
``kubectl kustomize``, else the folder's manifests), its destination namespace created when
``CreateNamespace=true``, then one sync of everything its sources render (``hooks.py`` says which object is a hook
and why): PreSync, Sync, PostSync, each wave by wave and inside a wave by kind then name, namespaceless namespaced
objects going to the destination namespace. The sync stops at the first wave with a refusal (then HookFailed hooks
are deleted and SyncFail hooks run); hooks are created as their phase comes (the one a previous sync left deleted
first with BeforeHookCreation, the default) and after a successful sync those with HookSucceeded are deleted. Helm
test hooks, PreDelete/PostDelete and Skip objects are never applied (``Outcome.skipped``). An Application whose sources
are all ours and render only hooks, or nothing, applies nothing in Argo CD: it is refused, naming its hooks.

Flux (``flux/``): ``kubectl kustomize flux/`` applied into ``flux-system``, then every HelmRelease and
Kustomization as their dependencies are done (``dependsOn``, the same kind only, as Flux does; objects a
Kustomization applies can be new HelmReleases and Kustomizations): a HelmRelease's ``targetNamespace`` created
with ``install.createNamespace``, its chart rendered when it comes from our GitRepository and installed (upgraded
once it has a revision) as Helm does: ``pre-`` hooks one by one in weight order, the release's objects in Helm's
kind order, ``post-`` hooks, delete policies (before-hook-creation by default), test hooks only with
``spec.test.enable``; a Kustomization on our GitRepository built (its ``kustomization.yaml``, else every manifest
below the path) and applied with its ``targetNamespace``, hook annotations meaning nothing to it. A namespaced object
with neither a namespace nor a ``targetNamespace`` is refused, as kustomize-controller refuses it.

A hook succeeds here when the API server accepts it: nothing runs a Job or Pod.
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

from tests.cluster import hooks
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
_FIRST_KINDS = {"Namespace": 0, "CustomResourceDefinition": 1}


@dataclass
class Outcome:
    """What applying a tree did: each object as ``Kind namespace/name``."""

    applied: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    emulated: list[str] = field(default_factory=list)
    namespaces: list[str] = field(default_factory=list)
    hooks: list[str] = field(default_factory=list)
    """Hooks created (each also in ``applied``), in the order they ran."""
    deleted: list[str] = field(default_factory=list)
    """Hooks deleted by their delete policy, with the policy."""
    skipped: list[str] = field(default_factory=list)
    """Rendered objects the controller never applies (test hooks, Skip, delete hooks, disabled hooks), with why."""


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

    def apply(self, obj: Mapping[str, Any], manager: str, *, dry_run: bool = False) -> dict[str, Any]:
        """Server-side apply (strict field validation, conflicts forced as controllers do); ``dry_run``: validated
        and admitted, not stored (Argo CD's dry run of a sync)."""
        found = self.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
        if found is None:
            raise Refused(f"no kind {obj.get('kind')} in {obj.get('apiVersion')} is served")
        plural, namespaced = found
        meta = obj.get("metadata") or {}
        namespace = meta.get("namespace") if namespaced else None
        if namespaced and not namespace:
            raise Refused("namespaced object without a namespace")
        query = urllib.parse.urlencode({"fieldManager": manager, "force": "true", "fieldValidation": "Strict",
                                        **({"dryRun": "All"} if dry_run else {})})
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


def first_kinds(objects: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Namespaces and CRDs first, the rest in rendered order: how ``kubectl apply`` of ``kustomize build`` output
    and kustomize-controller (which knows no hooks: a ``helm.sh/hook`` annotation is just an annotation there)
    order what they apply."""
    return sorted(objects, key=lambda obj: _FIRST_KINDS.get(str(obj.get("kind")), 2))


# ------------------------------------------------------------------------------------------ the applier


class Checkout:
    """A clone of our repository, as a controller reads it."""

    def __init__(self, checkout: Path, repo_url: str) -> None:
        self.checkout = checkout
        self.repo_url = repo_url

    def ours(self, url: str) -> bool:
        return url.rstrip("/") == self.repo_url.rstrip("/")

    def repo_folder(self, path: str) -> Path:
        folder = (self.checkout / path.removeprefix("./")).resolve()
        assert folder.is_relative_to(self.checkout.resolve()), path
        return folder


class Converger(Checkout):
    """Applies sources of one repository checkout to the control plane, recording every outcome."""

    def __init__(self, plane: ControlPlane, checkout: Path, repo_url: str) -> None:
        super().__init__(checkout, repo_url)
        self.api = Api(plane)
        self.outcome = Outcome()
        self.api.discover()
        missing = sorted({(f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
                          for crd in real_crds() for version in crd["spec"]["versions"]} - set(self.api.resources))
        assert not missing, f"install the CRDs first (install_crds): {missing} are not served"
        self.served_groups = {api_version.rpartition("/")[0] for api_version, _ in self.api.resources}

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

    def place(self, obj: dict[str, Any], namespace: str | None) -> None:
        """A namespaceless namespaced object goes to ``namespace``; a kind nothing serves gets its stand-in."""
        if self.api.resource(str(obj.get("apiVersion")), str(obj.get("kind"))) is None:
            self.stand_in(obj, namespace)
        found = self.api.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
        meta = obj.setdefault("metadata", {})
        if found is not None and found[1] and namespace and not meta.get("namespace"):
            meta["namespace"] = namespace

    def apply_one(self, obj: dict[str, Any], namespace: str | None, manager: str, source: str) -> bool:
        """Server-side apply of one object; False (and the refusal recorded) when the API server refuses it."""
        try:
            self.place(obj, namespace)
            self.api.apply(obj, manager)
        except Refused as err:
            self.outcome.refused.append(f"{describe(obj)} (from {source}): {err}")
            return False
        self.outcome.applied.append(describe(obj))
        return True

    def apply_all(self, objects: list[dict[str, Any]], namespace: str | None, manager: str,
                  source: str) -> bool:
        """Apply in the given order; namespaceless namespaced objects go to ``namespace``. True when nothing was
        refused."""
        results = [self.apply_one(obj, namespace, manager, source) for obj in objects]
        return all(results)

    def delete(self, obj: Mapping[str, Any], why: str) -> None:
        """Delete a hook the way both controllers do (background propagation) and wait until it is gone."""
        found = self.api.resource(str(obj.get("apiVersion")), str(obj.get("kind")))
        meta = obj.get("metadata") or {}

        def exists() -> bool:
            return self.api.exists(str(obj["apiVersion"]), str(obj["kind"]), str(meta.get("name")),
                                   meta.get("namespace"))
        if found is None or not exists():
            return
        path = self.api.path(str(obj["apiVersion"]), found[0], meta.get("namespace") if found[1] else None,
                             str(meta.get("name")))
        with contextlib.suppress(Refused):  # gone meanwhile
            self.api.call("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions",
                                           "propagationPolicy": "Background"})
        for _ in range(200):
            if not exists():
                self.outcome.deleted.append(f"{describe(obj)} ({why})")
                return
            time.sleep(0.05)
        self.outcome.refused.append(f"{describe(obj)}: still present 10s after its {why} deletion")

    def run_hook(self, obj: dict[str, Any], namespace: str | None, manager: str, source: str,
                 recreate: bool) -> bool:
        """Create one hook; ``recreate``: delete the one a previous operation left first (before-hook-creation).
        Both controllers then apply it (Argo CD: helm.md "hooks are created by using kubectl apply"; Helm 4 creates
        hooks with server-side apply, pkg/kube/client.go Create, which helm-controller enables by default,
        internal/action/install.go newInstall), so a hook left in place without that policy is updated, not
        refused."""
        try:
            self.place(obj, namespace)
        except Refused as err:
            self.outcome.refused.append(f"{describe(obj)} (from {source}): {err}")
            return False
        if recreate:
            self.delete(obj, "before-hook-creation")
        if not self.apply_one(obj, namespace, manager, source):
            return False
        self.outcome.hooks.append(describe(obj))
        return True


# ------------------------------------------------------------------------------------------ Argo CD


def _sync_options(app: Mapping[str, Any]) -> list[str]:
    return list(((app.get("spec") or {}).get("syncPolicy") or {}).get("syncOptions") or [])


def _argocd_source(run: Checkout, app: Mapping[str, Any], source: Mapping[str, Any],
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


@dataclass
class Rendered:
    """What an Application's sources in our repository render, each object with the source it came from."""

    objects: list[dict[str, Any]] = field(default_factory=list)
    sources: dict[int, str] = field(default_factory=dict)
    remote: list[str] = field(default_factory=list)
    """The sources outside our repository, which nothing here renders."""


def render_application(repo: Checkout, app: Mapping[str, Any]) -> Rendered:
    """Every source of ``app``, rendered as the repo-server would; a source that fails to render is ``Refused``:
    the Application then has a ComparisonError and no sync starts."""
    spec = app["spec"]
    sources = spec.get("sources") or [spec["source"]]
    refs = {str(src["ref"]): repo.checkout for src in sources if src.get("ref") and repo.ours(str(src.get("repoURL")))}
    rendered = Rendered()
    for source in sources:
        label = f"Application {app['metadata']['name']} source {source.get('repoURL')} " \
                f"{source.get('path') or source.get('chart', '')}"
        try:
            objects = _argocd_source(repo, app, source, refs)
        except Refused as err:
            raise Refused(f"{label}: {err}") from err
        if objects is None:
            if not source.get("ref"):
                rendered.remote.append(label)
            continue
        rendered.objects += objects
        rendered.sources.update({id(obj): label for obj in objects})
    return rendered


def applies_nothing(app: Mapping[str, Any], rendered: Rendered, plan: hooks.SyncPlan) -> str | None:
    """Why an Application whose sources are all ours never applies anything, or None.

    Hooks are no managed resources: they never make an Application OutOfSync (argo-cd controller/state.go
    CompareAppState), automated sync starts only for an OutOfSync Application (controller/appcontroller.go
    autoSync: "Skipping auto-sync: application status is Synced"), and hooks are created only during a sync
    operation. So an Application rendering only hooks, or nothing, is Synced from the start and its hooks never run
    (argo-cd issue #7237, open since v2.1)."""
    if rendered.remote or plan.resources:
        return None
    name = app["metadata"]["name"]
    if not rendered.objects:
        return f"Application {name} applies nothing: its sources render no objects"
    namespace = (app["spec"].get("destination") or {}).get("namespace")
    never = {id(obj): why for obj, why in plan.never}

    def named(obj: Mapping[str, Any]) -> str:
        meta = obj.get("metadata") or {}
        where = meta.get("namespace") or namespace
        text = f"{obj.get('kind')} {where + '/' if where else ''}{meta.get('name') or meta.get('generateName')}"
        return f"{text} ({never[id(obj)]})" if id(obj) in never else text
    return (f"Application {name} applies nothing: every object it renders is a hook, which never makes it OutOfSync, "
            f"so no sync ever creates them (argo-cd#7237): {', '.join(named(obj) for obj in rendered.objects)}")


def empty_applications(checkout: Path, repo_url: str) -> list[str]:
    """Every Argo CD Application anywhere in the checkout (of ``repo_url``) that applies nothing, with why; no API
    server needed (``helm`` and ``kubectl kustomize`` render its sources). One whose sources fail to render is
    listed too."""
    repo = Checkout(checkout, repo_url)
    found: list[str] = []
    for file in sorted(checkout.rglob("*")):
        if not file.is_file() or not file.name.endswith(MANIFEST_SUFFIXES):
            continue
        try:
            objects = load_manifests(file.read_text(encoding="utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError):  # a chart's Go templates are no YAML
            continue
        for app in objects:
            if app.get("kind") != "Application" or not str(app.get("apiVersion")).startswith("argoproj.io/") \
                    or not isinstance(app.get("spec"), dict):
                continue
            where = file.relative_to(checkout).as_posix()
            try:
                rendered = render_application(repo, app)
            except Refused as err:
                found.append(f"{where}: {err}")
                continue
            why = applies_nothing(app, rendered, hooks.argocd_plan(rendered.objects))
            if why:
                found.append(f"{where}: {why}")
    return found


def assert_no_empty_applications(checkout: Path, repo_url: str) -> None:
    """No Application of a synced tree may apply nothing (see ``applies_nothing``)."""
    empty = empty_applications(checkout, repo_url)
    assert not empty, "Applications that apply nothing:\n" + "\n".join(empty)


def sync_application(run: Converger, app: dict[str, Any]) -> None:
    """One Argo CD sync of ``app``: its sources rendered together, then the sync phases (PreSync, Sync, PostSync)
    wave by wave, hooks created as their phase comes and deleted as their policies say."""
    name = app["metadata"]["name"]
    spec = app["spec"]
    if not run.api.exists("argoproj.io/v1alpha1", "AppProject", str(spec.get("project")), "argocd"):
        run.outcome.refused.append(f"Application {name}: project {spec.get('project')!r} does not exist")
        return
    try:
        rendered = render_application(run, app)
    except Refused as err:
        run.outcome.refused.append(str(err))
        return
    run.outcome.emulated += [f"{label}: remote, only its namespace {spec['destination'].get('namespace')} emulated"
                             for label in rendered.remote]
    plan = hooks.argocd_plan(rendered.objects, started=int(time.time()))
    empty = applies_nothing(app, rendered, plan)
    if empty:
        run.outcome.refused.append(empty)
        return
    namespace = (spec.get("destination") or {}).get("namespace")
    if "CreateNamespace=true" in _sync_options(app) and namespace:
        run.namespace(str(namespace), ARGOCD_MANAGER)
    run.outcome.skipped += [f"{describe(obj)} (Application {name}): {why}" for obj, why in plan.never]
    _argocd_sync(run, f"Application {name}", plan, str(namespace) if namespace else None, rendered.sources)


def _argocd_sync(run: Converger, label: str, plan: hooks.SyncPlan, namespace: str | None,
                 sources: Mapping[int, str]) -> None:
    """gitops-engine pkg/sync/sync_context.go Sync: one phase and wave at a time, the next only once every task of
    this one succeeded. After a successful sync the hooks with HookSucceeded are deleted; after a failed one those
    with HookFailed, and the SyncFail hooks run (executeSyncFailPhase)."""
    created: list[hooks.Task] = []

    def run_task(task: hooks.Task) -> bool:
        source = sources.get(task.rendered, label)
        if not task.hook:
            return run.apply_one(task.obj, namespace, ARGOCD_MANAGER, source)
        ok = run.run_hook(task.obj, namespace, ARGOCD_MANAGER, f"{source}, {task.phase} hook",
                          hooks.BEFORE_HOOK_CREATION in task.delete)
        created.append(task)
        return ok

    groups = hooks.waves(plan.tasks)
    for index, group in enumerate(groups):
        results = [run_task(task) for task in group]  # every task of the wave runs, even after a failed one
        if all(results):
            continue
        rest = [describe(task.obj) for later in groups[index + 1:] for task in later]
        run.outcome.refused.append(f"{label}: sync failed in phase {group[0].phase} wave {group[0].wave}"
                                   + (f"; never applied: {', '.join(rest)}" if rest else ""))
        for task in created:
            if hooks.HOOK_FAILED in task.delete:
                run.delete(task.obj, hooks.HOOK_FAILED)
        for task in plan.on_failure:
            run_task(task)
        return
    for task in created:
        if hooks.HOOK_SUCCEEDED in task.delete:
            run.delete(task.obj, hooks.HOOK_SUCCEEDED)


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
    run.apply_all(first_kinds(root), "argocd", "kubectl-client-side-apply", "app-of-apps.yaml")
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
    name = flux_release_name(release)
    try:
        objects = helm_template(run.repo_folder(str(chart["chart"])), name, namespace, [], spec.get("values"))
    except Refused as err:
        run.outcome.refused.append(f"{label}: {err}")
        return False
    return helm_install_or_upgrade(run, release, namespace, objects)


def flux_release_name(release: Mapping[str, Any]) -> str:
    """The Helm release a HelmRelease installs (helm-controller's rules: ``aicr_gen.drift.diff``)."""
    from aicr_gen.drift.diff import flux_release_name as release_name

    spec = release["spec"]
    return release_name(str(release["metadata"]["name"]), str(spec.get("targetNamespace") or ""),
                        str(spec.get("releaseName") or ""))


def helm_install_or_upgrade(run: Converger, release: Mapping[str, Any], namespace: str,
                            objects: list[dict[str, Any]]) -> bool:
    """What helm-controller's Helm does with a rendered chart: an install when the release has no revision yet,
    else an upgrade (each stored revision is a ``sh.helm.release.v1.NAME.vN`` Secret, owner=helm, in the storage
    namespace; only its labels are emulated here). ``pre-`` hooks, then the release's objects in kind order, then
    ``post-`` hooks (helm pkg/action/install.go performInstall, upgrade.go releasingUpgrade), skipped with
    ``spec.install.disableHooks`` / ``spec.upgrade.disableHooks`` (helm-controller internal/action/install.go,
    upgrade.go). Test hooks run only when ``spec.test.enable`` asks for ``helm test`` after a successful release
    (helm-controller internal/reconcile/install.go success, test.go; helm pkg/action/release_testing.go)."""
    spec = release["spec"]
    label = f"HelmRelease {release['metadata']['name']}"
    name = flux_release_name(release)
    storage = str(spec.get("storageNamespace") or release["metadata"]["namespace"])
    chart = hooks.helm_release(objects)
    run.outcome.skipped += [f"{describe(obj)} ({label}): {why}" for obj, why in chart.dropped]
    revisions = [item for item in run.api.items("v1", "Secret", storage)
                 if (item["metadata"].get("labels") or {}).get("owner") == "helm"
                 and item["metadata"]["labels"].get("name") == name]
    action = "upgrade" if revisions else "install"
    enabled = not (spec.get(action) or {}).get("disableHooks")
    if not enabled:
        run.outcome.skipped += [f"{describe(hook.obj)} ({label}): {action}.disableHooks" for hook in chart.hooks
                                if f"pre-{action}" in hook.events or f"post-{action}" in hook.events]
    if enabled and not _helm_hooks(run, label, hooks.helm_hooks(chart, f"pre-{action}"), namespace, f"pre-{action}"):
        return False
    if not run.apply_all(hooks.helm_kind_sorted(chart.manifests), namespace, HELM_MANAGER, label):
        return False
    if enabled and not _helm_hooks(run, label, hooks.helm_hooks(chart, f"post-{action}"), namespace,
                                   f"post-{action}"):
        return False
    version = len(revisions) + 1
    run.api.apply({"apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
                   "metadata": {"name": f"sh.helm.release.v1.{name}.v{version}", "namespace": storage,
                                "labels": {"name": name, "owner": "helm", "status": "deployed",
                                           "version": str(version)}}}, HELM_MANAGER)
    tests = hooks.helm_hooks(chart, "test")
    test = spec.get("test") or {}
    if not test.get("enable"):
        run.outcome.skipped += [f"{describe(hook.obj)} ({label}): a test hook, run only by helm test "
                                "(spec.test.enable)" for hook in tests]
        return True
    return _helm_hooks(run, label, hooks.helm_test_filter(tests, test.get("filters") or []), namespace, "test")


def _helm_hooks(run: Converger, label: str, chosen: list[hooks.HelmHook], namespace: str, event: str) -> bool:
    """helm pkg/action/hooks.go execHookWithDelayedShutdown: each hook in turn (the one a previous run left deleted
    first with before-hook-creation), waited for, the next only once it succeeded. When one fails it is deleted
    with hook-failed, the ones before it with hook-succeeded, and the release fails; when all succeeded they are
    deleted with hook-succeeded, last first."""
    done: list[hooks.HelmHook] = []
    for hook in chosen:
        policies = hooks.helm_delete_policies(hook)
        if not run.run_hook(hook.obj, namespace, HELM_MANAGER, f"{label} {event} hook",
                            "before-hook-creation" in policies):
            if "hook-failed" in policies:
                run.delete(hook.obj, "hook-failed")
            for earlier in done:
                if "hook-succeeded" in hooks.helm_delete_policies(earlier):
                    run.delete(earlier.obj, "hook-succeeded")
            run.outcome.refused.append(f"{label}: {event} hook {describe(hook.obj)} failed")
            return False
        done.append(hook)
    for hook in reversed(done):
        if "hook-succeeded" in hooks.helm_delete_policies(hook):
            run.delete(hook.obj, "hook-succeeded")
    return True


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
    return run.apply_all(first_kinds(objects), None, FLUX_MANAGER, label), children


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
    run.apply_all(first_kinds(kustomize(run.repo_folder(bundle))), None, FLUX_MANAGER, f"kubectl kustomize {bundle}")
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
