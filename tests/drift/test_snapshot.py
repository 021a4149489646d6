"""Loading AICR snapshots: files (YAML, JSON, gzip) and stdin (tests/cluster/test_cm_snapshots.py reads cm://);
``validate_snapshot`` checks documents in plain Python and asks the pydantic model only when that check cannot
decide: over a corpus of valid snapshots and thousands of broken variants, it returns the same data or refuses with
the same message as the model (YAML documents, and JSON text through the JSON fast path)."""

from __future__ import annotations

import copy
import functools
import gzip
import io
import json
import math
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.drift import load as snapshot_load
from aicr_gen.drift import snapshot as snap
from aicr_gen.drift.load import load_document, load_snapshot
from aicr_gen.drift.snapshot import is_recipe
from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import check
from aicr_gen.yaml import Document, dump, load_text
from tests.conftest import REFERENCE
from tests.kubeapi import subtype_data

ROOT = Path(__file__).resolve().parents[2]
KUBE = Path(__file__).parents[1] / "fixtures" / "kube"
MOCK = REFERENCE / "aicr" / "tests" / "chainsaw" / "cli" / "cuj1-training" / "mock-snapshot.yaml"
SEEDS = [ROOT / "snapshots" / "example-live.yaml", ROOT / "snapshots" / "golden-baseline.yaml"]


def mock_text() -> str:
    """AICR's CUJ1 mock snapshot: the reference file, else the copy recorded in the ConfigMap fixture."""
    if MOCK.is_file():
        return MOCK.read_text(encoding="utf-8")
    return str(json.loads((KUBE / "configmap-snapshot.json").read_text())["data"]["snapshot.yaml"])


def assert_cuj1(snapshot: dict[str, Any]) -> None:
    assert "kind" not in snapshot
    assert subtype_data(snapshot, "K8s", "server") == {"version": "v1.33.0"}
    helm = subtype_data(snapshot, "K8s", "helm")
    assert helm["gpu-operator.version"] == "v25.10.1"
    assert helm["aws-ebs-csi-driver.version"] == "2.55.0"
    assert subtype_data(snapshot, "OS", "release") == {"ID": "ubuntu", "VERSION_ID": "24.04"}
    assert subtype_data(snapshot, "OS", "sysctl")["/proc/sys/kernel/osrelease"] == "6.8.0-1015-aws"


# ---------------------------------------------------------------- files and stdin


def test_aicr_mock_snapshot_without_kind_loads_as_is(tmp_path: Path) -> None:
    path = tmp_path / "mock-snapshot.yaml"
    path.write_text(mock_text(), encoding="utf-8")
    assert_cuj1(load_snapshot(str(path)))


def test_json_and_gzip_variants_load_the_same(tmp_path: Path) -> None:
    source = tmp_path / "mock.yaml"
    source.write_text(mock_text(), encoding="utf-8")
    expected = load_snapshot(str(source))
    as_json = tmp_path / "mock.json"
    as_json.write_text(json.dumps(expected), encoding="utf-8")
    zipped_yaml = tmp_path / "mock.yaml.gz"
    zipped_yaml.write_bytes(gzip.compress(source.read_bytes()))
    zipped_json = tmp_path / "mock.json.gz"
    zipped_json.write_bytes(gzip.compress(as_json.read_bytes()))
    for variant in (as_json, zipped_yaml, zipped_json):
        assert load_snapshot(str(variant)) == expected


def test_stdin() -> None:
    assert_cuj1(load_snapshot("-", stdin=io.BytesIO(mock_text().encode())))


def test_example_and_golden_snapshots_load() -> None:
    live = load_snapshot(str(ROOT / "snapshots" / "example-live.yaml"))
    golden = load_snapshot(str(ROOT / "snapshots" / "golden-baseline.yaml"))
    assert live["kind"] == golden["kind"] == "Snapshot"
    assert subtype_data(live, "GPU", "hardware")["gpu-count"] == 8
    live_helm, golden_helm = subtype_data(live, "K8s", "helm"), subtype_data(golden, "K8s", "helm")
    assert live_helm.keys() == golden_helm.keys()
    assert sorted(k for k in live_helm if live_helm[k] != golden_helm[k]) == [
        "gpu-operator.version", "kube-prometheus-stack.version", "nvsentinel.version"]


