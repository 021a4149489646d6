"""``aicr-gen validation-request``: an NVSentinel ValidationRequest that the real CRD accepts, refused (with
nothing written) wherever lifecycle-manager's admission webhook would refuse it."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from aicr_gen.sentinel import validation_request
from tests.conftest import REFERENCE, assert_refused, run_process, use_reference
from tests.consumers import _crd_version_schema, validate_manifests, validate_objects

CRD = (REFERENCE / "nvsentinel" / "distros" / "kubernetes" / "nvsentinel" / "charts" / "lifecycle-manager"
       / "crds" / "nvsentinel.nvidia.com_validationrequests.yaml")
SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


class YAMLSnapshot(SingleFileSnapshotExtension):
    """Snapshots stored as the literal YAML we emit, reviewable in pull requests."""

    _write_mode = WriteMode.TEXT
    file_extension = "yaml"


@functools.cache
def crd_schema() -> dict[tuple[str, str], dict[str, Any]]:
    """The reference ValidationRequest CRD as a JSON Schema, converted like ``crd_schemas()`` converts
    the CRDs it covers (unknown fields refused, apiVersion/kind pinned)."""
    crd = yaml.safe_load(use_reference(CRD).read_text(encoding="utf-8"))
    group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
    assert crd["spec"]["scope"] == "Cluster"
    return {(f"{group}/{version['name']}", kind): _crd_version_schema(version["schema"]["openAPIV3Schema"],
                                                                      f"{group}/{version['name']}", kind)
            for version in crd["spec"]["versions"] if version["served"]}


@pytest.fixture
def lifecycle_values(cli: Any, tmp_path: Path) -> Path:
    out = tmp_path / "nvsentinel-values.yaml"
    result = cli("sentinel", "values", "--mode", "quarantine", "--lifecycle", "--validation", "-o", str(out))
    assert result.code == 0, result.err
    return out


def written(tmp_path: Path) -> list[str]:
    return sorted(p.name for p in tmp_path.iterdir())


# ------------------------------------------------------------------------------------------ accepted


def test_a_request_validates_against_the_crd(cli: Any, tmp_path: Path, lifecycle_values: Path) -> None:
    out = tmp_path / "request.yaml"
    result = cli("validation-request", "--node", "gpu-node-1", "--node", "gpu-node-2.example.internal",
                 "--test", "dcgm-diag-test", "--test", "nccl-all-reduce", "--values", str(lifecycle_values),
                 "-o", str(out))
    assert result.code == 0, result.err
    request = yaml.safe_load(out.read_text(encoding="utf-8"))
    assert request["spec"] == {"nodes": [{"name": "gpu-node-1"}, {"name": "gpu-node-2.example.internal"}],
                               "tests": ["dcgm-diag-test", "nccl-all-reduce"]}
    assert "namespace" not in request["metadata"]  # cluster-scoped
    assert validate_manifests({"request.yaml": out.read_bytes()}, extra_schemas=crd_schema()) == 1


def test_a_request_is_pinned(cli: Any, snapshot: Any) -> None:
    result = cli("validation-request", "--node", "node-a", "--test", "dcgm-diag-test", "--test",
                 "nccl-loopback-nvswitch")
    assert result.code == 0, result.err
    assert result.out == snapshot(extension_class=YAMLSnapshot)
    validate_objects([yaml.safe_load(result.out)], extra_schemas=crd_schema())


def test_no_tests_means_the_default_tests(cli: Any, lifecycle_values: Path) -> None:
    result = cli("validation-request", "--node", "node-a", "--values", str(lifecycle_values))
    assert result.code == 0, result.err
    request = yaml.safe_load(result.out)
    assert request["spec"] == {"nodes": [{"name": "node-a"}]}
    validate_objects([request], extra_schemas=crd_schema())


def test_the_default_name_is_stable_and_tracks_the_spec() -> None:
    first = validation_request.build(["node-a"], ["dcgm-diag-test"])["metadata"]["name"]
    assert first == validation_request.build(["node-a"], ["dcgm-diag-test"])["metadata"]["name"]
    assert first.startswith("node-a-validation-")
    others = {validation_request.build(nodes, tests)["metadata"]["name"]
              for nodes, tests in ((["node-a"], []), (["node-b"], ["dcgm-diag-test"]),
                                   (["node-a", "node-b"], ["dcgm-diag-test"]))}
    assert first not in others
    assert len(others) == 3
    assert validation_request.build(["node-a"], name="mine")["metadata"]["name"] == "mine"


def test_the_default_name_fits_for_the_longest_node_names() -> None:
    long_node = ".".join(["a" * 63] * 3) + "." + "b" * 61  # 253 characters, a valid node name
    assert len(long_node) == 253
    for nodes in ([long_node], [long_node, "node-b"], ["a" * 62 + "-b." + "c" * 60]):
        name = validation_request.build(nodes)["metadata"]["name"]
        assert len(name) <= 253
        assert SUBDOMAIN.fullmatch(name), name


def test_requests_are_deterministic_across_processes(tmp_path: Path) -> None:
    args = ("validation-request", "--node", "node-b", "--node", "node-a", "--test", "dcgm-diag-test")
    first = run_process(*args, env={"PYTHONHASHSEED": "1"})
    second = run_process(*args, env={"PYTHONHASHSEED": "2"})
    assert first.code == 0, first.err
    assert first.out == second.out


# ------------------------------------------------------------------------------------------ refused


@pytest.mark.parametrize(("args", "fragments"), [
    (("--node", "node-a", "--node", "node-a"), ("--node node-a: given twice",)),
    (("--node", ""), ("--node '': a node name is empty",)),
    (("--node", "Node_A"), ("--node 'Node_A': not a valid node name", "DNS-1123")),
    (("--node", "node-a."), ("not a valid node name",)),
    (("--node=-node",), ("not a valid node name",)),
    (("--node", "a" * 254), ("not a valid node name",)),
    (("--node", "node-a\n"), ("not a valid node name",)),
    (("--node", "node-a", "--test", "dcgm-diag-test", "--test", "dcgm-diag-test"),
     ("--test dcgm-diag-test: given twice",)),
    (("--node", "node-a", "--test", "Bad Test"), ("--test 'Bad Test': not a test name",)),
    (("--node", "node-a", "--name", "Bad_Name"), ("--name 'Bad_Name': not a valid object name",)),
])
def test_bad_nodes_tests_and_names_are_refused(cli: Any, tmp_path: Path, args: tuple[str, ...],
                                               fragments: tuple[str, ...]) -> None:
    assert_refused(cli("validation-request", *args, "-o", str(tmp_path / "request.yaml")), *fragments)
    assert written(tmp_path) == []


def test_an_unknown_test_lists_the_valid_ones(cli: Any, tmp_path: Path, lifecycle_values: Path) -> None:
    result = cli("validation-request", "--node", "node-a", "--test", "dcgm-diag-test", "--test", "nccl-alltoall",
                 "--values", str(lifecycle_values), "-o", str(tmp_path / "request.yaml"))
    assert_refused(result, "--test 'nccl-alltoall': not a test of the lifecycle config in",
                   "valid tests: dcgm-diag-test, nccl-loopback-nvswitch, nccl-all-reduce")
    assert written(tmp_path) == [lifecycle_values.name]


def test_values_without_the_lifecycle_manager_are_refused(cli: Any, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    assert cli("sentinel", "values", "--mode", "quarantine", "-o", str(values)).code == 0
    result = cli("validation-request", "--node", "node-a", "--values", str(values), "-o", str(tmp_path / "r.yaml"))
    assert_refused(result, f"{values}:", "global.lifecycleManager.enabled: the lifecycle manager is not enabled",
                   "--lifecycle")
    assert written(tmp_path) == ["values.yaml"]


def test_values_without_tests_are_refused(cli: Any, tmp_path: Path) -> None:
    values = tmp_path / "values.yaml"
    values.write_text("global:\n  lifecycleManager:\n    enabled: true\nlifecycle-manager:\n  config:\n"
                      "    tests: {}\n", encoding="utf-8")
    assert_refused(cli("validation-request", "--node", "node-a", "--values", str(values)),
                   f"{values}:6: lifecycle-manager.config.tests: no lifecycle tests are defined")
    values.write_text("global:\n  lifecycleManager:\n    enabled: true\nlifecycle-manager:\n  config:\n"
                      "    tests: {dcgm-diag-test: {}}\n", encoding="utf-8")
    assert_refused(cli("validation-request", "--node", "node-a", "--values", str(values)),
                   "no --test given", "has no defaultTests", "valid: dcgm-diag-test")


def test_a_missing_values_file_is_refused(cli: Any, tmp_path: Path) -> None:
    assert_refused(cli("validation-request", "--node", "node-a", "--values", str(tmp_path / "nope.yaml")),
                   "--values", "cannot read")
