"""``aicr-gen bisect``: isolating bad nodes over rounds of Certifications.

The algorithm is checked on simulated clusters (the oracle: a group passes iff it holds no bad node),
counting rounds against log2(N); then the command is driven end to end against a fake cluster that
"runs" each generated Certification and writes back its status and gzip failed-nodes ConfigMap, as
NVCRE would, until the bisection names the bad nodes.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.certify import bisect, nvcre_status, report_model
from aicr_gen.certify.bisect import Group, Outcome, plan_round, simulate
from tests.conftest import assert_refused

NODES = [f"gpu-node-{i:02d}" for i in range(1, 65)]


# ------------------------------------------------------------------------------------------------ simulation


@pytest.mark.parametrize("bad", [
    {"gpu-node-17"},
    {"gpu-node-17", "gpu-node-42"},
    {"gpu-node-09", "gpu-node-10"},  # neighbours: they stay in one group until the last split
    {"gpu-node-01", "gpu-node-33", "gpu-node-64"},
])
def test_64_nodes_bisect_to_exactly_the_bad_ones_in_log2_rounds(bad: set[str]) -> None:
    sim = simulate(NODES, bad)
    assert sim.suspects == tuple(sorted(bad))
    # One full-scale round, then one round per halving: 64 -> 32 -> 16 -> 8 -> 4 -> 2 -> 1 (+ a healthy pad).
    assert sim.rounds - 1 == math.ceil(math.log2(len(NODES))) == 6
    # Each bad node costs at most two groups per round; never more than exhaustive per-node testing.
    assert sim.tests <= 1 + 2 * len(bad) * 6 < len(NODES)
    assert sim.widest <= 2 * len(bad)


def test_rounds_and_tests_against_log2() -> None:
    """Rounds stay ceil(log2 N) + 1 whatever the cluster size; tests grow with d log2 N, not N."""
    table = []
    for size in (4, 10, 37, 100, 256, 1000):
        nodes = [f"n{i:04d}" for i in range(size)]
        bad = {nodes[size // 3]}
        sim = simulate(nodes, bad)
        table.append((size, sim.rounds, sim.tests))
        assert sim.suspects == tuple(bad)
        assert sim.rounds - 1 <= math.ceil(math.log2(size))
        assert sim.tests <= 2 * math.ceil(math.log2(size)) + 1
    assert table[-1] == (1000, 11, 21)


def test_no_healthy_node_to_pad_with_leaves_the_last_group_suspect() -> None:
    """The known limit: a failing group smaller than 2 x minGroupSize is split only with healthy padding;
    in a cluster where nothing passed yet, its members all stay suspect (and the evidence says why)."""
    sim = simulate(["gpu-node-01", "gpu-node-02"], {"gpu-node-01", "gpu-node-02"})
    assert (sim.rounds, sim.suspects) == (1, ("gpu-node-01", "gpu-node-02"))
    assert simulate(["n1", "n2", "n3"], {"n2"}).suspects == ("n1", "n2", "n3")
    plan = plan_round([Outcome(Group(("a", "b")), passed=False)], round_number=0, min_group_size=2)
    assert plan.done
    assert {s.evidence for s in plan.suspects} == {
        "in a failing group of 2 that cannot be split below minGroupSize 2: no known-healthy node to pad with"}


def test_every_node_bad_and_a_clean_cluster() -> None:
    assert simulate(NODES[:8], NODES[:8]).suspects == tuple(NODES[:8])
    assert simulate(NODES, ()) == bisect.Simulation(rounds=1, tests=1, widest=1, suspects=())


@pytest.mark.parametrize("min_group_size", [1, 2, 3, 5])
def test_min_group_size_is_never_undercut(min_group_size: int) -> None:
    bad = {"gpu-node-05", "gpu-node-50"}
    plan = plan_round([Outcome(Group(tuple(NODES)), passed=False)], round_number=0, min_group_size=min_group_size)
    while not plan.done:
        assert all(len(g.nodes) >= min_group_size for g in plan.groups)
        assert all(not set(g.padding) & bad and set(g.padding) <= set(plan.healthy) for g in plan.groups)
        outcomes = [Outcome(g, passed=bad.isdisjoint(g.nodes)) for g in plan.groups]
        plan = plan_round(outcomes, round_number=plan.round, min_group_size=min_group_size, healthy=plan.healthy,
                          suspects=plan.suspects)
    assert {s.name for s in plan.suspects} == bad


def test_padding_rotates_through_healthy_nodes() -> None:
    outcomes = [Outcome(Group(("a", "b")), passed=False), Outcome(Group(("c", "d")), passed=False)]
    plan = plan_round(outcomes, round_number=3, min_group_size=2, healthy=("h1", "h2", "h3"))
    assert [(g.nodes, g.padding) for g in plan.groups] == [
        (("a", "h1"), ("h1",)), (("b", "h2"), ("h2",)), (("c", "h3"), ("h3",)), (("d", "h1"), ("h1",))]
    assert plan.round == 4


def test_a_failed_list_naming_some_members_clears_the_others() -> None:
    """NVCRE names a node it saw cordoned mid-run (HardwareFailureDetected): the rest of the group passed."""
    row = report_model.FailedNode("b", "HardwareFailureDetected", "node cordoned mid-run")
    plan = plan_round([Outcome(Group(("a", "b", "c", "d")), passed=False, failed=(row,))], round_number=0,
                      min_group_size=2)
    assert plan.done
    assert plan.healthy == ("a", "c", "d")
    assert plan.suspects == (bisect.Suspect("b", "HardwareFailureDetected", "node cordoned mid-run",
                                            "the only member of a failing group not proven healthy"),)


# ------------------------------------------------------------------------------------------------ the command


def gz64(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, mtime=0)).decode()


def failed_configmap(name: str, nodes: list[str], reason: str = "WorkloadFailed") -> dict[str, Any]:
    rows = [{"name": n, "reason": reason, "message": "job failed: BackoffLimitExceeded"} for n in nodes]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "nvcre-system"},
            "binaryData": {nvcre_status.FAILED_KEY: gz64(json.dumps(rows).encode())}}


def succeeded_configmap(name: str, nodes: list[str]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "nvcre-system"},
            "binaryData": {nvcre_status.SUCCEEDED_KEY: gz64(",".join(nodes).encode())}}


SPEC = {"target": {"nodeSelector": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"},
                   "taintSelectors": [{"key": "burn-in", "effect": "NoSchedule"}]},
        "categories": [{"domain": "diagnostics", "variant": "dcgm-level4"},
                       {"domain": "communication", "variant": "nccl-all-reduce",
                        "options": {"thresholds": {"busBandwidthGBps": "value >= 300"}}}],
        "gpusPerNode": 8, "timeoutPerJob": "30m"}


def root_certification(status: str = "Failed", failing: str = "nccl-all-reduce") -> dict[str, Any]:
    cats = []
    for entry in SPEC["categories"]:
        variant = entry["variant"]
        cat = {"domain": entry["domain"], "variant": variant, "status": status if variant == failing else "Succeeded"}
        if variant == failing and status == "Failed":
            cat["failedNodesRef"] = {"kind": "ConfigMap", "name": f"gpu-cert-{variant}-failed"}
        cats.append(cat)
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
            "metadata": {"name": "gpu-cert", "namespace": "nvcre-system"}, "spec": SPEC,
            "status": {"conditions": [{"type": status, "status": "True", "reason": status, "message": ""}],
                       "categoryStatuses": cats}}


def dump(path: Path, data: Any) -> str:
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return str(path)


class FakeCluster:
    """Runs generated Certifications like NVCRE: a group fails iff it holds a bad node, and a failed
    category's ConfigMap then names every node of the group (WorkloadFailed), as for a failed NCCL job."""

    def __init__(self, bad: set[str]) -> None:
        self.bad = bad
        self.created = 0

    def run(self, folder: Path) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        certs, configmaps = [], []
        for file in sorted((folder / "certifications").iterdir()):
            cert = yaml.safe_load(file.read_text())
            self.created += 1
            name = f"{cert['metadata'].pop('generateName')}{self.created:05d}"
            cert["metadata"]["name"] = name
            nodes = cert["spec"]["target"]["nodeNames"]
            passed = self.bad.isdisjoint(nodes)
            status = "Succeeded" if passed else "Failed"
            cats = []
            for entry in cert["spec"]["categories"]:
                cat = {"domain": entry["domain"], "variant": entry["variant"], "status": status}
                ref = f"{name}-{entry['variant']}-{'succeeded' if passed else 'failed'}"
                cat["succeededNodesRef" if passed else "failedNodesRef"] = {"kind": "ConfigMap", "name": ref}
                configmaps.append(succeeded_configmap(ref, nodes) if passed else failed_configmap(ref, nodes))
                cats.append(cat)
            cert["status"] = {"conditions": [{"type": status, "status": "True", "reason": status, "message": ""}],
                              "categoryStatuses": cats}
            certs.append(cert)
        return certs, configmaps


