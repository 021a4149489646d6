"""The fast paths decide exactly as the slow ones they stand in for.

* ``validate_snapshot`` checks documents in plain Python and asks the pydantic model only when that check cannot
  decide: over a corpus of valid snapshots and thousands of broken variants, it returns the same data or refuses
  with the same message as the model (YAML documents, and JSON text through the JSON fast path);
* ``diff`` compares the flat readings key by key: it reports what ``DeepDiff(..., ignore_order=True)`` reported;
* item keys built in C equal the ``k=v`` formula for every kind of context.
"""

from __future__ import annotations

import copy
import functools
import json
import math
import os
import random
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.drift import diff
from aicr_gen.drift import snapshot as snap
from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import check
from aicr_gen.yaml import Document, load_text
from tests.conftest import REFERENCE

ROOT = Path(__file__).resolve().parent.parent
MOCK = REFERENCE / "aicr" / "tests" / "chainsaw" / "cli" / "cuj1-training" / "mock-snapshot.yaml"
SEEDS = [ROOT / "snapshots" / "example-live.yaml", ROOT / "snapshots" / "golden-baseline.yaml"]

REPLACEMENTS: list[Any] = [None, "", "x", "Snapshot", "aicr.run/v1alpha2", 0, 1, -7, 2**70, 1.5, math.nan, math.inf,
                           True, False, [], [1], ["a", None], {}, {"k": "v"}, {"k": 1}, {"k": None}, {"k": [1]},
                           {"k": {"a": 1}}, {"subtype": "s"}, {"type": "T", "subtypes": []},
                           {"context": {"n": "a"}, "data": {"v": 1}}, [{"context": {"n": "a"}}]]
"""What a mutation writes in place of a value: every type a loader builds, and values some fields want."""

ITEMS = """\
kind: Snapshot
metadata: {timestamp: "2026-01-01T00:00:00Z", nested: {a: [1, null, {b: ~}]}}
fingerprint: {service: {value: eks, source: K8s.server}}
measurements:
- type: K8s
  subtypes:
  - subtype: image
    context: {source: pods, count: 2}
    items:
    - context: {name: img0, namespace: ns0}
      data: {tag: v0.0, size: 12, pinned: true, ratio: .5, big: 123456789012345678901234567890}
    - context: {name: img1}
      data: {tag: v1.0}
    - data: {tag: untagged}
    - context: {name: img2}
- type: NetworkTopology
  subtypes:
  - subtype: nic
    items:
    - {context: {pf: "0"}, data: {speed: 400}}
- type: NetworkTopology
  subtypes:
  - {subtype: nic, data: {count: 1}}
  - {subtype: rail}
"""
"""A snapshot with what the reference ones lack: items, a subtype context, a fingerprint, a repeated
multi-instance type."""


def _seeds() -> list[Document]:
    seeds = [load_text(path.read_text(encoding="utf-8"), path.name) for path in SEEDS]
    seeds.append(load_text(ITEMS, "items.yaml"))
    if MOCK.is_file():
        seeds.append(load_text(MOCK.read_text(encoding="utf-8"), MOCK.name))
    return seeds


