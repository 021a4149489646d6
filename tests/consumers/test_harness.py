"""The real-consumer harness (tests/consumers/) itself: each consumer accepts good input and rejects bad."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests import consumers
from tests.consumers import (
    crd_schemas,
    helm_lint,
    helm_template,
    kustomize_build,
    shellcheck,
    tool_path,
    validate_manifests,
    validate_objects,
)


def y(text: str) -> bytes:
    return textwrap.dedent(text).lstrip().encode()


APPLICATION = y("""
    apiVersion: argoproj.io/v1alpha1
    kind: Application
    metadata:
      name: gpu-operator
      namespace: argocd
      annotations:
        argocd.argoproj.io/sync-wave: "1"
      finalizers: [resources-finalizer.argocd.argoproj.io]
    spec:
      project: default
      sources:
        - repoURL: https://helm.ngc.nvidia.com/nvidia
          chart: gpu-operator
          targetRevision: 25.10.1
          helm:
            valueFiles: [$values/001-gpu-operator/values.yaml]
            valuesObject: {driver: {enabled: true, anything: [1, {goes: here}]}}
        - repoURL: https://github.com/example/gitops.git
          targetRevision: main
          ref: values
      destination:
        server: https://kubernetes.default.svc
        namespace: gpu-operator
      syncPolicy:
        automated: {prune: yes, selfHeal: true}
        syncOptions: [CreateNamespace=true, ServerSideApply=true]
    """)

HELMRELEASE = y("""
    apiVersion: helm.toolkit.fluxcd.io/v2
    kind: HelmRelease
    metadata:
      name: gpu-operator
      namespace: flux-system
    spec:
      interval: 10m
      targetNamespace: gpu-operator
      install: {createNamespace: true}
      dependsOn: [{name: cert-manager}]
      chart:
        spec:
          chart: gpu-operator
          version: 25.10.1
          sourceRef: {kind: HelmRepository, name: nvidia}
      values:
        driver: {enabled: true, version: "580.65.06"}
    """)

FLUX_SOURCES = y("""
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: HelmRepository
    metadata: {name: nvidia, namespace: flux-system}
    spec: {interval: 1h, url: https://helm.ngc.nvidia.com/nvidia}
    ---
    apiVersion: source.toolkit.fluxcd.io/v1
    kind: HelmRepository
    metadata: {name: ghcr-nvidia, namespace: flux-system}
    spec: {interval: 1h, type: oci, url: oci://ghcr.io/nvidia}
    ---
    apiVersion: kustomize.toolkit.fluxcd.io/v1
    kind: Kustomization
    metadata: {name: stack, namespace: flux-system}
    spec:
      interval: 10m
      path: ./clusters/demo
      prune: true
      sourceRef: {kind: GitRepository, name: flux-system}
    ---
    """)

BUILTINS = y("""
    apiVersion: v1
    kind: Namespace
    metadata: {name: gpu-operator, labels: {app.kubernetes.io/part-of: aicr}}
    ---
    apiVersion: v1
    kind: ConfigMap
    metadata: {name: settings.v1, namespace: gpu-operator}
    data: {replicas: "3", mode: "on", created: 2024-01-01}
    ---
    apiVersion: rbac.authorization.k8s.io/v1
    kind: ClusterRole
    metadata: {name: "system:aicr-reader"}
    rules: [{apiGroups: [""], resources: [configmaps], verbs: [get]}]
    """)


def problems_of(files: dict[str, bytes], **kwargs: Any) -> str:
    with pytest.raises(AssertionError) as caught:
        validate_manifests(files, **kwargs)
    return str(caught.value)


# ------------------------------------------------------------------------------------------ schemas


def test_crd_schemas_cover_every_served_reference_crd_and_are_valid_draft7() -> None:
    schemas = crd_schemas()
    assert set(schemas) == {
        ("argoproj.io/v1alpha1", "Application"), ("argoproj.io/v1alpha1", "ApplicationSet"),
        ("argoproj.io/v1alpha1", "AppProject"), ("helm.toolkit.fluxcd.io/v2", "HelmRelease"),
        ("source.toolkit.fluxcd.io/v1", "HelmRepository"), ("source.toolkit.fluxcd.io/v1", "OCIRepository"),
        ("source.toolkit.fluxcd.io/v1", "GitRepository"), ("source.toolkit.fluxcd.io/v1", "HelmChart"),
        ("source.toolkit.fluxcd.io/v1", "Bucket"), ("source.toolkit.fluxcd.io/v1", "ExternalArtifact"),
        ("kustomize.toolkit.fluxcd.io/v1", "Kustomization"),
    }
    for (api_version, kind), schema in schemas.items():
        jsonschema.Draft7Validator.check_schema(schema)
        assert schema["properties"]["apiVersion"]["enum"] == [api_version]
        assert schema["properties"]["kind"]["enum"] == [kind]
        assert schema["additionalProperties"] is False
    assert crd_schemas() is schemas  # built once per session


def test_crd_conversion_rules() -> None:
    converted = consumers._convert({
        "type": "object",
        "properties": {
            "port": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]},
            "maybe": {"type": "string", "nullable": True, "enum": ["a"]},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "map": {"type": "object", "additionalProperties": {"type": "string"}},
            "pick": {"type": "object", "properties": {"a": {"type": "string"}},
                     "oneOf": [{"required": ["a"], "properties": {"a": {"minLength": 1}}}]},
        },
    }, structural=True)
    validator = jsonschema.Draft7Validator(converted)
    good = {"port": 80, "maybe": None, "free": {"x": [1]}, "map": {"k": "v"}, "pick": {"a": "x"}}
    assert not list(validator.iter_errors(good))
    assert not list(validator.iter_errors({**good, "port": "http"}))
    bad = {"port": 1.5, "maybe": "b", "map": {"k": 1}, "pick": {"a": "x", "typo": 1}, "extra": 1}
    paths = sorted(consumers._jpath(e.absolute_path) for e in validator.iter_errors(bad))
    assert paths == ["$", "$.map.k", "$.maybe", "$.pick", "$.port"]
    assert "additionalProperties" not in converted["properties"]["free"]
    assert "additionalProperties" not in converted["properties"]["pick"]["oneOf"][0]


# --------------------------------------------------------------------------------------- manifests


def test_valid_bundle_passes_and_counts_documents() -> None:
    files = {
        "argocd/001-gpu-operator/application.yaml": APPLICATION,
        "argocd/project.yaml": y("""
            apiVersion: argoproj.io/v1alpha1
            kind: AppProject
            metadata: {name: aicr, namespace: argocd}
            spec:
              sourceRepos: ["*"]
              destinations: [{server: https://kubernetes.default.svc, namespace: "*"}]
            """),
        "flux/gpu-operator/helmrelease.yaml": HELMRELEASE,
        "flux/sources.yaml": FLUX_SOURCES,
        "k8s/builtins.yml": BUILTINS,
        "flux/kustomization.yaml": y("""
            apiVersion: kustomize.config.k8s.io/v1beta1
            kind: Kustomization
            resources: [gpu-operator/helmrelease.yaml, sources.yaml]
            """),
        "helmfile/helmfile.yaml": y("helmfiles: [{path: level-0.yaml}, {path: level-1.yaml}]\n"),
        "helmfile/level-0.yaml": y("""
            repositories: [{name: nvidia, url: https://helm.ngc.nvidia.com/nvidia}]
            helmDefaults: {wait: true, timeout: 600, createNamespace: true}
            releases:
              - {name: gpu-operator, namespace: gpu-operator, chart: nvidia/gpu-operator, version: 25.10.1,
                 values: [./001-gpu-operator/values.yaml]}
            """),
        "helmfile/level-1.yaml": y("""
            releases: [{name: post, namespace: gpu-operator, chart: ./002-post, values: [./002-post/extra.yaml]}]
            """),
        "helmfile/002-post/extra.yaml": b"not: a manifest\n",
        "helmfile/002-post/crds/crd.yaml": y("""
            apiVersion: apiextensions.k8s.io/v1
            kind: CustomResourceDefinition
            metadata: {name: widgets.example.com}
            spec:
              group: example.com
              names: {kind: Widget, plural: widgets}
              scope: Namespaced
              versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}]
            """),
        "helmfile/002-post/Chart.yaml": y("apiVersion: v2\nname: post\nversion: 0.1.0\n"),
        "helmfile/002-post/templates/cm.yaml": b"data: {{ .Values.x | toYaml | nindent 2 }}\n",
        "helmfile/002-post/values.yaml": b"anything: [goes]\n",
        "helmfile/001-gpu-operator/values.yaml": b"driver: {enabled: true}\n",
        "helmfile/001-gpu-operator/cluster-values.yaml": b"# Generated\n---\n",
        "recipe.yaml": b"apiVersion: aicr.run/v1alpha2\nkind: RecipeResult\n",
        "README.md": b"# not yaml: {{\n",
        "checksums.txt": b"abc  recipe.yaml\n",
        "001-x/install.sh": b"#!/bin/sh\n",
    }
    # 1 + 1 + 1 + 3 (trailing empty doc ignored) + 3 + kustomization + 3 helmfiles + Chart.yaml + crds/
    assert validate_manifests(files) == 15
    files["helmfile/002-post/crds/crd.yaml"] = files["helmfile/002-post/crds/crd.yaml"].replace(b"scope", b"scop")
    assert "helmfile/002-post/crds/crd.yaml [doc 0, apiextensions.k8s.io/v1 CustomResourceDefinition " \
           "widgets.example.com] $.spec: 'scope' is a required property (Kubernetes 1.33 strict schema)" \
           in problems_of(files)


def test_argocd_application_rejections() -> None:
    text = APPLICATION.decode()
    files = {
        "apps/prune.yaml": text.replace("prune: yes", 'prune: "yes"').encode(),
        "apps/no-destination.yaml": text.split("  destination:")[0].encode(),
        "apps/typo.yaml": text.replace("automated:", "automatic:").encode(),
        "apps/wave.yaml": text.replace('sync-wave: "1"', "sync-wave: 1").encode(),
        "apps/old.yaml": text.replace("v1alpha1", "v1beta1").encode(),
    }
    message = problems_of(files)
    where = "[doc 0, argoproj.io/v1alpha1 Application gpu-operator]"
    assert f"apps/prune.yaml {where} $.spec.syncPolicy.automated.prune: 'yes' is not of type 'boolean'" in message
    assert f"apps/no-destination.yaml {where} $.spec: 'destination' is a required property" in message
    assert (f"apps/typo.yaml {where} $.spec.syncPolicy: Additional properties are not allowed "
            "('automatic' was unexpected)") in message
    assert (f'apps/wave.yaml {where} $.metadata.annotations["argocd.argoproj.io/sync-wave"]: '
            "value must be a string, got int 1") in message
    assert ("apps/old.yaml [doc 0, argoproj.io/v1beta1 Application gpu-operator] $.apiVersion: "
            "argoproj.io/v1beta1 is not served by the reference CRD for Application; served: "
            "argoproj.io/v1alpha1") in message
    assert message.startswith("5 problem(s):")
    assert validate_manifests({"ok.yaml": APPLICATION}) == 1


def test_flux_helmrelease_rejections() -> None:
    text = HELMRELEASE.decode()
    files = {
        "int.yaml": text.replace("interval: 10m", "interval: 10").encode(),
        "nochart.yaml": text.split("  chart:")[0].encode(),
        "beta.yaml": text.replace("fluxcd.io/v2", "fluxcd.io/v2beta1").encode(),
        "source.yaml": text.replace("kind: HelmRepository", "kind: GitRepo").encode(),
    }
    message = problems_of(files)
    where = "[doc 0, helm.toolkit.fluxcd.io/v2 HelmRelease gpu-operator]"
    assert f"int.yaml {where} $.spec.interval: 10 is not of type 'string'" in message
    assert f"nochart.yaml {where} $.spec: either chart or chartRef must be set (CRD rule" in message
    assert "beta.yaml [doc 0, helm.toolkit.fluxcd.io/v2beta1 HelmRelease gpu-operator] $.apiVersion: " in message
    assert "served: helm.toolkit.fluxcd.io/v2" in message
    assert (f"source.yaml {where} $.spec.chart.spec.sourceRef.kind: 'GitRepo' is not one of "
            "['HelmRepository', 'GitRepository', 'Bucket']") in message
    assert message.startswith("4 problem(s):")
    assert validate_manifests({"ok.yaml": HELMRELEASE, "src.yaml": FLUX_SOURCES}) == 4


def test_builtin_kinds_are_strict_and_unknown_kinds_fail() -> None:
    files = {
        "cm.yaml": y("""
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: settings}
            data: {replicas: 3}
            """),
        "norway.yaml": y("""
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: norway}
            data: {mode: on}
            """),
        "extra.yaml": y("""
            apiVersion: v1
            kind: ConfigMap
            metadata: {name: extra}
            spec: {}
            """),
        "deploy.yaml": y("""
            apiVersion: apps/v1
            kind: Deployment
            metadata: {name: web}
            spec:
              selector: {matchLabels: {app: web}}
              template:
                metadata: {labels: {app: web}}
                spec: {containers: [{name: web, image: nginx, replica: 2}]}
            """),
        "widget.yaml": b"apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\n",
        "noversion.yaml": b"kind: ConfigMap\nmetadata: {name: nv}\n",
    }
    message = problems_of(files)
    assert ("cm.yaml [doc 0, v1 ConfigMap settings] $.data.replicas: 3 is not of type 'string', 'null' "
            "(Kubernetes 1.33 strict schema)") in message
    assert "norway.yaml [doc 0, v1 ConfigMap norway] $.data.mode: True is not of type 'string'" in message
    assert "extra.yaml [doc 0, v1 ConfigMap extra] $: Additional properties are not allowed ('spec'" in message
    assert ("deploy.yaml [doc 0, apps/v1 Deployment web] $.spec.template.spec.containers[0]: "
            "Additional properties are not allowed ('replica' was unexpected)") in message
    assert ("widget.yaml [doc 0, example.com/v1 Widget w] $.kind: unknown kind Widget (example.com/v1): "
            "neither a Kubernetes 1.33 built-in nor a reference CRD") in message
    assert "noversion.yaml [doc 0] $.apiVersion: required string field is missing" in message
    assert message.startswith("6 problem(s):")
    assert validate_manifests({"w.yaml": files["widget.yaml"]}, unchecked_kinds={("example.com/v1", "Widget")}) == 1
    assert validate_manifests({"b.yaml": BUILTINS}) == 3


def test_metadata_rules() -> None:
    docs = [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "annotations": {"n": 1, "b": True}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "Upper_Case"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "has.dot"}},
        {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "1svc"}, "spec": {"ports": [{"port": 80}]}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "l", "labels": {"app": "x y", "k": 1}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k", "labels": {"Bad/x": "v", "-x": "v"}}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"nam": "typo"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ns", "namespace": "Not_OK"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "x" * 254}},
        {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
         "metadata": {"name": "a", "annotations": {"argocd.argoproj.io/sync-wave": 1}},
         "spec": {"project": "default", "destination": {}}},
    ]
    with pytest.raises(AssertionError) as caught:
        validate_objects(docs, "rendered")
    message = str(caught.value)
    for fragment in [
        "rendered [doc 0, v1 ConfigMap a] $.metadata.annotations.n: value must be a string, got int 1",
        "rendered [doc 0, v1 ConfigMap a] $.metadata.annotations.b: value must be a string, got bool True",
        "rendered [doc 1, v1 ConfigMap Upper_Case] $.metadata.name: 'Upper_Case' is not a DNS-1123 subdomain",
        "rendered [doc 2, v1 Namespace has.dot] $.metadata.name: 'has.dot' is not a DNS-1123 label",
        "rendered [doc 3, v1 Service 1svc] $.metadata.name: '1svc' is not a DNS-1035 label",
        "rendered [doc 4, v1 ConfigMap l] $.metadata.labels.app: label value 'x y' is not valid",
        "rendered [doc 4, v1 ConfigMap l] $.metadata.labels.k: value must be a string, got int 1",
        "rendered [doc 5, v1 ConfigMap k] $.metadata.labels[\"Bad/x\"]: key 'Bad/x': prefix 'Bad' is not",
        "rendered [doc 5, v1 ConfigMap k] $.metadata.labels[\"-x\"]: key '-x': name part '-x' is not",
        "rendered [doc 6, v1 ConfigMap] $.metadata.nam: unknown ObjectMeta field",
        "rendered [doc 6, v1 ConfigMap] $.metadata.name: required string is missing",
        "rendered [doc 7, v1 ConfigMap ns] $.metadata.namespace: 'Not_OK' is not a DNS-1123 label",
        "rendered [doc 8, v1 ConfigMap " + "x" * 254 + "] $.metadata.name:",
        'rendered [doc 9, argoproj.io/v1alpha1 Application a] $.metadata.annotations["argocd.argoproj.io/sync-wave"]'
        ": value must be a string, got int 1",
    ]:
        assert fragment in message, fragment
    good = {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "a.b-c", "namespace": "ns", "labels": {"example.com/Key_1": "", "a": "B.c-1"},
                         "annotations": {"x": "1", "helm.sh/hook": "pre-install"}, "finalizers": ["x.io/f"]}}
    assert validate_objects([good, None]) == 1


def test_yaml_is_read_like_kubernetes_tooling() -> None:
    message = problems_of({
        "dup.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {a: '1', a: '2'}\n",
        "broken.yaml": b"apiVersion: v1\nkind: [\n",
        "scalar.yaml": b"just a string\n",
    })
    assert ("dup.yaml [doc 0]: YAML error: while constructing a mapping (line 4, column 7); found duplicate "
            "key 'a' (first at line 4) (line 4, column 16)") in message
    assert "broken.yaml [doc 0]: YAML error: while parsing a flow node" in message
    assert "scalar.yaml [doc 0] $: a Kubernetes object must be a mapping, got str" in message
    # data files must still parse; the failing document is named
    assert "x/values.yaml [doc 1]: YAML error:" in problems_of({"x/values.yaml": b"a: 1\n---\na: [\n"})
    # go-yaml v2 (kubectl, Argo CD, Flux) reads these unquoted words as booleans
    def configmap(value: str) -> bytes:
        return f"apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: a}}\ndata: {{k: {value}}}\n".encode()

    for word in ("yes", "No", "on", "OFF", "y", "N", "true"):
        assert "$.data.k: " in problems_of({"cm.yaml": configmap(word)}), word
        assert validate_manifests({"cm.yaml": configmap(f'"{word}"')}) == 1
    # timestamps stay strings (go-yaml v2 does not decode them into interface{})
    assert validate_manifests({"cm.yaml": b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n"
                                          b"data: {t: 2024-01-01T00:00:00Z}\n"}) == 1


def test_roles_override_and_schemastore_files() -> None:
    files = {
        "kustomization.yaml": b"resources: just-a-string.yaml\n",
        "helmfile.yaml": b"helmfiles: [level-0.yaml]\n",
        "level-0.yaml": b"releases: {name: not-a-list}\n",
        "chart/Chart.yaml": b"apiVersion: v9\nname: c\n",
        "notes/extra.yaml": b"not: a manifest\n",
    }
    message = problems_of(files)
    assert "kustomization.yaml [doc 0] $.resources: 'just-a-string.yaml' is not of type 'array' " \
           "(SchemaStore kustomization.json)" in message
    assert "level-0.yaml [doc 0] $.releases: {'name': 'not-a-list'} is not of type 'array' " \
           "(SchemaStore helmfile.json)" in message
    assert "chart/Chart.yaml [doc 0] $: 'version' is a required property (SchemaStore chart.json)" in message
    assert "chart/Chart.yaml [doc 0] $.apiVersion: 'v9' is not one of" in message
    assert "notes/extra.yaml [doc 0] $.apiVersion: required string field is missing" in message
    assert validate_manifests({"notes/extra.yaml": files["notes/extra.yaml"]}, roles={"notes/*": "data"}) == 0
    assert "notes/extra.yaml [doc 0] $.apiVersion" in problems_of(
        {"notes/extra.yaml": files["notes/extra.yaml"], "t.yaml": b"{{ bad }}\n"}, roles={"t.yaml": "skip"})
    with pytest.raises(ValueError, match="not one of"):
        validate_manifests({"a.yaml": b"{}"}, roles={"*": "nonsense"})


# ------------------------------------------------------------------------------------------- helm


def write_chart(root: Path, template: str) -> Path:
    chart = root / "tiny"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: tiny\ndescription: tiny\nversion: 0.1.0\n"
                                      "appVersion: 1.0.0\nicon: https://example.com/icon.png\n")
    (chart / "values.yaml").write_text("greeting: hello\nreplicas: 1\n")
    (chart / "templates" / "configmap.yaml").write_text(textwrap.dedent(template).lstrip())
    return chart


GOOD_TEMPLATE = """
    apiVersion: v1
    kind: ConfigMap
    metadata:
      name: {{ .Release.Name }}-tiny
      labels:
        app.kubernetes.io/name: {{ .Chart.Name }}
    data:
      greeting: {{ .Values.greeting | quote }}
    """


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_helm_lint_and_template(helm: str, tmp_path: Path) -> None:
    chart = write_chart(tmp_path, GOOD_TEMPLATE)
    assert "1 chart(s) linted, 0 chart(s) failed" in helm_lint(chart, helm)
    docs = helm_template(chart, helm, release="demo", namespace="gpu")
    assert docs == [{"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "demo-tiny", "labels": {"app.kubernetes.io/name": "tiny"}},
                     "data": {"greeting": "hello"}}]
    assert validate_objects(docs) == 1
    assert helm_template(chart, helm, {"greeting": "hi"})[0]["data"] == {"greeting": "hi"}
    values = tmp_path / "override.yaml"
    values.write_text("greeting: from-file\n")
    assert helm_template(chart, tool_path(helm), values)[0]["data"] == {"greeting": "from-file"}

    broken = write_chart(tmp_path / "broken", GOOD_TEMPLATE.replace("| quote", "| nosuchfunc"))
    with pytest.raises(AssertionError, match=r'(?s)lint .*exit 1.*function "nosuchfunc" not defined'):
        helm_lint(broken, helm)
    with pytest.raises(AssertionError, match=r'(?s)template .*exit 1.*function "nosuchfunc" not defined'):
        helm_template(broken, helm)

    # renders, but as an int that the API server would reject: the pipeline catches it
    numeric = write_chart(tmp_path / "numeric", GOOD_TEMPLATE.replace(".Values.greeting | quote", ".Values.replicas"))
    with pytest.raises(AssertionError, match=r"\$\.data\.greeting: 1 is not of type 'string'"):
        validate_objects(helm_template(numeric, helm), f"{helm} template")


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_helm_runs_offline_in_private_homes(helm: str, tmp_path: Path) -> None:
    chart = write_chart(tmp_path, GOOD_TEMPLATE)
    with (chart / "Chart.yaml").open("a") as fh:
        fh.write("dependencies: [{name: remote, version: 1.0.0, repository: https://charts.example.com}]\n")
    with pytest.raises(AssertionError, match="missing in charts/ directory"):
        helm_template(chart, helm)
    # any attempt to reach a registry fails at once through the dead proxy
    with pytest.raises(AssertionError, match=r"proxyconnect tcp: dial tcp 127\.0\.0\.1:9"):
        helm_template("oci://ghcr.io/nvidia/gpu-operator", helm, extra_args=["--version", "v25.10.1"])


def test_tool_path_fails_clearly_when_tools_are_missing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_GEN_TOOLS", str(tmp_path))
    with pytest.raises(pytest.fail.Exception, match=r"helm3 not found at .*run scripts/test.sh"):
        tool_path("helm3")
    with pytest.raises(ValueError, match="unknown tool"):
        tool_path("kubeconform")
    assert tool_path("kubectl").name == "kubectl"


# -------------------------------------------------------------------------------------- kustomize


def test_kustomize_build(tmp_path: Path) -> None:
    base = tmp_path / "base"
    base.mkdir()
    (base / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: '1'}\n")
    (base / "kustomization.yaml").write_text(textwrap.dedent("""
        apiVersion: kustomize.config.k8s.io/v1beta1
        kind: Kustomization
        namespace: demo
        namePrefix: aicr-
        resources: [cm.yaml]
        configMapGenerator: [{name: generated, literals: [k=v]}]
        """))
    docs = kustomize_build(base)
    assert [(d["metadata"]["name"][:14], d["metadata"]["namespace"]) for d in docs] == [
        ("aicr-generated", "demo"), ("aicr-settings", "demo")]
    assert validate_objects(docs) == 2
    assert validate_manifests(consumers.read_tree(base)) == 2

    (base / "kustomization.yaml").write_text("resources: [missing.yaml]\n")
    with pytest.raises(AssertionError, match=r"(?s)kubectl kustomize .*exit 1.*missing\.yaml"):
        kustomize_build(base)


@pytest.mark.parametrize("helm", ["helm3", "helm4"])
def test_kustomize_inflates_local_charts_with_real_helm(helm: str, tmp_path: Path) -> None:
    write_chart(tmp_path / "charts", GOOD_TEMPLATE)
    (tmp_path / "kustomization.yaml").write_text(textwrap.dedent("""
        helmGlobals: {chartHome: charts}
        helmCharts: [{name: tiny, releaseName: demo, namespace: gpu, valuesInline: {greeting: inflated}}]
        """))
    docs = kustomize_build(tmp_path, helm=helm)
    assert [(d["metadata"]["name"], d["data"]) for d in docs] == [("demo-tiny", {"greeting": "inflated"})]


# -------------------------------------------------------------------------------------- shellcheck


def test_shellcheck(tmp_path: Path) -> None:
    good = tmp_path / "good.sh"
    good.write_text('#!/usr/bin/env bash\nset -euo pipefail\ncd "$(dirname "$0")"\necho "$1"\n')
    shellcheck([good])
    bad = tmp_path / "bad.sh"
    bad.write_text("#!/usr/bin/env bash\ncd $1\necho $1\n")
    with pytest.raises(AssertionError) as caught:
        shellcheck([good, bad])
    assert "SC2086" in str(caught.value)
    assert "SC2164" in str(caught.value)
    assert str(bad) in str(caught.value)
    shellcheck([bad], exclude=["SC2086", "SC2164"])
    with pytest.raises(AssertionError, match="no scripts"):
        shellcheck([])
