"""Nothing dead passes lint (issue 25): configuration that does nothing, or a rule that can never act, is an error at
the file and line that wrote it, in ``lint``, ``sync`` and ``rules test``; and the shipped policies pass what is fine:
a spec as ``spec init`` writes it on every leaf of both catalogs (ours and AICR's).

The story: a team writes a training cluster with a custom NVSentinel rule, a certification and pools; every piece of
it that would silently do nothing (a rule reading ``event.errorCodes``, thresholds without categories, a
certification on a recipe without NVCRE, ``value > 0``) stops at the gate with the line to fix, and the explicit
ways to say "I mean it" (a disabled rule set, a policy replaced by name) pass.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.certify.thresholds import DEGRADED, real
from tests.conftest import AICR_CATALOG, ROOT, Result, needs_reference

REPO_URL = "https://github.com/example/gitops.git"
XID = "event.agent == 'syslog-health-monitor' && event.errorCode != null && event.errorCode.exists(e, e == '79')"
OPT_OUT = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Policy
metadata:
  name: {name}
spec:
  description: NVCRE is installed by the platform team, outside this repository
  severity: warning
  target: {target}
  rule: "false"
  message: certified by the platform team's NVCRE
"""


def _spec(folder: Path, edit: Callable[[dict[str, Any]], Any] | None = None, *, name: str = "dead") -> Path:
    """A training cluster that deploys NVCRE (gke/h100/training/cos/kubeflow), certified against a real floor,
    in quarantine mode; ``edit`` changes its ``spec``."""
    spec: dict[str, Any] = {
        "criteria": {"service": "gke", "accelerator": "h100", "intent": "training", "os": "cos",
                     "platform": "kubeflow"},
        "deployers": ["argocd"],
        "repo": {"url": REPO_URL, "path": f"clusters/{name}"},
        "certification": {"categories": ["communication/nccl-all-reduce"],
                          "thresholds": {"busBandwidthGBps": "value >= 300"}},
        "sentinel": {"mode": "quarantine", "breaker": {"percentage": 10}},
    }
    if edit is not None:
        edit(spec)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yaml"
    document = {"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "ClusterSpec", "metadata": {"name": name},
                "spec": spec}
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    return path


def _line(path: Path, text: str) -> int:
    return next(number for number, line in enumerate(path.read_text().splitlines(), 1) if text in line)


def _rules(folder: Path, expression: str, *, kind: str = "HealthEvent", enabled: bool | None = None) -> Path:
    rule_set: dict[str, Any] = {"name": "XID 79 codes", "match": {"all": [{"kind": kind, "expression": expression}]},
                                "cordon": {"shouldCordon": True}}
    if enabled is not None:
        rule_set = {"enabled": enabled, **rule_set}
    path = folder / "rules.yaml"
    path.write_text(yaml.safe_dump({"ruleSets": [rule_set]}, sort_keys=False))
    return path


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    folder = tmp_path / "gitops"
    (folder / "clusters").mkdir(parents=True)
    for command in (["init", "-q", "-b", "main"], ["commit", "-q", "--allow-empty", "-m", "init"]):
        subprocess.run(["git", *command], cwd=folder, check=True, capture_output=True)
    return folder


def _head(repo: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True,
                          text=True).stdout.strip()


def _refused_at(result: Result, file: Path, line: int, *fragments: str, code: int = 2) -> None:
    """Exit ``code`` with a message naming ``file:line`` and every fragment; no traceback, no internal error."""
    text = result.out + result.err
    assert result.code == code, result
    assert re.search(rf"{re.escape(str(file))}:{line}:(\d+:)? ", text) or code == 1, text
    for fragment in fragments:
        assert fragment in text, (fragment, text)
    assert "Traceback" not in text and "internal error" not in text, text


# ------------------------------------------------------------------------------ NVSentinel rules that never act


