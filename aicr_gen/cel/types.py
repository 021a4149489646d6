"""CEL's static types as the checker sees them (cel-go's ``common/types.Type``): a kind, a runtime name and
type parameters, plus ``nullable`` for the protobuf wrapper types (``google.protobuf.Int64Value`` is an int
that also accepts null).

``format_type`` spells a type the way cel-go's checker messages do: ``list(int)``, ``map(string, dyn)``,
``type(int)``, ``timestamp``, ``null``, ``wrapper(int)``, ``!error!``, a type parameter by its name.
``parse_type`` reads that spelling back (and the runtime names, such as ``google.protobuf.Timestamp``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

Kind = Literal["any", "bool", "bytes", "double", "duration", "dyn", "error", "int", "list", "map", "null_type",
               "opaque", "string", "struct", "timestamp", "type", "type_param", "uint"]


@dataclass(frozen=True, slots=True)
class Type:
    kind: Kind
    name: str
    """The runtime type name (``int``, ``list``, ``google.protobuf.Timestamp``, ``kubernetes.Quantity``), or a
    type parameter's name."""
    params: tuple[Type, ...] = ()
    nullable: bool = False
    """A wrapper type: assignable from null as well (``google.protobuf.Int64Value`` and friends)."""

    def __str__(self) -> str:
        return format_type(self)


INT = Type("int", "int")
UINT = Type("uint", "uint")
DOUBLE = Type("double", "double")
BOOL = Type("bool", "bool")
STRING = Type("string", "string")
BYTES = Type("bytes", "bytes")
NULL = Type("null_type", "null_type")
DYN = Type("dyn", "dyn")
ANY = Type("any", "google.protobuf.Any")
TIMESTAMP = Type("timestamp", "google.protobuf.Timestamp")
DURATION = Type("duration", "google.protobuf.Duration")
ERROR = Type("error", "error")
TYPE = Type("type", "type")
"""``type`` without a parameter: the type of ``type`` itself."""
QUANTITY = Type("opaque", "kubernetes.Quantity")
"""The Kubernetes quantity library's value type."""


def list_of(elem: Type) -> Type:
    return Type("list", "list", (elem,))


def map_of(key: Type, value: Type) -> Type:
    return Type("map", "map", (key, value))


def type_of(t: Type) -> Type:
    """``type(t)``: the type of the value that names ``t`` (the identifier ``int`` is a ``type(int)``)."""
    return Type("type", "type", (t,))


def type_param(name: str) -> Type:
    return Type("type_param", name)


def opaque(name: str, *params: Type) -> Type:
    """An abstract type such as ``kubernetes.Quantity`` or ``optional_type(int)``."""
    return Type("opaque", name, params)


def optional_of(t: Type) -> Type:
    return opaque("optional_type", t)


def nullable(t: Type) -> Type:
    """The wrapper type of a primitive: ``nullable(INT)`` is ``google.protobuf.Int64Value``."""
    return Type(t.kind, t.name, t.params, True)


def message(name: str) -> Type:
    """A protobuf message type; the well-known ones are CEL types of their own (``google.protobuf.Struct`` is
    ``map(string, dyn)``)."""
    return WELL_KNOWN.get(name) or Type("struct", name)


_PB = "google.protobuf."
WELL_KNOWN: dict[str, Type] = {
    f"{_PB}BoolValue": nullable(BOOL), f"{_PB}BytesValue": nullable(BYTES), f"{_PB}DoubleValue": nullable(DOUBLE),
    f"{_PB}FloatValue": nullable(DOUBLE), f"{_PB}Int64Value": nullable(INT), f"{_PB}Int32Value": nullable(INT),
    f"{_PB}UInt64Value": nullable(UINT), f"{_PB}UInt32Value": nullable(UINT),
    f"{_PB}StringValue": nullable(STRING), f"{_PB}Any": ANY, f"{_PB}Duration": DURATION,
    f"{_PB}Timestamp": TIMESTAMP, f"{_PB}ListValue": list_of(DYN), f"{_PB}NullValue": NULL,
    f"{_PB}Struct": map_of(STRING, DYN), f"{_PB}Value": DYN,
}
"""Well-known protobuf messages and the CEL types they stand for (cel-go's ``checkedWellKnowns``)."""

