"""Resolving a recipe from the tiny catalog (tests/tiny_catalog.py), edge cases a review found: only-wildcard criteria,
a node count alone, profiles and their contract, empty values in overlays, cycles, criteria values, components
outside the registry, mixins, NaN overrides. Each test tells one user story: the exit code, the file, line and
field path, the fix, and never a traceback or an "internal error"."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.tiny_catalog import (
    BASE,
    LEAF,
    LEAF_SPEC,
    MIXIN,
    MIXIN_HEAD,
    REGISTRY,
    REGISTRY_TEXT,
    Run,
    at,
    make,
    overlay,
    recipe,
    ref_named,
    refused,
    resolved,
)

# ------------------------------------------------------------------ 4. only-wildcard criteria


@pytest.mark.parametrize("criteria", [("--service", "any"), ("--service", "self-managed"), ("--gpu", "any"),
                                      ("--intent", " ")], ids=["service-any", "self-managed", "gpu-any", "blank"])
def test_only_wildcard_criteria_are_refused_like_aicr(cli: Run, catalog: Path, criteria: tuple[str, str]) -> None:
    refused(recipe(cli, catalog, *criteria), "no criteria given", "pass at least one of --service")


def test_a_node_count_alone_resolves_the_base_recipe(cli: Run, catalog: Path) -> None:
    data = resolved(recipe(cli, catalog, "--nodes", "4"))

    assert data["criteria"] == {"service": "any", "accelerator": "any", "intent": "any", "os": "any",
                                "platform": "any", "nodes": 4}
    assert data["metadata"]["appliedOverlays"] == ["base"]


# ------------------------------------------------------------------ 5. profile contract

PROFILE = """\
  profile:
    name: gpuStack
    default: operator
    values:
      operator:
        componentRefs:
          - name: b
            overrides:
              driver:
                enabled: true
      external:
        advertiser: external
        componentRefs:
          - name: b
            overrides:
              driver:
                enabled: false
"""
PROFILED = overlay("eks", LEAF_SPEC + PROFILE, api="aicr.run/v1alpha3")


@pytest.mark.parametrize(("old", "new", "blamed", "fragments"), [
    pytest.param("apiVersion: aicr.run/v1alpha3", "apiVersion: aicr.run/v1alpha2", ("apiVersion", "apiVersion"),
                 ("spec.profile exactly when its apiVersion is aicr.run/v1beta2 (or aicr.run/v1alpha3)",
                  "write apiVersion: aicr.run/v1alpha3"), id="profile-in-v1alpha2"),
    pytest.param(PROFILE, "", ("apiVersion", "apiVersion"),
                 ("spec.profile exactly when its apiVersion is aicr.run/v1beta2 (or aicr.run/v1alpha3)",
                  "write apiVersion: aicr.run/v1alpha2"), id="v1alpha3-without-profile"),
    pytest.param("name: gpuStack", "name: gpu stack", ("gpu stack", "spec.profile.name"), ("'gpu stack'",),
                 id="name-with-space"),
    pytest.param("advertiser: external", "advertiser: bogus",
                 ("bogus", "spec.profile.values.external.advertiser"), ("'bogus' is not allowed",),
                 id="bogus-advertiser"),
    pytest.param("              driver:\n                enabled: true\n", "              driver.enabled: true\n",
                 ("profile:", "spec.profile"), ("values.operator", "override key 'driver.enabled'", "nest it"),
                 id="dotted-key"),
    pytest.param("                enabled: true\n",
                 "                enabled: true\n          - name: b\n            overrides:\n              x: 1\n",
                 ("profile:", "spec.profile"), ("values.operator", "a component is listed twice"),
                 id="duplicate-ref"),
    pytest.param("default: operator", "default: driverless", ("profile:", "spec.profile"),
                 ("default 'driverless' is not a value of profile 'gpuStack'", "use one of external, operator"),
                 id="default-not-a-value"),
    pytest.param(PROFILE[PROFILE.index("    values:"):], "    values: {}\n", ("values:", "spec.profile.values"),
                 ("at least 1",), id="empty-values"),
    pytest.param("                enabled: false\n", "                version: v1\n", ("profile:", "spec.profile"),
                 ("values.external", "every value of profile 'gpuStack' must set the same paths"),
                 id="union-totality"),
])
def test_a_profile_breaking_the_contract_is_refused(cli: Run, tmp_path: Path, *, old: str, new: str,
                                                    blamed: tuple[str, str], fragments: tuple[str, ...]) -> None:
    assert PROFILED.count(old) == 1
    catalog = make(tmp_path / "catalog", {LEAF: PROFILED.replace(old, new)})

    result = recipe(cli, catalog, "--service", "eks")

    needle, path = blamed
    refused(result, f"{at(catalog, LEAF, needle)}: {path}", *fragments)


def test_a_valid_profile_applies_its_default_and_can_be_switched(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: PROFILED})

    default = resolved(recipe(cli, catalog, "--service", "eks"))
    other = resolved(recipe(cli, catalog, "--service", "eks", "--profile", "gpuStack=external"))

    assert default["apiVersion"] == "aicr.run/v1beta2"
    assert default["metadata"]["selectedProfile"] == {
        "name": "gpuStack", "value": "operator", "ownedPaths": {"b": ["driver.enabled", "enabled"]}}
    assert ref_named(default, "b")["overrides"] == {"driver": {"enabled": True}}
    assert other["metadata"]["selectedProfile"]["value"] == "external"
    assert other["metadata"]["selectedProfile"]["advertiser"] == "external"
    assert ref_named(other, "b")["overrides"] == {"driver": {"enabled": False}}


# ------------------------------------------------------------------ 7. empty values in overlays


def test_empty_lists_in_an_overlay_do_not_clear_inherited_lists(cli: Run, tmp_path: Path) -> None:
    base = overlay("base", """\
  componentRefs:
    - name: a
      expectedResources:
        - kind: Deployment
          name: a-controller
    - name: c
      overrides:
        enabled: false
      patches:
        - components/c/patch.yaml
