"""cel-go's type checker (``checker.Check``) over our AST: the same types deduced, the same names resolved and
the same verdicts, so an expression cel-go refuses at compile time is refused here with the message cel-go
lists first.

Overload resolution unifies type parameters as cel-go does: every overload whose parameters are generic gets
fresh type variables, an argument is assignable to a parameter when the substitutions so far allow it (dyn
and any are assignable both ways; null only to nullable types), and every matching overload is recorded, the
call's type being the first match's result or dyn when they disagree. Mixed list and map literals get
element type dyn (cel-go's default). Comprehension variables shadow declarations; a leading dot skips them.
Once the walk is done, unbound type variables become dyn.

With the ``strings`` library, a checked expression also goes through ext.Strings' validator of format calls
(a literal format string with a literal argument list must use each argument with a clause that takes its
type), which cel-go runs as part of compiling. cel-go goes on after an error and sorts its messages by place;
``check`` does the same and raises the first.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from functools import lru_cache
from typing import NamedTuple

from aicr_gen.cel import ast
from aicr_gen.cel.ast import Call, Comprehension, Constant, CreateList, CreateStruct, Expr, Ident, Select
from aicr_gen.cel.overloads import CROSS_TYPE_COMPARISONS, LIBRARIES, STANDARD, Overload
from aicr_gen.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    ERROR,
    INT,
    NULL,
    STRING,
    TIMESTAMP,
    TYPE,
    UINT,
    WELL_KNOWN,
    Type,
    exact,
    format_type,
    list_of,
    map_of,
    opaque,
    type_of,
    type_param,
)

_CONSTANT_TYPES = {"null": NULL, "bool": BOOL, "int": INT, "uint": UINT, "double": DOUBLE, "string": STRING,
                   "bytes": BYTES}

TYPE_IDENTIFIERS: dict[str, Type] = {
    t.name: type_of(t) for t in (BOOL, BYTES, DOUBLE, DURATION, INT, list_of(type_param("A")),
                                 map_of(type_param("A"), type_param("B")), NULL, STRING, TIMESTAMP, TYPE, UINT)}
"""The standard library's type names as values (``int`` is a ``type(int)``)."""

_MESSAGE_IDENTIFIERS = {name: type_of(t) for name, t in WELL_KNOWN.items() if name not in TYPE_IDENTIFIERS}
"""The well-known protobuf messages cel-go's registry knows, as type values."""
_ENUM_CONSTANTS = {"google.protobuf.NullValue.NULL_VALUE": 0}

_PB = "google.protobuf."
_MESSAGE_FIELDS: dict[str, dict[str, Type]] = {
    f"{_PB}Timestamp": {"seconds": INT, "nanos": INT},
    f"{_PB}Duration": {"seconds": INT, "nanos": INT},
    f"{_PB}Any": {"type_url": STRING, "value": BYTES},
    f"{_PB}Struct": {"fields": map_of(STRING, DYN)},
    f"{_PB}ListValue": {"values": list_of(DYN)},
    f"{_PB}Value": {"null_value": NULL, "number_value": DOUBLE, "string_value": STRING, "bool_value": BOOL,
                    "struct_value": map_of(STRING, DYN), "list_value": list_of(DYN)},
    **{name: {"value": Type(t.kind, t.name)} for name, t in WELL_KNOWN.items() if t.nullable},
}
"""The fields of the well-known messages, which are the only messages this checker knows."""
_WELL_KNOWN_NAMES = {"any": f"{_PB}Any", "bool": f"{_PB}BoolValue", "bytes": f"{_PB}BytesValue",
                     "double": f"{_PB}DoubleValue", "duration": f"{_PB}Duration", "dyn": f"{_PB}Value",
                     "int": f"{_PB}Int64Value", "list": f"{_PB}ListValue", "null_type": f"{_PB}NullValue",
                     "map": f"{_PB}Struct", "string": f"{_PB}StringValue", "timestamp": f"{_PB}Timestamp",
                     "uint": f"{_PB}UInt64Value"}


