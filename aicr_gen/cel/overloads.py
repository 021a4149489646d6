"""The functions cel-go declares to its checker: the standard library (``common/stdlib``), ``ext.Strings`` at
its latest version in v0.27.0, and our ``kubernetes`` library (the Kubernetes quantity functions and
``now()``). Overload ids and signatures are cel-go's (and Kubernetes'), in declaration order: the order decides
which overload's result type a call takes when several match.
"""

from __future__ import annotations

from typing import NamedTuple

from aicr_gen.cel.types import (
    BOOL,
    BYTES,
    DOUBLE,
    DURATION,
    DYN,
    INT,
    QUANTITY,
    STRING,
    TIMESTAMP,
    UINT,
    Type,
    list_of,
    map_of,
    type_of,
    type_param,
)


class Overload(NamedTuple):
    id: str
    args: tuple[Type, ...]
    """The argument types, the receiver first for a member overload."""
    result: Type
    member: bool = False
    type_params: frozenset[str] = frozenset()
    """The names of the type parameters the signature mentions (cel-go instantiates them afresh per call)."""


def overload(overload_id: str, result: Type, *args: Type, member: bool = False) -> Overload:
    """An overload declaration; its type parameters are found in its signature."""
    names: set[str] = set()
    pending = [result, *args]
    while pending:
        t = pending.pop()
        if t.kind == "type_param":
            names.add(t.name)
        pending.extend(t.params)
    return Overload(overload_id, args, result, member, frozenset(names))


def _g(overload_id: str, result: Type, *args: Type) -> Overload:
    return overload(overload_id, result, *args)


def _m(overload_id: str, result: Type, *args: Type) -> Overload:
    return overload(overload_id, result, *args, member=True)


_A = type_param("A")
_B = type_param("B")
_LIST_A = list_of(_A)
_MAP_AB = map_of(_A, _B)

