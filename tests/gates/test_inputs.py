"""Gates follow the inputs (issue 25): every file a tree is rendered from (the spec, the fleet it extends, a rules
file, a policy, a catalog folder, a mirror lock) starts the pre-commit hooks and the example workflow, and a
commit that changes one alone fails naming it; a file no tree reads starts neither.

Each layout the docs describe is a real GitOps repository, synced by ``aicr-gen sync`` and with the hooks
installed by ``pre-commit install``; each case edits one input, stages it and runs ``git commit``, as a user (or
Renovate's fleet bump) does. The workflow's ``paths:`` filters and the hook's ``files:`` are checked against the
same list of input paths.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from tests.gates import test_precommit
from tests.gates.test_precommit import GIT_ENV, ROOT, _git

hook_repo = test_precommit.hook_repo  # the session's hook repository and hook environment, shared
pre_commit_home = test_precommit.pre_commit_home

REPO_URL = "https://github.com/example/gitops.git"
SYNC_HOOK = "aicr-gen-sync-check"
PLAN_WORKFLOW = ROOT / "examples" / "github" / "plan.yml"
HOOKS = {hook["id"]: hook for hook in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
FIX = "run 'aicr-gen sync"
NO_CACHE = {"AICR_GEN_CACHE_DIR": "off"}
"""For what a module's fixture runs: conftest's per-session cache is set per test, after it."""

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="git is required")

CRITERIA = '  criteria: {service: eks, accelerator: h100, intent: training, os: ubuntu, platform: kubeflow}\n'
THRESHOLDS = ('  certification:\n    categories: [communication/nccl-all-reduce]\n'
              '    thresholds: {busBandwidthGBps: "value >= 300"}\n')
RULES = """\
ruleSets:
  - name: XID 79 ruleset
    match:
      all:
        - kind: HealthEvent
          expression: "event.agent == 'syslog-health-monitor' && event.checkName == 'SysLogsXIDError'"
    cordon:
      shouldCordon: true
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
  rule: "{rule}"
  path: spec.sentinel.breaker.percentage
  message: the team caps the circuit breaker at 2 percent
"""
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
{THRESHOLDS}  sentinel:
    mode: quarantine
    breaker: {{percentage: 5}}
    rules: sentinel-rules.yaml
"""
FLEET_SPEC = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: {name}
spec:
  extends: ../fleet.yaml
{criteria}  repo:
    path: clusters/{name}
"""
MIRRORED_SPEC = f"""\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: site-a
spec:
{CRITERIA}  deployers: [argocd]
  repo:
    url: "{REPO_URL}"
    path: clusters/site-a
{THRESHOLDS}  sentinel:
    mode: quarantine
    breaker: {{percentage: 5}}
    rules: site-a-rules.yaml
  mirror:
    charts: oci://registry.site.example:5000/charts
    images: registry.site.example:5000/mirror
"""


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text, encoding="utf-8")


def _install(repo: Path, hook_repo: Path, home: Path) -> Path:
    """The consumer's .pre-commit-config.yaml naming the spec and sync-check hooks at the hook repository's
    HEAD, committed, and ``pre-commit install --install-hooks``: the Python of the hooks' environment."""
    revision = subprocess.run(["git", "rev-parse", "HEAD"], cwd=hook_repo, capture_output=True, text=True,
                              check=True).stdout.strip()
    _write(repo, {".pre-commit-config.yaml": f"repos:\n  - repo: {hook_repo}\n    rev: {revision}\n    hooks:\n"
                                             "      - id: aicr-gen-spec\n      - id: aicr-gen-sync-check\n"})
    _git(repo, "add", ".pre-commit-config.yaml")
    _git(repo, "commit", "-q", "-m", "pre-commit")
    subprocess.run([sys.executable, "-m", "pre_commit", "install", "--install-hooks"], cwd=repo, check=True,
                   capture_output=True, env={**os.environ, "PRE_COMMIT_HOME": str(home)})
    pythons = list(home.glob("repo*/py_env-*/bin/python"))
    assert len(pythons) == 1, pythons
    return pythons[0]


