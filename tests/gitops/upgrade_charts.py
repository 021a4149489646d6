"""``widget-operator``: one real Helm chart in versions that each carry ONE upgrade hazard a reviewer must see, and
``SCENARIOS``, the table of what upgrading from 1.0.0 to each version does, which both the API-server oracle and
the verdict tests read (``test_upgrade_oracle.py``).

1.0.0 is the baseline: the Namespace ``widget-extra`` (created by the chart), the Deployment ``widget-operator``
(selector ``app=widget-operator``), a Service with a fixed ``clusterIP``, the StatefulSet ``widget-store`` with a
volumeClaimTemplate, the Job ``widget-migrate``, the ConfigMap ``widget-config``, a Secret with data, the CRD
``widgets.example.com`` in ``crds/`` (v1alpha1 served and stored, v1 served; ``spec.size`` carries the transition
rule ``self == oldSelf``, as NVIDIADriver's immutable fields do) and a ``Widget`` in ``templates/``. Every version
after it is 1.0.0 plus its one hazard; all carry the usual chart labels (``helm.sh/chart``,
``app.kubernetes.io/version``) and a ``checksum/config`` Pod annotation, which change with every version: the
noise a review filters.

Charts are written and packaged with the real helm 3 (``$AICR_GEN_TOOLS``); ``render`` is ``helm template
--include-crds`` as Argo CD and helm-controller render a chart.
"""

from __future__ import annotations

import base64
import copy
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

CHART = "widget-operator"
RELEASE = "widget-operator"
NAMESPACE = "widget-system"
"""The release namespace (the deployer creates it: Argo CD ``CreateNamespace=true``)."""
EXTRA_NAMESPACE = "widget-extra"
"""The namespace the chart itself creates (dropped in 5.0.0)."""
CRD_NAME = "widgets.example.com"
SIZE_MESSAGE = "size is immutable: create a new Widget to resize"
"""The message of the transition rule on ``Widget.spec.size``."""
BASELINE = "1.0.0"

BLOCKING_CODES = frozenset({"immutable-field", "transition-rule", "crd-storage-version-dropped", "crd-removed"})
"""Reason codes that block an upgrade: the API server refuses the change, or accepts it and deletes every custom
resource of the CRD (``crd-removed``)."""

Manifests = dict[str, dict[str, Any]]
"""Template file name -> the object it renders (its Helm expressions as YAML strings)."""

_LABELS = {
    "helm.sh/chart": '{{ include "widget-operator.chart" . }}',
    "app.kubernetes.io/name": "widget-operator",
    "app.kubernetes.io/instance": "{{ .Release.Name }}",
    "app.kubernetes.io/version": "{{ .Chart.AppVersion }}",
    "app.kubernetes.io/managed-by": "{{ .Release.Service }}",
}
_HELPERS = """{{- define "widget-operator.chart" -}}
{{ .Chart.Name }}-{{ .Chart.Version | replace "+" "_" }}
{{- end }}
"""
_CHECKSUM = '{{ include (print $.Template.BasePath "/configmap.yaml") . | sha256sum }}'


def _meta(name: str, namespace: str | None = "{{ .Release.Namespace }}") -> dict[str, Any]:
    return {"name": name, **({"namespace": namespace} if namespace else {}), "labels": dict(_LABELS)}


def _pod(labels: dict[str, str], container: dict[str, Any], **spec: Any) -> dict[str, Any]:
    """A Pod template: the operator's image and the ``checksum/config`` annotation, which change with every version
    (a Job's template is immutable, so the Job's container names its own image and carries no checksum)."""
    image = "{{ .Values.image.repository }}:{{ .Values.image.tag }}"
    metadata: dict[str, Any] = {"labels": labels}
    if "image" not in container:
        metadata["annotations"] = {"checksum/config": _CHECKSUM}
    return {"metadata": metadata, "spec": {"containers": [{"name": "main", "image": image, **container}], **spec}}