def _containers(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    """Every mapping and list in ``value`` with its path, outermost first."""
    if isinstance(value, dict | list):
        yield path, value
        for key, child in (value.items() if isinstance(value, dict) else enumerate(value)):
            yield from _containers(child, (*path, key))


def _at(data: Any, path: tuple[Any, ...]) -> Any:
    for part in path:
        data = data[part]
    return data


def _edits(data: dict[str, Any]) -> list[tuple[tuple[Any, ...], str, Any, Any]]:
    """Every one-step edit of ``data``: ``(container path, what, key, value)``: a value replaced, a key dropped,
    an unknown (or optional) key added, an entry of a list repeated (a repeated measurement type or subtype)."""
    edits: list[tuple[tuple[Any, ...], str, Any, Any]] = []
    for path, container in _containers(data):
        keys = list(container) if isinstance(container, dict) else range(len(container))
        for key in keys:
            edits += [(path, "set", key, value) for value in REPLACEMENTS]
            edits.append((path, "drop", key, None))
        if isinstance(container, dict):
            edits += [(path, "set", key, value) for key in ADDED_KEYS if key not in container
                      for value in ADDED_VALUES]
        else:
            edits += [(path, "repeat", index, None) for index in keys]
    return edits


ADDED_KEYS = ("extra", "name", "kind", "apiVersion", "metadata", "data", "context", "items", "subtype", "type")
ADDED_VALUES: list[Any] = [None, "x", 1, {}, [], {"k": "v"}]


def _variants(data: dict[str, Any], rng: random.Random, limit: int) -> Iterator[dict[str, Any]]:
    """Copies of ``data`` with one edit each: all of them, or ``limit`` drawn at random from a large document."""
    edits = _edits(data)
    for path, what, key, value in edits if len(edits) <= limit else rng.sample(edits, limit):
        out = copy.deepcopy(data)
        target = _at(out, path)
        if what == "drop":
            del target[key]
        elif what == "repeat":
            target.append(copy.deepcopy(target[key]))
        else:
            target[key] = copy.deepcopy(value)
        yield out


def _by_model(doc: Document) -> dict[str, Any]:
    """What ``validate_snapshot`` did before it had a fast path: the pydantic model, then the repeat checks."""
    data: dict[str, Any] = check(doc, snap.Snapshot).model_dump(exclude_none=True)
    return snap._check_repeats(doc, data)


def _outcome(validate: Any, doc: Document) -> tuple[str, str]:
    """The data (repr: NaN equals itself there) or the message."""
    try:
        return "ok", repr(validate(doc))
    except InvalidInputError as err:
        return "refused", str(err)


def test_fast_check_decides_every_variant_like_the_model() -> None:
    rng = random.Random(12)
    seen = {"ok": 0, "refused": 0}
    for seed in _seeds():
        for data in [seed.data, *_variants(seed.data, rng, 4000)]:
            doc = Document(source=seed.source, data=data, lines=seed.lines)
            expected = _outcome(_by_model, doc)
            assert _outcome(snap.validate_snapshot, doc) == expected, data
            seen[expected[0]] += 1
            try:
                fast = snap._fast_snapshot(data)
            except snap._Fallback:
                continue
            # what the fast check accepts, the model accepts with the same data
            assert _outcome(functools.partial(snap._check_repeats, data=fast), doc) == expected
    assert min(seen.values()) > 500  # the corpus holds plenty of both


def test_json_fast_path_refuses_with_the_yaml_loaders_message() -> None:
    rng = random.Random(34)
    for seed in _seeds():
        for data in [seed.data, *_variants(seed.data, rng, 400)]:
            text = json.dumps(data, indent=rng.choice([None, 2]))  # NaN/Infinity tokens: not JSON, YAML decides
            source = f"{seed.source}.json"
            expected = _outcome(_by_model, load_text(text, source))
            assert _outcome(snap.validate_snapshot, snap._parse(text.encode(), source)) == expected, text


SUBTYPE = '{"measurements": [{"type": "K8s", "subtypes": [{"subtype": "a", "data": %s}]}]}'
HOSTILE_JSON = {
    "duplicate key": '{"measurements": [], "measurements": []}',
    "duplicate nested key": SUBTYPE % '{"k": 1, "k": 2}',
    "NaN": SUBTYPE % '{"k": NaN}',
    "too deep": '{"measurements": [], "metadata": ' + '{"a": ' * 120 + "1" + "}" * 121,
    "too many nodes": '{"measurements": [], "metadata": {"a": [' + ",".join(["1"] * 200_001) + "]}}",
    "repeated type": '{"measurements": [{"type": "K8s", "subtypes": []}, {"type": "K8s", "subtypes": []}]}',
    "bad reading": SUBTYPE % '{"k": [1]}',
    "huge int": SUBTYPE % ('{"k": 1' + "0" * 5000 + "}"),
}


@pytest.mark.parametrize("text", list(HOSTILE_JSON.values()), ids=list(HOSTILE_JSON))
def test_hostile_json_is_refused_like_yaml(text: str) -> None:
    def by_yaml() -> tuple[str, str]:
        try:
            return _outcome(_by_model, load_text(text, "s.json"))
        except InvalidInputError as err:
            return "refused", str(err)

    def by_fast_path() -> tuple[str, str]:
        try:
            return _outcome(snap.validate_snapshot, snap._parse(text.encode(), "s.json"))
        except InvalidInputError as err:
            return "refused", str(err)

    assert by_fast_path() == by_yaml()


def test_valid_snapshots_never_need_the_model() -> None:
    for seed in _seeds():
        assert snap.validate_snapshot(seed) == _by_model(seed)
        snap._fast_snapshot(seed.data)  # no _Fallback


def test_diff_and_validate_import_neither_pydantic_nor_deepdiff(tmp_path: Path) -> None:
    baseline, target = SEEDS
    code = ("import sys\n"
            "from aicr_gen.drift import diff, snapshot\n"
            f"old = snapshot.load_snapshot({str(baseline)!r})\n"
            f"new = snapshot.load_snapshot({str(target)!r})\n"
            "assert diff.diff_snapshots(old, new)['changes']\n"
            "print(sorted({name.split('.')[0] for name in sys.modules} & {'pydantic', 'deepdiff'}))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    assert out.stdout.strip() == "[]"


# ---------------------------------------------------------------- diff: key by key, as DeepDiff reported


def _by_deepdiff(left: dict[str, Any], right: dict[str, Any]) -> list[dict[str, Any]]:
    """The change list as ``compare`` built it from DeepDiff's tree before (the oracle)."""
    from deepdiff import DeepDiff

    tree = DeepDiff(left, right, ignore_order=True, view="tree", threshold_to_diff_deeper=0)
    changes = [diff.change("removed", level.path(output_format="list")[0], baseline=level.t1)
               for level in tree.get("dictionary_item_removed", ())]
    changes += [diff.change("added", level.path(output_format="list")[0], target=level.t2)
                for level in tree.get("dictionary_item_added", ())]
    changes += [diff.change("modified", level.path(output_format="list")[0], baseline=level.t1, target=level.t2)
                for report in ("values_changed", "type_changes") for level in tree.get(report, ())]
    return diff.sort(changes)


READINGS: list[Any] = [None, "", "1", "true", "a\nb", 0, 1, 2, 1.0, 0.0, -0.0, 2**70, True, False, math.inf, math.nan,
                       float("nan")]


def test_key_by_key_comparison_reports_what_deepdiff_reported() -> None:
    pytest.importorskip("deepdiff")
    rng = random.Random(56)
    for _ in range(400):
        keys = [f"K8s.s.k{index}" for index in range(rng.randrange(12))]
        left = {key: rng.choice(READINGS) for key in keys if rng.random() < 0.8}
        right = {key: rng.choice(READINGS) for key in keys if rng.random() < 0.8}
        for key in left.keys() & right.keys():
            if rng.random() < 0.3:
                right[key] = left[key]  # the same object on both sides (a shared NaN is equal to itself)
        assert diff.sort(diff._changes(left, right)) == _by_deepdiff(left, right)


def test_key_by_key_comparison_reports_paths_deepdiff_skipped() -> None:
    """DeepDiff drops keys starting with ``__`` (``ignore_private_variables``); a measurement type so named still
    drifts."""
    changes = diff.compare({"__T.s.k": "1"}, {"__T.s.k": "2"})
    assert changes == [diff.change("modified", "__T.s.k", baseline="1", target="2")]


# ---------------------------------------------------------------- item keys


def _key_formula(context: Any) -> str:
    if not isinstance(context, dict):
        return ""
    return ",".join([f"{key}={diff._text(context[key])}" for key in sorted(context, key=str)])


def test_item_keys_match_the_formula_for_every_context() -> None:
    rng = random.Random(78)
    parts: list[Any] = ["a", "b", "name", "z=1", "a,b", "", "é", 1, 10, 2.5, True, None]
    for _ in range(2000):
        context = {rng.choice(parts): rng.choice(parts) for _ in range(rng.randrange(5))}
        assert diff.item_key(context) == _key_formula(context), context
    for other in (None, "text", ["a"], 3):
        assert diff.item_key(other) == ""


def test_repeated_contexts_are_numbered_in_order() -> None:
    sub = {"items": [{"context": {"n": "a"}, "data": {"v": 1}}, {"context": {"n": "b"}, "data": {"v": 2}},
                     {"context": {"n": "a"}, "data": {"v": 3}}, "not an item", {"data": {"v": 4}},
                     {"context": {"n": "a"}}]}
    assert diff._items(sub) == [("n=a", {"v": 1}), ("n=b", {"v": 2}), ("n=a#2", {"v": 3}), ("", {"v": 4}),
                                ("n=a#3", None)]


def test_node_lists_compared_in_place_split_like_a_fresh_split() -> None:
    rng = random.Random(90)
    lists = ["", "n1", "n1,n2", "n2", "1,n2", "n1,,n2", ",", "x|n2"]
    values = ["", "v", "NoSchedule|v", "a|"]
    nodes = diff._NodeSets()
    for _ in range(3000):
        raw = f"{rng.choice(values)}|{rng.choice(lists)}"
        assert nodes.unpack(diff._Encoded(raw)) == diff._Encoded(raw).split(), raw


# ---------------------------------------------------------------- start-up trims: what stands in for a stdlib call


def _plain_tree(rng: random.Random, depth: int = 0) -> Any:
    pick = rng.random()
    if depth < 4 and pick < 0.3:
        return {f"k{i}": _plain_tree(rng, depth + 1) for i in range(rng.randrange(4))}
    if depth < 4 and pick < 0.5:
        return [_plain_tree(rng, depth + 1) for _ in range(rng.randrange(4))]
    return rng.choice([None, True, False, 0, -3, 2**70, 1.5, math.inf, "", "x", "24.04", (1, [2])])


def test_copy_tree_copies_like_deepcopy() -> None:
    from aicr_gen.resolve.merge import copy_tree

    rng = random.Random(7)
    for _ in range(500):
        tree = _plain_tree(rng)
        copied = copy_tree(tree)
        assert copied == copy.deepcopy(tree)
        pending = [(tree, copied)]
        while pending:  # no container of the original is shared with the copy
            left, right = pending.pop()
            if isinstance(left, dict | list | tuple) and left:
                assert left is not right
                pending.extend(zip(left.values(), right.values(), strict=True) if isinstance(left, dict)
                               else zip(left, right, strict=True))
    shared = ["a"]
    copied = copy_tree({"x": shared, "y": shared})
    copied["x"].append("b")
    assert copied["y"] == ["a"] and shared == ["a"]


def test_quoted_typed_strings_are_what_json_writes() -> None:
    from aicr_gen.yaml.dump import _quote

    for text in ["24.04", "yes", "No", "on", "1e3", "0x1F", "012", "-1", ".inf", "null", "12:30", "1_000", "1é",
                 "2 b", "true"]:  # strings another reader would type: double-quoted
        assert _quote(text) == json.dumps(text, ensure_ascii=False), text
    assert _quote('1"') == json.dumps('1"') and _quote("1\\") == json.dumps("1\\")


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-5", "40", "200"])
def test_help_width_is_the_one_shutil_finds(columns: str | None) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    code = ("import shutil\nfrom aicr_gen import cli_parser\n"
            "print(cli_parser._terminal_width(), shutil.get_terminal_size().columns - 2)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    ours, theirs = out.stdout.split()
    assert ours == theirs


def _modules_after(args: list[str], tmp_path: Path) -> set[str]:
    """The top-level modules a second run of ``aicr-gen ARGS`` imports (the first fills the cache)."""
    code = ("import sys\nfrom aicr_gen.cli.main import main\n"
            f"code = main({args!r})\n"
            "print(' '.join(sorted({name.split('.')[0] for name in sys.modules})))\n")
    env = {**os.environ, "AICR_GEN_CACHE_DIR": str(tmp_path / "cache")}
    for _ in range(2):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env,
                             check=False)
    assert out.stdout, out.stderr
    return set(out.stdout.split())


def test_validate_of_an_unchanged_snapshot_and_recipe_imports_little(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([sys.executable, "-m", "aicr_gen", "recipe", "--service", "eks", "--accelerator", "h100",
                    "--os", "ubuntu", "--intent", "training", "-o", str(recipe)], check=True, cwd=ROOT,
                   env={**os.environ, "AICR_GEN_CACHE_DIR": "off"})
    loaded = _modules_after(["validate", "--recipe", str(recipe), "--snapshot", str(SEEDS[0])], tmp_path)
    assert loaded & {"yaml_rs", "yaml", "ruamel", "pydantic", "json", "hashlib", "shutil", "copy"} == set()


def test_an_unchanged_flux_bundle_imports_no_copy_json_or_shutil(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([sys.executable, "-m", "aicr_gen", "recipe", "--service", "eks", "--accelerator", "h100",
                    "--os", "ubuntu", "--intent", "training", "-o", str(recipe)], check=True, cwd=ROOT,
                   env={**os.environ, "AICR_GEN_CACHE_DIR": "off"})
    loaded = _modules_after(["bundle", "--recipe", str(recipe), "--deployer", "flux", "-o", str(tmp_path / "out"),
                             "--repo", "https://git.example.com/gitops.git", "--force"], tmp_path)
    assert loaded & {"yaml_rs", "yaml", "ruamel", "pydantic", "json", "shutil", "copy", "tempfile"} == set()


def test_a_snapshot_file_is_validated_once_per_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path / "cache"))
    copy_of = tmp_path / "snapshot.yaml"
    copy_of.write_bytes(SEEDS[0].read_bytes())
    first = snap.load_snapshot(str(copy_of))

    def no_parse(raw: bytes, source: str) -> Any:
        raise AssertionError("parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(snap, "_parse", no_parse)
        assert snap.load_snapshot(str(copy_of)) == first
    copy_of.write_bytes(SEEDS[1].read_bytes())
    assert snap.load_snapshot(str(copy_of)) == snap.load_snapshot(str(SEEDS[1])) != first
    copy_of.write_text("measurements: [1]\n")
    for _ in range(2):  # a refused document is refused every time: nothing of it is cached
        with pytest.raises(InvalidInputError, match=r"snapshot.yaml:1"):
            snap.load_snapshot(str(copy_of))
    copy_of.write_bytes(SEEDS[0].read_bytes())
    monkeypatch.setattr(snap, "CACHED_BYTES", len(SEEDS[0].read_bytes()) - 1)
    assert snap.load_snapshot(str(copy_of)) == first
    with monkeypatch.context() as patched:  # over the bound: read again, however often
        patched.setattr(snap, "_parse", no_parse)
        with pytest.raises(AssertionError, match="parsed again"):
            snap.load_snapshot(str(copy_of))