@pytest.mark.parametrize(("kind", "expression", "said"), [
    ("HealthEvent", "event.errorCodes.exists(e, e == '79')", "event has no field 'errorCodes'; did you mean "
                                                             "'errorCode'?"),
    ("HealthEvent", "event.isFatal == 'true'", "event.isFatal is a bool"),
    ("HealthEvent", "event.recommendedAction == 'RESTART_VM'", "write 15 (RESTART_VM)"),
    ("Node", "node.status.allocatable['nvidia.com/gpu'] == '8'", "node.status is never available"),
    ("Node", "node.metdata.labels['pool'] == 'gb200'", "a Node has no field 'metdata'"),
])
def test_a_rule_that_never_acts_stops_lint_and_sync_at_its_line(cli: Any, repo: Path, kind: str, expression: str,
                                                                said: str) -> None:
    folder = repo / "clusters"
    rules = _rules(folder, expression, kind=kind)
    spec = _spec(folder, lambda spec: spec["sentinel"].update(rules="rules.yaml"))
    line = _line(rules, "expression:")
    fix = "fix the expression, or disable the rule set (enabled: false)"
    _refused_at(cli("lint", str(spec)), rules, line, "ruleSets[0].match.all[0].expression", said, fix)
    before = _head(repo)
    _refused_at(cli("sync", str(spec), "--repo", str(repo)), rules, line, said, fix)
    assert _head(repo) == before  # nothing committed
    _refused_at(cli("sentinel", "values", "--mode", "quarantine", "--rules", str(rules)), rules, line, said)


def test_a_disabled_rule_set_is_the_explicit_way_to_keep_one(cli: Any, repo: Path) -> None:
    folder = repo / "clusters"
    _rules(folder, "event.errorCodes.exists(e, e == '79')", enabled=False)
    spec = _spec(folder, lambda spec: spec["sentinel"].update(rules="rules.yaml"))
    result = cli("lint", str(spec))
    assert result.code == 0, result
    _rules(folder, XID)  # and a rule that reads real fields passes as it did
    assert cli("lint", str(spec)).code == 0


def _event(folder: Path, name: str, **fields: Any) -> None:
    event = {"nodeName": "gpu-1", "agent": "syslog-health-monitor", "checkName": "SysLogsXIDError",
             "componentClass": "GPU", "isFatal": True, **fields}
    (folder / f"{name}.yaml").write_text(yaml.safe_dump(event))


def test_rules_test_exits_1_on_a_rule_that_fails_on_every_event_naming_its_line(cli: Any, tmp_path: Path) -> None:
    events = tmp_path / "events"
    events.mkdir()
    _event(events, "xid-79", errorCode=["79"])
    _event(events, "xid-48", errorCode=["48"])
    rules = _rules(tmp_path, "event.errorCode.exists(e, e == '79') || event.errorCodes.exists(e, e == '79')")
    result = cli("rules", "test", "--values", str(rules), "--events", str(events))
    rule_line = _line(rules, "- kind: HealthEvent")
    assert result.code == 0, result  # it works on xid-79 (true before the bad half), fails on xid-48: a warning
    assert f"{rules}:{rule_line}: " in result.err and "failed on 1 event(s)" in result.err
    rules = _rules(tmp_path, "event.errorCodes.exists(e, e == '79')")
    result = cli("rules", "test", "--values", str(rules), "--events", str(events))
    _refused_at(result, rules, rule_line, "1 rule(s) never match", "failed on every event it was evaluated on (2)",
                "no such key: errorCodes", "disable their rule set (enabled: false)", code=1)
    assert f"{rules}:{rule_line}: ruleSets[0].match.all[0] (rule set 'XID 79 codes')" in result.err
    assert "EVENT" in result.out  # the table is still printed
    _rules(tmp_path, "event.errorCodes.exists(e, e == '79')", enabled=False)
    assert cli("rules", "test", "--values", str(rules), "--events", str(events)).code == 0


# ------------------------------------------------------------------------------ certification that does nothing


def test_thresholds_without_categories_are_refused_at_their_line(cli: Any, repo: Path) -> None:
    spec = _spec(repo / "clusters", lambda spec: spec.update(certification={
        "categories": [], "thresholds": {"busBandwidthGBps": "value >= 300"}}))
    message = ("spec.certification.thresholds: thresholds apply to the certification's categories, and it lists "
               "none, so nothing uses them")
    for command in (("lint", str(spec)), ("sync", str(spec), "--repo", str(repo)), ("policy", "check", str(spec))):
        _refused_at(cli(*command), spec, _line(spec, "thresholds:"), message, "communication/nccl-all-reduce")


