"""``diff --format deepdiff`` and ``diff --delta``: DeepDiff's report of the readings the change list compares names
the same changes, path by path, on every drift case of the suite and a 4,096-node pair; a Delta turns the baseline
into the target with deepdiff itself; and ``diff`` in its default formats never imports deepdiff."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.drift import deep, diff
from tests.conftest import ROOT
from tests.drift.test_diff import BASE, _drifted, _mock, _subtype, needs_mock
from tests.drift.test_fleet import fleet_files  # noqa: F401 - a fixture
from tests.drift.test_pools import files, merged  # noqa: F401 - fixtures

PREFIX = "root['"


def _paths(found: dict[str, Any], *keys: str) -> set[str]:
    out: set[str] = set()
    for key in keys:
        for item in found.get(key) or {}:
            assert item.startswith(PREFIX) and item.endswith("']"), item
            out.add(item[len(PREFIX):-2])
    return out


def agrees(found: dict[str, Any], changes: list[dict[str, Any]]) -> None:
    """DeepDiff's report names the change list's changes: added, removed, modified (values or types) by path, and
    the same values."""
    kinds = {kind: {entry["path"] for entry in changes if entry["kind"] == kind}
             for kind in ("added", "removed", "modified")}
    assert _paths(found, "dictionary_item_added") == kinds["added"]
    assert _paths(found, "dictionary_item_removed") == kinds["removed"]
    assert _paths(found, "values_changed", "type_changes") == kinds["modified"]
    changed = {**(found.get("values_changed") or {}), **(found.get("type_changes") or {})}
    for entry in changes:
        key = f"{PREFIX}{entry['path']}']"
        if entry["kind"] == "modified":
            assert json.loads(json.dumps([changed[key]["old_value"], changed[key]["new_value"]])) == \
                json.loads(json.dumps([entry["baseline"], entry["target"]]))


def _node_drift() -> tuple[dict[str, Any], dict[str, Any]]:
    new = copy.deepcopy(BASE)
    labels = _subtype(new, "NodeTopology", "label")["data"]
    labels["nvidia.com/gpu.present"] = "true|gpu-1,gpu-3"          # gpu-2 left, gpu-3 joined
    labels["zone"] = "us-west|gpu-1,gpu-2,cpu-1"                    # every member's value changed
    _subtype(new, "K8s", "image")["items"].reverse()                # matched by context: no change
    _subtype(new, "K8s", "image")["items"][0]["data"]["tag"] = 3    # a type change: "2" -> 3
    _subtype(new, "K8s", "helm")["data"]["__private.version"] = "1"  # DeepDiff would skip it by default
    return BASE, new


CASES = {"nodes, items, types": _node_drift, "reversed": lambda: tuple(reversed(_node_drift()))}


@pytest.mark.parametrize("case", sorted(CASES))
def test_the_report_names_the_change_lists_changes(case: str) -> None:
    base, new = CASES[case]()
    agrees(deep.report(diff.readings(base), diff.readings(new)), diff.diff_snapshots(base, new)["changes"])


@needs_mock
def test_on_the_reference_snapshot_drift() -> None:
    base = _mock()
    agrees(deep.report(diff.readings(base), diff.readings(_drifted(base))),
           diff.diff_snapshots(base, _drifted(base))["changes"])


def test_on_the_example_snapshots_and_recipe_vs_live() -> None:
    from aicr_gen.drift.load import load_snapshot

    golden, live = (load_snapshot(str(ROOT / "snapshots" / name)) for name in ("golden-baseline.yaml",
                                                                              "example-live.yaml"))
    agrees(deep.report(diff.readings(golden), diff.readings(live)), diff.diff_snapshots(golden, live)["changes"])
    recipe = {"componentRefs": [
        {"name": "gpu-operator", "version": "26.3.3", "namespace": "gpu-operator", "chart": "gpu-operator"},  # v-less
        {"name": "nvsentinel", "version": "v1.25.0", "namespace": "elsewhere"},
        {"name": "absent", "version": "1.0.0"}]}
    changes = diff.diff_recipe(recipe, live)["changes"]
    assert {entry["kind"] for entry in changes} == {"added", "removed", "modified"}
    agrees(deep.report(*diff.recipe_readings(recipe, diff.helm_releases(live))), changes)


@pytest.mark.slow
def test_on_a_4096_node_pair(tmp_path: Path) -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        from bench_diff import snapshot
    finally:
        sys.path.remove(str(ROOT / "bench"))
    base, new = snapshot(4096, False), snapshot(4096, True)
    changes = diff.diff_snapshots(base, new)["changes"]
    assert len(changes) > 100
    agrees(deep.report(diff.readings(base), diff.readings(new)), changes)
    from deepdiff import Delta
    from deepdiff.serialization import json_loads

    assert base + Delta(deep.delta(base, new), deserializer=json_loads) == new


def test_the_cli_writes_the_report_and_a_delta_that_round_trips(cli: Any, tmp_path: Path) -> None:
    from deepdiff import Delta
    from deepdiff.serialization import json_loads

    base, new = _node_drift()
    paths = [tmp_path / "base.yaml", tmp_path / "new.yaml"]
    for path, data in zip(paths, (base, new), strict=True):
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    delta = tmp_path / "delta.json"
    result = cli("diff", "--baseline", str(paths[0]), "--target", str(paths[1]), "--format", "deepdiff",
                 "--delta", str(delta))
    assert result.code == 0, result.err
    agrees(json.loads(result.out), diff.diff_snapshots(base, new)["changes"])
    text = delta.read_text(encoding="utf-8")
    json.loads(text)  # JSON, never pickle
    loaded = yaml.safe_load(paths[0].read_text())
    assert loaded + Delta(text, deserializer=json_loads) == yaml.safe_load(paths[1].read_text())
    moved = tmp_path / "moved.yaml"
    moved.write_text(yaml.safe_dump(loaded + Delta(text, deserializer=json_loads)))
    assert cli("diff", "--baseline", str(moved), "--target", str(paths[1]), "--fail-on-drift").code == 0


def test_a_delta_needs_two_snapshots(cli: Any, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    assert cli("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "inference", "-o",
               str(recipe)).code == 0
    live = str(ROOT / "snapshots" / "example-live.yaml")
    refused = cli("diff", "--baseline", str(recipe), "--target", live, "--delta", str(tmp_path / "d.json"))
    assert refused.code == 2 and "a Delta turns a baseline snapshot into the target" in refused.err
    assert not (tmp_path / "d.json").exists()
    assert cli("diff", "--fleet", "x.yaml", "--delta", str(tmp_path / "d.json")).code == 2
    recipe_report = cli("diff", "--baseline", str(recipe), "--target", live, "--format", "deepdiff")
    assert recipe_report.code == 0
    assert "dictionary_item_removed" in json.loads(recipe_report.out) or json.loads(recipe_report.out)


@pytest.mark.parametrize("fmt", ["table", "json", "yaml", "markdown"])
def test_the_default_formats_never_import_deepdiff(fmt: str) -> None:
    code = ("import sys\nfrom aicr_gen.cli.main import main\n"
            f"code = main(['diff', '--baseline', {str(ROOT / 'snapshots' / 'golden-baseline.yaml')!r}, '--target', "
            f"{str(ROOT / 'snapshots' / 'example-live.yaml')!r}, '--format', {fmt!r}, ])\n"
            "assert 'deepdiff' not in sys.modules, 'deepdiff imported'\nsys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, cwd=ROOT)
    assert "gpu-operator" in done.stdout
    assert done.returncode == 0, done.stderr


def test_a_pooled_spec_reports_each_part(cli: Any, files: tuple[Path, Path, Path]) -> None:  # noqa: F811
    spec, drifted, _clean = files
    listed = json.loads(cli("diff", "--spec", str(spec), "--target", str(drifted), "--format", "json").out)
    found = cli("diff", "--spec", str(spec), "--target", str(drifted), "--format", "deepdiff")
    assert found.code == 0, found.err
    reports = json.loads(found.out)
    assert set(reports) == {"shared", *(pool["name"] for pool in listed["pools"])}
    for part, report in reports.items():
        agrees(report, [entry for entry in listed["changes"] if (entry.get("pool") or "shared") == part])
    assert any(report for report in reports.values())


def test_a_fleet_reports_each_cluster(cli: Any, fleet_files: tuple[list[str], list[str]]) -> None:  # noqa: F811
    specs, snapshots = fleet_files
    matrix = json.loads(cli("diff", *snapshots, "--format", "json", "--fleet", *specs).out)
    found = cli("diff", *snapshots, "--format", "deepdiff", "--fleet", *specs)
    assert found.code == 0, found.err
    reports = json.loads(found.out)
    assert sorted(reports) == sorted(row["name"] for row in matrix["clusters"])
    for row in matrix["clusters"]:
        drifted = {f"K8s.helm.{cell['component']}" for cell in row["components"] if cell["status"] != "ok"}
        named = {path.split(".version")[0].split(".namespace")[0].split(".chart")[0]
                 for path in _paths(reports[row["name"]], "dictionary_item_added", "dictionary_item_removed",
                                    "values_changed", "type_changes")}
        assert named == drifted, row["name"]