def test_load_document_tells_recipe_from_snapshot(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("kind: RecipeResult\napiVersion: aicr.run/v1alpha2\ncomponentRefs: []\n", encoding="utf-8")
    kind, data = load_document(str(recipe))
    assert (kind, data["componentRefs"]) == ("RecipeResult", [])
    assert is_recipe(data) and not is_recipe({"measurements": []}) and not is_recipe([])
    kind, data = load_document(str(ROOT / "snapshots" / "golden-baseline.yaml"))
    assert kind == "Snapshot" and data["apiVersion"] == "aicr.run/v1alpha2"
    with pytest.raises(InvalidInputError, match="is a recipe, not a snapshot"):
        load_snapshot(str(recipe))
    other = tmp_path / "criteria.yaml"
    other.write_text("kind: RecipeCriteria\nmeasurements: []\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"criteria.yaml:1: kind: kind 'RecipeCriteria' is neither"):
        load_document(str(other))


@pytest.mark.parametrize(("text", "message"), [
    ("measurements:\n  - type: K8s\n    subtypes:\n      - subtype: server\n        data: {version: v1\n",
     r"bad.yaml:\d+: invalid YAML"),
    ("measurements:\n  - type: K8s\n    subtypes:\n      - subtype: server\n        data:\n          v: [1]\n",
     r"bad.yaml:6: measurements\[0\].subtypes\[0\].data.v: .*a reading must be a string, number or boolean"),
    ("kind: Snapshot\napiVersion: aicr.run/v1beta1\nmeasurements: []\n",
     r"bad.yaml:2: apiVersion: value 'aicr.run/v1beta1' is not allowed; use one of 'aicr.run/v1' or "
     r"'aicr.run/v1alpha2'"),
    ("measurements:\n  - type: K8s\n    subtypes: []\n    subtype: x\n",
     r"bad.yaml:4: measurements\[0\].subtype: unknown field 'subtype'; did you mean 'subtypes'"),
    ("measurements:\n  - {type: OS, subtypes: []}\n  - {type: OS, subtypes: []}\n",
     r"bad.yaml:3: measurements\[1\].type: measurement type 'OS' repeats"),
    ("measurements:\n  - type: OS\n    subtypes:\n      - subtype: release\n      - subtype: release\n",
     r"bad.yaml:5: measurements\[0\].subtypes\[1\].subtype: subtype 'release' repeats "
     r"measurements\[0\].subtypes\[0\]; merge them$"),
    ("- measurements\n", r"bad.yaml:1: the document root is a list"),
])
def test_malformed_snapshots_are_input_errors_with_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message) as err:
        load_snapshot(str(path))
    assert err.value.exit_code == 2


def test_truncated_and_non_utf8_files(tmp_path: Path) -> None:
    truncated = tmp_path / "cut.json"
    truncated.write_text(json.dumps({"measurements": [{"type": "K8s", "subtypes": []}]}, indent=2)[:-12])
    with pytest.raises(InvalidInputError, match=r"cut.json:\d+: invalid YAML"):
        load_snapshot(str(truncated))
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"measurements:\n  - type: OS\n    subtypes:\n      - subtype: caf\xe9\n")
    with pytest.raises(InvalidInputError, match=r"latin1.yaml:4: not valid UTF-8"):
        load_snapshot(str(latin1))
    cut_gzip = tmp_path / "cut.yaml.gz"
    cut_gzip.write_bytes(gzip.compress(mock_text().encode())[:-40])
    with pytest.raises(InvalidInputError, match=r"cut.yaml.gz:1: gzip data is truncated"):
        load_snapshot(str(cut_gzip))
    with pytest.raises(InvalidInputError, match="file not found"):
        load_snapshot(str(tmp_path / "absent.yaml"))


def test_gzip_bomb_is_bounded(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml.gz"
    bomb.write_bytes(gzip.compress(b" " * (65 * 1024 * 1024), compresslevel=9))
    assert bomb.stat().st_size < 200_000
    with pytest.raises(InvalidInputError, match="expands beyond the 64 MiB snapshot limit"):
        load_snapshot(str(bomb))


def test_ten_thousand_helm_keys_load_fast(tmp_path: Path) -> None:
    helm = {f"component-{i}.version": f"v1.{i}.0" for i in range(10_000)}
    path = tmp_path / "big.yaml"
    path.write_text(dump({"measurements": [{"type": "K8s", "subtypes": [{"subtype": "helm", "data": helm}]}]}))
    start = time.perf_counter()
    snapshot = load_snapshot(str(path))
    assert time.perf_counter() - start < 1.0
    assert len(subtype_data(snapshot, "K8s", "helm")) == 10_000


# ---------------------------------------------------------------- the fast path decides as the model does


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
            assert _outcome(snap.validate_snapshot, snap.parse_bytes(text.encode(), source)) == expected, text


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
            return _outcome(snap.validate_snapshot, snap.parse_bytes(text.encode(), "s.json"))
        except InvalidInputError as err:
            return "refused", str(err)

    assert by_fast_path() == by_yaml()


def test_valid_snapshots_never_need_the_model() -> None:
    for seed in _seeds():
        assert snap.validate_snapshot(seed) == _by_model(seed)
        snap._fast_snapshot(seed.data)  # no _Fallback


def test_a_snapshot_file_is_validated_once_per_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path / "cache"))
    copy_of = tmp_path / "snapshot.yaml"
    copy_of.write_bytes(SEEDS[0].read_bytes())
    first = snapshot_load.load_snapshot(str(copy_of))

    def no_parse(raw: bytes, source: str) -> Any:
        raise AssertionError("parsed again")

    with monkeypatch.context() as patched:
        patched.setattr(snap, "parse_bytes", no_parse)
        assert snapshot_load.load_snapshot(str(copy_of)) == first
    copy_of.write_bytes(SEEDS[1].read_bytes())
    assert snapshot_load.load_snapshot(str(copy_of)) == snapshot_load.load_snapshot(str(SEEDS[1])) != first
    copy_of.write_text("measurements: [1]\n")
    for _ in range(2):  # a refused document is refused every time: nothing of it is cached
        with pytest.raises(InvalidInputError, match=r"snapshot.yaml:1"):
            snapshot_load.load_snapshot(str(copy_of))
    copy_of.write_bytes(SEEDS[0].read_bytes())
    monkeypatch.setattr(snapshot_load, "CACHED_BYTES", len(SEEDS[0].read_bytes()) - 1)
    assert snapshot_load.load_snapshot(str(copy_of)) == first
    with monkeypatch.context() as patched:  # over the bound: read again, however often
        patched.setattr(snap, "parse_bytes", no_parse)
        with pytest.raises(AssertionError, match="parsed again"):
            snapshot_load.load_snapshot(str(copy_of))
