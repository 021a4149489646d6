"""The argocd and argocd-helm deployers as users run them: ``aicr-gen recipe``, ``aicr-gen bundle``, then
what Argo CD and helm do with the folder. Three recipes: AICR's CUJ2 (eks/h100/ubuntu/inference/dynamo,
from AICR's own catalog, with OCI charts and -post units), the embedded catalog's
eks/h100/ubuntu/training/kubeflow, and a small catalog with -pre/-post units, a manifest-only component,
an OCI chart, an HTTPS chart and a Kustomize source.

The consumers are real: the Argo CD v3.5.1 Application CRD (with its CEL rules) for every Application,
helm 3 and helm 4 linting, templating and packaging the argocd-helm chart and every local chart. What each
Application must say (waves, sources, versions) is computed from recipe.yaml here, not taken from the
renderer.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.render.options import Options, check_deployer
from tests.bundles import (
    CHART_RECIPES,
    HELMS,
    KUSTOMIZE_ADDON,
    RECIPES,
    Cli,
    Rendered,
    Renderings,
    Unit,
    YAMLSnapshot,
    bundle_fixtures,
    check_local_charts,
    depths,
    render,
    write_recipe,
)
from tests.conftest import assert_refused, needs_reference
from tests.consumers import helm_lint, helm_template, read_tree, tool_path, validate_manifests, validate_objects

REPO = "https://git.example.com/platform/gitops.git"
DEPLOYERS = ("argocd", "argocd-helm")
APP = ("argoproj.io/v1alpha1", "Application")
WAVE = "argocd.argoproj.io/sync-wave"
TEMPLATE_TEXT = "{{ .Values.x }}"
EXTRA_PATHS = ("clusters/gpu/certification", "clusters/gpu/snapshot-agent", "clusters/other/certification")
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]{0,51}[a-z0-9])?$")

rendered, argocd = bundle_fixtures("argocd", "--repo", REPO, additions=[KUSTOMIZE_ADDON], bundle="argocd")
"""Each recipe's bundle per deployer (argocd unless named), rendered once per module; the small recipe with
``addon``, a Kustomize source."""


@pytest.fixture(params=RECIPES)
def argocd_helm(request: pytest.FixtureRequest, cli: Cli, rendered: Renderings) -> Rendered:
    return rendered(cli, request.param, "argocd-helm")


def applications(bundle: Rendered) -> dict[str, dict[str, Any]]:
    """argocd bundles: unit folder -> its application.yaml."""
    return {unit.folder: yaml.safe_load((bundle.root / unit.folder / "application.yaml").read_text())
            for unit in bundle.units()}


def render_small(cli: Cli, deployer: str, folder: Path, *extra: str) -> Rendered:
    """The small recipe (with ``addon``) rendered for ``deployer`` into ``folder/<deployer>``."""
    return render(cli, "small", deployer, folder, "--repo", REPO, *extra, additions=[KUSTOMIZE_ADDON])


def expected_revision(ref: dict[str, Any]) -> str:
    """OCI tags are exact strings; classic repositories match semver, written without the v."""
    version = str(ref["version"])
    if ref["source"].startswith("oci://") or not version.startswith("v"):
        return version
    return version[1:]


def expected_source(unit: Unit) -> dict[str, Any]:
    """The chart source Argo CD needs for an upstream unit (without values)."""
    ref = unit.ref
    if ref["source"].startswith("oci://"):  # Argo CD >= 3.1 native OCI source; path '.' for Helm charts
        return {"repoURL": f"{ref['source'].rstrip('/')}/{ref.get('chart') or ref['name']}", "path": ".",
                "targetRevision": expected_revision(ref)}
    return {"repoURL": ref["source"], "chart": ref.get("chart") or ref["name"],
            "targetRevision": expected_revision(ref)}


def expected_waves(bundle: Rendered) -> dict[str, int]:
    """Unit name -> dependency depth of its component * 4 + {pre 0, main 1, post 2}."""
    depth = depths(bundle.recipe)
    return {unit.name: depth[unit.ref["name"]] * 4 + {"pre": 0, "main": 1, "post": 2}[unit.role]
            for unit in bundle.units()}


# ------------------------------------------------------------------ argocd: layout and the Argo CD CRD


def test_units_follow_the_deployment_order(argocd: Rendered) -> None:
    units = argocd.units()
    assert sorted(path.name for path in argocd.root.iterdir() if path.is_dir()) == [unit.folder for unit in units]
    for unit in units:
        files = {path.relative_to(argocd.root / unit.folder).as_posix()
                 for path in (argocd.root / unit.folder).rglob("*") if path.is_file()}
        assert "application.yaml" in files, unit.folder
        assert ("Chart.yaml" in files) == (unit.kind == "local"), unit.folder
        assert ("values.yaml" in files) == (unit.kind != "kustomize"), unit.folder
    assert {"app-of-apps.yaml", "README.md", "recipe.yaml", "checksums.txt"} <= {p.name for p in argocd.root.iterdir()}
    if argocd.name == "small":
        assert [(unit.name, unit.kind) for unit in units] == [
            ("platform-config", "local"), ("addon", "kustomize"), ("web-pre", "local"), ("web", "upstream"),
            ("web-post", "local"), ("api", "upstream")]


def test_every_application_validates_against_the_argo_cd_crd(argocd: Rendered) -> None:
    """app-of-apps.yaml and each application.yaml against Argo CD v3.5.1's CRD (+ CEL, + ObjectMeta);
    local Chart.yaml files against SchemaStore; values files must parse."""
    local = sum(unit.kind == "local" for unit in argocd.units())
    assert validate_manifests(read_tree(argocd.root)) == 1 + len(argocd.units()) + local


def test_app_of_apps_picks_up_exactly_the_applications(argocd: Rendered) -> None:
    parent = yaml.safe_load((argocd.root / "app-of-apps.yaml").read_text())
    assert parent["metadata"] == {"name": "nvidia-stack", "namespace": "argocd"}
    source = parent["spec"]["source"]
    assert (source["repoURL"], source["targetRevision"], source["path"]) == (REPO, "main", ".")
    assert source["directory"]["recurse"] is True
    # Argo CD's include glob lets '*' cross '/', like fnmatch.
    picked = sorted(path for path in read_tree(argocd.root) if fnmatch.fnmatch(path, source["directory"]["include"]))
    assert picked == [f"{unit.folder}/application.yaml" for unit in argocd.units()]
    assert parent["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "argocd"}
    assert parent["spec"]["syncPolicy"]["automated"] == {"prune": True, "selfHeal": True}


def test_sync_waves_put_every_dependency_first(argocd: Rendered) -> None:
    apps = applications(argocd)
    waves: dict[str, int] = {}
    for unit in argocd.units():
        annotation = apps[unit.folder]["metadata"]["annotations"][WAVE]
        assert isinstance(annotation, str), f"{unit.folder}: sync-wave must be a string"
        waves[unit.name] = int(annotation)
    assert waves == expected_waves(argocd)
    by_component: dict[str, list[Unit]] = {}
    for unit in argocd.units():
        by_component.setdefault(unit.ref["name"], []).append(unit)
    for unit in argocd.units():
        for dep in unit.ref.get("dependencyRefs", []):
            for other in by_component.get(dep, []):
                assert waves[unit.name] > waves[other.name], f"{unit.name} must sync after {other.name}"
        own = [waves[u.name] for u in by_component[unit.ref["name"]]]
        assert own == sorted(set(own)), f"{unit.ref['name']}: pre, main, post must be in rising waves"


def test_applications_point_at_their_sources(argocd: Rendered) -> None:
    files = read_tree(argocd.root)
    apps = applications(argocd)
    for unit in argocd.units():
        app = apps[unit.folder]
        spec = app["spec"]
        assert app["metadata"]["name"] == unit.name
        assert spec["destination"] == {"server": "https://kubernetes.default.svc",
                                       "namespace": unit.ref.get("namespace") or unit.ref["name"]}
        assert spec["project"] == "default"
        assert spec["syncPolicy"]["syncOptions"] == ["CreateNamespace=true", "ServerSideApply=true"]
        if unit.kind == "upstream":
            chart, values = spec["sources"]
            value_file = chart.pop("helm")["valueFiles"]
            assert chart == expected_source(unit), unit.folder
            assert value_file == [f"$values/{unit.folder}/values.yaml"]
            assert f"{unit.folder}/values.yaml" in files
            assert values == {"repoURL": REPO, "targetRevision": "main", "ref": "values"}
        elif unit.kind == "local":
            assert spec["source"] == {"repoURL": REPO, "targetRevision": "main", "path": unit.folder}
            assert f"{unit.folder}/Chart.yaml" in files
        else:
            ref = unit.ref
            assert spec["source"] == {"repoURL": ref["source"], "path": ref["path"], "targetRevision": ref["tag"]}


def test_small_versions_keep_the_oci_tag_and_drop_the_v_for_classic_repositories(
        cli: Cli, rendered: Renderings) -> None:
    apps = applications(rendered(cli, "small", "argocd"))
    assert apps["004-web"]["spec"]["sources"][0]["targetRevision"] == "v1.2.3"
    assert apps["004-web"]["spec"]["sources"][0]["repoURL"] == "oci://registry.example.com/charts/web"
    assert apps["006-api"]["spec"]["sources"][0]["targetRevision"] == "0.9.0"


@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize("name", CHART_RECIPES)
def test_local_charts_lint_and_template(cli: Cli, rendered: Renderings, name: str, helm: str) -> None:
    """What Argo CD does with a local folder: helm template it with the Application's release name."""
    check_local_charts(rendered(cli, name, "argocd"), helm)