class Reference(NamedTuple):
    """What a name resolved to: for an identifier (or a select chain read as a dotted name) the declared
    name, qualified by the container and with a leading dot where a comprehension variable shadows it; for
    a call the function's declared name and the ids of every overload that matched. A call whose target is a
    namespace (``strings.quote(s)``) resolves to the full name and its target is not an operand (it has no
    entry in ``Checked.types``). ``value`` is the value of an enum constant."""

    name: str
    overload_ids: tuple[str, ...] = ()
    value: int | None = None


class Checked(NamedTuple):
    result_type: Type
    types: Mapping[int, Type]
    """The type of every node cel-go checks, by id (unbound type parameters are dyn)."""
    references: Mapping[int, Reference]


class CheckError(Exception):
    """The error cel-go lists first; ``offset`` is the code point offset of the node it names. ``errors``
    holds every (message, offset) in cel-go's order."""

    def __init__(self, errors: Sequence[tuple[str, int]]) -> None:
        self.message, self.offset = errors[0]
        super().__init__(self.message)
        self.errors = tuple(errors)


def check(expr: Expr, *, variables: Mapping[str, Type], libraries: Collection[str] = (), container: str = "",
          cross_type_numeric_comparisons: bool = False,
          functions: Mapping[str, Sequence[Overload]] | None = None) -> Checked:
    """Type-check ``expr`` as cel-go's checker does with these declarations; raise ``CheckError``.

    ``libraries``: ``"strings"`` (cel-go's ``ext.Strings()``) and ``"kubernetes"`` (quantities and ``now()``);
    the standard library is always declared. ``functions`` declares more functions (its overloads join a
    library function's of the same name)."""
    table = _functions(frozenset(libraries))
    if functions:
        table = dict(table)
        for name, overloads in functions.items():
            table[name] = (*table.get(name, ()), *overloads)
    disabled = frozenset() if cross_type_numeric_comparisons else CROSS_TYPE_COMPARISONS
    checker = _Checker(variables, table, container, disabled)
    checker.check(expr)
    if not checker.errors:
        mapping = checker.mapping
        types = {node: _substitute(mapping, t, True) for node, t in checker.types.items()}
        if "strings" in libraries:
            _validate_format_calls(expr, types, checker.references, checker.errors)
        if not checker.errors:
            return Checked(types[expr.id], types, checker.references)
    raise CheckError(sorted(checker.errors, key=lambda error: error[1]))


@lru_cache(maxsize=8)
def _functions(libraries: frozenset[str]) -> Mapping[str, tuple[Overload, ...]]:
    unknown = libraries - LIBRARIES.keys()
    if unknown:
        raise ValueError(f"unknown CEL libraries {sorted(unknown)}; known: {sorted(LIBRARIES)}")
    table = dict(STANDARD)
    for name in sorted(libraries):
        table.update(LIBRARIES[name])
    return table


class _Resolved(NamedTuple):
    name: str
    type: Type
    value: int | None
    shadowed: bool
    """A declaration named like a comprehension variable in scope, reached with a leading dot."""