_SHORT = {"any": "any", "duration": "duration", "error": "!error!", "null_type": "null", "timestamp": "timestamp"}


def format_type(t: Type) -> str:
    """cel-go's ``FormatCELType``: the spelling of checker messages."""
    short = _SHORT.get(t.kind)
    if short is not None:
        return short
    if t.kind == "type_param":
        return t.name
    if not t.params:
        return f"wrapper({t.name})" if t.nullable else t.name
    return f"{t.name}({', '.join(format_type(p) for p in t.params)})"


def exact(a: Type, b: Type) -> bool:
    """cel-go's ``IsExactType``: same kind, name and parameters (a wrapper type is exactly its primitive)."""
    if a is b:
        return True
    if a.kind != b.kind or a.name != b.name or len(a.params) != len(b.params):
        return False
    return all(exact(p, q) for p, q in zip(a.params, b.params, strict=True))


_NAMED: dict[str, Type] = {
    t.name: t for t in (INT, UINT, DOUBLE, BOOL, STRING, BYTES, NULL, DYN, TIMESTAMP, DURATION, TYPE, QUANTITY)}
_NAMED.update({"null": NULL, "any": ANY, "timestamp": TIMESTAMP, "duration": DURATION, "!error!": ERROR,
               "error": ERROR, **WELL_KNOWN})


def parse_type(text: str, type_params: frozenset[str] = frozenset()) -> Type:
    """A type from its spelling (``format_type``'s, the runtime names, ``message NAME`` for a message); a bare
    name in ``type_params`` is a type parameter, any other unknown name with parameters an opaque type."""
    parsed, rest = _parse_type(text.strip(), type_params)
    if rest.strip():
        raise ValueError(f"unexpected {rest!r} after a type in {text!r}")
    return parsed


def _parse_type(text: str, type_params: frozenset[str]) -> tuple[Type, str]:
    if text.startswith("message "):
        text = text[len("message "):].lstrip()
        end = _name_end(text)
        return message(text[:end]), text[end:]
    end = _name_end(text)
    name, rest = text[:end], text[end:].lstrip()
    if not name:
        raise ValueError(f"expected a type name at {text!r}")
    params: list[Type] = []
    parenthesised = rest.startswith("(")
    if parenthesised:
        rest = rest[1:].lstrip()
        while not rest.startswith(")"):
            param, rest = _parse_type(rest, type_params)
            params.append(param)
            rest = rest.lstrip()
            if rest.startswith(","):
                rest = rest[1:].lstrip()
            elif not rest.startswith(")"):
                raise ValueError(f"expected ',' or ')' at {rest!r}")
        rest = rest[1:]
    if parenthesised and not params:
        return opaque(name), rest
    return _named(name, tuple(params), type_params), rest


def _name_end(text: str) -> int:
    end = 0
    while end < len(text) and (text[end].isalnum() or text[end] in "._!"):
        end += 1
    return end


def _named(name: str, params: tuple[Type, ...], type_params: frozenset[str]) -> Type:
    if name == "list" and len(params) == 1:
        return list_of(params[0])
    if name == "map" and len(params) == 2:
        return map_of(*params)
    if name == "type" and len(params) == 1:
        return type_of(params[0])
    if name == "wrapper" and len(params) == 1:
        return nullable(params[0])
    if not params:
        if name in type_params:
            return type_param(name)
        if name in _NAMED:
            return _NAMED[name]
        if name == "list":
            return list_of(DYN)
        if name == "map":
            return map_of(DYN, DYN)
        return Type("struct", name)
    return opaque(name, *params)