def _synced(repo: Path, hook_repo: Path, home: Path) -> Path:
    """Commit the inputs, install the hooks, and sync with the hooks' aicr-gen (its inputs records name the
    aicr-gen and dependency versions that rendered the trees: another one makes every tree stale)."""
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "inputs")
    python = _install(repo, hook_repo, home)
    subprocess.run([str(python), "-m", "aicr_gen", "sync", "clusters/*.yaml", "--repo", "."], cwd=repo, check=True,
                   capture_output=True, env={**os.environ, **GIT_ENV, **NO_CACHE})
    return repo


@pytest.fixture(scope="module")
def fleet_layout(tmp_path_factory: pytest.TempPathFactory, hook_repo: Path, pre_commit_home: Path) -> Path:
    """docs/fleets.md: fleet.yaml at the root, two clusters extending it, the fleet naming a catalog folder, a
    policy and a rules file."""
    repo = tmp_path_factory.mktemp("fleet-layout")
    shutil.copytree(ROOT / "overlays", repo / "catalog", ignore=shutil.ignore_patterns("__pycache__"))
    _write(repo, {"fleet.yaml": FLEET, "sentinel-rules.yaml": RULES,
                  "policies/team.yaml": POLICY.format(rule="spec.spec.sentinel != null"),
                  "clusters/a.yaml": FLEET_SPEC.format(name="a", criteria=CRITERIA),
                  "clusters/b.yaml": FLEET_SPEC.format(name="b", criteria=CRITERIA.replace("h100", "h200")),
                  "README.md": "# GitOps\n"})
    return _synced(repo, hook_repo, pre_commit_home)


@pytest.fixture(scope="module")
def gitops_layout(tmp_path_factory: pytest.TempPathFactory, hook_repo: Path, pre_commit_home: Path) -> Path:
    """docs/gitops.md and docs/airgap.md: a spec under clusters/ with its rules file and mirror lock beside
    it (``aicr-gen mirror lock`` writes clusters/site-a.lock.yaml)."""
    from aicr_gen.commands.mirror import wanted
    from aicr_gen.mirror import lock

    repo = tmp_path_factory.mktemp("gitops-layout")
    _write(repo, {"clusters/site-a.yaml": MIRRORED_SPEC, "clusters/site-a-rules.yaml": RULES})
    spec = repo / "clusters" / "site-a.yaml"
    with pytest.MonkeyPatch.context() as patch:  # a module's fixture runs before conftest's isolated cache
        patch.setenv(*next(iter(NO_CACHE.items())))
        _cluster, mirror, want = wanted(str(spec))
    assert want.charts
    digest = "sha256:" + "1" * 64  # what `mirror lock` reads from the site registry
    text = lock.dump_lock(lock.build(mirror, dict.fromkeys(want.charts, digest), dict.fromkeys(want.images, digest)))
    lock.lock_path(spec).write_text(text, encoding="utf-8")
    return _synced(repo, hook_repo, pre_commit_home)


def _commit(layout: Path, tmp_path: Path, home: Path, edit: Callable[[Path], None]) -> tuple[Path, str, int]:
    """A copy of ``layout``, ``edit`` applied and staged, then ``git commit`` through the installed hooks: the
    copy, what the commit printed, its exit code (HEAD is checked to have moved only on success)."""
    repo = tmp_path / "repo"
    shutil.copytree(layout, repo, symlinks=True)
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                          check=True).stdout
    edit(repo)
    _git(repo, "add", "-A")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(home), "NO_COLOR": "1"}
    proc = subprocess.run(["git", "commit", "-m", "edit"], cwd=repo, capture_output=True, text=True, env=env,
                          check=False, timeout=300)
    after = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True,
                           check=True).stdout
    assert (after != head) == (proc.returncode == 0), proc.stdout + proc.stderr
    return repo, proc.stdout + proc.stderr, proc.returncode