class _Checker:
    def __init__(self, variables: Mapping[str, Type], functions: Mapping[str, tuple[Overload, ...]],
                 container: str, disabled: frozenset[str]) -> None:
        self.variables = variables
        self.functions = functions
        self.container = container
        self.disabled = disabled
        self.scopes: list[dict[str, Type]] = []
        self.types: dict[int, Type] = {}
        self.references: dict[int, Reference] = {}
        self.errors: list[tuple[str, int]] = []
        self.mapping: dict[str, Type] = {}
        self.fresh = 0

    # --- the walk

    def check(self, e: Expr) -> None:
        if isinstance(e, Constant):
            self.types[e.id] = _CONSTANT_TYPES[e.kind]
        elif isinstance(e, Ident):
            self._ident(e)
        elif isinstance(e, Select):
            self._select(e)
        elif isinstance(e, Call):
            self._call(e)
        elif isinstance(e, CreateList):
            self._list(e)
        elif isinstance(e, CreateStruct):
            if e.message_name:
                self._message(e)
            else:
                self._map(e)
        else:
            self._comprehension(e)

    def _ident(self, e: Ident) -> None:
        found = self._resolve_simple(e.name)
        if found is None:
            self.types[e.id] = ERROR
            self._undeclared(e, e.name)
            return
        name = found.name.removeprefix(".")
        self.types[e.id] = found.type
        self.references[e.id] = Reference("." + name if found.shadowed else name, value=found.value)

    def _select(self, e: Select) -> None:
        qualifiers = _qualifiers(e)
        if qualifiers is not None:
            found = self._resolve_qualified(qualifiers)
            if found is not None:
                self.types[e.id] = found.type
                name = "." + found.name if found.shadowed else found.name
                self.references[e.id] = Reference(name, value=found.value)
                return
        result = self._select_field(e, e.operand)
        self.types[e.id] = BOOL if e.test_only else _substitute(self.mapping, result, False)

    def _select_field(self, e: Select, operand: Expr) -> Type:
        self.check(operand)
        target = _substitute(self.mapping, self.types[operand.id], False)
        optional = target.kind == "opaque" and target.name == "optional_type"
        if optional:
            target = target.params[0]
        if target.kind == "map":
            result = target.params[1]
        elif target.kind == "struct":
            result = self._field_type(e, target.name, e.field) or ERROR
        elif target.kind == "type_param":
            self._assignable(DYN, target)
            result = DYN
        else:
            if target.kind not in ("dyn", "any", "error"):
                self._error(e, f"type '{format_type(target)}' does not support field selection")
            result = DYN
        return opaque("optional_type", result) if optional else result

    def _call(self, e: Call) -> None:
        for arg in e.args:
            self.check(arg)
        if e.target is None:
            found = self._lookup_function(e.function)
            if found is None:
                self._undeclared(e, e.function)
                self.types[e.id] = ERROR
                return
            self._resolve_overload(e, *found, None)
            return
        prefix = _qualified_name(e.target)
        if prefix is not None:
            found = self._lookup_function(f"{prefix}.{e.function}")
            if found is not None:
                self._resolve_overload(e, *found, None)
                return
        self.check(e.target)
        found = self._lookup_function(e.function)
        if found is None:
            self.types[e.id] = ERROR
            self._undeclared(e, e.function)
            return
        self._resolve_overload(e, *found, e.target)

    def _resolve_overload(self, e: Call, name: str, overloads: tuple[Overload, ...], target: Expr | None) -> None:
        operands = (target, *e.args) if target is not None else e.args
        arg_types = [self.types[operand.id] for operand in operands]
        result: Type | None = None
        matched: list[str] = []
        for candidate in overloads:
            if candidate.id in self.disabled or candidate.member != (target is not None):
                continue
            if name in (ast.LOGICAL_AND, ast.LOGICAL_OR):
                # cel-go checks each operand against bool and names the ones that are not
                failed = False
                for operand, arg_type in zip(operands, arg_types, strict=True):
                    if not self._assignable(arg_type, BOOL):
                        self._mismatch(operand, BOOL, arg_type)
                        failed = True
                if failed:
                    self.types[e.id] = ERROR
                    return
                matched, result = [candidate.id], BOOL
                break
            params, candidate_result = candidate.args, candidate.result
            if candidate.type_params:
                fresh = {param: self._fresh() for param in sorted(candidate.type_params)}
                params = tuple(_substitute(fresh, t, False) for t in params)
                candidate_result = _substitute(fresh, candidate_result, False)
            if len(params) != len(arg_types) or not self._assignable_all(arg_types, params):
                continue
            matched.append(candidate.id)
            candidate_result = _substitute(self.mapping, candidate_result, False)
            if result is None:
                result = candidate_result
            elif result.kind not in ("dyn", "any") and not exact(candidate_result, result):
                result = DYN
        if result is None:
            shown = [format_type(_substitute(self.mapping, t, True)) for t in arg_types]
            signature = f"{shown[0]}.({', '.join(shown[1:])})" if target is not None else f"({', '.join(shown)})"
            self._error(e, f"found no matching overload for '{name}' applied to '{signature}'")
            self.types[e.id] = ERROR
            return
        self.types[e.id] = result
        self.references[e.id] = Reference(name, tuple(matched))

    def _list(self, e: CreateList) -> None:
        elem: Type | None = None
        optional = set(e.optional_indices)
        for index, item in enumerate(e.elements):
            self.check(item)
            item_type = self.types[item.id]
            if index in optional:
                item_type = self._unwrap_optional(item, item_type)
            elem = self._join(elem, item_type)
        self.types[e.id] = list_of(elem if elem is not None else self._fresh())

    def _map(self, e: CreateStruct) -> None:
        key_type: Type | None = None
        value_type: Type | None = None
        for entry in e.entries:
            assert not isinstance(entry.key, str)
            self.check(entry.key)
            key_type = self._join(key_type, self.types[entry.key.id])
            self.check(entry.value)
            item_type = self.types[entry.value.id]
            if entry.optional_entry:
                item_type = self._unwrap_optional(entry.value, item_type)
            value_type = self._join(value_type, item_type)
        if key_type is None or value_type is None:
            key_type, value_type = self._fresh(), self._fresh()
        self.types[e.id] = map_of(key_type, value_type)

    def _message(self, e: CreateStruct) -> None:
        found = self._resolve_type_name(e.message_name)
        if found is None:
            self._undeclared(e, e.message_name)
            self.types[e.id] = ERROR
            return
        type_name, denoted = found
        self.references[e.id] = Reference(type_name)
        result = denoted.params[0]
        well_known = _WELL_KNOWN_NAMES.get(result.kind)
        if well_known and _is_well_known(result):
            type_name = well_known
        else:
            self._error(e, f"'{result.name}' is not a message type" if not result.nullable
                        else f"'wrapper({result.name})' is not a message type")
            result = ERROR
        self.types[e.id] = result
        for entry in e.entries:
            assert isinstance(entry.key, str)
            self.check(entry.value)
            field_type = self._field_type(entry, type_name, entry.key) or ERROR
            value_type = self.types[entry.value.id]
            if entry.optional_entry:
                value_type = self._unwrap_optional(entry.value, value_type)
            if not self._assignable(field_type, value_type):
                self._error(entry, f"expected type of field '{entry.key}' is '{format_type(field_type)}' but "
                                   f"provided type is '{format_type(value_type)}'")

    def _comprehension(self, e: Comprehension) -> None:
        self.check(e.iter_range)
        self.check(e.accu_init)
        range_type = _substitute(self.mapping, self.types[e.iter_range.id], False)
        accu_type = self.types[e.accu_init.id]
        self.scopes.append({e.accu_var: accu_type})
        var2: Type | None = None
        if range_type.kind == "list":
            var = range_type.params[0]
            if e.iter_var2:
                var, var2 = INT, var
        elif range_type.kind == "map":
            var = range_type.params[0]
            var2 = range_type.params[1]
        elif range_type.kind in ("dyn", "error", "type_param"):
            self._assignable(DYN, range_type)
            var = var2 = DYN
        else:
            self._error(e.iter_range, f"expression of type '{format_type(range_type)}' cannot be range of a "
                                      f"comprehension (must be list, map, or dynamic)")
            var = var2 = ERROR
        loop = {e.iter_var: var}
        if e.iter_var2 and var2 is not None:
            loop[e.iter_var2] = var2
        self.scopes.append(loop)
        self.check(e.loop_condition)
        self._assert(e.loop_condition, BOOL)
        self.check(e.loop_step)
        self._assert(e.loop_step, accu_type)
        self.scopes.pop()
        self.check(e.result)
        self.scopes.pop()
        self.types[e.id] = _substitute(self.mapping, self.types[e.result.id], False)

    # --- helpers of the walk

    def _join(self, previous: Type | None, current: Type) -> Type:
        if previous is None:
            return current
        if self._assignable(previous, current):
            return _most_general(previous, current)
        return DYN

    def _unwrap_optional(self, e: Expr, t: Type) -> Type:
        if t.kind == "opaque" and t.name == "optional_type":
            return t.params[0]
        if t.kind not in ("dyn", "any"):
            self._mismatch(e, opaque("optional_type", t), t)
        return t

    def _assert(self, e: Expr, t: Type) -> None:
        if not self._assignable(t, self.types[e.id]):
            self._mismatch(e, t, self.types[e.id])

    def _field_type(self, e: Select | ast.Entry, message: str, field: str) -> Type | None:
        fields = _MESSAGE_FIELDS.get(message)
        if fields is None:
            self._error(e, f"unexpected failed resolution of '{message}'")
            return None
        if field not in fields:
            self._error(e, f"undefined field '{field}'")
            return None
        return fields[field]

    def _fresh(self) -> Type:
        t = type_param(f"_var{self.fresh}")
        self.fresh += 1
        return t

    def _assignable(self, t1: Type, t2: Type) -> bool:
        trial = dict(self.mapping)
        if _is_assignable(trial, t1, t2):
            self.mapping = trial
            return True
        return False

    def _assignable_all(self, l1: Sequence[Type], l2: Sequence[Type]) -> bool:
        trial = dict(self.mapping)
        if all(_is_assignable(trial, a, b) for a, b in zip(l1, l2, strict=True)):
            self.mapping = trial
            return True
        return False

    def _error(self, e: Expr | ast.Entry, message: str) -> None:
        self.errors.append((message, e.offset))

    def _mismatch(self, e: Expr, expected: Type, actual: Type) -> None:
        self._error(e, f"expected type '{format_type(expected)}' but found '{format_type(actual)}'")

    def _undeclared(self, e: Expr, name: str) -> None:
        self._error(e, f"undeclared reference to '{name}' (in container '{self.container}')")

    # --- names

    def _candidates(self, name: str) -> Iterable[str]:
        if name.startswith("."):
            yield name[1:]
            return
        container = self.container
        while container:
            yield f"{container}.{name}"
            container = container.rpartition(".")[0]
        yield name

    def _local(self, name: str) -> Type | None:
        name = name.removeprefix(".")
        for scope in reversed(self.scopes):
            if name in scope:
                return scope[name]
        return None

    def _global(self, name: str) -> tuple[Type, int | None] | None:
        t = self.variables.get(name) or TYPE_IDENTIFIERS.get(name) or _MESSAGE_IDENTIFIERS.get(name)
        if t is not None:
            return t, None
        if name in _ENUM_CONSTANTS:
            return INT, _ENUM_CONSTANTS[name]
        return None

    def _resolve_simple(self, name: str) -> _Resolved | None:
        local = self._local(name)
        if local is not None and not name.startswith("."):
            return _Resolved(name, local, None, False)
        for candidate in self._candidates(name):
            found = self._global(candidate)
            if found is not None:
                return _Resolved(candidate, *found, local is not None)
        return None

    def _resolve_qualified(self, qualifiers: list[str]) -> _Resolved | None:
        if len(qualifiers) == 1:
            return self._resolve_simple(qualifiers[0])
        local = self._local(qualifiers[0])
        if local is not None and not qualifiers[0].startswith("."):
            return None  # a field of the comprehension variable
        for candidate in self._candidates(".".join(qualifiers)):
            found = self._global(candidate)
            if found is not None:
                return _Resolved(candidate, *found, local is not None)
        return None

    def _resolve_type_name(self, name: str) -> tuple[str, Type] | None:
        for candidate in self._candidates(name):
            t = (TYPE_IDENTIFIERS.get(candidate) if candidate not in ("list", "map")
                 else type_of(list_of(DYN) if candidate == "list" else map_of(DYN, DYN)))
            t = t or _MESSAGE_IDENTIFIERS.get(candidate)
            if t is not None:
                return candidate, t
        return None

    def _lookup_function(self, name: str) -> tuple[str, tuple[Overload, ...]] | None:
        for candidate in self._candidates(name):
            overloads = self.functions.get(candidate.removeprefix("."))
            if overloads is not None:
                return candidate, overloads
        return None


