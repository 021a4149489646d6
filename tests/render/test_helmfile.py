"""The helmfile deployer as users run it: ``aicr-gen bundle --deployer helmfile``, then what helmfile reads.

The same three recipes as the helm deployer's tests. Each helmfile checks against SchemaStore's
helmfile.json; the level a release sits in is checked against the dependency depth computed from
recipe.yaml here; ``needs`` must stay inside a component and name a release of the same file; every
chart reference must resolve to the chart the recipe names; each release's settings (wait, timeout,
createNamespace, disableValidation) follow from the recipe and the catalog's registry as AICR's rules say;
local charts must pass helm 3 and 4 lint. Last, AICR's own binary bundles a few of its catalog's leaves and
every release must carry the same settings and needs as AICR's.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bundles import (
    CHART_RECIPES,
    HELMS,
    HOSTILE_FIELDS,
    SMALL_CATALOG,
    Cli,
    Rendered,
    Renderings,
    Unit,
    YAMLSnapshot,
    bundle_fixtures,
    depths,
    local_kustomize_source,
    render,
    small_leaf,
    write_recipe,
)
from tests.conftest import AICR_CATALOG, ROOT, needs, needs_reference
from tests.consumers import helm_lint, read_tree, validate_manifests

HELM_DEFAULTS = {"wait": True, "timeout": 600, "createNamespace": True}

rendered, bundle = bundle_fixtures("helmfile")
"""Each recipe's helmfile bundle, rendered once per module (determinism is checked below)."""


def _load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


def level_files(root: Path) -> list[dict[str, Any]]:
    """The sub-helmfiles helmfile.yaml lists, in its order."""
    return [_load(root / entry["path"]) for entry in _load(root / "helmfile.yaml")["helmfiles"]]


def releases(root: Path) -> dict[str, dict[str, Any]]:
    """Every release of the bundle by name."""
    return {release["name"]: release for state in level_files(root) for release in state["releases"]}


# ------------------------------------------------------------------ AICR's release rules, restated

ASYNC = {"kai-scheduler"}
"""AICR's asynchronous components: every release of theirs skips waiting and may take 20 minutes."""


def catalog_root(bundle: Rendered) -> Path:
    """The catalog folder the bundle's recipe was resolved from (the embedded one without --catalog)."""
    return Path(bundle.source.catalog[-1]) if bundle.source.catalog else ROOT / "overlays"


def registry(bundle: Rendered) -> dict[str, dict[str, Any]]:
    components = _load(catalog_root(bundle) / "registry.yaml")["components"]
    return {entry["name"]: entry for entry in components}


def owns_namespace(bundle: Rendered, unit: Unit) -> bool:
    """Whether one of the unit's manifest files declares a Namespace object at top level."""
    if not unit.local:
        return False
    files = unit.ref.get("preManifestFiles" if unit.role == "pre" else "manifestFiles") or []
    return any(re.search(r"^kind:\s+Namespace\s*$", (catalog_root(bundle) / rel).read_text(encoding="utf-8"),
                         re.MULTILINE) for rel in files)


def expected_settings(bundle: Rendered, unit: Unit) -> dict[str, Any]:
    """What AICR's helmfile deployer sets on the unit's release beyond helmDefaults."""
    component = unit.ref["name"]
    entry = registry(bundle).get(component, {})
    settings: dict[str, Any] = {}
    if component in ASYNC:
        settings.update(wait=False, timeout=1200)
    if owns_namespace(bundle, unit):
        settings["createNamespace"] = False
    if (unit.role == "main" and entry.get("hasSelfRefCRDs")) or (
            unit.role == "post" and entry.get("manifestsUseChartCRDs")):
        settings["disableValidation"] = True
    return settings


SETTINGS = ("wait", "timeout", "createNamespace", "disableValidation")


def settings_of(release: Mapping[str, Any]) -> dict[str, Any]:
    return {key: release[key] for key in SETTINGS if key in release}


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
            assert settings_of(release) == expected_settings(bundle, unit), unit.name
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
        for release in state["releases"]:
            unit = units[release["name"]]
            for need in release.get("needs", []):
                # helmfile resolves a bare name in the needing release's own namespace
                namespace, _, name = need.rpartition("/")
                assert any(other["name"] == name and other["namespace"] == (namespace or unit.namespace)
                           for other in state["releases"]), f"{unit.name} needs {need}, not a release of its file"
                assert units[name].ref["name"] == unit.ref["name"], f"{unit.name} needs {need}"
            component = unit.ref["name"]
            before = {"pre": [], "main": [f"{component}-pre"] if unit.ref.get("preManifestFiles")
                      else [], "post": [component]}[unit.role]
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


# The small catalog, with the registry hints on its components and an asynchronous component whose -pre
# unit holds its own Namespace: every rule of AICR's shows in one bundle.
RULES = {
    **small_leaf("small-rules", "small", """\
        - name: kai-scheduler
          type: Helm
          valuesFile: components/kai-scheduler/values.yaml
          preManifestFiles:
            - components/kai-scheduler/manifests/namespace.yaml
          manifestFiles:
            - components/kai-scheduler/manifests/queue.yaml
          dependencyRefs:
            - platform-config
        """),
    "registry.yaml": SMALL_CATALOG["registry.yaml"].replace(
        "      defaultNamespace: web\n", "      defaultNamespace: web\n    manifestsUseChartCRDs: true\n").replace(
        "      defaultNamespace: api\n", "      defaultNamespace: api\n    hasSelfRefCRDs: true\n") + """\
  - name: kai-scheduler
    healthCheck:
      assertFile: checks/kai-scheduler/health-check.yaml
    hasSelfRefCRDs: true
    helm:
      defaultRepository: oci://ghcr.io/kai-scheduler/kai-scheduler
      defaultChart: kai-scheduler
      defaultVersion: v0.14.1
      defaultNamespace: kai-scheduler
""",
    "components/kai-scheduler/values.yaml": "global: {}\n",
    "components/kai-scheduler/manifests/namespace.yaml":
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: kai-scheduler\n  labels:\n"
        "    pod-security.kubernetes.io/enforce: privileged\n",
    "components/kai-scheduler/manifests/queue.yaml":
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: kai-queues\ndata:\n  kind: Namespace\n",
    "checks/kai-scheduler/health-check.yaml":
        "apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\nmetadata:\n  name: kai-scheduler-health\n",
}
"""Additions to the small catalog: web's post manifests use its chart's CRDs, api's chart its own, and
kai-scheduler (asynchronous) has a -pre unit that creates its privileged Namespace and a -post unit whose
ConfigMap only mentions ``kind: Namespace`` inside a value."""


