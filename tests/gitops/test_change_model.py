"""``gitops/review/model.py``: one model of a change, from which ``sync``'s commit message and ``plan`` (text,
Markdown, JSON) are written, so they name the same change the same way for one spec or fifty.

The end-to-end cases run ``plan`` against the base, then ``sync``, on real Git repositories, and check that the
commit (``git log``) says what the plan said: the plan's JSON, read back into the model, renders the very
sections the commit message holds.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.gitops.review.changes import CERTIFICATION, RECIPE, SENTINEL, component_change
from aicr_gen.gitops.review.compare import compare
from aicr_gen.gitops.review.model import Changes, change_sections, fleet_sections, headline
from aicr_gen.gitops.review.plan import ClusterPlan
from tests.conftest import ROOT, Result, run_process
from tests.gitops.test_sync import ENV, git, init_repo
from tests.gitops.test_sync_specs import bump, fleet_repo

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
NAME = "h100-eks-ubuntu-inference-dynamo"
Run = Callable[..., Result]


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in ENV.items():
        monkeypatch.setenv(key, value)


# ----------------------------------------------------------------------------------- versions, by the one parser

@pytest.mark.parametrize(("old", "new", "kind"), [
    ("v26.3.3", "v26.4.0", "bumped"),
    ("26.3.3", "v26.4.0", "bumped"),  # with and without the leading v
    ("v26.4.0", "26.3.3", "downgraded"),
    ("v25.10.1", "v25.3.4", "downgraded"),  # numerically, not as text
    ("580.95.05", "590.48.01", "bumped"),  # a driver's three numbers
    ("580.173.02", "570.195.03", "downgraded"),
    ("1.34.0-rc.1", "1.34.0", "bumped"),  # a release after its candidate
    ("1.34.0", "1.34.0-rc.1", "downgraded"),
    ("6.8.0-1015-aws", "6.8.0-1020-aws", "bumped"),  # distro builds
    ("v0.1.0-alpha.8", "v0.1.0-alpha.10", "bumped"),
    ("sha256-abc", "sha256-def", "changed"),  # not versions: neither newer nor older
    ("v26.3.3", "26.3.3", "changed"),  # the same version spelt another way
])
def test_a_version_change_is_named_by_the_version_parser(old: str, new: str, kind: str) -> None:
    found = component_change("gpu-operator", {"version": old}, {"version": new})
    assert found is not None and found.change == kind
    assert found.text == f"{'DOWNGRADED' if kind == 'downgraded' else kind} gpu-operator {old} -> {new}"


def test_added_removed_and_moved_components() -> None:
    assert component_change("a", None, {"version": "1.0.0"}).text == "added a 1.0.0"  # type: ignore[union-attr]
    assert component_change("a", {"version": "1.0.0"}, None).text == "removed a 1.0.0"  # type: ignore[union-attr]
    moved = component_change("a", {"version": "v1"}, {"version": "1"}, ("namespace x -> y",))
    assert moved is not None and moved.change == "moved" and moved.text == "moved a 1 (namespace x -> y)"
    assert component_change("a", {"version": "1"}, {"version": "1"}) is None


# -------------------------------------------------------------------------------- NVSentinel, certification

def _sentinel(mode: str, breaker: dict[str, Any] | None = None, *, dry_run: bool = False) -> dict[str, bytes]:
    values: dict[str, Any] = {"global": {"dryRun": dry_run, "faultQuarantine": {"enabled": mode == "quarantine"}}}
    if breaker is not None:
        values["fault-quarantine"] = {"circuitBreaker": breaker}
    return {RECIPE: b"componentRefs: []\n", SENTINEL: yaml.safe_dump(values).encode()}


def _risks(old: dict[str, bytes], new: dict[str, bytes]) -> list[tuple[str, str]]:
    return [(item.category, item.text) for item in compare(old, new).highRisk]


def test_absent_breaker_settings_are_named_never_a_dash() -> None:
    found = compare(_sentinel("monitor"), _sentinel("quarantine", {"enabled": True, "percentage": 10,
                                                                   "duration": "5m"}))
    assert found.sentinel == ["mode monitor -> quarantine", "circuit breaker percentage unset -> 10%",
                              "circuit breaker duration unset -> 5m"]
    assert all(" - " not in line for line in found.sentinel)
    bounded = compare(_sentinel("quarantine", {"percentage": 10, "duration": "5m"}),
                      _sentinel("quarantine", {"percentage": 10, "duration": "5m", "maxNodes": 2}))
    assert bounded.sentinel == ["circuit breaker maxNodes no bound -> 2"]
    assert bounded.highRisk == []  # a new bound is stricter


@pytest.mark.parametrize(("before", "after", "risky"), [
    ({"percentage": 10}, {"percentage": 50}, ["circuit breaker loosened: percentage 10% -> 50%"]),
    ({"percentage": 50}, {"percentage": 10}, []),
    # the breaker trips on cordons within its window: a shorter window counts fewer, so trips later
    ({"duration": "10m"}, {"duration": "1m"}, ["circuit breaker loosened: duration 10m -> 1m"]),
    ({"duration": "1m"}, {"duration": "1h"}, []),
    ({"maxNodes": 2}, {"maxNodes": 8}, ["circuit breaker loosened: maxNodes 2 -> 8"]),
    ({"maxNodes": 2}, {}, ["circuit breaker loosened: maxNodes 2 -> no bound"]),
    ({"maxNodes": 8}, {"maxNodes": 2}, []),
    ({"enabled": True}, {"enabled": False}, ["circuit breaker off: nothing bounds how many nodes are cordoned"]),
])
def test_a_looser_circuit_breaker_is_high_risk(before: dict[str, Any], after: dict[str, Any],
                                                risky: list[str]) -> None:
    base = {"enabled": True, "percentage": 50, "duration": "5m"}
    risks = _risks(_sentinel("quarantine", {**base, **before}), _sentinel("quarantine", {**base, **after}))
    assert risks == [("nvsentinel", text) for text in risky]


def _certification(categories: list[str], thresholds: dict[str, str]) -> dict[str, bytes]:
    spec = {"categories": [{"domain": item.split("/")[0], "variant": item.split("/")[1]} for item in categories],
            "thresholds": thresholds}
    return {RECIPE: b"componentRefs: []\n", CERTIFICATION: yaml.safe_dump({"spec": spec}).encode()}


def test_certification_added_or_removed_says_what_it_enforces() -> None:
    empty = {RECIPE: b"componentRefs: []\n"}
    cert = _certification(["communication/nccl-all-reduce"], {"busBandwidthGBps": "value >= 300"})
    assert compare(empty, cert).certification == [
        "certification added", "category added: communication/nccl-all-reduce",
        "threshold busBandwidthGBps added: value >= 300"]
    assert compare(empty, _certification(["communication/nccl-all-reduce"], {})).certification == [
        "certification added", "category added: communication/nccl-all-reduce",
        "no thresholds: results are reported, none fails the run"]
    removed = compare(cert, empty)
    assert removed.certification == ["certification removed", "category removed: communication/nccl-all-reduce",
                                     "threshold busBandwidthGBps removed (was value >= 300)"]
    assert [item.category for item in removed.highRisk] == ["certification", "certification"]
    changed = compare(cert, _certification(["communication/nccl-all-reduce"], {"busBandwidthGBps": "value >= 250"}))
    assert changed.certification == ["threshold busBandwidthGBps: value >= 300 -> value >= 250"]
    assert [item.text for item in changed.highRisk] == [
        "threshold busBandwidthGBps loosened: value >= 300 -> value >= 250"]


def test_a_pools_certification_loosened_or_removed_is_high_risk() -> None:
    def pools(**specs: dict[str, Any]) -> dict[str, bytes]:
        return {RECIPE: b"componentRefs: []\n", **{f"pools/{pool}/{CERTIFICATION}": yaml.safe_dump({"spec": spec})
                                                   .encode() for pool, spec in specs.items()}}

    nccl = [{"domain": "communication", "variant": "nccl-all-reduce"}]
    old = pools(h100={"categories": nccl, "thresholds": {"busBandwidthGBps": "value >= 300"}},
                gb200={"categories": nccl, "thresholds": {"busBandwidthGBps": "value >= 500"}})
    new = pools(h100={"categories": nccl, "thresholds": {"busBandwidthGBps": "value >= 200"}})
    assert [(item.category, item.text) for item in compare(old, new).highRisk] == [
        ("certification", "pool gb200: certification removed"),
        ("certification", "pool gb200: category removed: communication/nccl-all-reduce"),
        ("certification", "pool h100: threshold busBandwidthGBps loosened: value >= 300 -> value >= 200")]


def test_headline_names_a_few_changes_else_their_kinds() -> None:
    one = compare({RECIPE: b"componentRefs: [{name: gpu-operator, version: v25.10.1}]\n"},
                  {RECIPE: b"componentRefs: [{name: gpu-operator, version: v26.3.3}]\n"})
    assert headline(one) == "gpu-operator v25.10.1 -> v26.3.3"
    refs = "".join(f"  - {{name: c{index}, version: 1.0.{index}}}\n" for index in range(5))
    after = refs.replace("1.0.", "2.0.").replace("c4, version: 2", "c4, version: 0")
    many = compare({RECIPE: f"componentRefs:\n{refs}".encode()}, {RECIPE: f"componentRefs:\n{after}".encode()})
    assert headline(many) == "4 bumped, 1 DOWNGRADED"
    assert [item.category for item in many.highRisk] == ["downgrade"]


# ------------------------------------------------------------------------------- the commit and the plan agree

def _spec(tmp_path: Path, change: Callable[[dict[str, Any]], object] = lambda data: None) -> Path:
    data = yaml.safe_load(EXAMPLE.read_text())
    change(data)
    target = tmp_path / "spec.yaml"
    target.write_text(yaml.safe_dump(data))
    return target


def _edit(spec: Path, change: Callable[[dict[str, Any]], object]) -> None:
    data = yaml.safe_load(spec.read_text())
    change(data)
    spec.write_text(yaml.safe_dump(data))


class Reviewed:
    """A change as a reviewer sees it: the plan in three formats (against the base), then the commit sync made."""

    def __init__(self, run: Run, repo: Path, specs: list[str]) -> None:
        plans = [run("plan", *specs, "--repo", str(repo), "--format", form) for form in ("text", "markdown", "json")]
        for result in plans:
            assert result.code == 0 and result.err == "", result
        self.text, self.markdown = plans[0].out, plans[1].out
        self.clusters = [ClusterPlan.model_validate(item) for item in json.loads(plans[2].out)["clusters"]]
        synced = run("sync", *specs, "--repo", str(repo))
        assert synced.code == 0, synced
        self.message = git(repo, "log", "-1", "--format=%B")
        self.changes: list[Changes] = [cluster for cluster in self.clusters if cluster.changed]




def test_one_cluster_bump_reads_the_same_in_the_commit_and_the_plan(cli: Run, tmp_path: Path) -> None:
    repo, spec = init_repo(tmp_path / "gitops"), _spec(tmp_path, lambda data: data["spec"].update(
        versions={"gpu-operator": "v25.10.1"}))
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    _edit(spec, lambda data: data["spec"].update(versions={"gpu-operator": "v26.3.3"}))
    seen = Reviewed(cli, repo, [str(spec)])
    (changes,) = seen.changes
    title, _blank, *body = seen.message.splitlines()
    assert title == f"aicr-gen: sync {NAME}: gpu-operator v25.10.1 -> v26.3.3"
    sections = change_sections(changes)
    assert "\n".join(sections) in "\n".join(body)  # the JSON plan, read back, renders the commit's own sections
    assert "\n".join(sections) in seen.text
    assert sections[0] == "High-risk:" and "- GPU operator: bumped gpu-operator v25.10.1 -> v26.3.3" in sections
    assert "Components:\n- bumped gpu-operator v25.10.1 -> v26.3.3\n" in seen.message
    assert "- bumped gpu-operator v25.10.1 -> v26.3.3" in seen.markdown
    assert "GPU operator: bumped gpu-operator v25.10.1 -> v26.3.3" in seen.markdown
    assert seen.message.rstrip().splitlines()[-2].startswith("Aicr-Gen-Recipe-Digest: sha256:")

    _edit(spec, lambda data: data["spec"].update(versions={"gpu-operator": "v25.10.1"}))
    back = Reviewed(cli, repo, [str(spec)])
    assert back.message.startswith(f"aicr-gen: sync {NAME}: gpu-operator v26.3.3 -> v25.10.1\n")
    assert "- GPU operator: DOWNGRADED gpu-operator v26.3.3 -> v25.10.1" in back.message
    assert "- DOWNGRADED gpu-operator v26.3.3 -> v25.10.1" in back.text
    assert "DOWNGRADED gpu-operator v26.3.3 -> v25.10.1" in back.markdown
    assert back.clusters[0].components[0].change == "downgraded"


def test_adding_a_mirror_moves_every_source_and_is_high_risk(cli: Run, tmp_path: Path) -> None:
    repo, spec = init_repo(tmp_path / "gitops"), _spec(tmp_path)
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    _edit(spec, lambda data: data["spec"].update(mirror={"charts": "oci://mirror.example:5000/charts",
                                                         "images": "mirror.example:5000"}))
    seen = Reviewed(cli, repo, [str(spec)])
    (cluster,) = seen.clusters
    moved = [item for item in cluster.components if item.change == "moved"]
    assert len(moved) == len(cluster.components) >= 10
    assert all(item.details[0].endswith(" -> oci://mirror.example:5000/charts") for item in moved)
    sources = [item.text for item in cluster.highRisk if item.category == "sources"]
    assert sources[0] == f"{len(moved)} charts now pulled from oci://mirror.example:5000/charts (from " \
                         f"{len({item.details[0].split()[1] for item in moved})} repositories before)"
    assert f"{len(moved)} components" in seen.markdown and "0 high-risk" not in seen.markdown
    assert f"\u26a0\ufe0f {len(cluster.highRisk)} high-risk" in seen.markdown
    assert seen.message.startswith(f"aicr-gen: sync {NAME}: {len(moved)} chart sources moved, image sources moved\n")
    assert f"- sources: {sources[0]}" in seen.message and f"- sources: {sources[0]}" in seen.text
    assert "\n".join(change_sections(cluster)) in seen.message


def test_loosening_the_breaker_is_high_risk_in_the_commit_and_the_plan(cli: Run, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "gitops")
    spec = _spec(tmp_path, lambda data: data["spec"]["sentinel"].update(
        mode="quarantine", breaker={"percentage": 10, "duration": "10m", "maxNodes": 2}))
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    _edit(spec, lambda data: data["spec"]["sentinel"].update(breaker={"percentage": 50, "duration": "1m"}))
    seen = Reviewed(cli, repo, [str(spec)])
    risks = ["NVSentinel: circuit breaker loosened: percentage 10% -> 50%",
             "NVSentinel: circuit breaker loosened: duration 10m -> 1m",
             "NVSentinel: circuit breaker loosened: maxNodes 2 -> no bound"]
    assert f"High-risk:\n- {risks[0]}\n- {risks[1]}\n- {risks[2]}\n" in seen.message
    assert f"High-risk:\n- {risks[0]}\n- {risks[1]}\n- {risks[2]}\n" in seen.text
    assert all(risk in seen.markdown for risk in risks)
    assert "NVSentinel:\n- circuit breaker percentage 10% -> 50%\n- circuit breaker duration 10m -> 1m\n" \
           "- circuit breaker maxNodes 2 -> no bound\n" in seen.message
    assert seen.message.startswith(f"aicr-gen: sync {NAME}: NVSentinel circuit breaker\n")


def test_a_fleet_wide_bump_of_fifty_reads_the_same_in_the_commit_and_the_plan(tmp_path: Path) -> None:
    """50 specs extending one fleet file, as the pre-commit hook and the action run them: real processes."""
    repo = fleet_repo(tmp_path / "gitops", 50)
    specs = [str(repo / "specs" / "*.yaml")]

    def run(*args: str) -> Result:
        return run_process(*args, "--jobs", "2", env=ENV, cwd=repo) if args[0] in ("sync", "plan") \
            else run_process(*args, env=ENV, cwd=repo)

    assert run("sync", *specs, "--repo", str(repo)).code == 0
    bump(repo)
    seen = Reviewed(run, repo, specs)
    assert len(seen.changes) == 50
    title, _blank, count, *body = seen.message.splitlines()
    assert title == "aicr-gen: sync 50 clusters: gpu-operator v26.3.3 -> v26.4.0"
    assert count == "50 of 50 clusters changed."
    # the JSON plan, read back into the model, renders exactly the commit's High-risk and Changes sections
    shared = fleet_sections([(cluster.name, cluster) for cluster in seen.clusters])
    assert "\n".join(shared) in "\n".join(["", *body])
    assert "\n".join(shared) in seen.text
    assert "- 50 clusters: GPU operator: bumped gpu-operator v26.3.3 -> v26.4.0" in shared
    assert "- 50 clusters: bumped gpu-operator v26.3.3 -> v26.4.0" in shared
    assert all(f"- c{number:02d}: gpu-operator v26.3.3 -> v26.4.0; " in seen.message for number in range(50))
    assert "bumped gpu-operator v26.3.3 -> v26.4.0 on 50 clusters:" in seen.markdown
    assert len(seen.message) < 20_000  # grouped: one line per change, one per cluster
