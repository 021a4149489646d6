"""What a deployer applies from a committed tree, unit by unit (pure: the tree's files in, ``Release`` values out).

A ``Release`` is one unit a reviewer sees a diff for: an Argo CD Application, a Flux HelmRelease or Kustomization,
or (for the helm, helmfile and argocd-helm deployers, which have no such objects) a component's Helm release. It
names where its objects come from (a chart in a repository, a chart folder in the tree, or plain manifests), the
release name and namespace the deployer installs it under and the values it passes, read as the deployer reads
them:

- **Argo CD** (``argocd/``): every ``application.yaml`` and the root ``app-of-apps.yaml``. A Helm source renders
  its chart (``repoURL`` + ``chart`` + ``targetRevision``) with its ``helm.valueFiles`` (``$values/<repo path>``
  read from the tree) and ``helm.values``; the release is named ``helm.releaseName`` or the Application's name; the
  namespace is ``destination.namespace``. A ``path`` source is a chart folder (it has ``Chart.yaml``), a kustomize
  folder or a directory of manifests (``directory.include``). [Argo CD docs: user-guide/helm.md, "Helm Release
  Name"; user-guide/multiple_sources.md, "$values"]
- **Flux** (``flux/``): the root ``kustomization.yaml``'s resources and every Flux Kustomization's folder, read
  recursively. A HelmRelease renders ``spec.chart.spec`` (chart from its HelmRepository, or a chart folder of the
  GitRepository) or ``spec.chartRef`` (an OCIRepository's ``url`` and ``ref.tag``) with ``spec.values``; its
  release is ``spec.releaseName`` or ``[targetNamespace-]name`` and its namespace ``targetNamespace`` or its own.
  [helm-controller docs: helmreleases.md, "Release name"]
- **helm, helmfile, argocd-helm**: the recipe's components, each with the ``values.yaml`` of its numbered folder;
  a numbered folder with a ``Chart.yaml`` is a local chart.

The first of argocd, flux and the others present in the tree is read: every deployer of one tree deploys the same
components (AICR's bundler parity), so one of them shows what changes.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aicr_gen.yaml.fast import mappings
from aicr_gen.yaml.foreign import load_one

DEPLOYER_ORDER = ("argocd", "flux", "helmfile", "helm", "argocd-helm")
_NUMBERED = re.compile(r"^(?P<order>\d{3})-(?P<name>.+)\Z")


@dataclass(frozen=True)
class Chart:
    """A chart: ``repository`` (https:// or oci://) and ``name`` at ``version``; or, with no repository, the chart
    folder ``name`` of the tree (its files are the release's ``files``)."""

    repository: str
    name: str
    version: str

    @property
    def local(self) -> bool:
        return not self.repository

    def text(self) -> str:
        return f"{self.name} (chart folder)" if self.local else f"{self.name} {self.version} from {self.repository}"


@dataclass(frozen=True)
class Release:
    """One unit a deployer applies, and everything its objects are rendered from."""

    kind: str  # Application, HelmRelease, Kustomization or Release
    name: str
    deployer: str
    component: str
    namespace: str
    release: str = ""
    chart: Chart | None = None
    values: str = ""  # the Helm values as YAML text (value files then inline values, merged by Helm's rules)
    files: tuple[str, ...] = ()  # the tree's files the objects come from (chart folder, manifests, value files)
    manifests: tuple[str, ...] = field(default=())  # of ``files``: the plain manifests applied as they are
    root: bool = False  # the deployer's own root (app of apps, flux-system): its objects are the other units
    crds_kept: bool = False  # the deployer installs the chart's crds/ once, never updates or deletes them

    @property
    def title(self) -> str:
        return f"{self.kind} {self.name}"

    def digest(self, tree: Mapping[str, bytes]) -> str:
        """What the rendered objects depend on, as one digest: equal digests render equal objects."""
        hashed = hashlib.sha256(repr((self.kind, self.name, self.namespace, self.release, self.chart, self.values,
                                      self.manifests)).encode())
        for name in self.files:
            hashed.update(name.encode() + b"\0" + hashlib.sha256(tree.get(name, b"")).digest())
        return hashed.hexdigest()


def deployer_of(tree: Mapping[str, bytes]) -> str | None:
    """The deployer folder read for ``tree``: the first of ``DEPLOYER_ORDER`` it has."""
    present = {name.split("/", 1)[0] for name in tree}
    return next((name for name in DEPLOYER_ORDER if name in present), None)


def releases(tree: Mapping[str, bytes], path: str, changed: frozenset[str] | None = None) -> list[Release]:
    """Every unit of ``tree`` (the managed folder ``path`` of the repository), as its deployer reads it; with
    ``changed`` (the files a merge changes), Argo CD units none of whose files changed may be left out."""
    deployer = deployer_of(tree)
    if deployer == "argocd":
        return _argocd(tree, path, changed)
    if deployer == "flux":
        return _flux(tree, path)
    return _components(tree, deployer) if deployer else []


def _docs(tree: Mapping[str, bytes], name: str) -> tuple[dict[str, Any], ...]:
    data = tree.get(name)
    try:
        return () if data is None else mappings(data)
    except Exception:  # a file the deployer could not read either: it defines nothing
        return ()


def _relative(repo_path: str, path: str) -> str | None:
    """A repository path as a path of the managed folder ``path`` (None when outside it)."""
    clean = posixpath.normpath(repo_path.removeprefix("./")).strip("/")
    if clean == path:
        return ""
    return clean.removeprefix(f"{path}/") if clean.startswith(f"{path}/") else None


def _under(tree: Mapping[str, bytes], folder: str) -> tuple[str, ...]:
    prefix = f"{folder}/" if folder else ""
    return tuple(sorted(name for name in tree if name.startswith(prefix)))


def _folder(tree: Mapping[str, bytes], folder: str, *, include: str = "*.yaml") -> tuple[Chart | None, tuple[str, ...],
                                                                                      tuple[str, ...]]:
    """What a folder source applies: a chart folder (``Chart.yaml``), the resources of its kustomization, or its
    manifests matching ``include``; returns (chart, files, manifests)."""
    import fnmatch

    files = _under(tree, folder)
    if f"{folder}/Chart.yaml" in tree:
        return Chart("", folder, ""), files, ()
    kustomization = f"{folder}/kustomization.yaml"
    if kustomization in tree:
        listed = _kustomized(tree, folder)
        return None, (kustomization, *listed), listed
    manifests = tuple(name for name in files if fnmatch.fnmatch(name.removeprefix(f"{folder}/"), include)
                      and name.endswith((".yaml", ".yml", ".json")))
    return None, manifests, manifests


def _kustomized(tree: Mapping[str, bytes], folder: str, depth: int = 0) -> tuple[str, ...]:
    """The manifest files a kustomization lists under ``resources``, folders followed (kustomize's own order)."""
    docs = _docs(tree, f"{folder}/kustomization.yaml")
    out: list[str] = []
    for item in (docs[0].get("resources") or []) if docs else []:
        name = posixpath.normpath(posixpath.join(folder, str(item)))
        if f"{name}/kustomization.yaml" in tree and depth < 8:
            out += [f"{name}/kustomization.yaml", *_kustomized(tree, name, depth + 1)]
        elif name in tree:
            out.append(name)
    return tuple(dict.fromkeys(out))


def _component_names(tree: Mapping[str, bytes], deployer: str) -> dict[str, str]:
    """Numbered folder name (``012-gpu-operator``) -> component name, from the deployer's folders."""
    out: dict[str, str] = {}
    for name in tree:
        parts = name.split("/")
        if len(parts) > 2 and parts[0] == deployer and (match := _NUMBERED.match(parts[1])):
            out[parts[1]] = match["name"]
    return out


def _touched(tree: Mapping[str, bytes], path: str, name: str, changed: frozenset[str] | None) -> bool:
    """Whether the unit file ``name`` or anything it can refer to changed: a unit names the tree's files by
    repository path (``<path>/...``), so an unchanged file whose folder and named paths hold no changed file
    defines an unchanged unit and need not be read (``changed`` None: read every one)."""
    if changed is None or name in changed:
        return True
    text = tree[name].decode(errors="replace")
    prefixes = [f"{posixpath.dirname(name)}/", *(ref.rstrip("/") for ref in re.findall(
        rf"(?<![\w./-]){re.escape(path)}/([^\s'\"]+)", text))]
    return any(item == prefix or item.startswith(prefix if prefix.endswith("/") else f"{prefix}/")
               for item in changed for prefix in prefixes)


def _argocd(tree: Mapping[str, bytes], path: str, changed: frozenset[str] | None) -> list[Release]:
    out: list[Release] = []
    apps = sorted(name for name in tree if name.startswith("argocd/") and name.endswith("/application.yaml"))
    root = [name for name in ("argocd/app-of-apps.yaml",) if name in tree
            and (changed is None or {name, *apps} & changed)]
    for name in root:
        for doc in _docs(tree, name):
            meta = doc.get("metadata") or {}
            out.append(Release("Application", str(meta.get("name", "")), "argocd", str(meta.get("name", "")),
                               str(meta.get("namespace") or "argocd"), files=(name, *apps), manifests=tuple(apps),
                               root=True))
    for name in apps:
        if _touched(tree, path, name, changed):
            for doc in _docs(tree, name):
                out += _application(tree, path, doc, name)
    return out


def _application(tree: Mapping[str, bytes], path: str, doc: Mapping[str, Any], file: str) -> list[Release]:
    meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    app = str(meta.get("name", ""))
    namespace = str((spec.get("destination") or {}).get("namespace") or "default")
    sources = spec.get("sources") or ([spec["source"]] if spec.get("source") else [])
    out: list[Release] = []
    for source in sources:
        if not isinstance(source, dict) or source.get("ref"):
            continue
        helm = source.get("helm") or {}
        value_files = [rel for item in helm.get("valueFiles") or []
                       if (rel := _relative(str(item).removeprefix("$values/"), path)) is not None and rel in tree]
        values = _merged([*(tree[name].decode() for name in value_files), _inline(helm.get("values"))])
        release = str(helm.get("releaseName") or app)
        url, version = str(source.get("repoURL", "")), str(source.get("targetRevision", ""))
        if source.get("chart") or url.startswith("oci://"):
            # a Helm repository and chart; OCI either as host/path + chart or as oci://host/path/chart (path ".")
            chart = Chart(url if "://" in url else f"oci://{url}", str(source["chart"]), version) \
                if source.get("chart") else Chart(url.rpartition("/")[0], url.rpartition("/")[2], version)
            out.append(Release("Application", app, "argocd", _component(app, file), namespace, release, chart, values,
                               tuple(value_files)))
            continue
        folder = _relative(str(source.get("path", "")), path)
        if folder is None:
            continue
        include = str((source.get("directory") or {}).get("include") or "*.yaml")
        chart_, files, manifests = _folder(tree, folder, include=include)
        out.append(Release("Application", app, "argocd", _component(app, file), namespace, release, chart_,
                           values if chart_ else "", tuple(dict.fromkeys((*files, *value_files))), manifests))
    return out


def _component(name: str, file: str) -> str:
    """The recipe component a unit deploys: its numbered folder's (``argocd/012-gpu-operator/...``; a shared
    Argo CD or Flux hub prefixes object names with the cluster's), else its own name; a ``-pre``/``-post`` unit of
    local manifests belongs to its component."""
    parts = file.split("/")
    found = _NUMBERED.match(parts[1]) if len(parts) > 1 else None
    return (found["name"] if found else name).removesuffix("-post").removesuffix("-pre")


def _flux(tree: Mapping[str, bytes], path: str) -> list[Release]:
    sources = {(doc.get("kind"), (doc.get("metadata") or {}).get("name")): doc
               for name in tree if name.startswith("flux/sources/") for doc in _docs(tree, name)}
    out: list[Release] = []
    seen: set[str] = set()

    def walk(folder: str, kustomization_name: str, namespace: str) -> None:
        files = _kustomized(tree, folder) if f"{folder}/kustomization.yaml" in tree else _under(tree, folder)
        plain: list[str] = []
        for name in files:
            if name in seen or posixpath.basename(name) == "kustomization.yaml":
                continue
            seen.add(name)
            plain.append(name)
            for doc in _docs(tree, name):
                if doc.get("kind") == "HelmRelease":
                    out.append(_helmrelease(tree, path, doc, sources, name))
                elif doc.get("kind") == "Kustomization" and str(doc.get("apiVersion", "")).startswith(
                        "kustomize.toolkit.fluxcd.io/"):
                    meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
                    target = _relative(str(spec.get("path", "")), path)
                    if target is not None and target != folder:
                        walk(target, str(meta.get("name", "")), str(spec.get("targetNamespace") or namespace))
        if plain:
            out.append(Release("Kustomization", kustomization_name, "flux", _component(kustomization_name, folder),
                               namespace, files=tuple(plain), manifests=tuple(plain), root=folder == "flux"))

    walk("flux", "flux-system", "flux-system")
    return out


def _helmrelease(tree: Mapping[str, bytes], path: str, doc: Mapping[str, Any],
                 sources: Mapping[tuple[Any, Any], Mapping[str, Any]], file: str) -> Release:
    meta, spec = doc.get("metadata") or {}, doc.get("spec") or {}
    name = str(meta.get("name", ""))
    target = spec.get("targetNamespace")
    namespace = str(target or meta.get("namespace") or "default")
    release = str(spec.get("releaseName") or (f"{target}-{name}" if target else name))
    values = _merged([_inline(spec.get("values"))])
    chart: Chart | None = None
    files: tuple[str, ...] = (file,)
    ref = spec.get("chartRef") or {}
    chart_spec = (spec.get("chart") or {}).get("spec") or {}
    if ref:
        source = sources.get((ref.get("kind"), ref.get("name"))) or {}
        url = str((source.get("spec") or {}).get("url", ""))
        tag = str(((source.get("spec") or {}).get("ref") or {}).get("tag", ""))
        repository, _, chart_name = url.rpartition("/")
        chart = Chart(repository, chart_name, tag)
    elif chart_spec:
        source_ref = chart_spec.get("sourceRef") or {}
        if source_ref.get("kind") == "GitRepository":
            folder = _relative(str(chart_spec.get("chart", "")), path) or ""
            chart, files = Chart("", folder, ""), (file, *_under(tree, folder))
        else:
            source = sources.get((source_ref.get("kind"), source_ref.get("name"))) or {}
            chart = Chart(str((source.get("spec") or {}).get("url", "")), str(chart_spec.get("chart", "")),
                          str(chart_spec.get("version", "")))
    crds = str((spec.get("upgrade") or {}).get("crds") or "Skip")  # helm-controller's default: Skip
    return Release("HelmRelease", name, "flux", _component(name, file), namespace, release, chart, values, files,
                   crds_kept=crds not in ("Create", "CreateReplace"))


def _components(tree: Mapping[str, bytes], deployer: str) -> list[Release]:
    recipe = next(iter(mappings(tree.get("recipe.yaml", b"{}"))), {})
    folders = _component_names(tree, deployer)
    by_name = {component: folder for folder, component in sorted(folders.items())}
    out: list[Release] = []
    for ref in recipe.get("componentRefs") or []:
        component = str(ref.get("name", ""))
        namespace = str(ref.get("namespace") or component)
        folder = by_name.get(component)
        values_file = f"{deployer}/{folder}/values.yaml" if folder else ""
        if ref.get("chart") and ref.get("source"):
            values = tree[values_file].decode() if values_file in tree else ""
            source = str(ref["source"])
            out.append(Release("Release", component, deployer, component, namespace, component,
                               Chart(source, str(ref["chart"]), str(ref.get("version", ""))), values,
                               (values_file,) if values_file in tree else (), crds_kept=deployer != "argocd-helm"))
        post = by_name.get(f"{component}-post")
        if post and f"{deployer}/{post}/Chart.yaml" in tree:
            files = _under(tree, f"{deployer}/{post}")
            out.append(Release("Release", f"{component}-post", deployer, component, namespace, f"{component}-post",
                               Chart("", f"{deployer}/{post}", ""),
                               tree.get(f"{deployer}/{post}/values.yaml", b"").decode(), files,
                               crds_kept=deployer != "argocd-helm"))
    return out


def _inline(values: Any) -> str:
    from aicr_gen.yaml.dump import dump

    return dump(values) if isinstance(values, dict) and values else ""


def _merged(texts: list[str]) -> str:
    """Value files and inline values as one YAML text, merged as Helm and AICR merge values layers (a map over a
    map merges, a null deletes its key, anything else replaces: ``render.values.merge_layer``)."""
    from aicr_gen.render.values import merge_layer
    from aicr_gen.yaml.dump import dump

    texts = [text for text in texts if text.strip()]
    if len(texts) <= 1:
        return texts[0] if texts else ""
    merged: dict[str, Any] = {}
    for text in texts:
        merged = merge_layer(merged, load_one(text) or {})
    return dump(merged)
