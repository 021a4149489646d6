"""A corpus of changes that must not pass (issue 25, deliver 7): stale, dead, invalid and hidden changes to one
small GitOps repository, each driven through the gates it claims and checked for what the gate prints.

The repository is the layout the docs describe, built once per module: ``fleet.yaml`` at the root (a catalog folder, a
policy and a rules file), cluster ``a`` written by ``aicr-gen spec init --extends fleet.yaml`` on the embedded
catalog's eks/h100/training/kubeflow recipe (NVCRE runs its certification) with a mirror and its lock, and
cluster ``b`` extending the same fleet with two GPU pools; both synced by the hooks' own aicr-gen, hooks installed
by ``pre-commit install``. Each case is one edit of that repository; the repository is reset (``git reset --hard``,
``git clean``) around every case. The gates:

- ``hook``: ``git commit`` through the installed ``aicr-gen-spec`` and ``aicr-gen-sync-check`` hooks (real
  pre-commit, a real hook environment); the commit must fail and HEAD must not move;
- ``lint``: ``aicr-gen lint`` on the spec (or fleet) the case names, in-process;
- ``check``: ``aicr-gen sync --check --staged`` on both specs, as the hook's and the action's aicr-gen runs it;
- ``plan``: ``aicr-gen plan`` on both specs, in-process: exit 0, the change listed among the high-risk ones (JSON,
  ``CLUSTER: CATEGORY: TEXT``) and, for an expected text given as a tuple, under ``High-risk:`` in the text format
  (the words of the commit message).

A case's expected text names the file, the line where one applies (``Line``, found in the edited file) and the
fix. A gate that lets a case through is not papered over: the case is ``xfail(strict=True)`` with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import ROOT, Result
from tests.gates import test_precommit
from tests.gates.test_inputs import NO_CACHE, REPO_URL, RULES, _synced, _write
from tests.gates.test_precommit import GIT_ENV, _git

hook_repo = test_precommit.hook_repo  # the session's hook repository and hook environment, shared
pre_commit_home = test_precommit.pre_commit_home

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is required")

SPECS = ("clusters/a.yaml", "clusters/b.yaml")
OUTSIDE = "fleet.yaml"
"""A fleet file beside the repository (the case that extends it writes it; every reset removes it)."""
SYNC = "run 'aicr-gen sync"
FLEET = f"""\
apiVersion: aicr-gen.dev/v1alpha1
kind: Fleet
metadata:
  name: team
spec:
  deployers: [argocd]
  repo: {{url: "{REPO_URL}", branch: main}}
  versions:
    gpu-operator: v26.3.3
  catalogs: [catalog]
  policies: [policies/team.yaml]
  certification:
    categories: [communication/nccl-all-reduce]
    thresholds: {{busBandwidthGBps: "value >= 300"}}
  sentinel:
    mode: quarantine
    breaker: {{percentage: 5, maxNodes: 2}}
    rules: sentinel-rules.yaml
"""
POLICY = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: Policy
metadata:
  name: team-sentinel
spec:
  description: the team's clusters run NVSentinel
  severity: error
  target: spec
  rule: "spec.spec.sentinel != null"
  path: spec.sentinel.breaker.percentage
  message: the team caps the circuit breaker at 5 percent
"""
POOLS = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: b
spec:
  extends: ../fleet.yaml
  criteria:
    service: eks
    intent: training
    os: ubuntu
    platform: kubeflow
  pools:
    - name: h100
      accelerator: h100
      nodes: 16
      nodeSelector:
        node.kubernetes.io/instance-type: p5.48xlarge
      certification:
        categories: [communication/nccl-all-reduce]
        thresholds:
          busBandwidthGBps: "value >= 300"
    - name: gb200
      accelerator: gb200
      nodes: 18
      nodeSelector:
        node.kubernetes.io/instance-type: p6e-gb200.36xlarge
      certification:
        categories: [communication/nccl-all-reduce]
        thresholds:
          busBandwidthGBps: "value >= 500"
  sentinel:  # watched, not acted on, until the pools are certified
    mode: monitor
    rules: null
    breaker: null
  repo:
    path: clusters/b
"""
AHEAD = ("gpu-operator:v26.4.0", "gpu-operator:v25.10.1", "cert-manager:v1.21.2")
"""Charts the site mirrored ahead of the fleet's pins, in cluster a's lock: a fleet bump to them is only stale."""
MIRROR = """\
  mirror:
    charts: oci://registry.site.example:5000/charts
    images: registry.site.example:5000/mirror