""")
    leaf = overlay("eks", LEAF_SPEC + """\
    - name: a
      expectedResources: []
    - name: c
      patches: []
""")
    catalog = make(tmp_path / "catalog", {BASE: base, LEAF: leaf})

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert ref_named(data, "a")["expectedResources"] == [{"kind": "Deployment", "name": "a-controller"}]
    assert ref_named(data, "c")["patches"] == ["components/c/patch.yaml"]


def test_empty_fields_are_not_written_but_type_and_source_always_are(cli: Run, tmp_path: Path) -> None:
    registry = REGISTRY_TEXT + "  - name: m\n    healthCheck:\n      assertFile: checks/a.yaml\n"
    leaf = overlay("eks", LEAF_SPEC + """\
      overrides: {}
      cleanup: false
      manifestFiles: []
      preManifestFiles: []
    - name: a
      dependencyRefs: []
    - name: m
      manifestFiles:
        - components/m/configmap.yaml
""")
    catalog = make(tmp_path / "catalog", {REGISTRY: registry, LEAF: leaf,
                                          "components/m/configmap.yaml": "kind: ConfigMap\n"})

    result = recipe(cli, catalog, "--service", "eks")
    data = resolved(result)

    assert list(ref_named(data, "b")) == ["name", "namespace", "chart", "type", "source", "version",
                                          "dependencyRefs", "healthCheckAsserts"]
    assert "dependencyRefs" not in ref_named(data, "a")
    manifest_only = ref_named(data, "m")
    assert (manifest_only["type"], manifest_only["source"]) == ("Helm", "")
    assert "    source: ''\n" in result.out


# ------------------------------------------------------------------ 8. cycles


def test_a_cycle_is_named_as_aicr_finds_it_with_the_files_declaring_the_edges(cli: Run, tmp_path: Path) -> None:
    base = overlay("base", """\
  componentRefs:
    - name: a
      dependencyRefs:
        - c
        - b
    - name: b
      dependencyRefs:
        - a
""")
    leaf = overlay("eks", """\
  criteria:
    service: eks
  componentRefs:
    - name: c
      dependencyRefs:
        - a
""")
    catalog = make(tmp_path / "catalog", {BASE: base, LEAF: leaf})

    result = recipe(cli, catalog, "--service", "eks")

    refused(result, "circular dependencies exist: a -> c -> a;", "remove one of these dependencyRefs",
            f"a -> c in {at(catalog, BASE, '- c')}: spec.componentRefs[0].dependencyRefs[0]",
            f"c -> a in {at(catalog, LEAF, '- a')}: spec.componentRefs[0].dependencyRefs[0]")
    assert "a -> b" not in result.err


# ------------------------------------------------------------------ 9. criteria values in overlays


def test_an_empty_criterion_in_an_overlay_is_a_wildcard(cli: Run, tmp_path: Path) -> None:
    leaf = overlay("eks", LEAF_SPEC.replace("    service: eks\n", "    service: eks\n    os: ''\n"))
    catalog = make(tmp_path / "catalog", {LEAF: leaf})

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert data["metadata"]["appliedOverlays"] == ["base", "eks"]


def test_a_site_criterion_value_is_accepted_and_listed(cli: Run, tmp_path: Path) -> None:
    mycloud = overlay("mycloud", LEAF_SPEC.replace("service: eks", "service: mycloud"))
    catalog = make(tmp_path / "catalog", {"overlays/mycloud.yaml": mycloud})

    data = resolved(recipe(cli, catalog, "--service", "mycloud"))
    other = recipe(cli, catalog, "--service", "othercloud")

    assert data["metadata"]["appliedOverlays"] == ["base", "mycloud"]
    assert data["criteria"]["service"] == "mycloud"
    refused(other, "--service: unknown service 'othercloud'", "mycloud or any")


# ------------------------------------------------------------------ 10. components outside the registry


def test_a_component_outside_the_registry_with_its_own_type_is_kept_as_written(cli: Run, tmp_path: Path) -> None:
    leaf = overlay("eks", LEAF_SPEC + """\
    - name: site-chart
      type: Helm
      source: https://charts.site.example
      chart: site-chart
      version: 2.0.0
