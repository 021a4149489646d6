"""``aicr-gen recipe list``: ``--catalog`` before or after ``list``, options ``list`` does not take refused by name,
JSON output, overlays without criteria left out."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import AICR_CATALOG, needs_reference
from tests.tiny_catalog import (
    Run,
    make,
    overlay,
    refused,
)


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


def test_recipe_list_omits_overlays_without_criteria(cli: Run, tmp_path: Path) -> None:
    catalog = make(tmp_path / "catalog", {"overlays/common.yaml": overlay("common", "  componentRefs:\n"
                                                                                    "    - name: c\n")})

    table = cli("recipe", "list", "--catalog", str(catalog))
    as_json = cli("recipe", "list", "--catalog", str(catalog), "--format", "json")

    assert table.code == 0, table.err
    assert [line.split()[0] for line in table.out.splitlines()] == ["NAME", "eks"]
    assert [row["name"] for row in json.loads(as_json.out)] == ["eks"]
