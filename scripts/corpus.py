"""Byte-identity corpus of aicr-gen: every rendered tree, plan, report and message, to compare two commits.

``python scripts/corpus.py --out DIR`` drives aicr-gen through its command line only (``python -m aicr_gen``
subprocesses; the code under test is whatever that interpreter imports, e.g. with ``PYTHONPATH=WORKTREE``)
over every leaf of the embedded and the reference AICR catalog x every deployer, every file of examples/,
the snapshots, the test fixtures and /work/shared/reference, and writes under DIR each command's exit
code, stdout and stderr (``NN-LABEL.exit|stdout|stderr``), each folder or file it wrote (``NN-LABEL/``,
``NN-LABEL.modes`` listing the non-0644 modes) and ``DIR/MANIFEST``: sorted ``sha256  relative/path``.
``python scripts/corpus.py --compare DIR_A DIR_B`` prints what differs (with the first lines of a diff)
and exits 1 when anything does.

Rules:
- nothing is imported from aicr_gen: the package layout may differ between the two commits compared;
- every input is copied into one temporary folder first and every command runs there with relative paths
  where it can, in a clean environment (empty HOME, UTC, C.UTF-8, fixed Git identity and dates, fixed
  SOURCE_DATE_EPOCH, terminal width 100); the only normalisation is that folder's path in stdout and
  stderr, replaced by ``<TMP>``. Anything else that varies between two runs is a finding, not noise;
- a scenario is a chain of commands in its own folder (sync, then sync --check, then an edit and plan);
  scenarios run in parallel (--jobs), commands of one scenario in order;
- ``--pin-code-digest``: the inputs record ``sync`` commits names aicr-gen's code by a digest of its files, so
  any change to the code changes it (and the commits after it). To compare two commits of a refactor, both runs
  pin that digest (a ``sitecustomize`` replaces ``aicr_gen.gitops.records.fingerprint.code``'s ``code`` field with
  zeros); everything else is still compared byte for byte.
"""

from __future__ import annotations

import argparse
import base64
import difflib
import fnmatch
import gzip
import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEPLOYERS = ("helm", "argocd", "argocd-helm", "flux", "helmfile")
GIT_URL = "https://example.invalid/gitops.git"
TOKEN = "<TMP>"
EPOCH = "1767225600"  # 2026-01-01T00:00:00Z
GIT_DATE = "2026-01-01T00:00:00+00:00"
CRITERIA = ("service", "accelerator", "intent", "os", "platform")
SCHEMA_KINDS = ("recipe", "overlay", "mixin", "registry", "criteria", "clusterspec", "fleet", "plan", "mirrorlock")
FORMATS_OF_DIFF = ("table", "json", "yaml", "markdown")


# ------------------------------------------------------------------------------------------------ running


@dataclass
class Corpus:
    """Where a run reads and writes: ``tmp`` holds the inputs (``tmp/in``) and each scenario's working folder
    (``tmp/work/NAME``); ``out`` receives what is recorded."""

    tmp: Path
    out: Path
    env: dict[str, str]
    shared: Path | None
    commands: int = 0
    notes: list[str] = field(default_factory=list)


class Scenario:
    """A named chain of commands run in order in ``work``; what it records goes to ``out``."""

    def __init__(self, corpus: Corpus, name: str) -> None:
        self.corpus = corpus
        self.name = name
        self.work = corpus.tmp / "work" / name
        self.out = corpus.out / name
        self.work.mkdir(parents=True, exist_ok=True)
        self.step = 0

    def _label(self, label: str) -> str:
        self.step += 1
        return f"{self.step:02d}-{label}"

    def _write(self, name: str, data: bytes) -> None:
        path = self.out / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)

    def _normalise(self, data: bytes) -> bytes:
        for form in {str(self.corpus.tmp), os.path.realpath(self.corpus.tmp)}:
            data = data.replace(form.encode(), TOKEN.encode())
        return data

    def process(self, label: str, argv: Sequence[str], *, cwd: str = ".", stdin: bytes | None = None) -> int:
        """Run ``argv`` in ``work/cwd`` and record its exit code, stdout and stderr."""
        name = self._label(label)
        proc = subprocess.run(list(argv), cwd=self.work / cwd, env=self.corpus.env, input=stdin or b"",
                              capture_output=True, check=False, timeout=600)
        self.corpus.commands += 1
        self._write(f"{name}.exit", f"{proc.returncode}\n".encode())
        self._write(f"{name}.stdout", self._normalise(proc.stdout))
        self._write(f"{name}.stderr", self._normalise(proc.stderr))
        return proc.returncode

    def cli(self, label: str, *args: str, cwd: str = ".", stdin: bytes | None = None) -> int:
        """``aicr-gen ARGS``, recorded."""
        return self.process(label, [sys.executable, "-m", "aicr_gen", *args], cwd=cwd, stdin=stdin)

    def git(self, *args: str, cwd: str = ".") -> None:
        """A Git command preparing a scenario (not recorded; it must succeed)."""
        subprocess.run(["git", *args], cwd=self.work / cwd, env=self.corpus.env, check=True, capture_output=True)

    def keep(self, label: str, rel: str, *, skip: tuple[str, ...] = (".git",)) -> None:
        """Record the file or folder ``work/rel`` (as written: absent is recorded as absent), with the modes
        of its entries that are not plain 0644 files."""
        name = self._label(label)
        source = self.work / rel
        if not source.exists() and not source.is_symlink():
            self._write(f"{name}.absent", b"")
            return
        target = self.out / name
        if source.is_dir():
            shutil.copytree(source, target, symlinks=True, ignore=shutil.ignore_patterns(*skip))
        else:
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, target, follow_symlinks=False)
        modes = []
        for path in sorted(walk(target)):
            mode = os.lstat(path).st_mode
            kind = "symlink" if stat.S_ISLNK(mode) else oct(stat.S_IMODE(mode))
            if kind != "0o644":
                modes.append(f"{kind}  {path.relative_to(target).as_posix()}\n")
        self._write(f"{name}.modes", "".join(modes).encode())

    def copy_in(self, source: str, rel: str) -> None:
        """Copy an input (``tmp/in/source``) into the working folder at ``rel``."""
        origin, target = self.corpus.tmp / "in" / source, self.work / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if origin.is_dir():
            shutil.copytree(origin, target, symlinks=True)
        else:
            shutil.copy2(origin, target)