def test_readme_says_how_to_install_and_remove(cli: Cli, rendered: Renderings) -> None:
    bundle = rendered(cli, "small", "argocd")
    text = (bundle.root / "README.md").read_text()
    assert "kubectl apply --namespace argocd -f app-of-apps.yaml" in text
    assert REPO in text
    assert "kubectl delete application nvidia-stack --namespace argocd" in text
    assert "for app in api web-post web web-pre addon platform-config; do" in text


def test_repo_path_and_prefix_settings_reach_every_application(cli: Cli, tmp_path: Path) -> None:
    bundle = render_small(cli, "argocd", tmp_path, "--set", "deployer:path=clusters/prod",
                          "--set", "deployer:namePrefix=team-a-", "--set", "deployer:project=gpu")
    parent = yaml.safe_load((bundle.root / "app-of-apps.yaml").read_text())
    assert parent["spec"]["source"]["path"] == "clusters/prod"
    apps = applications(bundle)
    assert apps["004-web"]["spec"]["sources"][0]["helm"]["valueFiles"] == ["$values/clusters/prod/004-web/values.yaml"]
    assert apps["001-platform-config"]["spec"]["source"]["path"] == "clusters/prod/001-platform-config"
    assert {app["metadata"]["name"] for app in apps.values()} == {f"team-a-{unit.name}" for unit in bundle.units()}
    assert {app["spec"]["project"] for app in apps.values()} == {"gpu"}
    validate_manifests(read_tree(bundle.root))


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_names_over_53_characters_are_refused(cli: Cli, tmp_path: Path, deployer: str) -> None:
    recipe = write_recipe(cli, "small", tmp_path, KUSTOMIZE_ADDON)
    prefix = "p" * (53 - len("platform-config") + 1)
    result = recipe.run_bundle(cli, deployer, tmp_path / "out", "--repo", REPO,
                               "--set", f"deployer:namePrefix={prefix}")
    assert_refused(result, "platform-config", "53")
    assert not (tmp_path / "out").exists()


