"""Same inputs, same bytes: whatever the hash seed, locale, cache state or file order."""

from __future__ import annotations

import shutil
from pathlib import Path

from tests.conftest import AICR_CATALOG, needs_reference, run_process

QUERY = ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo")


def _bytes(tmp_path: Path, name: str, env: dict[str, str], *catalog: str) -> bytes:
    out = tmp_path / name
    result = run_process("recipe", *catalog, *QUERY, "-o", str(out), env=env)
    assert result.code == 0, result.err
    return out.read_bytes()


def test_embedded_recipe_bytes_do_not_depend_on_hash_seed_locale_or_cache(tmp_path: Path) -> None:
    runs = [
        {"PYTHONHASHSEED": "0", "AICR_GEN_CACHE_DIR": "off"},
        {"PYTHONHASHSEED": "1", "AICR_GEN_CACHE_DIR": str(tmp_path / "cache"), "LC_ALL": "C"},
        {"PYTHONHASHSEED": "4242", "AICR_GEN_CACHE_DIR": str(tmp_path / "cache"), "LC_ALL": "C.UTF-8",
         "TZ": "Asia/Tokyo"},
        {"PYTHONHASHSEED": "random", "AICR_GEN_CACHE_DIR": str(tmp_path / "cache")},
    ]
    outputs = {_bytes(tmp_path, f"r{i}.yaml", env) for i, env in enumerate(runs)}
    assert len(outputs) == 1


@needs_reference
def test_aicr_recipe_bytes_do_not_depend_on_file_order(tmp_path: Path) -> None:
    """A copy whose files were written in reverse order (so directory order differs) gives the same bytes."""
    copy = tmp_path / "catalog"
    files = sorted(p for p in AICR_CATALOG.rglob("*") if p.is_file())
    for path in reversed(files):
        target = copy / path.relative_to(AICR_CATALOG)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    first = _bytes(tmp_path, "a.yaml", {"PYTHONHASHSEED": "7", "AICR_GEN_CACHE_DIR": "off"},
                   "--catalog", str(AICR_CATALOG))
    second = _bytes(tmp_path, "b.yaml", {"PYTHONHASHSEED": "8", "AICR_GEN_CACHE_DIR": "off"}, "--catalog", str(copy))
    assert first.replace(str(AICR_CATALOG).encode(), b"") == second.replace(str(copy).encode(), b"")
