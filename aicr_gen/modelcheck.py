"""Validate a loaded document against a pydantic model, reporting ``file:line: field.path: problem``."""

from __future__ import annotations

import difflib
import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from aicr_gen.errors import InvalidInputError
from aicr_gen.yamlio import Document, Path, format_path

M = TypeVar("M", bound=BaseModel)


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType, list, dict, tuple):
        found: list[type[BaseModel]] = []
        for arg in typing.get_args(annotation):
            found.extend(_models_in(arg))
        return found
    return []


def _model_at(model: type[BaseModel], loc: Path) -> type[BaseModel] | None:
    """The model whose fields apply at ``loc`` (list indexes and union tags are skipped)."""
    current: type[BaseModel] | None = model
    for part in loc:
        if current is None or isinstance(part, int):
            continue
        info = current.model_fields.get(part)
        if info is None:
            continue
        candidates = _models_in(info.annotation)
        current = candidates[0] if candidates else None
    return current


def _data_path(loc: tuple[int | str, ...], model: type[BaseModel]) -> Path:
    """Drop pydantic's union-member tags (class names, ``literal[...]``) from a location."""
    names = {cls.__name__ for cls in _all_models(model)}
    return tuple(part for part in loc if isinstance(part, int) or (part not in names and "[" not in part))


def _all_models(model: type[BaseModel]) -> set[type[BaseModel]]:
    seen: set[type[BaseModel]] = set()
    todo = [model]
    while todo:
        cls = todo.pop()
        if cls in seen:
            continue
        seen.add(cls)
        for info in cls.model_fields.values():
            todo.extend(_models_in(info.annotation))
    return seen


def _explain(error: Any, model: type[BaseModel], path: Path) -> str:
    kind = error["type"]
    if kind == "extra_forbidden":
        owner = _model_at(model, path[:-1])
        allowed = sorted(owner.model_fields) if owner else []
        field = str(path[-1])
        close = difflib.get_close_matches(field, allowed, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"allowed fields: {', '.join(allowed)}"
        return f"unknown field {field!r}; {hint}"
    if kind == "missing":
        return "required field is missing; add it"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"value {error.get('input')!r} is not allowed; use one of {expected}"
    return f"{error['msg']} (got {error.get('input')!r})"


def check(doc: Document, model: type[M]) -> M:
    """Validate ``doc.data``; the first problem becomes one clear error naming file and line."""
    try:
        return model.model_validate(doc.data)
    except ValidationError as err:
        errors = err.errors()
        first = errors[0]
        path = _data_path(tuple(first["loc"]), model)
        more = f" (and {len(errors) - 1} more problem(s))" if len(errors) > 1 else ""
        raise InvalidInputError(
            f"{doc.source}:{doc.line_of(path)}: {format_path(path)}: {_explain(first, model, path)}{more}"
        ) from None


def check_kind(doc: Document, kinds: dict[str, tuple[str, ...]]) -> str:
    """Check ``kind``/``apiVersion`` against ``{kind: apiVersions}``; returns the kind."""
    kind = doc.data.get("kind")
    if kind not in kinds:
        raise InvalidInputError(
            f"{doc.where(('kind',))}: unknown kind {kind!r}; expected {' or '.join(sorted(kinds))}")
    api = doc.data.get("apiVersion")
    if api not in kinds[kind]:
        raise InvalidInputError(
            f"{doc.where(('apiVersion',))}: unknown apiVersion {api!r} for {kind}; "
            f"use {' or '.join(kinds[kind])}")
    return str(kind)
