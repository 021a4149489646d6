"""The command line as users and hooks meet it: version, schemas, recipe output, cache behaviour."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from aicr_gen import __version__
from tests.conftest import AICR_CATALOG, needs_reference, run_process

QUICKSTART = ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu",
              "--platform", "dynamo")


class YAMLSnapshot(SingleFileSnapshotExtension):
    """Snapshots stored as the literal YAML we emit, reviewable in pull requests."""

    _write_mode = WriteMode.TEXT
    file_extension = "yaml"


def test_version(cli: Any) -> None:
    result = cli("--version")
    assert (result.code, result.out.strip()) == (0, f"aicr-gen {__version__}")


def test_version_imports_no_parser_or_models() -> None:
    # --version is the pre-commit hooks' start-up check: its time is Python's start plus aicr_gen/cli/main.py
    code = ("import sys; from aicr_gen.cli.main import main; main(['--version']); "
            "print(sorted({'argparse', 'typing', 'pathlib', 'pydantic', 'yaml'} & set(sys.modules)))")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout == f"aicr-gen {__version__}\n[]\n"


def test_usage_errors_exit_2_without_traceback(cli: Any) -> None:
    for args in (["nope"], ["recipe", "--format", "xml"], ["schema", "nothing"], []):
        result = cli(*args)
        assert result.code == 2, args
        assert "Traceback" not in result.err


def test_no_criteria_is_rejected(cli: Any) -> None:
    result = cli("recipe")
    assert result.code == 2
    assert "no criteria given" in result.err


def test_quickstart_recipe_is_pinned(cli: Any, snapshot: Any) -> None:
    result = cli("recipe", *QUICKSTART)
    assert result.code == 0, result.err
    assert result.out == snapshot(extension_class=YAMLSnapshot)


def test_yaml_and_json_outputs_agree_for_yaml_1_1_readers(cli: Any, tmp_path: Path) -> None:
    assert cli("recipe", *QUICKSTART, "-o", str(tmp_path / "r.yaml")).code == 0
    assert cli("recipe", *QUICKSTART, "--format", "json", "-o", str(tmp_path / "r.json")).code == 0
    as_json = json.loads((tmp_path / "r.json").read_text())
    assert yaml.safe_load((tmp_path / "r.yaml").read_text()) == as_json
    assert sorted(p.name for p in tmp_path.iterdir()) == ["r.json", "r.yaml"]


@pytest.mark.parametrize("kind", ["recipe", "overlay", "mixin", "registry", "criteria"])
def test_schemas_are_valid_json_schema(cli: Any, kind: str) -> None:
    result = cli("schema", kind)
    schema = json.loads(result.out)
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["additionalProperties"] is False


def test_schema_output_writes_what_it_prints(cli: Any, tmp_path: Path) -> None:
    target = tmp_path / "editors" / "clusterspec.schema.json"
    assert cli("schema", "clusterspec", "-o", str(target)).code == 0
    assert target.read_text(encoding="utf-8") == cli("schema", "clusterspec").out


def test_emitted_recipes_validate_against_the_recipe_schema(cli: Any) -> None:
    schema = json.loads(cli("schema", "recipe").out)
    recipe = json.loads(cli("recipe", *QUICKSTART, "--format", "json").out)
    jsonschema.Draft202012Validator(schema).validate(recipe)


def _check_jsonschema(schema: Path, files: list[Path]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "check_jsonschema", "--schemafile", str(schema), *map(str, files)]
    return subprocess.run(command, capture_output=True, text=True, check=False)


@needs_reference
def test_check_jsonschema_accepts_aicr_catalog_with_our_schemas(cli: Any, tmp_path: Path) -> None:
    for kind, files in (("overlay", sorted((AICR_CATALOG / "overlays").glob("*.yaml"))),
                        ("mixin", sorted((AICR_CATALOG / "mixins").glob("*.yaml"))),
                        ("registry", [AICR_CATALOG / "registry.yaml"])):
        schema = tmp_path / f"{kind}.json"
        schema.write_text(cli("schema", kind).out)
        proc = _check_jsonschema(schema, files)
        assert proc.returncode == 0, proc.stdout + proc.stderr


def test_check_jsonschema_rejects_a_typo(cli: Any, tmp_path: Path) -> None:
    schema = tmp_path / "overlay.json"
    schema.write_text(cli("schema", "overlay").out)
    bad = tmp_path / "bad.yaml"
    bad.write_text("kind: RecipeMetadata\napiVersion: aicr.run/v1alpha2\nmetadata: {name: x}\n"
                   "spec:\n  componentRefs:\n    - name: nfd\n      valuesFlie: x.yaml\n")
    proc = _check_jsonschema(schema, [bad])
    assert proc.returncode == 1
    assert "valuesFlie" in proc.stdout


def test_cache_is_used_then_invalidated_by_an_edit(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    subprocess.run(["cp", "-r", str(Path(__file__).resolve().parents[2] / "overlays"), str(catalog)], check=True)
    env = {"AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
    first = run_process("recipe", "--catalog", str(catalog), *QUICKSTART, env=env)
    assert first.code == 0, first.err
    assert len(list((tmp_path / "cache").glob("*.marshal"))) == 1
    base = catalog / "overlays" / "base.yaml"
    base.write_text(base.read_text() + "\nbogus: true\n")
    second = run_process("recipe", "--catalog", str(catalog), *QUICKSTART, env=env)
    assert second.code == 2
    assert "base.yaml" in second.err and "bogus" in second.err


def test_corrupt_cache_is_ignored(tmp_path: Path) -> None:
    env = {"AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
    assert run_process("recipe", *QUICKSTART, env=env).code == 0
    for entry in (tmp_path / "cache").glob("*.marshal"):
        entry.write_bytes(b"\x00garbage")
    again = run_process("recipe", *QUICKSTART, env=env)
    assert again.code == 0, again.err


def test_editing_a_health_check_reaches_the_recipe_through_the_cache(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    subprocess.run(["cp", "-r", str(Path(__file__).resolve().parents[2] / "overlays"), str(catalog)], check=True)
    env = {"AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
    assert run_process("recipe", "--catalog", str(catalog), *QUICKSTART, env=env).code == 0
    check = catalog / "checks" / "nfd" / "health-check.yaml"
    check.write_text("# edited\n" + check.read_text())
    again = run_process("recipe", "--catalog", str(catalog), *QUICKSTART, "--format", "json", env=env)
    nfd = next(ref for ref in json.loads(again.out)["componentRefs"] if ref["name"] == "nfd")
    assert nfd["healthCheckAsserts"].startswith("# edited\n")


def test_startup_imports_stay_lazy(tmp_path: Path) -> None:
    """`--version` loads neither pydantic nor ruamel; a cached `recipe` run does not load pydantic."""
    probe = """
import sys
from aicr_gen.cli.main import main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
heavy = sorted({name.split('.')[0] for name in sys.modules} & {'pydantic', 'ruamel', 'jsonschema'})
sys.stderr.write('HEAVY=' + ','.join(heavy) + '\\n')
"""

    def heavy(*args: str) -> str:
        env = {**os.environ, "AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
        proc = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=True,
                              env=env)
        return proc.stderr.rsplit("HEAVY=", 1)[1].strip()

    assert heavy("--version") == ""
    assert "pydantic" in heavy("recipe", *QUICKSTART, "-o", "/dev/null")  # first run validates and caches
    assert heavy("recipe", *QUICKSTART, "-o", "/dev/null") == ""


def test_component_ref_key_order_matches_the_model() -> None:
    from aicr_gen.catalog.models import ComponentRef
    from aicr_gen.resolve.refs import KEY_ORDER

    assert tuple(ComponentRef.model_fields) == KEY_ORDER