def walk(root: Path) -> list[Path]:
    """Every file and symlink under root (root itself when it is a file)."""
    if not root.is_dir() or root.is_symlink():
        return [root]
    found = []
    for folder, dirs, files in os.walk(root):
        base = Path(folder)
        found += [base / f for f in files]
        found += [base / d for d in dirs if (base / d).is_symlink()]
    return found


_PIN = '''"""corpus.py --pin-code-digest: aicr-gen's code digest pinned in every inputs record."""
import aicr_gen.gitops.records.fingerprint as _fingerprint

_real = _fingerprint.code
_fingerprint.code = lambda: {**_real(), "code": "sha256:" + "0" * 64}
'''


def environment(tmp: Path, *, pin_code: bool = False) -> dict[str, str]:
    """A clean environment: nothing of the caller's but PYTHONPATH (which selects the code under test)."""
    home = tmp / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("")
    env = {
        "PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(home), "TMPDIR": str(tmp / "t"),
        "TZ": "UTC", "LC_ALL": "C.UTF-8", "LANG": "C.UTF-8", "COLUMNS": "100", "LINES": "50", "TERM": "dumb",
        "NO_COLOR": "1", "PYTHONDONTWRITEBYTECODE": "1", "SOURCE_DATE_EPOCH": EPOCH,
        "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"),
        "GIT_AUTHOR_NAME": "corpus", "GIT_AUTHOR_EMAIL": "corpus@example.invalid", "GIT_AUTHOR_DATE": GIT_DATE,
        "GIT_COMMITTER_NAME": "corpus", "GIT_COMMITTER_EMAIL": "corpus@example.invalid",
        "GIT_COMMITTER_DATE": GIT_DATE,
    }
    (tmp / "t").mkdir()
    paths = [os.environ["PYTHONPATH"]] if "PYTHONPATH" in os.environ else []
    if pin_code:
        (tmp / "pin").mkdir()
        (tmp / "pin" / "sitecustomize.py").write_text(_PIN)
        paths.insert(0, str(tmp / "pin"))
    if paths:
        env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


# ------------------------------------------------------------------------------------------------ inputs


def dump_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def gz64(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, mtime=0)).decode()


def _gpu(entity: int, status: str, warning: tuple[str, int] | None = None) -> dict[str, object]:
    out: dict[str, object] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": entity, "status": status}
    if warning:
        out["warnings"] = [{"warning": warning[0], "error_id": warning[1], "error_category": 4,
                            "error_severity": 2}]
    return out


def _test(name: str, *gpus: dict[str, object], summary: str = "") -> dict[str, object]:
    worst = summary or ("Fail" if any(g["status"] == "Fail" for g in gpus) else "Pass")
    return {"name": name, "results": list(gpus), "test_summary": {"status": worst}}


def dcgm4(fail: bool) -> dict[str, object]:
    """``dcgmi diag -r 4 -j`` of DCGM 4.x on two GPUs (the shape of tests/test_reports.py)."""
    memory = _gpu(1, "Fail", ("Pending page retirements on GPU 1.", 83)) if fail else _gpu(1, "Pass")
    return {"DCGM Diagnostic": {"test_categories": [
        {"category": "Deployment", "tests": [_test("software", _gpu(0, "Pass"), _gpu(1, "Pass"))]},
        {"category": "Hardware", "tests": [_test("memory", _gpu(0, "Pass"), memory),
                                           _test("pcie", _gpu(0, "Pass"), _gpu(1, "Pass"))]},
        {"category": "Stress", "tests": [
            _test("targeted_stress", _gpu(0, "Warn", ("Clock throttling: power cap.", 45)), _gpu(1, "Pass"),
                  summary="Warn"),
            _test("eud", _gpu(0, "Skip"), _gpu(1, "Skip"), summary="Skip")]}]},
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
            {"entity_id": 0, "serial_num": "1650923000001", "device_id": "2330"},
            {"entity_id": 1, "serial_num": "1650923000002", "device_id": "2330"}]}],
        "metadata": {"version": "4.2.3", "Driver Version Detected": "580.82.09"}}


def certification(condition: str) -> dict[str, object]:
    """A Certification after NVCRE ran it (``kubectl get certification -o yaml``)."""
    failed = condition == "Failed"
    nccl: dict[str, object] = {"domain": "communication", "variant": "nccl-all-reduce",
                               "status": "Failed" if failed else "Succeeded",
                               "workflowRef": {"name": "gpu-cert-nccl", "namespace": "nvcre-system"},
                               "succeededNodesRef": {"kind": "ConfigMap", "name": "gpu-cert-nccl-succeeded-nodes"}}
    if failed:
        nccl["failedNodesRef"] = {"kind": "ConfigMap", "name": "gpu-cert-nccl-failed-nodes"}
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
            "metadata": {"name": "gpu-cert", "namespace": "nvcre-system"},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                     "categories": [{"domain": "diagnostics", "variant": "dcgm-level4"},
                                    {"domain": "communication", "variant": "nccl-all-reduce",
                                     "options": {"thresholds": {"busBandwidthGBps": "value >= 300"}}}],
                     "gpusPerNode": 8, "timeoutPerJob": "30m"},
            "status": {"conditions": [{"type": t, "status": "True" if t == condition else "False",
                                       "reason": f"Certification{t}", "message": f"{t} message",
                                       "lastTransitionTime": "2026-09-01T10:00:00Z"}
                                      for t in ("InProgress", "Succeeded", "Failed")],
                       "categoryStatuses": [
                           {"domain": "diagnostics", "variant": "dcgm-level4", "status": "Succeeded",
                            "workflowRef": {"name": "gpu-cert-dcgm", "namespace": "nvcre-system"}}, nccl]}}


