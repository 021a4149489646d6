"""Hostile and broken inputs: ``aicr-gen recipe`` refuses each with exit 2 and one clear message.

Every test starts from the same small, valid catalog, breaks one thing, and checks what a user sees:
the file, the line (where the loader knows it), the field and the fix; no traceback; and no output
file, not even a half-written temp file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable
from pathlib import Path

import pytest

from aicr_gen.catalog.load import REGISTRY
from aicr_gen.yaml import MAX_BYTES, load_bytes
from tests.conftest import Result, assert_refused

LEAF = "overlays/h100-eks.yaml"
BASE = "overlays/base.yaml"

CATALOG: dict[str, str] = {
    REGISTRY: """\
apiVersion: aicr.run/v1alpha2
kind: ComponentRegistry
components:
  - name: cert-manager
    healthCheck:
      assertFile: checks/cert-manager/health-check.yaml
    helm:
      defaultRepository: https://charts.jetstack.io
      defaultChart: jetstack/cert-manager
      defaultVersion: v1.17.2
      defaultNamespace: cert-manager
  - name: gpu-operator
    healthCheck:
      assertFile: checks/gpu-operator/health-check.yaml
    helm:
      defaultRepository: https://helm.ngc.nvidia.com/nvidia
      defaultChart: nvidia/gpu-operator
      defaultVersion: v25.3.0
      defaultNamespace: gpu-operator
  - name: network-operator
    healthCheck:
      assertFile: checks/network-operator/health-check.yaml
    helm:
      defaultRepository: https://helm.ngc.nvidia.com/nvidia
      defaultChart: nvidia/network-operator
      defaultVersion: v25.4.0
      defaultNamespace: nvidia-network-operator
""",
    BASE: """\
kind: RecipeMetadata
apiVersion: aicr.run/v1alpha2
metadata:
  name: base
spec:
  constraints:
    - name: K8s.server.version
      value: ">= 1.30"
  componentRefs:
    - name: cert-manager
      type: Helm
      valuesFile: components/cert-manager/values.yaml
    - name: gpu-operator
      type: Helm
      valuesFile: components/gpu-operator/values.yaml
      dependencyRefs:
        - cert-manager
""",
    LEAF: """\
kind: RecipeMetadata
apiVersion: aicr.run/v1alpha2
metadata:
  name: h100-eks
spec:
  base: base
  criteria:
    service: eks
    accelerator: h100
  componentRefs:
    - name: network-operator
      type: Helm
      valuesFile: components/network-operator/values.yaml
      dependencyRefs:
        - gpu-operator
