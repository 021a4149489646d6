"""Loading AICR snapshots: files (YAML, JSON, gzip) and stdin (tests/cluster/test_cm_snapshots.py reads cm://)."""

from __future__ import annotations

import gzip
import io
import json
import time
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.drift.snapshot import is_recipe, load_document, load_snapshot
from aicr_gen.errors import InvalidInputError
from aicr_gen.yaml import dump
from tests.conftest import REFERENCE
from tests.kubeapi import subtype_data

ROOT = Path(__file__).resolve().parent.parent
KUBE = Path(__file__).parent / "fixtures" / "kube"
MOCK = REFERENCE / "aicr" / "tests" / "chainsaw" / "cli" / "cuj1-training" / "mock-snapshot.yaml"


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
