"""``aicr-gen diff``: snapshot vs snapshot, recipe vs snapshot, reports and exit codes."""

from __future__ import annotations

import copy
import json
import math
import random
import socket
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.drift import diff
from tests.conftest import REFERENCE, needs, needs_reference, run_process

MOCK = REFERENCE / "aicr/tests/chainsaw/cli/cuj1-training/mock-snapshot.yaml"
needs_mock = needs(MOCK)

BASE: dict[str, Any] = {
    "kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2",
    "metadata": {"timestamp": "2026-01-01T00:00:00Z", "source-node": "node-a"},
    "measurements": [
        {"type": "K8s", "subtypes": [
            {"subtype": "helm", "data": {"gpu-operator.chart": "gpu-operator", "gpu-operator.version": "v25.10.1",
                                         "gpu-operator.namespace": "gpu-operator"}},
            {"subtype": "image", "data": {"count": 2},
             "items": [{"context": {"name": "a", "node": "n1"}, "data": {"tag": "1"}},
                       {"context": {"name": "b", "node": "n1"}, "data": {"tag": "2"}}]}]},
        {"type": "NodeTopology", "subtypes": [
            {"subtype": "label", "data": {"nvidia.com/gpu.present": "true|gpu-1,gpu-2",
                                          "zone": "us-east|gpu-1,gpu-2,cpu-1"}}]},
    ],
}


def _write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


def _mock() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(MOCK.read_text())
    return data


def _subtype(snapshot: dict[str, Any], mtype: str, name: str) -> dict[str, Any]:
    for measurement in snapshot["measurements"]:
        if measurement["type"] == mtype:
            for sub in measurement["subtypes"]:
                if sub["subtype"] == name:
                    found: dict[str, Any] = sub
                    return found
    raise KeyError(name)


def _drifted(snapshot: dict[str, Any]) -> dict[str, Any]:
    new = copy.deepcopy(snapshot)
    helm = _subtype(new, "K8s", "helm")["data"]
    helm["gpu-operator.version"] = "v26.3.3"
    for field in ("chart", "version", "namespace"):
        del helm[f"nvsentinel.{field}"]
    helm.update({"nfd.chart": "node-feature-discovery", "nfd.version": "0.19.0", "nfd.namespace": "nfd"})
    _subtype(new, "OS", "sysctl")["data"]["/proc/sys/kernel/osrelease"] = "6.8.0-1020-aws"
    new["metadata"] = {"timestamp": "2026-02-02T00:00:00Z", "source-node": "other"}
    return new


@needs_mock
def test_mock_snapshot_drift_is_exactly_the_changes_made(tmp_path: Path) -> None:
    base = _mock()
    base["metadata"] = {"timestamp": "2026-01-01T00:00:00Z", "source-node": "one"}
    result = diff.diff_snapshots(base, _drifted(base), "a", "b")
    got = [(c["kind"], c["path"], c.get("baseline"), c.get("target")) for c in result["changes"]]
    assert got == [
        ("modified", "K8s.helm.gpu-operator.version", "v25.10.1", "v26.3.3"),
        ("added", "K8s.helm.nfd.chart", None, "node-feature-discovery"),
        ("added", "K8s.helm.nfd.namespace", None, "nfd"),
        ("added", "K8s.helm.nfd.version", None, "0.19.0"),
        ("removed", "K8s.helm.nvsentinel.chart", "nvsentinel", None),
        ("removed", "K8s.helm.nvsentinel.namespace", "nvsentinel", None),
        ("removed", "K8s.helm.nvsentinel.version", "v0.10.0", None),
        ("modified", "OS.sysctl./proc/sys/kernel/osrelease", "6.8.0-1015-aws", "6.8.0-1020-aws"),
    ]
    assert result["summary"] == {"added": 3, "removed": 3, "modified": 2, "total": 8}
    assert set(result) == {"baselineSource", "targetSource", "changes", "summary"}


def test_timestamp_like_keys_are_ignored() -> None:
    new = copy.deepcopy(BASE)
    new["metadata"]["timestamp"] = "2030-01-01T00:00:00Z"
    new["measurements"][0]["subtypes"][0]["data"]["collectedAt"] = "now"
    new["measurements"][0]["subtypes"].append(
        {"subtype": "x", "data": {"/proc/sys/kernel/random/boot_id": "abc"}})
    assert diff.diff_snapshots(BASE, new)["changes"] == []


