"""Same inputs, same bytes: whatever the hash seed, locale, cache state or file order."""

from __future__ import annotations

import os
import random
from pathlib import Path
from typing import Any

import pytest

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
def test_aicr_recipe_does_not_depend_on_directory_listing_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loader sees the catalog's files in reversed and in shuffled order: same recipe bytes."""
    from aicr_gen.catalog import load
    from aicr_gen.resolve import recipe
    from aicr_gen.resolve.criteria import normalise
    from aicr_gen.yaml import dump

    query = normalise({key.lstrip("-"): value for key, value in zip(QUERY[::2], QUERY[1::2], strict=True)})
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", "off")
    baseline = dump(recipe.resolve(load.load([AICR_CATALOG]), query))
    real_walk = os.walk
    for reorder in (lambda items: items[::-1], lambda items: random.Random(7).sample(items, len(items))):

        def walk(top: Any, reorder: Any = reorder, **kwargs: Any) -> Any:
            for folder, dirs, names in real_walk(top, **kwargs):
                dirs[:] = reorder(dirs)
                yield folder, dirs, reorder(names)

        monkeypatch.setattr(load.os, "walk", walk)
        assert dump(recipe.resolve(load.load([AICR_CATALOG]), query)) == baseline