def _replace(name: str, old: str, new: str) -> Callable[[Path], None]:
    def edit(repo: Path) -> None:
        text = (repo / name).read_text(encoding="utf-8")
        assert old in text, (name, old)
        (repo / name).write_text(text.replace(old, new, 1), encoding="utf-8")
    return edit


def _stale_because(out: str, tree: str, spec: str, because: str) -> None:
    line = f"{tree} is not up to date with {spec} in the index: stale because {because}; {FIX} {spec} --repo "
    assert line in out, out
    assert re.search(rf"Failed\n- hook id: {SYNC_HOOK}", out), out


SHARED_INPUTS = {  # an input both clusters of the fleet layout read, edited alone: (file, old, new), why stale
    "Renovate's fleet bump": (("fleet.yaml", "gpu-operator: v26.3.3", "gpu-operator: v26.4.0"),
                              "fleet.yaml changed (spec.extends)"),
    "a rules file": (("sentinel-rules.yaml", "XID 79 ruleset", "XID 79 and 48 ruleset"),
                     "sentinel-rules.yaml changed (spec.sentinel.rules)"),
    "a catalog folder": (("catalog/registry.yaml", 'defaultVersion: "v1.21.1"', 'defaultVersion: "v1.21.2"'),
                         "catalog changed (spec.catalogs)"),
}


@pytest.mark.parametrize("kind", sorted(SHARED_INPUTS))
def test_a_shared_input_edited_alone_fails_naming_it_for_each_cluster(kind: str, fleet_layout: Path,
                                                                     pre_commit_home: Path, tmp_path: Path) -> None:
    edit, because = SHARED_INPUTS[kind]
    _repo, out, code = _commit(fleet_layout, tmp_path, pre_commit_home, _replace(*edit))
    assert code == 1, out
    for name in ("a", "b"):
        _stale_because(out, f"clusters/{name}", f"clusters/{name}.yaml", because)
    assert "0 of 2 tree(s) up to date with the index; stale: clusters/a, clusters/b" in out


def test_a_cluster_spec_edit_names_that_spec_only(fleet_layout: Path, pre_commit_home: Path,
                                                  tmp_path: Path) -> None:
    _repo, out, code = _commit(fleet_layout, tmp_path, pre_commit_home,
                               _replace("clusters/b.yaml", "  repo:\n", "  versions: {gpu-operator: v26.4.0}\n"
                                                                        "  repo:\n"))
    assert code == 1, out
    _stale_because(out, "clusters/b", "clusters/b.yaml", "clusters/b.yaml changed")
    assert "clusters/a is not up to date" not in out
    assert "1 of 2 tree(s) up to date with the index; stale: clusters/b" in out


def test_a_policy_edit_that_refuses_the_specs_fails_naming_the_policy(fleet_layout: Path, pre_commit_home: Path,
                                                                      tmp_path: Path) -> None:
    _repo, out, code = _commit(fleet_layout, tmp_path, pre_commit_home,
                               _replace("policies/team.yaml", "spec.spec.sentinel != null",
                                        "spec.spec.sentinel != null && spec.spec.sentinel.breaker.percentage <= 2"))
    assert code == 1, out
    for name in ("a", "b"):
        assert (f"clusters/{name}.yaml: refused by its policies since policies/team.yaml (spec.policies) changed; "
                "fix the spec or the policy") in out, out
    assert re.search(r"fleet\.yaml:\d+: team-sentinel spec\.sentinel\.breaker\.percentage: the team caps", out), out
    assert "refused by a changed policy: clusters/a.yaml, clusters/b.yaml" in out


