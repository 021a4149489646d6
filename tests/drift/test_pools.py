"""``aicr-gen diff --spec SPEC --target SNAPSHOT``: a cluster with GPU node pools against its spec, per pool.

The story: the H100 + GB200 cluster of examples/pools runs its stack, but one H100 node still has an old driver
and NVSentinel lags a release; the diff says so once for the cluster-wide releases and per pool for the drivers,
in every format, and --fail-on-drift fails the job. A spec without pools diffs as its recipe does.
"""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.drift.pools import driver_version
from aicr_gen.gitops.trees.recipes import resolve_pools
from aicr_gen.spec.load import load_spec
from aicr_gen.text.versions import same_driver
from tests.conftest import ROOT

EXAMPLES = ROOT / "examples" / "pools"
H100, GB200 = "h100-1,h100-2", "gb200-1,gb200-2"


@pytest.fixture(scope="module")
def merged() -> dict[str, Any]:
    return resolve_pools(load_spec(EXAMPLES / "eks-h100-gb200.yaml"), EXAMPLES).merged


def snapshot(merged: dict[str, Any], drivers: str) -> dict[str, Any]:
    """Every release of the merged recipe deployed as desired, and nodes with GFD driver labels ``drivers``."""
    helm: dict[str, Any] = {}
    for ref in merged["componentRefs"]:
        helm |= {f"{ref['name']}.chart": ref["chart"], f"{ref['name']}.version": ref["version"],
                 f"{ref['name']}.namespace": ref["namespace"]}
    return {"kind": "Snapshot", "apiVersion": "aicr.run/v1", "metadata": {"source-node": "h100-1"},
            "measurements": [
                {"type": "K8s", "subtypes": [{"subtype": "helm", "data": helm}]},
                {"type": "NodeTopology", "subtypes": [{"subtype": "label", "data": {
                    "node.kubernetes.io/instance-type": f"p5.48xlarge|{H100};p6e-gb200.36xlarge|{GB200}",
                    "nvidia.com/gpu.present": f"true|{GB200},{H100}",
                    "nvidia.com/cuda.driver-version.full": drivers}}]}]}