def configmaps(failed: list[str], succeeded: list[str]) -> dict[str, object]:
    rows = [{"name": n, "reason": "WorkloadFailed", "message": "job failed: BackoffLimitExceeded"} for n in failed]
    meta = {"namespace": "nvcre-system"}
    return {"apiVersion": "v1", "kind": "List", "items": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpu-cert-nccl-failed-nodes", **meta},
         "binaryData": {"failed-nodes.json.gz": gz64(json.dumps(rows).encode())}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "gpu-cert-nccl-succeeded-nodes", **meta},
         "binaryData": {"succeeded-nodes.csv.gz": gz64(",".join(succeeded).encode())}}]}


def prepare_inputs(corpus: Corpus) -> None:
    """Copy the inputs into ``tmp/in``: examples/, snapshots/, tests/fixtures, the parts of the shared
    reference that are read, and the fixtures written here (DCGM, Certification)."""
    inputs = corpus.tmp / "in"
    for rel in ("examples", "snapshots", "tests/fixtures"):
        shutil.copytree(REPO / rel, inputs / rel)
    generated = inputs / "generated"
    dump_json(generated / "dcgm-fail.json", dcgm4(fail=True))
    dump_json(generated / "dcgm-pass.json", dcgm4(fail=False))
    dump_json(generated / "dcgm-runtime-error.json", {
        "DCGM Diagnostic": {"runtime_error": "Error: unable to start diagnostic: DCGM_ST_IN_USE",
                            "version": "4.2.3"}, "metadata": {"version": "4.2.3"}})
    nodes = [f"gpu-node-{i:02d}" for i in range(1, 17)]
    dump_json(generated / "cert-failed.json", certification("Failed"))
    dump_json(generated / "cert-succeeded.json", certification("Succeeded"))
    dump_json(generated / "cert-inprogress.json", certification("InProgress"))
    dump_json(generated / "cert-configmaps.json", configmaps(nodes, []))
    dump_json(generated / "cert-configmaps-partial.json", configmaps(["gpu-node-05"], ["gpu-node-02", "gpu-node-04"]))
    if corpus.shared is None:
        corpus.notes.append("no shared folder: the reference catalog, nccl logs, NVCRE and NVSentinel samples "
                            "are skipped")
        return
    reference = corpus.shared / "reference"
    for rel in ("aicr/recipes", "aicr/tests/chainsaw/cli/cuj1-training", "aicr/examples/recipes",
                "nccl", "nvcre/NVIDIA-cluster-readiness-engine/config/samples", "nvsentinel/tests/data"):
        if (reference / rel).is_dir():
            shutil.copytree(reference / rel, inputs / "reference" / rel)
        else:
            corpus.notes.append(f"absent, skipped: {reference / rel}")


def reference(corpus: Corpus, rel: str) -> bool:
    return (corpus.tmp / "in" / "reference" / rel).exists()


# ------------------------------------------------------------------------------------------------ scenarios

Build = Callable[[Scenario], None]


def leaves(corpus: Corpus, catalog: str | None) -> list[tuple[str, dict[str, str]]]:
    """The leaf overlays of a catalog (``recipe list --format json``), as the command lists them."""
    args = ["recipe", "list", "--format", "json"] + (["--catalog", catalog] if catalog else [])
    proc = subprocess.run([sys.executable, "-m", "aicr_gen", *args], cwd=corpus.tmp / "in", env=corpus.env,
                          capture_output=True, check=True)
    return [(leaf["name"], leaf["criteria"]) for leaf in json.loads(proc.stdout)]


def leaf_scenario(catalog: str | None, criteria: dict[str, str]) -> Build:
    """recipe (yaml and json) of one leaf, a bundle per deployer, each verified, then all five at once."""
    def build(s: Scenario) -> None:
        flags = [f"--{key}={criteria[key]}" for key in CRITERIA if key in criteria]
        cat = ["--catalog", str(s.corpus.tmp / "in" / catalog)] if catalog else []
        s.cli("recipe", "recipe", *cat, *flags, "-o", "recipe.yaml")
        s.keep("recipe.yaml", "recipe.yaml")
        s.cli("recipe-json", "recipe", *cat, *flags, "--format", "json")
        for deployer in DEPLOYERS:
            repo = ["--repo", GIT_URL] if deployer in ("argocd", "argocd-helm", "flux") else []
            s.cli(f"bundle-{deployer}", "bundle", *cat, "-r", "recipe.yaml", "-d", deployer, *repo,
                  "-o", f"bundle-{deployer}")
            s.keep(f"bundle-{deployer}", f"bundle-{deployer}")
            s.cli(f"verify-{deployer}", "verify", f"bundle-{deployer}")
        s.cli("verify-all-json", "verify", "--format", "json", *(f"bundle-{d}" for d in DEPLOYERS))
    return build


