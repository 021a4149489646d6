"""A ClusterSpec's resolved recipe, cached by everything it was read from (``diff --spec``): loading a spec
imports and runs the pydantic models (~115 ms of a ~190 ms diff), and a drift check reads the same spec again
and again.

An entry is keyed by the spec file's resolved path and bytes and by aicr-gen's code (``cache.new_key``); it
holds the recipe and, for every input the spec's recipe was rendered from (``records.fingerprint.named``: the
spec, its fleet -- the wave's view of it --, its catalog layers or the embedded catalog, its sentinel rules, its
mirror lock), the digest ``sync``'s inputs records keep and the Git work tree that input is in (paths a spec
names must stay inside it). A lookup recomputes those digests and work trees; one that differs, or a missing
entry, is a miss, and the spec is loaded and checked as always (so every refusal is the same). Specs with
``spec.pools`` are not cached (their drift is per pool)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import ClusterSpec

KIND = "spec-recipe-v1"


def _key(spec_file: str) -> tuple[str, str] | None:
    """(cache key, resolved path) of ``spec_file``, or None when it cannot be read."""
    from aicr_gen.edges import cache

    place = os.path.realpath(spec_file)
    try:
        with open(place, "rb") as handle:  # noqa: PTH123 - as the cache's other readers
            raw = handle.read()
    except OSError:
        return None
    key = cache.new_key(KIND)
    key.update(os.fsencode(place) + b"\0")
    key.update(raw)
    return key.hexdigest(), place


def _tree(path: str) -> str:
    from aicr_gen.edges.files import work_tree

    found = work_tree(Path(path).parent)
    return str(found) if found is not None else ""


def cached(spec_file: str) -> dict[str, Any] | None:
    """The recipe of ``spec_file`` when nothing it was read from changed since it was remembered, else None."""
    from aicr_gen.edges import cache
    from aicr_gen.gitops.records.fingerprint import Digests

    found = _key(spec_file)
    entry = cache.get(found[0]) if found is not None else None
    if entry is None:
        return None
    digests = Digests()
    for name, path, digest, tree in entry["inputs"]:
        if digests.of(Path(path), name) != digest or _tree(path) != tree:
            return None
    recipe: dict[str, Any] = entry["recipe"]
    return recipe


def remember(spec_file: str, cluster: ClusterSpec, recipe: dict[str, Any]) -> None:
    """Cache the recipe resolved from ``cluster`` (loaded from ``spec_file``, without pools)."""
    from aicr_gen.edges import cache
    from aicr_gen.gitops.records.fingerprint import Digests, named

    found = _key(spec_file)
    if found is None or cluster.spec.pools:
        return
    render, _policies = named(cluster, spec_file, Path(found[1]).parent)
    digests = Digests()
    inputs = [[name, str(place.resolve()), digests.of(place, name), _tree(str(place.resolve()))]
              for name, place in sorted(render.items())]
    cache.put(found[0], {"inputs": inputs, "recipe": recipe})
