"""``aicr-gen diff --fleet``: many clusters' snapshots against their specs' recipes, as one cluster x component
matrix (table, Markdown for the job summary, JSON), with exit codes a scheduled job can act on."""

from __future__ import annotations

import copy
import itertools
import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from aicr_gen.drift import fleet
from aicr_gen.gitops.trees import fleet_sources
from aicr_gen.gitops.trees.recipes import resolve_spec
from aicr_gen.report import fleet_drift as fleet_format
from aicr_gen.spec.load import load_spec
from tests.cluster.envtest import ControlPlane, apply_json
from tests.conftest import ROOT, tool
from tests.kubeapi import without_proxies

ACTION = ROOT / "action.yml"
EXAMPLE = ROOT / "examples" / "github" / "fleet-drift.yml"
CRITERIA = {"service": "kind", "accelerator": "h100", "intent": "inference", "os": "ubuntu", "platform": "dynamo"}


class TextSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "txt"


class MarkdownSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    file_extension = "md"


# ------------------------------------------------------------------------------------------- inputs


def _spec(folder: Path, name: str, *, versions: dict[str, str] | None = None,
          snapshot: dict[str, Any] | None = None) -> Path:
    spec: dict[str, Any] = {"criteria": CRITERIA, "deployers": ["helm"],
                            "repo": {"url": "https://github.com/example/gitops.git", "path": f"clusters/{name}"}}
    if versions:
        spec["versions"] = versions
    if snapshot:
        spec["snapshot"] = snapshot
    file = folder / f"{name}.yaml"
    file.write_text(yaml.safe_dump({"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "ClusterSpec",
                                    "metadata": {"name": name}, "spec": spec}, sort_keys=False), encoding="utf-8")
    return file


def _desired(spec_file: Path) -> dict[str, dict[str, str]]:
    recipe = resolve_spec(load_spec(spec_file), spec_file.parent)
    return {ref["name"]: {"version": ref["version"], "namespace": ref["namespace"], "chart": ref.get("chart")
                          or ref["name"]} for ref in recipe["componentRefs"]}


def _snapshot_text(releases: dict[str, dict[str, str]]) -> str:
    data = {f"{name}.{field}": value for name, release in sorted(releases.items())
            for field, value in release.items()}
    return json.dumps({"kind": "Snapshot", "apiVersion": "aicr.run/v1alpha2", "measurements": [
        {"type": "K8s", "subtypes": [{"subtype": "server", "data": {"version": "v1.33.0"}},
                                     {"subtype": "helm", "data": data}]}]})


def _live(spec_file: Path, folder: Path, **changes: dict[str, str] | None) -> Path:
    """A snapshot of the cluster as its spec wants it, but for ``changes`` (None: the release is absent)."""
    releases = _desired(spec_file)
    for key, change in changes.items():
        name = key.replace("_", "-")
        if change is None:
            del releases[name]
        else:
            releases[name] = {**releases.get(name, {}), **change}
    file = folder / f"{spec_file.stem}.json"
    file.write_text(_snapshot_text(releases), encoding="utf-8")
    return file


@pytest.fixture
def fleet_files(tmp_path: Path) -> tuple[list[str], list[str]]:
    """Three clusters: one as desired, one drifted (older gpu-operator, no cert-manager, an unknown argo-cd), one
    pinned by spec.versions and running the pin; SPEC arguments and --snapshot arguments."""
    specs, snaps = tmp_path / "clusters", tmp_path / "snapshots"
    specs.mkdir()
    snaps.mkdir()
    same = _spec(specs, "alpha")
    drifted = _spec(specs, "bravo")
    pinned = _spec(specs, "charlie", versions={"gpu-operator": "v26.3.2"})
    files = [_live(same, snaps), _live(drifted, snaps, gpu_operator={"version": "v26.3.1"}, cert_manager=None,
                                       argo_cd={"version": "7.1.0", "namespace": "argocd", "chart": "argo-cd"}),
             _live(pinned, snaps)]
    return ([str(same), str(drifted), str(pinned)],
            [f"--snapshot={file.stem}={file}" for file in files])


def _cells(document: dict[str, Any], cluster: str) -> dict[str, dict[str, Any]]:
    row = next(row for row in document["clusters"] if row["name"] == cluster)
    return {cell["component"]: cell for cell in row["components"]}


# ------------------------------------------------------------------------------------------- the matrix