def _baseline() -> Manifests:
    selector = {"app": "widget-operator"}
    return {
        "namespace.yaml": {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta(EXTRA_NAMESPACE, None)},
        "configmap.yaml": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": _meta("widget-config"),
                           "data": {"widgets.yaml": "size: 3\nmode: reconcile\n"}},
        "secret.yaml": {"apiVersion": "v1", "kind": "Secret", "metadata": _meta("widget-credentials"),
                        "type": "Opaque", "data": {"token": base64.b64encode(b"not-a-real-token").decode()}},
        "deployment.yaml": {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": _meta("widget-operator"),
            "spec": {"replicas": 1, "selector": {"matchLabels": dict(selector)},
                     "template": _pod(dict(selector), {})}},
        "service.yaml": {
            "apiVersion": "v1", "kind": "Service", "metadata": _meta("widget-operator"),
            "spec": {"clusterIP": "10.96.100.10", "selector": dict(selector),
                     "ports": [{"name": "metrics", "port": 8080, "targetPort": 8080}]}},
        "statefulset.yaml": {
            "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": _meta("widget-store"),
            "spec": {"serviceName": "widget-operator", "replicas": 1,
                     "selector": {"matchLabels": {"app": "widget-store"}},
                     "template": _pod({"app": "widget-store"},
                                      {"volumeMounts": [{"name": "data", "mountPath": "/var/lib/widgets"}]}),
                     "volumeClaimTemplates": [{
                         "metadata": {"name": "data"},
                         "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "standard",
                                  "resources": {"requests": {"storage": "1Gi"}}}}]}},
        "job.yaml": {
            "apiVersion": "batch/v1", "kind": "Job", "metadata": _meta("widget-migrate"),
            "spec": {"backoffLimit": 1,
                     "template": _pod({"app": "widget-migrate"},
                                   {"image": "registry.example.com/widget-migrate:1",
                                    "args": ["migrate", "--schema=1"]},
                                   restartPolicy="Never")}},
        "widget.yaml": {"apiVersion": "example.com/v1alpha1", "kind": "Widget", "metadata": _meta("default"),
                        "spec": {"size": 3, "color": "blue"}},
    }


def _widget_schema() -> dict[str, Any]:
    return {"openAPIV3Schema": {"type": "object", "properties": {"spec": {
        "type": "object", "required": ["size"],
        "properties": {"size": {"type": "integer", "minimum": 1,
                                "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": SIZE_MESSAGE}]},
                       "color": {"type": "string"}}}}}}


def _crd(versions: Sequence[tuple[str, bool]]) -> dict[str, Any]:
    """The Widget CRD serving ``versions`` (name, stored) with one schema (no conversion webhook needed)."""
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": CRD_NAME},
            "spec": {"group": "example.com", "scope": "Namespaced",
                     "names": {"kind": "Widget", "plural": "widgets", "singular": "widget", "listKind": "WidgetList"},
                     "versions": [{"name": name, "served": True, "storage": stored, "schema": _widget_schema()}
                                  for name, stored in versions]}}


def _set(file: str, path: tuple[str | int, ...], value: Any) -> Callable[[Manifests], None]:
    """An edit: the field at ``path`` (keys and list indexes) of template ``file`` set to ``value``."""
    def edit(manifests: Manifests) -> None:
        node: Any = manifests[file]
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value
    return edit


def _drop(file: str) -> Callable[[Manifests], None]:
    return lambda manifests: manifests.__delitem__(file)


@dataclass(frozen=True)
class Refusal:
    """An object the API server refuses in the upgrade, and a part of its message."""

    object: str
    """``Kind namespace/name`` (``Kind name`` when cluster-scoped)."""
    message: str


@dataclass(frozen=True)
class Scenario:
    """One chart version: how it differs from 1.0.0, and what upgrading 1.0.0 to it does."""

    version: str
    hazard: str
    edits: tuple[Callable[[Manifests], None], ...] = ()
    crd_versions: tuple[tuple[str, bool], ...] | None = (("v1alpha1", True), ("v1", False))
    """The CRD's versions (name, stored); None: no CRD in ``crds/``."""
    values: dict[str, Any] = field(default_factory=dict)
    refusals: tuple[Refusal, ...] = ()
    """What the real API server refuses (server-side apply of the new render over 1.0.0)."""
    lost: tuple[str, ...] = ()
    """Objects nobody's render holds (a user's, ``BYSTANDERS``) that the upgrade deletes."""
    verdict: str = "safe"
    reasons: tuple[tuple[str, str], ...] = ()
    """(code, object) the verdict must give; more reasons are allowed."""

    @property
    def id(self) -> str:
        return f"{self.version}-{self.hazard.split(':')[0]}"