"""


@pytest.fixture(scope="module")
def gitops(tmp_path_factory: pytest.TempPathFactory, hook_repo: Path, pre_commit_home: Path) -> Path:
    """The repository every case edits: the fleet, its catalog folder, policy and rules file; cluster ``a`` from
    ``spec init`` (with a mirror and its lock), cluster ``b`` with pools; synced, hooks installed."""
    from aicr_gen.commands.mirror import wanted
    from aicr_gen.mirror import lock

    repo = tmp_path_factory.mktemp("corpus")
    shutil.copytree(ROOT / "overlays", repo / "catalog", ignore=shutil.ignore_patterns("__pycache__"))
    _write(repo, {"fleet.yaml": FLEET, "sentinel-rules.yaml": RULES, "policies/team.yaml": POLICY,
                  "clusters/b.yaml": POOLS, "README.md": "# GitOps\n"})
    subprocess.run([sys.executable, "-m", "aicr_gen", "spec", "init", "--extends", "fleet.yaml", "--service", "eks",
                    "--accelerator", "h100", "--intent", "training", "--os", "ubuntu", "--platform", "kubeflow",
                    "--name", "a", "--path", "clusters/a", "-o", "clusters/a.yaml"], cwd=repo, check=True,
                   capture_output=True, env={**os.environ, **NO_CACHE})
    spec = repo / "clusters" / "a.yaml"
    spec.write_text(spec.read_text() + MIRROR)
    with pytest.MonkeyPatch.context() as patch:  # a module's fixture runs before conftest's isolated cache
        patch.setenv(*next(iter(NO_CACHE.items())))
        _cluster, mirror, want = wanted(str(spec))
    digest = "sha256:" + "1" * 64  # what `mirror lock` reads from the site registry
    charts = [*want.charts, *(f"{mirror.charts}/{chart}" for chart in AHEAD)]  # the site mirrors the next ones
    text = lock.dump_lock(lock.build(mirror, dict.fromkeys(charts, digest), dict.fromkeys(want.images, digest)))
    lock.lock_path(spec).write_text(text, encoding="utf-8")
    return _synced(repo, hook_repo, pre_commit_home)


@pytest.fixture(scope="module")
def hook_python(gitops: Path, pre_commit_home: Path) -> str:
    """The Python of the hooks' environment: ``sync --check`` as the hook and the action run it (the aicr-gen that
    synced the trees; another one adds "aicr-gen's code changed" to every reason)."""
    (python,) = pre_commit_home.glob("repo*/py_env-*/bin/python")
    return str(python)


# ------------------------------------------------------------------------------------------------ the table


@dataclass(frozen=True)
class Line:
    """The number of the first line of ``file`` holding ``marker``, in the edited repository."""

    file: str
    marker: str


Said = str | Line | tuple[str | Line, ...]
"""What a gate must print: a text, a ``file:line`` (a Line), or a tuple of both, joined (for ``plan``: a tuple is
looked for under the text format's ``High-risk:`` heading)."""


@dataclass(frozen=True)
class Gate:
    name: str  # hook, lint, check or plan
    says: tuple[Said, ...]
    code: int = 1
    spec: str = "clusters/a.yaml"  # what lint reads


@dataclass(frozen=True)
class Case:
    id: str
    kind: str  # stale, dead, invalid or hidden
    edit: Callable[[Path], None]
    gates: tuple[Gate, ...]
    xfail: str = ""


def replace(name: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        text = (repo / name).read_text(encoding="utf-8")
        assert old in text, (name, old)
        (repo / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return edit


def append(name: str, text: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        with (repo / name).open("a", encoding="utf-8") as stream:
            stream.write(text)
    return edit


def delete(name: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        (repo / name).unlink()
    return edit


def rendered(pattern: str, change: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        change(next(repo.glob(pattern)))
    return edit


def both(*edits: Callable[[Path], None]) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        for one in edits:
            one(repo)
    return edit


def stale(tree: str, spec: str, because: str) -> str:
    return f"{tree} is not up to date with {spec} in the index: stale because {because}; {SYNC} {spec} --repo "


def hook(*says: Said) -> Gate:
    """A failed commit: pre-commit exits 1 whatever the hook's own exit code."""
    return Gate("hook", says)


def check(*says: Said, code: int = 1) -> Gate:
    return Gate("check", says, code)


def lint(*says: Said, code: int = 1, spec: str = "clusters/a.yaml") -> Gate:
    return Gate("lint", says, code, spec)


def plan(*says: Said) -> Gate:
    return Gate("plan", says, 0)


def both_stale(because: str) -> tuple[str, ...]:
    return (stale("clusters/a", "clusters/a.yaml", because), stale("clusters/b", "clusters/b.yaml", because),
            "0 of 2 tree(s) up to date with the index; stale: clusters/a, clusters/b")


CASES: list[Case] = []


def case(id_: str, kind: str, edit: Callable[[Path], None], *gates: Gate, xfail: str = "") -> None:
    CASES.append(Case(id_, kind, edit, gates, xfail))


# ------------------------------------------------------------------------------------------------ stale

NO_NVCRE = (Line("fleet.yaml", "categories:"), ":5: error [certification-needs-nvcre] spec.certification.categories: "
                                              "nothing runs this certification")
FLEET_CHANGED = both_stale("fleet.yaml changed (spec.extends)")
case("stale-fleet-bump-alone", "stale", replace("fleet.yaml", "gpu-operator: v26.3.3", "gpu-operator: v26.4.0"),
     hook(*FLEET_CHANGED), check(*FLEET_CHANGED))
case("stale-fleet-bump-past-the-mirror-lock", "stale",
     replace("fleet.yaml", "gpu-operator: v26.3.3", "gpu-operator: v26.5.0"),
     hook("clusters/a.lock.yaml: the mirror lock has no digest for 1 reference(s) the tree pulls from the mirror:",
          "oci://registry.site.example:5000/charts/gpu-operator:v26.5.0", "run aicr-gen mirror lock on the spec "
                                                                         "again"),
     check("clusters/a.lock.yaml: the mirror lock has no digest", "run aicr-gen mirror lock on the spec again",
           code=2))
A_FLEET = stale("clusters/a", "clusters/a.yaml", "fleet.yaml changed (spec.extends)")
case("stale-fleet-breaker-edit", "stale", replace("fleet.yaml", "percentage: 5", "percentage: 4"),
     hook(A_FLEET, "1 of 2 tree(s) up to date with the index; stale: clusters/a"), check(A_FLEET))
case("stale-fleet-threshold-edit", "stale", replace("fleet.yaml", "value >= 300", "value >= 350"),
     hook(*FLEET_CHANGED), check(*FLEET_CHANGED))
A_RULES = stale("clusters/a", "clusters/a.yaml", "sentinel-rules.yaml changed (spec.sentinel.rules)")
case("stale-rules-edit", "stale", replace("sentinel-rules.yaml", "XID 79 ruleset", "XID 79 and 48 ruleset"),
     hook(A_RULES), check(A_RULES))
case("stale-rules-uncordon", "stale", replace("sentinel-rules.yaml", "shouldCordon: true", "shouldCordon: false"),
     hook(A_RULES), check(A_RULES))
TIGHTENED = ("clusters/a.yaml: refused by its policies since policies/team.yaml (spec.policies) changed; fix the "
             "spec or the policy (see 'aicr-gen policy check')",
             (Line("fleet.yaml", "breaker:"), ": team-sentinel spec.sentinel.breaker.percentage: the team caps the "
                                              "circuit breaker at 5 percent"),
             "refused by a changed policy: clusters/a.yaml, clusters/b.yaml")
case("stale-policy-tightened", "stale",
     replace("policies/team.yaml", "spec.spec.sentinel != null",
             "spec.spec.sentinel != null && spec.spec.sentinel.breaker.percentage <= 2"),
     hook(*TIGHTENED), check(*TIGHTENED))
CATALOG_CHANGED = both_stale("catalog changed (spec.catalogs)")
case("stale-catalog-registry-edit", "stale",
     replace("catalog/registry.yaml", 'defaultVersion: "v1.21.1"', 'defaultVersion: "v1.21.2"'),
     hook(*CATALOG_CHANGED), check(*CATALOG_CHANGED))
case("stale-catalog-overlay-drops-nvcre", "stale",
     replace("catalog/overlays/h100-eks-ubuntu-training-kubeflow.yaml", "    - readiness-nvcre\n", ""),
     hook(*CATALOG_CHANGED, "extra   clusters/a/argocd/012-nvcre/application.yaml"), check(*CATALOG_CHANGED),
     lint(NO_NVCRE))
LOCK_CHANGED = stale("clusters/a", "clusters/a.yaml", "clusters/a.lock.yaml changed (spec.mirror, its lock)")
case("stale-mirror-lock-edit", "stale", replace("clusters/a.lock.yaml", "1" * 64, "2" * 64),
     hook(LOCK_CHANGED, "1 of 2 tree(s) up to date with the index; stale: clusters/a"), check(LOCK_CHANGED))
HAND = "its files differ from what sync committed (edited by hand)"
case("stale-hand-edit-values", "stale",
     rendered("clusters/a/argocd/*-gpu-operator/values.yaml", lambda path: path.write_text(path.read_text() +
                                                                                          "# tuned by hand\n")),
     hook(stale("clusters/a", "clusters/a.yaml", HAND), "stale   clusters/a/argocd/"),
     check(stale("clusters/a", "clusters/a.yaml", HAND)))
case("stale-hand-edit-pool-certification", "stale",
     replace("clusters/b/pools/gb200/certification/certification.yaml", "value >= 500", "value >= 5"),
     hook(stale("clusters/b", "clusters/b.yaml", HAND)), check(stale("clusters/b", "clusters/b.yaml", HAND)))
DELETED_POOL_FILE = (stale("clusters/b", "clusters/b.yaml", HAND), "missing clusters/b/pools/h100/recipe.yaml")
case("stale-hand-deleted-rendered-file", "stale", delete("clusters/b/pools/h100/recipe.yaml"),
     check(*DELETED_POOL_FILE))
case("stale-hand-deleted-rendered-file-hook", "stale", delete("clusters/b/pools/h100/recipe.yaml"),
     hook(*DELETED_POOL_FILE))
case("stale-spec-edit-without-sync", "stale",
     replace("clusters/a.yaml", "  repo:\n", "  versions: {gpu-operator: v26.4.0}\n  repo:\n"),
     hook(stale("clusters/a", "clusters/a.yaml", "clusters/a.yaml changed"),
          "1 of 2 tree(s) up to date with the index; stale: clusters/a"),
     check(stale("clusters/a", "clusters/a.yaml", "clusters/a.yaml changed")))
case("stale-pool-edit-without-sync", "stale", replace("clusters/b.yaml", "nodes: 16", "nodes: 24"),
     hook(stale("clusters/b", "clusters/b.yaml", "clusters/b.yaml changed")),
     check(stale("clusters/b", "clusters/b.yaml", "clusters/b.yaml changed")))
GONE_RULES = ((Line("fleet.yaml", "rules: sentinel-rules.yaml"), ": spec.sentinel.rules: 'sentinel-rules.yaml': no "
                                                                 "such file or folder beside the fleet"),
              "(the fleet named by clusters/a.yaml:9: spec.extends)")  # after spec init's modeline and comments
case("stale-deleted-rules-file", "stale", delete("sentinel-rules.yaml"),
     check(*GONE_RULES, code=2),
     lint((Line("fleet.yaml", "rules: sentinel-rules.yaml"), ":5: error [input] spec.sentinel.rules: "
                                                             "'sentinel-rules.yaml': no such file or folder"),
          GONE_RULES[1], code=2))
case("stale-deleted-rules-file-hook", "stale", delete("sentinel-rules.yaml"), hook(*GONE_RULES))
GONE_POLICY = ((Line("fleet.yaml", "policies/team.yaml"), ": spec.policies[0]: 'policies/team.yaml': no such file or "
                                                          "folder beside the fleet"),
               "(the fleet named by clusters/b.yaml:6: spec.extends)")
case("stale-deleted-policy-file", "stale", delete("policies/team.yaml"),
     check("2 of 2 spec(s) failed; nothing was written", *GONE_POLICY, code=2),
     lint((Line("fleet.yaml", "policies/team.yaml"), ":3: error [input] spec.policies[0]: 'policies/team.yaml': no "
                                                     "such file or folder beside the fleet"), code=2))
case("stale-deleted-policy-file-hook", "stale", delete("policies/team.yaml"), hook(*GONE_POLICY))


# ------------------------------------------------------------------------------------------------ dead

RULE_FIX = "fix the expression, or disable the rule set (enabled: false)"


def rule(expression: str, kind: str = "HealthEvent") -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        text = (repo / "sentinel-rules.yaml").read_text(encoding="utf-8")
        text = re.sub(r'expression: ".*"', f'expression: "{expression}"', text).replace("kind: HealthEvent",
                                                                                         f"kind: {kind}")
        (repo / "sentinel-rules.yaml").write_text(text, encoding="utf-8")
    return edit


def rule_lint(said: str) -> Gate:
    return lint((Line("sentinel-rules.yaml", "expression:"), ":"), "ruleSets[0].match.all[0].expression", said,
                RULE_FIX, code=2)


case("dead-rule-reads-missing-healthevent-field", "dead", rule("event.errorCodes.exists(e, e == '79')"),
     rule_lint("event has no field 'errorCodes'; did you mean 'errorCode'?"),
     hook("- hook id: aicr-gen-sync-check", (Line("sentinel-rules.yaml", "expression:"), ": ruleSets[0].match.all[0]."
                                             "expression: event has no field 'errorCodes'"), RULE_FIX),
     check((Line("sentinel-rules.yaml", "expression:"), ": ruleSets[0]"), RULE_FIX, code=2))
case("dead-rule-reads-missing-node-field", "dead", rule("node.metdata.labels['pool'] == 'gb200'", "Node"),
     rule_lint("a Node has no field 'metdata'"))
case("dead-rule-reads-node-status", "dead", rule("node.status.allocatable['nvidia.com/gpu'] == '8'", "Node"),
     rule_lint("node.status is never available"))
case("dead-rule-type-mismatch-bool", "dead", rule("event.isFatal == 'true'"), rule_lint("event.isFatal is a bool"))
case("dead-rule-type-mismatch-enum", "dead", rule("event.recommendedAction == 'RESTART_VM'"),
     rule_lint("write 15 (RESTART_VM)"))
case("dead-thresholds-without-categories", "dead",
     replace("clusters/a.yaml", "  repo:\n", "  certification:\n    categories: []\n  repo:\n"),
     lint((Line("fleet.yaml", "thresholds:"), ":"), "spec.certification.thresholds: thresholds apply to the "
          "certification's categories, and it lists none, so nothing uses them", code=2),
     hook("- hook id: aicr-gen-spec", (Line("fleet.yaml", "thresholds:"), ":5: error [input] spec.certification."
                                       "thresholds: thresholds apply"), "list the categories they are for"))
case("dead-certification-without-nvcre", "dead", replace("clusters/a.yaml", '    platform: "kubeflow"\n', ""),
     lint(NO_NVCRE, "the cluster deploys no nvcre component", "use a catalog overlay with nvcre"))
case("dead-nvcre-switched-off-by-override", "dead",
     replace("clusters/a.yaml", "  repo:\n", '  overrides: {set: ["nvcre:enabled=false"]}\n  repo:\n'),
     lint(NO_NVCRE, "or drop spec.certification"))
case("dead-pool-certification-without-nvcre", "dead", replace("clusters/b.yaml", "    platform: kubeflow\n", ""),
     lint((Line("clusters/b.yaml", "certification:"), ":7: error [pool-certification-needs-nvcre] "
                                                      "spec.pools.0.certification"),
          "nothing runs the certification of pool h100", spec="clusters/b.yaml"))
case("dead-value-gt-0-on-training", "dead", replace("fleet.yaml", "value >= 300", "value > 0"),
     lint((Line("fleet.yaml", "thresholds:"), ":"), "[training-needs-thresholds] spec.certification.thresholds",
          "'value > 0' passes every run"))
case("dead-node-selector-without-categories", "dead",
     replace("clusters/a.yaml", "  repo:\n", "  certification:\n    categories: []\n    thresholds: null\n"
                                             "    nodeSelector: {pool: h100}\n  repo:\n"),
     lint((Line("clusters/a.yaml", "nodeSelector:"), ":"), "spec.certification.nodeSelector: selects the nodes the "
          "certification's categories run on, and no category is listed", "list the categories or drop the field",
          code=2))

# ------------------------------------------------------------------------------------------------ invalid


def invalid(file: str, marker: str, path: str, *said: str, spec: str = "clusters/a.yaml") -> Gate:
    return lint((Line(file, marker), ":"), f"error [input] {path}: ", *said, code=2, spec=spec)


case("invalid-pool-nodes-out-of-range", "invalid",
     replace("clusters/b.yaml", "nodes: 16", "nodes: 99999999999999999999999999"),
     invalid("clusters/b.yaml", "nodes: 9999", "spec.pools[0].nodes", "over the limit of 1000000",
             spec="clusters/b.yaml"))
case("invalid-breaker-max-nodes-out-of-range", "invalid",
     replace("fleet.yaml", "maxNodes: 2", "maxNodes: 9223372036854775808"),
     invalid("fleet.yaml", "maxNodes", "spec.sentinel.breaker.maxNodes", "over the limit of 1000000"))
case("invalid-breaker-percentage-out-of-range", "invalid", replace("fleet.yaml", "percentage: 5", "percentage: 1000"),
     invalid("fleet.yaml", "percentage", "spec.sentinel.breaker.percentage", "1000 is over the limit of 100"))
VERSION = ('  versions: {gpu-operator: "v26..3"}\n  repo:\n')
NOT_A_VERSION = ("'v26..3' is not a version", "no empty part")
case("invalid-version-grammar", "invalid", replace("clusters/a.yaml", "  repo:\n", VERSION),
     invalid("clusters/a.yaml", "v26..3", "spec.versions.gpu-operator", *NOT_A_VERSION),
     hook("aicr-gen-spec", "spec.versions.gpu-operator", *NOT_A_VERSION))
case("invalid-version-grammar-in-a-pooled-cluster", "invalid", replace("clusters/b.yaml", "  repo:\n", VERSION),
     invalid("clusters/b.yaml", "v26..3", "spec.versions.gpu-operator", *NOT_A_VERSION, spec="clusters/b.yaml"))
case("invalid-multi-line-text", "invalid",
     replace("fleet.yaml", "branch: main", 'branch: "main\\nrm -rf /"'),
     invalid("fleet.yaml", "branch:", "spec.repo.branch", "is not a branch name git accepts (no spaces, control "
             "characters", "e.g. main"))
case("invalid-unknown-field-with-suggestion", "invalid",
     replace("clusters/a.yaml", "  repo:\n", "  certifcation: {}\n  repo:\n"),
     invalid("clusters/a.yaml", "certifcation", "spec.certifcation", "did you mean 'certification'?"))
case("invalid-unknown-field-in-a-pool", "invalid", replace("clusters/b.yaml", "nodes: 18", "node: 18"),
     invalid("clusters/b.yaml", "node: 18", "spec.pools[1].node", "did you mean 'nodes'?", spec="clusters/b.yaml"))
case("invalid-sentinel-mode", "invalid", replace("fleet.yaml", "mode: quarantine", "mode: quarantined"),
     invalid("fleet.yaml", "mode:", "spec.sentinel.mode", "value 'quarantined' is not allowed; use one of "
                                                          "'monitor' or 'quarantine'"))
case("invalid-missing-rules-file", "invalid",
     replace("clusters/a.yaml", "  repo:\n", "  sentinel: {rules: team-rules.yaml}\n  repo:\n"),
     invalid("clusters/a.yaml", "team-rules.yaml", "spec.sentinel.rules", "file 'team-rules.yaml' not found",
             "create it or fix the path"))
case("invalid-missing-catalog-folder", "invalid", replace("fleet.yaml", "catalogs: [catalog]", "catalogs: [catalogs]"),
     invalid("fleet.yaml", "catalogs:", "spec.catalogs[0]", "'catalogs': no such file or folder beside the fleet"))
case("invalid-fleet-outside-the-repo", "invalid",
     both(replace("clusters/a.yaml", 'extends: "../fleet.yaml"', 'extends: "../../fleet.yaml"'),
          lambda repo: _write(repo.parent, {OUTSIDE: "apiVersion: aicr-gen.dev/v1alpha1\nkind: Fleet\nmetadata:\n"
                                                     "  name: outside\nspec:\n  deployers: [argocd]\n"
                                                     f"  repo: {{url: '{REPO_URL}'}}\n"})),
     invalid("clusters/a.yaml", "extends:", "spec.extends", "'../../fleet.yaml' leads out of the Git repository the "
             "spec is in", "keep the files a spec reads inside it"),
     check((Line("clusters/a.yaml", "extends:"), ": spec.extends: '../../fleet.yaml' leads out of the Git repository"),
           code=2))
case("invalid-criteria-in-the-fleet", "invalid",
     replace("fleet.yaml", "  deployers: [argocd]\n", "  criteria: {service: eks}\n  deployers: [argocd]\n"),
     invalid("fleet.yaml", "criteria:", "spec.criteria", "per cluster"))
case("invalid-overlapping-pools", "invalid",
     replace("clusters/b.yaml", "p6e-gb200.36xlarge", "p5.48xlarge"),
     lint("h100", "gb200", code=2, spec="clusters/b.yaml"))
case("invalid-empty-catalog-overlay", "invalid",
     lambda repo: _write(repo, {"catalog/overlays/zz-team.yaml": "# a team overlay, nothing in it yet\n"}),
     check("catalog/overlays/zz-team.yaml:1: the document is empty; a mapping is expected", code=2))

# ------------------------------------------------------------------------------------------------ hidden

case("hidden-downgrade", "hidden", replace("fleet.yaml", "gpu-operator: v26.3.3", "gpu-operator: v25.10.1"),
     plan("a: gpu-operator: DOWNGRADED gpu-operator v26.3.3 -> v25.10.1",
          "b: gpu-operator: DOWNGRADED gpu-operator v26.3.3 -> v25.10.1",
          ("2 clusters: GPU operator: DOWNGRADED gpu-operator v26.3.3 -> v25.10.1",)))
case("hidden-breaker-percentage-loosened", "hidden", replace("fleet.yaml", "percentage: 5", "percentage: 50"),
     plan("a: nvsentinel: circuit breaker loosened: percentage 5% -> 50%",
          ("NVSentinel: circuit breaker loosened: percentage 5% -> 50%",)))
case("hidden-breaker-unbounded", "hidden", replace("fleet.yaml", ", maxNodes: 2", ""),
     plan("a: nvsentinel: circuit breaker loosened: maxNodes 2 -> no bound",))
case("hidden-mirror-added", "hidden", append("clusters/b.yaml", MIRROR),
     plan("b: sources: ", "charts now pulled from oci://registry.site.example:5000/charts"))
case("hidden-certification-removed", "hidden",
     replace("clusters/a.yaml", "  repo:\n", "  certification: null\n  repo:\n"),
     plan("a: certification: certification removed", ("certification removed",)))
case("hidden-threshold-loosened", "hidden", replace("fleet.yaml", "value >= 300", "value >= 200"),
     plan("a: certification: threshold busBandwidthGBps loosened: value >= 300 -> value >= 200",
          "b: certification: threshold busBandwidthGBps loosened: value >= 300 -> value >= 200"))
case("hidden-pool-certification-removed", "hidden",
     replace("clusters/b.yaml", """      certification:
        categories: [communication/nccl-all-reduce]
        thresholds:
          busBandwidthGBps: "value >= 500"
""", ""),
     plan("b: certification: pool gb200: certification removed",))
case("hidden-pool-threshold-loosened", "hidden", replace("clusters/b.yaml", "value >= 500", "value >= 400"),
     plan("b: certification: pool gb200: threshold busBandwidthGBps loosened: value >= 500 -> value >= 400",))
case("hidden-sentinel-to-quarantine", "hidden",
     replace("clusters/b.yaml", "    mode: monitor\n    rules: null\n    breaker: null\n", "    mode: quarantine\n"),
     plan("b: nvsentinel: ", "quarantine"))


# ------------------------------------------------------------------------------------------------ the gates


def _said(repo: Path, said: Said) -> str:
    if isinstance(said, str):
        return said
    if isinstance(said, Line):
        lines = (repo / said.file).read_text(encoding="utf-8").splitlines()
        number = next(index for index, text in enumerate(lines, 1) if said.marker in text)
        return f"{said.file}:{number}"
    return "".join(_said(repo, part) for part in said)


def _head(repo: Path) -> str:
    return subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout.strip()


def _hook(repo: Path, home: Path) -> Result:
    """``git commit`` of every change through the installed hooks; HEAD moves exactly when it succeeds."""
    before = _head(repo)
    _git(repo, "add", "-A")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    proc = subprocess.run(["git", "commit", "-m", "edit"], cwd=repo, capture_output=True, text=True, env=env,
                          check=False, timeout=120)
    assert (_head(repo) != before) == (proc.returncode == 0), proc.stdout + proc.stderr
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _plan(cli: Callable[..., Result]) -> Result:
    """The plan as JSON (its high-risk entries, ``CLUSTER: CATEGORY: TEXT`` a line) and as text, in one Result."""
    found = cli("plan", *SPECS, "--repo", ".", "--format", "json")
    if found.code != 0:
        return found
    risks = [f"{cluster['name']}: {item['category']}: {item['text']}" for cluster in json.loads(found.out)["clusters"]
             for item in cluster.get("highRisk", [])]
    text = cli("plan", *SPECS, "--repo", ".", "--format", "text")
    assert text.code == 0, text
    high = re.findall(r"High-risk:\n((?:- .*\n)+)", text.out)
    return Result(0, "\n".join(risks), "".join(high))


def _check(repo: Path, python: str) -> Result:
    proc = subprocess.run([python, "-m", "aicr_gen", "sync", "--check", "--staged", *SPECS, "--repo", "."], cwd=repo,
                          capture_output=True, text=True, check=False, timeout=120)
    return Result(proc.returncode, proc.stdout, proc.stderr)


def _run(gate: Gate, repo: Path, home: Path, python: str, cli: Callable[..., Result]) -> Result:
    if gate.name == "hook":
        return _hook(repo, home)
    _git(repo, "add", "-A")
    if gate.name == "lint":
        return cli("lint", gate.spec)
    if gate.name == "check":
        return _check(repo, python)
    return _plan(cli)


@pytest.fixture
def clean(gitops: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The repository as the fixture committed it, before and after the case; the current folder."""
    base = _head(gitops)

    def reset() -> None:
        _git(gitops, "reset", "-q", "--hard", base)
        _git(gitops, "clean", "-qfd")
        (gitops.parent / OUTSIDE).unlink(missing_ok=True)

    reset()
    monkeypatch.chdir(gitops)
    yield gitops
    reset()


def _params() -> list[Any]:
    return [pytest.param(item, id=item.id, marks=[pytest.mark.xfail(strict=True, reason=item.xfail)]
                         if item.xfail else []) for item in CASES]


@pytest.mark.parametrize("item", _params())
def test_a_change_that_must_not_pass_is_stopped(item: Case, clean: Path, pre_commit_home: Path, hook_python: str,
                                                cli: Callable[..., Result]) -> None:
    item.edit(clean)
    for gate in item.gates:
        result = _run(gate, clean, pre_commit_home, hook_python, cli)
        text = result.out + result.err
        assert result.code == gate.code, (gate.name, result)
        assert "Traceback" not in text and "internal error" not in text, (gate.name, text)
        for said in gate.says:
            assert _said(clean, said) in (result.err if gate.name == "plan" and isinstance(said, tuple)
                                          else text), (gate.name, _said(clean, said), text)


def test_the_corpus_covers_every_class() -> None:
    counts = {kind: sum(item.kind == kind for item in CASES) for kind in ("stale", "dead", "invalid", "hidden")}
    assert len(CASES) >= 40 and min(counts.values()) >= 5, counts
    assert len({item.id for item in CASES}) == len(CASES)
    assert all(item.id.startswith(item.kind) and item.gates for item in CASES)
    assert {gate.name for item in CASES for gate in item.gates} == {"hook", "lint", "check", "plan"}


def test_the_repository_untouched_passes_every_gate(clean: Path, pre_commit_home: Path, hook_python: str,
                                                    cli: Callable[..., Result]) -> None:
    """What makes each case's failure its own: without an edit, lint, sync --check and plan are clean, and a commit
    of a file no tree reads passes the hooks."""
    lint_ = cli("lint", *SPECS, "fleet.yaml")
    assert lint_.code == 0 and lint_.out.endswith("0 error(s), 0 warning(s) in 3 file(s)\n"), lint_
    checked = _check(clean, hook_python)
    assert checked.code == 0 and "2 of 2 tree(s) up to date with the index" in checked.out + checked.err, checked
    planned = cli("plan", *SPECS, "--repo", ".", "--format", "json")
    assert planned.code == 0 and json.loads(planned.out)["changedClusters"] == 0, planned
    _write(clean, {"README.md": "# GitOps\n\nHow we run our clusters.\n"})
    committed = _hook(clean, pre_commit_home)
    assert committed.code == 0, committed
