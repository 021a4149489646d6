"""aicr_gen.yaml: strict, bounded loading with file:line errors, and dumping that every reader reads back."""

from __future__ import annotations

import ast
import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml as pyyaml
from ruamel.yaml import YAML

from aicr_gen import yaml as yamlio
from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml import fast
from aicr_gen.yaml import load as loading


def load(text: str, source: str = "catalog/overlays/eks.yaml") -> Any:
    return yamlio.load_bytes(text.encode(), source).data


def rejection(text: str | bytes, source: str = "catalog/overlays/eks.yaml") -> str:
    """The message a user sees for a document the loader must refuse."""
    raw = text.encode() if isinstance(text, str) else text
    with pytest.raises(InvalidInputError) as caught:
        yamlio.load_bytes(raw, source)
    return str(caught.value)


# ------------------------------------------------------------------ strict loading


def test_duplicate_key_names_the_key_and_both_lines() -> None:
    text = "kind: RecipeMetadata\nspec:\n  base: base\n  criteria: {}\n  base: eks\n"

    message = rejection(text)

    assert message.startswith("catalog/overlays/eks.yaml:5: ")
    assert "duplicate key 'base' in spec" in message
    assert "first at line 3" in message
    assert "keep one" in message


def test_duplicate_key_at_the_root_is_reported_too() -> None:
    message = rejection("name: a\nother: 1\nname: b\n")

    assert message.startswith("catalog/overlays/eks.yaml:3: duplicate key 'name'")
    assert "first at line 1" in message


