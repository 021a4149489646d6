"""Finishing merged component refs: registry defaults, health-check hydration and coherence checks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aicr_gen.catalog import paths
from aicr_gen.catalog.load import Catalog
from aicr_gen.errors import InvalidInputError

# Key order of a serialised ComponentRef (AICR's); type and source are always written.
KEY_ORDER = (
    "name", "namespace", "chart", "type", "source", "version", "tag", "valuesFile", "overrides", "patches",
    "dependencyRefs", "manifestFiles", "preManifestFiles", "path", "cleanup", "expectedResources",
    "healthCheckAsserts", "healthCheckSkip",
)
ALWAYS = ("type", "source")


@dataclass
class Origins:
    """Which catalog file last set each field of each component (and added each dependency), so an
    error points at the file to fix rather than where the component first appeared."""

    files: dict[tuple[str, str], str] = field(default_factory=dict)

    def record(self, source: str, ref: Mapping[str, Any]) -> None:
        """Note that ``source`` sets the fields of ``ref`` (values that merge to nothing are skipped)."""
        for key, value in ref.items():
            if key == "dependencyRefs":
                for dep in value or []:
                    self.files.setdefault((ref["name"], f"dependencyRefs:{dep}"), source)
            elif value not in (None, "", [], {}):
                self.files[(ref["name"], key)] = source
        self.files.setdefault((ref["name"], "name"), source)

    def where(self, catalog: Catalog, name: str, key: str = "name") -> str:
        """``file: componentRefs[name].key`` for the file that set it; registry fields name the registry."""
        source = self.files.get((name, key))
        if source is None:
            entry = catalog.registry.get(name, {})
            registry_key = {"version": "helm.defaultVersion", "source": "helm.defaultRepository",
                            "chart": "helm.defaultChart", "namespace": "helm.defaultNamespace"}.get(key)
            if registry_key and "_source" in entry:
                return f"{entry['_source']}: components[{name}].{registry_key}"
            source = self.files.get((name, "name"), "recipe")
        field_path = "" if key == "name" else "." + key.split(":", 1)[0]
        return f"{source}: componentRefs[{name}]{field_path}"


def is_enabled(ref: Mapping[str, Any]) -> bool:
    """``overrides.enabled: false`` or ``overrides.install: false`` disables a component."""
    overrides = ref.get("overrides") or {}
    return overrides.get("enabled") is not False and overrides.get("install") is not False


def with_registry_defaults(ref: Mapping[str, Any], entry: Mapping[str, Any]) -> dict[str, Any]:
    """Fill empty fields from the registry entry; the registry pins versions."""
    out = dict(ref)
    kustomize = entry.get("kustomize") or {}
    if not out.get("type"):
        out["type"] = "Kustomize" if kustomize.get("defaultSource") else "Helm"
    if out["type"] == "Helm":
        helm = entry.get("helm") or {}
        defaults = {
            "source": helm.get("defaultRepository"),
            "version": helm.get("defaultVersion"),
            "namespace": helm.get("defaultNamespace"),
            "chart": (helm.get("defaultChart") or "").rsplit("/", 1)[-1],
        }
    else:
        defaults = {"source": kustomize.get("defaultSource"), "tag": kustomize.get("defaultTag"),
                    "path": kustomize.get("defaultPath")}
    if entry.get("manifestFiles"):
        defaults["manifestFiles"] = list(entry["manifestFiles"])
    for key, value in defaults.items():
        if value and not out.get(key):
            out[key] = value
    return out


def _coherence_problems(ref: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(field, problem) pairs for an enabled ref."""
    name, kind = ref["name"], ref.get("type")
    problems: list[tuple[str, str]] = []
    if ref.get("patches"):
        problems.append(("patches", f"component {name!r} declares patches, which no deployer applies; remove them"))
    if kind == "Helm":
        for key in ("tag", "path"):
            if ref.get(key):
                problems.append((key, f"component {name!r} is Helm but sets the Kustomize field {key}; remove it"))
        for key in ("chart", "source", "version"):
            value = ref.get(key) or ""
            if value != value.strip():
                problems.append((key, f"component {name!r} has {key} {value!r} with surrounding whitespace; trim it"))
        version = (ref.get("version") or "").strip()
        if version and not version.removeprefix("v"):
            problems.append(("version", f"component {name!r} has chart version {version!r}; pin a full version"))
        if ref.get("source") and not version:
            problems.append(("version", f"component {name!r} has no chart version; pin helm.defaultVersion"))
        if ref.get("chart") and not ref.get("source"):
            problems.append(("chart", f"component {name!r} names chart {ref['chart']!r} but no source; set source"))
        if not ref.get("source") and not ref.get("chart") and not ref.get("manifestFiles"):
            problems.append(("source", f"component {name!r} has nothing to deploy (no source, chart or manifestFiles)"))
    elif kind == "Kustomize":
        if not ref.get("path"):
            problems.append(("path", f"component {name!r} is Kustomize but has no path; set path"))
        if ref.get("tag") and not ref.get("source"):
            problems.append(("source", f"component {name!r} is Kustomize with tag {ref['tag']!r} but no source"))
        if ref.get("manifestFiles"):
            problems.append(("manifestFiles", f"component {name!r} is Kustomize and also lists manifestFiles; "
                                              "use one or the other"))
    else:
        problems.append(("type", f"component {name!r} has unsupported type {kind!r}; use Helm or Kustomize"))
    return problems


def _check_files(catalog: Catalog, ref: Mapping[str, Any], origins: Origins) -> None:
    named = [("valuesFile", ref["valuesFile"])] if ref.get("valuesFile") else []
    named += [(key, rel) for key in ("manifestFiles", "preManifestFiles") for rel in ref.get(key, [])]
    for key, rel in named:
        where = origins.where(catalog, ref["name"], key)
        paths.check_relative(rel, where)
        if rel not in catalog.files:
            raise InvalidInputError(
                f"{where}: {rel!r} does not exist in the catalog ({catalog.describe()}); add the file or fix the path")
        if rel in catalog.escaping:
            raise InvalidInputError(
                f"{where}: {rel!r} is a symlink to {catalog.escaping[rel]}, outside the catalog; "
                "copy the file into the catalog")


def ordered(ref: Mapping[str, Any]) -> dict[str, Any]:
    """The ref with AICR's key order; ``type`` and ``source`` are always present."""
    return {key: ref.get(key, "") for key in KEY_ORDER if key in ref or key in ALWAYS}


def finish(catalog: Catalog, refs: list[dict[str, Any]], origins: Origins) -> list[dict[str, Any]]:
    """Registry defaults, hydrated health checks, file and coherence checks; keys in AICR's order."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for ref in refs:
        entry = catalog.registry.get(ref["name"])
        if entry is None:
            raise InvalidInputError(
                f"{origins.where(catalog, ref['name'])}: component {ref['name']!r} is not in the registry; "
                "add it to registry.yaml or fix the name")
        full = with_registry_defaults(ref, entry)
        if not full.get("healthCheckAsserts") and not full.get("healthCheckSkip"):
            full["healthCheckAsserts"] = catalog.checks[entry["healthCheck"]["assertFile"]]
        _check_files(catalog, full, origins)
        if is_enabled(full):
            problems.extend(f"{origins.where(catalog, full['name'], key)}: {problem}"
                            for key, problem in _coherence_problems(full))
        out.append(ordered(full))
    if problems:
        raise InvalidInputError("incoherent component ref(s): " + "; ".join(sorted(problems)))
    return out
