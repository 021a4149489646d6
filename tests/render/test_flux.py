"""The flux deployer as users run it: ``aicr-gen recipe``, ``aicr-gen bundle --deployer flux``, then Flux.

Three recipes: AICR's CUJ2 (eks/h100/ubuntu/inference/dynamo, from AICR's own catalog: OCI and HTTPS charts,
``-post`` units, manifest-only components), the embedded catalog's eks/h100/ubuntu/training/kubeflow, and the
small catalog with ``FLUX_ADDITIONS``: a Kustomize component sits between Helm components, one component has
``-pre`` and ``-post`` units, two charts share an HTTPS repository and an OCI chart's version has build
metadata.

The consumers are real: ``kubectl kustomize`` builds the bundle (and every folder a Flux Kustomization of
the bundle points at), every object is checked against the Flux CRDs and Kubernetes schemas, helm renders
each local chart the way helm-controller would, and the Flux semantics are checked on the built objects:
every ``dependsOn`` names an object of its own kind (Flux cannot wait across kinds), every source
reference resolves, and the dependency graph is the recipe's, computed here from recipe.yaml.
"""

from __future__ import annotations

import itertools
import posixpath
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bundles import (
    FOREIGN_KINDS,
    KUSTOMIZE_ADDON,
    RECIPES,
    SMALL_CATALOG,
    Cli,
    Rendered,
    YAMLSnapshot,
    render,
    small_leaf,
    write_recipe,
)
from tests.conftest import assert_refused, needs_reference
from tests.consumers import helm_template, kustomize_build, read_tree, validate_manifests, validate_objects

REPO = "https://github.com/acme/gpu-gitops.git"
SSH_REPO = "git@github.com:acme/gpu-gitops.git"
COMMIT = "0123456789abcdef0123456789abcdef01234567"
FLUX_NS = "flux-system"
HELM_RELEASE, KUSTOMIZATION = "HelmRelease", "Kustomization"
SOURCE_KINDS = ("HelmRepository", "OCIRepository", "GitRepository")
TEMPLATED = "{{ .Release.Name }}-{{ .Values.x }}"

FLUX_ADDITIONS = (KUSTOMIZE_ADDON, small_leaf("small-flux", "small-kustomize", f"""\
    - name: addon
      namespace: addon-system
    - name: web
      version: v1.2.3+build.7
      dependencyRefs:
        - addon
    - name: api
      overrides:
        greeting: "{TEMPLATED}"
    - name: worker
      type: Helm
      source: https://registry.example.com/charts
      chart: worker
      version: 2.0.0
      namespace: worker
      dependencyRefs:
        - api
    """))
"""The small recipe with ``addon``, a Kustomize source in its own namespace that waits for platform-config and
that web waits for; web's OCI tag with build metadata; a templated value in api's catalog overrides; and
``worker``, a chart (unknown to the registry) from api's repository."""


@dataclass(frozen=True)
class FluxBundle(Rendered):
    """A flux bundle, with the --repo URL as Flux clones it and the deployer path it was rendered for."""

    url: str = REPO
    path: str = ""


def _render(cli: Cli, tmp_path: Path, name: str, *bundle_args: str, repo: str = REPO, path: str = "",
            out: Path | None = None) -> FluxBundle:
    settings = ("--set", f"deployer:path={path}") if path else ()
    plain = render(cli, name, "flux", tmp_path, "--repo", repo, *settings, *bundle_args, additions=FLUX_ADDITIONS,
                   out=out)
    url = "ssh://git@github.com/acme/gpu-gitops.git" if repo == SSH_REPO else repo
    return FluxBundle(plain.source, plain.recipe, plain.root, url, path)


def _applied(rendered: FluxBundle, elsewhere: Collection[str] = ()) -> dict[tuple[str, str], dict[str, Any]]:
    """Every object Flux applies: the root ``kubectl kustomize`` build, plus the build of each folder a
    Flux Kustomization of this bundle points at (inside the bundle repository), except the ``elsewhere``
    paths of the repository outside the bundle."""
    objects: dict[tuple[str, str], dict[str, Any]] = {}
    pending = [rendered.root]
    while pending:
        built = kustomize_build(pending.pop())
        for obj in built:
            key = (obj["kind"], obj["metadata"]["name"])
            assert key not in objects, f"{key} is applied twice"
            objects[key] = obj
        for obj in built:
            ref = obj["spec"]["sourceRef"] if obj["kind"] == KUSTOMIZATION else {}
            source = objects.get((ref.get("kind", ""), ref.get("name", "")))
            if (source and source["kind"] == "GitRepository" and source["spec"]["url"] == rendered.url
                    and obj["spec"]["path"] not in elsewhere):
                pending.append(_bundle_folder(rendered, obj["spec"]["path"]))
    return objects


