"""``aicr-gen recipe`` and ``aicr-gen recipe list``."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.catalog.vocabulary import API_VERSION_PROFILED, DIMENSIONS, GENERATIONS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aicr_gen.catalog import load


def catalog_option(parser: argparse.ArgumentParser, dest: str = "catalog") -> None:
    """``--catalog DIR``, as every command reading a catalog takes it."""
    parser.add_argument(
        "--catalog", dest=dest, action="append", default=[], metavar="DIR",
        help="catalog folder laid out like AICR's recipes/ (repeatable, later wins; replaces the embedded one)")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``recipe`` (criteria flags) and ``recipe list``."""
    catalog_option(parser)
    for dim in DIMENSIONS:
        parser.add_argument(f"--{dim}", default=None, help=f"{dim} criterion (or 'any')")
    parser.add_argument("--gpu", dest="accelerator", help=argparse.SUPPRESS)
    parser.add_argument("--nodes", type=int, default=0, help="advisory GPU node count")
    parser.add_argument("--profile", metavar="NAME=VALUE", help="select a profile value instead of its default")
    parser.add_argument("--slurm-accounting-mode", help="Slurm accounting for slurm recipes: disabled (default), "
                        "customer-managed or aicr-provided")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the recipe to FILE (atomically)")
    parser.add_argument("--format", choices=("yaml", "json"), help="output format (default: yaml)")
    parser.add_argument("--criteria", metavar="FILE", help="a RecipeCriteria file; flags override its values")
    parser.add_argument("--api-version", choices=GENERATIONS, help=f"headers to write: {GENERATIONS[0]} (default; "
                        f"AICR >= 0.22, profiled recipes {API_VERSION_PROFILED}) or {GENERATIONS[1]} (AICR <= 0.21)")
    subcommands = parser.add_subparsers(dest="recipe_command", metavar="list")
    listing = subcommands.add_parser("list", help="list the leaf overlays of the catalog")
    catalog_option(listing, dest="list_catalog")
    listing.add_argument("--format", dest="list_format", choices=("table", "json"), default="table",
                         help="output format (default: table)")


def run(args: argparse.Namespace) -> int:
    """Resolve the recipe the criteria select, or with ``list`` list the leaf overlays."""
    from aicr_gen.errors import InvalidInputError

    if args.recipe_command == "list":
        resolve_only = [*DIMENSIONS, "profile", "slurm_accounting_mode", "output", "format", "criteria", "api_version"]
        given = [name for name in resolve_only if getattr(args, name) is not None]
        given += ["nodes"] if args.nodes else []
        if given:
            flag = given[0].replace("_", "-")
            raise InvalidInputError(f"recipe list takes only --catalog and --format (after 'list'); drop --{flag}")
        return list_leaves(args.catalog + args.list_catalog, args.list_format)
    return resolve_command(args.catalog, {dim: getattr(args, dim) for dim in DIMENSIONS}, args.output,
                           args.format or "yaml", nodes=args.nodes, profile=args.profile,
                           accounting_mode=args.slurm_accounting_mode, api_version=args.api_version,
                           criteria_file=args.criteria)


def load_criteria(path: str) -> dict[str, Any]:
    """The ``spec`` of a ``RecipeCriteria`` file (AICR's recipe request body), either header generation."""
    from aicr_gen.catalog import headers
    from aicr_gen.catalog.models import RecipeCriteria
    from aicr_gen.edges.files import read_named
    from aicr_gen.modelcheck import check
    from aicr_gen.yaml import load_bytes

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
    from aicr_gen.catalog.load import open_catalog
    from aicr_gen.catalog.vocabulary import API_VERSION
    from aicr_gen.edges.output import write_text
    from aicr_gen.errors import OK, InvalidInputError
    from aicr_gen.resolve import criteria, recipe
    from aicr_gen.resolve.profile import parse_selection
    from aicr_gen.yaml import dump, dump_json

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
    from aicr_gen.resolve import recipe

    return [{"name": name, "criteria": catalog.overlays[name]["spec"]["criteria"]}
            for name in recipe.leaf_overlays(catalog)]


def list_leaves(folders: list[str], fmt: str) -> int:
    """Print the leaf overlays as a table or JSON."""
    from aicr_gen.catalog.load import open_catalog
    from aicr_gen.errors import OK
    from aicr_gen.resolve import criteria
    from aicr_gen.yaml import dump_json

    rows = leaf_rows(open_catalog(folders))
    if fmt == "json":
        sys.stdout.write(dump_json(rows))
        return OK
    header = ["NAME", "SERVICE", "ACCELERATOR", "INTENT", "OS", "PLATFORM"]
    table = [header] + [[row["name"]] + [criteria.value_of(row["criteria"], dim)
                                         for dim in DIMENSIONS]
                        for row in rows]
    from aicr_gen.text.tables import aligned

    for line in aligned(table):
        sys.stdout.write(line + "\n")
    return OK
