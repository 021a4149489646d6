"""The official CEL conformance suite (cel-spec's ``tests/simple``) as plain cases.

cel-spec writes its tests in protobuf text format (``cel.expr.conformance.test.SimpleTestFile``). They are read
with the protobuf library itself, so no home-made parser can disagree with cel-go's runner about what a test
says: grpcio-tools' bundled protoc turns cel-spec's ``.proto`` files (and the well-known types they import) into
a descriptor set, a private descriptor pool builds the message classes from it, and ``text_format`` parses each
file. Each test then becomes a :class:`Case` holding only Python values, so the runner and the adapter never
touch protobuf.

Values keep CEL's distinctions that Python would blur: :class:`Uint` beside ``int``, :class:`Map` (its keys may
be ``true`` and ``1`` at once, which a dict would merge), :class:`TypeName`, and :class:`Timestamp` and
:class:`Duration` with nanoseconds. :func:`same` compares them the way the suite means: by CEL type and value.
"""

from __future__ import annotations

import importlib.resources
import math
import re
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import REFERENCE

SPEC = REFERENCE / "cel-spec"
TESTDATA = SPEC / "tests" / "simple" / "testdata"
PROTOS = SPEC / "proto"

SKIPPED_FILES = {
    "proto2": "protobuf messages (proto2 TestAllTypes); our evaluator has no message types",
    "proto2_ext": "protobuf extensions of proto2 messages; our evaluator has no message types",
    "proto3": "protobuf messages (proto3 TestAllTypes); our evaluator has no message types",
    "enums": "protobuf enums; our evaluator has no message or enum types",
    "wrappers": "protobuf wrapper messages built in expressions; our evaluator has no message types",
    "optionals": "optional values (cel-go's OptionalTypes library), which no consumer loads",
    "bindings_ext": "cel.bind (cel-go's ext.Bindings), which no consumer loads",
    "block_ext": "cel.block (cel-go's internal common-subexpression library), which no consumer loads",
    "encoders_ext": "base64 encoders (cel-go's ext.Encoders), which no consumer loads",
    "network_ext": "IP and CIDR types (Kubernetes' network library), which no consumer loads",
    "math_ext": "math.* functions (cel-go's ext.Math), which no consumer loads",
    "macros2": "two-variable comprehensions (cel-go's ext.TwoVarComprehensions), which no consumer loads",
    "type_deduction": "checks the type the checker deduces (check_only): tests/cel/test_checker.py compares the "
                      "25 that need no protobuf messages with aicr_gen.cel.checker; the others need TestAllTypes",
    "unknowns": "unknown values (partial evaluation), which no consumer uses",
}
"""Whole files out of scope, with why."""

_QUESTION_ESCAPE = re.compile(r"(?<!\\)((?:\\\\)*)\\\?")
"""``\\?`` after an even run of backslashes: the text format's escape for ``?``, which protobuf's Python
``text_encoding.CUnescape`` (7.36) keeps as two characters where the C++ and Go parsers (cel-go's runner) read
``?``; parse.textproto's escaped-punctuation tests would otherwise expect the wrong bytes."""

_WELL_KNOWN = "google.protobuf."
_JSON_TYPES = frozenset(f"{_WELL_KNOWN}{name}" for name in ("Value", "Struct", "ListValue"))
_WRAPPERS = {f"{_WELL_KNOWN}{name}": kind for name, kind in (
    ("BoolValue", "bool"), ("BytesValue", "bytes"), ("DoubleValue", "double"), ("FloatValue", "double"),
    ("Int32Value", "int"), ("Int64Value", "int"), ("StringValue", "string"), ("UInt32Value", "uint"),
    ("UInt64Value", "uint"))}
_CEL_MESSAGES = frozenset({f"{_WELL_KNOWN}Timestamp", f"{_WELL_KNOWN}Duration", *_JSON_TYPES, *_WRAPPERS})
"""Well-known messages that CEL turns into its own values (a timestamp, a map, an int ...) when bound."""

_MESSAGE_IN_EXPR = re.compile(r"TestAllTypes|NestedMessage|NestedEnum|GlobalEnum|\b[A-Z]\w*\s*\{")
"""Message types named or built in an expression (``TestAllTypes{...}``, ``google.protobuf.Int64Value{}``):
CEL message literals and enum constants are the only capitalised names followed by ``{`` in the suite."""