def test_a_policy_edit_that_still_passes_commits(fleet_layout: Path, pre_commit_home: Path, tmp_path: Path) -> None:
    _repo, out, code = _commit(fleet_layout, tmp_path, pre_commit_home,
                               _replace("policies/team.yaml", "the team's clusters", "every cluster of the team"))
    assert code == 0, out
    assert re.search(r"aicr-gen sync --check \(rendered trees up to date\)\.+Passed\n", out), out


def test_an_unrelated_file_lints_nothing_and_the_sync_check_passes(fleet_layout: Path, pre_commit_home: Path,
                                                                    tmp_path: Path) -> None:
    """The sync check runs on every commit (a commit that only deletes an input must not slip through), answered
    from the inputs records; the spec hook lints nothing."""
    def edit(repo: Path) -> None:
        _write(repo, {"README.md": "# GitOps\n\nHow we run our clusters.\n", "scripts/deploy.sh": "#!/bin/sh\n",
                      "docs/runbook.yaml": "steps: []\n"})

    _repo, out, code = _commit(fleet_layout, tmp_path, pre_commit_home, edit)
    assert code == 0, out
    assert re.search(r"aicr-gen sync --check \(rendered trees up to date\)\.+Passed\n", out), out
    assert re.search(r"aicr-gen ClusterSpec policy check[^\n]*\(no files to check\)Skipped", out), out


def test_a_mirror_lock_edit_fails_naming_the_lock(gitops_layout: Path, pre_commit_home: Path,
                                                  tmp_path: Path) -> None:
    _repo, out, code = _commit(gitops_layout, tmp_path, pre_commit_home,
                               _replace("clusters/site-a.lock.yaml", "1" * 64, "2" * 64))
    assert code == 1, out
    _stale_because(out, "clusters/site-a", "clusters/site-a.yaml",
                   "clusters/site-a.lock.yaml changed (spec.mirror, its lock)")
    assert "aicr-gen ClusterSpec policy check" in out and "(no files to check)Skipped" in out  # not a spec


def test_a_rules_file_beside_the_spec_fails_naming_it(gitops_layout: Path, pre_commit_home: Path,
                                                      tmp_path: Path) -> None:
    _repo, out, code = _commit(gitops_layout, tmp_path, pre_commit_home,
                               _replace("clusters/site-a-rules.yaml", "shouldCordon: true", "shouldCordon: false"))
    assert code == 1, out
    _stale_because(out, "clusters/site-a", "clusters/site-a.yaml",
                   "clusters/site-a-rules.yaml changed (spec.sentinel.rules)")


def test_a_hand_edit_of_a_rendered_file_is_named_as_such(gitops_layout: Path, pre_commit_home: Path,
                                                         tmp_path: Path) -> None:
    def edit(repo: Path) -> None:
        values = next((repo / "clusters" / "site-a" / "argocd").glob("*-gpu-operator/values.yaml"))
        values.write_text(values.read_text() + "# tuned by hand\n")

    _repo, out, code = _commit(gitops_layout, tmp_path, pre_commit_home, edit)
    assert code == 1, out
    _stale_because(out, "clusters/site-a", "clusters/site-a.yaml",
                   "its files differ from what sync committed (edited by hand)")


# ------------------------------------------------------------------------------------ path filters

INPUTS = {
    "a ClusterSpec": ["clusters/a.yaml", "clusters/eu/b.yml", "prod-clusterspec.yaml"],
    "a rendered file or its record": ["clusters/a/argocd/app-of-apps.yaml", ".aicr-gen/inputs/clusters/a.json"],
    "a fleet file": ["fleet.yaml", "fleet-prod.yml", "fleets/eu.yaml", "team/fleet.yaml"],
    "a rules file": ["sentinel-rules.yaml", "clusters/site-a-rules.yaml"],
    "a policy": ["policies/team.yaml"],
    "a catalog folder": ["catalog/registry.yaml", "catalog/overlays/base.yaml", "catalogs/site/mixins/os.yaml",
                         "overlays/eks.yaml", "registry.yaml"],
    "a mirror lock": ["clusters/site-a.lock.yaml", "site-a.lock.yml"],
}
UNRELATED = ["README.md", "scripts/deploy.sh", "docs/runbook.yaml", "src/app.py", ".github/CODEOWNERS",
             ".github/workflows/aicr-gen-fleet-drift.yml"]  # where examples/github/fleet-drift.yml goes