def bundle_options(s: Scenario) -> None:
    """The bundle flags beyond the defaults, on one recipe: scheduling, values, readiness, serial, build."""
    s.cli("recipe", "recipe", "--service=eks", "--accelerator=h100", "--intent=training", "--os=ubuntu",
          "--platform=kubeflow", "--nodes=16", "-o", "recipe.yaml")
    s.cli("recipe-v1alpha2", "recipe", "--service=eks", "--accelerator=h100", "--intent=training", "--os=ubuntu",
          "--platform=kubeflow", "--api-version", "aicr.run/v1alpha2")
    s.cli("recipe-no-slurm", "recipe", "--service=eks", "--accelerator=h100", "--intent=training", "--os=ubuntu",
          "--platform=slurm")
    if reference(s.corpus, "aicr/recipes"):
        catalog = str(s.corpus.tmp / "in/reference/aicr/recipes")
        for mode in ("disabled", "customer-managed", "aicr-provided"):
            s.cli(f"recipe-slurm-{mode}", "recipe", "--catalog", catalog, "--service=eks", "--accelerator=gb200",
                  "--intent=training", "--os=ubuntu", "--platform=slurm", "--slurm-accounting-mode", mode)
    extra = ["--system-node-selector", "role=system", "--system-node-toleration", "dedicated=system:NoSchedule",
             "--accelerated-node-selector", "nvidia.com/gpu.present=true",
             "--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule", "--nodes", "16",
             "--storage-class", "gp3", "--shared-storage-class", "efs", "--set", "gpu-operator:driver.enabled=false",
             "--set-json", 'gpu-operator:tolerations=[{"operator":"Exists"}]', "--serial"]
    for deployer in DEPLOYERS:
        repo = ["--repo", GIT_URL] if deployer in ("argocd", "argocd-helm", "flux") else []
        dynamic = ["--dynamic", "gpu-operator:driver"] if deployer != "argocd" else []
        readiness = ["--readiness-hooks"] if deployer in ("helm", "argocd", "argocd-helm") else []
        s.cli(f"bundle-{deployer}", "bundle", "-r", "recipe.yaml", "-d", deployer, *repo, *extra, *dynamic,
              *readiness, "-o", f"bundle-{deployer}")
        s.keep(f"bundle-{deployer}", f"bundle-{deployer}")
        s.cli(f"verify-{deployer}", "verify", f"bundle-{deployer}")
    for deployer in ("argocd", "flux"):
        s.cli(f"build-{deployer}", "bundle", "-r", "recipe.yaml", "-d", deployer, "--repo", GIT_URL, "--build")
    s.cli("dynamic-refused", "bundle", "-r", "recipe.yaml", "-d", "argocd", "--repo", GIT_URL, "--dynamic",
          "gpu-operator:driver", "-o", "refused-a")
    s.cli("readiness-refused", "bundle", "-r", "recipe.yaml", "-d", "flux", "--repo", GIT_URL, "--readiness-hooks",
          "-o", "refused-b")
    s.cli("bundle-again-refused", "bundle", "-r", "recipe.yaml", "-o", "bundle-helm")
    s.cli("bundle-force", "bundle", "-r", "recipe.yaml", "-o", "bundle-helm", "--force")
    s.keep("bundle-force", "bundle-helm")


SPECS = ("eks-h100-inference-dynamo.yaml", "gke-h100-training-kubeflow.yaml", "kind-h100-inference-dynamo.yaml",
         "fleet/clusters/eks-h100-inference.yaml", "fleet/clusters/kind-h100-dev.yaml", "pools/eks-h100-gb200.yaml")


SHARED_REPO = tuple(rel for rel in SPECS if not rel.startswith("gke"))  # the specs of one repository


def example_files(corpus: Corpus) -> list[str]:
    root = corpus.tmp / "in" / "examples"
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def examples_scenario(files: list[str]) -> Build:
    """lint (text and json) of every file of examples/, spec show and policy check of every ClusterSpec."""
    def build(s: Scenario) -> None:
        s.copy_in("examples", "examples")
        for rel in files:
            s.cli(f"lint-{rel}", "lint", f"examples/{rel}")
            s.cli(f"lint-json-{rel}", "lint", "--format", "json", f"examples/{rel}")
        s.cli("lint-all", "lint", *(f"examples/{rel}" for rel in SPECS), "examples/fleet/fleet.yaml")
        for rel in SPECS:
            s.cli(f"show-{rel}", "spec", "show", f"examples/{rel}")
            s.cli(f"show-json-{rel}", "spec", "show", "--format", "json", f"examples/{rel}")
            s.cli(f"policy-{rel}", "policy", "check", f"examples/{rel}")
            s.cli(f"policy-json-{rel}", "policy", "check", "--format", "json", f"examples/{rel}")
        s.cli("show-to-file", "spec", "show", "-o", "shown.yaml", "examples/fleet/clusters/kind-h100-dev.yaml")
        s.keep("show-to-file", "shown.yaml")
    return build


EDITS = (  # a small change per spec file for plan: (old, new), the first that applies
    ("versions: {}", "versions: {gpu-operator: v26.3.1}"),
    ("gpu-operator: v26.3.2", "gpu-operator: v26.3.1"),
    ("gpu-operator: v26.3.3", "gpu-operator: v26.3.1"),
    ("      percentage: 10", "      percentage: 20"),
    ("  repo:\n    path:", "  versions:\n    gpu-operator: v26.3.1\n  repo:\n    path:"),
)


def edit(path: Path) -> None:
    text = path.read_text()
    for old, new in EDITS:
        if old in text:
            path.write_text(text.replace(old, new, 1))
            return
    raise ValueError(f"no edit applies to {path}")


def sync_scenario(specs: Sequence[str], edits: Sequence[str]) -> Build:
    """sync into a fresh Git repository (tree, ls-tree, commit messages), sync --check, an edit, plan in
    every format, sync --check of the stale tree, the second sync and its message."""
    def build(s: Scenario) -> None:
        s.git("init", "-q", "-b", "main", "repo", cwd=".")
        s.copy_in("examples", "repo/examples")
        s.git("add", "-A", cwd="repo")
        s.git("commit", "-q", "-m", "examples", cwd="repo")
        paths = [f"examples/{rel}" for rel in specs]
        s.cli("sync", "sync", "--jobs", "2", *paths, cwd="repo")
        s.process("log", ["git", "log", "--format=%H%n%an <%ae> %ad%n%B", "--stat"], cwd="repo")
        s.process("ls-tree", ["git", "ls-tree", "-r", "HEAD"], cwd="repo")
        s.keep("tree", "repo")
        s.cli("check", "sync", "--check", *paths, cwd="repo")
        s.cli("plan-unchanged", "plan", "--jobs", "2", *paths, cwd="repo")
        for rel in edits:
            edit(s.work / "repo" / "examples" / rel)
        for fmt in ("markdown", "text", "json"):
            s.cli(f"plan-{fmt}", "plan", "--jobs", "2", "--format", fmt, *paths, cwd="repo")
        s.cli("plan-to-file", "plan", "--jobs", "2", "--fail-on", "policy", "-o", "../plan.md", *paths, cwd="repo")
        s.keep("plan-to-file", "plan.md")
        s.cli("check-stale", "sync", "--check", *paths, cwd="repo")
        s.git("add", "-A", "examples", cwd="repo")
        s.cli("check-staged", "sync", "--check", "--staged", *paths, cwd="repo")
        s.cli("sync-branch", "sync", "--branch", "pr", "--jobs", "2", *paths, cwd="repo")
        s.process("log-branch", ["git", "log", "--format=%H%n%B", "--stat", "main..pr"], cwd="repo")
        s.cli("sync-edit", "sync", "--jobs", "2", "--message", "bump", *paths, cwd="repo")
        s.process("log-edit", ["git", "log", "-1", "--format=%H%n%B", "--stat"], cwd="repo")
        s.process("ls-tree-edit", ["git", "ls-tree", "-r", "HEAD"], cwd="repo")
        s.cli("check-edit", "sync", "--check", *paths, cwd="repo")
        s.cli("sync-again", "sync", "--jobs", "2", *paths, cwd="repo")
    return build


