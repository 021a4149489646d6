"""Cache keys follow aicr-gen's own code: ``edges/cache.code_digest`` covers every code file of the package,
found by walking it (the hand lists of validating and normalising modules it replaces went stale silently), so
an edit to any module that validates a catalog or normalises events misses the cache."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import aicr_gen
from aicr_gen.catalog.load import embedded_root, load
from aicr_gen.edges import cache
from aicr_gen.sentinel.rules.events import load_events

PACKAGE = Path(aicr_gen.__file__).parent
EVENTS = Path(__file__).parents[1] / "fixtures" / "rules" / "events"
FORMER_LISTS = (  # edges/cache._VALIDATING_CODE and sentinel/rules/events._NORMALISING_CODE (yamlio.py is yaml/ now)
    "catalog/models.py", "catalog/parse.py", "catalog/headers.py", "catalog/vocabulary.py", "modelcheck.py",
    "yaml/load.py", "yaml/fast.py", "drift/snapshot.py", "catalog/recipe_file.py", "render/plan.py",
    "render/manifests.py",
    "render/gotemplate.py", "render/gofmt.py", "render/goyaml.py", "render/hooks.py", "sentinel/rules/events.py",
    "sentinel/rules/source.py", "sentinel/rules/model.py", "cel/conversions.py", "edges/inputs.py")


def test_every_module_is_keyed_and_no_data() -> None:
    names = [name for name, _full in cache.code_files()]
    modules = {path.relative_to(PACKAGE).as_posix() for path in PACKAGE.rglob("*.py")
               if "__pycache__" not in path.parts}
    assert modules <= set(names)
    assert set(FORMER_LISTS) <= set(names)
    assert not [name for name in names if name.startswith(("_catalog/", "_policies/")) or "__pycache__" in name]


def test_an_edit_or_a_new_module_changes_the_digest(tmp_path: Path) -> None:
    copy = tmp_path / "aicr_gen"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__", "_catalog", "_policies"))
    before = cache.code_digest(str(copy))
    models = copy / "catalog" / "models.py"
    text = models.read_text()
    assert "min_length=1" in text
    models.write_text(text.replace("min_length=1", "min_length=2", 1))  # same size, other rule
    edited = cache.code_digest.__wrapped__(str(copy))
    assert edited != before
    (copy / "catalog" / "new_rule.py").write_text("MAX = 1\n")
    assert cache.code_digest.__wrapped__(str(copy)) not in (before, edited)


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


def _entries(folder: Path) -> set[str]:
    return {path.name for path in folder.glob("*.marshal")}


def test_a_code_edit_misses_cached_catalogs_and_events(cache_dir: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    load([embedded_root()])
    load_events(str(EVENTS))
    filled = _entries(cache_dir)
    assert len(filled) == 2
    load([embedded_root()])
    load_events(str(EVENTS))
    assert _entries(cache_dir) == filled  # unchanged code: both hit
    monkeypatch.setattr(cache, "code_digest", lambda: cache.digest(b"an edited validator"))
    load([embedded_root()])
    load_events(str(EVENTS))
    assert len(_entries(cache_dir) - filled) == 2  # both keyed anew
