"""``aicr-gen mirror list``: every chart and image the trees of ClusterSpecs (or bundles of recipes) make the
cluster pull, with where each comes from and, with spec.mirror, where it goes."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from aicr_gen.errors import OK, InvalidInputError
from aicr_gen.mirror.inventory import Inventory
from aicr_gen.mirror.refs import Chart, Found, Origin

FORMATS = ("text", "json", "hauler", "zarf")


def _kind(path: str) -> str:
    from aicr_gen.inputs import read_input
    from aicr_gen.yamlio import load_bytes

    data = load_bytes(read_input(path, "ClusterSpec or RecipeResult"), path).data
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in ("ClusterSpec", "RecipeResult"):
        raise InvalidInputError(f"{path}: kind is {kind!r}; mirror list takes ClusterSpecs and RecipeResults")
    return str(kind)


def _spec_tree(path: str) -> tuple[dict[str, bytes], Any]:
    """The spec's tree as it renders without its mirror (what the mirror has to be filled from), and the spec."""
    from aicr_gen.gitops.render_tree import render_tree
    from aicr_gen.gitops.spec import load_spec

    cluster = load_spec(path)
    upstream = cluster.model_copy(update={"spec": cluster.spec.model_copy(update={"mirror": None})})
    upstream._source = cluster.document
    return dict(render_tree(upstream, Path(path).resolve().parent)), cluster


def _recipe_tree(path: str, deployer: str, catalogs: list[str]) -> dict[str, bytes]:
    from aicr_gen.commands.bundle import _options, load_recipe, plan_for
    from aicr_gen.commands.recipe import open_catalog
    from aicr_gen.render import render_bundle

    recipe = load_recipe(path)
    plan = plan_for(recipe, open_catalog(catalogs), [], deployer)
    return dict(render_bundle(plan, deployer, _options([], None)))


def _prefixed(found: list[Found], label: str) -> list[Found]:
    return [item._replace(origin=Origin(f"{label}:{item.origin.file}", item.origin.field)) for item in found]


def collect(inputs: list[str], *, deployer: str = "helm", catalogs: list[str] | None = None,
            charts_dir: str | None = None) -> Inventory:
    """The inventory of every input (several inputs: each origin prefixed with its file)."""
    from aicr_gen.mirror import inventory
    from aicr_gen.mirror.refs import discover

    found: list[Found] = []
    extra: list[tuple[str, Origin]] = []
    mirrors: set[tuple[str | None, str | None]] = set()
    for path in inputs:
        label = path if len(inputs) > 1 else ""
        if _kind(path) == "ClusterSpec":
            tree, cluster = _spec_tree(path)
            criteria = cluster.spec.criteria
            site = cluster.spec.mirror
            mirrors.add((site.charts, site.images) if site is not None else (None, None))
            images = inventory.certification_images(tree, criteria.service, criteria.accelerator)
            extra += [(text, Origin(f"{label}:{origin.file}" if label else origin.file, origin.field))
                      for text, origin in images]
        else:
            tree = _recipe_tree(path, deployer, catalogs or [])
            mirrors.add((None, None))
        here = discover(tree)
        found += _prefixed(here, label) if label else here
    if len(mirrors) > 1:
        raise InvalidInputError("the inputs name different site mirrors (spec.mirror); list each site's specs "
                                "on their own")
    charts_mirror, images_mirror = next(iter(mirrors))
    if charts_mirror is not None:
        from aicr_gen.mirror.rewrite import chart_mirror

        charts_mirror = chart_mirror(charts_mirror)
    resolved: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    unresolved: dict[tuple[str, str, str], str] = {}
    if charts_dir is not None:
        from aicr_gen.mirror.chart_images import chart_images

        charts = sorted({item.ref for item in found if isinstance(item.ref, Chart)})
        rendered_by, missing = chart_images(Path(charts_dir), charts)
        for chart, rendered in rendered_by.items():
            resolved.setdefault(inventory.chart_key(chart), list(rendered))
        for chart, reason in missing.items():
            unresolved.setdefault(inventory.chart_key(chart), f"not resolved offline: {reason}")
        for key in resolved:
            unresolved.pop(key, None)
    return inventory.build(found, extra_images=extra, chart_images=resolved, unresolved=unresolved,
                           charts_mirror=charts_mirror, images_mirror=images_mirror)


def text_report(found: Inventory) -> str:
    """One line per chart and image, then its origins indented."""
    lines = [f"Charts ({len(found.charts)}):"]
    for chart in found.charts:
        target = f"  -> {chart.target}" if chart.target else ""
        lines.append(f"  {chart.chart.reference}{target}")
        lines += [f"      from {origin}" for origin in chart.origins[:3]]
        lines += [f"      ... and {len(chart.origins) - 3} more"] if len(chart.origins) > 3 else []
        lines += [f"      default images: {chart.unresolved}"] if chart.unresolved else []
    lines.append(f"Images ({len(found.images)}):")
    for image in found.images:
        target = f"  -> {image.target}" if image.target else ""
        lines.append(f"  {image.image}{target}")
        lines += [f"      from {origin}" for origin in image.origins[:3]]
        lines += [f"      ... and {len(image.origins) - 3} more"] if len(image.origins) > 3 else []
    return "\n".join(lines) + "\n"


def list_command(inputs: list[str], output_format: str, output: str | None, *, deployer: str = "helm",
                 catalogs: list[str] | None = None, charts_dir: str | None = None, name: str = "aicr-mirror") -> int:
    from aicr_gen.mirror import manifests
    from aicr_gen.output import write_text
    from aicr_gen.yamlio import dump_json

    found = collect(inputs, deployer=deployer, catalogs=catalogs, charts_dir=charts_dir)
    if output_format == "json":
        text = dump_json(found.to_json())
    elif output_format == "hauler":
        text = manifests.hauler(found, name)
    elif output_format == "zarf":
        text = manifests.zarf(found, name)
    else:
        text = text_report(found)
    write_text(output, text)
    return OK


def run(args: argparse.Namespace) -> int:
    """Dispatch ``aicr-gen mirror ...``."""
    return list_command(args.inputs, args.mirror_format, args.output, deployer=args.deployer,
                        catalogs=args.catalog, charts_dir=args.charts, name=args.name)