def test_extra_paths_become_applications_synced_after_the_whole_stack(cli: Cli, tmp_path: Path) -> None:
    bundle = render_small(cli, "argocd", tmp_path, "--set", "deployer:path=clusters/gpu/argocd",
                          "--set", "deployer:namePrefix=team-", "--set", f"deployer:extraPaths={','.join(EXTRA_PATHS)}")
    files = read_tree(bundle.root)
    local = sum(unit.kind == "local" for unit in bundle.units())
    assert validate_manifests(files) == 1 + len(bundle.units()) + local + len(EXTRA_PATHS)
    include = yaml.safe_load((bundle.root / "app-of-apps.yaml").read_text())["spec"]["source"]["directory"]["include"]
    picked = [yaml.safe_load(files[path]) for path in sorted(files) if fnmatch.fnmatch(path, include)]
    units = {f"team-{unit.name}" for unit in bundle.units()}
    extra = {app["spec"]["source"]["path"]: app for app in picked if app["metadata"]["name"] not in units}
    assert sorted(extra) == sorted(EXTRA_PATHS)
    names = [app["metadata"]["name"] for app in picked]
    assert len(names) == len(set(names)) == len(bundle.units()) + len(EXTRA_PATHS)
    assert all(DNS_LABEL.match(name) for name in names), names
    assert extra["clusters/gpu/certification"]["metadata"]["name"] == "team-certification"
    assert extra["clusters/gpu/snapshot-agent"]["metadata"]["name"] == "team-snapshot-agent"
    assert extra["clusters/other/certification"]["metadata"]["name"].startswith("team-certification-")
    last_wave = max(int(app["metadata"]["annotations"][WAVE]) for app in applications(bundle).values())
    component = next(iter(applications(bundle).values()))["spec"]
    for path, app in extra.items():
        assert int(app["metadata"]["annotations"][WAVE]) > last_wave, f"{path} must sync after every component"
        spec = app["spec"]
        assert spec["source"] == {"repoURL": REPO, "targetRevision": "main", "path": path}
        assert spec["destination"] == {"server": "https://kubernetes.default.svc"}
        assert (spec["project"], spec["syncPolicy"]) == (component["project"], component["syncPolicy"])
    readme = (bundle.root / "README.md").read_text()
    assert all(f"`{path}`" in readme for path in EXTRA_PATHS)
    assert f"for app in {extra['clusters/other/certification']['metadata']['name']} team-snapshot-agent " \
           "team-certification team-api " in readme