def test_a_node_selector_no_certification_uses_is_refused_at_its_line(cli: Any, tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda spec: spec.update(certification={"categories": [],
                                                                   "nodeSelector": {"pool": "h100"}}))
    _refused_at(cli("lint", str(spec)), spec, _line(spec, "nodeSelector:"),
                "spec.certification.nodeSelector: selects the nodes the certification's categories run on, and no "
                "category is listed", "list the categories or drop the field")
    spec = _spec(tmp_path, lambda spec: (_pools(spec), spec.update(certification={
        "categories": [], "nodeSelector": {"nvidia.com/gpu.present": "true"}})))
    assert cli("lint", str(spec)).code == 0  # the pools' Certifications target it too


def test_certification_without_nvcre_is_an_error_unless_the_policy_is_replaced(cli: Any, repo: Path) -> None:
    folder = repo / "clusters"
    inference = {"service": "eks", "accelerator": "h100", "intent": "inference", "os": "ubuntu",
                 "platform": "dynamo"}
    spec = _spec(folder, lambda spec: spec.update(criteria=inference))
    result = cli("lint", str(spec))
    _refused_at(result, spec, 0, "certification-needs-nvcre", "spec.certification.categories",
                "nothing runs this certification: the cluster deploys no nvcre component", code=1)
    before = _head(repo)
    _refused_at(cli("sync", str(spec), "--repo", str(repo)), spec, 0, "certification-needs-nvcre", code=1)
    assert _head(repo) == before
    data = yaml.safe_load(cli("lint", str(spec), "--format", "json").out)
    [error] = data["files"][0]["errors"]
    assert (error["file"], error["line"]) == (str(spec), _line(spec, "categories:"))
    (folder / "nvcre-elsewhere.yaml").write_text(OPT_OUT.format(name="certification-needs-nvcre", target="spec"))
    spec = _spec(folder, lambda spec: spec.update(criteria=inference, policies=["nvcre-elsewhere.yaml"]))
    result = cli("lint", str(spec))
    assert result.code == 0 and "certified by the platform team's NVCRE" in result.out, result


def test_nvcre_switched_off_by_an_override_runs_nothing(cli: Any, tmp_path: Path) -> None:
    spec = _spec(tmp_path, lambda spec: spec.update(overrides={"set": ["nvcre:enabled=false"]}))
    result = cli("policy", "check", str(spec))
    assert result.code == 1 and "error certification-needs-nvcre spec.certification.categories" in result.out


def _pools(spec: dict[str, Any]) -> None:
    example = yaml.safe_load((ROOT / "examples" / "pools" / "eks-h100-gb200.yaml").read_text())["spec"]
    spec.update(criteria=example["criteria"], pools=example["pools"])
    spec.pop("certification")
    for pool in spec["pools"]:
        pool.pop("validationTests")


def test_pool_certification_without_nvcre_is_an_error_at_the_pool(cli: Any, repo: Path) -> None:
    folder = repo / "clusters"
    spec = _spec(folder, _pools)
    assert cli("lint", str(spec)).code == 0  # kubeflow: the pools' recipes deploy NVCRE
    spec = _spec(folder, lambda spec: (_pools(spec), spec["criteria"].pop("platform")))
    result = cli("lint", str(spec), "--format", "json")
    assert result.code == 1, result
    errors = yaml.safe_load(result.out)["files"][0]["errors"]
    assert [(e["policy"], e["path"]) for e in errors] == [
        ("pool-certification-needs-nvcre", "spec.pools.0.certification"),
        ("pool-certification-needs-nvcre", "spec.pools.1.certification")]
    lines = [number for number, text in enumerate(spec.read_text().splitlines(), 1) if text.strip() == "certification:"]
    assert [e["line"] for e in errors] == lines
    assert "nothing runs the certification of pool h100" in errors[0]["message"]
    (folder / "nvcre-elsewhere.yaml").write_text(OPT_OUT.format(name="pool-certification-needs-nvcre",
                                                                target="pool"))
    spec = _spec(folder, lambda spec: (_pools(spec), spec["criteria"].pop("platform"),
                                       spec.update(policies=["nvcre-elsewhere.yaml"])))
    assert cli("lint", str(spec)).code == 0