def _qualifiers(e: Select) -> list[str] | None:
    """``a.b.c`` as ``["a", "b", "c"]``; None when the chain does not start at an identifier or has a
    ``has()`` in it."""
    names: list[str] = []
    node: Expr = e
    while isinstance(node, Select):
        if node.test_only:
            return None
        names.append(node.field)
        node = node.operand
    if not isinstance(node, Ident):
        return None
    names.append(node.name)
    names.reverse()
    return names


def _qualified_name(e: Expr) -> str | None:
    if isinstance(e, Ident):
        return e.name
    if isinstance(e, Select) and not e.test_only:
        prefix = _qualified_name(e.operand)
        return None if prefix is None else f"{prefix}.{e.field}"
    return None


def _is_well_known(t: Type) -> bool:
    """cel-go's test for a type a message literal may name by its protobuf name."""
    if t.kind in ("any", "timestamp", "duration", "dyn", "null_type"):
        return True
    if t.kind in ("bool", "bytes", "double", "int", "string", "uint"):
        return t.nullable
    if t.kind == "list":
        return t.params[0] == DYN
    if t.kind == "map":
        return t.params[0] == STRING and t.params[1] == DYN
    return False


# --- cel-go's assignability and unification (checker/types.go), over a substitution of type parameters


def _is_dyn(t: Type) -> bool:
    return t.kind in ("dyn", "any")


