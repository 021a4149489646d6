"""The helmfile deployer as users run it: ``aicr-gen bundle --deployer helmfile``, then what helmfile reads.

The same three recipes as the helm deployer's tests. Each helmfile checks against SchemaStore's
helmfile.json; the level a release sits in is checked against the dependency depth computed from
recipe.yaml here; ``needs`` must stay inside a component and name a release of the same file; every
chart reference must resolve to the chart the recipe names; local charts must pass helm 3 and 4 lint.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bundles import (
    CHART_RECIPES,
    HELMS,
    HOSTILE_FIELDS,
    Cli,
    Rendered,
    Renderings,
    YAMLSnapshot,
    bundle_fixtures,
    depths,
    local_kustomize_source,
    render,
    write_recipe,
)
from tests.conftest import needs_reference
from tests.consumers import helm_lint, read_tree, validate_manifests

HELM_DEFAULTS = {"wait": True, "timeout": 600, "createNamespace": True}

rendered, bundle = bundle_fixtures("helmfile")
"""Each recipe's helmfile bundle, rendered once per module (determinism is checked below)."""


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def level_files(root: Path) -> list[dict[str, Any]]:
    """The sub-helmfiles helmfile.yaml lists, in its order."""
    return [_load(root / entry["path"]) for entry in _load(root / "helmfile.yaml")["helmfiles"]]


# ------------------------------------------------------------------ structure


def test_every_helmfile_validates_against_schemastore(bundle: Rendered) -> None:
    """helmfile.yaml and each level file against helmfile.json; Chart.yaml files against chart.json."""
    local = sum(unit.local for unit in bundle.units())
    assert validate_manifests(read_tree(bundle.root)) == 1 + len(level_files(bundle.root)) + local


def test_one_level_file_per_dependency_depth(bundle: Rendered) -> None:
    depth = depths(bundle.recipe)
    count = max(depth.values()) + 1
    assert _load(bundle.root / "helmfile.yaml") == {"helmfiles": [{"path": f"level-{n}.yaml"} for n in range(count)]}
    assert sorted(path.name for path in bundle.root.glob("level-*.yaml")) == sorted(
        f"level-{n}.yaml" for n in range(count))
    units = {unit.name: unit for unit in bundle.units()}
    placed: list[str] = []
    for level, state in enumerate(level_files(bundle.root)):
        names = [release["name"] for release in state["releases"]]
        assert names == sorted(names, key=lambda name: units[name].folder), f"level {level}: not in install order"
        for name in names:
            component = units[name].ref["name"]
            assert depth[component] == level, f"{name} is in level {level}, its depth is {depth[component]}"
            deps = [dep for dep in units[name].ref.get("dependencyRefs") or [] if dep in depth]
            assert all(depth[dep] < level for dep in deps), name
        placed += names
    assert sorted(placed) == sorted(units)


def test_releases_install_the_recipes_charts_with_the_units_values(bundle: Rendered) -> None:
    units = {unit.name: unit for unit in bundle.units()}
    repository_urls: dict[str, str] = {}
    for state in level_files(bundle.root):
        assert state["helmDefaults"] == HELM_DEFAULTS
        repositories = {repo["name"]: repo for repo in state.get("repositories", [])}
        assert len(repositories) == len(state.get("repositories", [])), "a repository is listed twice"
        used: set[str] = set()
        for release in state["releases"]:
            unit = units[release["name"]]
            assert release["namespace"] == unit.namespace
            assert release["values"] == [f"./{unit.folder}/values.yaml"]
            assert (bundle.root / unit.folder / "values.yaml").is_file()
            assert release.get("disableValidation", False) is (unit.role == "post"), unit.name
            if unit.local:
                assert release["chart"] == f"./{unit.folder}"
                assert (bundle.root / unit.folder / "Chart.yaml").is_file()
                assert "version" not in release
                continue
            repo_name, chart = release["chart"].split("/", 1)
            used.add(repo_name)
            repo, source = repositories[repo_name], unit.ref["source"]
            assert (chart, release["version"]) == (unit.chart, unit.ref["version"])
            if source.startswith("oci://"):
                # helmfile pulls oci://<url>/<chart>: the reference install.sh gives helm
                assert repo["oci"] is True
                assert f"oci://{repo['url']}/{chart}" == f"{source.rstrip('/')}/{unit.chart}"
            else:
                assert (repo["url"], "oci" in repo) == (source, False)
            assert repository_urls.setdefault(repo_name, source) == source, f"{repo_name} names two repositories"
        assert used == set(repositories), "a level lists a repository none of its releases uses"


