"""``rollout`` loads a fleet's specs and reads its exported evidence in worker processes (``run_all``) when there
are many: the members, the evidence and every problem reported are the same as when one process reads them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops import render_many
from aicr_gen.gitops.commit.sync import open_repo
from aicr_gen.rollout import read
from tests.gitops.test_sync import init_repo
from tests.rollout import exported
from tests.spec.test_waves import CANARY, PROD, cluster, write_fleet

DIGEST = "sha256:" + "a" * 64
CLUSTERS = [f"c{index}" for index in range(9)]


def _workers(monkeypatch: pytest.MonkeyPatch, count: int) -> None:
    monkeypatch.setattr(render_many, "workers_for", lambda items, jobs: count)


def _failed(outcome: Any) -> Any:
    """An outcome as it compares: an error by its type and message (exceptions compare by identity)."""
    return (type(outcome.error), str(outcome.error)) if isinstance(outcome, read._Failed) else outcome


def test_exported_evidence_read_in_workers_is_the_one_read_here(monkeypatch: pytest.MonkeyPatch,
                                                                tmp_path: Path) -> None:
    for index, name in enumerate(CLUSTERS):
        exported.write(tmp_path, name, [*exported.certification(f"cert-{name}", DIGEST), exported.application(
            "0" * 40), *exported.nodes(2 + index, quarantined=(1,) if index == 4 else ())],
            exported.snapshot([{"name": "gpu-operator", "version": "v26.4.0"}]))
    broken = tmp_path / "c3" / "certifications.yaml"
    broken.write_text(broken.read_text().replace("creationTimestamp: '2026-12-01T10:00:00Z'", "creationTimestamp: [1]"))
    places = [(tmp_path, name) for name in [*CLUSTERS, "missing"]]
    _workers(monkeypatch, 2)
    forked = render_many.run_all(read._exported_or_error, places, render_many.workers_for(len(places), None), str)
    here = [read._exported_or_error(place) for place in places]
    assert [_failed(item) for item in forked] == [_failed(item) for item in here]
    assert _failed(here[3]) == (InvalidInputError, f"{broken}:9: items[0].metadata.creationTimestamp: expected a "
                                                   "string, found list")
    assert here[4].evidence.quarantine.quarantined == ("gpu-1",) and here[-1].error.startswith("no evidence folder")


def test_members_loaded_in_workers_are_the_ones_loaded_here(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "gitops")
    fleet = write_fleet(repo / "fleet.yaml", [{**CANARY, "clusters": CLUSTERS[:2]}, PROD])
    specs = [str(cluster(repo, name, None if index < 2 else {"ring": "prod"})) for index, name in enumerate(CLUSTERS)]

    def members(workers: int, files: list[str]) -> Any:
        _workers(monkeypatch, workers)
        try:
            return [(item.spec_file, item.cluster.model_dump(), item.wave)
                    for item in read.members(open_repo(str(repo)), fleet, files)]
        except InvalidInputError as err:
            return str(err)

    found = members(2, specs)
    assert found == members(1, specs)
    assert [wave for _file, _spec, wave in found] == ["canary"] * 2 + ["prod"] * 7
    bad = [*specs, str(cluster(repo, "nobody")), str(cluster(repo, "both", {"ring": "prod"}))]
    write_fleet(fleet, [{**CANARY, "clusters": [*CLUSTERS[:2], "both"]}, PROD])
    refused = members(2, bad)
    assert refused == members(1, bad)
    assert refused.startswith("2 spec(s) failed; nothing was read:\n") and "'nobody' is in no wave" in refused
    assert "'both' is in waves 'canary' and 'prod'" in refused
