"""Reading a snapshot (or a recipe given where a snapshot may be) from where the user names it: a file (validated
once per content through the cache), ``-`` for stdin, or ``cm://NAMESPACE/NAME`` read from a cluster
(``edges/configmaps.py``). The one module of ``drift/`` that reads; parsing and validating the bytes is
``drift/snapshot.py``, pure."""

from __future__ import annotations

import sys

from aicr_gen.drift import snapshot
from aicr_gen.edges.files import MAX_SNAPSHOT_BYTES
from aicr_gen.errors import InvalidInputError
from aicr_gen.text.configmap_source import CM_PREFIX

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, BinaryIO

    from aicr_gen.yaml import Document


CACHED_BYTES = 4 * 1024 * 1024
"""Snapshot files up to this size (~2,000 nodes) are validated once per content (``_cached_file``)."""


def load_snapshot(source: str, *, kubeconfig: str | None = None, context: str | None = None,
                  stdin: BinaryIO | None = None) -> dict[str, Any]:
    """The validated snapshot at ``source`` (a file, ``-`` for stdin, or ``cm://NAMESPACE/NAME`` read with
    ``context`` of the kubeconfig) as plain data (unset optional fields left out). A file is validated once per
    content (see ``_cached_file``)."""
    if source == "-" or source.startswith(CM_PREFIX):
        return _snapshot_of(_read(source, kubeconfig, context, stdin))
    return _cached_file(source)


def _snapshot_of(doc: Document) -> dict[str, Any]:
    if snapshot.is_recipe(doc.data):
        raise InvalidInputError(f"{doc.source}:1: kind: {snapshot.RECIPE_KIND} is a recipe, not a snapshot; "
                                "give a snapshot (aicr snapshot output)")
    return snapshot.validate_snapshot(doc)


def _cached_file(source: str) -> dict[str, Any]:
    """The validated snapshot of a file, cached by its bytes like recipes and catalogs (``edges/cache.py``):
    ``validate`` in a pre-commit hook reads the same committed snapshot on every commit, and reading a small one
    is mostly importing and preparing the YAML reader (~10 ms of a 3 KB file). A file over ``CACHED_BYTES`` is
    read every time: the cache keeps its newest 16 entries, and such snapshots would push catalogs out."""
    from aicr_gen.edges import cache
    raw = _read_file(source)
    if len(raw) > CACHED_BYTES:
        return _snapshot_of(snapshot.parse_bytes(raw, source))
    key = cache.new_key("snapshot-v1")
    key.update(raw)
    entry = cache.get(key.hexdigest())
    if entry is None:
        entry = {"snapshot": _snapshot_of(snapshot.parse_bytes(raw, source))}
        cache.put(key.hexdigest(), entry)
    found: dict[str, Any] = entry["snapshot"]
    return found


def load_document(source: str, kubeconfig: str | None = None, stdin: BinaryIO | None = None,
                  context: str | None = None) -> tuple[str, dict[str, Any]]:
    """``("Snapshot", validated snapshot)`` or ``("RecipeResult", the recipe mapping as parsed, its header
    checked)``."""
    doc = _read(source, kubeconfig, context, stdin)
    if snapshot.is_recipe(doc.data):
        snapshot.check_recipe_header(doc)
        return snapshot.RECIPE_KIND, doc.data
    kind = doc.data.get("kind")
    if kind not in (None, snapshot.SNAPSHOT_KIND):
        doc = snapshot.located(doc)
        raise doc.error(("kind",), f"kind {kind!r} is neither a {snapshot.SNAPSHOT_KIND} nor a "
                        f"{snapshot.RECIPE_KIND}; give a snapshot or a recipe")
    return snapshot.SNAPSHOT_KIND, snapshot.validate_snapshot(doc)


def _read(source: str, kubeconfig: str | None, context: str | None, stdin: BinaryIO | None) -> Document:
    if source.startswith(CM_PREFIX):
        return _read_configmap(source, kubeconfig, context)
    if source == "-":
        stream = stdin if stdin is not None else sys.stdin.buffer
        return snapshot.parse_bytes(stream.read(MAX_SNAPSHOT_BYTES + 1), "<stdin>")
    return snapshot.parse_bytes(_read_file(source), source)


def _read_file(source: str) -> bytes:
    """The bytes of snapshot file ``source`` (one more than the limit at most, for ``_parse`` to refuse)."""
    try:
        with open(source, "rb") as handle:
            raw = handle.read(MAX_SNAPSHOT_BYTES + 1)
    except FileNotFoundError:
        raise InvalidInputError(f"{source}: file not found; give a snapshot file, - or cm://NS/NAME") from None
    except IsADirectoryError:
        raise InvalidInputError(f"{source}: is a folder; give a snapshot file") from None
    except OSError as err:
        raise InvalidInputError(f"{source}: cannot read: {err.strerror or err}") from None
    return raw


def _read_configmap(source: str, kubeconfig: str | None, context: str | None) -> Document:
    from aicr_gen.edges.configmaps import configmap_bytes

    return snapshot.parse_bytes(*configmap_bytes(source, kubeconfig, context))
