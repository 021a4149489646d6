"""Finishing merged component refs: registry defaults, health-check hydration and coherence checks."""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial

from aicr_gen.catalog.load import Catalog
from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.merge import is_empty
from aicr_gen.resolve.origins import Origins
from aicr_gen.text import paths

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

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
        part = key if key == "valuesFile" else f"{key}:{rel}"
        normal = paths.normalise(rel, partial(origins.error, catalog, ref["name"], part))
        if normal not in catalog.files:
            raise origins.error(catalog, ref["name"], part, f"{rel!r} does not exist in the catalog "
                                f"({catalog.describe()}); add the file or fix the path")
        if normal in catalog.escaping:
            raise origins.error(catalog, ref["name"], part, f"{rel!r} is a symlink to {catalog.escaping[normal]}, "
                                "outside the catalog; copy the file into the catalog")


def ordered(ref: Mapping[str, Any]) -> dict[str, Any]:
    """The ref in AICR's key order without empty fields, except ``type`` and ``source`` (always written)."""
    return {key: ref.get(key) or "" if key in ALWAYS else ref[key] for key in KEY_ORDER
            if key in ALWAYS or not is_empty(ref.get(key))}


def finish(catalog: Catalog, refs: list[dict[str, Any]], origins: Origins) -> list[dict[str, Any]]:
    """Registry defaults, hydrated health checks, file and coherence checks; keys in AICR's order."""
    out: list[dict[str, Any]] = []
    problems: list[str] = []
    for ref in refs:
        entry = catalog.registry.get(ref["name"])
        if entry is None and not ref.get("type"):
            raise origins.error(catalog, ref["name"], "", f"component {ref['name']!r} is not in the registry and "
                                "sets no type; add it to registry.yaml or fix the name")
        # Like AICR, a component the registry does not know is kept as written (a site chart that
        # names its own type, source and version); the coherence checks judge it.
        full = dict(ref) if entry is None else with_registry_defaults(ref, entry)
        if entry is not None and not full.get("healthCheckAsserts") and not full.get("healthCheckSkip"):
            full["healthCheckAsserts"] = catalog.checks[entry["healthCheck"]["assertFile"]]
        _check_files(catalog, full, origins)
        if is_enabled(full):
            hint = "" if entry else "; it is not in the registry either: add it to registry.yaml or fix the name"
            problems.extend(f"{origins.where(catalog, full['name'], key)}: {problem}{hint}"
                            for key, problem in _coherence_problems(full))
        out.append(ordered(full))
    if problems:
        raise InvalidInputError("incoherent component ref(s): " + "; ".join(sorted(problems)))
    return out