def _github_glob(pattern: str) -> re.Pattern[str]:
    """A GitHub Actions ``paths`` filter pattern as a regex: ``**`` any path (``**/`` also none), ``*`` and
    ``?`` within one part (docs.github.com, "Filter pattern cheat sheet")."""
    out, index = "", 0
    while index < len(pattern):
        if pattern.startswith("**/", index):
            out, index = out + "(?:.*/)?", index + 3
        elif pattern.startswith("**", index):
            out, index = out + ".*", index + 2
        elif pattern[index] == "*":
            out, index = out + "[^/]*", index + 1
        elif pattern[index] == "?":
            out, index = out + "[^/]", index + 1
        else:
            out, index = out + re.escape(pattern[index]), index + 1
    return re.compile(out + r"\Z")


def _workflow_paths(path: Path) -> list[re.Pattern[str]]:
    return [_github_glob(item) for item in yaml.safe_load(path.read_text())[True]["pull_request"]["paths"]]


@pytest.mark.parametrize("kind", sorted(INPUTS))
def test_every_input_kind_starts_the_sync_check_hook_and_the_plan_workflow(kind: str) -> None:
    assert HOOKS[SYNC_HOOK]["always_run"] is True and "files" not in HOOKS[SYNC_HOOK]  # deletions too
    workflow = _workflow_paths(PLAN_WORKFLOW)
    for path in INPUTS[kind]:
        assert any(glob.match(path) for glob in workflow), (kind, path)


def test_unrelated_files_start_neither_the_spec_hook_nor_the_plan_workflow() -> None:
    spec_hook = re.compile(HOOKS["aicr-gen-spec"]["files"])
    workflow = _workflow_paths(PLAN_WORKFLOW)
    for path in UNRELATED:
        assert not spec_hook.search(path), path
        assert not any(glob.match(path) for glob in workflow), path


def test_the_spec_hook_lints_specs_and_fleets_not_the_files_beside_them() -> None:
    spec_hook = HOOKS["aicr-gen-spec"]
    files, exclude = re.compile(spec_hook["files"]), re.compile(spec_hook["exclude"])

    def linted(path: str) -> bool:
        return bool(files.search(path)) and not exclude.search(path)

    assert all(linted(path) for path in ["clusters/a.yaml", "prod-clusterspec.yaml", *INPUTS["a fleet file"]])
    assert not any(linted(path) for path in ["clusters/site-a.lock.yaml", "clusters/site-a-rules.yaml",
                                             "clusters/a/argocd/app-of-apps.yaml", "policies/team.yaml"])


def test_the_workflow_runs_on_its_own_edits() -> None:
    assert any(glob.match(".github/workflows/aicr-gen-plan.yml") for glob in _workflow_paths(PLAN_WORKFLOW))


# ------------------------------------------------------------------- the same messages without the hook


def _check(repo: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aicr_gen", "sync", "--check", "--repo", ".", *extra,
                           "clusters/*.yaml"], cwd=repo, capture_output=True, text=True, check=False, timeout=120)


def test_a_fleet_bump_committed_without_the_hook_is_named_against_head(fleet_layout: Path, tmp_path: Path) -> None:
    """What the action runs on a pull request: ``sync --check`` against the commit checked out."""
    repo = tmp_path / "repo"
    shutil.copytree(fleet_layout, repo, symlinks=True)
    _replace("fleet.yaml", "gpu-operator: v26.3.3", "gpu-operator: v26.4.0")(repo)
    _git(repo, "commit", "-q", "--no-verify", "-am", "Update gpu-operator chart to v26.4.0")
    proc = _check(repo)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    for name in ("a", "b"):
        assert (f"clusters/{name} is not up to date with clusters/{name}.yaml in HEAD: stale because fleet.yaml "
                "changed (spec.extends)") in proc.stderr, proc.stderr
    assert proc.stdout == ""


