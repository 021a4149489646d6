"""Checks the report parsers share: errors that name the file and the line (text and YAML) or the key path
(JSON), strict JSON, numbers bounded to what hardware can measure, and input text made safe to print.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml import FieldPath, format_path, shorten

MAX_VALUE = 1e15


def input_error(where: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: {message}")


def printable(text: str, limit: int = 500) -> str:
    """Control characters escaped and length bounded, so a hostile log cannot drive the terminal."""
    cleaned = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}"
                      for ch in text)
    return shorten(cleaned, limit)


def json_loads(text: str, where: str) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as err:
        message = f"invalid JSON: {err.msg} (column {err.colno})"
        raise InvalidInputError.at(Located(where, err.lineno, message, column=err.colno)) from None
    except (ValueError, RecursionError) as err:
        detail = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise input_error(where, f"invalid JSON: {shorten(detail, 120)}") from None


class JsonReader:
    """Typed access into parsed JSON with key-path messages: ``file: results[3].in_place.bus_bw: ...``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: FieldPath, message: str) -> InvalidInputError:
        return input_error(f"{self.source}: {format_path(path)}", message)

    def get(self, obj: Mapping[str, Any], path: FieldPath, key: str, kind: type | tuple[type, ...],
            required: bool = True) -> Any:
        if key not in obj or obj[key] is None:
            if required:
                raise self.fail((*path, key), "missing")
            return None
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
            raise self.fail((*path, key), f"expected {_kind_name(kind)}, found {type(value).__name__}")
        return value

    def number(self, obj: Mapping[str, Any], path: FieldPath, key: str, limit: float = MAX_VALUE) -> float:
        value = self.get(obj, path, key, (int, float))
        return bounded(float(value), limit, lambda msg: self.fail((*path, key), msg))


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", int: "an integer", float: "a number",
             bool: "true or false"}
    kinds = [k for k in _types(kind) if not (k is int and float in _types(kind))]
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def bounded(value: float, limit: float, fail: Callable[[str], InvalidInputError]) -> float:
    if not math.isfinite(value) or value < 0 or value > limit:
        raise fail(f"{value!r} is out of range (0 to {limit:g}); the file is corrupt")
    return value