def test_the_shipped_pools_example_deploys_what_runs_its_certifications(cli: Any) -> None:
    example = ROOT / "examples" / "pools" / "eks-h100-gb200.yaml"
    result = cli("lint", str(example))
    assert result.code == 0 and "0 error(s), 0 warning(s)" in result.out, result


# ------------------------------------------------------------------------------ a real threshold


@pytest.mark.parametrize(("key", "expression", "is_real"), [
    ("busBandwidthGBps", "value > 0", False),
    ("busBandwidthGBps", "value >= 0", False),
    ("busBandwidthGBps", "true", False),
    ("busBandwidthGBps", "value >= 1", False),
    ("busBandwidthGBps", "value > 0 || value >= 300", False),
    ("busBandwidthGBps", "value >= 40", True),
    ("busBandwidthGBps", "value >= 300.0 && value < 5000.0", True),
    ("algBandwidthGBps", "value > 100", True),
    ("goodputRatio", "value >= 0.9", True),
    ("goodputRatio", "value > 0", False),
    ("avgTFLOPsPerGPU", "value >= 400", True),
    ("avgStepTimeSec", "value < 5.0", False),
    ("c2cVerified", "value == 1.0", False),
])
def test_a_real_threshold_fails_a_degraded_run(key: str, expression: str, is_real: bool) -> None:
    assert real(key, expression) is is_real
    assert set(DEGRADED) < {"busBandwidthGBps", "algBandwidthGBps", "goodputRatio", "avgTFLOPsPerGPU",
                            "avgStepTimeSec", "c2cCPUToGPUBandwidthGBps", "c2cGPUToCPUBandwidthGBps", "c2cVerified"}


@pytest.mark.parametrize(("thresholds", "refused"), [
    ({"busBandwidthGBps": "value > 0"}, True),
    ({"busBandwidthGBps": "value > 0", "algBandwidthGBps": "value >= 100"}, False),
    ({"busBandwidthGBps": "value >= 150"}, False),
])
def test_training_needs_a_real_threshold_at_its_line(cli: Any, tmp_path: Path, thresholds: dict[str, str],
                                                     refused: bool) -> None:
    spec = _spec(tmp_path, lambda spec: spec["certification"].update(thresholds=thresholds))
    result = cli("lint", str(spec), "--format", "json")
    errors = yaml.safe_load(result.out)["files"][0]["errors"]
    assert result.code == int(refused), result
    if refused:
        [error] = errors
        assert (error["policy"], error["path"]) == ("training-needs-thresholds", "spec.certification.thresholds")
        assert error["line"] == _line(spec, "thresholds:")
        assert "'value > 0' passes every run" in error["message"]


def test_a_training_cluster_without_nvcre_needs_no_threshold(cli: Any, tmp_path: Path) -> None:
    """Nothing certifies it, so a threshold would be dead configuration (and certification-needs-nvcre refuses a
    certification there): the training requirement holds where NVCRE runs."""
    spec = _spec(tmp_path, lambda spec: (spec["criteria"].pop("platform"), spec.pop("certification")))
    result = cli("policy", "check", str(spec))
    assert result.code == 0 and "0 error(s)" in result.out, result


def test_a_message_never_shows_a_placeholder() -> None:
    from aicr_gen.policy.check import evaluate, load_policies
    from aicr_gen.policy.shipped import shipped_root

    recipe = {"componentRefs": [{"name": "unpinned", "type": "Helm", "source": "https://charts.example.com",
                                 "healthCheckAsserts": "x"}]}
    spec = {"metadata": {"name": "x"}, "spec": {"deployers": ["argocd"], "criteria": {}, "pools": []}}
    found = evaluate(load_policies([shipped_root()]), recipe, spec)
    pinned = [f for f in found if f.policy == "pinned-semver-versions"]
    assert [f.message.split(" is not")[0] for f in pinned] == ["chart version of unpinned ((none))"]
    assert all("{" not in f.message and "{" not in f.path for f in found), found