@pytest.mark.parametrize("deployer", ["argocd", "flux"])
@pytest.mark.parametrize(("value", "says"), [
    ("../x", "'../x' is not a folder"), ("/abs/x", "'/abs/x' is not a folder"), ("a/b,a/b", "'a/b' is given twice"),
    ("", "'' is not a folder"), ("a,,b", "'' is not a folder"), ("a/./b", "'a/./b' is not a folder"),
], ids=["parent", "absolute", "duplicate", "empty", "empty-entry", "dot"])
def test_extra_paths_outside_the_repository_are_refused(cli: Cli, tmp_path: Path, deployer: str, value: str,
                                                        says: str) -> None:
    recipe = write_recipe(cli, "small", tmp_path, KUSTOMIZE_ADDON)
    result = recipe.run_bundle(cli, deployer, tmp_path / "out", "--repo", REPO, "--set", f"deployer:extraPaths={value}")
    assert_refused(result, "deployer:extraPaths", says, "relative paths" if "twice" not in says else "once")
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("deployer", ["helm", "helmfile", "argocd-helm"])
def test_deployers_that_do_not_read_the_repository_refuse_extra_paths(deployer: str) -> None:
    options = Options(extra_paths=("clusters/gpu/certification",))
    with pytest.raises(InvalidInputError, match="deployer:extraPaths applies to argocd and flux"):
        check_deployer(options, deployer)
    for reading in ("argocd", "flux"):
        check_deployer(options, reading)
    check_deployer(Options(), deployer)


# ------------------------------------------------------------------ argocd-helm: the bundle is a chart


@pytest.mark.parametrize("helm", HELMS)
def test_bundle_chart_lints_and_renders_the_same_applications(argocd_helm: Rendered, helm: str, cli: Cli,
                                                               rendered: Renderings) -> None:
    helm_lint(argocd_helm.root, helm)
    objects = helm_template(argocd_helm.root, helm, namespace="argocd")
    assert validate_objects(objects, "argocd-helm", unchecked_kinds=()) == len(argocd_helm.units()) + 1
    by_name = {obj["metadata"]["name"]: obj for obj in objects}
    assert by_name.pop("aicr-stack")["spec"]["source"]["repoURL"] == REPO
    plain = rendered(cli, argocd_helm.name, "argocd")
    for unit in argocd_helm.units():
        child, twin = by_name[unit.name], applications(plain)[unit.folder]
        assert child["metadata"] == twin["metadata"], unit.name
        assert (child["spec"]["destination"], child["spec"]["project"], child["spec"]["syncPolicy"]) == (
            twin["spec"]["destination"], twin["spec"]["project"], twin["spec"]["syncPolicy"])
        source = dict(child["spec"]["source"])
        helm_values = yaml.safe_load(source.pop("helm", {}).get("values", "{}"))
        if unit.kind == "upstream":
            assert source == expected_source(unit)
            assert helm_values == (yaml.safe_load((plain.root / unit.folder / "values.yaml").read_text()) or {})
        elif unit.kind == "local":
            assert source == {"repoURL": REPO, "targetRevision": "main", "path": unit.folder}
            assert helm_values == {unit.ref["name"]: {}}
            # the same wrapper chart as the argocd bundle's, which test_local_charts_lint_and_template checks
            chart = read_tree(argocd_helm.root / unit.folder)
            assert chart == {path: data for path, data in read_tree(plain.root / unit.folder).items()
                             if path != "application.yaml"}, unit.folder
        else:
            assert source == twin["spec"]["source"]