def test_needs_order_only_a_components_own_units(bundle: Rendered) -> None:
    units = {unit.name: unit for unit in bundle.units()}
    for state in level_files(bundle.root):
        releases = {f"{release['namespace']}/{release['name']}": release for release in state["releases"]}
        for release in state["releases"]:
            unit = units[release["name"]]
            for need in release.get("needs", []):
                assert need in releases, f"{unit.name} needs {need}, which is not a release of its level file"
                assert units[releases[need]["name"]].ref["name"] == unit.ref["name"], f"{unit.name} needs {need}"
            component = unit.ref["name"]
            before = {"pre": [], "main": [f"{unit.namespace}/{component}-pre"] if unit.ref.get("preManifestFiles")
                      else [], "post": [f"{unit.namespace}/{component}"]}[unit.role]
            assert release.get("needs", []) == before, unit.name


def test_readme_says_how_to_apply_and_destroy(bundle: Rendered) -> None:
    readme = (bundle.root / "README.md").read_text(encoding="utf-8")
    assert "helmfile apply" in readme
    assert "helmfile destroy" in readme


def test_small_catalog_layout(cli: Cli, rendered: Renderings) -> None:
    """web's -pre/-post chain, and two repositories whose sanitised names collide kept apart."""
    states = level_files(rendered(cli, "small").root)
    assert [[release["name"] for release in state["releases"]] for state in states] == [
        ["platform-config"], ["web-pre", "web", "web-post"], ["api"]]
    (web,), (api,) = states[1]["repositories"], states[2]["repositories"]
    assert web == {"name": "registry-example-com-charts", "url": "registry.example.com/charts", "oci": True}
    assert api["url"] == "https://registry.example.com/charts"
    assert api["name"].startswith("registry-example-com-charts-") and api["name"] != web["name"]


# ------------------------------------------------------------------ real consumers


@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize("name", CHART_RECIPES)
def test_local_charts_pass_helm_lint(cli: Cli, rendered: Renderings, name: str, helm: str) -> None:
    bundle = rendered(cli, name)
    local = [unit for unit in bundle.units() if unit.local]
    assert local
    for unit in local:
        helm_lint(bundle.root / unit.folder, helm)


# ------------------------------------------------------------------ refusals and hostile input


def test_a_kustomize_component_becomes_a_local_chart_release(cli: Cli, tmp_path: Path) -> None:
    edit = local_kustomize_source(tmp_path / "api-src")
    out = write_recipe(cli, "small", tmp_path / "in").edit(edit).bundle(cli, "helmfile", tmp_path / "out").root
    releases = {release["name"]: release for state in level_files(out) for release in state["releases"]}
    chart = out / releases["api"]["chart"]
    assert "version" not in releases["api"] and (chart / "templates" / "kustomize-build.yaml").is_file()
    for helm in HELMS:
        helm_lint(chart, helm)


def test_hostile_recipe_fields_stay_plain_strings(cli: Cli, tmp_path: Path) -> None:
    recipe = write_recipe(cli, "small", tmp_path / "in").edit(HOSTILE_FIELDS)
    out = recipe.bundle(cli, "helmfile", tmp_path / "out").root
    validate_manifests(read_tree(out))
    releases = {release["name"]: release for state in level_files(out) for release in state["releases"]}
    assert releases["web"]["version"] == HOSTILE_FIELDS["web"]["version"]
    assert releases["web"]["chart"].endswith("/" + HOSTILE_FIELDS["web"]["chart"])
    assert releases["api"]["version"] == HOSTILE_FIELDS["api"]["version"]
    assert releases["api"]["chart"].endswith("/" + HOSTILE_FIELDS["api"]["chart"])
    api_repo = next(repo for repo in level_files(out)[2]["repositories"])
    assert api_repo["url"] == HOSTILE_FIELDS["api"]["source"]


# ------------------------------------------------------------------ pinned output


@needs_reference
def test_cuj2_helmfiles_are_pinned(cli: Cli, rendered: Renderings, snapshot: Any) -> None:
    root = rendered(cli, "cuj2").root
    for name in ("helmfile", "level-0"):
        assert (root / f"{name}.yaml").read_text(encoding="utf-8") == snapshot(name=name,
                                                                              extension_class=YAMLSnapshot)


def test_rendering_is_deterministic(bundle: Rendered, cli: Cli, tmp_path: Path) -> None:
    again = render(cli, bundle.name, "helmfile", tmp_path)
    assert read_tree(again.root) == read_tree(bundle.root)