def test_bisect_command_end_to_end_finds_the_bad_nodes(tmp_path: Path, cli: Any) -> None:
    nodes, bad = NODES[:16], {"gpu-node-05", "gpu-node-12"}
    cluster = FakeCluster(bad)
    cert = dump(tmp_path / "cert.yaml", root_certification())
    nodes_cm = dump(tmp_path / "cm.yaml", failed_configmap("gpu-cert-nccl-all-reduce-failed", nodes))
    out = tmp_path / "round-1"
    result = cli("bisect", "--certification", cert, "--failed-nodes", nodes_cm, "--output", str(out))
    assert result.code == 0, result.err
    assert "Bisection of gpu-cert, round 1: 2 Certification(s) to run" in result.out
    assert f"kubectl create -f {out}/certifications/" in result.out
    assert cli("verify", str(out)).code == 0
    first = yaml.safe_load((out / "certifications/group-01.yaml").read_text())
    assert first["apiVersion"] == "nvcre.nvidia.com/v1alpha1"
    assert first["metadata"]["generateName"] == "gpu-cert-r1-"
    assert first["metadata"]["namespace"] == "nvcre-system"
    assert first["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "aicr-gen", bisect.LABEL_OF: "gpu-cert",
                                           bisect.LABEL_ROUND: "1", bisect.LABEL_GROUP: "1"}
    assert first["spec"] == {"target": {"nodeNames": nodes[:8], "taintSelectors": SPEC["target"]["taintSelectors"]},
                             "categories": [SPEC["categories"][1]], "gpusPerNode": 8, "timeoutPerJob": "30m"}
    plan = json.loads((out / "bisect.json").read_text())
    assert [g["nodes"] for g in plan["groups"]] == [nodes[:8], nodes[8:]]

    rounds = 1
    while (out / "certifications").is_dir():
        certs, configmaps = cluster.run(out)
        listed = dump(tmp_path / f"round-{rounds}.yaml", {"apiVersion": "v1", "kind": "List", "items": certs})
        cms = dump(tmp_path / f"round-{rounds}-cms.yaml", {"apiVersion": "v1", "kind": "List", "items": configmaps})
        rounds += 1
        out = tmp_path / f"round-{rounds}"
        result = cli("bisect", "--certification", listed, "--failed-nodes", cms, "--output", str(out))
        assert result.code in (0, 1), result.err
    assert result.code == 1
    found = json.loads((out / "suspects.json").read_text())
    assert [s["name"] for s in found["suspects"]] == sorted(bad)
    assert {s["reason"] for s in found["suspects"]} == {"WorkloadFailed"}
    assert all(s["evidence"].startswith("failed in a group whose other member(s)") for s in found["suspects"])
    assert (found["done"], found["round"]) == (True, 4)
    assert rounds - 1 == math.ceil(math.log2(len(nodes)))  # bisection rounds after the full-scale run
    assert "Bisection of gpu-cert finished after round 4: 2 suspect node(s)" in result.out
    assert (out / "suspects.txt").read_text() == result.out
    assert cluster.created == 2 + 4 + 4 + 4  # Certifications run after the first; testing each node would take 16


