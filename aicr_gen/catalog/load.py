"""Load catalogs laid out like AICR's ``recipes/`` folder, in layers, with a content-keyed parse cache.

A layer is a folder with ``registry.yaml``, ``overlays/*.yaml``, ``mixins/*.yaml``, ``checks/`` and
``components/``. Later layers win: registry components and overlays/mixins by name, other files by
relative path. Every document is validated against its model on first sight; the validated plain data
is cached under a digest of all file contents, so an unchanged catalog loads without parsing.
"""

from __future__ import annotations

import hashlib
import marshal
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aicr_gen import __version__
from aicr_gen.catalog import paths
from aicr_gen.errors import InvalidInputError

REGISTRY = "registry.yaml"
_KINDS = {"overlays": "RecipeMetadata", "mixins": "RecipeMixin"}
_CACHE_FORMAT = f"catalog-v1-{__version__}"


@dataclass(frozen=True)
class Layer:
    """One catalog folder: its root and every file in it (relative POSIX path -> absolute path)."""

    root: Path
    files: dict[str, Path]
    escaping: dict[str, str]


@dataclass(frozen=True)
class Catalog:
    """A loaded catalog: validated plain data, ready for resolution (which does no IO)."""

    layers: tuple[Path, ...]
    registry: dict[str, dict[str, Any]]
    overlays: dict[str, dict[str, Any]]
    mixins: dict[str, dict[str, Any]]
    sources: dict[str, str]
    files: frozenset[str]
    checks: dict[str, str]
    escaping: dict[str, str]

    def describe(self) -> str:
        """The layer folders, for messages."""
        return ", ".join(str(root) for root in self.layers)


def embedded_root() -> Path:
    """Our own catalog: inside the installed wheel, or ``overlays/`` of a source checkout."""
    here = Path(__file__).resolve().parent.parent
    packaged = here / "_catalog"
    return packaged if packaged.is_dir() else here.parent / "overlays"


def _scan(root: Path) -> Layer:
    if not root.is_dir():
        raise InvalidInputError(f"{root}: catalog folder not found; pass a folder laid out like AICR's recipes/")
    files: dict[str, Path] = {}
    escaping: dict[str, str] = {}
    real_root = os.path.realpath(root)
    for folder, dirs, names in os.walk(root):
        dirs.sort()
        for name in sorted(names):
            full = Path(folder) / name
            rel = full.relative_to(root).as_posix()
            files[rel] = full
            if full.is_symlink():
                real = os.path.realpath(full)
                if os.path.commonpath([real, real_root]) != real_root:
                    escaping[rel] = real
    return Layer(root=root, files=files, escaping=escaping)


def _documents(layer: Layer) -> list[str]:
    docs = [rel for rel in layer.files if rel == REGISTRY]
    for folder in _KINDS:
        docs.extend(rel for rel in layer.files
                    if rel.startswith(f"{folder}/") and rel.count("/") == 1 and rel.endswith(".yaml"))
    return docs


def _cache_dir() -> Path | None:
    explicit = os.environ.get("AICR_GEN_CACHE_DIR")
    if explicit == "off":
        return None
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "aicr-gen"


def _read(path: Path, root: Path, rel: str) -> bytes:
    paths.check_inside(path, root, rel)
    return path.read_bytes()


def load(roots: list[Path]) -> Catalog:
    """Load the catalog layers in order (later wins)."""
    layers = [_scan(root) for root in roots]
    raw: list[dict[str, bytes]] = []
    digest = hashlib.sha256(_CACHE_FORMAT.encode())
    for layer in layers:
        contents = {rel: _read(layer.files[rel], layer.root, rel) for rel in _documents(layer)}
        raw.append(contents)
        # Health checks are cached as text, so their contents are part of the key too.
        checks = {rel: _read(full, layer.root, rel) for rel, full in layer.files.items() if rel.startswith("checks/")}
        for rel, data in sorted({**contents, **checks}.items()):
            digest.update(f"\0{layer.root}\0{rel}\0".encode())
            digest.update(hashlib.sha256(data).digest())
    merged_files = {rel: (layer.root, full) for layer in layers for rel, full in layer.files.items()}
    escaping = {rel: real for layer in layers for rel, real in layer.escaping.items()
                if merged_files[rel][0] == layer.root}
    key = digest.hexdigest()
    cached = _cache_get(key)
    if cached is None:
        cached = _parse(layers, raw)
        cached["checks"] = _read_checks(cached["registry"], merged_files)
        _cache_put(key, cached)
    return Catalog(
        layers=tuple(roots),
        registry=cached["registry"],
        overlays=cached["overlays"],
        mixins=cached["mixins"],
        sources=cached["sources"],
        files=frozenset(merged_files),
        checks=cached["checks"],
        escaping=escaping,
    )