def _bundle_folder(rendered: FluxBundle, repo_path: str) -> Path:
    """The bundle folder behind ``./<path>/<rest>`` of the bundle repository."""
    relative = posixpath.normpath(repo_path)
    prefix = posixpath.normpath(rendered.path) if rendered.path else "."
    inside = posixpath.relpath(relative, prefix)
    assert not inside.startswith(".."), f"{repo_path} is outside the bundle folder {prefix}"
    return rendered.root / inside


def _enabled(ref: dict[str, Any]) -> bool:
    overrides = ref.get("overrides") or {}
    return overrides.get("enabled") is not False and overrides.get("install") is not False


def _expected_graph(recipe: dict[str, Any]) -> dict[str, set[str]]:
    """Unit -> the units it waits for, from recipe.yaml alone: ``<c>-pre`` (preManifestFiles), ``<c>``, and
    ``<c>-post`` (manifestFiles next to a chart); a component's first unit waits for the last unit of each
    enabled dependency."""
    refs = {ref["name"]: ref for ref in recipe["componentRefs"]}
    kept = [name for name in recipe["deploymentOrder"] if _enabled(refs[name])]
    units: dict[str, list[str]] = {}
    for name in kept:
        ref = refs[name]
        post = bool(ref.get("manifestFiles")) and bool(ref.get("source")) and ref.get("type") != "Kustomize"
        units[name] = [*([f"{name}-pre"] if ref.get("preManifestFiles") else []), name,
                       *([f"{name}-post"] if post else [])]
    graph: dict[str, set[str]] = {}
    for name in kept:
        chain = units[name]
        graph[chain[0]] = {units[dep][-1] for dep in refs[name].get("dependencyRefs", []) if dep in units}
        graph.update({later: {earlier} for earlier, later in itertools.pairwise(chain)})
    return graph