def test_per_node_category_failures_need_no_bisection(tmp_path: Path, cli: Any) -> None:
    doc = root_certification(failing="dcgm-level4")
    doc["spec"] = {**SPEC, "target": {"nodeNames": NODES[:4]}}
    cm = failed_configmap("gpu-cert-dcgm-level4-failed", ["gpu-node-03"], reason="WorkloadFailed")
    result = cli("bisect", "--certification", dump(tmp_path / "c.yaml", doc), "--failed-nodes",
                 dump(tmp_path / "cm.yaml", cm), "--output", str(tmp_path / "out"))
    assert result.code == 1, result.err
    found = json.loads((tmp_path / "out/suspects.json").read_text())
    assert [(s["name"], s["evidence"]) for s in found["suspects"]] == [("gpu-node-03", "failed on its own")]
    assert found["healthyNodes"] == 3


def test_a_passed_certification_leaves_nothing_to_bisect(tmp_path: Path, cli: Any) -> None:
    doc = root_certification(status="Succeeded")
    result = cli("bisect", "--certification", dump(tmp_path / "c.yaml", doc), "--failed-nodes",
                 dump(tmp_path / "cm.yaml", {"apiVersion": "v1", "kind": "List", "items": []}),
                 "--output", str(tmp_path / "out"))
    assert result.code == 0, result.err
    assert "No suspect: every group passed." in result.out


