"""Mixed GPU pools, operated per pool: one NVCRE Certification per pool (its selector, its thresholds, its jobs),
NVSentinel rule sets limited to a pool, a ValidationRequest template per pool, ``validate`` per pool over a
snapshot holding both pools' nodes, bisection and reports that keep the pool, and the policy that every training
pool has thresholds. The example is examples/pools/eks-h100-gb200.yaml (tests/cluster/test_converge_pools.py
applies its tree to a real API server)."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aicr_gen.cel.environments import nvsentinel_rule
from aicr_gen.certify import bisect, nvcre, nvcre_status
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.values import limit_rule_set, node_match
from tests.conftest import assert_refused
from tests.consumers import read_tree, validate_manifests
from tests.gitops.test_pools import EXAMPLE, GB200, H100, example, git, variant, write

SCHEMA = nvcre.load_schema()
NVSWITCH = "NVSwitch fatal error ruleset"
GPU = {"nvidia.com/gpu.present": "true"}  # fault-quarantine watches only these nodes (gpuNodeLabel)


def synced(cli: Any, tmp_path: Path, spec: Path) -> Path:
    """``spec`` synced into a new repository; the folder of its tree in a checkout."""
    repo = tmp_path / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "i")
    result = cli("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    return repo / "clusters" / "training-mixed"


@pytest.fixture(scope="module")
def tree(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from aicr_gen.cli.main import main

    folder = tmp_path_factory.mktemp("pools-certify")
    repo = folder / "gitops"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    git(repo, "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit", "-q", "--allow-empty", "-m", "i")
    assert main(["sync", str(EXAMPLE), "--repo", str(repo)]) == 0
    return repo / "clusters" / "training-mixed"


def load(path: Path) -> Any:
    return yaml.safe_load(path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------- certification


def test_each_pool_has_its_own_certification_with_its_thresholds_and_target(tree: Path) -> None:
    h100 = load(tree / "pools/h100/certification/certification.yaml")
    gb200 = load(tree / "pools/gb200/certification/certification.yaml")
    for cert, name, selector in ((h100, "h100", H100), (gb200, "gb200", GB200)):
        assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(cert)) == []
        assert cert["metadata"]["name"] == f"gpu-certification-{name}"
        assert cert["metadata"]["labels"][nvcre.POOL_LABEL] == name
        assert cert["spec"]["target"] == {"nodeSelector": selector}
    # GB200 and H100 reach different bus bandwidth: each pool is held to its own floor
    assert h100["spec"]["thresholds"] == {"busBandwidthGBps": "value >= 300"}
    assert gb200["spec"]["thresholds"] == {"busBandwidthGBps": "value >= 500"}
    assert (h100["spec"]["gpusPerNode"], gb200["spec"]["gpusPerNode"]) == (8, 4)
    assert gb200["spec"]["enableMNNVL"] is True and "enableMNNVL" not in h100["spec"]
    assert not (tree / "certification").exists()  # no cluster-wide Certification unless spec.certification asks


def test_pool_jobs_carry_the_pool_and_validate(tree: Path) -> None:
    for pool, schedule in (("h100", "0 3 * * 0"), ("gb200", "0 4 * * 0")):
        folder = tree / "pools" / pool / "certification"
        cronjob = load(folder / "schedule/cronjob.yaml")
        assert cronjob["metadata"]["name"] == f"gpu-certification-{pool}-schedule"
        assert cronjob["spec"]["schedule"] == schedule
        assert load(folder / "post-change/argocd/job.yaml")["metadata"]["name"] == f"gpu-certification-{pool}-post-sync"
        template = yaml.safe_load(load(folder / "schedule/configmap.yaml")["data"]["certification.yaml"])
        assert template["metadata"]["generateName"] == f"gpu-certification-{pool}-"
        assert template["metadata"]["labels"][nvcre.POOL_LABEL] == pool
        assert list(jsonschema.Draft202012Validator(SCHEMA).iter_errors(template)) == []
        files = read_tree(folder)
        assert validate_manifests(files, extra_schemas={(nvcre.API_VERSION, nvcre.KIND): SCHEMA}) == 20
    # argocd applies each pool's CronJob folder and post-change hook, the hook marked with the stack digest
    apps = {path.parent.name: load(path) for path in (tree / "argocd").glob("extra-pools-*/application.yaml")}
    assert sorted(apps) == [f"extra-pools-{pool}-certification-{kind}" for pool in ("gb200", "h100")
                            for kind in ("post-change-argocd", "schedule")]
    hook = apps["extra-pools-gb200-certification-post-change-argocd"]
    assert "aicr-gen.dev/stack-digest" in json.dumps(hook["spec"])


def test_a_cluster_wide_certification_only_when_asked_and_its_selector_narrows_the_pools(cli: Any,
                                                                                       tmp_path: Path) -> None:
    spec = variant(tmp_path, lambda spec: spec.update(certification={
        "categories": ["diagnostics/dcgm-level4"], "nodeSelector": {"nvidia.com/gpu.present": "true"}}))
    tree = synced(cli, tmp_path, spec)
    cluster = load(tree / "certification/certification.yaml")
    assert cluster["metadata"]["name"] == "gpu-certification"
    assert cluster["spec"]["target"] == {"nodeSelector": {"nvidia.com/gpu.present": "true"}}
    assert nvcre.POOL_LABEL not in cluster["metadata"]["labels"]
    gb200 = load(tree / "pools/gb200/certification/certification.yaml")
    assert gb200["spec"]["target"] == {"nodeSelector": {**GB200, "nvidia.com/gpu.present": "true"}}


@pytest.mark.parametrize(("change", "fragments"), [
    (lambda spec: spec["pools"][1].update(name="gb200-" + "x" * 30),
     ("spec.pools[1].name", "gpu-certification-gb200-xxx", "at most 25 characters")),
    (lambda spec: spec["pools"][1]["certification"].update(nodeSelector=H100),
     ("spec.pools[1].certification.nodeSelector", "would target no node")),
    (lambda spec: spec["pools"][0]["certification"].update(categories=[], thresholds={}, options={}, schedule=None,
                                                           postChange=False),
     ("spec.pools[0].certification.categories", "at least one category")),
    (lambda spec: spec["pools"][0]["certification"]["thresholds"].update(busBandwidthGBps="value >>= 1"),
     ("spec.pools[0].certification.thresholds",)),
    (lambda spec: spec["pools"][0]["certification"].update(schedule="every sunday"),
     ("spec.pools[0].certification.schedule",)),
    (lambda spec: spec["pools"][0]["nodeSelector"].update({"bad key!": "x"}),
     ("spec.pools[0].nodeSelector.bad key!", "not a valid label key")),
])
def test_bad_pool_certifications_are_refused_at_their_line(cli: Any, tmp_path: Path, change: Any,
                                                           fragments: tuple[str, ...]) -> None:
    result = cli("lint", str(variant(tmp_path, change)))
    assert_refused(result, "cluster.yaml:", *fragments)


# ------------------------------------------------------------------------------------------- NVSentinel


def test_the_pool_limited_rule_set_compiles_and_acts_only_on_its_pool(cli: Any, tree: Path, tmp_path: Path) -> None:
    values = load(tree / "sentinel/values.yaml")
    by_name = {rule_set["name"]: rule_set for rule_set in values["fault-quarantine"]["ruleSets"]}
    added = by_name[NVSWITCH]["match"]["all"][-1]
    assert added == {"kind": "Node", "expression": node_match([GB200])}
    nvsentinel_rule("node").compile(added["expression"])  # the checker fault-quarantine starts with
    assert all(len(rule_set["match"]["all"]) == 2 for name, rule_set in by_name.items() if name != NVSWITCH)
    nodes = {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {**labels, **GPU}}, "spec": {}}
        for name, labels in (("h100-1", H100), ("gb200-1", GB200), ("bare", {}))]}
    (tmp_path / "nodes.yaml").write_text(yaml.safe_dump(nodes), encoding="utf-8")
    sxid = {"agent": "syslog-health-monitor", "componentClass": "NVSwitch", "checkName": "SysLogsSXIDError",
            "isFatal": True, "errorCode": ["12028"]}
    events = [{**sxid, "nodeName": node} for node in ("h100-1", "gb200-1", "bare")]
    (tmp_path / "events.json").write_text(json.dumps(events), encoding="utf-8")
    result = cli("rules", "test", "--values", str(tree / "sentinel/values.yaml"), "--events",
                 str(tmp_path / "events.json"), "--nodes", str(tmp_path / "nodes.yaml"), "--format", "json")
    assert result.code == 0, result.err
    matched = {item["node"]: item for item in json.loads(result.out)}
    assert matched["gb200-1"]["matched"] == [NVSWITCH]
    assert matched["gb200-1"]["taints"] == [{"key": "nvidia.com/nvswitch-error", "value": "fatal",
                                             "effect": "NoSchedule"}]
    assert matched["h100-1"]["matched"] == [] and matched["bare"]["matched"] == []
    assert matched["h100-1"]["skipped"] is None and matched["h100-1"]["cordon"] is False


def test_node_match_quotes_label_keys_and_values() -> None:
    expression = node_match([{"example.com/a'b": 'x"y\\z', "k": "v"}, {"other": "1"}])
    program = nvsentinel_rule("node").compile(expression)
    assert program.evaluate({"node": {"metadata": {"labels": {"example.com/a'b": 'x"y\\z', "k": "v"}}}}) is True
    assert program.evaluate({"node": {"metadata": {"labels": {"other": "1"}}}}) is True
    assert program.evaluate({"node": {"metadata": {"labels": {"example.com/a'b": 'x"y\\z'}}}}) is False
    assert program.evaluate({"node": {"metadata": {}}}) is False


def test_any_rules_fold_into_all_and_mixed_ones_are_refused() -> None:
    health = {"kind": "HealthEvent", "expression": "event.isFatal == true"}
    folded = limit_rule_set({"name": "r", "match": {"any": [health, {**health, "expression": "event.x == 1"}]}},
                            [GB200])
    assert folded["match"] == {"all": [{"kind": "HealthEvent", "expression": "(event.isFatal == true) || "
                                                                             "(event.x == 1)"},
                                       {"kind": "Node", "expression": node_match([GB200])}]}
    for match in ({"any": [health, {"kind": "Node", "expression": "true"}]}, {"any": [health], "all": [health]}):
        with pytest.raises(InvalidInputError, match=r"write it with match\.all alone"):
            limit_rule_set({"name": "r", "match": match}, [GB200])


@pytest.mark.parametrize(("change", "fragments"), [
    (lambda spec: spec["sentinel"]["ruleSetPools"].update({"No such ruleset": ["gb200"]}),
     ("spec.sentinel.ruleSetPools", "'No such ruleset' is not a rule set", "GPU fatal error ruleset")),
    (lambda spec: spec["sentinel"]["ruleSetPools"].update({NVSWITCH: ["a100"]}),
     ("spec.sentinel.ruleSetPools.NVSwitch fatal error ruleset[0]", "'a100' is not a pool")),
    (lambda spec: spec["pools"][0].update(validationTests=["no-such-test"]),
     ("spec.pools[0].validationTests", "not a test of the lifecycle config")),
    (lambda spec: spec["sentinel"].update(lifecycle=False),
     ("spec.pools[0].validationTests", "spec.sentinel.lifecycle: true")),
])
def test_bad_sentinel_pool_settings_are_refused(cli: Any, tmp_path: Path, change: Any,
                                                fragments: tuple[str, ...]) -> None:
    assert_refused(cli("lint", str(variant(tmp_path, change))), "cluster.yaml:", *fragments)


def test_each_pool_gets_a_validation_request_template_with_its_tests(tree: Path) -> None:
    for pool, tests in (("h100", ["dcgm-diag-test"]), ("gb200", ["dcgm-diag-test", "nccl-loopback-nvswitch"])):
        request = load(tree / "pools" / pool / "validation/validation-request.yaml")
        assert request["metadata"]["name"] == f"node-name-{pool}-validation"
        assert request["metadata"]["labels"]["aicr-gen.dev/pool"] == pool
        assert request["spec"] == {"nodes": [{"name": "node-name"}], "tests": tests}
        readme = (tree / "pools" / pool / "validation/README.md").read_text(encoding="utf-8")
        selector = ",".join(f"{k}={v}" for k, v in (H100 if pool == "h100" else GB200).items())
        assert f"kubectl get nodes --selector={selector}" in readme
    assert (tree / "validation/validation-request.yaml").is_file()  # the cluster's own, as before


# ------------------------------------------------------------------------------------------- validate


def snapshot(source: str = "h100-1") -> dict[str, Any]:
    """Two H100 and two GB200 nodes; the agent (OS, GPU) ran on ``source``."""
    h100, gb200 = "h100-1,h100-2", "gb200-1,gb200-2"
    return {"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "metadata": {"source-node": source},
            "measurements": [
                {"type": "K8s", "subtypes": [
                    {"subtype": "server", "data": {"version": "v1.34.2"}},
                    {"subtype": "node", "data": {"kernel-version": f"6.8.0-1021-aws|{h100};6.14.0-1010-aws|{gb200}",
                                                 "os-image": "Ubuntu 24.04.2 LTS"}}]},
                {"type": "OS", "subtypes": [
                    {"subtype": "release", "data": {"ID": "ubuntu", "VERSION_ID": "24.04"}},
                    {"subtype": "sysctl", "data": {"/proc/sys/kernel/osrelease": "6.8.0-1021-aws"}}]},
                {"type": "GPU", "subtypes": [{"subtype": "hardware", "data": {
                    "model": "NVIDIA-GB200;NVIDIA-H100-80GB-HBM3", "gpu-count": 8, "gpu-present": True}}]},
                {"type": "NodeTopology", "subtypes": [
                    {"subtype": "summary", "data": {"node-count": 5, "gpu-node-count": 4}},
                    {"subtype": "label", "data": {
                        "node.kubernetes.io/instance-type": f"p5.48xlarge|{h100};p6e-gb200.36xlarge|{gb200}",
                        "nvidia.com/gpu.present": f"true|{gb200},{h100}",
                        "nvidia.com/gpu.product": f"NVIDIA-GB200|{gb200};NVIDIA-H100-80GB-HBM3|{h100}",
                        "nvidia.com/gpu.count": f"4|{gb200};8|{h100}"}}]}]}


def test_the_pool_view_narrows_per_node_values(tmp_path: Path) -> None:
    from aicr_gen.drift.pools import pool_view

    view = pool_view(snapshot(), GB200)
    assert view.nodes == ("gb200-1", "gb200-2")
    data = {(m["type"], s["subtype"]): s["data"] for m in view.snapshot["measurements"] for s in m["subtypes"]}
    assert data[("K8s", "node")] == {"kernel-version": "6.14.0-1010-aws", "os-image": "Ubuntu 24.04.2 LTS"}
    assert data[("NodeTopology", "summary")] == {"node-count": 2, "gpu-node-count": 2}
    assert data[("NodeTopology", "label")]["nvidia.com/gpu.product"] == "NVIDIA-GB200|gb200-1,gb200-2"
    assert ("OS", "release") not in data  # the agent ran on an H100 node
    assert view.notes and "h100-1" in view.notes[0]
    own = pool_view(snapshot("gb200-1"), GB200).snapshot
    hardware = next(s["data"] for m in own["measurements"] if m["type"] == "GPU" for s in m["subtypes"])
    assert hardware == {"model": "NVIDIA-GB200", "gpu-count": 4, "gpu-present": True}


def test_validate_evaluates_each_pool_against_its_own_nodes(cli: Any, tmp_path: Path) -> None:
    spec = write(tmp_path, example())
    (tmp_path / "snapshot.yaml").write_text(yaml.safe_dump(snapshot()), encoding="utf-8")
    result = cli("validate", "--spec", str(spec), "--snapshot", str(tmp_path / "snapshot.yaml"), "--format", "json")
    assert result.code == 1  # the agent measured the OS on an H100 node: GB200's OS is not shown
    tests = json.loads(result.out)["results"]["tests"]
    by_name = {test["name"]: test for test in tests}
    assert by_name["h100: OS.release.ID"]["status"] == "passed"
    assert by_name["h100: K8s.server.version"]["suite"] == ["readiness", "h100"]
    assert by_name["gb200: K8s.server.version"]["status"] == "passed"
    assert by_name["gb200: OS.release.ID"]["status"] == "failed"
    assert by_name["gb200: OS.release.ID"]["extra"]["pool"] == "gb200"
    assert "pool gb200: OS.release.ID: not found in snapshot" in result.err

    only = cli("validate", "--spec", str(spec), "--pool", "h100", "--snapshot", str(tmp_path / "snapshot.yaml"))
    assert only.code == 0, only.err
    assert only.out.startswith("pool h100 (node.kubernetes.io/instance-type=p5.48xlarge): 2 node(s) in the snapshot")
    assert "gb200" not in only.out


def test_validate_a_recipe_against_the_nodes_of_a_selector(cli: Any, tmp_path: Path, tree: Path) -> None:
    (tmp_path / "snapshot.yaml").write_text(yaml.safe_dump(snapshot("gb200-2")), encoding="utf-8")
    result = cli("validate", "--recipe", str(tree / "pools/gb200/recipe.yaml"), "--snapshot",
                 str(tmp_path / "snapshot.yaml"), "--node-selector",
                 "node.kubernetes.io/instance-type=p6e-gb200.36xlarge")
    assert result.code == 0, result.err
    assert "2 node(s) in the snapshot" in result.out
    missing = cli("validate", "--recipe", str(tree / "pools/gb200/recipe.yaml"), "--snapshot",
                  str(tmp_path / "snapshot.yaml"), "--node-selector", "node.kubernetes.io/instance-type=p4d.24xlarge")
    assert missing.code == 1
    assert "no node of the snapshot has the labels node.kubernetes.io/instance-type=p4d.24xlarge" in missing.err
    assert_refused(cli("validate", "--snapshot", str(tmp_path / "snapshot.yaml")), "give --recipe FILE")
    assert_refused(cli("validate", "--recipe", str(tree / "recipe.yaml"), "--pool", "h100", "--snapshot",
                       str(tmp_path / "snapshot.yaml")), "--pool names pools of a spec")


# ------------------------------------------------------------------------------------------- bisect, report


def test_bisection_and_reports_keep_the_pool(cli: Any, tmp_path: Path, tree: Path) -> None:
    nodes = [f"gb200-{n:02d}" for n in range(1, 9)]
    cert = load(tree / "pools/gb200/certification/certification.yaml")
    cert["metadata"]["name"] = "gpu-certification-gb200-7xq2k"
    cert["status"] = {"conditions": [{"type": "Failed", "status": "True", "reason": "Failed", "message": ""}],
                      "categoryStatuses": [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Failed",
                                            "failedNodesRef": {"kind": "ConfigMap", "name": "failed"}}]}
    rows = json.dumps([{"name": node, "reason": "WorkloadFailed", "message": "job failed"} for node in nodes])
    configmap = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "failed", "namespace": "nvcre-system"},
                 "binaryData": {nvcre_status.FAILED_KEY: base64.b64encode(gzip.compress(rows.encode(), mtime=0))
                                .decode()}}
    (tmp_path / "cert.yaml").write_text(yaml.safe_dump(cert), encoding="utf-8")
    (tmp_path / "cm.yaml").write_text(yaml.safe_dump(configmap), encoding="utf-8")
    report = cli("report", "certification", str(tmp_path / "cert.yaml"), "--format", "json")
    assert json.loads(report.out)["pool"] == "gb200"
    text = cli("report", "certification", str(tmp_path / "cert.yaml"))
    assert "Certification gpu-certification-gb200-7xq2k (namespace nvcre-system), pool gb200" in text.out
    result = cli("bisect", "--certification", str(tmp_path / "cert.yaml"), "--failed-nodes", str(tmp_path / "cm.yaml"),
                 "--output", str(tmp_path / "round-1"))
    assert result.code == 0, result.err
    group = load(tmp_path / "round-1/certifications/group-01.yaml")
    assert group["metadata"]["labels"][nvcre.POOL_LABEL] == "gb200"
    assert group["metadata"]["generateName"] == "gpu-certification-gb200-7xq2k-r1-"
    assert bisect._prefix("a-very-long-certification-name-for-the-cluster-x", "gb200") == \
        "a-very-long-certification-name-for-gb200"


# ------------------------------------------------------------------------------------------- policy


def test_every_training_pool_needs_thresholds(cli: Any, tmp_path: Path) -> None:
    assert cli("lint", str(write(tmp_path, example()))).code == 0

    def drop(spec: dict[str, Any]) -> None:
        del spec["pools"][1]["certification"]["thresholds"]

    result = cli("policy", "check", str(variant(tmp_path, drop)))
    assert result.code == 1
    assert "training-pools-need-thresholds" in result.out
    assert "spec.pools.1.certification.thresholds" in result.out and "training pool gb200" in result.out
    assert "h100" not in result.out.replace("'value >= 300' for H100", "")

    def cluster_wide(spec: dict[str, Any]) -> None:
        drop(spec)
        spec["certification"] = {"categories": ["communication/nccl-all-reduce"],
                                 "thresholds": {"busBandwidthGBps": "value >= 40"}}

    assert cli("policy", "check", str(variant(tmp_path, cluster_wide))).code == 0
    token = variant(tmp_path, lambda spec: (drop(spec), spec["pools"][1]["certification"].update(
        thresholds={"busBandwidthGBps": "value > 0"})))
    result = cli("policy", "check", str(token))
    assert result.code == 1 and "training pool gb200 certifies against no real floor" in result.out, result
