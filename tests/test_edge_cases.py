"""Edge cases a review found (and that were fixed): each test tells one user story and fails if it regresses.

Every test builds a tiny catalog in ``tmp_path`` (registry components a, b, c; ``base`` deploys a; the
leaf ``eks`` adds b, which depends on a), changes one thing, and checks what the user sees: the exit
code, the file, line and field path, the fix, and never a traceback or an "internal error".
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.catalog import parse as parse_module
from aicr_gen.edges import cache
from aicr_gen.yaml import dump, load_bytes
from tests.conftest import AICR_CATALOG, ROOT, Result, assert_refused, needs_reference
from tests.test_hostile_inputs import line_of

Run = Callable[..., Result]

REGISTRY = "registry.yaml"
BASE = "overlays/base.yaml"
LEAF = "overlays/eks.yaml"
MIXIN = "mixins/mx.yaml"


def _component(name: str) -> str:
    return f"""\
  - name: {name}
    healthCheck:
      assertFile: checks/{name}.yaml
    helm:
      defaultRepository: https://charts.example.com
      defaultChart: example/{name}
      defaultVersion: 1.0.0
      defaultNamespace: ns-{name}
"""


REGISTRY_TEXT = "apiVersion: aicr.run/v1alpha2\nkind: ComponentRegistry\ncomponents:\n" + "".join(
    _component(name) for name in "abc")


def overlay(name: str, spec: str, api: str = "aicr.run/v1alpha2") -> str:
    """An overlay document; ``spec`` is the indented body under ``spec:``."""
    return f"kind: RecipeMetadata\napiVersion: {api}\nmetadata:\n  name: {name}\nspec:\n{spec}"


LEAF_SPEC = """\
  criteria:
    service: eks
  componentRefs:
    - name: b
      dependencyRefs:
        - a
