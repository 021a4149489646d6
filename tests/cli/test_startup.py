"""What a command imports at start-up: the quick ones (``validate``, ``diff``, a ``bundle`` of an unchanged recipe)
import no YAML reader, pydantic, DeepDiff, ``json``, ``shutil`` or ``copy`` (each costs milliseconds of every run)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.drift.test_snapshot import SEEDS

ROOT = Path(__file__).resolve().parents[2]


def test_diff_and_validate_import_neither_pydantic_nor_deepdiff(tmp_path: Path) -> None:
    baseline, target = SEEDS
    code = ("import sys\n"
            "from aicr_gen.drift import diff, load\n"
            f"old = load.load_snapshot({str(baseline)!r})\n"
            f"new = load.load_snapshot({str(target)!r})\n"
            "assert diff.diff_snapshots(old, new)['changes']\n"
            "print(sorted({name.split('.')[0] for name in sys.modules} & {'pydantic', 'deepdiff'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


def _modules_after(args: list[str], tmp_path: Path) -> set[str]:
    """The top-level modules a second run of ``aicr-gen ARGS`` imports (the first fills the cache)."""
    code = ("import sys\nfrom aicr_gen.cli.main import main\n"
            f"code = main({args!r})\n"
            "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n")
    env = {**os.environ, "AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                             check=False)
    assert out.stdout, out.stderr
    return set(out.stdout.split())


def test_validate_of_an_unchanged_snapshot_and_recipe_imports_little(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([sys.executable, "-m", "aicr_gen", "recipe", "--service", "eks", "--accelerator", "h100",
                    "--os", "ubuntu", "--intent", "training", "-o", str(recipe)], check=True, cwd=ROOT,
                   env={**os.environ, "AICR_GEN_CACHE_DIR": "off"})
    loaded = _modules_after(["validate", "--recipe", str(recipe), "--snapshot", str(SEEDS[0])], tmp_path)
    assert loaded & {"yaml_rs", "yaml", "ruamel", "pydantic", "json", "hashlib", "shutil", "copy"} == set()


def test_an_unchanged_flux_bundle_imports_no_copy_json_or_shutil(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([sys.executable, "-m", "aicr_gen", "recipe", "--service", "eks", "--accelerator", "h100",
                    "--os", "ubuntu", "--intent", "training", "-o", str(recipe)], check=True, cwd=ROOT,
                   env={**os.environ, "AICR_GEN_CACHE_DIR": "off"})
    loaded = _modules_after(["bundle", "--recipe", str(recipe), "--deployer", "flux", "-o", str(tmp_path / "out"),
                             "--repo", "https://git.example.com/gitops.git", "--force"], tmp_path)
    assert loaded & {"yaml_rs", "yaml", "ruamel", "pydantic", "json", "shutil", "copy", "tempfile"} == set()


def test_a_default_diff_imports_no_yaml_reader_typing_pathlib_or_hashlib(tmp_path: Path) -> None:
    # the default diff paths against AICR's binary (bench_aicr.py): two JSON snapshots, and a recipe baseline read
    # on an earlier run (validated then, cached) against a JSON snapshot
    import json

    from aicr_gen.drift.load import load_snapshot

    baseline, target = tmp_path / "baseline.json", tmp_path / "target.json"
    for seed, file in zip(SEEDS, (baseline, target), strict=True):
        file.write_text(json.dumps(load_snapshot(str(seed))), encoding="utf-8")
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([sys.executable, "-m", "aicr_gen", "recipe", "--service", "eks", "--accelerator", "h100",
                    "--os", "ubuntu", "--intent", "training", "-o", str(recipe)], check=True, cwd=ROOT,
                   env={**os.environ, "AICR_GEN_CACHE_DIR": "off"})
    unwanted = {"yaml_rs", "yaml", "ruamel", "pydantic", "deepdiff", "typing", "pathlib", "hashlib", "dataclasses"}
    for base in (baseline, recipe):
        loaded = _modules_after(["diff", "--baseline", str(base), "--target", str(target), "--format", "json",
                                 "-o", str(tmp_path / "drift.json")], tmp_path)
        assert loaded & unwanted == set(), base.name