""",
    "components/cert-manager/values.yaml": "crds:\n  enabled: true\n",
    "components/gpu-operator/values.yaml": "driver:\n  enabled: true\n",
    "components/network-operator/values.yaml": "nfd:\n  enabled: false\n",
    **{f"checks/{name}/health-check.yaml": f"apiVersion: chainsaw.kyverno.io/v1alpha1\nkind: Test\n"
                                           f"metadata:\n  name: {name}-health\n"
       for name in ("cert-manager", "gpu-operator", "network-operator")},
}

CRITERIA = ("--service", "eks", "--accelerator", "h100")

Run = Callable[..., Result]


def write_catalog(root: Path) -> Path:
    for rel, text in CATALOG.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def edit(catalog: Path, rel: str, old: str, new: str) -> None:
    """Replace the one occurrence of ``old`` in a catalog file."""
    path = catalog / rel
    text = path.read_text(encoding="utf-8")
    assert text.count(old) == 1, f"{old!r} must occur once in {rel}"
    path.write_text(text.replace(old, new), encoding="utf-8")


def _values_file_at(catalog: Path) -> str:
    return f"{LEAF}:{line_of(catalog, LEAF, 'valuesFile')}: spec.componentRefs[0].valuesFile"


def line_of(catalog: Path, rel: str, needle: str) -> int:
    """1-based line of the first line of ``rel`` containing ``needle``."""
    for number, line in enumerate((catalog / rel).read_text(encoding="utf-8").splitlines(), start=1):
        if needle in line:
            return number
    raise AssertionError(f"{needle!r} not in {rel}")


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return write_catalog(tmp_path / "catalog")


@pytest.fixture
def out(tmp_path: Path) -> Path:
    folder = tmp_path / "out"
    folder.mkdir()
    return folder / "recipe.yaml"


@pytest.fixture
def recipe(cli: Run, catalog: Path, out: Path) -> Run:
    """``aicr-gen recipe --catalog CATALOG [criteria] ... -o OUT``."""

    def run(*args: str, criteria: tuple[str, ...] = CRITERIA) -> Result:
        return cli("recipe", "--catalog", str(catalog), *criteria, *args, "-o", str(out))

    return run


def assert_rejected(result: Result, out: Path, *fragments: str) -> None:
    """Exit 2, one clear message containing every fragment, and nothing written next to ``out``."""
    assert_refused(result, *fragments)
    assert result.out == ""
    assert not out.exists()
    if out.parent.is_dir():
        assert list(out.parent.iterdir()) == [], "a (temp) file was left behind"


# ------------------------------------------------------------------ the happy path


def test_a_good_catalog_writes_exactly_the_recipe_file(recipe: Run, out: Path) -> None:
    previous = os.umask(0o027)
    try:
        result = recipe()
    finally:
        os.umask(previous)

    assert result.code == 0, result.err
    assert result.err == ""
    assert list(out.parent.iterdir()) == [out]
    assert stat.S_IMODE(out.stat().st_mode) == 0o640
    written = load_bytes(out.read_bytes(), str(out)).data
    assert written["kind"] == "RecipeResult"
    assert written["metadata"]["appliedOverlays"] == ["base", "h100-eks"]
    assert written["deploymentOrder"] == ["cert-manager", "gpu-operator", "network-operator"]


def test_a_failed_run_leaves_the_previous_recipe_untouched(catalog: Path, recipe: Run, out: Path) -> None:
    assert recipe().code == 0
    before = out.read_bytes()
    edit(catalog, LEAF, "  base: base\n", "  base: eks-common\n")

    result = recipe()

    assert result.code == 2
    assert out.read_bytes() == before
    assert list(out.parent.iterdir()) == [out]


# ------------------------------------------------------------------ unreadable or unsafe YAML


def test_duplicate_key_names_the_file_and_both_lines(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "    accelerator: h100\n", "    accelerator: h100\n    service: gke\n")
    second = line_of(catalog, LEAF, "service: gke")

    assert_rejected(recipe(), out, f"{LEAF}:{second}: duplicate key 'service' in spec.criteria",
                    f"first at line {line_of(catalog, LEAF, 'service: eks')}", "keep one")


def test_alias_bomb_is_refused(catalog: Path, recipe: Run, out: Path) -> None:
    bomb = ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    bomb += [f"lol{i}: &lol{i} [{', '.join([f'*lol{i - 1}'] * 9)}]" for i in range(1, 10)]
    with (catalog / REGISTRY).open("a", encoding="utf-8") as registry:
        registry.write("\n".join(bomb) + "\n")

    assert_rejected(recipe(), out, f"{REGISTRY}:", "alias references", "write the values out instead")


def test_a_registry_over_16_mib_is_refused(catalog: Path, recipe: Run, out: Path) -> None:
    with (catalog / REGISTRY).open("a", encoding="utf-8") as registry:
        registry.write("# " + "x" * MAX_BYTES + "\n")

    assert_rejected(recipe(), out, f"{REGISTRY}:1: file is", "byte limit", "split it")


def test_a_file_that_is_not_utf8_names_the_line(catalog: Path, recipe: Run, out: Path) -> None:
    leaf = catalog / LEAF
    leaf.write_bytes(leaf.read_bytes().replace(b"  base: base\n", b"  base: base\n  # Caf\xe9 (Latin-1)\n"))
    line = leaf.read_bytes().split(b"Caf", 1)[0].count(b"\n") + 1

    assert_rejected(recipe(), out, f"{LEAF}:{line}: not valid UTF-8", "save the file as UTF-8")


def test_a_list_at_the_document_root_is_refused(catalog: Path, recipe: Run, out: Path) -> None:
    (catalog / LEAF).write_text("- name: h100-eks\n- base: base\n", encoding="utf-8")

    assert_rejected(recipe(), out, f"{LEAF}:1: the document root is a list", "a mapping (key: value) is expected")


# ------------------------------------------------------------------ wrong content


def test_unknown_field_suggests_the_right_name(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "      valuesFile: components/network-operator",
         "      valuesFlie: components/network-operator")

    assert_rejected(recipe(), out,
                    f"{LEAF}:{line_of(catalog, LEAF, 'valuesFlie')}: spec.componentRefs[0].valuesFlie",
                    "unknown field 'valuesFlie'; did you mean 'valuesFile'?")


def test_unknown_kind_names_the_expected_kind(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "kind: RecipeMetadata", "kind: RecipeMetadta")

    assert_rejected(recipe(), out, f"{LEAF}:1: kind: value 'RecipeMetadta' is not allowed",
                    "use one of 'RecipeMetadata'")


def test_unknown_api_version_names_the_supported_ones(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, BASE, "apiVersion: aicr.run/v1alpha2", "apiVersion: aicr.run/v1")

    assert_rejected(recipe(), out, f"{BASE}:2: apiVersion: value 'aicr.run/v1' is not allowed for a RecipeMetadata",
                    "use one of 'aicr.run/v1beta1', 'aicr.run/v1alpha2', 'aicr.run/v1beta2', 'aicr.run/v1alpha3'")


def test_two_overlays_with_the_same_name_in_one_layer(catalog: Path, recipe: Run, out: Path) -> None:
    (catalog / "overlays/h100-eks-copy.yaml").write_text(CATALOG[LEAF], encoding="utf-8")

    assert_rejected(recipe(), out, f"{LEAF}:{line_of(catalog, LEAF, 'name: h100-eks')}: metadata.name",
                    "'h100-eks' is also defined in", "overlays/h100-eks-copy.yaml", "rename one")


def test_a_component_missing_from_the_registry(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "  - name: network-operator", "  - name: network-operatr")

    assert_rejected(recipe(), out, f"{LEAF}:{line_of(catalog, LEAF, 'network-operatr')}: spec.componentRefs[0]",
                    "is not in the registry", "add it to registry.yaml or fix the name")


def test_a_helm_component_without_a_version_is_incoherent(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, REGISTRY, "      defaultVersion: v25.4.0\n", "")

    assert_rejected(recipe(), out, "registry.yaml:", ": components[2].helm.defaultVersion",
                    "component 'network-operator' has no chart version", "pin helm.defaultVersion")


# ------------------------------------------------------------------ paths that leave the catalog


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    folder = tmp_path / "outside"
    folder.mkdir()
    (folder / "values.yaml").write_text("secret: true\n", encoding="utf-8")
    return folder


@pytest.mark.parametrize(("bad_path", "problem"), [
    ("../outside/values.yaml", "climbs out with '..'"),
    ("components/../../outside/values.yaml", "climbs out with '..'"),
    ("/etc/passwd", "is absolute"),
    ("C:/values.yaml", "is absolute"),
    ("components\\network-operator\\values.yaml", "contains a backslash"),
])
def test_a_values_file_outside_the_catalog(catalog: Path, recipe: Run, out: Path, bad_path: str,
                                           problem: str) -> None:
    edit(catalog, LEAF, "valuesFile: components/network-operator/values.yaml", f"valuesFile: '{bad_path}'")

    assert_rejected(recipe(), out, LEAF, _values_file_at(catalog), problem,
                    "use a path relative to the catalog root")


def test_a_values_file_symlinked_outside_the_catalog(catalog: Path, outside: Path, recipe: Run, out: Path) -> None:
    values = catalog / "components/network-operator/values.yaml"
    values.unlink()
    values.symlink_to(outside / "values.yaml")

    assert_rejected(recipe(), out, LEAF, _values_file_at(catalog),
                    "'components/network-operator/values.yaml' is a symlink to", "outside the catalog",
                    "copy the file into the catalog")


def test_a_component_folder_symlinked_outside_the_catalog(catalog: Path, outside: Path, recipe: Run,
                                                          out: Path) -> None:
    folder = catalog / "components/network-operator"
    (folder / "values.yaml").unlink()
    folder.rmdir()
    folder.symlink_to(outside, target_is_directory=True)

    assert_rejected(recipe(), out, LEAF, _values_file_at(catalog))


def test_a_health_check_outside_the_catalog(catalog: Path, outside: Path, recipe: Run, out: Path) -> None:
    edit(catalog, REGISTRY, "assertFile: checks/gpu-operator/health-check.yaml",
         "assertFile: ../outside/values.yaml")

    assert_rejected(recipe(), out, REGISTRY, "registry.yaml:14: components[1].healthCheck.assertFile",
                    "climbs out with '..'", "use a path relative to the catalog root")


def test_a_health_check_symlinked_outside_the_catalog(catalog: Path, outside: Path, recipe: Run,
                                                      out: Path) -> None:
    check = catalog / "checks/gpu-operator/health-check.yaml"
    check.unlink()
    check.symlink_to(outside / "values.yaml")

    assert_rejected(recipe(), out, "checks/gpu-operator/health-check.yaml", "outside the catalog",
                    "copy the file into the catalog")


def test_manifest_files_outside_the_catalog(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "      dependencyRefs:\n",
         "      manifestFiles:\n        - ../outside/values.yaml\n      dependencyRefs:\n")

    assert_rejected(recipe(), out, LEAF, "spec.componentRefs[0].manifestFiles[0]", "climbs out with '..'")


def test_an_overlay_symlinked_outside_the_catalog(catalog: Path, outside: Path, recipe: Run, out: Path) -> None:
    leaf = catalog / LEAF
    (outside / "h100-eks.yaml").write_text(leaf.read_text(encoding="utf-8"), encoding="utf-8")
    leaf.unlink()
    leaf.symlink_to(outside / "h100-eks.yaml")

    assert_rejected(recipe(), out, LEAF, "is a symlink to", "outside the catalog", "copy the file into the catalog")


def test_a_missing_values_file(catalog: Path, recipe: Run, out: Path) -> None:
    (catalog / "components/network-operator/values.yaml").unlink()

    assert_rejected(recipe(), out, LEAF, _values_file_at(catalog),
                    "'components/network-operator/values.yaml' does not exist in the catalog",
                    "add the file or fix the path")


@pytest.mark.parametrize("bad_fields", [
    "      valuesFile: ../outside/values.yaml\n",
    "      dependencyRefs:\n        - nvsentinel\n",
])
def test_an_error_in_a_field_the_leaf_sets_names_the_leaf(catalog: Path, recipe: Run, out: Path,
                                                          bad_fields: str) -> None:
    edit(catalog, LEAF, "  componentRefs:\n", f"  componentRefs:\n    - name: gpu-operator\n{bad_fields}")

    result = recipe()

    assert_rejected(result, out, LEAF)
    assert BASE not in result.err


# ------------------------------------------------------------------ broken composition


def test_a_dependency_on_a_component_not_in_the_recipe(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "        - gpu-operator\n", "        - nvsentinel\n")

    assert_rejected(recipe(), out, LEAF, "spec.componentRefs[0].dependencyRefs[0]",
                    "unknown dependency 'nvsentinel'", "add that component or remove the dependency")


def test_a_dependency_cycle_is_named_with_the_overlays_declaring_it(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, BASE, "        - cert-manager\n", "        - cert-manager\n        - network-operator\n")

    assert_rejected(recipe(), out, "circular dependencies exist: gpu-operator -> network-operator -> gpu-operator",
                    "remove one of these dependencyRefs", "gpu-operator -> network-operator in ", BASE)


def test_spec_base_naming_a_missing_overlay(catalog: Path, recipe: Run, out: Path) -> None:
    edit(catalog, LEAF, "  base: base\n", "  base: eks-common\n")

    assert_rejected(recipe(), out, LEAF, "spec.base: overlay 'eks-common' does not exist", "fix spec.base")


def _name_missing_mixin(catalog: Path) -> None:
    edit(catalog, LEAF, "  base: base\n", "  base: base\n  mixins:\n    - os-ubuntu\n")


def test_a_missing_mixin_lists_the_known_ones(catalog: Path, recipe: Run, out: Path) -> None:
    _name_missing_mixin(catalog)

    assert_rejected(recipe(), out, "spec.mixins[0]: mixin 'os-ubuntu' not found in mixins/", "known mixins: none")


def test_a_missing_mixin_names_the_overlay_that_wants_it(catalog: Path, recipe: Run, out: Path) -> None:
    _name_missing_mixin(catalog)

    assert_rejected(recipe(), out, LEAF)


# ------------------------------------------------------------------ bad command lines


def test_an_unknown_criterion_value(recipe: Run, out: Path) -> None:
    assert_rejected(recipe(criteria=("--service", "foo")), out, "--service: unknown service 'foo'",
                    "use one of eks or any", "the leaves have service eks")  # gke is known, but not in the catalog


def test_criteria_no_overlay_covers_list_the_completions(recipe: Run, out: Path) -> None:
    result = recipe(criteria=("--accelerator", "h100"))

    assert_rejected(result, out, "accelerator 'h100'", "valid: eks")
    assert "requires" in result.err or "supported combinations" in result.err


def test_no_criteria_at_all(recipe: Run, out: Path) -> None:
    assert_rejected(recipe(criteria=()), out, "no criteria given",
                    "pass at least one of --service, --accelerator, --intent, --os, --platform")


def test_a_negative_node_count(recipe: Run, out: Path) -> None:
    assert_rejected(recipe("--nodes=-3"), out, "--nodes: -3 is negative", "0 or more")


def test_output_pointing_at_a_folder(cli: Run, catalog: Path, out: Path) -> None:
    result = cli("recipe", "--catalog", str(catalog), *CRITERIA, "-o", str(out.parent))

    assert_rejected(result, out, f"-o '{out.parent}': not a file name", "give a file path")


@pytest.mark.parametrize("target", ["", "sub/"])
def test_output_that_is_not_a_file_name(cli: Run, catalog: Path, out: Path, target: str) -> None:
    assert_rejected(cli("recipe", "--catalog", str(catalog), *CRITERIA, "-o", target), out, "not a file name")


def test_output_into_missing_folders_creates_them(cli: Run, catalog: Path, tmp_path: Path) -> None:
    target = tmp_path / "missing" / "deeper" / "recipe.yaml"

    result = cli("recipe", "--catalog", str(catalog), *CRITERIA, "-o", str(target))

    assert result.code == 0, result
    assert "kind: RecipeResult" in target.read_text()
    assert sorted(p.name for p in target.parent.iterdir()) == ["recipe.yaml"]  # no temp file left


def test_output_under_a_file_is_refused_and_creates_nothing(cli: Run, catalog: Path, tmp_path: Path) -> None:
    target = tmp_path / "new" / "a-file" / "sub" / "recipe.yaml"
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "a-file").write_text("x")

    result = cli("recipe", "--catalog", str(catalog), *CRITERIA, "-o", str(target))

    assert_rejected(result, target, f"cannot create folder {target.parent}")
    assert sorted(p.name for p in (tmp_path / "new").iterdir()) == ["a-file"]


def test_a_failed_write_removes_the_folders_it_created(cli: Run, catalog: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    def full_disk(*_args: object, **_kwargs: object) -> tuple[int, str]:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(tempfile, "mkstemp", full_disk)
    target = tmp_path / "missing" / "deeper" / "recipe.yaml"

    result = cli("recipe", "--catalog", str(catalog), *CRITERIA, "-o", str(target))

    assert_rejected(result, target, "No space left on device")
    assert not (tmp_path / "missing").exists()


def test_bundle_output_into_missing_folders_creates_them(cli: Run, catalog: Path, tmp_path: Path) -> None:
    recipe_file = tmp_path / "recipe.yaml"
    assert cli("recipe", "--catalog", str(catalog), *CRITERIA, "-o", str(recipe_file)).code == 0
    target = tmp_path / "out" / "clusters" / "a"

    result = cli("bundle", "--recipe", str(recipe_file), "--catalog", str(catalog), "--deployer", "helm",
                 "-o", str(target))

    assert result.code == 0, result
    assert (target / "checksums.txt").is_file()
    assert sorted(p.name for p in target.parent.iterdir()) == ["a"]  # no staging folder left
    assert cli("verify", str(target)).code == 0


def test_a_profile_for_a_recipe_without_one(recipe: Run, out: Path) -> None:
    assert_rejected(recipe("--profile", "gpuStack=operator-managed"), out,
                    "--profile gpuStack", "declares no profile")


def test_slurm_accounting_for_a_non_slurm_recipe(recipe: Run, out: Path) -> None:
    assert_rejected(recipe("--slurm-accounting-mode", "aicr-provided"), out,
                    "--slurm-accounting-mode", "only slurm recipes (--platform slurm)")


# ------------------------------------------------------------------ no catalog to speak of


def test_a_missing_catalog_folder(cli: Run, tmp_path: Path, out: Path) -> None:
    missing = tmp_path / "no-such-catalog"

    result = cli("recipe", "--catalog", str(missing), *CRITERIA, "-o", str(out))

    assert_rejected(result, out, f"{missing}: catalog folder not found", "laid out like AICR's recipes/")


def test_a_catalog_without_a_registry(catalog: Path, recipe: Run, out: Path) -> None:
    (catalog / REGISTRY).unlink()

    assert_rejected(recipe(), out, str(catalog), "no registry.yaml in any catalog layer",
                    "a catalog needs a component registry")
