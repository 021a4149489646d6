"""Which catalog file set each field of each merged component, so errors point at the line to fix."""

from __future__ import annotations

from collections.abc import Mapping

from aicr_gen.catalog.load import Catalog
from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.merge import is_empty

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

LISTED = ("dependencyRefs", "manifestFiles", "preManifestFiles")
# Fields the registry fills when no overlay sets them, and where the registry keeps them.
REGISTRY_FIELDS = {
    "version": "helm.defaultVersion", "source": "helm.defaultRepository", "chart": "helm.defaultChart",
    "namespace": "helm.defaultNamespace", "tag": "kustomize.defaultTag", "path": "kustomize.defaultPath",
    "manifestFiles": "manifestFiles",
}


class Origins:
    """``(component, field)`` -> the document that last set it; list items are tracked one by one."""

    def __init__(self) -> None:
        self.files: dict[tuple[str, str], str] = {}

    def record(self, source: str, ref: Mapping[str, Any]) -> None:
        """Note that document ``source`` sets the non-empty fields of ``ref``."""
        self.files.setdefault((ref["name"], ""), source)
        for key, value in ref.items():
            if key in LISTED:
                for item in value or []:
                    self.files.setdefault((ref["name"], f"{key}:{item}"), source)
            if not is_empty(value):
                self.files[(ref["name"], key)] = source

    def where(self, catalog: Catalog, name: str, key: str = "") -> str:
        """``file:line: field.path`` of ``key`` of component ``name`` (``key`` may be ``field:item``)."""
        return catalog.at(*self._part(catalog, name, key))

    def error(self, catalog: Catalog, name: str, key: str, message: str) -> InvalidInputError:
        """An input error about ``key`` of component ``name``, at its place (``where``)."""
        return catalog.error(*self._part(catalog, name, key), message)

    def _part(self, catalog: Catalog, name: str, key: str) -> tuple[str, str, str]:
        """``(document, part, fallback)`` of ``key`` of component ``name``, for ``Catalog.at``."""
        source = self.files.get((name, key))
        field_name = key.split(":", 1)[0]
        if source is None and field_name in REGISTRY_FIELDS and name in catalog.registry:
            registry_key = REGISTRY_FIELDS[field_name]
            return (catalog.registry[name]["_source"], f"component:{name}.{registry_key}",
                    f"components[{name}].{registry_key}")
        if source is None:
            source = self.files.get((name, ""), "recipe")
        suffix = f".{key}" if key else ""
        mark = f"ref:{name}{suffix}"
        if mark not in catalog.locations.get(source, {}):
            mark = f"ref:{name}"  # the field came from elsewhere (a default): point at the component
        return source, mark, f"componentRefs[{name}]"