@dataclass(frozen=True)
class Uint:
    """A CEL uint (Python has one int type)."""

    value: int


@dataclass(frozen=True)
class TypeName:
    """A CEL type as a value, by its name (``int``, ``google.protobuf.Timestamp``)."""

    name: str


@dataclass(frozen=True)
class Timestamp:
    """A CEL timestamp: seconds since the Unix epoch and nanoseconds, as ``google.protobuf.Timestamp``."""

    seconds: int
    nanos: int


@dataclass(frozen=True)
class Duration:
    """A CEL duration: seconds and nanoseconds of the same sign, as ``google.protobuf.Duration``."""

    seconds: int
    nanos: int


@dataclass(frozen=True)
class Map:
    """A CEL map as its entries, in the file's order."""

    entries: tuple[tuple[Any, Any], ...]


@dataclass(frozen=True)
class Signature:
    """One overload of a declared function, its types written as :func:`_type` writes them."""

    id: str
    args: tuple[str, ...]  # the receiver first for a member overload
    result: str
    member: bool
    type_params: tuple[str, ...]


@dataclass(frozen=True)
class Declaration:
    """A ``type_env`` entry: a variable with its type, or a function with its overload ids."""

    name: str
    kind: str  # "variable" or "function"
    type: str  # the variable's type ("int", "list(string)", "message cel.expr...TestAllTypes"), or the overloads
    overloads: tuple[Signature, ...] = ()  # a function's signatures


@dataclass(frozen=True)
class Case:
    """One conformance test. ``errors`` (when ``expects_error``) holds the messages the suite gives, which are
    illustrative: cel-go's runner accepts any error. ``unsupported`` says why the test cannot run here."""

    file: str
    section: str
    name: str
    expr: str
    disable_check: bool = False
    disable_macros: bool = False
    container: str = ""
    declarations: tuple[Declaration, ...] = ()
    bindings: dict[str, Any] = field(default_factory=dict)
    value: Any = None
    expects_error: bool = False
    errors: tuple[str, ...] = ()
    unsupported: str | None = None
    deduced_type: str | None = None
    """The type a ``typed_result`` says the checker deduces, written as :func:`_type` writes it."""

    @property
    def id(self) -> str:
        return f"{self.file}/{self.section}/{self.name}"

    @property
    def variables(self) -> frozenset[str]:
        """The names an expression may read: the declared ones and the bound ones (a ``disable_check`` test may
        bind names it does not declare)."""
        return frozenset(d.name for d in self.declarations if d.kind == "variable") | frozenset(self.bindings)


@dataclass(frozen=True)
class SkippedFile:
    """A file out of scope, with why and how many tests it holds."""

    file: str
    reason: str
    tests: int


class _NeedsMessages(Exception):
    """A value or declaration is a protobuf message CEL keeps as a message (TestAllTypes, an enum ...)."""


def same(expected: Any, actual: Any) -> bool:
    """Equal as CEL values of the same type: ``1`` is not ``1u``, ``1.0`` nor ``true``; NaN equals NaN (the
    suite writes a NaN it expects); map entries match in any order."""
    if type(expected) is not type(actual):
        return False
    if isinstance(expected, float):
        return expected == actual or (math.isnan(expected) and math.isnan(actual))
    if isinstance(expected, list):
        return len(expected) == len(actual) and all(map(same, expected, actual))
    if isinstance(expected, Map):
        if len(expected.entries) != len(actual.entries):
            return False
        return all(any(same(key, other_key) and same(value, other_value)
                       for other_key, other_value in actual.entries)
                   for key, value in expected.entries)
    return bool(expected == actual)


