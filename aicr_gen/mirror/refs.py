"""Everything a rendered tree makes the cluster pull: Helm charts and container images, each with the file
and field that names it.

A pure function over a ``Bundle`` (relative path -> bytes), so it reads exactly what is committed, whatever
deployer wrote it:

- charts: Argo CD ``Application`` sources (``chart`` on a Helm repository, or an ``oci://`` repoURL),
  Flux ``HelmRelease`` with its ``HelmRepository`` (``spec.chart.spec``) or ``OCIRepository``
  (``spec.chartRef``), helmfile ``releases`` with their ``repositories``, and the ``helm upgrade --install``
  lines of the helm deployer's ``install.sh``;
- images: the Pod specs of every Kubernetes object (CronJobs, Jobs, a ConfigMap's embedded manifests),
  NVCRE ``Certification`` images, Helm values image fields (values files, ``HelmRelease.spec.values``, Argo CD
  ``helm.valuesObject``; shapes in ``fields.py``) and the literal ``image:`` lines of Helm templates.

``recipe.yaml`` files are not read: the recipe's values reach the cluster through the values files. The
images a chart names by default are not in the tree; ``chart_images.py`` finds them from a local copy of
the chart.
"""

from __future__ import annotations

import itertools
import re
import shlex
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from aicr_gen.mirror.fields import line_images, pod_images, value_images
from aicr_gen.text.image_reference import ImageRef
from aicr_gen.yaml import FieldPath, format_path

_YAML = (".yaml", ".yml")
_SKIPPED = ("recipe.yaml", "checksums.txt", "Chart.yaml")
_TEMPLATE_LINE = re.compile(r"^\s*\{\{.*\}\}\s*\Z")
_TEMPLATE = re.compile(r"\{\{.*?\}\}")
_HELM_INSTALL = re.compile(r"^\s*helm upgrade --install (.*?)\\?$", re.MULTILINE)


class Origin(NamedTuple):
    """Where the tree names a reference: the file and the field (or line) in it."""

    file: str
    field: str

    def __str__(self) -> str:
        return f"{self.file}: {self.field}" if self.field else self.file


class Chart(NamedTuple):
    """A Helm chart: its repository (``https://...`` index or ``oci://HOST/PATH``), name and version."""

    repository: str
    name: str
    version: str

    @property
    def oci(self) -> bool:
        return self.repository.startswith("oci://")

    @property
    def reference(self) -> str:
        """``oci://HOST/PATH/NAME:VERSION`` for an OCI chart, ``REPO NAME VERSION`` otherwise."""
        if self.oci:
            return f"{self.repository}/{self.name}:{self.version}"
        return f"{self.repository} {self.name} {self.version}"


class Found(NamedTuple):
    """One reference the tree names: a ``Chart`` or an ``ImageRef``, and where."""

    ref: Chart | ImageRef
    origin: Origin
    namespace: str = ""
    """A chart's release namespace, where the tree says."""


def _documents(path: str, data: bytes) -> list[Any]:
    """The YAML documents of a file; a Helm template is read with its actions blanked (a line that is only
    an action dropped, an inline one replaced by a word), and a file that still does not parse yields none
    (its literal ``image:`` lines are read by ``line_images``)."""
    from aicr_gen.yaml.foreign import YAMLError, load_all

    text = data.decode("utf-8", "replace")
    if "{{" in text:
        text = "\n".join("" if _TEMPLATE_LINE.match(line) else _TEMPLATE.sub("templated", line)
                         for line in text.splitlines())
    try:
        return [doc for doc in load_all(text) if doc is not None]
    except YAMLError:
        return []


def _obj_kind(doc: Any) -> str | None:
    if isinstance(doc, dict) and isinstance(doc.get("kind"), str) and isinstance(doc.get("apiVersion"), str):
        return str(doc["kind"])
    return None


def _get(doc: Any, *path: str | int) -> Any:
    for part in path:
        if isinstance(part, int):
            if not isinstance(doc, list) or part >= len(doc):
                return None
        elif not isinstance(doc, dict):
            return None
        doc = doc[part] if isinstance(part, int) else doc.get(part)
    return doc


def _oci_chart(url: str, version: str) -> Chart:
    """An ``oci://HOST/PATH/NAME`` chart reference split into repository and name (a pinned
    ``NAME@sha256:...`` is the chart NAME at ``version``)."""
    repository, _, name = url.rstrip("/").partition("@")[0].rpartition("/")
    return Chart(repository, name, version)