def test_bundle_chart_files(argocd_helm: Rendered) -> None:
    """Chart.yaml files against SchemaStore; static/ and values files parse; templates are helm's."""
    files = read_tree(argocd_helm.root)
    local = [unit for unit in argocd_helm.units() if unit.kind == "local"]
    assert validate_manifests(files) == 1 + len(local)
    chart = yaml.safe_load(files["Chart.yaml"])
    assert (chart["apiVersion"], chart["name"], chart["version"]) == ("v2", "aicr-bundle", "1.0.0")
    assert {path for path in files if path.startswith("static/")} == {
        f"static/{unit.name}.yaml" for unit in argocd_helm.units() if unit.kind == "upstream"}
    assert {path for path in files if path.startswith("templates/")} == {
        "templates/aicr-stack.yaml", *(f"templates/{unit.name}.yaml" for unit in argocd_helm.units())}
    assert {path.split("/")[0] for path in files if "/" in path} - {"static", "templates"} == {
        unit.folder for unit in local}


def test_install_time_values_reach_the_children(cli: Cli, rendered: Renderings) -> None:
    bundle = rendered(cli, "small", "argocd-helm")
    settings = {"repoURL": "https://mirror.example.com/gitops.git", "targetRevision": "v2",
                "deployer": {"namePrefix": "team-a-", "destinationServer": "https://gpu.example.com:6443",
                             "project": "gpu", "includeRootApp": False},
                "api": {"replicas": 3, "limits": {"cpu": "2"}}, "web": {"greeting": "hi"}}
    for helm in HELMS:
        objects = {obj["metadata"]["name"]: obj for obj in helm_template(bundle.root, helm, settings)}
        assert sorted(objects) == sorted(f"team-a-{unit.name}" for unit in bundle.units())
        validate_objects(objects.values())
        for obj in objects.values():
            assert obj["spec"]["project"] == "gpu"
            assert obj["spec"]["destination"]["server"] == "https://gpu.example.com:6443"
        api = yaml.safe_load(objects["team-a-api"]["spec"]["source"]["helm"]["values"])
        assert api == {"replicas": 3, "mode": "on", "limits": {"memory": "1Gi", "cpu": "2"}}
        post = objects["team-a-web-post"]["spec"]["source"]
        assert (post["repoURL"], post["targetRevision"]) == ("https://mirror.example.com/gitops.git", "v2")
        assert yaml.safe_load(post["helm"]["values"]) == {"web": {"greeting": "hi"}}


@pytest.mark.parametrize("helm", HELMS)
def test_local_charts_are_rendered_at_bundle_time(cli: Cli, rendered: Renderings, helm: str) -> None:
    """Manifests are rendered while bundling, as AICR renders them: install-time values reach the charts,
    not the local charts' objects."""
    bundle = rendered(cli, "small", "argocd-helm")
    objects = {obj["metadata"]["name"]: obj
               for obj in helm_template(bundle.root, helm, {"web": {"greeting": "hi"}})}
    for unit in (u for u in bundle.units() if u.kind == "local"):
        chart = bundle.root / unit.folder
        helm_lint(chart, helm)
        child_values = yaml.safe_load(objects[unit.name]["spec"]["source"]["helm"]["values"])
        rendered_objects = helm_template(chart, helm, child_values, release=unit.name, namespace="web")
        validate_objects(rendered_objects, unit.folder)
        if unit.name == "web-post":
            assert rendered_objects[0]["data"] == {"greeting": "hello"}


