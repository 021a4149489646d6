"""Finishing merged component refs: registry defaults, health-check hydration and coherence checks."""

from __future__ import annotations

from collections.abc import Mapping
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


def _coherence_problems(ref: Mapping[str, Any]) -> list[str]:
    name, kind = ref["name"], ref.get("type")
    problems: list[str] = []
    if ref.get("patches"):
        problems.append(f"component {name!r} declares patches, which no deployer applies; remove patches")
    if kind == "Helm":
        if ref.get("tag") or ref.get("path"):
            problems.append(f"component {name!r} is Helm but sets the Kustomize field(s) tag/path; remove them")
        for key in ("chart", "source", "version"):
            value = ref.get(key) or ""
            if value != value.strip():
                problems.append(f"component {name!r} has {key} {value!r} with surrounding whitespace; trim it")
        version = (ref.get("version") or "").strip()
        if version and not version.removeprefix("v"):
            problems.append(f"component {name!r} has chart version {version!r}; pin a full chart version")
        if ref.get("source") and not version:
            problems.append(f"component {name!r} has no chart version; pin helm.defaultVersion in the registry")
        if ref.get("chart") and not ref.get("source"):
            problems.append(f"component {name!r} names chart {ref['chart']!r} but no source repository; set source")
        if not ref.get("source") and not ref.get("chart") and not ref.get("manifestFiles"):
            problems.append(f"component {name!r} has nothing to deploy (no source, chart or manifestFiles)")
    elif kind == "Kustomize":
        if not ref.get("path"):
            problems.append(f"component {name!r} is Kustomize but has no path; set path")
        if ref.get("tag") and not ref.get("source"):
            problems.append(f"component {name!r} is Kustomize with tag {ref['tag']!r} but no source; set source")
        if ref.get("manifestFiles"):
            problems.append(f"component {name!r} is Kustomize and also lists manifestFiles; use one or the other")
    else:
        problems.append(f"component {name!r} has unsupported type {kind!r}; use Helm or Kustomize")
    return problems


def _check_files(catalog: Catalog, ref: Mapping[str, Any], where: str) -> None:
    named = [("valuesFile", ref["valuesFile"])] if ref.get("valuesFile") else []
    named += [(key, rel) for key in ("manifestFiles", "preManifestFiles") for rel in ref.get(key, [])]
    for key, rel in named:
        paths.check_relative(rel, f"{where}.{key}")
        if rel not in catalog.files:
            raise InvalidInputError(
                f"{where}.{key}: {rel!r} does not exist in the catalog ({catalog.describe()}); "
                "add the file or fix the path")
        if rel in catalog.escaping:
            raise InvalidInputError(
                f"{where}.{key}: {rel!r} is a symlink to {catalog.escaping[rel]}, outside the catalog; "
                "copy the file into the catalog")


def ordered(ref: Mapping[str, Any]) -> dict[str, Any]:
    """The ref with AICR's key order; ``type`` and ``source`` are always present."""
    return {key: ref.get(key, "") for key in KEY_ORDER if key in ref or key in ALWAYS}


def finish(catalog: Catalog, refs: list[dict[str, Any]], origin: Mapping[str, str]) -> list[dict[str, Any]]:
    """Registry defaults, hydrated health checks, file and coherence checks; keys in AICR's order."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for ref in refs:
        where = f"{catalog.sources.get(origin.get(ref['name'], ''), 'recipe')}: componentRefs[{ref['name']}]"
        entry = catalog.registry.get(ref["name"])
        if entry is None:
            raise InvalidInputError(
                f"{where}: component {ref['name']!r} is not in the registry; add it to registry.yaml or fix the name")
        full = with_registry_defaults(ref, entry)
        if not full.get("healthCheckAsserts") and not full.get("healthCheckSkip"):
            full["healthCheckAsserts"] = catalog.checks[entry["healthCheck"]["assertFile"]]
        _check_files(catalog, full, where)
        if is_enabled(full):
            problems.extend(_coherence_problems(full))
        out.append(ordered(full))
    if problems:
        raise InvalidInputError("recipe has incoherent component ref(s): " + "; ".join(sorted(problems)))
    return out
