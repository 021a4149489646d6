"""Load catalogs laid out like AICR's ``recipes/`` folder, in layers.

A layer is a folder with ``registry.yaml``, ``overlays/*.yaml``, ``mixins/*.yaml``, ``checks/`` and
``components/``. Later layers win: registry components and overlays/mixins by name, other files by
relative path. Documents are validated on first sight and cached by content (``cache.py``); health
check texts are read fresh on every load, since the registry may point anywhere in the catalog. Folders are
strings, not pathlib paths: a cached ``bundle`` needs nothing else from pathlib (~8 ms to import).
"""

from __future__ import annotations

import os
from functools import partial

from aicr_gen.edges import cache
from aicr_gen.edges.files import read_file, walk_entries
from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located, format_path
from aicr_gen.text import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

REGISTRY = "registry.yaml"
_FOLDERS = ("overlays", "mixins")


class Layer(NamedTuple):
    """One catalog folder: every file in it (relative POSIX paths), the regular files among them that are not
    symlinks (known to be inside without resolving their path), and the symlinks leaving it."""

    root: str
    files: frozenset[str]
    plain: frozenset[str]
    escaping: dict[str, str]


class Catalog(NamedTuple):
    """A loaded catalog: validated plain data, ready for resolution (which does no IO)."""

    layers: tuple[str, ...]
    registry: dict[str, dict[str, Any]]
    overlays: dict[str, dict[str, Any]]
    mixins: dict[str, dict[str, Any]]
    sources: dict[str, str]
    locations: dict[str, dict[str, list[Any]]]
    files: frozenset[str]
    checks: dict[str, str]
    escaping: dict[str, str]
    plain: tuple[frozenset[str], ...]  # per layer, as Layer.plain

    def describe(self) -> str:
        """The layer folders, for messages."""
        return ", ".join(str(root) for root in self.layers)

    def at(self, source: str, key: str, fallback: str) -> str:
        """``file:line: field.path`` of part ``key`` of document ``source`` (see ``parse.py``); ``file: fallback``
        when the part was not recorded."""
        mark = self.locations.get(source, {}).get(key)
        if mark is None:
            return f"{source}: {fallback}"
        line, path = mark
        return f"{source}:{line}: {format_path(tuple(path))}"

    def error(self, source: str, key: str, fallback: str, message: str) -> InvalidInputError:
        """An input error about part ``key`` of document ``source``, at its line and field path (``at``)."""
        mark = self.locations.get(source, {}).get(key)
        if mark is None:
            return InvalidInputError(f"{self.at(source, key, fallback)}: {message}")
        line, path = mark
        return InvalidInputError.at(Located(source, line, message, tuple(path)))


def embedded_root() -> Path:
    """Our own catalog: inside the installed wheel, or ``overlays/`` of a source checkout."""
    from pathlib import Path

    return Path(_embedded_folder())


def _embedded_folder() -> str:
    here = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
    packaged = os.path.join(here, "_catalog")
    return packaged if os.path.isdir(packaged) else os.path.join(os.path.dirname(here), "overlays")


def open_catalog(folders: list[str], *, registry_only: bool = False) -> Catalog:
    """The ``--catalog`` layers, or the embedded catalog when none is given (``registry_only``: see ``load``)."""
    return load(folders or [_embedded_folder()], registry_only=registry_only)


def _scan(root: str) -> Layer:
    """The files of ``root`` as ``os.walk`` finds them (symlinked folders are not entered), from directory
    entries only: their types need no further system call, and only symlinks need their targets resolved."""
    if not os.path.isdir(root):
        raise InvalidInputError(f"{root}: catalog folder not found; pass a folder laid out like AICR's recipes/")
    files: set[str] = set()
    plain: set[str] = set()
    escaping: dict[str, str] = {}
    real_root = os.path.realpath(root)
    for rel, entry in walk_entries(root):
        if entry.is_symlink():
            if entry.is_dir():
                continue
            real = os.path.realpath(entry.path)
            if os.path.commonpath([real, real_root]) != real_root:
                escaping[rel] = real
        elif entry.is_dir():
            continue
        elif entry.is_file():
            plain.add(rel)
        files.add(rel)
    return Layer(root=root, files=frozenset(files), plain=frozenset(plain), escaping=escaping)


