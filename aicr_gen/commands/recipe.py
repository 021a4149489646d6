"""``aicr-gen recipe`` and ``aicr-gen recipe list``."""

from __future__ import annotations

import sys
from typing import Any

from aicr_gen.catalog import load
from aicr_gen.catalog.load import open_catalog
from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.edges.output import write_text
from aicr_gen.errors import OK
from aicr_gen.resolve import criteria, recipe
from aicr_gen.text.tables import aligned
from aicr_gen.yamlio import dump, dump_json

# open_catalog too: commands/spec and gitops/spec import it from here
__all__ = ["leaf_rows", "list_leaves", "open_catalog", "resolve_command"]


def load_criteria(path: str) -> dict[str, Any]:
    """The ``spec`` of a ``RecipeCriteria`` file (AICR's recipe request body), either header generation."""
    from aicr_gen.catalog import headers
    from aicr_gen.catalog.models import RecipeCriteria
    from aicr_gen.edges.files import read_named
    from aicr_gen.modelcheck import check
    from aicr_gen.yamlio import load_bytes

    doc = load_bytes(read_named(path, "--criteria", "give a RecipeCriteria file"), path)
    headers.check(doc, "RecipeCriteria")
    spec: dict[str, Any] = check(doc, RecipeCriteria).spec.model_dump(exclude_none=True)
    return spec


def resolve_command(folders: list[str], values: dict[str, str | None], output: str | None, fmt: str, *,
                    nodes: int, profile: str | None, accounting_mode: str | None,
                    api_version: str | None = None, criteria_file: str | None = None) -> int:
    """Resolve and print (or write) the recipe: criteria from flags over those of ``criteria_file``, written
    with the headers of ``api_version`` (the 1.0 ones by default)."""
    from aicr_gen.catalog import headers
    from aicr_gen.catalog.vocabulary import API_VERSION
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.resolve.profile import parse_selection

    if criteria_file is not None:
        given = load_criteria(criteria_file)
        values = {dim: value if value is not None else given.get(dim) for dim, value in values.items()}
        nodes = nodes or int(given.get("nodes") or 0)
    if nodes < 0:
        raise InvalidInputError(f"--nodes: {nodes} is negative; give a node count of 0 or more")
    catalog = open_catalog(folders)
    query = recipe.query_for(catalog, values)
    if all(value == criteria.ANY for value in query.values()) and not nodes:
        raise InvalidInputError(
            "no criteria given; pass at least one of --service, --accelerator, --intent, --os, --platform, --nodes")
    options = recipe.Options(nodes=nodes, profile=parse_selection(profile), accounting_mode=accounting_mode)
    result = recipe.resolve(catalog, query, options)
    if api_version is not None and api_version != API_VERSION:
        result = headers.convert(result, "RecipeResult", api_version)
    write_text(output, dump_json(result) if fmt == "json" else dump(result))
    return OK


def leaf_rows(catalog: load.Catalog) -> list[dict[str, Any]]:
    """The leaf overlays (no other overlay's base) with their criteria, by name."""
    return [{"name": name, "criteria": catalog.overlays[name]["spec"]["criteria"]}
            for name in recipe.leaf_overlays(catalog)]


def list_leaves(folders: list[str], fmt: str) -> int:
    """Print the leaf overlays as a table or JSON."""
    rows = leaf_rows(open_catalog(folders))
    if fmt == "json":
        sys.stdout.write(dump_json(rows))
        return OK
    header = ["NAME", "SERVICE", "ACCELERATOR", "INTENT", "OS", "PLATFORM"]
    table = [header] + [[row["name"]] + [criteria.value_of(row["criteria"], dim)
                                         for dim in DIMENSIONS]
                        for row in rows]
    for line in aligned(table):
        sys.stdout.write(line + "\n")
    return OK