def fleet_scenario(s: Scenario) -> None:
    """fleet entry (the fleet's clusters, then every example spec), --check, mirror list in every format."""
    s.copy_in("examples", "examples")
    clusters = ["examples/fleet/clusters/eks-h100-inference.yaml", "examples/fleet/clusters/kind-h100-dev.yaml"]
    s.cli("entry", "fleet", "entry", "-o", "fleet", *clusters)
    s.keep("entry", "fleet")
    s.cli("entry-check", "fleet", "entry", "--check", "-o", "fleet", *clusters)
    s.cli("entry-glob", "fleet", "entry", "--name", "all", "-o", "fleet-all", "examples/fleet/clusters/*.yaml")
    s.keep("entry-glob", "fleet-all")
    s.cli("entry-again-refused", "fleet", "entry", "-o", "fleet", *clusters[:1])
    s.cli("entry-force", "fleet", "entry", "--force", "-o", "fleet", *clusters[:1])
    s.keep("entry-force", "fleet")
    for rel in SPECS:
        for fmt in ("text", "json", "hauler", "zarf"):
            s.cli(f"mirror-{fmt}-{rel}", "mirror", "list", "--format", fmt, f"examples/{rel}")
    s.cli("recipe", "recipe", "--service=eks", "--accelerator=h100", "--intent=inference", "--os=ubuntu",
          "--platform=dynamo", "-o", "recipe.yaml")
    for deployer in DEPLOYERS:
        s.cli(f"mirror-recipe-{deployer}", "mirror", "list", "--deployer", deployer, "recipe.yaml")
    s.cli("mirror-to-file", "mirror", "list", "--format", "zarf", "--name", "site", "-o", "zarf.yaml",
          "examples/pools/eks-h100-gb200.yaml")
    s.keep("mirror-to-file", "zarf.yaml")
    s.cli("mirror-lock-no-mirror", "mirror", "lock", "examples/eks-h100-inference-dynamo.yaml")
    s.cli("mirror-verify-no-mirror", "mirror", "verify", "examples/eks-h100-inference-dynamo.yaml")


def drift_scenario(s: Scenario) -> None:
    """diff (every format, snapshot and recipe baselines, spec and pools, fleet) and validate."""
    s.copy_in("snapshots", "snapshots")
    s.copy_in("examples", "examples")
    base, live = "snapshots/golden-baseline.yaml", "snapshots/example-live.yaml"
    s.cli("recipe", "recipe", "--service=eks", "--accelerator=h100", "--intent=inference", "--os=ubuntu",
          "--platform=dynamo", "-o", "recipe.yaml")
    pairs = [("golden-live", base, live), ("live-golden", live, base), ("golden-golden", base, base),
             ("recipe-live", "recipe.yaml", live), ("recipe-golden", "recipe.yaml", base)]
    if reference(s.corpus, "aicr/tests/chainsaw/cli/cuj1-training/mock-snapshot.yaml"):
        s.copy_in("reference/aicr/tests/chainsaw/cli/cuj1-training/mock-snapshot.yaml", "mock-snapshot.yaml")
        pairs += [("golden-mock", base, "mock-snapshot.yaml"), ("recipe-mock", "recipe.yaml", "mock-snapshot.yaml")]
    for label, baseline, target in pairs:
        for fmt in FORMATS_OF_DIFF:
            s.cli(f"diff-{label}-{fmt}", "diff", "--baseline", baseline, "--target", target, "--format", fmt)
        s.cli(f"diff-{label}-fail", "diff", "--baseline", baseline, "--target", target, "--fail-on-drift")
    s.cli("diff-stdin", "diff", "--baseline", base, "--target", "-", stdin=(s.work / live).read_bytes())
    s.cli("diff-to-file", "diff", "--baseline", base, "--target", live, "--format", "json", "-o", "drift.json",
          "--emit-validation-request", "vr.yaml")
    s.keep("diff-to-file", "drift.json")
    s.keep("diff-vr", "vr.yaml")
    spec = "examples/eks-h100-inference-dynamo.yaml"
    for fmt in FORMATS_OF_DIFF:
        s.cli(f"diff-spec-{fmt}", "diff", "--spec", spec, "--target", live, "--format", fmt)
        s.cli(f"diff-pools-{fmt}", "diff", "--spec", "examples/pools/eks-h100-gb200.yaml", "--target", live,
              "--format", fmt)
        s.cli(f"diff-fleet-{fmt}", "diff", "--fleet", "examples/fleet/clusters/*.yaml",
              "--snapshot", f"eks-h100-inference={live}", "--snapshot", f"kind-h100-dev={base}", "--format", fmt)
    s.cli("diff-pool-h100", "diff", "--spec", "examples/pools/eks-h100-gb200.yaml", "--pool", "h100",
          "--target", base)
    s.cli("diff-fleet-unreachable", "diff", "--fleet", "examples/fleet/clusters/*.yaml", "--fail-on-drift",
          "--snapshot", f"eks-h100-inference={live}")
    for label, snapshot in (("golden", base), ("live", live)):
        s.cli(f"validate-{label}", "validate", "--recipe", "recipe.yaml", "--snapshot", snapshot)
        s.cli(f"validate-{label}-json", "validate", "--recipe", "recipe.yaml", "--snapshot", snapshot,
              "--format", "json")
        s.cli(f"validate-pools-{label}", "validate", "--spec", "examples/pools/eks-h100-gb200.yaml",
              "--snapshot", snapshot)
        s.cli(f"validate-selector-{label}", "validate", "--recipe", "recipe.yaml", "--snapshot", snapshot,
              "--node-selector", "nvidia.com/gpu.present=true")
    s.cli("validate-to-file", "validate", "--recipe", "recipe.yaml", "--snapshot", live, "--format", "json",
          "-o", "ctrf.json")
    s.keep("validate-to-file", "ctrf.json")
    s.cli("snapshot-agent", "snapshot", "--agent-cronjob", "agent", "--schedule", "0 * * * *",
          "--configmap", "cm://aicr/snapshot")
    s.keep("snapshot-agent", "agent")