def _cache_get(key: str) -> dict[str, Any] | None:
    folder = _cache_dir()
    if folder is None:
        return None
    try:
        value = marshal.loads((folder / f"{key}.marshal").read_bytes())
    except (OSError, EOFError, ValueError, TypeError):
        return None
    return value if isinstance(value, dict) else None


def _cache_put(key: str, value: dict[str, Any]) -> None:
    folder = _cache_dir()
    if folder is None:
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{key}.{os.getpid()}.tmp"
        tmp.write_bytes(marshal.dumps(value))
        tmp.replace(folder / f"{key}.marshal")
    except OSError:
        return


def _parse(layers: list[Layer], raw: list[dict[str, bytes]]) -> dict[str, Any]:
    from aicr_gen.catalog import models
    from aicr_gen.catalog.vocabulary import API_VERSION, API_VERSIONS
    from aicr_gen.modelcheck import check, check_kind
    from aicr_gen.yamlio import load_bytes

    registry: dict[str, dict[str, Any]] = {}
    named: dict[str, dict[str, dict[str, Any]]] = {"overlays": {}, "mixins": {}}
    sources: dict[str, str] = {}
    seen_registry = False
    for layer, contents in zip(layers, raw, strict=True):
        layer_names: dict[str, str] = {}
        for rel, data in contents.items():
            source = str(layer.root / rel)
            doc = load_bytes(data, source)
            if rel == REGISTRY:
                check_kind(doc, {"ComponentRegistry": (API_VERSION,)})
                parsed = check(doc, models.ComponentRegistry)
                seen_registry = True
                registry.update(_registry_entries(parsed, source, doc))
                continue
            folder = rel.split("/", 1)[0]
            kind = _KINDS[folder]
            check_kind(doc, {kind: API_VERSIONS if folder == "overlays" else (API_VERSION,)})
            model: Any = models.RecipeMetadata if folder == "overlays" else models.RecipeMixin
            item = check(doc, model)
            name = item.metadata.name
            if name in layer_names:
                raise InvalidInputError(
                    f"{doc.where(('metadata', 'name'))}: {kind} {name!r} is also defined in "
                    f"{layer_names[name]}; rename one")
            layer_names[name] = source
            named[folder][name] = item.model_dump(exclude_none=True)
            sources[f"{folder}/{name}"] = source
    if not seen_registry:
        roots = ", ".join(str(layer.root) for layer in layers)
        raise InvalidInputError(f"{roots}: no {REGISTRY} in any catalog layer; a catalog needs a component registry")
    return {"registry": registry, "overlays": named["overlays"], "mixins": named["mixins"], "sources": sources}


def _registry_entries(parsed: Any, source: str, doc: Any) -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for index, component in enumerate(parsed.components):
        if component.name in entries:
            where = doc.where(("components", index, "name"))
            raise InvalidInputError(f"{where}: component {component.name!r} is listed twice; keep one")
        entry = component.model_dump(exclude_none=True)
        entry["_source"] = source
        entries[component.name] = entry
    return entries


def _read_checks(registry: dict[str, dict[str, Any]], files: dict[str, tuple[Path, Path]]) -> dict[str, str]:
    from aicr_gen.yamlio import decode

    texts: dict[str, str] = {}
    for name, entry in sorted(registry.items()):
        rel = entry["healthCheck"]["assertFile"]
        where = f"{entry['_source']}: components[{name}].healthCheck.assertFile"
        paths.check_relative(rel, where)
        if rel not in files:
            raise InvalidInputError(f"{where}: {rel!r} does not exist in the catalog; add the file or fix the path")
        root, full = files[rel]
        texts[rel] = decode(_read(full, root, rel), str(full))
    return texts