def test_release_settings_follow_aicrs_rules(cli: Cli, tmp_path: Path) -> None:
    recipe = write_recipe(cli, "small", tmp_path / "in", RULES)
    bundle = recipe.bundle(cli, "helmfile", tmp_path / "out")
    found = {name: settings_of(release) for name, release in releases(bundle.root).items()}
    assert found == {
        "platform-config": {},
        "web-pre": {}, "web": {}, "web-post": {"disableValidation": True},
        "api": {"disableValidation": True},
        "kai-scheduler-pre": {"wait": False, "timeout": 1200, "createNamespace": False},
        "kai-scheduler": {"wait": False, "timeout": 1200, "disableValidation": True},
        "kai-scheduler-post": {"wait": False, "timeout": 1200},
    }
    assert found == {unit.name: expected_settings(bundle, unit) for unit in bundle.units()}
    assert releases(bundle.root)["kai-scheduler-post"]["needs"] == ["kai-scheduler"]
    validate_manifests(read_tree(bundle.root))


# ------------------------------------------------------------------ AICR's own helmfile deployer

AICR_LEAVES = {
    "h100-eks-ubuntu-training-kubeflow": ("eks", "h100", "training", "ubuntu", "kubeflow"),
    "h100-eks-ubuntu-inference-dynamo": ("eks", "h100", "inference", "ubuntu", "dynamo"),
    "h100-aks-ubuntu-training-kubeflow": ("aks", "h100", "training", "ubuntu", "kubeflow"),
    "gb200-eks-ubuntu-training-slurm": ("eks", "gb200", "training", "ubuntu", "slurm"),
    "ocp-training": ("ocp", "any", "training", "any", "any"),
}
"""Leaves of AICR's catalog that between them hold every release setting AICR's helmfile deployer writes:
an asynchronous component, both registry hints, charts with -pre and -post units, OpenShift's variants."""


@needs(AICR_CATALOG)
@pytest.mark.parametrize("leaf", sorted(AICR_LEAVES))
def test_releases_match_aicrs_helmfile(cli: Cli, tmp_path: Path, leaf: str, aicr: Path) -> None:
    """AICR writes the recipe and bundles it; aicr-gen bundles the same recipe file; release by release the
    settings and needs agree (AKS refuses a wildcard accelerated-node toleration: both get a keyed one; ocp's
    prometheus-adapter needs the ServiceAccount AICR leaves as <no value>)."""
    service, accelerator, intent, os_name, platform = AICR_LEAVES[leaf]
    criteria = [f"--{key}={value}" for key, value in (("service", service), ("accelerator", accelerator),
                ("intent", intent), ("os", os_name), ("platform", platform)) if value != "any"]
    recipe, toleration = tmp_path / "recipe.yaml", ("--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule")
    for command in ([str(aicr), "recipe", *criteria, "-o", str(recipe)],
                    [str(aicr), "bundle", "-r", str(recipe), "-d", "helmfile", "-o", str(tmp_path / "aicr"),
                     *toleration]):
        ran = subprocess.run(command, capture_output=True, text=True, check=False, timeout=120)
        assert ran.returncode == 0, ran.stderr
    assert _load(recipe)["metadata"]["appliedOverlays"][-1] == leaf
    mend = ("--set", "prometheus-adapter-ocp:serviceAccount.name=prometheus-adapter") if service == "ocp" else ()
    result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", "helmfile",
                 "-o", str(tmp_path / "ours"), *toleration, *mend)
    assert result.code == 0, result.err
    theirs, ours = releases(tmp_path / "aicr"), releases(tmp_path / "ours")
    assert list(ours) == list(theirs)
    for name, release in theirs.items():
        assert ({**settings_of(ours[name]), "needs": ours[name].get("needs")}
                == {**settings_of(release), "needs": release.get("needs")}), name
    assert [state["helmDefaults"] for state in level_files(tmp_path / "ours")] == [
        state["helmDefaults"] for state in level_files(tmp_path / "aicr")]


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


def test_a_recipe_of_one_level_keeps_its_releases_in_helmfile_yaml(cli: Cli, tmp_path: Path) -> None:
    """AICR writes sub-helmfiles only for two levels or more; one level is a plain helmfile.yaml."""
    from tests.bundles import write_recipe

    recipe = write_recipe(cli, "small", tmp_path / "recipe")
    bundle = recipe.bundle(cli, "helmfile", tmp_path / "out", "--set", "web:enabled=false", "--set",
                           "api:enabled=false")
    state = _load(bundle.root / "helmfile.yaml")
    assert [release["name"] for release in state["releases"]] == ["platform-config"]
    assert state["helmDefaults"] == {"wait": True, "timeout": 600, "createNamespace": True}
    assert not list(bundle.root.glob("level-*.yaml"))