@pytest.fixture
def files(tmp_path: Path, merged: dict[str, Any]) -> tuple[Path, Path, Path]:
    for name in ("eks-h100-gb200.yaml", "gb200-rules.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    live = snapshot(merged, "580.173.02|gb200-1,gb200-2,h100-1;570.124.06|h100-2")
    helm = live["measurements"][0]["subtypes"][0]["data"]
    helm["nvsentinel.version"] = "v1.24.0"
    (tmp_path / "drifted.yaml").write_text(yaml.safe_dump(live), encoding="utf-8")
    (tmp_path / "clean.yaml").write_text(yaml.safe_dump(snapshot(merged, f"580.173.02|{GB200},{H100}")),
                                         encoding="utf-8")
    return tmp_path / "eks-h100-gb200.yaml", tmp_path / "drifted.yaml", tmp_path / "clean.yaml"


def test_gfd_labels_give_each_nodes_driver() -> None:
    assert driver_version({"nvidia.com/cuda.driver-version.full": "580.173.02"}) == "580.173.02"
    assert driver_version({"nvidia.com/cuda.driver.major": "580", "nvidia.com/cuda.driver.minor": "173",
                           "nvidia.com/cuda.driver.rev": "02"}) == "580.173.02"
    assert driver_version({"nvidia.com/cuda.driver.major": "580"}) == "580"
    assert driver_version({"nvidia.com/gpu.present": "true"}) is None
    assert same_driver("580.173.02", "580") and not same_driver("580.173.02", "570")


def test_diff_reports_shared_releases_once_and_each_pools_drivers(cli: Any, files: tuple[Path, Path, Path]) -> None:
    spec, drifted, clean = files
    result = cli("diff", "--spec", str(spec), "--target", str(drifted), "--format", "json")
    assert result.code == 0, result.err
    document = json.loads(result.out)
    got = [(c["kind"], c["path"], c.get("baseline"), c.get("target"), c.get("pool")) for c in document["changes"]]
    assert got == [("modified", "K8s.helm.nvsentinel.version", "v1.25.0", "v1.24.0", None),
                   ("modified", "NVIDIADriver.h100.version[h100-2]", "580.173.02", "570.124.06", "h100")]
    assert document["summary"] == {"added": 0, "removed": 0, "modified": 2, "total": 2}
    assert "gpu-operator" in document["shared"]["components"]
    h100, gb200 = document["pools"]
    assert (h100["name"], h100["nodes"], h100["summary"]["total"]) == ("h100", ["h100-1", "h100-2"], 1)
    assert h100["driver"] == {"desired": "580.173.02", "nodes": {"h100-1": "580.173.02", "h100-2": "570.124.06"}}
    assert (gb200["summary"]["total"], gb200["notes"]) == (0, [])

    table = cli("diff", "--spec", str(spec), "--target", str(drifted), "--fail-on-drift")
    assert table.code == 1
    assert table.out.startswith(f"Drift between {spec} and {drifted}: 2 change(s)")
    assert table.out.count("cluster-wide: Helm releases are the cluster's") == 1
    assert "NVIDIADriver h100: version 580.173.02; live: h100-1 580.173.02, h100-2 570.124.06" in table.out
    assert f"No drift between {spec} (pool gb200) and {drifted}." in table.out
    markdown = cli("diff", "--spec", str(spec), "--target", str(drifted), "--format", "markdown", "--pool", "h100")
    assert markdown.out.startswith("### aicr-gen diff\n")
    assert "| modified | NVIDIADriver.h100.version\\[h100-2\\] | 580.173.02 | 570.124.06 |" in markdown.out
    assert "#### pool h100 " in markdown.out and "pool gb200" not in markdown.out

    ok = cli("diff", "--spec", str(spec), "--target", str(clean), "--fail-on-drift")
    assert ok.code == 0, ok.out
    assert ok.out.startswith("No drift between")


def test_a_node_without_driver_labels_and_a_pool_without_nodes_are_notes(cli: Any, files: tuple[Path, Path, Path],
                                                                         merged: dict[str, Any]) -> None:
    spec, _, _ = files
    live = snapshot(merged, f"580.173.02|{H100}")
    labels = live["measurements"][1]["subtypes"][0]["data"]
    labels["node.kubernetes.io/instance-type"] = f"p5.48xlarge|{H100}"
    (spec.parent / "h100-only.yaml").write_text(yaml.safe_dump(live), encoding="utf-8")
    result = cli("diff", "--spec", str(spec), "--target", str(spec.parent / "h100-only.yaml"), "--format", "yaml")
    gb200 = yaml.safe_load(result.out)["pools"][1]
    assert gb200["nodes"] == [] and gb200["notes"] == ["no node of the snapshot has the pool's labels"]


def test_a_component_only_one_pool_brought_is_that_pools(merged: dict[str, Any]) -> None:
    from aicr_gen.drift.pools import PoolDesired, pool_drift

    live = snapshot(merged, f"580.173.02|{GB200},{H100}")
    refs = [copy.deepcopy(ref) for ref in merged["componentRefs"] if ref["name"] == "aws-efa"]
    selector = {"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}
    document = pool_drift(merged, [PoolDesired("gb200", selector, tuple(refs), None)], live, "spec", "live")
    assert "aws-efa" not in document["shared"]["components"]
    assert document["pools"][0]["components"] == ["aws-efa"]
    assert document["pools"][0]["notes"] == ["the node images own the driver (no NVIDIADriver): driver versions "
                                             "not compared"]
    del live["measurements"][0]["subtypes"][0]["data"]["aws-efa.version"]
    document = pool_drift(merged, [PoolDesired("gb200", selector, tuple(refs), None)], live, "spec", "live")
    assert [(c["path"], c.get("pool")) for c in document["changes"]] == [("K8s.helm.aws-efa.version", "gb200")]


def test_a_spec_without_pools_diffs_as_its_recipe(cli: Any, tmp_path: Path) -> None:
    spec = tmp_path / "plain.yaml"
    data = yaml.safe_load((EXAMPLES / "eks-h100-gb200.yaml").read_text(encoding="utf-8"))
    data["spec"] = {"criteria": {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu"},
                    "deployers": ["argocd"], "repo": data["spec"]["repo"]}
    spec.write_text(yaml.safe_dump(data), encoding="utf-8")
    recipe = tmp_path / "recipe.yaml"
    assert cli("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
               "-o", str(recipe)).code == 0
    live = tmp_path / "live.yaml"
    live.write_text(yaml.safe_dump(snapshot(yaml.safe_load(recipe.read_text(encoding="utf-8")), "580|h100-1")),
                    encoding="utf-8")
    by_spec = cli("diff", "--spec", str(spec), "--target", str(live), "--format", "json")
    by_recipe = cli("diff", "--baseline", str(recipe), "--target", str(live), "--format", "json")
    assert by_spec.code == by_recipe.code == 0
    assert by_spec.out == by_recipe.out.replace(json.dumps(str(recipe)), json.dumps(str(spec)))
    refused = cli("diff", "--spec", str(spec), "--target", str(live), "--pool", "h100")
    assert refused.code == 2 and "it has no spec.pools" in refused.err


@pytest.mark.parametrize(("args", "fragment"), [
    (("--pool", "h100"), "give --spec SPEC"),
    (("--spec", "S", "--baseline", "B", "--target", "T"), "drop --baseline"),
    (("--spec", "S"), "needs --target SRC"),
])
def test_bad_spec_diffs_are_refused(cli: Any, args: tuple[str, ...], fragment: str) -> None:
    result = cli("diff", *args)
    assert result.code == 2 and fragment in result.err, result


# ------------------------------------------------------------------------------------------- sync's commit message


def test_the_sync_commit_message_names_pool_certification_and_driver_changes(cli: Any, tmp_path: Path) -> None:
    import subprocess

    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, check=True, text=True).stdout

    repo = tmp_path / "gitops"
    repo.mkdir()
    git("init", "-q", "-b", "main")
    git("-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "i")
    for name in ("eks-h100-gb200.yaml", "gb200-rules.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    spec = tmp_path / "eks-h100-gb200.yaml"
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    first = git("log", "-1", "--format=%B")
    assert "NVIDIADriver/" not in first  # a new tree: its components say it

    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    h100, gb200 = data["spec"]["pools"]
    h100["overrides"] = {"set": ["gpuoperator:driver.version=570.195.03",
                                 "gpu-operator:driver.kernelModuleType=proprietary"]}
    gb200["certification"]["thresholds"]["busBandwidthGBps"] = "value >= 600"
    del gb200["certification"]["schedule"]
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0, "sync"
    message = git("log", "-1", "--format=%B")
    # 570 is older than 580: a downgrade, named so (it used to read "bumped")
    assert ("- DOWNGRADED NVIDIADriver/h100 580.173.02 -> 570.195.03 (kernelModuleType open -> proprietary)"
            in message), message
    assert "NVIDIADriver/gb200" not in message
    assert '- pool gb200: threshold busBandwidthGBps: value >= 500 -> value >= 600' in message
    assert "- pool gb200: schedule removed (was '0 4 * * 0')" in message
    assert "pool h100:" not in message


# ------------------------------------------------------------------------------------------- sentinel values


def test_sentinel_values_limit_a_rule_set_to_pools_without_a_spec(cli: Any, tmp_path: Path) -> None:
    from aicr_gen.sentinel.values import node_match

    name = "NVSwitch fatal error ruleset"
    gb200 = {"node.kubernetes.io/instance-type": "p6e-gb200.36xlarge"}
    rules = str(EXAMPLES / "gb200-rules.yaml")
    result = cli("sentinel", "values", "--mode", "quarantine", "--rules", rules,
                 "--limit-rule-set", f"{name}=node.kubernetes.io/instance-type=p6e-gb200.36xlarge")
    assert result.code == 0, result.err
    by_name = {item["name"]: item for item in yaml.safe_load(result.out)["fault-quarantine"]["ruleSets"]}
    assert by_name[name]["match"]["all"][-1] == {"kind": "Node", "expression": node_match([gb200])}
    plain = cli("sentinel", "values", "--mode", "quarantine", "--rules", rules)
    assert {item["name"]: item for item in yaml.safe_load(plain.out)["fault-quarantine"]["ruleSets"]
            if item["name"] != name} == {other: item for other, item in by_name.items() if other != name}
    two = cli("sentinel", "values", "--mode", "quarantine", "--rules", rules,
              "--limit-rule-set", f"{name}=a=1,b=2", "--limit-rule-set", f"{name}=a=3")
    added = {i["name"]: i for i in yaml.safe_load(two.out)["fault-quarantine"]["ruleSets"]}[name]["match"]["all"][-1]
    assert added["expression"] == node_match([{"a": "1", "b": "2"}, {"a": "3"}])
    for bad, fragment in ((f"{name}", "give NAME=KEY=VALUE"), ("nope=a=1", "'nope' is not a rule set")):
        refused = cli("sentinel", "values", "--mode", "quarantine", "--rules", rules, "--limit-rule-set", bad)
        assert refused.code == 2 and fragment in refused.err, refused


def test_a_pools_driver_bump_is_a_high_risk_change_in_the_plan(cli: Any, tmp_path: Path) -> None:
    import subprocess

    repo = tmp_path / "gitops"
    repo.mkdir()
    identity = ("-c", "user.name=t", "-c", "user.email=t@example.invalid")
    for args in (("init", "-q", "-b", "main"), (*identity, "commit", "-q", "--allow-empty", "-m", "i")):
        subprocess.run(["git", "-C", str(repo), *args], check=True)
    for name in ("eks-h100-gb200.yaml", "gb200-rules.yaml"):
        shutil.copy(EXAMPLES / name, tmp_path / name)
    spec = tmp_path / "eks-h100-gb200.yaml"
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    data = yaml.safe_load(spec.read_text(encoding="utf-8"))
    data["spec"]["pools"][0]["overrides"] = {"set": ["gpu-operator:driver.version=570.195.03"]}
    spec.write_text(yaml.safe_dump(data, sort_keys=False), encoding="utf-8")
    result = cli("plan", str(spec), "--repo", str(repo), "--format", "json")
    assert result.code == 0, result
    (cluster,) = json.loads(result.out)["clusters"]
    risks = [(risk["category"], risk["text"]) for risk in cluster["highRisk"]]
    assert ("gpu-driver", "DOWNGRADED NVIDIADriver/h100 580.173.02 -> 570.195.03") in risks, risks
    assert data["spec"]["sentinel"]["lifecycle"]  # so the driver bump asks for a ValidationRequest after the rollout
    assert any(effect["kind"] == "validation-request" and "NVIDIADriver/h100" in effect["text"]
               for effect in cluster["onMerge"]), cluster["onMerge"]