def reports_scenario(s: Scenario) -> None:
    """report nccl|dcgm|certification in every format, thresholds, bisect, certification bundles."""
    s.copy_in("generated", "in")
    inputs = s.work / "in"
    logs = []
    if reference(s.corpus, "nccl"):
        s.copy_in("reference/nccl", "nccl")
        logs = sorted(p.relative_to(s.work).as_posix() for p in (s.work / "nccl").rglob("*")
                      if p.suffix in (".log", ".out"))
    for log in logs:
        for fmt in ("text", "json", "markdown"):
            s.cli(f"nccl-{fmt}-{log}", "report", "nccl", "--format", fmt, log)
        s.cli(f"nccl-threshold-{log}", "report", "nccl", "--threshold", "busBandwidthGBps=value >= 300", log)
    if logs:
        s.cli("nccl-stdin", "report", "nccl", "-", stdin=(s.work / logs[0]).read_bytes())
    for name in sorted(p.name for p in inputs.glob("dcgm-*.json")):
        for fmt in ("text", "json", "markdown"):
            s.cli(f"{name}-{fmt}", "report", "dcgm", "--format", fmt, f"in/{name}")
    for name in sorted(p.name for p in inputs.glob("cert-*.json") if "configmaps" not in p.name):
        for fmt in ("text", "json", "markdown"):
            s.cli(f"{name}-{fmt}", "report", "certification", "--format", fmt, f"in/{name}")
            s.cli(f"{name}-cm-{fmt}", "report", "certification", "--format", fmt,
                  "--failed-nodes", "in/cert-configmaps-partial.json", f"in/{name}")
    s.cli("bisect", "bisect", "--certification", "in/cert-failed.json", "--failed-nodes",
          "in/cert-configmaps.json", "-o", "round-1")
    s.keep("bisect", "round-1")
    s.cli("bisect-verify", "verify", "round-1")
    s.cli("bisect-min-4", "bisect", "--certification", "in/cert-failed.json", "--failed-nodes",
          "in/cert-configmaps.json", "--min-group-size", "4", "-o", "round-1b")
    s.keep("bisect-min-4", "round-1b")
    s.cli("bisect-succeeded", "bisect", "--certification", "in/cert-succeeded.json", "--failed-nodes",
          "in/cert-configmaps.json", "-o", "round-x")
    certifications = {
        "nccl": ["--category", "communication/nccl-all-reduce", "--threshold", "busBandwidthGBps=value >= 300",
                 "--node-selector", "nvidia.com/gpu.present=true", "--option", "gpusPerNode=8"],
        "scheduled": ["--category", "diagnostics/dcgm-level4", "--category", "communication/nccl-all-reduce",
                      "--node-selector", "nvidia.com/gpu.present=true", "--schedule", "0 3 * * 0", "--post-change",
                      "--name", "weekly", "--namespace", "nvcre"],
        "nodes": ["--category", "communication/nccl-all-reduce", "--node", "gpu-node-01", "--node", "gpu-node-02",
                  "--taint-selector", "burn-in:NoSchedule",
                  "--option", "communication/nccl-all-reduce:enableMNNVL=true"],
        "bad-threshold": ["--category", "communication/nccl-all-reduce", "--threshold", "bandwidth=value >>= 3",
                          "--node-selector", "a=b"],
    }
    for label, flags in certifications.items():
        s.cli(f"certification-{label}", "certification", *flags, "-o", f"cert-{label}")
        s.keep(f"certification-{label}", f"cert-{label}")
    if reference(s.corpus, "nvcre"):
        s.copy_in("reference/nvcre", "nvcre")
        for sample in sorted((s.work / "nvcre").rglob("*.yaml")):
            rel = sample.relative_to(s.work).as_posix()
            s.cli(f"nvcre-{sample.name}", "report", "certification", rel)


