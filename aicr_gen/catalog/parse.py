"""Parse and validate catalog documents into plain data, recording where each part is written.

``locations`` maps each document to ``{key: (line, field path)}`` for the parts resolution may have to
point at later (a component ref and its fields, spec.base, a mixin name, a registry field), so errors
found after loading still name ``file:line: field.path``.
"""

from __future__ import annotations

from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml import Document, FieldPath, load_bytes

REGISTRY = "registry.yaml"
RESERVED_COMPONENTS = {"deployer"}


def _mark(doc: Document, path: FieldPath) -> tuple[int, FieldPath]:
    return doc.line_of(path), path


def _ref_locations(doc: Document, refs: list[dict[str, Any]], prefix: FieldPath) -> dict[str, tuple[int, FieldPath]]:
    marks: dict[str, tuple[int, FieldPath]] = {}
    for index, ref in enumerate(refs):
        at = (*prefix, index)
        marks[f"ref:{ref['name']}"] = _mark(doc, at)
        for key, value in ref.items():
            marks[f"ref:{ref['name']}.{key}"] = _mark(doc, (*at, key))
            if key in ("dependencyRefs", "manifestFiles", "preManifestFiles"):
                for position, item in enumerate(value or []):
                    marks[f"ref:{ref['name']}.{key}:{item}"] = _mark(doc, (*at, key, position))
    return marks


def overlay_locations(doc: Document) -> dict[str, tuple[int, FieldPath]]:
    """Where spec.base, the mixins, constraints and component refs of an overlay or mixin are."""
    spec = doc.data.get("spec") or {}
    marks = {"base": _mark(doc, ("spec", "base")), "profile": _mark(doc, ("spec", "profile")),
             "file": (1, ("spec",))}
    for index, name in enumerate(spec.get("mixins") or []):
        marks[f"mixin:{name}"] = _mark(doc, ("spec", "mixins", index))
    for index, item in enumerate(spec.get("constraints") or []):
        marks[f"constraint:{item.get('name')}"] = _mark(doc, ("spec", "constraints", index))
    marks.update(_ref_locations(doc, spec.get("componentRefs") or [], ("spec", "componentRefs")))
    return marks


def registry_locations(doc: Document) -> dict[str, tuple[int, FieldPath]]:
    """Where each registry component and its default fields are."""
    marks: dict[str, tuple[int, FieldPath]] = {"file": (1, ("components",))}
    for index, component in enumerate(doc.data.get("components") or []):
        at: FieldPath = ("components", index)
        name = component.get("name")
        marks[f"component:{name}"] = _mark(doc, at)
        for group, keys in (("helm", ("defaultRepository", "defaultChart", "defaultVersion", "defaultNamespace")),
                            ("kustomize", ("defaultSource", "defaultPath", "defaultTag")),
                            ("healthCheck", ("assertFile",))):
            for key in keys:
                marks[f"component:{name}.{group}.{key}"] = _mark(doc, (*at, group, key))
        marks[f"component:{name}.manifestFiles"] = _mark(doc, (*at, "manifestFiles"))
    return marks


def _check_criteria_nodes(doc: Document) -> None:
    criteria = (doc.data.get("spec") or {}).get("criteria") or {}
    if criteria.get("nodes"):
        raise doc.error(("spec", "criteria", "nodes"), "criteria.nodes is not used to select overlays, so the "
                        "overlay would match every node count; remove it")


def parse_layers(layers: list[tuple[str, dict[str, bytes]]]) -> dict[str, Any]:
    """Validated catalog data from ``[(root, {relative path: bytes})]``, later layers winning."""
    from aicr_gen.catalog import headers, models
    from aicr_gen.modelcheck import check

    registry: dict[str, dict[str, Any]] = {}
    named: dict[str, dict[str, dict[str, Any]]] = {"overlays": {}, "mixins": {}}
    sources: dict[str, str] = {}
    locations: dict[str, dict[str, tuple[int, FieldPath]]] = {}
    seen_registry = False
    for root, contents in layers:
        layer_names: dict[str, str] = {}
        for rel, data in contents.items():
            source = f"{root}/{rel}"
            doc = load_bytes(data, source)
            if rel == REGISTRY:
                headers.check(doc, "ComponentRegistry")
                parsed = check(doc, models.ComponentRegistry)
                seen_registry = True
                registry.update(_registry_entries(parsed, source, doc))
                locations[source] = registry_locations(doc)
                continue
            folder = rel.split("/", 1)[0]
            model: Any = models.RecipeMetadata if folder == "overlays" else models.RecipeMixin
            headers.check(doc, model.__name__)
            item = check(doc, model)
            if folder == "overlays":
                _check_criteria_nodes(doc)
            name = item.metadata.name
            if folder == "overlays" and (rel == "overlays/base.yaml") != (name == "base"):
                raise doc.error(("metadata", "name"), "the root overlay is overlays/base.yaml named 'base'; "
                                f"rename {rel} or its metadata.name {name!r}")
            if name in layer_names:
                raise doc.error(("metadata", "name"), f"{name!r} is also defined in {layer_names[name]}; rename one")
            layer_names[name] = source
            named[folder][name] = item.model_dump(exclude_none=True)
            sources[f"{folder}/{name}"] = source
            locations[source] = overlay_locations(doc)
    if not seen_registry:
        roots = ", ".join(root for root, _ in layers)
        raise InvalidInputError(f"{roots}: no {REGISTRY} in any catalog layer; a catalog needs a component registry")
    return {"registry": registry, "overlays": named["overlays"], "mixins": named["mixins"], "sources": sources,
            "locations": locations}


def _registry_entries(parsed: Any, source: str, doc: Document) -> dict[str, dict[str, Any]]:
    entries: dict[str, dict[str, Any]] = {}
    for index, component in enumerate(parsed.components):
        at = ("components", index, "name")
        if component.name in entries:
            raise doc.error(at, f"component {component.name!r} is listed twice; keep one")
        if component.name in RESERVED_COMPONENTS:
            raise doc.error(at, f"{component.name!r} is reserved for deployer settings; rename it")
        entry = component.model_dump(exclude_none=True)
        entry["_source"] = source
        entries[component.name] = entry
    return entries