def test_matrix_from_files(cli: Any, fleet_files: tuple[list[str], list[str]]) -> None:
    specs, snapshots = fleet_files
    result = cli("diff", *snapshots, "--format", "json", "--fleet", *specs)
    assert result.code == 0, result.err
    document = json.loads(result.out)
    assert document["summary"] == {"clusters": 3, "ok": 2, "drifted": 1, "unreachable": 0}
    assert [row["name"] for row in document["clusters"]] == ["alpha", "bravo", "charlie"]
    assert [row["status"] for row in document["clusters"]] == ["ok", "drifted", "ok"]
    assert document["others"] == ["argo-cd"] and "gpu-operator" in document["components"]
    bravo = _cells(document, "bravo")
    assert bravo["gpu-operator"]["status"] == "drifted"
    assert (bravo["gpu-operator"]["desired"]["version"], bravo["gpu-operator"]["live"]["version"]) == \
        ("v26.3.3", "v26.3.1")
    assert bravo["cert-manager"] == {"component": "cert-manager", "status": "missing",
                                     "desired": bravo["cert-manager"]["desired"], "live": None}
    assert bravo["argo-cd"]["status"] == "unknown" and bravo["argo-cd"]["desired"] is None
    assert {cell["status"] for name, cell in bravo.items() if name not in ("gpu-operator", "cert-manager",
                                                                           "argo-cd")} == {"ok"}
    charlie = _cells(document, "charlie")
    assert charlie["gpu-operator"]["desired"]["version"] == "v26.3.2"  # the spec's pin, not the catalog's
    assert charlie["gpu-operator"]["status"] == "ok"

    drift = cli("diff", *snapshots, "--fail-on-drift", "--fleet", *specs)
    assert drift.code == 1, drift.err
    assert drift.out.startswith("1 of 3 clusters drifted.\n")
    assert "v26.3.3 -> v26.3.1" in drift.out
    quiet = cli("diff", snapshots[0], snapshots[2], "--fail-on-drift", "--fleet", specs[0], specs[2])
    assert (quiet.code, quiet.out.splitlines()[0]) == (0, "0 of 2 clusters drifted.")


def test_json_shape_is_stable(cli: Any, fleet_files: tuple[list[str], list[str]]) -> None:
    specs, snapshots = fleet_files
    document = json.loads(cli("diff", *snapshots, "--format", "json", "--fleet", *specs).out)
    assert list(document) == ["kind", "summary", "components", "others", "clusters"]
    assert document["kind"] == "FleetDrift"
    assert document["components"] == sorted(document["components"])
    for row in document["clusters"]:
        assert list(row) == ["name", "spec", "source", "status", "error", "components"]
        assert row["status"] in ("ok", "drifted", "unreachable") and row["error"] is None
        names = [cell["component"] for cell in row["components"]]
        assert names == sorted(names)
        for cell in row["components"]:
            assert list(cell) == ["component", "status", "desired", "live"]
            assert cell["status"] in ("ok", "drifted", "missing", "unknown", "unreachable")
            for side in ("desired", "live"):
                assert cell[side] is None or list(cell[side]) == ["version", "namespace", "chart"]
    yaml_out = cli("diff", *snapshots, "--format", "yaml", "--fleet", *specs).out
    assert yaml.safe_load(yaml_out) == document


def _document() -> dict[str, Any]:
    """A hand-made fleet: every kind of cell, a release in two namespaces, pipes to escape."""
    refs: list[dict[str, Any]] = [
            {"name": "gpu-operator", "version": "v26.3.3", "namespace": "gpu-operator", "type": "Helm"},
            {"name": "cert-manager", "version": "v1.21.1", "namespace": "cert-manager", "type": "Helm"},
            {"name": "nfd", "version": "0.19.0", "namespace": "node-feature-discovery"},
            {"name": "kustomized", "type": "Kustomize"},
            {"name": "off", "version": "1.0", "overrides": {"enabled": False}}]
    live = {"gpu-operator": {"version": "26.3.3", "namespace": "gpu-operator", "chart": "gpu-operator"},
            "cert-manager": {"version": "v1.21.1", "namespace": "cert-manager"},
            "node-feature-discovery/nfd": {"version": "0.19.0", "namespace": "node-feature-discovery"},
            "other/nfd": {"version": "0.18.0", "namespace": "other"}}
    drifted = {**live, "gpu-operator": {"version": "v26.3.1", "namespace": "gpu-operator"},
               "cert-manager": {"version": "v1.21.1", "namespace": "elsewhere"}, "a|b": {"version": "1"}}
    return fleet.matrix([
        fleet.Cluster("prod-2", "clusters/prod-2.yaml", "snapshots/prod-2.json", refs[:3], drifted),
        fleet.Cluster("prod-1", "clusters/prod-1.yaml", "cm://aicr/snapshot", refs, live),
        fleet.Cluster("edge-1", "clusters/edge-1.yaml", "cm://aicr/snapshot", refs[:1], None,
                      "cm://aicr/snapshot: Kubernetes API at https://edge-1:6443 unreachable: Connection refused"),
        fleet.Cluster("lab-1", "clusters/lab-1.yaml", "snapshots/lab-1.json", refs[1:2], {})])


