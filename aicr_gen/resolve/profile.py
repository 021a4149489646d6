"""Configuration profiles (AICR ``aicr.run/v1alpha3``): named alternatives that only set overrides.

When the resolved composition declares a profile, its default value applies unless another is
selected; the recipe then becomes v1alpha3 and records ``metadata.selectedProfile`` with the value
paths the profile owns.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.merge import deep_merge
from aicr_gen.resolve.refs import is_enabled

_TOKEN = re.compile(r"^[A-Za-z0-9._-]+\Z")


def parse_selection(text: str | None) -> tuple[str, str] | None:
    """``--profile name=value``; empty means the declaration's default."""
    if not text:
        return None
    name, sep, value = text.partition("=")
    if not sep or "=" in value or text != text.strip():
        raise InvalidInputError(f"--profile {text!r}: use the exact name=value form, e.g. gpuStack=operator-managed")
    if not _TOKEN.match(name) or not _TOKEN.match(value):
        raise InvalidInputError(f"--profile {text!r}: name and value must match [A-Za-z0-9._-]+")
    return name, value


def _leaf_paths(overrides: Mapping[str, Any], prefix: str = "") -> list[str]:
    paths: list[str] = []
    for key, value in overrides.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping) and value:
            paths.extend(_leaf_paths(value, f"{path}."))
        else:
            paths.append(path)
    return paths


def _check_overrides(overrides: Mapping[str, Any], where: str) -> None:
    for key, value in overrides.items():
        if not key or "." in key:
            raise InvalidInputError(f"{where}: override key {key!r} must be non-empty and without '.'; nest it")
        if isinstance(value, Mapping):
            if not value:
                raise InvalidInputError(f"{where}: override {key!r} is an empty map; set a value or drop it")
            _check_overrides(value, where)


def owned_paths(declaration: Mapping[str, Any], where: str) -> dict[str, list[str]]:
    """Per component, the value paths any profile value sets (plus ``enabled``), after checking AICR's
    contract: the default is a declared value, value names differ beyond case, refs are unique, no value
    sets ``enabled``, override keys are plain, and every value sets the same paths (union totality)."""
    name = declaration["name"]
    values: Mapping[str, Any] = declaration["values"]
    if declaration["default"] not in values:
        raise InvalidInputError(
            f"{where}: default {declaration['default']!r} is not a value of profile {name!r}; "
            f"use one of {', '.join(sorted(values))}")
    if len({value.lower() for value in values}) != len(values):
        raise InvalidInputError(f"{where}: profile {name!r} has values that differ only in case; rename one")
    assigned: dict[str, list[str]] = {}
    for value_name, value in values.items():
        here = f"{where}: values.{value_name}"
        refs = [ref["name"] for ref in value.get("componentRefs", [])]
        if len(set(refs)) != len(refs):
            raise InvalidInputError(f"{here}: a component is listed twice; merge its overrides into one entry")
        paths: list[str] = []
        for ref in value.get("componentRefs", []):
            overrides = ref.get("overrides", {})
            if "enabled" in overrides:
                raise InvalidInputError(
                    f"{here}: component {ref['name']!r} may not set overrides.enabled in a profile; "
                    "enable or disable it in the overlay")
            _check_overrides(overrides, here)
            paths.extend(f"{ref['name']}:{path}" for path in _leaf_paths(overrides))
        assigned[value_name] = sorted(paths)
    expected = next(iter(assigned.values()))
    for value_name, paths in assigned.items():
        if paths != expected:
            raise InvalidInputError(
                f"{where}: values.{value_name}: every value of profile {name!r} must set the same paths; "
                f"it sets {paths}, others set {expected}")
    owned: dict[str, set[str]] = {}
    for entry in expected:
        component, path = entry.split(":", 1)
        owned.setdefault(component, {"enabled"}).add(path)
    return {component: sorted(owned[component]) for component in sorted(owned)}


def apply(declaration: Mapping[str, Any], where: str, selection: tuple[str, str] | None,
          refs: list[dict[str, Any]], constraints: list[dict[str, Any]],
          ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """Apply the selected (or default) value; returns refs, constraints and ``selectedProfile``."""
    name = declaration["name"]
    owned = owned_paths(declaration, where)
    chosen = declaration["default"]
    if selection is not None:
        if selection[0] != name:
            raise InvalidInputError(f"--profile: the recipe declares profile {name!r}, not {selection[0]!r}")
        chosen = selection[1]
    if chosen not in declaration["values"]:
        raise InvalidInputError(
            f"--profile: profile {name!r} has no value {chosen!r}; "
            f"use one of {', '.join(sorted(declaration['values']))}")
    value = declaration["values"][chosen]
    by_name = {ref["name"]: ref for ref in refs}
    for component in owned:
        if component not in by_name or not is_enabled(by_name[component]):
            raise InvalidInputError(
                f"{where}: spec.profile: profile {name!r} sets values of component {component!r}, which is not "
                "enabled in this recipe")
    taken = {item["name"] for item in constraints}
    for item in value.get("constraints", []):
        if item["name"] in taken:
            raise InvalidInputError(
                f"{where}: spec.profile.values.{chosen}: constraint {item['name']!r} is already set by the recipe")
    overrides = {ref["name"]: ref.get("overrides", {}) for ref in value.get("componentRefs", [])}
    new_refs = [({**ref, "overrides": deep_merge(ref.get("overrides", {}), overrides[ref["name"]])}
                 if ref["name"] in overrides else ref) for ref in refs]
    new_constraints = sorted([*constraints, *value.get("constraints", [])], key=lambda item: item["name"])
    selected: dict[str, Any] = {"name": name, "value": chosen}
    if value.get("advertiser"):
        selected["advertiser"] = value["advertiser"]
    selected["ownedPaths"] = owned
    return new_refs, new_constraints, selected
