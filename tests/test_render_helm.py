"""The helm deployer as users run it: ``aicr-gen recipe``, ``aicr-gen bundle --deployer helm``, then the
scripts. Three recipes: AICR's CUJ2 (eks/h100/ubuntu/inference/dynamo, from AICR's own catalog), the
embedded catalog's eks/h100/ubuntu/training/kubeflow, and a small catalog whose ``web`` component has
``-pre`` and ``-post`` units next to a manifest-only component, an OCI chart and an HTTPS chart.

The consumers are real: shellcheck; bash running deploy.sh and every install.sh against a fake ``helm``
(and a fake ``sleep``, so retries cost nothing) that records its argv; helm 3 and helm 4 linting and
templating every local chart. What each script must pass to helm is computed from recipe.yaml here, not
taken from the renderer.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Callable
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

rendered, bundle = bundle_fixtures("helm")
"""Each recipe's helm bundle, rendered once per module (rendering is checked for determinism below)."""


# ------------------------------------------------------------------ running the scripts

_RECORDER = """\
#!{python}
import json, os, sys
name = os.path.basename(sys.argv[0])
with open(os.environ["FAKE_LOG"], "a", encoding="utf-8") as log:
    log.write(json.dumps([name, *sys.argv[1:]]) + "\\n")
sys.exit(1 if name == "helm" and sys.argv[3:4] == [os.environ.get("FAKE_HELM_FAIL")] else 0)
"""


@dataclass(frozen=True)
class Run:
    """A script's exit code and output, and every call of the fake tools as [tool, *argv]."""

    code: int
    out: str
    err: str
    calls: list[list[str]]

    @property
    def helm(self) -> list[list[str]]:
        return [call[1:] for call in self.calls if call[0] == "helm"]


@pytest.fixture
def run_script(tmp_path: Path) -> Callable[..., Run]:
    """Run a bundle script in tmp_path with a fake ``helm`` and ``sleep`` first on PATH; both record their
    argv, and helm fails for the release named by ``fail``."""
    fake = tmp_path / "fake-bin"
    fake.mkdir()
    for tool in ("helm", "sleep"):
        (fake / tool).write_text(_RECORDER.format(python=sys.executable), encoding="utf-8")
        (fake / tool).chmod(0o755)
    log = tmp_path / "calls.jsonl"

    def run(script: Path, *args: str, fail: str = "") -> Run:
        log.write_text("", encoding="utf-8")
        env = {key: value for key, value in os.environ.items() if key != "HELM_WAIT_ARGS"}
        env.update(PATH=f"{fake}{os.pathsep}{env.get('PATH', '')}", FAKE_LOG=str(log), FAKE_HELM_FAIL=fail)
        proc = subprocess.run([str(script), *args], capture_output=True, text=True, env=env, cwd=tmp_path, check=False,
                              timeout=60)
        calls = [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()]
        return Run(proc.returncode, proc.stdout, proc.stderr, calls)

    return run


WAIT = ["--wait", "--timeout", "10m"]


def expected_helm(root: Path, unit: Unit, wait: list[str] = WAIT) -> list[str]:
    """The argv install.sh must give helm for ``unit``."""
    here = root / unit.folder
    ref = unit.ref
    if unit.local:
        chart = [str(here)]
    elif ref["source"].startswith("oci://"):
        chart = [f"{ref['source'].rstrip('/')}/{unit.chart}", "--version", ref.get("version", "")]
    else:
        chart = [unit.chart, "--repo", ref["source"], "--version", ref.get("version", "")]
    return ["upgrade", "--install", unit.name, *chart, "--namespace", unit.namespace, "--create-namespace",
            "--values", f"{here}/values.yaml", *wait]


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


# ------------------------------------------------------------------ install.sh and deploy.sh against helm


def test_every_install_sh_runs_helm_with_the_units_arguments(bundle: Rendered, run_script: Callable[..., Run]) -> None:
    for unit in bundle.units():
        script = bundle.root / unit.folder / "install.sh"
        assert os.access(script, os.X_OK) and script.stat().st_mode & stat.S_IXUSR, f"{script} is not executable"
        run = run_script(script)
        assert run.code == 0, run.err
        assert run.helm == [expected_helm(bundle.root, unit)], unit.folder


def test_deploy_sh_installs_every_unit_in_order(bundle: Rendered, run_script: Callable[..., Run]) -> None:
    run = run_script(bundle.root / "deploy.sh", "--no-wait")
    assert run.code == 0, run.err
    assert run.helm == [expected_helm(bundle.root, unit, wait=[]) for unit in bundle.units()]
    assert f"all {len(bundle.units())} units installed" in run.out
    with_wait = run_script(bundle.root / "deploy.sh")
    assert with_wait.helm == [expected_helm(bundle.root, unit) for unit in bundle.units()]


def test_deploy_sh_retries_a_failing_unit_then_exits_1(bundle: Rendered, run_script: Callable[..., Run]) -> None:
    first, failing, *_ = bundle.units()
    run = run_script(bundle.root / "deploy.sh", "--retries", "3", fail=failing.name)
    assert run.code == 1
    assert run.helm == [expected_helm(bundle.root, first), *[expected_helm(bundle.root, failing)] * 3]
    assert [call for call in run.calls if call[0] == "sleep"] == [["sleep", "15"], ["sleep", "30"]]
    assert f"{failing.folder} failed after 3 attempt(s)" in run.err
    once = run_script(bundle.root / "deploy.sh", "--retries", "1", fail=first.name)
    assert (once.code, once.helm, [c for c in once.calls if c[0] == "sleep"]) == (
        1, [expected_helm(bundle.root, first)], [])


@pytest.mark.parametrize(("args", "code", "says"), [
    (["--retries", "x"], 2, "--retries takes a number"), (["--retries"], 1, "--retries needs a number"),
    (["--nope"], 2, "unknown option --nope"), (["--help"], 0, "usage: deploy.sh"),
])
def test_deploy_sh_refuses_bad_options_before_installing(cli: Cli, rendered: Renderings,
                                                          run_script: Callable[..., Run], args: list[str],
                                                          code: int, *, says: str) -> None:
    run = run_script(rendered(cli, "small").root / "deploy.sh", *args)
    assert (run.code, run.helm) == (code, [])
    assert says in (run.out if code == 0 else run.err)


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
        assert run.helm == [expected_helm(out, unit)], unit.folder
    run = run_script(out / "deploy.sh")
    assert run.code == 0, run.err
    assert run.helm == [expected_helm(out, unit) for unit in bundle.units()]
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