def test_cells() -> None:
    document = _document()
    assert document["summary"] == {"clusters": 4, "ok": 0, "drifted": 3, "unreachable": 1}
    assert document["components"] == ["cert-manager", "gpu-operator", "nfd"]  # enabled Helm components only
    assert document["others"] == ["a|b", "other/nfd"]
    prod_1 = _cells(document, "prod-1")
    assert prod_1["gpu-operator"]["status"] == "ok"  # 26.3.3 is v26.3.3
    # a name in several namespaces: the release in the recipe's namespace answers, the other is unknown
    assert (prod_1["nfd"]["status"], prod_1["nfd"]["live"]["namespace"]) == ("ok", "node-feature-discovery")
    assert prod_1["other/nfd"]["status"] == "unknown" and "node-feature-discovery/nfd" not in prod_1
    assert "kustomized" not in prod_1 and "off" not in prod_1  # neither a Helm component nor enabled
    assert _cells(document, "prod-2")["cert-manager"]["status"] == "drifted"  # another namespace
    assert _cells(document, "lab-1")["cert-manager"]["status"] == "missing"
    assert {cell["status"] for cell in _cells(document, "edge-1").values()} == {"unreachable"}


def test_table_and_markdown_bytes(snapshot: Any) -> None:
    document = _document()
    assert fleet_format.render(document, "table") == snapshot(extension_class=TextSnapshot)
    assert fleet_format.render(document, "markdown") == snapshot(extension_class=MarkdownSnapshot)


def test_markdown_fits_a_job_summary() -> None:
    refs = [{"name": f"component-{index:02}", "version": "1.0.0", "namespace": "ns"} for index in range(20)]
    releases = {ref["name"]: {"version": "1.0.0", "namespace": "ns"} for ref in refs}
    clusters = [fleet.Cluster(f"cluster-{index:04}", "s.yaml", "f.json", refs,
                              {**releases, "component-07": {"version": "0.9.0", "namespace": "ns"}}
                              if index % 10 == 0 else releases) for index in range(1000)]
    document = fleet.matrix(clusters)
    full = fleet_format.markdown(document)
    assert full.count("\n| cluster-") == 1000
    small = fleet_format.markdown(document, limit=20_000)
    assert len(small) <= 20_000
    assert "900 clusters without drift are not listed" in small
    assert "| cluster-0000 | drifted |" in small and "| cluster-0001 |" not in small
    tiny = fleet_format.markdown(document, limit=5_000)
    assert len(tiny) <= 5_000 and "more clusters with drift are not listed" in tiny


def test_argument_order_does_not_change_the_output(cli: Any, fleet_files: tuple[list[str], list[str]]) -> None:
    specs, snapshots = fleet_files
    for fmt in ("table", "markdown", "json"):
        outputs = {cli("diff", *snaps, "--format", fmt, "--fleet", *order).out
                   for order, snaps in zip(itertools.permutations(specs), itertools.cycle(
                       [snapshots, snapshots[::-1]]), strict=False)}
        assert len(outputs) == 1, fmt


# ------------------------------------------------------------------------------------------- sources and exit codes


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _dead_kubeconfig(path: Path, *contexts: str) -> Path:
    server = f"https://127.0.0.1:{_closed_port()}"
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": [{"name": "dead", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
        "contexts": [{"name": name, "context": {"cluster": "dead", "user": "u"}} for name in contexts],
        "users": [{"name": "u", "user": {"token": "t"}}]}), encoding="utf-8")
    return path