def _less_specific(t1: Type, t2: Type) -> bool:
    """Whether ``t1`` is as or less specific than ``t2`` (dyn and type parameters being the least)."""
    if _is_dyn(t1) or t1.kind == "type_param":
        return True
    if _is_dyn(t2) or t2.kind == "type_param" or t1.kind != t2.kind:
        return False
    if t1.kind == "opaque":
        return (t1.name == t2.name and len(t1.params) == len(t2.params)
                and all(_less_specific(p, q) for p, q in zip(t1.params, t2.params, strict=True)))
    if t1.kind in ("list", "map"):
        return all(_less_specific(p, q) for p, q in zip(t1.params, t2.params, strict=True))
    if t1.kind == "type":
        return True
    return exact(t1, t2)


def _most_general(t1: Type, t2: Type) -> Type:
    return t1 if _less_specific(t1, t2) else t2


def _accepts(t: Type, other: Type) -> bool:
    """cel-go's ``Type.IsAssignableType``: whether a value of type ``other`` may stand where ``t`` is asked."""
    if t.nullable and other.kind == "null_type":
        return True
    if t is other or t.kind in ("dyn", "any", "type_param"):
        return True
    if t.kind != other.kind or t.name != other.name or len(t.params) != len(other.params):
        return False
    return all(_accepts(p, q) for p, q in zip(t.params, other.params, strict=True))