STANDARD: dict[str, tuple[Overload, ...]] = {
    "_?_:_": (_g("conditional", _A, BOOL, _A, _A),),
    "_&&_": (_g("logical_and", BOOL, BOOL, BOOL),),
    "_||_": (_g("logical_or", BOOL, BOOL, BOOL),),
    "!_": (_g("logical_not", BOOL, BOOL),),
    "@not_strictly_false": (_g("not_strictly_false", BOOL, BOOL),),
    "_==_": (_g("equals", BOOL, _A, _A),),
    "_!=_": (_g("not_equals", BOOL, _A, _A),),
    "_+_": (_g("add_bytes", BYTES, BYTES, BYTES), _g("add_double", DOUBLE, DOUBLE, DOUBLE),
        _g("add_duration_duration", DURATION, DURATION, DURATION),
        _g("add_duration_timestamp", TIMESTAMP, DURATION, TIMESTAMP),
        _g("add_timestamp_duration", TIMESTAMP, TIMESTAMP, DURATION), _g("add_int64", INT, INT, INT),
        _g("add_list", _LIST_A, _LIST_A, _LIST_A), _g("add_string", STRING, STRING, STRING),
        _g("add_uint64", UINT, UINT, UINT),),
    "_/_": (_g("divide_double", DOUBLE, DOUBLE, DOUBLE), _g("divide_int64", INT, INT, INT),
        _g("divide_uint64", UINT, UINT, UINT),),
    "_%_": (_g("modulo_int64", INT, INT, INT), _g("modulo_uint64", UINT, UINT, UINT),),
    "_*_": (_g("multiply_double", DOUBLE, DOUBLE, DOUBLE), _g("multiply_int64", INT, INT, INT),
        _g("multiply_uint64", UINT, UINT, UINT),),
    "-_": (_g("negate_double", DOUBLE, DOUBLE), _g("negate_int64", INT, INT),),
    "_-_": (_g("subtract_double", DOUBLE, DOUBLE, DOUBLE),
        _g("subtract_duration_duration", DURATION, DURATION, DURATION), _g("subtract_int64", INT, INT, INT),
        _g("subtract_timestamp_duration", TIMESTAMP, TIMESTAMP, DURATION),
        _g("subtract_timestamp_timestamp", DURATION, TIMESTAMP, TIMESTAMP), _g("subtract_uint64", UINT, UINT, UINT),),
    "_<_": (_g("less_bool", BOOL, BOOL, BOOL), _g("less_int64", BOOL, INT, INT),
        _g("less_int64_double", BOOL, INT, DOUBLE), _g("less_int64_uint64", BOOL, INT, UINT),
        _g("less_uint64", BOOL, UINT, UINT), _g("less_uint64_double", BOOL, UINT, DOUBLE),
        _g("less_uint64_int64", BOOL, UINT, INT), _g("less_double", BOOL, DOUBLE, DOUBLE),
        _g("less_double_int64", BOOL, DOUBLE, INT), _g("less_double_uint64", BOOL, DOUBLE, UINT),
        _g("less_string", BOOL, STRING, STRING), _g("less_bytes", BOOL, BYTES, BYTES),
        _g("less_timestamp", BOOL, TIMESTAMP, TIMESTAMP), _g("less_duration", BOOL, DURATION, DURATION),),
    "_<=_": (_g("less_equals_bool", BOOL, BOOL, BOOL), _g("less_equals_int64", BOOL, INT, INT),
        _g("less_equals_int64_double", BOOL, INT, DOUBLE), _g("less_equals_int64_uint64", BOOL, INT, UINT),
        _g("less_equals_uint64", BOOL, UINT, UINT), _g("less_equals_uint64_double", BOOL, UINT, DOUBLE),
        _g("less_equals_uint64_int64", BOOL, UINT, INT), _g("less_equals_double", BOOL, DOUBLE, DOUBLE),
        _g("less_equals_double_int64", BOOL, DOUBLE, INT), _g("less_equals_double_uint64", BOOL, DOUBLE, UINT),
        _g("less_equals_string", BOOL, STRING, STRING), _g("less_equals_bytes", BOOL, BYTES, BYTES),
        _g("less_equals_timestamp", BOOL, TIMESTAMP, TIMESTAMP), _g("less_equals_duration", BOOL, DURATION, DURATION),),
    "_>_": (_g("greater_bool", BOOL, BOOL, BOOL), _g("greater_int64", BOOL, INT, INT),
        _g("greater_int64_double", BOOL, INT, DOUBLE), _g("greater_int64_uint64", BOOL, INT, UINT),
        _g("greater_uint64", BOOL, UINT, UINT), _g("greater_uint64_double", BOOL, UINT, DOUBLE),
        _g("greater_uint64_int64", BOOL, UINT, INT), _g("greater_double", BOOL, DOUBLE, DOUBLE),
        _g("greater_double_int64", BOOL, DOUBLE, INT), _g("greater_double_uint64", BOOL, DOUBLE, UINT),
        _g("greater_string", BOOL, STRING, STRING), _g("greater_bytes", BOOL, BYTES, BYTES),
        _g("greater_timestamp", BOOL, TIMESTAMP, TIMESTAMP), _g("greater_duration", BOOL, DURATION, DURATION),),
    "_>=_": (_g("greater_equals_bool", BOOL, BOOL, BOOL), _g("greater_equals_int64", BOOL, INT, INT),
        _g("greater_equals_int64_double", BOOL, INT, DOUBLE), _g("greater_equals_int64_uint64", BOOL, INT, UINT),
        _g("greater_equals_uint64", BOOL, UINT, UINT), _g("greater_equals_uint64_double", BOOL, UINT, DOUBLE),
        _g("greater_equals_uint64_int64", BOOL, UINT, INT), _g("greater_equals_double", BOOL, DOUBLE, DOUBLE),
        _g("greater_equals_double_int64", BOOL, DOUBLE, INT), _g("greater_equals_double_uint64", BOOL, DOUBLE, UINT),
        _g("greater_equals_string", BOOL, STRING, STRING), _g("greater_equals_bytes", BOOL, BYTES, BYTES),
        _g("greater_equals_timestamp", BOOL, TIMESTAMP, TIMESTAMP),
        _g("greater_equals_duration", BOOL, DURATION, DURATION),),
    "_[_]": (_g("index_list", _A, _LIST_A, INT), _g("index_map", _B, _MAP_AB, _A),),
    "@in": (_g("in_list", BOOL, _A, _LIST_A), _g("in_map", BOOL, _A, _MAP_AB),),
    "size": (_g("size_bytes", INT, BYTES), _m("bytes_size", INT, BYTES), _g("size_list", INT, _LIST_A),
        _m("list_size", INT, _LIST_A), _g("size_map", INT, _MAP_AB), _m("map_size", INT, _MAP_AB),
        _g("size_string", INT, STRING), _m("string_size", INT, STRING),),
    "type": (_g("type", type_of(_A), _A),),
    "bool": (_g("bool_to_bool", BOOL, BOOL), _g("string_to_bool", BOOL, STRING),),
    "bytes": (_g("bytes_to_bytes", BYTES, BYTES), _g("string_to_bytes", BYTES, STRING),),
    "double": (_g("double_to_double", DOUBLE, DOUBLE), _g("int64_to_double", DOUBLE, INT),
        _g("string_to_double", DOUBLE, STRING), _g("uint64_to_double", DOUBLE, UINT),),
    "duration": (_g("duration_to_duration", DURATION, DURATION), _g("int64_to_duration", DURATION, INT),
        _g("string_to_duration", DURATION, STRING),),
    "dyn": (_g("to_dyn", DYN, _A),),
    "int": (_g("int64_to_int64", INT, INT), _g("double_to_int64", INT, DOUBLE),
        _g("duration_to_int64", INT, DURATION), _g("string_to_int64", INT, STRING),
        _g("timestamp_to_int64", INT, TIMESTAMP), _g("uint64_to_int64", INT, UINT),),
    "string": (_g("string_to_string", STRING, STRING), _g("bool_to_string", STRING, BOOL),
        _g("bytes_to_string", STRING, BYTES), _g("double_to_string", STRING, DOUBLE),
        _g("duration_to_string", STRING, DURATION), _g("int64_to_string", STRING, INT),
        _g("timestamp_to_string", STRING, TIMESTAMP), _g("uint64_to_string", STRING, UINT),),
    "timestamp": (_g("timestamp_to_timestamp", TIMESTAMP, TIMESTAMP), _g("int64_to_timestamp", TIMESTAMP, INT),
        _g("string_to_timestamp", TIMESTAMP, STRING),),
    "uint": (_g("uint64_to_uint64", UINT, UINT), _g("double_to_uint64", UINT, DOUBLE),
        _g("int64_to_uint64", UINT, INT), _g("string_to_uint64", UINT, STRING),),
    "contains": (_m("contains_string", BOOL, STRING, STRING),),
    "endsWith": (_m("ends_with_string", BOOL, STRING, STRING),),
    "startsWith": (_m("starts_with_string", BOOL, STRING, STRING),),
    "matches": (_g("matches", BOOL, STRING, STRING), _m("matches_string", BOOL, STRING, STRING),),
    "getFullYear": (_m("timestamp_to_year", INT, TIMESTAMP), _m("timestamp_to_year_with_tz", INT, TIMESTAMP, STRING),),
    "getMonth": (_m("timestamp_to_month", INT, TIMESTAMP), _m("timestamp_to_month_with_tz", INT, TIMESTAMP, STRING),),
    "getDayOfYear": (_m("timestamp_to_day_of_year", INT, TIMESTAMP),
        _m("timestamp_to_day_of_year_with_tz", INT, TIMESTAMP, STRING),),
    "getDayOfMonth": (_m("timestamp_to_day_of_month", INT, TIMESTAMP),
        _m("timestamp_to_day_of_month_with_tz", INT, TIMESTAMP, STRING),),
    "getDate": (_m("timestamp_to_day_of_month_1_based", INT, TIMESTAMP),
        _m("timestamp_to_day_of_month_1_based_with_tz", INT, TIMESTAMP, STRING),),
    "getDayOfWeek": (_m("timestamp_to_day_of_week", INT, TIMESTAMP),
        _m("timestamp_to_day_of_week_with_tz", INT, TIMESTAMP, STRING),),
    "getHours": (_m("timestamp_to_hours", INT, TIMESTAMP), _m("timestamp_to_hours_with_tz", INT, TIMESTAMP, STRING),
        _m("duration_to_hours", INT, DURATION),),
    "getMinutes": (_m("timestamp_to_minutes", INT, TIMESTAMP),
        _m("timestamp_to_minutes_with_tz", INT, TIMESTAMP, STRING), _m("duration_to_minutes", INT, DURATION),),
    "getSeconds": (_m("timestamp_to_seconds", INT, TIMESTAMP), _m("timestamp_to_seconds_tz", INT, TIMESTAMP, STRING),
        _m("duration_to_seconds", INT, DURATION),),
    "getMilliseconds": (_m("timestamp_to_milliseconds", INT, TIMESTAMP),
        _m("timestamp_to_milliseconds_with_tz", INT, TIMESTAMP, STRING),
        _m("duration_to_milliseconds", INT, DURATION),),
}