def test_an_unreachable_cluster_is_a_row_and_exit_3(cli: Any, tmp_path: Path,
                                                    fleet_files: tuple[list[str], list[str]]) -> None:
    specs, snapshots = fleet_files
    remote = _spec(tmp_path / "clusters", "delta", snapshot={"configmap": "cm://aicr/snapshot"})
    kubeconfig = _dead_kubeconfig(tmp_path / "kubeconfig", "delta")  # the context named like the cluster
    out = tmp_path / "drift.md"
    result = cli("diff", *snapshots, "--kubeconfig", str(kubeconfig), "--format", "markdown", "-o", str(out),
                 "--fail-on-drift", "--fleet", *specs, str(remote))
    assert result.code == 3, result.err  # drift too, but the verdict is incomplete: 3 wins over 1
    assert result.err.endswith("aicr-gen: error: 1 of 4 clusters unreachable (delta); their rows say why\n")
    text = out.read_text(encoding="utf-8")
    assert "\n1 of 4 clusters drifted, 1 unreachable.\n" in text
    assert "| delta | unreachable | **unreachable** |" in text
    assert re.search(r"^- delta \(cm://aicr/snapshot\): cannot reach the Kubernetes API at https://127\.0\.0\.1:\d+: "
                     r"Connection refused",
                     text, re.MULTILINE), text


def test_context_comes_from_the_option_then_the_spec_then_the_cluster_name(tmp_path: Path) -> None:
    folder = tmp_path / "clusters"
    folder.mkdir()
    files = [str(_spec(folder, "one", snapshot={"configmap": "cm://aicr/snap"})),
             str(_spec(folder, "two", snapshot={"configmap": "cm://aicr/snap", "context": "two-admin"})),
             str(_spec(folder, "three", snapshot={"configmap": "cm://aicr/snap", "context": "three-admin"})),
             str(_spec(folder, "four"))]
    sources = fleet_sources.survey(files, {"four": "snap.json"}, {"three": "ops"})
    assert [(source.cluster, source.source, source.context) for source in sources] == [
        ("one", "cm://aicr/snap", "one"), ("two", "cm://aicr/snap", "two-admin"),
        ("three", "cm://aicr/snap", "ops"), ("four", "snap.json", None)]


@pytest.mark.parametrize(("extra", "message"), [
    (["--snapshot", "zulu=x.json"], "no spec given names cluster 'zulu'"),
    (["--snapshot", "alpha"], "expected CLUSTER=VALUE"),
    (["--context", "alpha"], "expected CLUSTER=VALUE"),
    (["--baseline", "x.json"], "drop --baseline"),
])
def test_input_errors_write_nothing(cli: Any, tmp_path: Path, fleet_files: tuple[list[str], list[str]],
                                    extra: list[str], message: str) -> None:
    specs, snapshots = fleet_files
    out = tmp_path / "out.txt"
    result = cli("diff", *snapshots, *extra, "-o", str(out), "--fleet", *specs)
    assert result.code == 2 and message in result.err, result.err
    assert not out.exists()


def test_every_problem_at_once(cli: Any, tmp_path: Path, fleet_files: tuple[list[str], list[str]]) -> None:
    specs, snapshots = fleet_files
    bare = _spec(tmp_path, "echo")
    twin = tmp_path / "twin.yaml"
    twin.write_text(Path(specs[0]).read_text(encoding="utf-8"), encoding="utf-8")
    broken = tmp_path / "snapshots" / "charlie.json"
    broken.write_text("{\"measurements\": 3}", encoding="utf-8")
    result = cli("diff", *snapshots, "--fleet", *specs, str(bare), str(twin))
    assert result.code == 2
    assert "2 spec(s) or source(s) failed; nothing was written" in result.err
    assert "cluster 'echo' has no spec.snapshot.configmap; give --snapshot echo=FILE|cm://NS/NAME" in result.err
    assert "cluster 'alpha' is also" in result.err
    result = cli("diff", *snapshots, "--fleet", *specs)
    assert result.code == 2 and "charlie.json:1: measurements" in result.err, result.err


def test_two_snapshot_diff_still_needs_both_sides(cli: Any) -> None:
    result = cli("diff", "--baseline", "x.json")
    assert result.code == 2 and "--baseline SRC and --target SRC" in result.err


def test_a_fleet_of_specs_with_fleet_defaults(cli: Any, tmp_path: Path) -> None:
    """The snapshot ConfigMap a Fleet sets for every cluster; --snapshot replaces it for one."""
    root = ROOT / "examples" / "fleet"
    specs = sorted(str(path) for path in (root / "clusters").glob("*.yaml"))
    sources = fleet_sources.survey(specs, {"kind-h100-dev": str(tmp_path / "kind.json")}, {})
    assert [(source.cluster, source.source, source.context) for source in sources] == [
        ("eks-h100-inference", "cm://aicr/snapshot", "eks-h100-inference"),
        ("kind-h100-dev", str(tmp_path / "kind.json"), None)]