_LEGACY_NULLABLE = frozenset({"opaque", "struct", "any", "duration", "timestamp"})
_SCALAR_KINDS = frozenset({"bool", "bytes", "double", "int", "string", "uint", "any", "duration", "timestamp",
                           "struct"})


def _accepts_null(t: Type) -> bool:
    return t.kind in _LEGACY_NULLABLE or _accepts(t, NULL)


def _is_assignable(m: dict[str, Type], t1: Type, t2: Type) -> bool:
    """cel-go's ``internalIsAssignable``: whether ``t1`` is assignable to ``t2``, binding type parameters in
    ``m`` as needed (the caller throws ``m`` away on False)."""
    k1, k2 = t1.kind, t2.kind
    if k2 == "type_param":
        valid, has_substitution = _valid_substitution(m, t1, t2)
        if valid:
            return True
        if has_substitution:
            return False
    if k1 == "type_param":
        return _valid_substitution(m, t2, t1)[0]
    if k1 in ("dyn", "any", "error") or k2 in ("dyn", "any", "error"):
        return True
    if k1 == "null_type":
        return _accepts_null(t2)
    if k2 == "null_type":
        return _accepts_null(t1)
    if k1 in _SCALAR_KINDS:
        return _accepts(t2, t1)
    if k1 == "type":
        return k2 == "type"
    if k1 in ("opaque", "list", "map"):
        return (k1 == k2 and t1.name == t2.name and len(t1.params) == len(t2.params)
                and all(_is_assignable(m, p, q) for p, q in zip(t1.params, t2.params, strict=True)))
    return False