def sentinel_scenario(s: Scenario) -> None:
    """sentinel values, rules test against fixtures and NVSentinel samples, validation-request."""
    s.copy_in("tests/fixtures", "fixtures")
    s.copy_in("examples/pools/gb200-rules.yaml", "gb200-rules.yaml")
    variants = {
        "monitor": [],
        "quarantine": ["--mode", "quarantine", "--breaker-percentage", "10", "--breaker-duration", "5m",
                       "--breaker-max-nodes", "2", "--lifecycle", "--validation", "--dry-run"],
        "rules": ["--mode", "quarantine", "--rules", "gb200-rules.yaml"],
        "rules-refused": ["--rules", "fixtures/rules/priorities.yaml"],
        "limited": ["--mode", "quarantine", "--limit-rule-set",
                    "GPU fatal error ruleset=node.kubernetes.io/instance-type=p5.48xlarge"],
    }
    for label, flags in variants.items():
        s.cli(f"values-{label}", "sentinel", "values", *flags, "-o", f"values-{label}.yaml")
        s.keep(f"values-{label}", f"values-{label}.yaml")
    s.cli("values-stdout", "sentinel", "values", "--mode", "quarantine")
    rules = "fixtures/rules"
    values = ["values-monitor.yaml", "values-quarantine.yaml", f"{rules}/priorities.yaml",
              f"{rules}/never-match.yaml", f"{rules}/broken.yaml", "fixtures/sentinel-chart/values.yaml"]
    for value in values:
        for fmt in ("text", "json"):
            s.cli(f"rules-{fmt}-{value}", "rules", "test", "--values", value, "--events", f"{rules}/events",
                  "--nodes", f"{rules}/nodes", "--format", fmt)
    if reference(s.corpus, "nvsentinel/tests/data"):
        s.copy_in("reference/nvsentinel/tests/data", "samples")
        for expect in ("expect-pass.yaml", "expect-fail.yaml"):
            s.cli(f"rules-expect-{expect}", "rules", "test", "--values", "values-quarantine.yaml",
                  "--events", "samples", "--expect", f"{rules}/{expect}")
        s.cli("rules-samples-json", "rules", "test", "--values", "values-rules.yaml", "--events", "samples",
              "--format", "json")
    s.cli("vr", "validation-request", "--node", "gpu-node-01", "--node", "gpu-node-02")
    s.cli("vr-tests", "validation-request", "--node", "gpu-node-01", "--test", "dcgm-diag-test",
          "--values", "values-quarantine.yaml", "--name", "check", "-o", "vr.yaml")
    s.keep("vr-tests", "vr.yaml")
    s.cli("vr-unknown-test", "validation-request", "--node", "n1", "--test", "nope",
          "--values", "values-quarantine.yaml")
    s.cli("vr-no-lifecycle", "validation-request", "--node", "n1", "--values", "values-monitor.yaml")


SUBCOMMANDS = (
    (), ("recipe",), ("recipe", "list"), ("bundle",), ("verify",), ("certification",), ("sentinel",),
    ("sentinel", "values"), ("rules",), ("rules", "test"), ("validation-request",), ("report",), ("bisect",),
    ("snapshot",), ("validate",), ("diff",), ("schema",), ("spec",), ("spec", "init"), ("spec", "show"),
    ("policy",), ("policy", "check"), ("lint",), ("sync",), ("plan",), ("fleet",), ("fleet", "entry"),
    ("mirror",), ("mirror", "list"), ("mirror", "lock"), ("mirror", "verify"), ("completion",),
)


def cli_scenario(s: Scenario) -> None:
    """--help of every command, --version, usage errors, schema of every kind, completion, spec init,
    recipe list of the embedded catalog."""
    s.copy_in("examples", "examples")
    for words in SUBCOMMANDS:
        s.cli(f"help-{'-'.join(words) or 'top'}", *words, "--help")
    s.cli("no-command")
    s.cli("unknown-command", "frobnicate")
    s.cli("bad-flag", "recipe", "--frob")
    s.cli("version", "--version")
    for kind in SCHEMA_KINDS:
        s.cli(f"schema-{kind}", "schema", kind)
    for shell in ("bash", "zsh", "fish"):
        s.cli(f"completion-{shell}", "completion", shell)
    for fmt in ("table", "json"):
        s.cli(f"recipe-list-{fmt}", "recipe", "list", "--format", fmt)
    s.cli("spec-init", "spec", "init", "--service=eks", "--accelerator=h100", "--intent=training",
          "--os=ubuntu", "--platform=kubeflow")
    s.cli("spec-init-all", "spec", "init", "--service=gke", "--accelerator=h100", "--intent=inference",
          "--os=cos", "--platform=dynamo", "--deployer", "flux", "--deployer", "helm",
          "--repo-url", "https://github.com/acme/gitops.git",
          "--name", "gke-one", "--path", "gitops/gke-one", "--nodes", "4", "-o", "spec.yaml")
    s.keep("spec-init-all", "spec.yaml")
    s.cli("spec-init-placeholder-url", "spec", "init", "--service=eks", "--accelerator=h100",
          "--repo-url", GIT_URL)
    s.cli("spec-init-extends", "spec", "init", "--service=kind", "--accelerator=h100", "--intent=inference",
          "--os=ubuntu", "--platform=dynamo", "--extends", "examples/fleet/fleet.yaml")
    s.cli("spec-init-exists", "spec", "init", "--service=gke", "--accelerator=h100", "--intent=inference",
          "--os=cos", "--platform=dynamo", "-o", "spec.yaml")
    s.cli("spec-init-unknown", "spec", "init", "--service=nowhere")
    s.cli("recipe-unknown", "recipe", "--accelerator=nope")
    (s.work / "criteria.yaml").write_text("kind: RecipeCriteria\napiVersion: aicr.run/v1\nmetadata:\n"
                                          "  name: c\nspec:\n  service: eks\n  accelerator: gb200\n"
                                          "  intent: training\n")
    s.cli("recipe-criteria", "recipe", "--criteria", "criteria.yaml", "--os=ubuntu")
    if reference(s.corpus, "aicr/recipes"):
        for fmt in ("table", "json"):
            s.cli(f"reference-list-{fmt}", "recipe", "list", "--format", fmt, "--catalog",
                  str(s.corpus.tmp / "in/reference/aicr/recipes"))
    if reference(s.corpus, "aicr/examples/recipes/eks-training.yaml"):
        s.copy_in("reference/aicr/examples/recipes/eks-training.yaml", "aicr-recipe.yaml")
        s.cli("bundle-aicr-recipe-embedded", "bundle", "-r", "aicr-recipe.yaml", "-o", "aicr-bundle-embedded")
        s.cli("bundle-aicr-recipe", "bundle", "-r", "aicr-recipe.yaml", "-o", "aicr-bundle",
              "--catalog", str(s.corpus.tmp / "in/reference/aicr/recipes"))
        s.keep("bundle-aicr-recipe", "aicr-bundle")


