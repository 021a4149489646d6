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
from aicr_gen.yamlio import Document, load_text
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