# ------------------------------------------------------------------------------------------- scale


def test_a_thousand_clusters_of_twenty_components_from_files(tmp_path: Path) -> None:
    refs = [{"name": f"component-{index:02}", "version": f"1.{index}.0", "namespace": f"ns-{index}"}
            for index in range(20)]
    releases = {ref["name"]: {"version": ref["version"], "namespace": ref["namespace"], "chart": ref["name"]}
                for ref in refs}
    base = json.loads(_snapshot_text(releases))
    # a realistic snapshot: a node topology of 64 nodes beside the Helm releases
    base["measurements"].append({"type": "NodeTopology", "subtypes": [{"subtype": "label", "data": {
        f"label-{index}": f"value|{','.join(f'node-{node}' for node in range(64))}" for index in range(50)}}]})
    sources = []
    for index in range(1000):
        snapshot = copy.deepcopy(base) if index % 50 == 0 else base
        if index % 50 == 0:
            snapshot["measurements"][0]["subtypes"][1]["data"]["component-03.version"] = "0.9.0"
        file = tmp_path / f"cluster-{index:04}.json"
        file.write_text(json.dumps(snapshot), encoding="utf-8")
        sources.append(fleet_sources.Source(f"cluster-{index:04}", f"{file.stem}.yaml", refs, str(file), None))
    start = time.perf_counter()
    document = fleet.matrix(fleet_sources.read(sources, None))
    texts = [fleet_format.render(document, fmt) for fmt in ("table", "markdown", "json")]
    elapsed = time.perf_counter() - start
    assert document["summary"] == {"clusters": 1000, "ok": 980, "drifted": 20, "unreachable": 0}
    assert all(texts)
    assert elapsed < 3.0, f"{elapsed:.2f} s"


# ------------------------------------------------------------------------------------------- the real API server


@pytest.fixture
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)


@pytest.mark.usefixtures("_no_proxies")
def test_configmaps_through_the_real_api_server(control_plane: ControlPlane, cli: Any, tmp_path: Path) -> None:
    """Three clusters' snapshots in ConfigMaps (one API server, three contexts): admin's as desired, cert's drifted,
    nobody's refused by RBAC (unreachable); the matrix says so and the exit code is 3."""
    folder = tmp_path / "clusters"
    folder.mkdir()
    files = {name: _spec(folder, name, snapshot={"configmap": f"cm://fleet-{name}/snapshot", **extra})
             for name, extra in (("admin", {}), ("certified", {"context": "cert"}), ("nobody", {}))}
    desired = _desired(files["admin"])
    texts = {"admin": _snapshot_text(desired),
             "certified": _snapshot_text({**desired, "gpu-operator": {**desired["gpu-operator"],
                                                                      "version": "v25.10.1"}})}
    for name, text in texts.items():
        apply_json(control_plane, [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": f"fleet-{name}"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "snapshot", "namespace": f"fleet-{name}"},
             "data": {"snapshot.json": text}}])
    result = cli("diff", "--kubeconfig", str(control_plane.kubeconfig), "--format", "json",
                 "--fleet", *map(str, files.values()))
    assert result.code == 3, result.err
    document = json.loads(result.out)
    assert [(row["name"], row["status"]) for row in document["clusters"]] == [
        ("admin", "ok"), ("certified", "drifted"), ("nobody", "unreachable")]
    assert _cells(document, "certified")["gpu-operator"]["live"]["version"] == "v25.10.1"
    nobody = next(row for row in document["clusters"] if row["name"] == "nobody")
    assert "forbidden" in nobody["error"].lower() or "nobody" in nobody["error"]
    missing = cli("diff", "--kubeconfig", str(control_plane.kubeconfig), "--context", "admin=absent",
                  "--fleet", str(files["admin"]))
    assert missing.code == 2 and "context 'absent' is not defined" in missing.err