def _of_kind(objects: dict[tuple[str, str], dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {name: obj for (k, name), obj in objects.items() if k == kind}


# ------------------------------------------------------------------ the bundle builds and validates


@pytest.mark.parametrize("name", RECIPES)
def test_kubectl_kustomize_builds_the_bundle_and_every_object_validates(cli: Cli, tmp_path: Path, name: str) -> None:
    rendered = _render(cli, tmp_path, name, path="clusters/gpu" if name == "small" else "")
    files = read_tree(rendered.root)
    assert validate_manifests(files) > len(_expected_graph(rendered.recipe))
    objects = _applied(rendered)
    assert validate_objects(objects.values(), "flux bundle") == len(objects)
    # Nothing is left out: every manifest of the bundle is applied, directly or through a Flux Kustomization.
    manifests = {(doc["kind"], doc["metadata"]["name"]) for rel, data in files.items()
                 if rel.endswith(".yaml") and "/chart/" not in rel and posixpath.basename(rel) not in (
                     "kustomization.yaml", "recipe.yaml", "bundle-info.yaml")
                 for doc in yaml.safe_load_all(data) if doc}
    assert set(objects) == manifests
    assert {obj["metadata"].get("namespace") for obj in objects.values() if obj["kind"] != "Namespace"} == {FLUX_NS}


@pytest.mark.parametrize("name", RECIPES)
def test_depends_on_mirrors_the_recipe_dependencies(cli: Cli, tmp_path: Path, name: str) -> None:
    rendered = _render(cli, tmp_path, name)
    objects = _applied(rendered)
    releases, kustomizations = _of_kind(objects, HELM_RELEASE), _of_kind(objects, KUSTOMIZATION)
    graph: dict[str, set[str]] = {}
    for kind, targets in ((HELM_RELEASE, releases), (KUSTOMIZATION, kustomizations)):
        for unit, obj in _of_kind(objects, kind).items():
            waits = [dep["name"] for dep in obj["spec"].get("dependsOn", [])]
            # Flux only waits for objects of its own kind (HelmRelease -> HelmRelease, Kustomization ->
            # Kustomization) in its own namespace; anything else would wait forever.
            assert set(waits) <= set(targets), f"{kind} {unit} waits for {set(waits) - set(targets)}"
            assert all(set(dep) == {"name"} for dep in obj["spec"].get("dependsOn", []))
            graph.setdefault(unit, set()).update(waits)
    assert graph == _expected_graph(rendered.recipe)


@needs_reference
def test_cuj2_depends_on_keeps_the_recipe_order(cli: Cli, tmp_path: Path) -> None:
    rendered = _render(cli, tmp_path, "cuj2")
    refs = {ref["name"]: ref for ref in rendered.recipe["componentRefs"]}
    release = yaml.safe_load((rendered.root / "017-dynamo-platform/helmrelease.yaml").read_text(encoding="utf-8"))
    assert [dep["name"] for dep in release["spec"]["dependsOn"]] == refs["dynamo-platform"]["dependencyRefs"]


# ------------------------------------------------------------------ sources


@pytest.mark.parametrize("name", RECIPES)
def test_sources_are_deduplicated_and_every_reference_resolves(cli: Cli, tmp_path: Path, name: str) -> None:
    rendered = _render(cli, tmp_path, name)
    objects = _applied(rendered)
    refs = {ref["name"]: ref for ref in rendered.recipe["componentRefs"] if _enabled(ref)}
    helm_refs = [ref for ref in refs.values() if ref.get("type") != "Kustomize" and ref.get("source")]
    sources = {kind: _of_kind(objects, kind) for kind in SOURCE_KINDS}
    assert sorted(obj["spec"]["url"] for obj in sources["HelmRepository"].values()) == sorted(
        {ref["source"] for ref in helm_refs if not ref["source"].startswith("oci://")})
    assert sorted((obj["spec"]["url"], obj["spec"]["ref"]["tag"]) for obj in sources["OCIRepository"].values()
                  if "layerSelector" in obj["spec"]) == sorted(
        {(f"{ref['source'].rstrip('/')}/{ref['chart']}", ref["version"].replace("+", "_"))
         for ref in helm_refs if ref["source"].startswith("oci://")})
    for kind in SOURCE_KINDS:
        keys = [(obj["spec"]["url"], str(obj["spec"].get("ref"))) for obj in sources[kind].values()]
        assert len(keys) == len(set(keys)), f"duplicate {kind}"
    assert any(obj["spec"]["url"] == REPO for obj in sources["GitRepository"].values())

    for unit, release in _of_kind(objects, HELM_RELEASE).items():
        spec = release["spec"]
        # Flux's own release name and storage, as AICR's bundles leave them (a cluster keeps its releases)
        assert "releaseName" not in spec and "storageNamespace" not in spec
        assert spec["install"] == {"createNamespace": True}
        component = refs[unit.removesuffix("-pre").removesuffix("-post") if unit not in refs else unit]
        assert spec["targetNamespace"] == component["namespace"]
        if "chartRef" in spec:
            oci = sources["OCIRepository"][spec["chartRef"]["name"]]
            assert (oci["spec"]["url"], oci["spec"]["ref"]["tag"]) == (
                f"{component['source'].rstrip('/')}/{component['chart']}", component["version"].replace("+", "_"))
            continue
        chart = spec["chart"]["spec"]
        source = sources[chart["sourceRef"]["kind"]][chart["sourceRef"]["name"]]
        if chart["sourceRef"]["kind"] == "HelmRepository":
            # the version as AICR writes it, without a leading 'v' (a semver range to source-controller)
            assert (source["spec"]["url"], chart["chart"], chart["version"]) == (
                component["source"], component["chart"], component["version"].removeprefix("v"))
        else:
            assert source["spec"]["url"] == REPO
            assert (_bundle_folder(rendered, chart["chart"]) / "Chart.yaml").is_file()
    for unit, flux in _of_kind(objects, KUSTOMIZATION).items():
        source = sources[flux["spec"]["sourceRef"]["kind"]][flux["spec"]["sourceRef"]["name"]]
        if unit in refs and refs[unit].get("type") == "Kustomize":
            assert (source["spec"]["url"], source["spec"]["ref"], flux["spec"]["path"]) == (
                refs[unit]["source"], {"tag": refs[unit]["tag"]}, f"./{refs[unit]['path']}")
            assert flux["spec"]["targetNamespace"] == refs[unit]["namespace"]


@pytest.mark.parametrize("name", [pytest.param("cuj2", marks=needs_reference), "small"])
def test_local_charts_render_with_helm_as_helm_controller_would(cli: Cli, tmp_path: Path, name: str) -> None:
    rendered = _render(cli, tmp_path, name)
    local = [obj["spec"] for obj in _of_kind(_applied(rendered), HELM_RELEASE).values()
             if "chart" in obj["spec"] and obj["spec"]["chart"]["spec"]["sourceRef"]["kind"] == "GitRepository"]
    assert local
    for spec in local:
        assert "values" not in spec  # the chart's own values.yaml carries them
        assert spec["chart"]["spec"]["reconcileStrategy"] == "Revision"
        objects = helm_template(_bundle_folder(rendered, spec["chart"]["spec"]["chart"]), "helm3",
                                release="release", namespace=spec["targetNamespace"])
        validate_objects(objects, spec["chart"]["spec"]["chart"], unchecked_kinds=FOREIGN_KINDS)


# ------------------------------------------------------------------ values, mixed kinds, options


@needs_reference
def test_values_with_template_braces_arrive_literally(cli: Cli, tmp_path: Path) -> None:
    rendered = _render(cli, tmp_path, "cuj2", "--set", f"gpu-operator:note={TEMPLATED}")
    releases = _of_kind(_applied(rendered), HELM_RELEASE)
    assert releases["gpu-operator"]["spec"]["values"]["note"] == TEMPLATED
    small = _of_kind(_applied(_render(cli, tmp_path / "small", "small")), HELM_RELEASE)
    assert small["api"]["spec"]["values"]["greeting"] == TEMPLATED


def test_helm_releases_next_to_a_kustomize_unit_are_applied_through_a_waiting_kustomization(
        cli: Cli, tmp_path: Path) -> None:
    rendered = _render(cli, tmp_path, "small", path="clusters/gpu")
    objects = _applied(rendered)
    kustomizations = _of_kind(objects, KUSTOMIZATION)
    # addon waits for platform-config (a HelmRelease) and web-pre (a HelmRelease) waits for addon: both
    # releases are applied by a Flux Kustomization of their own name, which is Ready only when the release is.
    assert sorted(kustomizations) == ["addon", "platform-config", "web-pre"]
    for unit in ("platform-config", "web-pre"):
        spec = kustomizations[unit]["spec"]
        assert (spec["wait"], spec["prune"]) == (True, True)
        folder = _bundle_folder(rendered, spec["path"])
        assert [(obj["kind"], obj["metadata"]["name"]) for obj in kustomize_build(folder)] == [(HELM_RELEASE, unit)]
    assert [dep["name"] for dep in kustomizations["addon"]["spec"]["dependsOn"]] == ["platform-config"]
    assert [dep["name"] for dep in kustomizations["web-pre"]["spec"]["dependsOn"]] == ["addon"]
    assert objects[("Namespace", "addon-system")]["metadata"]["annotations"] == {
        "kustomize.toolkit.fluxcd.io/prune": "disabled"}
    readme = (rendered.root / "README.md").read_text(encoding="utf-8")
    assert "--path=./clusters/gpu" in readme
    assert readme.index("flux delete helmrelease web-post") < readme.index(
        "flux delete kustomization platform-config")


def test_ssh_repositories_and_pinned_commits_become_flux_git_sources(cli: Cli, tmp_path: Path) -> None:
    rendered = _render(cli, tmp_path, "small", "--set", f"deployer:targetRevision={COMMIT}", repo=SSH_REPO)
    repos = _of_kind(_applied(rendered), "GitRepository")
    bundle_repo = next(obj for obj in repos.values() if "acme" in obj["spec"]["url"])
    assert bundle_repo["spec"]["url"] == "ssh://git@github.com/acme/gpu-gitops.git"
    assert bundle_repo["spec"]["ref"] == {"commit": COMMIT}
    refused = rendered.source.run_bundle(cli, "flux", tmp_path / "ftp", "--repo", "ftp://example.com/repo.git")
    assert_refused(refused, "--repo", "ftp://example.com/repo.git", "ssh://")


def test_a_kustomize_component_without_a_pinned_tag_is_refused(cli: Cli, tmp_path: Path) -> None:
    untagged = {"registry.yaml": SMALL_CATALOG["registry.yaml"].replace("      defaultTag: v0.3.0\n", "")}
    recipe = write_recipe(cli, "small", tmp_path, *FLUX_ADDITIONS, untagged)
    result = recipe.run_bundle(cli, "flux", tmp_path / "out", "--repo", REPO)
    assert_refused(result, "component 'addon'", "without a tag")


def test_extra_paths_become_kustomizations_applied_once_the_whole_stack_is_ready(cli: Cli, tmp_path: Path) -> None:
    extra = {"./clusters/gpu/certification": "certification", "./clusters/gpu/snapshot-agent": "snapshot-agent"}
    folders = ",".join(path.removeprefix("./") for path in extra)
    rendered = _render(cli, tmp_path, "small", "--set", f"deployer:extraPaths={folders}", path="clusters/gpu/flux")
    objects = _applied(rendered, elsewhere=extra)
    assert validate_objects(objects.values(), "flux bundle") == len(objects)
    kustomizations = _of_kind(objects, KUSTOMIZATION)
    added = {flux["spec"]["path"]: name for name, flux in kustomizations.items() if flux["spec"]["path"] in extra}
    assert added == extra
    bundle_repo = next(name for name, repo in _of_kind(objects, "GitRepository").items()
                       if repo["spec"]["url"] == REPO)
    interval = objects[(HELM_RELEASE, "api")]["spec"]["interval"]
    waits: dict[str, set[str]] = {}
    for (kind, name), obj in objects.items():
        if kind in (HELM_RELEASE, KUSTOMIZATION):
            waits.setdefault(name, set()).update(dep["name"] for dep in obj["spec"].get("dependsOn", []))
    units = set(_expected_graph(rendered.recipe))
    for name in extra.values():
        spec = kustomizations[name]["spec"]
        assert spec["sourceRef"] == {"kind": "GitRepository", "name": bundle_repo, "namespace": FLUX_NS}
        assert (spec["prune"], spec["interval"]) == (True, interval)
        # Flux waits only for Kustomizations, each Ready once what it applied is: every unit has been
        # Ready before the ones this waits for started.
        assert waits[name] <= {dep for dep, flux in kustomizations.items() if flux["spec"]["wait"]}
        before, pending = set(), list(waits[name])
        while pending:
            unit = pending.pop()
            before.add(unit)
            pending += waits[unit] - before
        assert before == units
    # The graph of the stack itself is unchanged.
    assert {unit: waits[unit] for unit in units} == _expected_graph(rendered.recipe)
    resources = yaml.safe_load((rendered.root / "kustomization.yaml").read_text(encoding="utf-8"))["resources"]
    assert {f"extra-{name}/flux-kustomization.yaml" for name in extra.values()} <= set(resources)
    readme = (rendered.root / "README.md").read_text(encoding="utf-8")
    assert all(f"`{path.removeprefix('./')}`" in readme for path in extra)
    assert readme.index("flux delete kustomization certification") < readme.index("flux delete helmrelease api")


# ------------------------------------------------------------------ snapshot and determinism


@needs_reference
@pytest.mark.parametrize("file", ["kustomization.yaml", "006-agentgateway/helmrelease.yaml",
                                  "017-dynamo-platform/helmrelease.yaml"], ids=["root", "oci", "https"])
def test_cuj2_files_are_pinned(cli: Cli, tmp_path: Path, snapshot: Any, file: str) -> None:
    rendered = _render(cli, tmp_path, "cuj2")
    assert (rendered.root / file).read_text(encoding="utf-8") == snapshot(extension_class=YAMLSnapshot)


@needs_reference
def test_rendering_is_deterministic(cli: Cli, tmp_path: Path) -> None:
    first = read_tree(_render(cli, tmp_path / "a", "cuj2").root)
    second = read_tree(_render(cli, tmp_path / "b", "cuj2", out=tmp_path / "b" / "elsewhere").root)
    assert first == second


def test_an_extra_path_namespace_no_component_creates_is_applied_with_the_bundle(cli: Cli, tmp_path: Path) -> None:
    # worker is the namespace of a component (its HelmRelease creates it); aicr is nobody's
    value = "clusters/gpu/snapshot-agent=aicr,clusters/gpu/certification=worker,clusters/gpu/cron=aicr"
    rendered = _render(cli, tmp_path, "small", "--set", f"deployer:extraPaths={value}", path="clusters/gpu/flux")
    built = kustomize_build(rendered.root)
    namespaces = [obj for obj in built if obj["kind"] == "Namespace"]
    assert [ns["metadata"]["name"] for ns in namespaces].count("aicr") == 1
    assert "worker" not in [ns["metadata"]["name"] for ns in namespaces]
    aicr = next(ns for ns in namespaces if ns["metadata"]["name"] == "aicr")
    # deleting a namespace deletes everything in it: Flux must never prune it
    assert aicr["metadata"]["annotations"] == {"kustomize.toolkit.fluxcd.io/prune": "disabled"}
    validate_objects(built, "flux bundle")