"""The standard library, always declared. ``_[_]``, ``@in`` and the operators are named as the parser names
them."""

CROSS_TYPE_COMPARISONS = frozenset(
    f"{op}_{left}_{right}"
    for op in ("less", "less_equals", "greater", "greater_equals")
    for left, right in (("double", "int64"), ("double", "uint64"), ("int64", "double"), ("int64", "uint64"),
                        ("uint64", "double"), ("uint64", "int64")))
"""The ordering overloads between int, uint and double, which cel-go's checker leaves out unless
``CrossTypeNumericComparisons(true)``."""

STRINGS: dict[str, tuple[Overload, ...]] = {
    "charAt": (_m("string_char_at_int", STRING, STRING, INT),),
    "indexOf": (_m("string_index_of_string", INT, STRING, STRING),
                _m("string_index_of_string_int", INT, STRING, STRING, INT)),
    "lastIndexOf": (_m("string_last_index_of_string", INT, STRING, STRING),
                    _m("string_last_index_of_string_int", INT, STRING, STRING, INT)),
    "lowerAscii": (_m("string_lower_ascii", STRING, STRING),),
    "replace": (_m("string_replace_string_string", STRING, STRING, STRING, STRING),
                _m("string_replace_string_string_int", STRING, STRING, STRING, STRING, INT)),
    "split": (_m("string_split_string", list_of(STRING), STRING, STRING),
              _m("string_split_string_int", list_of(STRING), STRING, STRING, INT)),
    "substring": (_m("string_substring_int", STRING, STRING, INT),
                  _m("string_substring_int_int", STRING, STRING, INT, INT)),
    "trim": (_m("string_trim", STRING, STRING),),
    "upperAscii": (_m("string_upper_ascii", STRING, STRING),),
    "format": (_m("string_format", STRING, STRING, list_of(DYN)),),
    "strings.quote": (_g("strings_quote", STRING, STRING),),
    "join": (_m("list_join", STRING, list_of(STRING)), _m("list_join_string", STRING, list_of(STRING), STRING)),
    "reverse": (_m("string_reverse", STRING, STRING),),
}
"""cel-go's ``ext.Strings()`` (every version, as cel-go enables by default)."""