def _application(path: str, doc: dict[str, Any]) -> Iterator[Found]:
    spec = doc.get("spec") or {}
    namespace = str(_get(spec, "destination", "namespace") or "")
    sources = [("spec.source", spec.get("source"))] if spec.get("source") else []
    sources += [(f"spec.sources[{index}]", source) for index, source in enumerate(spec.get("sources") or [])]
    for where, source in sources:
        if not isinstance(source, dict):
            continue
        url, version = str(source.get("repoURL") or ""), str(source.get("targetRevision") or "")
        if source.get("chart"):
            chart = Chart(f"oci://{url}" if "://" not in url else url, str(source["chart"]), version)
            yield Found(chart, Origin(path, f"{where}.chart"), namespace)
        elif url.startswith("oci://"):
            yield Found(_oci_chart(url, version), Origin(path, f"{where}.repoURL"), namespace)
        helm = source.get("helm") or {}
        if isinstance(helm.get("valuesObject"), dict):
            yield from _values(path, helm["valuesObject"], (*_dotted(where), "helm", "valuesObject"))


def _dotted(where: str) -> FieldPath:
    parts: list[str | int] = []
    for part in where.split("."):
        name, _, index = part.partition("[")
        parts.append(name)
        if index:
            parts.append(int(index.rstrip("]")))
    return tuple(parts)


def _values(path: str, values: Any, base: FieldPath = ()) -> Iterator[Found]:
    for field in value_images(values, base):
        yield Found(field.ref, Origin(path, format_path(field.path)))


def _objects(path: str, doc: Any, base: FieldPath = ()) -> Iterator[Found]:
    """References of one Kubernetes object (Flux objects are joined up by ``_flux``)."""
    kind = _obj_kind(doc)
    for where, ref in pod_images(doc):
        yield Found(ref, Origin(path, format_path((*base, *where))))
    if kind == "Application" and not base:
        yield from _application(path, doc)
    elif kind == "HelmRelease" and isinstance(_get(doc, "spec", "values"), dict):
        yield from _values(path, doc["spec"]["values"], ("spec", "values"))
    elif kind == "Certification":
        yield from _certification(path, doc, base)
    elif kind == "ConfigMap":
        for key, text in (_get(doc, "data") or {}).items():
            if isinstance(text, str) and "apiVersion:" in text:
                for index, inner in enumerate(_documents(path, text.encode())):
                    inner_base: FieldPath = (*base, "data", key) + ((index,) if index else ())
                    yield from _objects(path, inner, inner_base)


def _certification(path: str, doc: dict[str, Any], base: FieldPath) -> Iterator[Found]:
    from aicr_gen.text.image_reference import parse_image

    spec = doc.get("spec") or {}
    images: list[tuple[FieldPath, Any]] = [(("spec", "image"), spec.get("image"))]
    images += [(("spec", "categories", index, "options", "image"), _get(entry, "options", "image"))
               for index, entry in enumerate(spec.get("categories") or [])]
    for where, text in images:
        if isinstance(text, str):
            yield Found(parse_image(text), Origin(path, format_path((*base, *where))))


def _flux(docs: list[tuple[str, Any]]) -> Iterator[Found]:
    """HelmReleases joined with the HelmRepository or OCIRepository they name."""
    sources: dict[tuple[str, str, str], dict[str, Any]] = {}
    for _, doc in docs:
        kind = _obj_kind(doc)
        if kind in ("HelmRepository", "OCIRepository"):
            meta = doc.get("metadata") or {}
            sources[(kind, str(meta.get("namespace") or ""), str(meta.get("name") or ""))] = doc
    for path, doc in docs:
        if _obj_kind(doc) != "HelmRelease":
            continue
        namespace = str(_get(doc, "metadata", "namespace") or "")
        target = str(_get(doc, "spec", "targetNamespace") or namespace)
        chart_spec, chart_ref = _get(doc, "spec", "chart", "spec"), _get(doc, "spec", "chartRef")
        if isinstance(chart_spec, dict):
            ref = chart_spec.get("sourceRef") or {}
            if ref.get("kind") != "HelmRepository":
                continue  # a chart folder of the tree (GitRepository)
            source = sources.get((str(ref.get("kind")), str(ref.get("namespace") or namespace), str(ref.get("name"))))
            url = str(_get(source, "spec", "url") or "")
            if _get(source, "spec", "type") == "oci" and not url.startswith("oci://"):
                url = f"oci://{url}"
            chart = Chart(url, str(chart_spec.get("chart") or ""), str(chart_spec.get("version") or ""))
            yield Found(chart, Origin(path, "spec.chart.spec"), target)
        elif isinstance(chart_ref, dict) and chart_ref.get("kind") == "OCIRepository":
            key = ("OCIRepository", str(chart_ref.get("namespace") or namespace), str(chart_ref.get("name")))
            source = sources.get(key)
            tag = str(_get(source, "spec", "ref", "tag") or _get(source, "spec", "ref", "semver") or "")
            yield Found(_oci_chart(str(_get(source, "spec", "url") or ""), tag), Origin(path, "spec.chartRef"), target)