def _billion_laughs(levels: int = 9) -> str:
    lines = ['lol0: &lol0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    for level in range(1, levels + 1):
        refs = ", ".join([f"*lol{level - 1}"] * 9)
        lines.append(f"lol{level}: &lol{level} [{refs}]")
    return "\n".join(lines) + "\n"


def test_billion_laughs_is_rejected_in_well_under_a_second() -> None:
    started = time.perf_counter()
    message = rejection(_billion_laughs())
    elapsed = time.perf_counter() - started

    assert elapsed < 0.5, f"alias bomb took {elapsed:.2f}s to reject"
    assert message.startswith("catalog/overlays/eks.yaml:")
    assert "alias" in message


def test_more_alias_uses_than_the_limit_are_rejected() -> None:
    uses = ", ".join(["*defaults"] * (yamlio.MAX_ALIASES + 1))
    message = rejection(f"defaults: &defaults {{cpu: 1}}\nnodes: [{uses}]\n")

    assert f"more than {yamlio.MAX_ALIASES} alias references" in message
    assert "write the values out instead" in message


def test_alias_uses_up_to_the_limit_are_expanded() -> None:
    uses = ", ".join(["*defaults"] * yamlio.MAX_ALIASES)

    data = load(f"defaults: &defaults {{cpu: 1}}\nnodes: [{uses}]\n")

    assert data["nodes"] == [{"cpu": 1}] * yamlio.MAX_ALIASES


def test_few_aliases_of_a_big_list_are_still_bounded_by_the_node_limit() -> None:
    items = yamlio.MAX_NODES // 50
    text = f"big: &big [{', '.join(['0'] * items)}]\nuses: [{', '.join(['*big'] * 60)}]\n"

    started = time.perf_counter()
    message = rejection(text)

    # expanding the aliases would take minutes; refusing takes a fraction of a second (bound generous for a
    # loaded 2-core CI machine: this guards against unbounded work, it is not a benchmark)
    assert time.perf_counter() - started < 5.0
    assert f"more than {yamlio.MAX_NODES} nodes (alias bomb?)" in message
    assert "remove the aliases" in message


def test_a_self_referencing_alias_is_rejected_not_recursed_forever() -> None:
    assert "alias" in rejection("loop: &loop [*loop]\n")


def test_merge_keys_are_rejected_with_their_line() -> None:
    message = rejection("defaults: &defaults {cpu: 1}\nworker:\n  <<: *defaults\n  gpu: 8\n")

    assert message.startswith("catalog/overlays/eks.yaml:3: ")
    assert "merge keys (<<) are not supported" in message


@pytest.mark.parametrize("tagged", [
    "!custom value",
    "!!python/object:os.system ls",
    "!!set {a, b}",
    "!!omap [a: 1]",
    "!Ref [x]",
    "!Sub {a: b}",
])
def test_custom_tags_are_rejected(tagged: str) -> None:
    message = rejection(f"kind: RecipeMetadata\nvalue: {tagged}\n")

    assert message.startswith("catalog/overlays/eks.yaml:2: unsupported YAML tag")
    assert "remove the tag" in message


@pytest.mark.parametrize(("text", "expected"), [
    ("- a\n- b\n", "the document root is a list"),
    ("just text\n", "the document root is a str"),
    ("42\n", "the document root is a int"),
    ("", "the document is empty"),
    ("# nothing but a comment\n", "the document is empty"),
])
def test_the_root_must_be_a_mapping(text: str, expected: str) -> None:
    message = rejection(text)

    assert message.startswith("catalog/overlays/eks.yaml:1: ")
    assert expected in message


def test_a_multi_document_stream_is_rejected_at_the_second_document() -> None:
    message = rejection("kind: RecipeMetadata\n---\nkind: RecipeMixin\n")

    assert message.startswith("catalog/overlays/eks.yaml:2: invalid YAML")
    assert "another document" in message


def test_one_document_with_explicit_markers_is_fine() -> None:
    assert load("---\nkind: RecipeMetadata\n...\n") == {"kind": "RecipeMetadata"}


def test_invalid_utf8_reports_the_line_of_the_bad_byte() -> None:
    raw = b"kind: RecipeMetadata\n# comment\nname: caf\xe9\n"

    message = rejection(raw)

    assert message.startswith("catalog/overlays/eks.yaml:3: not valid UTF-8")
    assert "save the file as UTF-8" in message


def test_a_utf8_byte_order_mark_is_accepted() -> None:
    assert yamlio.load_bytes(b"\xef\xbb\xbfname: caf\xc3\xa9\n", "x.yaml").data == {"name": "café"}


def test_files_over_16_mib_are_rejected_before_parsing() -> None:
    raw = b"kind: x\n#" + b"#" * yamlio.MAX_BYTES

    with pytest.raises(InvalidInputError, match=r"^big\.yaml:1: file is \d+ bytes, over the 16777216 byte limit"):
        yamlio.decode(raw, "big.yaml")
    started = time.perf_counter()
    assert "split it" in rejection(raw, "big.yaml")
    assert time.perf_counter() - started < 0.5


def test_a_file_of_exactly_16_mib_is_still_read() -> None:
    head = b"kind: x\n"
    raw = head + b"#" * (yamlio.MAX_BYTES - len(head))

    assert yamlio.load_bytes(raw, "big.yaml").data == {"kind": "x"}


@pytest.mark.parametrize(("text", "line"), [
    ("kind: x\nspec:\n  a: [1,\n", 4),
    ("kind: x\nspec: a: b\n", 2),
    ("kind: x\n\tname: y\n", 2),
    ('kind: x\nname: "\\q"\n', 2),
])
def test_syntax_errors_report_their_line(text: str, line: int) -> None:
    assert rejection(text).startswith(f"catalog/overlays/eks.yaml:{line}: invalid YAML: ")


def test_mapping_keys_must_be_plain_scalars() -> None:
    assert "mapping keys must be plain scalars" in rejection("? [a, b]\n: 1\n")


def test_line_of_and_where_point_at_nested_fields() -> None:
    text = (
        "kind: RecipeMetadata\n"          # 1
        "spec:\n"                          # 2
        "  componentRefs:\n"               # 3
        "    - name: nfd\n"                # 4
        "      overrides:\n"               # 5
        "        worker:\n"                # 6
        "          tolerations: []\n"      # 7
        "    - name: gpu-operator\n"       # 8
        "      valuesFile: v.yaml\n"       # 9
    )
    doc = yamlio.load_bytes(text.encode(), "overlays/eks.yaml")

    assert doc.line_of(("kind",)) == 1
    assert doc.line_of(("spec", "componentRefs", 0, "overrides", "worker", "tolerations")) == 7
    assert doc.line_of(("spec", "componentRefs", 1)) == 8
    assert doc.line_of(("spec", "componentRefs", 1, "valuesFile")) == 9
    # A path the document does not have falls back to its nearest existing ancestor.
    assert doc.line_of(("spec", "componentRefs", 1, "version")) == 8
    assert doc.where(("spec", "componentRefs", 1, "valuesFile")) == \
        "overlays/eks.yaml:9: spec.componentRefs[1].valuesFile"
    assert doc.where(()) == "overlays/eks.yaml:1: (document root)"


def test_format_path_reads_like_the_user_writes_it() -> None:
    assert yamlio.format_path(("spec", "componentRefs", 2, "name")) == "spec.componentRefs[2].name"
    assert yamlio.format_path((0, "a")) == "[0].a"
    assert yamlio.format_path(()) == "(document root)"


# ------------------------------------------------------------------ scalar typing (YAML 1.2)


@pytest.mark.parametrize(("text", "expected"), [
    ("12", 12),
    ("-3", -3),
    ("+7", 7),
    ("012", 12),
    ("0o17", 15),
    ("0x1F", 31),
    ("1.5", 1.5),
    ("1.10", 1.1),
    ("1e3", 1000.0),
    (".5", 0.5),
    (".inf", math.inf),
    ("-.Inf", -math.inf),
    ("~", None),
    ("null", None),
    ("", None),
    ("true", True),
    ("false", False),
    ("True", True),
    ("yes", "yes"),
    ("No", "No"),
    ("on", "on"),
    ("OFF", "OFF"),
    ("y", "y"),
    ("n", "n"),
    ("2001-12-14", "2001-12-14"),
    ("2001-12-14t21:59:43.10-05:00", "2001-12-14t21:59:43.10-05:00"),
    ("12:30:00", "12:30:00"),
    ("v1.2", "v1.2"),
    ("'012'", "012"),
    ("'true'", "true"),
    ("!!str 5", "5"),
    ("!!binary aGVsbG8=", "aGVsbG8="),
])
def test_scalars_are_typed_like_yaml_1_2(text: str, expected: Any) -> None:
    value = load(f"value: {text}\n")["value"]

    assert value == expected
    assert type(value) is type(expected)


def test_nan_is_a_float() -> None:
    assert math.isnan(load("value: .nan\n")["value"])


def test_a_binary_looking_integer_loads_like_ruamel_does() -> None:
    assert load("value: 0b101\n") == {"value": 5}


@pytest.mark.parametrize("tagged", ["!!int abc", "!!int 1.5", "!!float abc", "!!bool maybe", "!!null something"])
def test_an_explicit_tag_that_does_not_fit_its_text_is_an_input_error(tagged: str) -> None:
    message = rejection(f"kind: x\nvalue: {tagged}\n")

    assert message.startswith("catalog/overlays/eks.yaml:2: ")


# ------------------------------------------------------------------ deterministic dumping

TRICKY_STRINGS = [
    # YAML 1.1 booleans and nulls in any case
    "yes", "Yes", "YES", "no", "No", "NO", "on", "On", "ON", "off", "Off", "OFF", "y", "Y", "n", "N",
    "true", "True", "FALSE", "null", "Null", "NULL", "~", "=", "<<",
    # numbers and number-lookalikes
    "012", "0777", "09", "0x1F", "0o17", "0b101", "1e3", "1E3", "8e-3", ".5", "5.", "1_000", "1__0", "_1",
    "1,000", "+1", "-1", "-0", ".inf", "-.inf", "+.Inf", ".nan", ".NaN", "1:20", "12:30:00", "190:20:30.15",
    "2001-12-14", "2001-12-14t21:59:43.10-05:00", "2001-12-14 21:59:43.10 -5",
    # versions
    "1.10", "1.0", "v1.2", "v25.3.0", "1.2.3", "0.19.0",
    # indicators, inside and at the start
    "key: value", "a:", "a:b", "http://x", "value #comment", "a#b", "#comment", "a - b",
    "-", "- x", "-x", "--", "---", "--- x", "...", "? x", "?", ":x", ",x", "[x]", "{x}", "x]", "x}",
    "!x", "!!str", "&x", "*x", "%x", "@x", "`x", "|", "|x", ">", ">x",
    # quotes
    "'", '"', "it's", "'quoted'", '"quoted"', "a 'b' c", 'a "b" c', "''", '""',
    # whitespace
    " lead", "trail ", " both ", " ", "  ", "a  b", "\tlead", "a\tb", "trail\t",
    # unicode and control characters
    "é ü 中文 🚀", "\u00a0nbsp", "zero\u200bwidth", "\ufeffbom", "a\x00b", "a\x07b", "\x1b[0m", "a\x0bb",
    "a\x0cb", "x\r\ny", "a\r", "back\\slash", "\\n",
    # multi-line, with and without trailing newlines
    "line1\nline2", "line1\nline2\n", "line1\nline2\n\n", "line1\nline2\n\n\n", "\nleading newline",
    "\n\nx", " space\nnext", "  indented\nnext\n", "a\n b", "a\n\tb\n", "x \ny", "x\n  ", "foo\n#bar",
    "a\n\nb", "a: b\nc: d\n", "- a\n- b\n", "\n", "\n\n", "  \n", "last\n ",
    # nothing at all
    "",
]

# Characters a YAML reader treats as line breaks or refuses outright; the dumper must escape them.
LINE_BREAK_AND_FORBIDDEN = ["x\x85y", "x\u2028y", "x\u2029y", "x\x7fy", "x\x80y", "x\x9fy", "x\ufffey"]

Loader = Callable[[str], Any]


def _own(text: str) -> Any:
    return yamlio.load_bytes(text.encode(), "dumped.yaml").data


def _ruamel_yaml_1_2(text: str) -> Any:
    return YAML(typ="safe").load(text)


def _pyyaml_yaml_1_1(text: str) -> Any:
    return pyyaml.safe_load(text)


LOADERS: dict[str, Loader] = {"aicr-gen": _own, "ruamel (YAML 1.2)": _ruamel_yaml_1_2,
                              "PyYAML (YAML 1.1, like Go yaml.v2)": _pyyaml_yaml_1_1}


def _nest(text: str) -> dict[str, Any]:
    """``text`` as a value, a key, a list item, and deep inside maps and lists next to empty ones."""
    return {
        "value": text,
        text: [text, {text: text}],
        "nested": {
            "list": [text, [text], {"inner": text}],
            "emptyMap": {},
            "emptyList": [],
            "mixed": [{}, [], {"k": text, "empty": {}}],
        },
    }


def _assert_round_trip(data: dict[str, Any], loader: Loader) -> None:
    dumped = yamlio.dump(data)
    loaded = loader(dumped)
    assert loaded == data, f"dumped as:\n{dumped}"
    assert json.dumps(loaded) == json.dumps(data), "key order or scalar types changed"


@pytest.mark.parametrize("loader", LOADERS.values(), ids=LOADERS.keys())
@pytest.mark.parametrize("text", TRICKY_STRINGS)
def test_every_reader_reads_dumped_strings_back_exactly(text: str, loader: Loader) -> None:
    _assert_round_trip(_nest(text), loader)


@pytest.mark.parametrize("loader", LOADERS.values(), ids=LOADERS.keys())
def test_all_tricky_strings_together_round_trip(loader: Loader) -> None:
    data = {"values": TRICKY_STRINGS, "byKey": {text: text for text in TRICKY_STRINGS},
            "deep": [[{"x": [text]}] for text in TRICKY_STRINGS]}

    _assert_round_trip(data, loader)


@pytest.mark.parametrize("loader", LOADERS.values(), ids=LOADERS.keys())
@pytest.mark.parametrize("text", LINE_BREAK_AND_FORBIDDEN)
def test_line_break_and_forbidden_characters_are_escaped(text: str, loader: Loader) -> None:
    _assert_round_trip(_nest(text), loader)


SCALARS: list[Any] = [0, 7, -12, 10**30, 1.5, -0.25, 0.1, 3.0, 123456.789, math.inf, -math.inf, True, False, None]


@pytest.mark.parametrize("loader", LOADERS.values(), ids=LOADERS.keys())
def test_numbers_booleans_and_null_keep_their_type(loader: Loader) -> None:
    data = {"scalars": SCALARS, "byName": {repr(value): value for value in SCALARS}}

    _assert_round_trip(data, loader)


@pytest.mark.parametrize("value", [1e-05, 1e16, 3e-07, 1e300])
def test_exponent_floats_stay_floats_for_yaml_1_1_readers(value: float) -> None:
    _assert_round_trip({"value": value}, _pyyaml_yaml_1_1)


def test_dump_is_byte_identical_across_calls_and_keeps_insertion_order() -> None:
    data = {"zeta": 1, "alpha": {"ys": [3, 2, 1], "b": "text", "a": {}}, "mid": ["z", "a"]}

    first = yamlio.dump(data)

    assert first == yamlio.dump(data)
    assert first == yamlio.dump(json.loads(json.dumps(data)))
    assert list(_own(first)) == ["zeta", "alpha", "mid"]
    assert list(_own(first)["alpha"]) == ["ys", "b", "a"]
    assert first == (
        "zeta: 1\n"
        "alpha:\n"
        "  ys:\n"
        "    - 3\n"
        "    - 2\n"
        "    - 1\n"
        "  b: text\n"
        "  a: {}\n"
        "mid:\n"
        "  - z\n"
        "  - a\n"
    )


def test_plain_strings_stay_unquoted() -> None:
    assert yamlio.dump({"name": "gpu-operator", "source": "https://helm.ngc.nvidia.com/nvidia"}) == (
        "name: gpu-operator\nsource: https://helm.ngc.nvidia.com/nvidia\n")


def test_multi_line_strings_use_literal_blocks() -> None:
    assert yamlio.dump({"script": "set -e\necho hi\n"}) == "script: |\n  set -e\n  echo hi\n"


def test_dump_json_is_stable_ordered_and_ends_with_a_newline() -> None:
    data = {"z": 1, "a": ["é", {"y": None, "b": True}]}

    text = yamlio.dump_json(data)

    assert text == yamlio.dump_json(data)
    assert text.endswith("}\n")
    assert not text.endswith("\n\n")
    assert "é" in text
    assert list(json.loads(text)) == ["z", "a"]
    assert text.startswith('{\n  "z": 1,\n')


# ------------------------------------------------------------------ the same values as the reference reader

ROOT = Path(__file__).resolve().parents[1]
SHARED_CATALOG = ROOT.parent / "shared" / "reference" / "aicr" / "recipes"


def _catalog_files() -> list[Path]:
    files = sorted((ROOT / "overlays").rglob("*.yaml"))
    if SHARED_CATALOG.is_dir():
        files += sorted(SHARED_CATALOG.rglob("*.yaml"))
    return files


def test_every_catalog_file_loads_to_what_ruamel_yaml_1_2_reads() -> None:
    files = _catalog_files()
    assert len(files) > 20
    ruamel = YAML(typ="safe")
    for path in files:
        text = path.read_text(encoding="utf-8")
        try:
            ours = yamlio.load_bytes(text.encode(), str(path)).data
        except InvalidInputError:
            continue  # refused for a documented reason (e.g. a multi-document file): not a typing question
        assert json.dumps(ours) == json.dumps(ruamel.load(text), default=str), path


SCALAR_CORPUS = ["12", "-3", "+7", "012", "09", "0o17", "0x1F", "0b101", "1_000", "_1", "1.5", "1.10", "1e3",
                 "1E-3", ".5", "5.", "-.inf", ".NaN", "~", "null", "NULL", "", "true", "TRUE", "yes", "on", "y",
                 "2001-12-14", "12:30:00", "1:20", "v1.2", "'012'", '"true"', "!!str 5", "! 5", "!!int '7'",
                 "[1, '2', {a: 3}]", "{b: [~, false]}", "|\n  block\n", ">-\n  folded\n  text\n"]


def test_without_libyaml_the_pure_python_parser_reads_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [f"value: {scalar}\n" for scalar in SCALAR_CORPUS] + [_billion_laughs(1)]
    bad = ["kind: x\nspec:\n  a: [1,\n", "a: 1\n---\nb: 2\n", "a: *missing\n", "a: &x 1\nb: &x 2\n"]
    monkeypatch.setitem(sys.modules, "yaml_rs", None)
    fast = [json.dumps(load(text)) for text in texts]
    fast_errors = [rejection(text).split(": invalid YAML")[0] for text in bad]
    monkeypatch.setitem(sys.modules, "yaml._yaml", None)
    loading.composer_class.cache_clear()
    try:
        assert "CParser" not in {base.__name__ for base in loading.composer_class().__mro__}
        assert [json.dumps(load(text)) for text in texts] == fast
        assert [rejection(text).split(": invalid YAML")[0] for text in bad] == fast_errors
    finally:
        loading.composer_class.cache_clear()


REFUSED = ["a: !!int x\n", "a: !custom 1\n", "a: !!set {b: c}\n", "<<: {a: 1}\n", "? [a]\n: 1\n", "a: 1\na: 2\n",
           "a: =\n", _billion_laughs(), "a:\n" + "".join(f"{'  ' * i}- \n" for i in range(1, 110))]


@pytest.mark.parametrize("text", REFUSED)
def test_what_the_precise_build_refuses_the_quick_one_hands_back(text: str) -> None:
    node = loading._compose(text, "x.yaml")

    with pytest.raises(InvalidInputError):
        loading._Builder("x.yaml").build(node, ())
    with pytest.raises(loading._Retry):
        loading._quick_build(node)


def test_the_quick_build_reads_every_catalog_file_like_the_precise_one() -> None:
    texts = [path.read_text(encoding="utf-8") for path in _catalog_files()]
    texts += [f"value: {scalar}\n" for scalar in SCALAR_CORPUS]
    for text in texts:
        try:
            node = loading._compose(text, "x.yaml")
            precise = loading._Builder("x.yaml")
            data = precise.build(node, ())
        except InvalidInputError:
            continue
        assert json.dumps(loading._quick_build(node)) == json.dumps(data)
        assert dict(yamlio.load_text(text, "x.yaml").lines) == precise.lines


def _libyaml(text: str) -> Any:
    return loading._quick_build(loading._compose(text, "x.yaml"))


SYNTAX_ERRORS = ["kind: x\nspec:\n  a: [1,\n", "kind: x\nspec: a: b\n", "kind: x\n\tname: y\n",
                 'kind: x\nname: "\\q"\n',
                 "a: 1\n---\nb: 2\n", "a: &x 1\nb: &x 2\nc: *x\n", "a: b\u2028c\n", "a: \x07\n", "a: b\x85c\n",
                 "a: *nope\n", "", "# only a comment\n", "- a\n- b\n", "just text\n"]


@pytest.mark.parametrize("text", REFUSED + SYNTAX_ERRORS)
def test_yaml_rs_hands_to_libyaml_what_libyaml_refuses_or_reads_otherwise(text: str) -> None:
    assert fast.load(text) is None


EDGE_SCALARS = ["0X1F", "-0O17", "0B1", "=", "<<", "[a:]", "[:x]", "[?]", "?", "a: [b]", "{a: b}", "'a' b", '"a" b',
                "a #b", "a# b", "-", "--", "- -", "a:", "a::b", "*a", "&a b", "%x", "@x"]


def test_yaml_rs_reads_what_libyaml_reads_or_hands_it_over() -> None:
    pytest.importorskip("yaml_rs")
    scalars = SCALAR_CORPUS + TRICKY_STRINGS + EDGE_SCALARS
    texts = [path.read_text(encoding="utf-8") for path in _catalog_files()]
    for scalar in scalars:
        texts += [f"value: {scalar}\n", f"{scalar}: value\n", f"- {scalar}\n", f"a: [{scalar}]\n",
                  f"a:\n  - {scalar}\n  - b: {scalar}\n"]
    texts += [yamlio.dump(_nest(text)) for text in TRICKY_STRINGS + LINE_BREAK_AND_FORBIDDEN]
    read = 0
    for text in texts:
        quick = fast.load(text)
        if quick is None:
            continue
        read += 1
        assert json.dumps(quick) == json.dumps(_libyaml(text)), text
    assert read > len(texts) // 3


def test_quoted_typed_strings_are_what_json_writes() -> None:
    from aicr_gen.yaml.dump import _quote

    for text in ["24.04", "yes", "No", "on", "1e3", "0x1F", "012", "-1", ".inf", "null", "12:30", "1_000", "1é",
                 "2 b", "true"]:  # strings another reader would type: double-quoted
        assert _quote(text) == json.dumps(text, ensure_ascii=False), text
    assert _quote('1"') == json.dumps('1"') and _quote("1\\") == json.dumps("1\\")


@pytest.mark.parametrize("text", ["+_", "._", "._9", "_x"])
def test_number_like_strings_survive_a_round_trip(text: str) -> None:
    dumped = yamlio.dump({"value": text, "items": [text]})

    assert yamlio.load_bytes(dumped.encode(), "dumped.yaml").data == {"value": text, "items": [text]}
    assert pyyaml.safe_load(dumped) == {"value": text, "items": [text]}


YAML_LIBRARIES = {"yaml", "ruamel", "yaml_rs"}


def _imports(path: Path) -> list[tuple[int, str, int]]:
    """``(line, module, level)`` of every import in ``path``."""
    found: list[tuple[int, str, int]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, 0) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            found.append((node.lineno, node.module or "", node.level))
    return found


def test_only_the_yaml_package_imports_a_yaml_library() -> None:
    package = ROOT / "aicr_gen"
    offenders = [f"{path.relative_to(ROOT)}:{line}: {module}"
                 for path in sorted(package.rglob("*.py")) if package / "yaml" not in path.parents
                 for line, module, level in _imports(path)
                 if level == 0 and module.partition(".")[0] in YAML_LIBRARIES]
    assert offenders == []


def test_aicr_gen_imports_absolutely_so_its_yaml_package_never_shadows_pyyaml() -> None:
    package = ROOT / "aicr_gen"
    relative = [f"{path.relative_to(ROOT)}:{line}" for path in sorted(package.rglob("*.py"))
                for line, _module, level in _imports(path) if level]
    assert relative == []


def _ruamel_stream(text: str, source: str) -> list[yamlio.Document]:
    """The stream as aicr-gen cut it with ruamel.yaml's parser (libyaml 0.1.7) before PyYAML's event API."""
    from ruamel.yaml.error import MarkedYAMLError
    from ruamel.yaml.events import DocumentEndEvent, DocumentStartEvent, ScalarEvent

    pieces: list[str] = []
    start: Any = None
    content: list[Any] = []
    try:
        for event in YAML(typ="safe", pure=False).parse(text):
            if isinstance(event, DocumentStartEvent):
                start, content = event.end_mark, []
            elif isinstance(event, DocumentEndEvent):
                empty = (len(content) == 1 and isinstance(content[0], ScalarEvent) and content[0].value == ""
                         and content[0].tag is None and not content[0].style)
                if not empty:
                    pieces.append("\n" * start.line + " " * start.column + text[start.index:event.start_mark.index])
            elif len(content) < 2:
                content.append(event)
    except MarkedYAMLError as err:
        mark = err.problem_mark or err.context_mark
        raise InvalidInputError(f"{source}:{mark.line + 1 if mark else 1}: invalid YAML: "
                                f"{err.problem or err.context or 'not YAML'}") from None
    return [yamlio.load_text(piece, source) for piece in pieces]


STREAMS = [
    "a: 1\n---\nb: 2\n", "---\na: 1\n...\n---\nb: 2\n...\n", "a: 1\n---\n\n---\nb: 2\n",
    "--- |\n  x\n  --- not a marker\n---\nk: v\n", "a: |\n  line\n  ---\n  more\n---\nb: 1\n",
    "# comment\n---\n# only a comment\n---\na: 1 # trailing\n", "a: 1\r\n---\r\nb: 2\r\n", "a: 1\r---\rb: 2\r",
    "\ufeffa: 1\n---\nb: 2\n", "---\n---\n---\n", "--- ''\n---\na: 1\n", "--- !!null\n---\na: 1\n",
    "--- ~\n--- null\n", "a: é\n---\nb: 日本語 🎉\n---\nc: 3\n", "---   a: 1\n", "--- {a: 1, b: [1, 2]}\n--- [x, y]\n",
    "a: 1\n---\nb: [1, 2\n", "a: 1\n---\n  b: 1\n c: 2\n", "a: 1\n...\nb: 2\n",
    "%YAML 1.1\n---\na: 1\n...\n%YAML 1.1\n---\nb: 2\n", "%YAML 1.2\n---\na: 1\n",
    "%TAG !e! tag:example.com,2000:\n---\na: !e!foo 1\n", "a: 1\n--- &x\nb: *x\n", "a: 1\n---\n\"unterminated\n",
    "- a\n---\n- b\n", "a: 1\n--- # c\nb: 2\n... # end\n", "---\n\t\na: 1\n", "a:\tb\n---\nc: d\n",
    "key: value\n---\n...\n---\n", "", "\n\n", "...\n", "---\n...\n...\n", "a: 1\n---\nb: 2",
    "a: 1\n---\n? complex\n: value\n", "a: 1\n--- >\n  folded\n  text\n\n---\nz: 1\n",
    "a: 'multi\n  line'\n---\nb: 1\n",
    "---\na: 1\n--- \nb: 2\n---\t\nc: 3\n", "a: 1\n---\na: 2\na: 3\n", "a: 1\n---\nb: !!binary aGk=\n",
]
# libyaml 0.2 reads a colon or question mark inside a flow collection's plain scalar, as a file of one document
# always did; ruamel.yaml.clib's libyaml 0.1.7 refused it in a stream
NEWER_LIBYAML = ["a: {b: c:d}\n---\nx: 1\n", "a: [b?c, d]\n---\nx: 1\n"]


def _stream_outcome(load: Callable[[str, str], list[yamlio.Document]], text: str) -> Any:
    try:
        return [(json.dumps(doc.data), dict(doc.lines)) for doc in load(text, "rules.yaml")]
    except InvalidInputError as err:
        return str(err)


def _repository_streams() -> list[str]:
    texts = [path.read_text(encoding="utf-8") for folder in ("examples", "overlays", "policies", "tests/fixtures")
             for path in sorted((ROOT / folder).rglob("*.y*ml"))]
    return [text for text in texts if "\n---" in text or text.startswith("---")]


def test_a_stream_is_cut_as_ruamel_cut_it() -> None:
    texts = STREAMS + _repository_streams()
    assert len(texts) > len(STREAMS)
    for text in texts:
        assert _stream_outcome(yamlio.load_stream, text) == _stream_outcome(_ruamel_stream, text), repr(text)


@pytest.mark.parametrize("text", NEWER_LIBYAML)
def test_a_stream_reads_what_a_single_document_reads(text: str) -> None:
    assert "invalid YAML" in _stream_outcome(_ruamel_stream, text)
    first = yamlio.load_text(text.partition("---")[0], "rules.yaml").data
    assert [doc.data for doc in yamlio.load_stream(text, "rules.yaml")] == [first, {"x": 1}]
