"""``aicr-gen recipe`` and ``aicr-gen recipe list``."""

from __future__ import annotations

import sys
from typing import Any

from aicr_gen.catalog import load
from aicr_gen.catalog.load import open_catalog
from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.errors import OK
from aicr_gen.output import write_text
from aicr_gen.resolve import criteria, recipe
from aicr_gen.yamlio import dump, dump_json

# open_catalog too: commands/spec and gitops/spec import it from here
__all__ = ["leaf_rows", "list_leaves", "open_catalog", "resolve_command"]


def resolve_command(folders: list[str], values: dict[str, str | None], output: str | None, fmt: str, *,
                    nodes: int, profile: str | None, accounting_mode: str | None) -> int:
    """Resolve and print (or write) the recipe."""
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.resolve.profile import parse_selection

    if nodes < 0:
        raise InvalidInputError(f"--nodes: {nodes} is negative; give a node count of 0 or more")
    catalog = open_catalog(folders)
    query = recipe.query_for(catalog, values)
    if all(value == criteria.ANY for value in query.values()) and not nodes:
        raise InvalidInputError(
            "no criteria given; pass at least one of --service, --accelerator, --intent, --os, --platform, --nodes")
    options = recipe.Options(nodes=nodes, profile=parse_selection(profile), accounting_mode=accounting_mode)
    result = recipe.resolve(catalog, query, options)
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
    widths = [max(len(line[i]) for line in table) for i in range(len(header))]
    for line in table:
        sys.stdout.write("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip() + "\n")
    return OK