def test_small_groups_are_padded_with_known_healthy_nodes(tmp_path: Path, cli: Any) -> None:
    """Three failed nodes out of a six-node target: the other three are healthy, so halves of one suspect
    are padded to minGroupSize with them."""
    doc = root_certification()
    doc["spec"] = {**SPEC, "target": {"nodeNames": NODES[:6]}}
    cm = failed_configmap("gpu-cert-nccl-all-reduce-failed", NODES[:3])
    result = cli("bisect", "--certification", dump(tmp_path / "c.yaml", doc), "--failed-nodes",
                 dump(tmp_path / "cm.yaml", cm), "--min-group-size", "3", "--output", str(tmp_path / "out"))
    assert result.code == 0, result.err
    plan = json.loads((tmp_path / "out/bisect.json").read_text())
    assert [(g["suspects"], g["padding"]) for g in plan["groups"]] == [
        (NODES[:2], ["gpu-node-04"]), (NODES[2:3], ["gpu-node-05", "gpu-node-06"])]
    second = yaml.safe_load((tmp_path / "out/certifications/group-02.yaml").read_text())
    annotations = second["metadata"]["annotations"]
    assert annotations[bisect.ANN_PADDING] == "gpu-node-05,gpu-node-06"
    assert annotations[bisect.ANN_HEALTHY] == "gpu-node-04,gpu-node-05,gpu-node-06"


@pytest.mark.parametrize(("inputs", "flags", "fragment"), [
    ((root_certification(status="InProgress"), None), [], "has not finished (no Succeeded or Failed condition)"),
    ((root_certification(), {"apiVersion": "v1", "kind": "List", "items": []}), [],
     "targets a node selector and no failed-nodes list names its nodes"),
    ((root_certification(), None), ["--min-group-size", "0"], "--min-group-size 0: give 1 or more"),
    (({"apiVersion": "v1", "kind": "List", "items": [root_certification(), root_certification()]}, None), [],
     "2 Certifications that no bisection made"),
])
def test_bisect_refusals(tmp_path: Path, cli: Any, inputs: tuple[dict[str, Any], dict[str, Any] | None],
                         flags: list[str], fragment: str) -> None:
    doc, cm = inputs
    config = cm if cm is not None else failed_configmap("gpu-cert-nccl-all-reduce-failed", NODES[:4])
    result = cli("bisect", "--certification", dump(tmp_path / "c.yaml", doc), "--failed-nodes",
                 dump(tmp_path / "cm.yaml", config), "--output", str(tmp_path / "out"), *flags)
    assert_refused(result, fragment)
    assert not (tmp_path / "out").exists()


def test_rounds_from_different_bisections_are_refused(tmp_path: Path, cli: Any) -> None:
    cluster = FakeCluster({"gpu-node-01"})
    cert = dump(tmp_path / "cert.yaml", root_certification())
    cms = dump(tmp_path / "cm.yaml", failed_configmap("gpu-cert-nccl-all-reduce-failed", NODES[:8]))
    assert cli("bisect", "--certification", cert, "--failed-nodes", cms, "--output", str(tmp_path / "r1")).code == 0
    certs, configmaps = cluster.run(tmp_path / "r1")
    certs[1]["metadata"]["labels"][bisect.LABEL_ROUND] = "7"
    result = cli("bisect", "--certification", dump(tmp_path / "l.yaml", {"kind": "List", "items": certs}),
                 "--failed-nodes", dump(tmp_path / "m.yaml", {"kind": "List", "items": configmaps}),
                 "--output", str(tmp_path / "r2"))
    assert_refused(result, "come from different bisections or rounds")