def _helmfile(path: str, doc: dict[str, Any]) -> Iterator[Found]:
    repositories = {str(repo.get("name")): repo for repo in doc.get("repositories") or [] if isinstance(repo, dict)}
    for index, release in enumerate(doc.get("releases") or []):
        chart = str(_get(release, "chart") or "")
        alias, slash, name = chart.partition("/")
        repo = repositories.get(alias) if slash else None
        if repo is None:
            continue  # a local chart folder of the tree
        url = str(repo.get("url") or "")
        if repo.get("oci") and "://" not in url:
            url = f"oci://{url}"
        yield Found(Chart(url, name, str(release.get("version") or "")), Origin(path, f"releases[{index}].chart"),
                    str(release.get("namespace") or ""))


def _install_script(path: str, text: str) -> Iterator[Found]:
    """``helm upgrade --install NAME CHART [--repo URL] --version V`` lines of the helm deployer's scripts."""
    for match in _HELM_INSTALL.finditer(text):
        words = shlex.split(match.group(1), posix=True)
        if len(words) < 2 or words[1].startswith(("$", ".", "/")):
            continue  # a local chart of the bundle
        options = dict(itertools.pairwise(words))
        version, namespace = options.get("--version", ""), options.get("--namespace", "")
        line = text[:match.start()].count("\n") + 1
        if "--repo" in options:
            yield Found(Chart(options["--repo"], words[1], version), Origin(path, f"line {line}"), namespace)
        elif words[1].startswith("oci://"):
            yield Found(_oci_chart(words[1], version), Origin(path, f"line {line}"), namespace)


FileRefs = tuple[list[Found], list[tuple[str, Any]]]
"""One file's references and its Kubernetes objects (path, object), which ``discover`` joins across files for
Flux."""


def file_refs(path: str, data: bytes) -> FileRefs:
    """The references one file of a tree names by itself, and its Kubernetes objects (not to be changed: a
    caller may keep them for a file read again)."""
    found: list[Found] = []
    objects: list[tuple[str, Any]] = []
    name = path.rsplit("/", 1)[-1]
    if name in _SKIPPED:
        return found, objects
    if name.endswith(".sh"):
        return list(_install_script(path, data.decode("utf-8", "replace"))), objects
    if not name.endswith(_YAML):
        return found, objects
    for doc in _documents(path, data):
        if _obj_kind(doc) is not None:
            found.extend(_objects(path, doc))
            objects.append((path, doc))
        elif isinstance(doc, dict) and isinstance(doc.get("releases"), list):
            found.extend(_helmfile(path, doc))
        elif isinstance(doc, dict):
            found.extend(_values(path, doc))
    if not found and "{{" in data.decode("utf-8", "replace"):
        found.extend(Found(ref, Origin(path, f"line {number}"))
                     for number, ref in line_images(data.decode("utf-8", "replace")))
    return found, objects


def discover(tree: Mapping[str, bytes], read: Callable[[str, bytes], FileRefs] = file_refs) -> list[Found]:
    """Every chart and image reference of ``tree``, in path order, each with its origin (a reference named
    in several places is listed once per place); ``read`` reads one file as ``file_refs`` does (a caller
    reading many trees that share files may pass one that keeps each file's)."""
    found: list[Found] = []
    flux_docs: list[tuple[str, Any]] = []
    for path, data in tree.items():
        refs, objects = read(path, data)
        found.extend(refs)
        flux_docs.extend(objects)
    found.extend(_flux(flux_docs))
    return sorted(found, key=lambda item: (item.origin.file, item.origin.field, str(item.ref)))
