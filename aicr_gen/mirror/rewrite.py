"""A site mirror applied at render time: the deployment plan (and the manifests aicr-gen writes beside it)
rewritten so the tree references only the mirror.

Why at render time and not over the finished tree: the plan is what every deployer renders, so one rewrite
moves Argo CD, Flux, helm and helmfile sources alike (an https:// Helm repository becomes an OCI one, which
each deployer spells its own way: an ``OCIRepository`` for Flux, an ``oci://`` repoURL for Argo CD), and the
checksums, the stack digest of the post-change hooks and the recipe provenance are computed from what is
committed. Rewriting the finished files would have to re-create those.

With a mirror lock (``lock.py``), the same pass pins what the lock lists (``pin.py``): the plan's image values
and manifests before the deployers render, each deployer's chart sources after.

Layout (what ``aicr-gen mirror list`` tells the operator to push): a chart ``NAME`` goes to
``CHARTS/NAME:VERSION`` (``helm push NAME-VERSION.tgz CHARTS``); an image keeps its repository path under
``IMAGES`` (``reference.mirrored``). Pure.
"""

from __future__ import annotations

import copy
from collections.abc import Collection, Mapping
from typing import Any, Protocol

from aicr_gen.bundle import CHECKSUMS, Bundle
from aicr_gen.errors import InvalidInputError
from aicr_gen.mirror.fields import mirrored_line, set_image, value_images
from aicr_gen.mirror.pin import Pins, pinned_charts, pinned_text, pinned_values
from aicr_gen.render.plan import LOCAL, UPSTREAM, Plan, Unit
from aicr_gen.text.image_reference import chart_mirror, mirrored, parse_mirror_prefix


def mirrored_values(values: Mapping[str, Any], images: str) -> dict[str, Any]:
    """``values`` with every image field (``fields.value_images``) moved under ``images``."""
    out = copy.deepcopy(dict(values))
    for field in list(value_images(out)):
        set_image(out, field, mirrored(field.ref, images))
    return out


def mirrored_text(data: bytes, images: str) -> bytes:
    """A manifest or template with its literal ``image:`` lines moved under ``images``."""
    if b"image:" not in data:
        return data
    text = data.decode("utf-8")
    lines = [mirrored_line(line, images) for line in text.split("\n")]
    return "\n".join(lines).encode()


def _unit(unit: Unit, charts: str | None, images: str | None, pins: Pins | None) -> Unit:
    changes: dict[str, Any] = {}
    if charts is not None and unit.kind == UPSTREAM:
        changes["repository"] = charts
    if images is not None:
        values = mirrored_values(unit.values, images)
        changes["values"] = pinned_values(values, pins) if pins is not None else values
        if unit.kind == LOCAL:
            changes["manifests"] = tuple((name, _text(data, images, pins)) for name, data in unit.manifests)
    return unit._replace(**changes)


def _text(data: bytes, images: str, pins: Pins | None) -> bytes:
    moved = mirrored_text(data, images)
    return pinned_text(moved, pins) if pins is not None else moved


class Site(Protocol):
    """A site mirror (``spec.mirror``): either part may be None (left upstream)."""

    @property
    def charts(self) -> str | None: ...

    @property
    def images(self) -> str | None: ...


def mirror_plan(plan: Plan, site: Site | None, pins: Pins | None = None) -> Plan:
    """``plan`` pulling its charts from ``site.charts`` and its images from ``site.images`` (pinned to the
    digests of ``pins``). Two different charts of one name would land on one mirror reference: an input
    error."""
    if site is None or (site.charts is None and site.images is None):
        return plan
    target = chart_mirror(site.charts) if site.charts is not None else None
    prefix = parse_mirror_prefix(site.images) if site.images is not None else None
    if target is not None:
        seen: dict[str, Unit] = {}
        for unit in plan.units:
            if unit.kind != UPSTREAM:
                continue
            other = seen.setdefault(unit.chart, unit)
            if other.repository != unit.repository:
                raise InvalidInputError(
                    f"spec.mirror.charts: components {other.component!r} ({other.repository}) and "
                    f"{unit.component!r} ({unit.repository}) both use a chart named {unit.chart!r}, and a chart "
                    f"mirror holds one chart per name ({target}/{unit.chart}); mirror one of them elsewhere")
    return plan._replace(units=tuple(_unit(unit, target, prefix, pins) for unit in plan.units))


def mirror_tree(tree: Bundle, site: Site | None, *, skip: Collection[str] = (), pins: Pins | None = None) -> Bundle:
    """``tree`` with the images of the files aicr-gen writes beside the deployer bundles (the folders in
    ``skip``, already rendered from a mirrored plan) moved under ``site.images``: the literal ``image:`` lines
    of Kubernetes manifests (certification jobs, snapshot agent) and the image fields of values files
    (``sentinel/values.yaml``); with ``pins``, those images are pinned and so are the chart sources of the
    deployer bundles, and a mirrored reference the lock lacks is an input error. The ``checksums.txt`` of every
    folder holding a changed file is recomputed (the root's is left to the caller). ``recipe.yaml`` files stay
    as resolved: they record the inputs."""
    if site is None or (site.images is None and pins is None):
        return tree
    prefix = parse_mirror_prefix(site.images) if site.images is not None else None
    files = {path: _file(path, data, prefix, pins, path.split("/", 1)[0] in skip) for path, data in tree.items()}
    if pins is not None:
        pins.check()
    changed = [path for path in files if files[path] != tree[path]]
    folders = sorted({path.rsplit("/", 1)[0] for path in files if path.endswith(f"/{CHECKSUMS}")},
                     key=lambda folder: -folder.count("/"))
    for folder in folders:
        if any(path.startswith(f"{folder}/") for path in changed):
            inner = Bundle({path[len(folder) + 1:]: data for path, data in files.items()
                            if path.startswith(f"{folder}/")}).with_checksums()
            files[f"{folder}/{CHECKSUMS}"] = inner[CHECKSUMS]
            changed.append(f"{folder}/{CHECKSUMS}")
    return Bundle(files)


def _file(path: str, data: bytes, prefix: str | None, pins: Pins | None, deployer: bool) -> bytes:
    if deployer:
        return pinned_charts(path, data, pins) if pins is not None else data
    return data if prefix is None else _mirrored_file(path, data, prefix, pins)


def _mirrored_file(path: str, data: bytes, prefix: str, pins: Pins | None) -> bytes:
    """One file of the tree with its images moved: a values file through its image fields (written again only
    when one moved), a manifest through its ``image:`` lines (an ``image:`` key of a Kubernetes object is a
    container image; in values it may be a name, as the GPU Operator's ``image: driver``)."""
    from aicr_gen.yaml import dump
    from aicr_gen.yaml.foreign import YAMLError, load_all

    if path.rsplit("/", 1)[-1] == "recipe.yaml" or not path.endswith((".yaml", ".yml")) or b"image" not in data:
        return data
    try:
        docs = list(load_all(data, libyaml=False))
    except YAMLError:
        return data
    if len(docs) == 1 and isinstance(docs[0], dict) and not {"apiVersion", "kind"} <= docs[0].keys():
        moved = mirrored_values(docs[0], prefix)
        moved = pinned_values(moved, pins) if pins is not None else moved
        return data if moved == docs[0] else dump(moved).encode()
    return _text(data, prefix, pins)