def _valid_substitution(m: dict[str, Type], t1: Type, t2: Type) -> tuple[bool, bool]:
    """Whether the type parameter ``t2`` (or what it is bound to) may stand for ``t1``, and whether it was
    bound already; binds or widens it in ``m``."""
    if t1.kind == t2.kind and exact(t1, t2):
        return True, True
    bound = m.get(t2.name)
    if bound is not None:
        if t1.kind == bound.kind and exact(t1, bound):
            return True, True
        if _is_assignable(m, t1, bound):
            widened = _most_general(t1, bound)
            if _not_referenced_in(m, t2, widened):
                m[t2.name] = widened
            return True, True
        return False, True
    if _not_referenced_in(m, t2, t1):
        m[t2.name] = t1
        return True, False
    return False, False


def _not_referenced_in(m: Mapping[str, Type], t: Type, within: Type) -> bool:
    """The occurs check: ``t`` appears nowhere in ``within``, following bindings."""
    if exact(t, within):
        return False
    if within.kind == "type_param":
        bound = m.get(within.name)
        return bound is None or _not_referenced_in(m, t, bound)
    return all(_not_referenced_in(m, t, p) for p in within.params)


def _substitute(m: Mapping[str, Type], t: Type, to_dyn: bool) -> Type:
    """``t`` with its bound type parameters replaced, the unbound ones too (by dyn) when ``to_dyn``."""
    if t.kind == "type_param":
        bound = m.get(t.name)
        if bound is not None:
            return _substitute(m, bound, to_dyn)
        return DYN if to_dyn else t
    if not t.params:
        return t
    params = tuple(_substitute(m, p, to_dyn) for p in t.params)
    return Type(t.kind, t.name, params) if params != t.params else t


# --- ext.Strings' validator of format calls (cel-go runs it on the checked expression, as part of compiling)

_FORMAT_KINDS = {
    "d": ("decimal clause can only be used on ints, uints, and doubles", ("int", "uint", "double")),
    "f": ("fixed-point clause can only be used on ints, uints, and doubles", ("int", "uint", "double")),
    "e": ("scientific clause can only be used on ints, uints, and doubles", ("int", "uint", "double")),
    "b": ("only ints, uints, and bools can be formatted as binary", ("bool", "int", "uint")),
    "x": ("only ints, uints, bytes, and strings can be formatted as hex", ("int", "uint", "string", "bytes")),
    "o": ("octal clause can only be used on ints and uints", ("int", "uint")),
    "s": ("string clause can only be used on strings, bools, bytes, ints, doubles, maps, lists, types, durations, "
          "and timestamps", ("list", "map", "int", "uint", "double", "bool", "string", "timestamp", "bytes",
                             "duration", "type", "null_type")),
}
_FORMAT_KINDS["X"] = _FORMAT_KINDS["x"]