# ------------------------------------------------------------------------------ every leaf of both catalogs


def _leaf_specs(root: Path) -> list[tuple[str, dict[str, Any], dict[str, Any]]]:
    """``(leaf, spec document, recipe)`` of every leaf overlay of the catalog at ``root``: the spec as ``spec init``
    writes it (argocd, a real repository URL), with the two changes spec init must make (issue 25): no thresholds
    where no category can be listed (the recipe deploys no nvcre) and, for a training recipe with NVCRE but no
    calibrated NCCL floor, a real one (the catalog's lowest floor for the accelerator, else 300 GB/s)."""
    from aicr_gen.catalog.load import load
    from aicr_gen.commands.recipe import leaf_rows
    from aicr_gen.commands.spec import render
    from aicr_gen.resolve import recipe

    catalog = load([root])
    found = []
    for row in leaf_rows(catalog):
        query = recipe.query_for(catalog, {dim: row["criteria"].get(dim) for dim in DIMENSIONS})
        resolved = recipe.resolve(catalog, query, recipe.Options())
        text = render(dict(query), ["argocd"], [str(root)], 0, resolved=resolved, catalog=catalog, repo_url=REPO_URL)
        document = yaml.safe_load(text)
        certification = document["spec"]["certification"]
        if not certification["categories"]:
            certification["thresholds"] = {}
        elif not any(real(key, value) for key, value in certification["thresholds"].items()):
            certification["thresholds"] = {"busBandwidthGBps": "value >= 300"}
        found.append((row["name"], document, resolved))
    return found


def _policy_errors(root: Path, tmp_path: Path) -> tuple[int, list[str]]:
    from aicr_gen.policy.check import evaluate, load_policies
    from aicr_gen.policy.shipped import shipped_root
    from aicr_gen.spec.validate import parse_spec
    from aicr_gen.yaml import load_text

    policies = load_policies([shipped_root()])
    leaves = _leaf_specs(root)
    problems = []
    for leaf, document, resolved in leaves:
        cluster = parse_spec(load_text(yaml.safe_dump(document, sort_keys=False), str(tmp_path / f"{leaf}.yaml")))
        for finding in evaluate(policies, resolved, cluster.model_dump(mode="json")):
            assert "{" not in finding.message, finding
            problems.append(f"{leaf}: {finding.severity} {finding.policy} {finding.path}: {finding.message}")
    return len(leaves), problems


def test_the_shipped_policies_pass_every_leaf_of_our_catalog(tmp_path: Path) -> None:
    count, problems = _policy_errors(ROOT / "overlays", tmp_path)
    assert count >= 40 and not problems, problems[:5]


@needs_reference
def test_the_shipped_policies_pass_every_leaf_of_aicrs_catalog(tmp_path: Path) -> None:
    count, problems = _policy_errors(AICR_CATALOG, tmp_path)
    assert count >= 40 and not problems, problems[:5]


@needs_reference
def test_a_spec_on_aicrs_eks_h100_training_kubeflow_lints_and_syncs(cli: Any, repo: Path) -> None:
    """The issue's case: nodewright-customizations (manifests only, no chart source) no longer stops the sync."""
    import shutil

    shutil.copytree(AICR_CATALOG, repo / "catalog")
    criteria = {"service": "eks", "accelerator": "h100", "intent": "training", "os": "ubuntu", "platform": "kubeflow"}
    spec = _spec(repo / "clusters", lambda spec: (spec.update(criteria=criteria, catalogs=["../catalog"]),
                                                  spec.pop("certification")))
    recipe = cli("recipe", "--catalog", str(repo / "catalog"), *(f"--{k}={v}" for k, v in criteria.items()))
    assert "name: nodewright-customizations" in recipe.out, recipe
    result = cli("lint", str(spec))
    assert result.code == 0 and "0 error(s), 0 warning(s)" in result.out, result
    before = _head(repo)
    result = cli("sync", str(spec), "--repo", str(repo))
    assert result.code == 0, result
    assert _head(repo) != before
