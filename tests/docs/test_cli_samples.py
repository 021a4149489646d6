"""The sample inputs of ``examples/cli/`` are what the real tools write: the DCGM diagnostic validates against
DCGM's own schema of ``dcgmi diag -j``, and the nccl-tests logs are the upstream logs its README names, unchanged."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from tests.conftest import ROOT, needs
from tests.report.test_results import CLUSTER, DCGM_SCHEMA, DEGRADED_PAIR, FAILED_PAIR, ONE_NODE

SAMPLES = ROOT / "examples" / "cli"


@needs(DCGM_SCHEMA)
def test_the_dcgm_sample_is_dcgmi_diag_json() -> None:
    sample = json.loads((SAMPLES / "dcgm" / "diag-level4-failed.json").read_text())
    jsonschema.Draft7Validator(json.loads(DCGM_SCHEMA.read_text())).validate(sample)


@needs(CLUSTER)
@pytest.mark.parametrize(("sample", "upstream"), [("single-node-8xh100.log", ONE_NODE),
                                                  ("pair-degraded-2nodes.log", DEGRADED_PAIR),
                                                  ("pair-network-error-2nodes.log", FAILED_PAIR)])
def test_the_nccl_samples_are_the_upstream_logs(sample: str, upstream: Path) -> None:
    assert (SAMPLES / "nccl" / sample).read_bytes() == upstream.read_bytes()
    assert upstream.name in (SAMPLES / "README.md").read_text()  # it says where each log comes from