def test_a_new_spec_never_synced_says_so(fleet_layout: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(fleet_layout, repo, symlinks=True)
    _write(repo, {"clusters/c.yaml": FLEET_SPEC.format(name="c", criteria=CRITERIA.replace("eks", "gke")
                                                      .replace("ubuntu", "cos"))})
    _git(repo, "add", "-A")
    proc = _check(repo, "--staged")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert ("clusters/c is not up to date with clusters/c.yaml in the index: stale because it has no inputs record "
            "of this spec (.aicr-gen/inputs/): sync never committed it from this spec; run 'aicr-gen sync "
            "clusters/c.yaml --repo ") in proc.stderr, proc.stderr
    assert "missing clusters/c/recipe.yaml" in proc.stderr and "stale: clusters/c\n" in proc.stderr + "\n"


def test_spec_patterns_skip_the_inputs_beside_the_specs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``clusters/*.yaml`` (the hook's, the action's and the docs' default) among a fleet, a mirror lock, a
    policy and a rules file: aicr-gen's patterns and the action's Find ClusterSpecs step both give the spec only;
    a file named outright is kept (and refused if it is no spec)."""
    from aicr_gen.spec.patterns import expand
    from tests.project.test_github import _spec_files

    _write(tmp_path, {"clusters/a.yaml": FLEET_SPEC.format(name="a", criteria=CRITERIA),
                      "clusters/fleet.yaml": FLEET, "clusters/a.lock.yaml": "apiVersion: aicr-gen.dev/v1alpha1\n"
                      "kind: MirrorLock\n", "clusters/a-rules.yaml": RULES, "clusters/policy.yaml": POLICY})
    monkeypatch.chdir(tmp_path)
    assert expand(["clusters/*.yaml"]) == ["clusters/a.yaml"]
    assert expand(["clusters/a.lock.yaml"]) == ["clusters/a.lock.yaml"]
    assert _spec_files(tmp_path, "clusters/*.yaml", tmp_path).splitlines() == ["clusters/a.yaml"]
    assert _spec_files(tmp_path, "clusters/a-rules.yaml", tmp_path).splitlines() == ["clusters/a-rules.yaml"]


def test_a_repository_with_no_spec_yet_commits(tmp_path: Path, hook_repo: Path, pre_commit_home: Path) -> None:
    """The sync check runs on every commit, so a repository that installs the hooks before its first ClusterSpec
    must still commit: a pattern that matches no spec yet has nothing stale (``sync`` itself still refuses it)."""
    repo = tmp_path / "new"
    _write(repo, {"README.md": "# GitOps\n"})
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "first")
    _install(repo, hook_repo, pre_commit_home)
    _write(repo, {"README.md": "# GitOps\n\nClusters come next.\n"})
    _git(repo, "add", "-A")
    env = {**os.environ, **GIT_ENV, "PRE_COMMIT_HOME": str(pre_commit_home), "NO_COLOR": "1"}
    proc = subprocess.run(["git", "commit", "-m", "docs"], cwd=repo, capture_output=True, text=True, env=env,
                          check=False, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    said = proc.stdout + proc.stderr
    assert re.search(r"aicr-gen sync --check \(rendered trees up to date\)\.+Passed\n", said), said
    refused = subprocess.run([sys.executable, "-m", "aicr_gen", "sync", "clusters/*.yaml", "--repo", "."], cwd=repo,
                             capture_output=True, text=True, env=env, check=False)
    assert refused.returncode == 2 and "matches no file" in refused.stderr, refused.stderr
