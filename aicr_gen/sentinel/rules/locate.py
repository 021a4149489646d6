"""Where the rule data sits in a values file: Helm values (umbrella or subchart), fault-quarantine's
ConfigMap or config.toml, or a ValidationConfiguration."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.rules.source import _get, _Source
from aicr_gen.yaml import FieldPath


@dataclass
class _Found:
    """Where the rule data sits in a values file (paths are None when absent)."""

    source: _Source
    rule_sets: FieldPath | None = None
    validation: FieldPath | None = None
    criteria: list[FieldPath] = field(default_factory=list)
    toml: bool = False
    fault_quarantine: FieldPath | None = None


def _locate(source: _Source) -> _Found:
    data = source.data
    if not isinstance(data, Mapping):
        raise InvalidInputError(f"{source.name}: the root is a {type(data).__name__}; NVSentinel values (a mapping) "
                                "are expected")
    found = _Found(source)
    kind = data.get("kind")
    if kind == "ConfigMap":
        text = _get(data, ("data", "config.toml"))
        if not isinstance(text, str):
            raise source.error(("data",), "a ConfigMap without data['config.toml']; give "
                               "fault-quarantine's ConfigMap or NVSentinel Helm values")
        return _locate_toml(text, source.name, "data['config.toml']: ")
    if kind == "ValidationConfiguration":
        for path in (("spec", "readinessCriteria"), ("spec", "newNodeValidation", "criteria")):
            if _get(data, path) is not None:
                found.criteria.append(path)
        return found
    for base in (("fault-quarantine",), ()):
        if _get(data, (*base, "ruleSets")) is not None:
            found.rule_sets = (*base, "ruleSets")
            found.fault_quarantine = base
        if _get(data, (*base, "validation", "ruleSets")) is not None:
            found.validation = (*base, "validation", "ruleSets")
            found.fault_quarantine = base
        if found.fault_quarantine is not None:
            break
    for config in (("lifecycle-manager", "config"), ("config",)):
        for tail in (("readinessCriteria",), ("newNodeValidation", "criteria")):
            if _get(data, (*config, *tail)) is not None:
                found.criteria.append((*config, *tail))
    return found


def _locate_toml(text: str, name: str, prefix: str) -> _Found:
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise InvalidInputError(f"{name}: {prefix}invalid TOML: {err}; fault-quarantine would not start") from None
    source = _Source(name, data, prefix=prefix)
    found = _Found(source, toml=True, fault_quarantine=())
    if "rule-sets" in data:
        found.rule_sets = ("rule-sets",)
    if _get(data, ("validation", "ruleSets")) is not None:
        found.validation = ("validation", "ruleSets")
    return found