BYSTANDERS = (
    {"apiVersion": "example.com/v1alpha1", "kind": "Widget",
     "metadata": {"name": "user-widget", "namespace": NAMESPACE}, "spec": {"size": 1}},
    {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "user-notes", "namespace": EXTRA_NAMESPACE},
     "data": {"note": "kept by a user, not by the chart"}},
)
"""Objects a user created beside the 1.0.0 release (a Widget of their own, a ConfigMap in the chart's namespace)."""

_DEPLOYMENT = f"Deployment {NAMESPACE}/widget-operator"
_CONFIGMAP = f"ConfigMap {NAMESPACE}/widget-config"
_CRD = f"CustomResourceDefinition {CRD_NAME}"
_IMMUTABLE = "field is immutable"

SCENARIOS = (
    Scenario(BASELINE, "baseline: every object the later versions change"),
    Scenario("1.1.0", "safe: image tag and a label and annotation only",
             edits=(_set("deployment.yaml", ("metadata", "labels", "example.com/tier"), "control-plane"),
                    _set("deployment.yaml", ("spec", "template", "metadata", "annotations", "example.com/owner"),
                         "widgets-team")),
             values={"image": {"tag": "1.1.0"}}),
    Scenario("2.0.0", "renamed: Deployment widget-controller, ConfigMap in widget-extra",
             edits=(_set("deployment.yaml", ("metadata", "name"), "widget-controller"),
                    _set("configmap.yaml", ("metadata", "namespace"), EXTRA_NAMESPACE)),
             verdict="manual",
             reasons=(("renamed", _DEPLOYMENT), ("namespace-moved", _CONFIGMAP))),
    Scenario("3.0.0", "crd-version-dropped: v1alpha1 removed, storage moves to v1",
             edits=(_set("widget.yaml", ("apiVersion",), "example.com/v1"),),
             crd_versions=(("v1", True),),
             refusals=(Refusal(_CRD, "status.storedVersions[0]"),),
             verdict="blocked",
             reasons=(("crd-storage-version-dropped", _CRD),)),
    Scenario("4.0.0", "immutable: selector, volumeClaimTemplates, Job template, clusterIP, Widget size",
             edits=(_set("deployment.yaml", ("spec", "selector", "matchLabels", "component"), "controller"),
                    _set("deployment.yaml", ("spec", "template", "metadata", "labels", "component"), "controller"),
                    _set("statefulset.yaml", ("spec", "volumeClaimTemplates", 0, "spec", "storageClassName"), "fast"),
                    _set("job.yaml", ("spec", "template", "spec", "containers", 0, "args"), ["migrate", "--schema=2"]),
                    _set("service.yaml", ("spec", "clusterIP"), "10.96.100.20"),
                    _set("widget.yaml", ("spec", "size"), 5)),
             refusals=(Refusal(_DEPLOYMENT, _IMMUTABLE),
                       Refusal(f"StatefulSet {NAMESPACE}/widget-store", "updates to statefulset spec for fields other"),
                       Refusal(f"Job {NAMESPACE}/widget-migrate", _IMMUTABLE),
                       Refusal(f"Service {NAMESPACE}/widget-operator", "may not change once set"),
                       Refusal(f"Widget {NAMESPACE}/default", SIZE_MESSAGE)),
             verdict="blocked",
             reasons=(("immutable-field", _DEPLOYMENT), ("immutable-field", f"StatefulSet {NAMESPACE}/widget-store"),
                      ("immutable-field", f"Job {NAMESPACE}/widget-migrate"),
                      ("immutable-field", f"Service {NAMESPACE}/widget-operator"),
                      ("transition-rule", f"Widget {NAMESPACE}/default"))),
    Scenario("5.0.0", "crd-removed: the CRD and the Namespace widget-extra are gone",
             edits=(_drop("widget.yaml"), _drop("namespace.yaml")),
             crd_versions=None,
             lost=(f"Widget {NAMESPACE}/user-widget", f"ConfigMap {EXTRA_NAMESPACE}/user-notes"),
             verdict="blocked",
             reasons=(("crd-removed", _CRD), ("namespace-dropped", f"Namespace {EXTRA_NAMESPACE}"))),
)
"""Every version of the chart, 1.0.0 first; the upgrades are 1.0.0 -> each later one."""