def test_items_are_matched_by_context_not_position() -> None:
    new = copy.deepcopy(BASE)
    items = new["measurements"][0]["subtypes"][1]["items"]
    items.reverse()
    assert diff.diff_snapshots(BASE, new)["changes"] == []
    items[0]["data"]["tag"] = "3"
    assert diff.diff_snapshots(BASE, new)["changes"] == [
        {"kind": "modified", "severity": "info", "path": "K8s.image.items[name=b,node=n1].data.tag",
         "baseline": "2", "target": "3"}]


def test_nodes_joined_and_left() -> None:
    new = copy.deepcopy(BASE)
    labels = new["measurements"][1]["subtypes"][0]["data"]
    labels["nvidia.com/gpu.present"] = "true|gpu-3,gpu-1"
    labels["zone"] = "us-east|cpu-1,gpu-2,gpu-1"  # same set, other order: no change
    changes = diff.diff_snapshots(BASE, new)["changes"]
    assert [(c["kind"], c["path"]) for c in changes] == [
        ("removed", "NodeTopology.label.nvidia.com/gpu.present[gpu-2]"),
        ("added", "NodeTopology.label.nvidia.com/gpu.present[gpu-3]"),
    ]
    assert diff.gpu_nodes(new) == ["gpu-1", "gpu-3"]


@needs_reference
@needs_mock
def test_recipe_vs_snapshot(cli: Any, tmp_path: Path) -> None:
    from tests.bundles import write_recipe

    recipe = write_recipe(cli, "cuj2", tmp_path)
    result = cli("diff", "--baseline", str(recipe.file), "--target", str(MOCK), "--format", "json")
    assert result.code == 0, result.err
    changes = {c["path"]: c for c in json.loads(result.out)["changes"]}
    assert changes["K8s.helm.gpu-operator.version"]["baseline"] == "v26.3.3"
    assert changes["K8s.helm.gpu-operator.version"]["target"] == "v25.10.1"
    assert changes["K8s.helm.cert-manager.version"]["kind"] == "modified"
    assert changes["K8s.helm.dynamo-platform"]["kind"] == "removed"
    assert changes["K8s.helm.kubeflow-trainer"]["kind"] == "added"
    assert "K8s.helm.prometheus-adapter.version" not in changes  # 5.3.0 both sides
    assert not any(p.endswith("aws-efa.version") and c["kind"] != "modified" for p, c in changes.items())


def test_recipe_version_compare_ignores_leading_v() -> None:
    recipe = {"componentRefs": [{"name": "gpu-operator", "version": "25.10.1", "namespace": "gpu-operator"}]}
    assert diff.diff_recipe(recipe, BASE)["changes"] == []


def test_recipe_vs_releases_flux_named_after_their_namespace() -> None:
    """A HelmRelease without releaseName installs ``<targetNamespace>-<name>`` (as AICR's flux bundles, and
    aicr-gen's, leave it): the recipe's component still finds its release."""
    flux = copy.deepcopy(BASE)
    helm = _subtype(flux, "K8s", "helm")["data"]
    for key in [key for key in helm if key.startswith("gpu-operator.")]:
        helm[f"gpu-operator-{key}"] = helm.pop(key)
    recipe = {"componentRefs": [{"name": "gpu-operator", "version": "v25.10.1", "namespace": "gpu-operator"}]}
    changes = diff.diff_recipe(recipe, flux)["changes"]
    assert not [change for change in changes if "gpu-operator" in change["path"]], changes
    long = "a" * 30
    assert diff.flux_release_name(long, long) == f"{long}-{long}"[:40] + "-" + \
        __import__("hashlib").sha256(f"{long}-{long}".encode()).hexdigest()[:12]
    assert len(diff.flux_release_name(long, long)) == 53


def test_exit_codes(cli: Any, tmp_path: Path) -> None:
    base = _write(tmp_path / "a.yaml", BASE)
    new = copy.deepcopy(BASE)
    new["measurements"][0]["subtypes"][0]["data"]["gpu-operator.version"] = "v26.3.3"
    target = _write(tmp_path / "b.yaml", new)
    assert cli("diff", "--baseline", base, "--target", base, "--fail-on-drift").code == 0
    assert cli("diff", "--baseline", base, "--target", target).code == 0
    drift = cli("diff", "--baseline", base, "--target", target, "--fail-on-drift")
    assert drift.code == 1
    assert "K8s.helm.gpu-operator.version" in drift.out
    garbled = tmp_path / "bad.yaml"
    garbled.write_text("measurements: [{type: K8s\n")
    assert cli("diff", "--baseline", str(garbled), "--target", base).code == 2
    assert cli("diff", "--baseline", base, "--target", str(tmp_path / "missing.yaml")).code == 2


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_unreachable_configmap_exits_3(cli: Any, tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": f"https://127.0.0.1:{_closed_port()}",
                                               "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}],
        "users": [{"name": "u", "user": {"token": "t"}}]}))
    base = _write(tmp_path / "a.yaml", BASE)
    result = cli("diff", "--baseline", base, "--target", "cm://default/snap", "--kubeconfig", str(kubeconfig))
    assert result.code == 3, result.err