@pytest.mark.usefixtures("_no_proxies")
def test_one_clusters_failing_credential_plugin_is_not_anothers(control_plane: ControlPlane, cli: Any,
                                                                 tmp_path: Path) -> None:
    """Contexts load in parallel threads: a plugin failing while another cluster's context loads fails only its
    own cluster."""
    from tests.cluster.envtest import ADMIN_TOKEN
    from tests.kubeapi import derive

    plugins = tmp_path / "bin"
    plugins.mkdir()
    for name, body in (("good", 'print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": '
                                f'"ExecCredential", "status": {{"token": "{ADMIN_TOKEN}"}}}}))'),
                       ("bad", 'sys.stderr.write("the SSO session expired\\n")\nsys.exit(1)')):
        script = plugins / name
        script.write_text(f"#!{sys.executable}\nimport json, sys, time\ntime.sleep(0.5)\n{body}\n", encoding="utf-8")
        script.chmod(0o755)
    users = {user: {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugins / plugin)}}
             for user, plugin in (("admin", "good"), ("nobody", "bad"))}
    kubeconfig = derive(control_plane, tmp_path / "kubeconfig", users=users)
    folder = tmp_path / "clusters"
    folder.mkdir()
    files = [_spec(folder, name, snapshot={"configmap": "cm://fleet-plugins/snapshot"}) for name in ("admin", "nobody")]
    apply_json(control_plane, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "fleet-plugins"}},
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "snapshot", "namespace": "fleet-plugins"},
         "data": {"snapshot.json": _snapshot_text(_desired(files[0]))}}])
    result = cli("diff", "--kubeconfig", kubeconfig, "--format", "json", "--fleet", *map(str, files))
    assert result.code == 3, result.err
    rows = {row["name"]: row for row in json.loads(result.out)["clusters"]}
    assert rows["admin"]["status"] == "ok", rows["admin"]["error"]
    assert rows["nobody"]["status"] == "unreachable"
    assert "the SSO session expired" in rows["nobody"]["error"]


# ------------------------------------------------------------------------------------------- the GitHub Action


def _step(name: str) -> dict[str, Any]:
    steps = yaml.safe_load(ACTION.read_text(encoding="utf-8"))["runs"]["steps"]
    return dict(next(step for step in steps if step.get("name") == name))


def _run_step(env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    path = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    return subprocess.run(["bash", "-c", _step("Fleet drift")["run"]], cwd=cwd, capture_output=True, text=True,
                          check=False, env={**os.environ, "PATH": path, **env})


def test_action_step_appends_the_matrix_to_the_job_summary(tmp_path: Path,
                                                           fleet_files: tuple[list[str], list[str]]) -> None:
    step = _step("Fleet drift")
    assert step["if"] == "inputs.fleet-drift == 'true'"
    specs, snapshots = fleet_files
    pairs = " ".join(argument.removeprefix("--snapshot=") for argument in snapshots)
    summary = tmp_path / "summary.md"
    summary.write_text("earlier steps\n", encoding="utf-8")
    env = {"SPEC_FILES": "\n".join(specs), "SNAPSHOTS": pairs, "KUBECONFIG_PATH": "", "FAIL_ON_DRIFT": "true",
           "RUNNER_TEMP": str(tmp_path), "GITHUB_STEP_SUMMARY": str(summary)}
    failed = _run_step(env, tmp_path)
    assert failed.returncode == 1, failed.stderr
    assert "::error::clusters drifted from their recipes" in failed.stdout
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier steps\n### aicr-gen diff --fleet\n\n1 of 3 clusters drifted.\n")
    warned = _run_step({**env, "FAIL_ON_DRIFT": "false"}, tmp_path)
    assert warned.returncode == 0 and "::warning::" in warned.stdout
    bad = _run_step({**env, "SNAPSHOTS": "zulu=x.json"}, tmp_path)
    assert bad.returncode == 2


def test_example_workflow_runs_the_action_on_a_schedule() -> None:
    workflow = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    assert workflow[True]["schedule"] and "workflow_dispatch" in workflow[True]  # `on:` is YAML 1.1's true
    assert workflow["permissions"] == {"contents": "read"}
    steps = workflow["jobs"]["drift"]["steps"]
    action = next(step for step in steps if "aicr-gen@" in step.get("uses", ""))
    assert action["with"]["fleet-drift"] == "true" and action["with"]["sync-check"] == "false"
    proc = subprocess.run([sys.executable, "-m", "check_jsonschema", "--builtin-schema", "vendor.github-workflows",
                           str(EXAMPLE)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_step_scripts_pass_shellcheck(tmp_path: Path) -> None:
    workflow = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))
    scripts = [_step("Fleet drift")["run"], *(step["run"] for step in workflow["jobs"]["drift"]["steps"]
                                               if "run" in step)]
    for index, script in enumerate(scripts):
        assert "${{" not in script
        file = tmp_path / f"step{index}.sh"
        file.write_text(f"#!/usr/bin/env bash\n{script}", encoding="utf-8")
        proc = subprocess.run([tool("shellcheck"), "--shell=bash", str(file)], capture_output=True, text=True,
                              check=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