def load_suite() -> tuple[list[Case], list[SkippedFile]]:
    """Every test of the files in scope, and the files out of scope."""
    from google.protobuf import text_format

    pool, message_class = _descriptors()
    cases: list[Case] = []
    skipped: list[SkippedFile] = []
    for path in sorted(TESTDATA.glob("*.textproto")):
        text = _QUESTION_ESCAPE.sub(r"\1?", path.read_text(encoding="utf-8"))
        suite = text_format.Parse(text, message_class(), descriptor_pool=pool)
        if path.stem in SKIPPED_FILES:
            count = sum(len(section.test) for section in suite.section)
            skipped.append(SkippedFile(path.stem, SKIPPED_FILES[path.stem], count))
            continue
        cases.extend(_cases(path.stem, suite, _Converter(pool)))
    return cases, skipped


def load_file(stem: str) -> list[Case]:
    """Every test of one file, in scope or not (``type_deduction`` for the checker's deduced types)."""
    from google.protobuf import text_format

    pool, message_class = _descriptors()
    path = TESTDATA / f"{stem}.textproto"
    text = _QUESTION_ESCAPE.sub(r"\1?", path.read_text(encoding="utf-8"))
    suite = text_format.Parse(text, message_class(), descriptor_pool=pool)
    return list(_cases(stem, suite, _Converter(pool)))