def test_validation_request_for_gpu_drift(cli: Any, tmp_path: Path) -> None:
    base = _write(tmp_path / "a.yaml", BASE)
    new = copy.deepcopy(BASE)
    new["measurements"][0]["subtypes"][0]["data"]["gpu-operator.version"] = "v26.3.3"
    target = _write(tmp_path / "b.yaml", new)
    out = tmp_path / "vr.yaml"
    assert cli("diff", "--baseline", base, "--target", target, "--emit-validation-request", str(out)).code == 0
    request = yaml.safe_load(out.read_text())
    assert request["kind"] == "ValidationRequest"
    assert [n["name"] for n in request["spec"]["nodes"]] == ["gpu-1", "gpu-2"]
    del new["measurements"][1]
    bare = _write(tmp_path / "c.yaml", new)
    refused = cli("diff", "--baseline", base, "--target", bare, "--emit-validation-request", str(tmp_path / "x"))
    assert refused.code == 2
    assert "no nodes" in refused.err


def test_ten_thousand_helm_keys_diff_fast() -> None:
    data = {f"r{i}.version": f"1.{i}" for i in range(10_000)}
    big = {"measurements": [{"type": "K8s", "subtypes": [{"subtype": "helm", "data": data}]}]}
    new = copy.deepcopy(big)
    new["measurements"][0]["subtypes"][0]["data"]["r5.version"] = "2"
    start = time.perf_counter()
    result = diff.diff_snapshots(big, new)
    assert time.perf_counter() - start < 1.0
    assert [c["path"] for c in result["changes"]] == ["K8s.helm.r5.version"]


def test_markdown_report(cli: Any, tmp_path: Path, snapshot: Any) -> None:
    base = _write(tmp_path / "a.yaml", BASE)
    new = copy.deepcopy(BASE)
    new["measurements"][0]["subtypes"][0]["data"]["gpu-operator.version"] = "v26|3"
    new["measurements"][1]["subtypes"][0]["data"]["zone"] = "us-west|gpu-1,gpu-2"
    target = _write(tmp_path / "b.yaml", new)
    result = cli("diff", "--baseline", base, "--target", target, "--format", "markdown")
    text = result.out.replace(str(tmp_path), "TMP")
    assert "v26\\|3" in text
    assert text == snapshot


def test_deterministic_output(tmp_path: Path) -> None:
    base = _write(tmp_path / "a.yaml", BASE)
    new = copy.deepcopy(BASE)
    new["measurements"][1]["subtypes"][0]["data"]["zone"] = "us-west|gpu-3,gpu-2,cpu-9"
    target = _write(tmp_path / "b.yaml", new)
    outputs = {run_process("diff", "--baseline", base, "--target", target, "--format", fmt).out
               for fmt in ("json",) for _ in range(3)}
    assert len(outputs) == 1
    for fmt in ("table", "yaml"):
        assert run_process("diff", "--baseline", base, "--target", target, "--format", fmt).code == 0


def _sub(mtype: str, name: str, data: dict[str, Any] | None = None, **rest: Any) -> dict[str, Any]:
    return {"type": mtype, "subtypes": [{"subtype": name, **({"data": data} if data is not None else {}), **rest}]}


def _item(name: str, tag: str) -> dict[str, Any]:
    return {"context": {"n": name}, "data": {"t": tag}}


def test_drift_hidden_among_equal_readings_is_found() -> None:
    # the equality pre-pass drops equal readings; the one that changed, even 1 -> true, must survive it
    sysctl = {f"/proc/sys/net/key{i}": str(i) for i in range(2000)}
    base = {"measurements": [_sub("OS", "sysctl", {**sysctl, "flag": 1, "ratio": 1.0, "off": None})]}
    new = copy.deepcopy(base)
    data = new["measurements"][0]["subtypes"][0]["data"]
    data["/proc/sys/net/key1234"] = "x"
    data["flag"] = True
    data["ratio"] = 1
    data["off"] = "<nil>"
    changes = diff.diff_snapshots(base, new)["changes"]
    assert [(c["kind"], c["path"], c["baseline"], c["target"]) for c in changes] == [
        ("modified", "OS.sysctl./proc/sys/net/key1234", "1234", "x"),
        ("modified", "OS.sysctl.flag", 1, True),
        ("modified", "OS.sysctl.off", None, "<nil>"),
        ("modified", "OS.sysctl.ratio", 1.0, 1),
    ]


