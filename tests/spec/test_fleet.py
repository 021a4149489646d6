"""Fleets: defaults many ClusterSpecs share (``spec.extends``), layered as Helm layers values files, with every
value's origin; ``spec show``, ``schema fleet``, ``lint`` of fleets, and ``sync`` committing and watching them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.trees.recipes import resolve_spec
from aicr_gen.spec.layered import origin_of
from aicr_gen.spec.load import load_spec
from tests.cli.test_main import YAMLSnapshot
from tests.conftest import ROOT, assert_refused
from tests.gitops.fleets import FLEET, shared_repo
from tests.gitops.test_sync import git, init_repo
from tests.nvcre_elsewhere import POLICY_FILE, write_policy

EXAMPLES = ROOT / "examples" / "fleet"
CRITERIA = {"service": "eks", "accelerator": "h100", "intent": "inference", "os": "ubuntu", "platform": "dynamo"}
FLEET_SPEC: dict[str, Any] = {
    "deployers": ["argocd", "flux"],
    "repo": {"url": "https://github.com/example/gitops.git", "branch": "release"},
    "versions": {"gpu-operator": "v26.3.3", "nvsentinel": "v0.9.0"},
    "certification": {"categories": ["communication/nccl-all-reduce"],
                      "thresholds": {"busBandwidthGBps": "value >= 300"}},
    "sentinel": {"mode": "monitor"},
    "snapshot": {"configmap": "cm://aicr/snapshot"},
}


@pytest.fixture(autouse=True)
def _identity(monkeypatch: pytest.MonkeyPatch) -> None:
    for key, value in {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
                       "GIT_COMMITTER_EMAIL": "t@example.com"}.items():
        monkeypatch.setenv(key, value)


def write_fleet(path: Path, spec: dict[str, Any] | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "Fleet",
                                    "metadata": {"name": "prod"}, "spec": FLEET_SPEC if spec is None else spec},
                                   sort_keys=False))
    return path


def write_cluster(path: Path, extends: str | None, **spec: Any) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    body = {**({"extends": extends} if extends else {}), "criteria": CRITERIA, "repo": {"path": "clusters/a"},
            **spec, "policies": [POLICY_FILE]}  # the fleet certifies inference clusters: NVCRE installed outside
    write_policy(path.parent)
    path.write_text(yaml.safe_dump({"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "ClusterSpec",
                                    "metadata": {"name": "a"}, "spec": body}, sort_keys=False))
    return path


def layered(tmp_path: Path, **spec: Any) -> Any:
    write_fleet(tmp_path / "fleet.yaml")
    return load_spec(write_cluster(tmp_path / "clusters" / "a.yaml", "../fleet.yaml", **spec))


# ------------------------------------------------------------------------------------------ merge semantics


@pytest.mark.parametrize(("cluster", "field", "expected"), [
    ({}, "versions", {"gpu-operator": "v26.3.3", "nvsentinel": "v0.9.0"}),  # absent: the fleet's
    ({"versions": {"gpu-operator": "v26.5.0", "nvcre": "v1.0.0"}}, "versions",  # maps merge, the cluster's wins
     {"gpu-operator": "v26.5.0", "nvsentinel": "v0.9.0", "nvcre": "v1.0.0"}),
    ({"versions": {"nvsentinel": None}}, "versions", {"gpu-operator": "v26.3.3"}),  # null removes one key
    ({"versions": None}, "versions", {}),  # null removes the map: the ClusterSpec default
    ({"deployers": ["helm"]}, "deployers", ["helm"]),  # lists replace
    ({"certification": {"categories": ["communication/nccl-all-gather"]}}, "certification",  # the map merges
     {"categories": ["communication/nccl-all-gather"], "thresholds": {"busBandwidthGBps": "value >= 300"},
      "options": {}, "nodeSelector": {},
      "schedule": None, "postChange": False}),
    ({"repo": {"path": "clusters/a", "branch": "main"}}, "repo",  # scalars: the cluster's wins
     {"url": "https://github.com/example/gitops.git", "path": "clusters/a", "branch": "main"}),
    ({"repo": {"path": "clusters/a", "branch": None}}, "repo",  # null: the field's default (main)
     {"url": "https://github.com/example/gitops.git", "path": "clusters/a", "branch": "main"}),
    ({"sentinel": None}, "sentinel", None),  # a whole section removed
])
def test_merge_semantics(tmp_path: Path, cluster: dict[str, Any], field: str, expected: Any) -> None:
    spec = layered(tmp_path, **cluster).spec
    value = getattr(spec, field)
    assert (value.model_dump() if hasattr(value, "model_dump") else value) == expected


def test_a_spec_without_extends_is_read_as_before(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text((ROOT / "examples" / "eks-h100-inference-dynamo.yaml").read_text())
    cluster = load_spec(spec)
    assert cluster.spec.extends is None
    assert origin_of(cluster.document, ("spec", "repo", "url")) == (str(spec), 21, None)


def test_every_value_knows_the_file_and_line_it_came_from(tmp_path: Path) -> None:
    cluster = layered(tmp_path, versions={"gpu-operator": "v26.5.0"})
    fleet, mine = str(tmp_path / "fleet.yaml"), str(tmp_path / "clusters" / "a.yaml")
    lines = {path: origin_of(cluster.document, path)[:2] for path in
             [("spec", "versions", "gpu-operator"), ("spec", "versions", "nvsentinel"), ("spec", "repo", "url"),
              ("spec", "repo", "path"), ("spec", "deployers", 1), ("metadata", "name")]}
    assert lines == {("spec", "versions", "gpu-operator"): (mine, 16), ("spec", "versions", "nvsentinel"): (fleet, 14),
                     ("spec", "repo", "url"): (fleet, 10), ("spec", "repo", "path"): (mine, 14),
                     ("spec", "deployers", 1): (fleet, 8), ("metadata", "name"): (mine, 4)}
    assert cluster.origin("spec.certification.thresholds") == (fleet, 18)  # as policies report a finding


# ------------------------------------------------------------------------------- errors name file and line


def test_a_bad_fleet_value_is_reported_at_the_fleet_line(tmp_path: Path) -> None:
    certification = {"categories": ["communication/nccl-all-reduce"], "schedule": "61 * * * *"}
    write_fleet(tmp_path / "fleet.yaml", {**FLEET_SPEC, "certification": certification})
    spec = write_cluster(tmp_path / "a.yaml", "fleet.yaml")
    with pytest.raises(InvalidInputError, match=rf"^{tmp_path}/fleet.yaml:18: spec.certification.schedule: "):
        load_spec(spec)


def test_a_bad_cluster_value_over_a_fleet_is_reported_at_the_cluster_line(tmp_path: Path) -> None:
    write_fleet(tmp_path / "fleet.yaml")
    spec = write_cluster(tmp_path / "a.yaml", "fleet.yaml", sentinel={"mode": "panic"})
    with pytest.raises(InvalidInputError, match=rf"^{tmp_path}/a.yaml:16: spec.sentinel.mode: value 'panic'"):
        load_spec(spec)


def test_a_field_neither_gives_is_missing_in_the_cluster_file(tmp_path: Path) -> None:
    write_fleet(tmp_path / "fleet.yaml", {key: value for key, value in FLEET_SPEC.items() if key != "deployers"})
    spec = write_cluster(tmp_path / "a.yaml", "fleet.yaml")
    with pytest.raises(InvalidInputError, match=rf"^{tmp_path}/a.yaml:5: spec.deployers: required field"):
        load_spec(spec)


@pytest.mark.parametrize(("fleet_spec", "message"), [
    ({**FLEET_SPEC, "criteria": CRITERIA}, "fleet.yaml:24: spec.criteria: criteria are per cluster; set them in "
                                           "each ClusterSpec"),
    ({**FLEET_SPEC, "repo": {"url": "https://x.example/g.git", "path": "clusters/all"}},
     "fleet.yaml:11: spec.repo.path: repo.path is per cluster"),
    ({"extends": "base.yaml", **FLEET_SPEC}, "fleet.yaml:6: spec.extends: a Fleet extends nothing"),
    ({**FLEET_SPEC, "deployer": ["helm"]}, "fleet.yaml:24: spec.deployer: unknown field 'deployer'; did you mean "
                                           "'deployers'?"),
    ({**FLEET_SPEC, "catalogs": ["missing"]}, "fleet.yaml:25: spec.catalogs[0]: 'missing': no such file or folder "
                                              "beside the fleet"),
])
def test_a_bad_fleet_is_refused_by_lint_and_by_its_clusters(cli: Any, tmp_path: Path, fleet_spec: dict[str, Any],
                                                             message: str) -> None:
    fleet = write_fleet(tmp_path / "fleet.yaml", fleet_spec)
    assert_refused(cli("lint", str(fleet)), f"{tmp_path}/{message}")
    spec = write_cluster(tmp_path / "a.yaml", "fleet.yaml")
    assert_refused(cli("lint", str(spec)), f"{tmp_path}/{message}", f"(the fleet named by {spec}:6: spec.extends)")


@pytest.mark.parametrize(("extends", "message"), [
    ("nope.yaml", "'nope.yaml': no such file"),
    ("/etc/fleet.yaml", "must be a relative POSIX path"),
    ("..\\fleet.yaml", "must be a relative POSIX path"),
    ("other.yaml", "other.yaml:2: kind: kind is 'ClusterSpec', not Fleet"),
])
def test_extends_must_name_a_fleet_file(cli: Any, tmp_path: Path, extends: str, message: str) -> None:
    write_cluster(tmp_path / "other.yaml", None, deployers=["helm"])
    spec = write_cluster(tmp_path / "a.yaml", extends)
    assert_refused(cli("lint", str(spec)), message)
    if "kind" not in message:
        assert_refused(cli("lint", str(spec)), f"{spec}:6: spec.extends: ")


def test_a_fleet_outside_the_repository_is_refused(tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "gitops")
    write_fleet(tmp_path / "fleet.yaml")
    spec = write_cluster(repo / "specs" / "a.yaml", "../../fleet.yaml")
    with pytest.raises(InvalidInputError, match=r"a.yaml:6: spec.extends: '../../fleet.yaml' leads out of the Git"):
        load_spec(spec)


# ------------------------------------------------------------------------------------------- path rebasing


def test_fleet_paths_are_rebased_onto_the_cluster_folder(tmp_path: Path) -> None:
    (tmp_path / "fleets" / "catalog").mkdir(parents=True)
    (tmp_path / "fleets" / "rules.yaml").write_text("[]\n")
    write_fleet(tmp_path / "fleets" / "prod.yaml", {
        **FLEET_SPEC, "catalogs": ["catalog", "/opt/catalog"], "policies": [],
        "sentinel": {"mode": "quarantine", "rules": "rules.yaml"}})
    (tmp_path / "opt").mkdir()
    spec = write_cluster(tmp_path / "clusters" / "east" / "a.yaml", "../../fleets/prod.yaml")
    text = (tmp_path / "fleets" / "prod.yaml").read_text().replace("/opt/catalog", str(tmp_path / "opt"))
    (tmp_path / "fleets" / "prod.yaml").write_text(text)
    cluster = load_spec(spec)
    assert cluster.spec.catalogs == ["../../fleets/catalog", str(tmp_path / "opt")]  # absolute ones stay
    assert cluster.spec.sentinel is not None and cluster.spec.sentinel.rules == "../../fleets/rules.yaml"
    assert (spec.parent / cluster.spec.sentinel.rules).resolve() == tmp_path / "fleets" / "rules.yaml"
    assert origin_of(cluster.document, ("spec", "catalogs", 0)).written == "catalog"
    assert origin_of(cluster.document, ("spec", "catalogs", 1)).written is None
    # the cluster's own paths are its own: relative to its folder, never rebased
    (spec.parent / "mine").mkdir()
    write_cluster(spec, "../../fleets/prod.yaml", catalogs=["mine"])
    assert load_spec(spec).spec.catalogs == ["mine"]


# --------------------------------------------------------------------------------------- schema and examples


def test_schema_fleet_validates_the_examples_and_the_clusterspec_schema_allows_extends(cli: Any) -> None:
    fleet_schema, cluster_schema = (json.loads(cli("schema", kind).out) for kind in ("fleet", "clusterspec"))
    assert fleet_schema["$id"].endswith("/fleet.json") and fleet_schema["title"] == "Fleet"
    jsonschema.validate(yaml.safe_load((EXAMPLES / "fleet.yaml").read_text()), fleet_schema)
    clusters = sorted((EXAMPLES / "clusters").glob("*.yaml"))
    assert len(clusters) == 2
    for example in clusters:
        data = yaml.safe_load(example.read_text())
        jsonschema.validate(data, cluster_schema)  # deployers and repo.url come from the fleet
        del data["spec"]["extends"]
        with pytest.raises(jsonschema.ValidationError):  # without a fleet the file must give them
            jsonschema.validate(data, cluster_schema)
    with_criteria = yaml.safe_load((EXAMPLES / "fleet.yaml").read_text())
    with_criteria["spec"]["criteria"] = CRITERIA
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(with_criteria, fleet_schema)


def test_schema_says_fleet_paths_are_relative_to_the_fleet(cli: Any) -> None:
    spec = json.loads(cli("schema", "fleet").out)["$defs"]["FleetSpec"]["properties"]
    assert "relative to the Fleet file's folder" in spec["catalogs"]["description"]
    assert "criteria" not in spec and "extends" not in spec


@pytest.mark.parametrize("example", sorted((EXAMPLES / "clusters").glob("*.yaml")), ids=lambda path: path.name)
def test_fleet_examples_lint_and_resolve(cli: Any, example: Path) -> None:
    result = cli("lint", str(EXAMPLES / "fleet.yaml"), str(example))
    assert result.code == 0, result
    recipe = resolve_spec(load_spec(example), example.parent)
    assert recipe["criteria"]["accelerator"] == "h100"


# ----------------------------------------------------------------------------------------------- spec show


def test_spec_show_prints_origins_and_is_deterministic(cli: Any, snapshot: Any, monkeypatch: pytest.MonkeyPatch,
                                                       tmp_path: Path) -> None:
    shutil.copytree(EXAMPLES, tmp_path / "fleet")
    monkeypatch.chdir(tmp_path)
    first = cli("spec", "show", "fleet/clusters/kind-h100-dev.yaml")
    assert first.code == 0, first
    assert first.out == snapshot(extension_class=YAMLSnapshot)
    assert cli("spec", "show", "fleet/clusters/kind-h100-dev.yaml").out == first.out
    assert "url: \"https://github.com/example/gitops.git\"  # fleet/fleet.yaml:12\n" in first.out
    assert "gpu-operator: \"v26.3.2\"  # fleet/clusters/kind-h100-dev.yaml:20\n" in first.out
    assert "sentinel" not in first.out.split("\n", 1)[1]  # removed by the cluster's null
    assert yaml.safe_load(first.out)["spec"]["deployers"] == ["helm"]


def test_spec_show_json(cli: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    (tmp_path / "fleets" / "catalog").mkdir(parents=True)
    write_fleet(tmp_path / "fleets" / "prod.yaml", {**FLEET_SPEC, "catalogs": ["catalog"]})
    write_cluster(tmp_path / "clusters" / "a.yaml", "../fleets/prod.yaml")
    monkeypatch.chdir(tmp_path)
    result = cli("spec", "show", "clusters/a.yaml", "--format", "json")
    assert result.code == 0, result
    shown = json.loads(result.out)
    assert shown["spec"]["spec"]["catalogs"] == ["../fleets/catalog"]
    assert shown["origins"]["spec.catalogs[0]"] == "fleets/prod.yaml:25"
    assert shown["origins"]["spec.repo.path"] == "clusters/a.yaml:14"
    assert shown["origins"]["spec.versions.gpu-operator"] == "fleets/prod.yaml:13"
    assert shown["rebased"] == {"spec.catalogs[0]": "catalog"}
    assert cli("spec", "show", "clusters/a.yaml", "--format", "json").out == result.out


# -------------------------------------------------------------------------------------------------- lint


def test_lint_names_the_fleet_for_a_policy_finding_on_a_fleet_value(cli: Any, tmp_path: Path) -> None:
    write_fleet(tmp_path / "fleet.yaml")
    spec = write_cluster(tmp_path / "a.yaml", "fleet.yaml")
    result = cli("lint", str(spec), "--format", "json")
    assert result.code == 0, result
    warnings = json.loads(result.out)["files"][0]["warnings"]
    found = {item["path"]: (item["file"], item["line"]) for item in warnings}
    assert found["spec.certification.categories"] == (str(tmp_path / "fleet.yaml"), 16)


# ------------------------------------------------------------------------------------------------- sync


def test_sync_commits_the_fleet_and_check_goes_stale_when_it_changes(cli: Any, tmp_path: Path) -> None:
    repo = init_repo(tmp_path / "gitops")
    fleet = write_fleet(repo / "fleets" / "prod.yaml", {**FLEET_SPEC, "deployers": ["argocd"]})
    spec = write_cluster(repo / "specs" / "a.yaml", "../fleets/prod.yaml")
    result = cli("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    assert git(repo, "show", "HEAD:fleets/prod.yaml") == fleet.read_text()
    assert "- fleets/prod.yaml\n- specs/a.yaml" in git(repo, "log", "-1", "--format=%B")
    assert cli("sync", str(spec), "--repo", str(repo), "--check").code == 0
    assert cli("sync", str(spec), "--repo", str(repo), "--check").code == 0  # answered from the fingerprint
    fleet.write_text(fleet.read_text().replace("v26.3.3", "v26.5.0"))
    stale = cli("sync", str(spec), "--repo", str(repo), "--check")
    assert stale.code == 1
    assert "stale   clusters/a/recipe.yaml" in stale.err
    assert cli("sync", str(spec), "--repo", str(repo)).code == 0
    assert "v26.5.0" in git(repo, "show", "HEAD:fleets/prod.yaml")
    assert_refused(cli("sync", str(fleet), "--repo", str(repo), "--check"), "prod.yaml:2: kind: this file is a Fleet")
    assert git(repo, "status", "--porcelain", "--untracked-files=all") == ""
    assert cli("sync", str(spec), "--repo", str(repo), "--check").code == 0
    shutil.copy(fleet, spec.parent / "fleet.yaml")  # a pattern over the specs' folder skips a fleet beside them
    assert cli("sync", f"{spec.parent}/*.yaml", "--repo", str(repo), "--check").code == 0


def test_the_fleet_is_read_and_validated_once_per_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.spec import fleet
    from aicr_gen.spec.load import load_spec
    repo = shared_repo(tmp_path / "gitops")
    real, parsed = fleet.parse_fleet, []
    monkeypatch.setattr(fleet, "parse_fleet", lambda doc: parsed.append(doc.source) or real(doc))
    loaded = [load_spec(path) for path in sorted((repo / "specs").glob("*.yaml"))]
    assert parsed == [str(repo / "fleet.yaml")]
    assert {cluster.spec.versions["gpu-operator"] for cluster in loaded} == {"v26.3.3"}
    (repo / "fleet.yaml").write_text(FLEET.replace("v26.3.3", "v26.4.0"))  # new bytes: read again
    assert load_spec(repo / "specs" / "gpu-a.yaml").spec.versions["gpu-operator"] == "v26.4.0"
    assert len(parsed) == 2
    (repo / "fleet.yaml").write_text(FLEET.replace("  argocd:", "  criteria: {service: eks}\n  argocd:"))
    messages = []
    for _ in range(2):  # an invalid fleet: the same message every time
        with pytest.raises(InvalidInputError) as err:
            load_spec(repo / "specs" / "gpu-a.yaml")
        messages.append(str(err.value))
    assert messages[0] == messages[1] and "criteria are per cluster" in messages[0]


def test_a_path_the_fleet_names_is_looked_for_on_every_load(tmp_path: Path) -> None:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.spec.load import load_spec
    repo = shared_repo(tmp_path / "gitops", names=("gpu-a",))
    shutil.copytree(ROOT / "overlays", repo / "catalog")
    (repo / "fleet.yaml").write_text(FLEET.replace("spec:\n", "spec:\n  catalogs: [catalog]\n", 1))
    assert load_spec(repo / "specs" / "gpu-a.yaml").spec.catalogs == ["../catalog"]
    shutil.rmtree(repo / "catalog")
    with pytest.raises(InvalidInputError, match=r"'catalog': no such file or folder beside the fleet"):
        load_spec(repo / "specs" / "gpu-a.yaml")


def test_spec_init_extends_a_fleet_with_a_spec_that_lints(cli: Any, tmp_path: Path) -> None:
    root = init_repo(tmp_path / "repo")
    shutil.copytree(ROOT / "examples" / "fleet", root, dirs_exist_ok=True)
    target = root / "clusters" / "new.yaml"
    made = cli("spec", "init", "--extends", str(root / "fleet.yaml"), "--service", "eks", "--accelerator", "h100",
               "--intent", "training", "--os", "ubuntu", "--platform", "kubeflow", "-o", str(target))
    assert made.code == 0, made
    text = target.read_text()
    assert 'extends: "../fleet.yaml"' in text and "deployers" not in text and "url:" not in text
    assert 'path: "clusters/h100-eks-ubuntu-training-kubeflow"' in text
    assert "busBandwidthGBps" in text  # the fleet sets no thresholds, a training cluster needs some
    assert "# argocd:" in text  # the fleet's Argo CD is shared: say where a destination goes
    assert len(text.splitlines()) < 31  # the schema modeline, then short
    assert cli("lint", str(root / "fleet.yaml"), str(target)).code == 0
    shown = cli("spec", "show", str(target))
    assert shown.code == 0 and 'gpu-operator: "v26.3.3"  # ' in shown.out and "fleet.yaml:15\n" in shown.out
    bad = cli("spec", "init", "--extends", str(root / "clusters" / "kind-h100-dev.yaml"), "--service", "eks")
    assert bad.code == 2 and "not Fleet" in bad.err