@pytest.mark.parametrize(("values", "says"), [
    ({"nope": 1}, "nope"),
    ({"repoURL": ""}, "repoURL"),
    ({"deployer": {"namePrefix": "Team_A"}}, "namePrefix"),
    ({"deployer": {"namePrefix": "a-very-long-prefix-for-a-multi-tenant-cluster-"}}, "53"),
    ({"web": "not a mapping"}, "web"),
])
def test_bad_install_time_values_fail_the_render(cli: Cli, rendered: Renderings,
                                                  values: dict[str, Any], says: str) -> None:
    bundle = rendered(cli, "small", "argocd-helm")
    for helm in HELMS:
        with pytest.raises(AssertionError, match=says):
            helm_template(bundle.root, helm, values)


def test_parent_application_passes_the_install_values_on(cli: Cli,
                                                         rendered: Renderings) -> None:
    bundle = rendered(cli, "small", "argocd-helm")
    objects = helm_template(bundle.root, "helm4", {"api": {"replicas": 5}}, namespace="argocd")
    (parent,) = [obj for obj in objects if obj["metadata"]["name"] == "aicr-stack"]
    assert parent["metadata"]["namespace"] == "argocd"
    assert "annotations" not in parent["metadata"]
    source = parent["spec"]["source"]
    assert (source["repoURL"], source["targetRevision"], source["path"]) == (REPO, "main", ".")
    given = source["helm"]["valuesObject"]
    assert given["api"] == {"replicas": 5}
    # Argo CD renders this chart from Git with the values the parent carries: the same children again.
    again = helm_template(bundle.root, "helm4", given, namespace="argocd")
    assert again == objects


def test_helmignore_keeps_unit_folders_out_of_the_chart_package(cli: Cli, tmp_path: Path,
                                                                 rendered: Renderings) -> None:
    bundle = rendered(cli, "small", "argocd-helm")
    env = {**os.environ, "HELM_CACHE_HOME": str(tmp_path / "c"), "HELM_CONFIG_HOME": str(tmp_path / "g"),
           "HELM_DATA_HOME": str(tmp_path / "d")}
    for helm in HELMS:
        subprocess.run([str(tool_path(helm)), "package", str(bundle.root), "-d", str(tmp_path / helm)], check=True,
                       capture_output=True, env=env, timeout=60)
        listing = subprocess.run(["tar", "tzf", str(tmp_path / helm / "aicr-bundle-1.0.0.tgz")], check=True,
                                 capture_output=True, text=True).stdout.split()
        inside = sorted(path.removeprefix("aicr-bundle/") for path in listing)
        assert not [path for path in inside if path[:3].isdigit()], inside
        assert {"Chart.yaml", "values.yaml", "values.schema.json", "static/web.yaml",
                "templates/web-post.yaml"} <= set(inside)


# ------------------------------------------------------------------ values survive as data


def test_template_syntax_in_values_arrives_literally(cli: Cli, tmp_path: Path) -> None:
    sets = ("--set", f"api:note={TEMPLATE_TEXT}", "--set", f"platform-config:tier={TEMPLATE_TEXT}")
    plain = render_small(cli, "argocd", tmp_path / "a", *sets)
    assert yaml.safe_load((plain.root / "006-api" / "values.yaml").read_text())["note"] == TEMPLATE_TEXT
    chart = render_small(cli, "argocd-helm", tmp_path / "b", *sets)
    for helm in HELMS:
        objects = {obj["metadata"]["name"]: obj for obj in helm_template(chart.root, helm)}
        assert yaml.safe_load(objects["api"]["spec"]["source"]["helm"]["values"])["note"] == TEMPLATE_TEXT
        for root in (plain.root, chart.root):
            (config,) = helm_template(root / "001-platform-config", helm, namespace="platform")
            assert config["data"] == {"tier": TEMPLATE_TEXT}


# ------------------------------------------------------------------ pinned output and determinism


@needs_reference
@pytest.mark.parametrize(("deployer", "path"), [
    pytest.param("argocd", "app-of-apps.yaml", id="app-of-apps"),
    pytest.param("argocd", "006-agentgateway/application.yaml", id="oci-application"),
    pytest.param("argocd", "014-gpu-operator/application.yaml", id="https-application"),
    pytest.param("argocd-helm", "values.yaml", id="chart-values"),
    pytest.param("argocd-helm", "templates/cert-manager.yaml", id="chart-child-template"),
])
def test_cuj2_output_is_pinned(cli: Cli, rendered: Renderings, deployer: str, path: str,
                               snapshot: Any) -> None:
    assert (rendered(cli, "cuj2", deployer).root / path).read_text() == snapshot(extension_class=YAMLSnapshot)


