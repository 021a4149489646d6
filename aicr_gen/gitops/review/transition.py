"""CustomResourceDefinition transition rules, evaluated as the API server evaluates them on an update (pure: a CRD
and two versions of a custom resource in, the failed rules out).

A rule of ``x-kubernetes-validations`` that names ``oldSelf`` is a transition rule: on an update the API server
evaluates it wherever the schema node it sits on has a value both before and after (list items correlated only
under ``x-kubernetes-list-type: map`` by their keys, or ``set``; map values by key), with ``self`` the new value and
``oldSelf`` the old one, and refuses the update when it is false, with the rule's ``message`` (or ``failed rule:
<rule>``) at the field's path [Kubernetes docs: "Transition rules", tasks/extend-kubernetes/custom-resources/
custom-resource-definitions; apiextensions-apiserver pkg/apiserver/schema/cel]. Rules with ``optionalOldSelf`` are
evaluated only when both sides exist, like the others (the rule decides what a missing old value means then;
skipping it can only miss a refusal, never invent one). Evaluated with aicr_gen's CEL (cel-go's semantics).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from aicr_gen.cel import CelError, Environment, to_cel


def version_schema(crd: Mapping[str, Any], version: str) -> Mapping[str, Any] | None:
    """The openAPIV3Schema of ``version`` of ``crd`` (None when it does not serve it)."""
    for item in (crd.get("spec") or {}).get("versions") or []:
        if isinstance(item, Mapping) and item.get("name") == version:
            return ((item.get("schema") or {}).get("openAPIV3Schema")) or None
    return None


def _pairs(schema: Mapping[str, Any], old: Any, new: Any, path: str) -> Iterator[tuple[Mapping[str, Any], Any, Any,
                                                                                      str]]:
    """Every schema node with the old and new value at it, where both exist."""
    yield schema, old, new, path
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        for key, child in (schema.get("properties") or {}).items():
            if key in old and key in new and isinstance(child, Mapping):
                yield from _pairs(child, old[key], new[key], f"{path}.{key}")
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            for key in sorted(set(old) & set(new) - set(schema.get("properties") or {})):
                yield from _pairs(extra, old[key], new[key], f"{path}[{key}]")
    elif isinstance(old, list) and isinstance(new, list) and isinstance(schema.get("items"), Mapping):
        items = schema["items"]
        kind = schema.get("x-kubernetes-list-type")
        keys = schema.get("x-kubernetes-list-map-keys") or []
        if kind == "map" and keys:
            before = {tuple(item.get(key) for key in keys): item for item in old if isinstance(item, Mapping)}
            for index, item in enumerate(new):
                ident = tuple(item.get(key) for key in keys) if isinstance(item, Mapping) else None
                if ident in before:
                    yield from _pairs(items, before[ident], item, f"{path}[{index}]")
        elif kind == "set":
            for index, item in enumerate(new):
                if item in old:
                    yield from _pairs(items, item, item, f"{path}[{index}]")


def failed(crd: Mapping[str, Any], old: Mapping[str, Any], new: Mapping[str, Any]) -> list[tuple[str, str]]:
    """The transition rules of ``crd`` the update of ``old`` to ``new`` breaks: (field path, message)."""
    version = str(new.get("apiVersion", "")).rpartition("/")[2]
    schema = version_schema(crd, version)
    if schema is None:
        return []
    environment = Environment(("self", "oldSelf"), libraries=("strings", "kubernetes"))
    out: list[tuple[str, str]] = []
    for node, was, now, path in _pairs(schema, dict(old), dict(new), ""):
        for rule in node.get("x-kubernetes-validations") or []:
            text = str((rule or {}).get("rule", ""))
            if "oldSelf" not in text:
                continue
            try:
                result = environment.compile(text).evaluate({"self": to_cel(now), "oldSelf": to_cel(was)})
            except CelError as err:
                out.append((path.lstrip(".") or "(root)", f"rule {text!r} cannot be evaluated: {err}"))
                continue
            if result is not True:
                out.append((path.lstrip(".") or "(root)", str(rule.get("message") or f"failed rule: {text}")))
    return out