def _descriptors() -> tuple[Any, Any]:
    """A descriptor pool holding cel-spec's messages and the ``SimpleTestFile`` class from it. protoc writes a
    descriptor set into a temporary folder (a few tens of milliseconds, so nothing is cached)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    from grpc_tools import protoc

    well_known = importlib.resources.files("grpc_tools") / "_proto"
    sources = sorted(str(path.relative_to(PROTOS)) for path in PROTOS.rglob("*.proto"))
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "cel-spec.pb"
        code = protoc.main(["protoc", f"-I{PROTOS}", f"-I{well_known}", "--include_imports",
                            f"--descriptor_set_out={out}", *sources])
        if code != 0:
            raise RuntimeError(f"protoc could not compile the protos under {PROTOS} (exit {code})")
        descriptor_set = descriptor_pb2.FileDescriptorSet.FromString(out.read_bytes())
    pool = descriptor_pool.DescriptorPool()
    for file in descriptor_set.file:
        pool.Add(file)
    simple = pool.FindMessageTypeByName("cel.expr.conformance.test.SimpleTestFile")
    return pool, message_factory.GetMessageClass(simple)


def _cases(file: str, suite: Any, convert: _Converter) -> Iterator[Case]:
    for section in suite.section:
        for test in section.test:
            base = Case(file, section.name, test.name, test.expr, test.disable_check, test.disable_macros,
                        test.container)
            try:
                yield _complete(base, test, convert)
            except _NeedsMessages as needs:
                yield _replace(base, unsupported=f"needs protobuf messages ({needs})")


def _complete(base: Case, test: Any, convert: _Converter) -> Case:
    """``base`` with the declarations, bindings and expected result of ``test``."""
    declarations = tuple(_declaration(decl) for decl in test.type_env)
    for decl in declarations:
        for name in re.findall(r"message ([\w.]+)", decl.type):
            if name not in _CEL_MESSAGES:
                raise _NeedsMessages(f"{decl.name} is a {name}")
    if _MESSAGE_IN_EXPR.search(test.expr):
        raise _NeedsMessages("the expression names a message type")
    bindings = {}
    for name, bound in test.bindings.items():
        if bound.WhichOneof("kind") != "value":
            return _replace(base, unsupported=f"binds {name} to an {bound.WhichOneof('kind')}, not a value")
        bindings[name] = convert.value(bound.value)
    complete = _replace(base, declarations=declarations, bindings=bindings)
    matcher = test.WhichOneof("result_matcher")
    if matcher in (None, "value"):  # an absent matcher means "true" (simple.proto)
        return _replace(complete, value=convert.value(test.value) if matcher else True)
    if matcher == "eval_error":
        return _replace(complete, expects_error=True, errors=tuple(e.message for e in test.eval_error.errors))
    if matcher == "any_eval_errors":
        messages = (e.message for errors in test.any_eval_errors.errors for e in errors.errors)
        return _replace(complete, expects_error=True, errors=tuple(messages))
    deduced = _type(test.typed_result.deduced_type) if matcher == "typed_result" else None
    return _replace(complete, unsupported=f"expects {matcher.replace('_', ' ')}, which our evaluator has no notion of",
                    deduced_type=deduced)


def _replace(case: Case, **changes: Any) -> Case:
    return Case(**{**case.__dict__, **changes})


def _declaration(decl: Any) -> Declaration:
    if decl.WhichOneof("decl_kind") == "function":
        signatures = tuple(Signature(o.overload_id, tuple(_type(p) for p in o.params), _type(o.result_type),
                                     o.is_instance_function, tuple(o.type_params))
                           for o in decl.function.overloads)
        return Declaration(decl.name, "function", ", ".join(o.overload_id for o in decl.function.overloads),
                           signatures)
    return Declaration(decl.name, "variable", _type(decl.ident.type))


_PRIMITIVES = {1: "bool", 2: "int", 3: "uint", 4: "double", 5: "string", 6: "bytes"}
_WELL_KNOWN_TYPES = {1: "any", 2: "google.protobuf.Timestamp", 3: "google.protobuf.Duration"}


def _type(kind: Any) -> str:
    """A ``cel.expr.Type`` written as CEL names it (``list(int)``, ``wrapper(string)``, ``message NAME``)."""
    which = kind.WhichOneof("type_kind")
    if which == "primitive":
        return _PRIMITIVES[kind.primitive]
    if which == "wrapper":
        return f"wrapper({_PRIMITIVES[kind.wrapper]})"
    if which == "well_known":
        return _WELL_KNOWN_TYPES[kind.well_known]
    if which == "list_type":
        return f"list({_type(kind.list_type.elem_type)})"
    if which == "map_type":
        return f"map({_type(kind.map_type.key_type)}, {_type(kind.map_type.value_type)})"
    if which == "message_type":
        return f"message {kind.message_type}"
    if which == "type":
        return f"type({_type(kind.type)})"
    if which == "abstract_type":
        return f"{kind.abstract_type.name}({', '.join(_type(p) for p in kind.abstract_type.parameter_types)})"
    if which == "type_param":
        return str(kind.type_param)
    return {"null": "null_type", None: "dyn"}.get(which, which)


class _Converter:
    """``cel.expr.Value`` messages to Python values, unpacking the well-known messages CEL treats as values."""

    def __init__(self, pool: Any) -> None:
        self.pool = pool

    def value(self, value: Any) -> Any:
        kind = value.WhichOneof("kind")
        if kind in ("bool_value", "int64_value", "double_value", "string_value", "bytes_value"):
            return getattr(value, kind)
        if kind == "uint64_value":
            return Uint(value.uint64_value)
        if kind == "list_value":
            return [self.value(item) for item in value.list_value.values]
        if kind == "map_value":
            return Map(tuple((self.value(e.key), self.value(e.value)) for e in value.map_value.entries))
        if kind == "type_value":
            return TypeName(value.type_value)
        if kind == "object_value":
            return self._message(value.object_value)
        if kind == "enum_value":
            raise _NeedsMessages(f"enum {value.enum_value.type}")
        return None  # null_value, or no kind at all (a default Value)

    def _message(self, packed: Any) -> Any:
        from google.protobuf import message_factory

        name = packed.type_url.rpartition("/")[2]
        if name not in _CEL_MESSAGES:
            raise _NeedsMessages(name)
        message = message_factory.GetMessageClass(self.pool.FindMessageTypeByName(name)).FromString(packed.value)
        if name in _WRAPPERS:
            inner = message.value
            return Uint(inner) if _WRAPPERS[name] == "uint" else inner
        if name.endswith(("Timestamp", "Duration")):
            return (Timestamp if name.endswith("Timestamp") else Duration)(message.seconds, message.nanos)
        return self._json(message)

    def _json(self, message: Any) -> Any:
        """``google.protobuf.Value``, ``Struct`` or ``ListValue`` as CEL sees JSON: null, double, string, bool,
        a map with string keys, a list."""
        kind = message.DESCRIPTOR.name
        if kind == "Struct":
            return Map(tuple((key, self._json(message.fields[key])) for key in message.fields))
        if kind == "ListValue":
            return [self._json(item) for item in message.values]
        which = message.WhichOneof("kind")
        if which == "struct_value":
            return self._json(message.struct_value)
        if which == "list_value":
            return self._json(message.list_value)
        return None if which in (None, "null_value") else getattr(message, which)
