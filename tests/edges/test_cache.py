"""``aicr_gen/edges/cache.py``: the parse cache of a catalog notices a health check edited or deleted outside
``checks/``, and keeps only its newest entries."""

from __future__ import annotations

from pathlib import Path

import pytest

from aicr_gen.catalog import parse as parse_module
from aicr_gen.edges import cache
from tests.tiny_catalog import (
    REGISTRY,
    REGISTRY_TEXT,
    Run,
    at,
    make,
    recipe,
    ref_named,
    refused,
    resolved,
)


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