"""

FILES: dict[str, str] = {
    REGISTRY: REGISTRY_TEXT,
    BASE: overlay("base", "  componentRefs:\n    - name: a\n"),
    LEAF: overlay("eks", LEAF_SPEC),
    **{f"checks/{name}.yaml": f"{name}: healthy\n" for name in "abc"},
}

MIXIN_HEAD = "kind: RecipeMixin\napiVersion: aicr.run/v1alpha2\nmetadata:\n  name: mx\nspec:\n"


def make(root: Path, changes: dict[str, str | None] | None = None) -> Path:
    """Write the tiny catalog under ``root`` with ``changes`` (relative path -> text, None deletes)."""
    files: dict[str, str | None] = {**FILES, **(changes or {})}
    for rel, text in files.items():
        if text is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return make(tmp_path / "catalog")


def recipe(cli: Run, catalog: Path, *args: str) -> Result:
    return cli("recipe", "--catalog", str(catalog), *args)


refused = assert_refused


def resolved(result: Result) -> dict[str, Any]:
    """The recipe of a successful run."""
    assert result.code == 0, result.err
    assert result.err == ""
    data: dict[str, Any] = yaml.safe_load(result.out)
    return data


def ref_named(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(ref for ref in data["componentRefs"] if ref["name"] == name)


def at(catalog: Path, rel: str, needle: str) -> str:
    """``/abs/catalog/rel:LINE`` of the first line of ``rel`` containing ``needle``."""
    return f"{catalog / rel}:{line_of(catalog, rel, needle)}"


def aicr_gen_process(*args: str | bytes, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    """``python -m aicr_gen ARGS`` as a real process, bounded in time (a hang fails, it does not block)."""
    return subprocess.run([sys.executable, "-m", "aicr_gen", *args], capture_output=True, cwd=ROOT,
                          timeout=timeout, check=False)


# ------------------------------------------------------------------ 1. parse cache staleness


def _health_check_outside_checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path / "cache"))
    return make(tmp_path / "catalog", {
        REGISTRY: REGISTRY_TEXT.replace("assertFile: checks/a.yaml", "assertFile: components/a/hc.yaml"),
        "components/a/hc.yaml": "first: edition\n",
    })


def _parse_must_not_run(*_: object) -> None:
    raise AssertionError("the catalog was parsed again although its documents did not change")


def test_an_edited_health_check_outside_checks_shows_up_although_the_catalog_is_cached(
        cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = _health_check_outside_checks(tmp_path, monkeypatch)
    first = resolved(recipe(cli, catalog, "--service", "eks"))
    assert ref_named(first, "a")["healthCheckAsserts"] == "first: edition\n"
    assert len(list((tmp_path / "cache").glob("*.marshal"))) == 1

    (catalog / "components/a/hc.yaml").write_text("second: edition\n", encoding="utf-8")
    monkeypatch.setattr(parse_module, "parse_layers", _parse_must_not_run)  # the second run is a cache hit
    second = resolved(recipe(cli, catalog, "--service", "eks"))

    assert ref_named(second, "a")["healthCheckAsserts"] == "second: edition\n"


def test_a_deleted_health_check_outside_checks_fails_although_the_catalog_is_cached(
        cli: Run, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = _health_check_outside_checks(tmp_path, monkeypatch)
    resolved(recipe(cli, catalog, "--service", "eks"))

    (catalog / "components/a/hc.yaml").unlink()
    monkeypatch.setattr(parse_module, "parse_layers", _parse_must_not_run)

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, REGISTRY, 'components/a/hc.yaml')}: components[0].healthCheck.assertFile",
            "'components/a/hc.yaml' does not exist in the catalog", "add the file or fix the path")


def test_the_cache_folder_keeps_only_the_newest_entries(cli: Run, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(cache, "KEEP", 3)
    for edition in range(6):
        catalog = make(tmp_path / f"catalog{edition}", {REGISTRY: f"# edition {edition}\n{REGISTRY_TEXT}"})
        resolved(recipe(cli, catalog, "--service", "eks"))

    assert len(list((tmp_path / "cache").glob("*.marshal"))) == 3
    # the newest catalog is still served from the cache
    monkeypatch.setattr(parse_module, "parse_layers", _parse_must_not_run)
    resolved(recipe(cli, catalog, "--service", "eks"))


# ------------------------------------------------------------------ 2. recipe list and its options


@needs_reference
def test_recipe_catalog_before_list_lists_that_catalog(cli: Run) -> None:
    before = cli("recipe", "--catalog", str(AICR_CATALOG), "list")
    after = cli("recipe", "list", "--catalog", str(AICR_CATALOG))

    assert before.code == 0, before.err
    assert before.out.splitlines()[0].split() == ["NAME", "SERVICE", "ACCELERATOR", "INTENT", "OS", "PLATFORM"]
    assert len(before.out.splitlines()) == 46
    assert before.out == after.out


def test_recipe_catalog_before_list_lists_a_site_catalog(cli: Run, catalog: Path) -> None:
    result = cli("recipe", "--catalog", str(catalog), "list")

    assert result.code == 0, result.err
    assert [line.split() for line in result.out.splitlines()] == [
        ["NAME", "SERVICE", "ACCELERATOR", "INTENT", "OS", "PLATFORM"], ["eks", "eks", "any", "any", "any", "any"]]


@pytest.mark.parametrize(("flag", "value"), [("--service", "eks"), ("--format", "json")])
def test_recipe_options_before_list_are_rejected_naming_the_flag(cli: Run, catalog: Path, flag: str,
                                                                 value: str) -> None:
    result = cli("recipe", "--catalog", str(catalog), flag, value, "list")

    refused(result, "recipe list takes only --catalog and --format (after 'list')", f"drop {flag}")
    assert result.out == ""


def test_recipe_list_as_json(cli: Run, catalog: Path) -> None:
    result = cli("recipe", "list", "--catalog", str(catalog), "--format", "json")

    assert result.code == 0, result.err
    assert json.loads(result.out) == [{"name": "eks", "criteria": {"service": "eks"}}]


# ------------------------------------------------------------------ 3. former crash paths


def _kind_cases() -> list[Any]:
    cases = []
    for rel, kind in ((LEAF, "RecipeMetadata"), (REGISTRY, "ComponentRegistry"), (MIXIN, "RecipeMixin")):
        for bad in ("[a]", "{a: 1}"):
            cases.append(pytest.param(rel, kind, bad, id=f"{rel.split('/')[0]}-{bad}"))
    return cases


@pytest.mark.parametrize(("rel", "kind", "bad"), _kind_cases())
def test_a_kind_that_is_a_list_or_a_map_is_refused(cli: Run, tmp_path: Path, rel: str, kind: str,
                                                   bad: str) -> None:
    mixin = MIXIN_HEAD + "  constraints:\n    - name: K8s.server.version\n      value: '>= 1.30'\n"
    catalog = make(tmp_path / "catalog", {MIXIN: mixin})
    path = catalog / rel
    path.write_text(path.read_text(encoding="utf-8").replace(f"kind: {kind}", f"kind: {bad}"), encoding="utf-8")

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, rel, 'kind:')}: kind: value ",
            "is not allowed", f"use one of '{kind}'")


def test_overrides_nested_150_levels_deep_are_refused(cli: Run, tmp_path: Path) -> None:
    deep = "{k: " * 150 + "1" + "}" * 150
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", LEAF_SPEC + f"      overrides: {deep}\n")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / LEAF}:", "nesting deeper than 100 levels",
            "flatten the data")


def test_a_fifo_in_overlays_is_refused_without_hanging(catalog: Path) -> None:
    os.mkfifo(catalog / "overlays/zz.yaml")

    proc = aicr_gen_process("recipe", "--catalog", str(catalog), "--service", "eks")

    err = proc.stderr.decode()
    assert proc.returncode == 2, err
    assert "internal error" not in err and "Traceback" not in err
    assert f"{catalog / 'overlays/zz.yaml'}: not a regular file" in err


def test_a_file_name_that_is_not_utf8_under_checks_does_not_crash(cli: Run, catalog: Path) -> None:
    (catalog / "checks" / os.fsdecode(b"\xe9.yaml")).write_bytes(b"x: 1\n")  # Latin-1 'é.yaml'

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert data["deploymentOrder"] == ["a", "b"]


def test_a_catalog_folder_whose_name_is_not_utf8(tmp_path: Path) -> None:
    catalog = make(tmp_path / os.fsdecode(b"caf\xe9"))  # Latin-1 'café'
    folder = os.fsencode(catalog)

    works = aicr_gen_process("recipe", "--catalog", folder, "--service", "eks")
    assert works.returncode == 0, works.stderr
    assert works.stderr == b""
    assert yaml.safe_load(works.stdout)["deploymentOrder"] == ["a", "b"]

    (catalog / REGISTRY).unlink()
    fails = aicr_gen_process("recipe", "--catalog", folder, "--service", "eks")
    assert fails.returncode == 2
    assert fails.stderr.startswith(b"aicr-gen: error: ")
    assert b"no registry.yaml in any catalog layer" in fails.stderr
    assert b"internal error" not in fails.stderr and b"Traceback" not in fails.stderr


def test_a_reader_that_stops_early_is_not_an_error(catalog: Path) -> None:
    proc = subprocess.Popen([sys.executable, "-m", "aicr_gen", "recipe", "--catalog", str(catalog),
                             "--service", "eks"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=ROOT)
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()  # like `| head -1` exiting before aicr-gen writes
    err = proc.stderr.read()
    proc.stderr.close()

    assert proc.wait(timeout=30) == 0
    assert err == b""


def test_output_into_proc_cannot_be_written(cli: Run, catalog: Path) -> None:
    refused(recipe(cli, catalog, "--service", "eks", "-o", "/proc/x.yaml"), "-o /proc/x.yaml: cannot write")


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


def test_criteria_nodes_in_an_overlay_is_refused(cli: Run, tmp_path: Path) -> None:
    leaf = overlay("eks", LEAF_SPEC.replace("    service: eks\n", "    service: eks\n    nodes: 4\n"))
    catalog = make(tmp_path / "catalog", {LEAF: leaf})

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, LEAF, 'nodes: 4')}: spec.criteria.nodes",
            "not used to select overlays", "remove it")


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


def test_a_registry_component_named_deployer_is_refused(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {REGISTRY: REGISTRY_TEXT.replace("name: c", "name: deployer")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{at(catalog, REGISTRY, 'name: deployer')}: components[2].name",
            "'deployer' is reserved", "rename it")


# ------------------------------------------------------------------ 11. recipe list


def test_recipe_list_omits_overlays_without_criteria(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {"overlays/common.yaml": overlay("common", "  componentRefs:\n"
                                                                                    "    - name: c\n")})

    table = cli("recipe", "list", "--catalog", str(catalog))
    as_json = cli("recipe", "list", "--catalog", str(catalog), "--format", "json")

    assert table.code == 0, table.err
    assert [line.split()[0] for line in table.out.splitlines()] == ["NAME", "eks"]
    assert [row["name"] for row in json.loads(as_json.out)] == ["eks"]


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


# ------------------------------------------------------------------ 14. field paths of odd keys


@pytest.mark.parametrize("key", ["Criteria", "x[0]"])
def test_an_odd_unknown_key_is_reported_at_its_own_path(cli: Run, tmp_path: Path, key: str) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", f"  {key}: 1\n" + LEAF_SPEC)})

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, LEAF, f'{key}: 1')}: spec.{key}: unknown field {key!r}")


# ------------------------------------------------------------------ 15. message wording


def test_an_empty_spec_asks_for_a_mapping(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", "")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / LEAF}:5: spec", "write a mapping")


def test_an_upper_case_name_gets_the_pattern_hint(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("EKS", LEAF_SPEC)})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / LEAF}:4: metadata.name", "'EKS'",
            "does not match ^[a-z0-9]", "use a value that does")


@pytest.mark.parametrize("line", [
    pytest.param(f"      overrides:\n        replicas: {'9' * 5000}\n", id="unquoted-number"),
    pytest.param(f"      version: ['{'9' * 5000}']\n", id="quoted-number-in-a-string-field"),
])
def test_a_5000_digit_value_is_shortened_in_the_message(cli: Run, tmp_path: Path, line: str) -> None:
    catalog = make(tmp_path / "catalog", {LEAF: overlay("eks", LEAF_SPEC + line)})

    result = recipe(cli, catalog, "--service", "eks")

    refused(result, f"{catalog / LEAF}:")
    assert len(result.err) < 400, f"{len(result.err)} characters"


# ------------------------------------------------------------------ 16. blame and paths


def test_registry_manifest_files_climbing_out_are_blamed_on_the_registry(cli: Run, tmp_path: Path) -> None:
    registry = REGISTRY_TEXT.replace("      defaultNamespace: ns-b\n",
                                     "      defaultNamespace: ns-b\n    manifestFiles:\n      - ../x\n")
    catalog = make(tmp_path / "catalog", {REGISTRY: registry})

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, REGISTRY, 'manifestFiles:')}: components[1].manifestFiles", "'../x' climbs out with '..'")


def test_a_mixin_constraint_conflicting_with_the_chain_names_the_mixin(cli: Run, tmp_path: Path) -> None:
    catalog = _with_mixin(tmp_path, "  constraints:\n    - name: K8s.server.version\n      value: '>= 1.31'\n")
    base = overlay("base", "  constraints:\n    - name: K8s.server.version\n      value: '>= 1.30'\n"
                           "  componentRefs:\n    - name: a\n")
    (catalog / BASE).write_text(base, encoding="utf-8")

    refused(recipe(cli, catalog, "--service", "eks"),
            f"{at(catalog, MIXIN, 'K8s.server.version')}: spec.constraints[0]",
            "mixin 'mx' constraint 'K8s.server.version' conflicts with the inheritance chain or an earlier mixin")


def test_an_assert_file_starting_with_dot_slash_works(cli: Run, tmp_path: Path) -> None:
    registry = REGISTRY_TEXT.replace("assertFile: checks/b.yaml", "assertFile: ./checks/b.yaml")
    catalog = make(tmp_path / "catalog", {REGISTRY: registry})

    data = resolved(recipe(cli, catalog, "--service", "eks"))

    assert ref_named(data, "b")["healthCheckAsserts"] == "b: healthy\n"


def test_a_base_overlay_with_another_name_is_refused(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {BASE: overlay("root", "  componentRefs:\n    - name: a\n")})

    refused(recipe(cli, catalog, "--service", "eks"), f"{catalog / BASE}:4: metadata.name",
            "the root overlay is overlays/base.yaml named 'base'", "rename overlays/base.yaml or its metadata.name")


# ------------------------------------------------------------------ 17. YAML round trips


@pytest.mark.parametrize("text", ["+_", "._", "._9", "_x"])
def test_number_like_strings_survive_a_round_trip(text: str) -> None:
    dumped = dump({"value": text, "items": [text]})

    assert load_bytes(dumped.encode(), "dumped.yaml").data == {"value": text, "items": [text]}
    assert yaml.safe_load(dumped) == {"value": text, "items": [text]}
