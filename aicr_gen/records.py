"""``typing.NamedTuple``'s class syntax without importing ``typing``.

Importing ``typing`` costs ~6 ms, a tenth of a quick command (``validate``, ``bundle``) whose other modules need
nothing else from it: their annotations are strings (``from __future__ import annotations``). Modules on those
paths declare records as usual and take the class from here at run time, from ``typing`` for the type checker::

    TYPE_CHECKING = False
    if TYPE_CHECKING:
        from typing import NamedTuple
    else:
        from aicr_gen.records import NamedTuple

A class built here is what ``typing.NamedTuple`` builds (``tests/test_records.py`` compares them): a
``collections.namedtuple`` with the annotated fields in order, the assigned ones as defaults, and the body's
methods, properties, docstring and class attributes; a field without a default after one with a default is a
TypeError, and so is a field name ``namedtuple`` reserves.
"""

from __future__ import annotations

import collections

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_NOT_COPIED = frozenset({"__annotations__", "__module__", "__qualname__", "__dict__", "__weakref__"})
_PROHIBITED = frozenset({"__new__", "__init__", "__slots__", "__getnewargs__", "_fields", "_field_defaults", "_make",
                         "_replace", "_asdict", "_source"})


class _RecordMeta(type):
    def __new__(mcls, name: str, bases: tuple[type, ...], namespace: dict[str, Any]) -> type:
        if not bases:  # the NamedTuple base below
            return super().__new__(mcls, name, bases, namespace)
        if "__annotations__" not in namespace and "__annotate__" in namespace:  # Python >= 3.14, lazy annotations
            raise TypeError(f"{name}: its module needs 'from __future__ import annotations' to be a record")
        annotations: dict[str, Any] = namespace.get("__annotations__", {})
        defaults: list[object] = []
        for field in annotations:
            if field in namespace:
                defaults.append(namespace[field])
            elif defaults:
                raise TypeError(f"{name}: field {field!r} has no default but follows a field with one")
        record = collections.namedtuple(name, list(annotations), defaults=defaults,  # type: ignore[misc]
                                        module=namespace["__module__"])
        record.__annotations__ = dict(annotations)
        record.__qualname__ = namespace.get("__qualname__", name)
        for key, value in namespace.items():
            if key in record._fields:
                continue
            if key in _PROHIBITED:
                raise AttributeError(f"Cannot overwrite NamedTuple attribute {key}")
            if key not in _NOT_COPIED:
                setattr(record, key, value)
        return record


class NamedTuple(metaclass=_RecordMeta):
    """Base of a record class (see the module's docstring)."""
