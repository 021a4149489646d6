"""Rollout waves in a Fleet (issue 28, first part): every cluster extending the fleet is in exactly one wave, and
its wave's baseline (pins and overrides) lies between the fleet's spec and the cluster's, each value knowing the
fleet line it came from; a bad wave is refused at its line, by ``lint`` and by every cluster."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.spec.layered import origin_of
from aicr_gen.spec.load import load_spec
from tests.spec.test_fleet import FLEET_SPEC, write_cluster

CANARY = {"name": "canary", "clusters": ["a"], "soak": "24h",
          "spec": {"versions": {"gpu-operator": "v26.4.0"},
                   "overrides": {"set": ["gpu-operator:driver.version=590.44.01"]}}}
PROD = {"name": "prod", "selector": {"ring": "prod"}, "soak": "48h", "gates": ["certified", "healthy"]}


def write_fleet(path: Path, waves: list[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "Fleet",
                                    "metadata": {"name": "prod"}, "spec": FLEET_SPEC,
                                    "rollout": {"waves": waves}}, sort_keys=False))
    return path


def cluster(tmp_path: Path, name: str = "a", labels: dict[str, str] | None = None, **spec: Any) -> Path:
    path = write_cluster(tmp_path / "clusters" / f"{name}.yaml", "../fleet.yaml", **spec)
    data = yaml.safe_load(path.read_text())
    data["metadata"] = {"name": name, **({"labels": labels} if labels else {})}
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def line_of(path: Path, needle: str) -> int:
    """The last line holding ``needle`` (a wave's fields come after the fleet's spec)."""
    return max(number for number, line in enumerate(path.read_text().splitlines(), 1) if needle in line)


def test_the_waves_baseline_lies_between_the_fleet_and_the_cluster(tmp_path: Path) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", [CANARY, PROD])
    canary = load_spec(cluster(tmp_path, "a"))
    assert canary.spec.versions == {"gpu-operator": "v26.4.0", "nvsentinel": "v0.9.0"}  # maps merge
    assert canary.spec.overrides.set == ["gpu-operator:driver.version=590.44.01"]
    origin = origin_of(canary.document, ("spec", "versions", "gpu-operator"))  # type: ignore[attr-defined]
    assert (Path(origin.source).name, origin.line) == ("fleet.yaml", line_of(fleet, "gpu-operator: v26.4.0"))
    prod = load_spec(cluster(tmp_path, "b", labels={"ring": "prod"}))
    assert prod.spec.versions == {"gpu-operator": "v26.3.3", "nvsentinel": "v0.9.0"}  # the fleet's alone
    own = load_spec(cluster(tmp_path, "c", labels={"ring": "prod"}, versions={"gpu-operator": "v26.5.0"}))
    assert own.spec.versions["gpu-operator"] == "v26.5.0"  # the cluster's own pin wins over its wave's


def test_a_fleet_without_waves_layers_as_before(tmp_path: Path) -> None:
    from tests.spec.test_fleet import write_fleet as plain

    plain(tmp_path / "fleet.yaml")
    assert load_spec(cluster(tmp_path, "z")).spec.versions == {"gpu-operator": "v26.3.3", "nvsentinel": "v0.9.0"}


@pytest.mark.parametrize(("name", "labels", "fragment"), [
    ("nobody", None, "cluster 'nobody' is in no wave of the fleet"),
    ("a", {"ring": "prod"}, "cluster 'a' is in waves 'canary' and 'prod' of the fleet"),
])
def test_every_cluster_is_in_exactly_one_wave(cli: Any, tmp_path: Path, name: str, labels: dict[str, str] | None,
                                              fragment: str) -> None:
    write_fleet(tmp_path / "fleet.yaml", [CANARY, PROD])
    path = cluster(tmp_path, name, labels)
    with pytest.raises(InvalidInputError, match=fragment):
        load_spec(path)
    result = cli("lint", str(path))
    assert result.code == 2 and fragment in result.out + result.err and f"{path}:" in result.out + result.err


@pytest.mark.parametrize(("waves", "field", "fragment"), [
    ([CANARY, {**PROD, "name": "canary"}], "name: canary", "wave 'canary' is already waves[0]"),
    ([CANARY, {"name": "empty"}], "name: empty", "wave 'empty' selects no cluster"),
    ([{**CANARY, "soak": "a day"}], "soak: a day", "soak 'a day' is not a duration"),
    ([{**CANARY, "gates": ["certified", "blessed"]}], "blessed", "gates"),
    ([{**CANARY, "spec": {"deployers": ["helm"]}}], "deployers", "deployers"),  # a baseline: pins and overrides
])
def test_a_bad_wave_is_refused_at_its_line_by_lint(cli: Any, tmp_path: Path, waves: list[dict[str, Any]],
                                                   field: str, fragment: str) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", waves)
    result = cli("lint", str(fleet))
    assert result.code == 2 and fragment in result.out + result.err
    assert f"{fleet}:{line_of(fleet, field)}" in result.out + result.err


def test_the_fleet_schema_documents_waves(cli: Any) -> None:
    import json

    schema = json.loads(cli("schema", "fleet").out)
    wave = schema["$defs"]["Wave"]["properties"]
    assert set(wave) == {"name", "clusters", "selector", "soak", "gates", "spec"}
    assert wave["gates"]["items"]["enum"] == ["certified", "healthy", "no-drift", "no-quarantine"]


def test_a_bump_of_the_first_wave_moves_only_its_clusters_trees(cli: Any, tmp_path: Path) -> None:
    from tests.gitops.test_sync import git, init_repo

    repo = init_repo(tmp_path / "gitops")
    canary = {**CANARY, "spec": {"versions": {"gpu-operator": "v26.3.3"}}}
    write_fleet(repo / "fleet.yaml", [canary, PROD])
    for name, labels in (("a", None), ("b", {"ring": "prod"})):
        path = cluster(repo, name, labels)
        data = yaml.safe_load(path.read_text())
        data["spec"]["repo"]["path"] = f"clusters/{name}"
        path.write_text(yaml.safe_dump(data, sort_keys=False))
    specs = [str(repo / "clusters" / "a.yaml"), str(repo / "clusters" / "b.yaml")]
    assert cli("sync", *specs, "--repo", str(repo)).code == 0
    write_fleet(repo / "fleet.yaml", [{**canary, "spec": {"versions": {"gpu-operator": "v26.4.0"}}}, PROD])
    git(repo, "commit", "-qam", "canary: gpu-operator v26.4.0")
    result = cli("sync", *specs, "--repo", str(repo))
    assert result.code == 0, result.err
    changed = git(repo, "show", "--name-only", "--format=", "HEAD").split()
    assert any(name.startswith("clusters/a/") for name in changed)
    assert not any(name.startswith("clusters/b/") for name in changed)  # the prod wave's tree stays as it was
    # and so does its inputs record: it names the part of the fleet the prod wave renders from
    assert ".aicr-gen/inputs/clusters/b.json" not in changed
    record = json.loads((repo / ".aicr-gen/inputs/clusters/b.json").read_text())
    assert "fleet.yaml#wave=prod" in record["inputs"]
    assert "gpu-operator v26.3.3 -> v26.4.0" in git(repo, "log", "-1", "--format=%B")
    assert cli("sync", "--check", *specs, "--repo", str(repo)).code == 0
    # a soak or a gate is no input of any tree; the prod wave's own baseline is of its trees only
    write_fleet(repo / "fleet.yaml", [{**canary, "spec": {"versions": {"gpu-operator": "v26.4.0"}}, "soak": "1h"},
                                      {**PROD, "spec": {"versions": {"gpu-operator": "v26.4.0"}}}])
    stale = cli("sync", "--check", *specs, "--repo", str(repo))
    assert stale.code == 1
    assert "fleet.yaml#wave=prod changed (spec.extends)" in stale.err + stale.out
    assert "1 of 2 tree(s) up to date with HEAD; stale: clusters/b" in stale.out + stale.err