UPGRADES = SCENARIOS[1:]


def scenario(version: str) -> Scenario:
    return next(entry for entry in SCENARIOS if entry.version == version)


def manifests(version: str) -> tuple[Manifests, dict[str, Any] | None]:
    """The templates and the CRD of ``version``."""
    entry = scenario(version)
    templates = copy.deepcopy(_baseline())
    for edit in entry.edits:
        edit(templates)
    return templates, None if entry.crd_versions is None else _crd(entry.crd_versions)


def write_chart(parent: Path, version: str) -> Path:
    """The chart folder of ``version`` under ``parent`` (``parent/widget-operator-VERSION``)."""
    templates, crd = manifests(version)
    entry = scenario(version)
    folder = parent / f"{CHART}-{version}"
    (folder / "templates").mkdir(parents=True)
    (folder / "Chart.yaml").write_text(yaml.safe_dump({
        "apiVersion": "v2", "name": CHART, "version": version, "appVersion": version, "type": "application",
        "description": "A test operator whose versions each carry one upgrade hazard"}, sort_keys=False))
    values = {"image": {"repository": "registry.example.com/widget-operator", "tag": BASELINE}}
    values["image"].update(entry.values.get("image", {}))
    (folder / "values.yaml").write_text(yaml.safe_dump(values, sort_keys=False))
    (folder / "templates" / "_helpers.tpl").write_text(_HELPERS)
    for name, obj in templates.items():
        (folder / "templates" / name).write_text(yaml.safe_dump(obj, sort_keys=False, width=200))
    if crd is not None:
        (folder / "crds").mkdir()
        (folder / "crds" / f"{CRD_NAME}.yaml").write_text(yaml.safe_dump(crd, sort_keys=False))
    return folder


@dataclass(frozen=True)
class Charts:
    """Every version written (``folders``) and packaged by ``helm package`` (``packages``), by version."""

    folders: dict[str, Path]
    packages: dict[str, Path]


def build_charts(parent: Path) -> Charts:
    """Write and ``helm package`` every version of the chart under ``parent``."""
    sources, out = parent / "src", parent / "packages"
    sources.mkdir(parents=True)
    folders = {entry.version: write_chart(sources, entry.version) for entry in SCENARIOS}
    for folder in folders.values():
        helm("package", str(folder), "--destination", str(out))
    packages = {version: out / f"{CHART}-{version}.tgz" for version in folders}
    missing = [str(path) for path in packages.values() if not path.is_file()]
    assert not missing, f"helm package left no {missing}"
    return Charts(folders, packages)


def helm_path() -> Path:
    """The real helm 3, ``$AICR_GEN_TOOLS/helm3`` (default ``<repo>/.tools``); the test skips naming it when it
    is absent."""
    from tests.conftest import ROOT
    from tests.consumers import tool_path

    tools = Path(os.environ.get("AICR_GEN_TOOLS") or ROOT / ".tools")
    if not (tools / "helm3").is_file():
        pytest.skip(f"helm 3 not found at {tools / 'helm3'}: set AICR_GEN_TOOLS, or run scripts/tools.sh")
    return tool_path("helm3")


def helm(*args: str) -> str:
    """``helm ARGS`` (``helm_path``) with private helm homes and no kubeconfig; its output (an error fails the
    test with helm's message)."""
    from tests.consumers import _run

    return _run([helm_path(), *args], f"helm {args[0]}")


def render(chart: str | Path, *args: str) -> list[dict[str, Any]]:
    """``helm template --include-crds`` of a chart (a folder, package or reference; ``args`` such as
    ``--version``, ``--repo``) as the deployer renders it into ``NAMESPACE``: the parsed objects, in order."""
    from tests.cluster.converge import load_manifests

    return load_manifests(helm("template", RELEASE, str(chart), f"--namespace={NAMESPACE}", "--include-crds",
                               *args))


def crds(objects: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The CustomResourceDefinitions among rendered objects."""
    return [obj for obj in objects if obj.get("kind") == "CustomResourceDefinition"]