def scenarios(corpus: Corpus) -> list[tuple[str, Build]]:
    """Every scenario of the corpus, by name (the folder its records go to)."""
    found: list[tuple[str, Build]] = [
        ("cli", cli_scenario), ("bundle-options", bundle_options), ("fleet", fleet_scenario),
        ("drift", drift_scenario), ("reports", reports_scenario), ("sentinel", sentinel_scenario),
        ("examples", examples_scenario(example_files(corpus))),
        ("sync/all", sync_scenario(SHARED_REPO, [*SHARED_REPO[:2], "fleet/fleet.yaml", "pools/eks-h100-gb200.yaml"])),
    ]
    for rel in SPECS:
        found.append((f"sync/{rel}", sync_scenario([rel], [rel])))
    catalogs: list[tuple[str, str | None]] = [("embedded", None)]
    if reference(corpus, "aicr/recipes"):
        catalogs.append(("reference", "reference/aicr/recipes"))
    for label, catalog in catalogs:
        for name, criteria in leaves(corpus, str(corpus.tmp / "in" / catalog) if catalog else None):
            found.append((f"leaf/{label}/{name}", leaf_scenario(catalog, criteria)))
    return found


# ------------------------------------------------------------------------------------------------ manifest


def sha256(path: Path) -> str:
    if path.is_symlink():
        return hashlib.sha256(b"symlink:" + str(path.readlink()).encode()).hexdigest()
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_manifest(out: Path) -> tuple[int, int]:
    """DIR/MANIFEST of every file under DIR; returns (files, bytes)."""
    lines, size = [], 0
    for path in walk(out):
        rel = path.relative_to(out).as_posix()
        if rel == "MANIFEST":
            continue
        lines.append(f"{sha256(path)}  {rel}\n")
        size += 0 if path.is_symlink() else path.stat().st_size
    lines.sort(key=lambda line: line[66:])
    (out / "MANIFEST").write_text("".join(lines))
    return len(lines), size


def read_manifest(folder: Path) -> dict[str, str]:
    entries = {}
    for line in (folder / "MANIFEST").read_text().splitlines():
        digest, rel = line.split("  ", 1)
        entries[rel] = digest
    return entries


def compare(a: Path, b: Path, *, shown: int = 20, lines: int = 12) -> int:
    """Print the entries that differ or are missing on one side; 1 when any, else 0."""
    left, right = read_manifest(a), read_manifest(b)
    differ = sorted(rel for rel in left.keys() & right.keys() if left[rel] != right[rel])
    only_a, only_b = sorted(left.keys() - right.keys()), sorted(right.keys() - left.keys())
    for rel in only_a:
        print(f"only in {a}: {rel}")
    for rel in only_b:
        print(f"only in {b}: {rel}")
    for index, rel in enumerate(differ):
        print(f"differs: {rel}")
        if index < shown and (a / rel).is_file() and (b / rel).is_file():
            old = (a / rel).read_bytes().decode(errors="replace").splitlines()
            new = (b / rel).read_bytes().decode(errors="replace").splitlines()
            diff = list(difflib.unified_diff(old, new, f"a/{rel}", f"b/{rel}", lineterm="", n=1))
            for line in diff[:lines]:
                print(f"    {line}")
            if len(diff) > lines:
                print(f"    ... {len(diff) - lines} more diff lines")
    total = len(differ) + len(only_a) + len(only_b)
    print(f"{len(left)} vs {len(right)} entries: {len(differ)} differ, {len(only_a)} only in A, "
          f"{len(only_b)} only in B")
    return 1 if total else 0


# ------------------------------------------------------------------------------------------------ main


def produce(out: Path, jobs: int, shared: Path | None, only: Sequence[str] = (), *, pin_code: bool = False) -> int:
    started = time.monotonic()
    if out.exists() and any(out.iterdir()):
        raise SystemExit(f"corpus: {out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="aicr-corpus-") as scratch:
        tmp = Path(scratch)
        corpus = Corpus(tmp=tmp, out=out.resolve(), env=environment(tmp, pin_code=pin_code),
                        shared=shared if shared and shared.is_dir() else None)
        prepare_inputs(corpus)
        probe = subprocess.run([sys.executable, "-c", "import aicr_gen; print(aicr_gen.__file__)"],
                               env=corpus.env, cwd=tmp, capture_output=True, text=True, check=True)
        print(f"corpus: aicr_gen from {probe.stdout.strip()}", flush=True)
        plan = [(name, build) for name, build in scenarios(corpus)
                if not only or any(fnmatch.fnmatchcase(name, pattern) for pattern in only)]
        failures: list[str] = []

        def run(item: tuple[str, Build]) -> None:
            name, build = item
            try:
                build(Scenario(corpus, name))
            except Exception as error:  # a broken scenario is reported, the others still run
                failures.append(f"{name}: {type(error).__name__}: {error}")

        with ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(run, plan))
    files, size = write_manifest(out)
    for note in corpus.notes:
        print(f"corpus: note: {note}")
    for failure in sorted(failures):
        print(f"corpus: scenario failed: {failure}", file=sys.stderr)
    print(f"corpus: {len(plan)} scenarios, {corpus.commands} commands, {files} files, {size} bytes, "
          f"{time.monotonic() - started:.1f}s -> {out}/MANIFEST")
    return 1 if failures else 0


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, help="folder to write the corpus to (must be empty or absent)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1, help="scenarios run in parallel")
    parser.add_argument("--shared", type=Path, default=Path("/work/shared"),
                        help="the shared folder holding reference/ (skipped when absent)")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB",
                        help="only the scenarios whose name matches (repeatable), e.g. 'leaf/embedded/h100-*'")
    parser.add_argument("--pin-code-digest", action="store_true",
                        help="pin aicr-gen's code digest in the inputs records (to compare two commits of a refactor)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("DIR_A", "DIR_B"),
                        help="compare two corpora's manifests instead")
    args = parser.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    if not args.out:
        parser.error("--out DIR or --compare DIR_A DIR_B")
    return produce(args.out, max(1, args.jobs), args.shared, args.only, pin_code=args.pin_code_digest)


if __name__ == "__main__":
    sys.exit(main())