def test_reordered_items_are_equal_and_one_changed_item_is_found() -> None:
    items = [{"context": {"name": f"img{i}", "namespace": "ns"}, "data": {"tag": f"v{i}", "size": i}}
             for i in range(300)]
    base = {"measurements": [_sub("K8s", "image", items=items)]}
    new = copy.deepcopy(base)
    new_items = new["measurements"][0]["subtypes"][0]["items"]
    new_items.reverse()
    assert diff.diff_snapshots(base, new)["changes"] == []
    new_items[10]["data"]["size"] = float(new_items[10]["data"]["size"])  # same value, other type
    new_items[20]["data"]["extra"] = "yes"
    paths = [(c["kind"], c["path"]) for c in diff.diff_snapshots(base, new)["changes"]]
    assert paths == [("added", "K8s.image.items[name=img279,namespace=ns].data.extra"),
                     ("modified", "K8s.image.items[name=img289,namespace=ns].data.size")]


def test_shared_node_lists_are_split_per_label() -> None:
    # labels sharing one node list are split once; each still reports its own members and value
    nodes = ",".join(f"gpu-{i}" for i in range(50))
    fewer = ",".join(f"gpu-{i}" for i in range(49))
    base = {"measurements": [_sub("NodeTopology", "label", {"a": f"x|{nodes}", "b": f"y|{nodes}", "c": f"z|{nodes}"})]}
    new = {"measurements": [_sub("NodeTopology", "label", {"a": f"x|{fewer}", "b": f"y|{fewer}", "c": f"w|{nodes}"})]}
    changes = diff.diff_snapshots(base, new)["changes"]
    assert [c["path"] for c in changes if c["kind"] == "removed"] == [
        "NodeTopology.label.a[gpu-49]", "NodeTopology.label.b[gpu-49]"]
    assert [(c["baseline"], c["target"]) for c in changes if c["kind"] == "modified"] == [("z", "w")] * 50


@pytest.mark.parametrize("pair", [
    # a repeated (multi-instance) type: the later measurement wins the same path on each side
    ([_sub("NetworkTopology", "nic", {"mtu": 1500}), _sub("NetworkTopology", "nic", {"mtu": 9000})],
     [_sub("NetworkTopology", "nic", {"mtu": 9000}), _sub("NetworkTopology", "nic", {"mtu": 9000})]),
    # a subtype path that is a dotted prefix of another: K8s.helm's "x.v" and K8s.helm.x's "v" meet
    ([_sub("K8s", "helm", {"x.v": "1"}), _sub("K8s", "helm.x", {"v": "2"})],
     [_sub("K8s", "helm", {"x.v": "1"}), _sub("K8s", "helm.x", {"v": "3"})]),
    # a data key that meets the subtype's context, and one that meets an item
    ([_sub("K8s", "s", {"context.a": "1", "items[n=1].data.t": "2"}, context={"a": "9"},
           items=[{"context": {"n": "1"}, "data": {"t": "8"}}])],
     [_sub("K8s", "s", {"context.a": "1", "items[n=1].data.t": "3"}, context={"a": "9"},
           items=[{"context": {"n": "1"}, "data": {"t": "8"}}])]),
    # repeated item contexts (#2) next to a context that reads like one
    ([_sub("K8s", "image", items=[_item("a", "1"), _item("a", "2"), _item("a#2", "3")])],
     [_sub("K8s", "image", items=[_item("a#2", "3"), _item("a", "1"), _item("a", "2")])]),
    # nested mappings and non-string keys flatten onto dotted string keys
    ([_sub("K8s", "s", {"a": {"b": "1"}, "a.b": "1", 1: "x", "1": "x"})],
     [_sub("K8s", "s", {"a.b": "1", "a": {"b": "1"}, "1": "x", 1: "y"})]),
])
def test_equality_pre_pass_matches_plain_normalisation(pair: tuple[list[Any], list[Any]]) -> None:
    base, new = ({"measurements": measurements} for measurements in pair)
    expected = diff.compare(diff.normalise(base), diff.normalise(new))
    assert diff.diff_snapshots(base, new)["changes"] == expected
    assert diff.diff_snapshots(new, base)["changes"] == diff.compare(diff.normalise(new), diff.normalise(base))


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