KUBERNETES: dict[str, tuple[Overload, ...]] = {
    "quantity": (_g("string_to_quantity", QUANTITY, STRING),),
    "isQuantity": (_g("is_quantity_string", BOOL, STRING),),
    "sign": (_m("quantity_sign", INT, QUANTITY),),
    "isGreaterThan": (_m("quantity_is_greater_than", BOOL, QUANTITY, QUANTITY),),
    "isLessThan": (_m("quantity_is_less_than", BOOL, QUANTITY, QUANTITY),),
    "compareTo": (_m("quantity_compare_to", INT, QUANTITY, QUANTITY),),
    "asApproximateFloat": (_m("quantity_get_float", DOUBLE, QUANTITY),),
    "asInteger": (_m("quantity_get_int", INT, QUANTITY),),
    "isInteger": (_m("quantity_is_integer", BOOL, QUANTITY),),
    "add": (_m("quantity_add", QUANTITY, QUANTITY, QUANTITY), _m("quantity_add_int", QUANTITY, QUANTITY, INT)),
    "sub": (_m("quantity_sub", QUANTITY, QUANTITY, QUANTITY), _m("quantity_sub_int", QUANTITY, QUANTITY, INT)),
    "now": (_g("now", TIMESTAMP),),
}
"""The Kubernetes quantity library (``sign`` as a method, as our runtime has it; Kubernetes declared it global
in some releases) and our ``now()``."""

LIBRARIES = {"strings": STRINGS, "kubernetes": KUBERNETES}