def _documents(layer: Layer, registry_only: bool) -> list[str]:
    docs = [REGISTRY] if REGISTRY in layer.files else []
    if registry_only:
        return docs
    docs.extend(rel for rel in sorted(layer.files)
                if rel.split("/", 1)[0] in _FOLDERS and rel.count("/") == 1 and rel.endswith(".yaml"))
    return docs


def _join(root: str, rel: str) -> str:
    """``root / rel`` as pathlib writes it (``rel`` alone in the folder ``.``)."""
    return rel if root == "." else f"{root.rstrip('/')}/{rel}"


def _read(layer: Layer, rel: str) -> bytes:
    return read_file(_join(layer.root, rel), layer.root, rel, inside=rel in layer.plain)


def _cache_key(layers: list[Layer], raw: list[dict[str, bytes]]) -> str:
    digest = cache.new_key("catalog-v2")
    for layer, contents in zip(layers, raw, strict=True):
        for rel, data in contents.items():
            digest.update(b"\0" + os.fsencode(layer.root) + b"\0" + os.fsencode(rel) + b"\0")
            digest.update(cache.digest(data))
    return digest.hexdigest()


def load(folders: Sequence[str | os.PathLike[str]], *, registry_only: bool = False) -> Catalog:
    """Load the catalog layers in order (later wins). ``registry_only``: the registry and the files, what rendering
    a recipe reads (the recipe holds what the overlays, mixins and health checks gave it); overlays and mixins
    are then neither read nor validated, and ``checks`` is empty."""
    roots = [paths.as_pathlib(os.fspath(folder)) for folder in folders]
    layers = [_scan(root) for root in roots]
    raw = [{rel: _read(layer, rel) for rel in _documents(layer, registry_only)} for layer in layers]
    merged = {rel: layer for layer in layers for rel in layer.files}
    escaping = {rel: real for layer in layers for rel, real in layer.escaping.items() if merged[rel] is layer}
    key = _cache_key(layers, raw)
    parsed = cache.get(key)
    if parsed is None:
        from aicr_gen.catalog.parse import parse_layers

        parsed = parse_layers([(layer.root, contents) for layer, contents in zip(layers, raw, strict=True)])
        cache.put(key, parsed)
    catalog = Catalog(
        layers=tuple(roots), registry=parsed["registry"], overlays=parsed["overlays"], mixins=parsed["mixins"],
        sources=parsed["sources"], locations=parsed["locations"], files=frozenset(merged), checks={},
        escaping=escaping, plain=tuple(layer.plain for layer in layers))
    return catalog if registry_only else catalog._replace(checks=_read_checks(catalog, merged))


def _read_checks(catalog: Catalog, files: dict[str, Layer]) -> dict[str, str]:
    from aicr_gen.yaml import decode

    texts: dict[str, str] = {}
    for name, entry in sorted(catalog.registry.items()):
        rel = entry["healthCheck"]["assertFile"]
        place = (entry["_source"], f"component:{name}.healthCheck.assertFile",
                 f"components[{name}].healthCheck.assertFile")
        normal = paths.normalise(rel, partial(catalog.error, *place))
        if normal not in files:
            raise catalog.error(*place, f"{rel!r} does not exist in the catalog; add the file or fix the path")
        layer = files[normal]
        texts[rel] = decode(_read(layer, normal), _join(layer.root, normal))
    return texts


def read_files(catalog: Catalog, wanted: list[str]) -> dict[str, bytes]:
    """Contents of catalog files by relative path, from the last layer that has each; missing ones are
    left out (the caller decides whether that is an error), escaping ones are refused."""
    found: dict[str, bytes] = {}
    for rel in wanted:
        normal = paths.normalise(rel, f"catalog file {rel!r}")
        if normal in catalog.escaping:
            raise InvalidInputError(f"{rel}: a symlink to {catalog.escaping[normal]}, outside the catalog")
        for root, plain in zip(reversed(catalog.layers), reversed(catalog.plain), strict=True):
            full = _join(root, normal)
            if normal in plain or os.path.isfile(full):
                found[rel] = read_file(full, root, normal, inside=normal in plain)
                break
    return found