""")
    catalog = make(tmp_path / "catalog", {LEAF: leaf})

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert ref_named(data, "site-chart") == {"name": "site-chart", "chart": "site-chart", "type": "Helm",
                                             "source": "https://charts.site.example", "version": "2.0.0"}
    assert "site-chart" in data["deploymentOrder"]


def test_a_component_outside_the_registry_without_a_type_is_refused(cli: Run, tmp_path: Path) -> None:
    leaf = overlay("eks", LEAF_SPEC + "    - name: site-chart\n      chart: site-chart\n")
    catalog = make(tmp_path / "catalog", {LEAF: leaf})

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, LEAF, 'name: site-chart')}: spec.componentRefs[1]",
            "component 'site-chart' is not in the registry", "add it to registry.yaml or fix the name")


# ------------------------------------------------------------------ 12. messages and mixins


def test_an_uncovered_query_names_the_node_count(cli: Run, catalog: Path) -> None:
    refused(recipe(cli, catalog, "--accelerator", "h100", "--nodes", "4"),
            "no recipe provides accelerator 'h100' for criteria(accelerator=h100, nodes=4)")


def _with_mixin(tmp_path: Path, mixin_spec: str) -> Path:
    leaf = overlay("eks", LEAF_SPEC.replace("  componentRefs:\n", "  mixins:\n    - mx\n  componentRefs:\n"))
    return make(tmp_path / "catalog", {LEAF: leaf, MIXIN: MIXIN_HEAD + mixin_spec})


@pytest.mark.parametrize("empty", ["overrides: {}", "dependencyRefs: []"])
def test_a_mixin_may_set_an_empty_field_on_an_inherited_component(cli: Run, tmp_path: Path, empty: str) -> None:
    catalog = _with_mixin(tmp_path, f"  componentRefs:\n    - name: a\n      namespace: ns-mixed\n      {empty}\n")

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert ref_named(data, "a")["namespace"] == "ns-mixed"


def test_a_mixin_setting_chart_on_an_inherited_component_is_refused(cli: Run, tmp_path: Path) -> None:
    catalog = _with_mixin(tmp_path, "  componentRefs:\n    - name: a\n      chart: other\n")

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, MIXIN, 'chart: other')}: spec.componentRefs[0].chart",
            "mixin 'mx' sets 'chart' on component 'a', which the inheritance chain defines")


def test_nan_overrides_are_refused_as_json_but_written_as_yaml(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", LEAF_SPEC + "      overrides:\n        x: .nan\n")})

    as_yaml = recipe(cli, catalog, "--service", "eks")
    as_json = recipe(cli, catalog, "--service", "eks", "--format", "json")

    assert as_yaml.code == 0, as_yaml.err
    assert "      x: .nan\n" in as_yaml.out
    refused(as_json, "NaN", "JSON cannot hold", "use YAML output")
    assert as_json.out == ""


# ------------------------------------------------------------------ 16. blame and paths


def test_a_mixin_constraint_conflicting_with_the_chain_names_the_mixin(cli: Run, tmp_path: Path) -> None:
    catalog = _with_mixin(tmp_path, "  constraints:\n    - name: K8s.server.version\n      value: '>= 1.31'\n")
    base = overlay("base", "  constraints:\n    - name: K8s.server.version\n      value: '>= 1.30'\n"
                           "  componentRefs:\n    - name: a\n")
    (catalog / BASE).write_text(base, encoding="utf-8")

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, MIXIN, 'K8s.server.version')}: spec.constraints[0]",
            "mixin 'mx' constraint 'K8s.server.version' conflicts with the inheritance chain or an earlier mixin")
