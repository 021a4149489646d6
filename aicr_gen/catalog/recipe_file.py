"""Reading a RecipeResult file (ours or AICR's): validated strictly once per content, like catalogs
(``edges/cache.py``). ``bundle``, ``validate``, ``diff`` and ``mirror`` read recipes through here."""

from __future__ import annotations

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def load_recipe(path: str) -> dict[str, Any]:
    """The validated recipe of file ``path``."""
    recipe: dict[str, Any] = load_entry(path)["recipe"]
    return recipe


def load_entry(path: str, kubeconfig: str | None = None, context: str | None = None) -> dict[str, Any]:
    """``recipe``: the validated recipe; ``yaml``: it as the bundle's recipe.yaml writes it (dumping a large
    recipe is a good part of rendering a bundle, and a cache hit needs neither). ``path``: a file, or a
    ``cm://NAMESPACE/NAME`` ConfigMap read through ``kubeconfig`` and ``context`` (AICR's keys), or an
    ``https://`` URL (``http://`` to a loopback host) fetched as AICR fetches one, at most 1 MiB."""
    from aicr_gen.edges import cache
    if path.startswith(("https://", "http://")):
        raw, path = _download(path)
    elif path.startswith("cm://"):
        from aicr_gen.edges.configmaps import configmap_bytes
        from aicr_gen.edges.files import gunzip
        raw, path = configmap_bytes(path, kubeconfig, context)
        raw = gunzip(raw, path) if raw.startswith(b"\x1f\x8b") else raw
    else:
        from aicr_gen.edges.files import read_named

        raw = read_named(path, "--recipe", "write one with 'aicr-gen recipe -o FILE'")
    key = _key(raw)
    entry = cache.get(key)
    if entry is None:
        from aicr_gen.yaml import dump

        recipe = _validate(raw, path)
        entry = {"recipe": recipe, "yaml": dump(recipe)}
        cache.put(key, entry)
    return entry


def validated_before(path: str, limit: int) -> dict[str, Any] | None:
    """The validated recipe of file ``path`` when its bytes (at most ``limit``) were validated before (a cache
    hit), else None, also when it cannot be read: for a caller that does not know yet whether a file is a recipe,
    a hit answers without parsing it (only a RecipeResult is ever validated), a miss leaves reading, checking and
    refusing it to the caller's usual path. Bytes without the text ``RecipeResult`` (a snapshot, mostly) are not
    looked up: hashing them would cost more than the answer saves."""
    from aicr_gen.edges import cache
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - pathlib costs a diff ~2 ms to import
            raw = handle.read(limit + 1)
    except OSError:
        return None
    if len(raw) > limit or b"RecipeResult" not in raw or (entry := cache.get(_key(raw))) is None:
        return None
    recipe: dict[str, Any] = entry["recipe"]
    return recipe


def _key(raw: bytes) -> str:
    from aicr_gen.edges import cache

    key = cache.new_key("recipe-v3")
    key.update(raw)
    return key.hexdigest()


URL_LIMIT = 1024 * 1024
"""Bytes of a recipe read from a URL (AICR's ``MaxSpecFileBytes`` and ``HTTPResponseBodyLimit``)."""
URL_DEADLINE = 30.0
"""Seconds for the whole download, redirects included (AICR's ``HTTPClientTimeout``)."""


def _download(url: str) -> tuple[bytes, str]:
    """The recipe at ``url`` and the name messages give it (credentials in it redacted). Through the hardened
    transport: HTTPS (plain HTTP only to a loopback host), redirects checked hop by hop, a deadline and a byte
    limit; not found is exit 2, any other failure of the server exit 3."""
    from aicr_gen.edges.transport import Transport, redacted
    from aicr_gen.errors import UnreachableError

    name = redacted(url)
    answer = Transport("--recipe").send("GET", url, {"Accept": "application/yaml, application/json, text/plain"},
                                        limit=URL_LIMIT, deadline=URL_DEADLINE)
    if answer.status == 404:
        raise InvalidInputError(f"--recipe {name}: not found (404); check the URL")
    if answer.status != 200:
        raise UnreachableError(f"--recipe {name}: the server answered {answer.status}")
    return answer.body, name


def _validate(raw: bytes, path: str) -> dict[str, Any]:
    from aicr_gen.catalog import headers
    from aicr_gen.catalog.models import RecipeResult
    from aicr_gen.modelcheck import check
    from aicr_gen.yaml import load_bytes

    doc = load_bytes(raw, path)
    headers.check(doc, "RecipeResult")
    recipe: dict[str, Any] = check(doc, RecipeResult).model_dump(exclude_none=True)
    if "deploymentOrder" not in recipe:
        raise InvalidInputError(f"{path}: deploymentOrder is missing; regenerate the recipe")
    unknown = sorted(set(recipe["deploymentOrder"]) - {ref["name"] for ref in recipe["componentRefs"]})
    if unknown:
        raise InvalidInputError(f"{path}: deploymentOrder names {unknown[0]!r}, which is not in componentRefs")
    return recipe
