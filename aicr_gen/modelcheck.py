"""Validate a loaded document against a pydantic model, reporting every problem as ``file:line: field.path:
problem``, at the offending key (a missing field: at the mapping that lacks it)."""

from __future__ import annotations

import types
import typing
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml import Document, FieldPath, shorten

M = TypeVar("M", bound=BaseModel)


class Strict(BaseModel):
    """The base of every model a file is checked against: a key the model does not name is an error, never
    dropped (``extra="forbid"``). A consumer with a further rule adds it as a class keyword, in one place:

    - ``frozen=True``: values compared and hashed whole, the mirror lock (``mirror/lock``) and the change
      records (``gitops/change_model``);
    - ``strict=True``: AICR's ``AICRConfig`` file (``commands/bundle_config``), typed as AICR's Go structs
      decode it, no string-to-number or number-to-string coercion.
    """

    model_config = ConfigDict(extra="forbid")


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


def _model_at(model: type[BaseModel], loc: FieldPath) -> type[BaseModel] | None:
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


def _data_path(loc: tuple[int | str, ...], data: Any) -> FieldPath:
    """The parts of a pydantic location that are in the data, plus a final missing field name;
    union-member tags (``ExcludedOverlay``, ``literal[...]``) are dropped."""
    path: list[str | int] = []
    node = data
    for part in loc:
        in_list = isinstance(node, list) and isinstance(part, int) and 0 <= part < len(node)
        if in_list or (isinstance(node, dict) and part in node):
            node = node[part]
        elif isinstance(node, dict) and isinstance(part, str) and not part[:1].isupper() and "[" not in part:
            path.append(part)
            break
        else:
            continue
        path.append(part)
    return tuple(path)


_OTHER_TYPE = ("_type", "_parsing")


def _explain(error: Any, model: type[BaseModel], path: FieldPath) -> tuple[str, str | None]:
    """What is wrong at ``path`` and the fix (None when the message says it)."""
    kind = error["type"]
    if kind == "extra_forbidden":
        owner = _model_at(model, path[:-1])
        allowed = sorted(owner.model_fields) if owner else []
        field = str(path[-1])
        import difflib  # here: only a refusal needs it

        close = difflib.get_close_matches(field, allowed, n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"allowed fields: {', '.join(allowed)}"
        return f"unknown field {field!r}", hint
    if kind == "missing":
        return "required field is missing", "add it"
    got = _short(error.get("input"))
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        return f"value {got} is not allowed", f"use one of {expected}"
    if kind in ("dict_type", "model_type"):
        return f"expected a mapping (key: value), got {got}", "write a mapping here"
    if kind == "value_error":  # a grammar of limits.py: its message says what to write
        return str(error["msg"]).removeprefix("Value error, "), None
    if kind == "too_long":
        limit = error.get("ctx", {}).get("max_length")
        what = {"List": "items", "Dictionary": "entries"}.get(error.get("ctx", {}).get("field_type"), "characters")
        count = error.get("ctx", {}).get("actual_length") or len(error.get("input") or ())
        return f"{count} {what}, over the limit of {limit}", f"give at most {limit}"
    if kind == "string_too_long":
        limit = error.get("ctx", {}).get("max_length")
        return f"{len(str(error.get('input')))} characters, over the limit of {limit}", f"give at most {limit}"
    bounds = error.get("ctx", {})
    if kind == "less_than_equal":
        return f"{got} is over the limit of {bounds.get('le')}", f"give at most {bounds.get('le')}"
    if kind == "greater_than_equal":
        return f"{got} is under the least allowed value {bounds.get('ge')}", f"give at least {bounds.get('ge')}"
    if kind == "string_pattern_mismatch":
        return f"value {got} does not match {error.get('ctx', {}).get('pattern')}", "use a value that does"
    fixes = {
        "list_type": "write a list (- item) here",
        "string_type": "write a string here (quote it)",
        "bool_type": "write true or false",
        "int_type": "write a whole number",
        "finite_number": "write a whole number",
        "int_from_float": "write a whole number",
        "string_too_short": "give a non-empty value",
    }
    return f"{error['msg']} (got {got})", fixes.get(kind, "fix the value")


def _short(value: Any) -> str:
    return shorten(repr(value))


class InvalidFieldsError(InvalidInputError):
    """Every schema problem of one document (``problems``), one ``file:line: field.path: problem; fix`` line each
    in the message, so ``sync`` shows them all and ``lint`` reports each at its own line."""


def check(doc: Document, model: type[M]) -> M:
    """Validate ``doc.data``; every problem (one per field path) becomes a line of one ``InvalidFieldsError``."""
    try:
        return model.model_validate(doc.data)
    except ValidationError as err:
        found: dict[FieldPath, Located] = {}
        # a value that fits no member of a union fails once per member: the reason of the member of its type (a
        # bound it breaks) is kept over "not a string" / "not a boolean", which only say it is another type
        for error in sorted(err.errors(), key=lambda error: str(error["type"]).endswith(_OTHER_TYPE)):
            path = _data_path(tuple(error["loc"]), doc.data)
            message, fix = _explain(error, model, path)
            found.setdefault(path, doc.located(path, message, fix))
        in_file_order = sorted(found, key=doc.line_of)
        raise InvalidFieldsError.at(*(found[path] for path in in_file_order)) from None