@pytest.mark.parametrize("deployer", DEPLOYERS)
def test_rendering_twice_gives_identical_bytes(cli: Cli, tmp_path: Path, deployer: str) -> None:
    first = render_small(cli, deployer, tmp_path / "one", "--set", "api:x=1")
    second = render_small(cli, deployer, tmp_path / "two", "--set", "api:x=1")
    assert read_tree(first.root) == read_tree(second.root)


def test_an_extra_path_with_its_namespace_makes_it_the_created_destination(cli: Cli, tmp_path: Path) -> None:
    bundle = render_small(cli, "argocd", tmp_path, "--set",
                          "deployer:extraPaths=clusters/gpu/certification=nvcre-system,clusters/gpu/other")
    apps = {app["spec"]["source"]["path"]: app for app in (
        yaml.safe_load(path.read_text()) for path in bundle.root.glob("extra-*/application.yaml"))}
    certification = apps["clusters/gpu/certification"]["spec"]
    assert certification["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "nvcre-system"}
    assert "CreateNamespace=true" in certification["syncPolicy"]["syncOptions"]
    assert apps["clusters/gpu/other"]["spec"]["destination"] == {"server": "https://kubernetes.default.svc"}
    validate_manifests(read_tree(bundle.root))


def test_extra_path_messages_quote_the_setting_as_written(cli: Cli, tmp_path: Path) -> None:
    recipe = write_recipe(cli, "small", tmp_path, KUSTOMIZE_ADDON)
    for value, says in (("=ns", "'' is not a folder"), ("a=ns1,a=ns2", "'a' is given twice")):
        result = recipe.run_bundle(cli, "argocd", tmp_path / "out", "--repo", REPO, "--set",
                                   f"deployer:extraPaths={value}")
        assert_refused(result, f"deployer:extraPaths={value}: {says}")


@pytest.mark.parametrize("value", ["a/b=Bad_NS", "a/b=", "a/b=x/y"])
def test_an_extra_path_namespace_that_is_not_a_namespace_name_is_refused(cli: Cli, tmp_path: Path,
                                                                          value: str) -> None:
    recipe = write_recipe(cli, "small", tmp_path, KUSTOMIZE_ADDON)
    result = recipe.run_bundle(cli, "argocd", tmp_path / "out", "--repo", REPO, "--set", f"deployer:extraPaths={value}")
    assert_refused(result, "deployer:extraPaths", "is not a namespace name")
    assert not (tmp_path / "out").exists()


def test_a_namespace_for_a_folder_that_is_not_an_extra_path_is_refused() -> None:
    with pytest.raises(InvalidInputError, match="'b', which is not one of the extraPaths folders"):
        Options(extra_paths=("a",), extra_namespaces=(("b", "ns"),))


@pytest.mark.parametrize(("status", "expected"), [
    ({}, "Progressing"),
    ({"health": {"status": "Healthy"}, "sync": {"status": "OutOfSync"}}, "Progressing"),
    ({"health": {"status": "Healthy"}, "sync": {"status": "Synced"}}, "Healthy"),
    ({"health": {"status": "Degraded", "message": "crash"}, "sync": {"status": "OutOfSync"}}, "Degraded"),
])
def test_the_application_health_check_waits_for_sync_and_health(status: dict[str, Any], expected: str) -> None:
    """The Lua the argocd README tells users to add to argocd-cm, run by a real Lua interpreter as Argo CD runs
    it: ``obj`` is the Application, the script returns {status, message}."""
    import lupa

    from aicr_gen.render.argocd import APPLICATION_HEALTH

    runtime = lupa.LuaRuntime(unpack_returned_tuples=True)
    to_lua = runtime.eval("function(py) return py end")
    obj = runtime.table_from({"status": runtime.table_from(
        {key: runtime.table_from(value) for key, value in status.items()})}) if status else runtime.table_from({})
    result = runtime.execute(f"local obj = ...\n{APPLICATION_HEALTH}", to_lua(obj))
    assert result["status"] == expected