def _validate_format_calls(expr: Expr, types: Mapping[int, Type], references: Mapping[int, Reference],
                           errors: list[tuple[str, int]]) -> None:
    """``'literal'.format([list literal])``: each clause of the string must be valid and name an argument of a
    type it can format, and every argument must be used."""
    pending = [expr]
    while pending:
        node = pending.pop()
        pending.extend(_children(node))
        if not (isinstance(node, Call) and node.function == "format" and isinstance(node.target, Constant)
                and node.target.kind == "string" and len(node.args) == 1 and isinstance(node.args[0], CreateList)
                and "string_format" in references.get(node.id, Reference("", ("string_format",))).overload_ids):
            continue
        assert isinstance(node.target.value, str)
        args = node.args[0].elements
        problem = _format_problem(node.target.value.encode(), args, types)
        if problem is None:
            continue
        message, at = problem
        errors.append((message, (at or node).offset))


def _format_problem(text: bytes, args: tuple[Expr, ...], types: Mapping[int, Type]) -> tuple[str, Expr | None] | None:
    """The first thing cel-go's format checker objects to, and the argument it names (None: the call)."""
    i = requested = 0
    while i < len(text):
        if text[i] != ord("%"):
            i += 1
            continue
        if text[i + 1:i + 2] == b"%":
            i += 2
            continue
        index = requested
        requested += 1
        if i + 1 >= len(text):
            return "unexpected end of string", None
        if index >= len(args):
            return f"index {index} out of range", None
        i += 1
        if text[i] == ord("."):
            start = i = i + 1
            while i < len(text) and 48 <= text[i] <= 57:  # ASCII digits
                i += 1
            if i >= len(text):
                return ("could not parse formatting clause: error while parsing precision: could not find end of "
                        "precision specifier"), None
            if i == start:
                return ('could not parse formatting clause: error while parsing precision: error while converting '
                        'precision to integer: strconv.Atoi: parsing "": invalid syntax'), None
        verb = chr(text[i])
        i += 1
        if verb not in _FORMAT_KINDS:
            return f'could not parse formatting clause: unrecognized formatting clause "{verb}"', None
        text_of_error, kinds = _FORMAT_KINDS[verb]
        bad = _unformattable(args[index], kinds, types, verb == "s")
        if bad is not None:
            return f"error during formatting: {text_of_error}, was given {types[bad.id].name}", bad
    if len(args) > requested:
        return f"too many arguments supplied to string.format (expected {requested}, got {len(args)})", None
    return None


def _unformattable(arg: Expr, kinds: tuple[str, ...], types: Mapping[int, Type], nested: bool) -> Expr | None:
    """The argument (or, for ``%s``, the element of a list or map literal) whose type the clause cannot take."""
    t = types[arg.id]
    if t.kind != "dyn" and t.kind not in kinds:
        return arg
    if nested and isinstance(arg, CreateList):
        for item in arg.elements:
            bad = _unformattable(item, kinds, types, True)
            if bad is not None:
                return bad
    if nested and isinstance(arg, CreateStruct) and not arg.message_name:
        for entry in arg.entries:
            assert not isinstance(entry.key, str)
            bad = _unformattable(entry.key, kinds, types, True) or _unformattable(entry.value, kinds, types, True)
            if bad is not None:
                return bad
    return None


def _children(node: Expr) -> list[Expr]:
    if isinstance(node, Select):
        return [node.operand]
    if isinstance(node, Call):
        return [*node.args, *([node.target] if node.target is not None else [])]
    if isinstance(node, CreateList):
        return list(node.elements)
    if isinstance(node, CreateStruct):
        return [part for entry in node.entries
                for part in (entry.value, *(() if isinstance(entry.key, str) else (entry.key,)))]
    if isinstance(node, Comprehension):
        return [node.iter_range, node.accu_init, node.loop_condition, node.loop_step, node.result]
    return []
