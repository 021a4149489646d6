"""cm:// snapshots on the real API server: reading ``data`` keys and gzip ``binaryData``, writing with
``aicr-gen snapshot -o cm://`` (server-side apply, field manager ``aicr-gen``), the server's 1 MiB object limit,
RBAC refusals, and a missing namespace told apart from a missing ConfigMap."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path
from typing import Any

import pytest

from aicr_gen import __version__
from aicr_gen.drift.load import load_document, load_snapshot
from aicr_gen.edges.kube.client import connect
from aicr_gen.errors import UnreachableError
from tests.cluster.envtest import ControlPlane, apply_json
from tests.drift.test_snapshot import assert_cuj1, mock_text
from tests.kubeapi import subtype_data, without_proxies

ROOT = Path(__file__).resolve().parents[2]
LIVE = ROOT / "snapshots" / "example-live.yaml"


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)


def _namespace(plane: ControlPlane, name: str) -> None:
    apply_json(plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}},
                       {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default",
                                                                                  "namespace": name}}])


def _configmap(plane: ControlPlane, namespace: str, name: str) -> dict[str, Any]:
    done = plane.kubectl("get", "configmap", name, f"--namespace={namespace}", "--output=json",
                         "--show-managed-fields")
    return dict(json.loads(done.stdout))


def test_reads_data_keys_and_gzip_binary_data(control_plane: ControlPlane, tmp_path: Path) -> None:
    _namespace(control_plane, "reads")
    (tmp_path / "snapshot.yaml").write_text(mock_text(), encoding="utf-8")
    (tmp_path / "snapshot.json").write_text(json.dumps(load_snapshot(str(LIVE))), encoding="utf-8")
    (tmp_path / "snapshot.yaml.gz").write_bytes(gzip.compress(LIVE.read_bytes()))
    for name, key in (("cuj1", "snapshot.yaml"), ("live-json", "snapshot.json"), ("live-gz", "snapshot.yaml.gz")):
        control_plane.kubectl("create", "configmap", name, "--namespace=reads", f"--from-file={tmp_path / key}")
    assert "binaryData" in _configmap(control_plane, "reads", "live-gz")  # kubectl stores non-UTF-8 files there
    kubeconfig = str(control_plane.kubeconfig)
    assert_cuj1(load_snapshot("cm://reads/cuj1", kubeconfig=kubeconfig))
    live = load_snapshot(str(LIVE))
    assert load_snapshot("cm://reads/live-json", kubeconfig=kubeconfig, context="cert") == live
    assert load_document("cm://reads/live-gz", kubeconfig=kubeconfig) == ("Snapshot", live)
    control_plane.kubectl("create", "configmap", "kube-root-ca.crt", "--namespace=reads", "--from-literal=ca.crt=x")
    with pytest.raises(UnreachableError, match=r"has no snapshot.yaml or snapshot.json key \(keys: ca.crt\)"):
        load_snapshot("cm://reads/kube-root-ca.crt", kubeconfig=kubeconfig)


def test_missing_namespace_and_missing_configmap_are_told_apart(control_plane: ControlPlane, cli: Any) -> None:
    """On a GET the server says `configmaps "snap" not found` either way; aicr-gen says which is missing."""
    _namespace(control_plane, "present")
    kubeconfig, server = str(control_plane.kubeconfig), control_plane.server
    missing_cm = (f"aicr-gen: error: cm://present/none: ConfigMap present/none not found on {server}; write it with "
                  "aicr-gen snapshot -o cm://present/none or fix the name\n")
    missing_ns = (f"aicr-gen: error: cm://absent/snap: namespace 'absent' does not exist on {server}; create it "
                  "(kubectl create namespace absent) or fix the namespace\n")
    for result, expected in (
            (cli("diff", "--baseline", "cm://present/none", "--target", str(LIVE), "--kubeconfig", kubeconfig),
             missing_cm),
            (cli("diff", "--baseline", str(LIVE), "--target", "cm://absent/snap", "--kubeconfig", kubeconfig),
             missing_ns),
            (cli("snapshot", "--kubeconfig", kubeconfig, "-o", "cm://absent/snap"), missing_ns)):
        assert (result.code, result.err) == (3, expected)


def test_snapshot_to_configmap_is_a_server_side_apply(control_plane: ControlPlane, cli: Any, tmp_path: Path) -> None:
    _namespace(control_plane, "aicr-system")
    control_plane.kubectl("create", "configmap", "live", "--namespace=aicr-system", "--from-literal=owner=someone",
                          "--from-literal=snapshot.yaml=stale")
    kubeconfig = str(control_plane.kubeconfig)
    for context in ("admin", "cert"):  # the second apply takes over the first one's fields (force)
        result = cli("snapshot", "--kubeconfig", kubeconfig, "--context", context, "-o", "cm://aicr-system/live")
        assert result.code == 0, result.err
    stored = _configmap(control_plane, "aicr-system", "live")
    applies = [(entry["manager"], entry["operation"]) for entry in stored["metadata"]["managedFields"]]
    assert ("aicr-gen", "Apply") in applies
    owned = next(entry for entry in stored["metadata"]["managedFields"] if entry["manager"] == "aicr-gen")
    assert set(owned["fieldsV1"]["f:data"]) == {"f:format", "f:snapshot.yaml", "f:timestamp"}
    assert stored["metadata"]["labels"] == {"app.kubernetes.io/name": "aicr", "app.kubernetes.io/component": "Snapshot",
                                            "app.kubernetes.io/version": __version__}
    assert stored["data"]["format"] == "yaml" and stored["data"]["timestamp"].endswith("Z")
    assert stored["data"]["owner"] == "someone" and "binaryData" not in stored  # other fields are left alone
    assert cli("snapshot", "--kubeconfig", kubeconfig, "-o", str(tmp_path / "file.yaml")).code == 0
    from_cm = load_snapshot("cm://aicr-system/live", kubeconfig=kubeconfig)
    assert from_cm["measurements"] == load_snapshot(str(tmp_path / "file.yaml"))["measurements"]
    same = cli("diff", "--baseline", "cm://aicr-system/live", "--target", "cm://aicr-system/live", "--kubeconfig",
               kubeconfig, "--fail-on-drift")
    assert same.code == 0, same.err


def _images_over_the_object_limit(plane: ControlPlane) -> None:
    """Pods whose ~19,000 distinct images make a snapshot YAML of more than 1 MiB."""
    pods = [{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"many-{pod}", "namespace": "big"},
             "spec": {"automountServiceAccountToken": False, "containers": [
                 {"name": f"c{index}", "image": f"registry.example.com/team-{pod}/service-{index}:v1.{index}.0"}
                 for index in range(2400)]}} for pod in range(8)]
    for pod in pods:
        apply_json(plane, [pod])


def test_a_snapshot_over_the_servers_1_mib_limit_is_stored_gzipped(control_plane: ControlPlane, cli: Any,
                                                                   tmp_path: Path) -> None:
    _namespace(control_plane, "big")
    _images_over_the_object_limit(control_plane)
    kubeconfig = str(control_plane.kubeconfig)
    try:
        assert cli("snapshot", "--kubeconfig", kubeconfig, "-o", str(tmp_path / "big.yaml")).code == 0
        assert cli("snapshot", "--kubeconfig", kubeconfig, "-o", "cm://big/snapshot").code == 0
    finally:
        control_plane.kubectl("delete", "pods", "--all", "--namespace=big", "--wait=false")
    stored = _configmap(control_plane, "big", "snapshot")
    assert sorted(stored["data"]) == ["format", "timestamp"]
    packed = base64.b64decode(stored["binaryData"]["snapshot.yaml.gz"])
    text = gzip.decompress(packed).decode()
    assert len(text.encode()) > 1024 * 1024 > len(packed)
    from_cm = load_snapshot("cm://big/snapshot", kubeconfig=kubeconfig)
    assert from_cm["measurements"] == load_snapshot(str(tmp_path / "big.yaml"))["measurements"]
    assert subtype_data(from_cm, "K8s", "image")["registry.example.com/team-7/service-2399"] == "v1.2399.0"
    too_long = r"HTTP 422 for ConfigMap big/plain: .* Too long: may not be more than 1048576 bytes"
    with connect(kubeconfig) as cluster, pytest.raises(UnreachableError, match=too_long):
        cluster.apply_configmap("big", "plain", {"snapshot.yaml": text}, {}, {})  # the same, ungzipped


def test_read_only_user_reads_but_cannot_write(control_plane: ControlPlane, cli: Any, tmp_path: Path) -> None:
    _namespace(control_plane, "shared")
    control_plane.kubectl("create", "configmap", "snap", "--namespace=shared",
                          f"--from-file=snapshot.yaml={LIVE}")
    apply_json(control_plane, [
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "Role",
         "metadata": {"name": "snapshot-reader", "namespace": "shared"},
         "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"]}]},
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding",
         "metadata": {"name": "snapshot-reader", "namespace": "shared"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "snapshot-reader"},
         "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "nobody"}]}])
    assert control_plane.can_i("get", "configmaps", user="nobody", namespace="shared")
    assert not control_plane.can_i("patch", "configmaps", user="nobody", namespace="shared")
    kubeconfig = str(control_plane.kubeconfig)
    assert load_snapshot("cm://shared/snap", kubeconfig=kubeconfig, context="nobody") == load_snapshot(str(LIVE))
    with connect(kubeconfig, "nobody") as cluster, pytest.raises(UnreachableError) as refused:
        cluster.apply_configmap("shared", "snap", {"snapshot.yaml": "measurements: []\n"}, {}, {})
    assert str(refused.value) == (
        f"Kubernetes API at {control_plane.server}: forbidden (403) for ConfigMap shared/snap: configmaps \"snap\" "
        "is forbidden: User \"nobody\" cannot patch resource \"configmaps\" in API group \"\" in the namespace "
        "\"shared\"; grant context 'nobody' (user 'nobody') that permission (RBAC) or use another --context")
    assert refused.value.exit_code == 3


def test_bundle_reads_its_recipe_from_a_configmap(control_plane: ControlPlane, tmp_path: Path, cli: Any) -> None:
    """``bundle --recipe cm://NS/NAME`` (as AICR's): the recipe under the ConfigMap's recipe.yaml key, gzip'ed
    binaryData too; the same bundle as from the file."""
    _namespace(control_plane, "recipes")
    recipe = tmp_path / "recipe.yaml"
    assert cli("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu",
               "--platform", "dynamo", "-o", str(recipe)).code == 0
    (tmp_path / "recipe.yaml.gz").write_bytes(gzip.compress(recipe.read_bytes()))
    control_plane.kubectl("create", "configmap", "plain", "--namespace=recipes", f"--from-file={recipe}")
    control_plane.kubectl("create", "configmap", "zipped", "--namespace=recipes",
                          f"--from-file={tmp_path / 'recipe.yaml.gz'}")
    kubeconfig = str(control_plane.kubeconfig)
    outputs = []
    for source in (str(recipe), "cm://recipes/plain", "cm://recipes/zipped"):
        out = tmp_path / source.replace("/", "_").replace(":", "")
        result = cli("bundle", "--recipe", source, "--kubeconfig", kubeconfig, "-o", str(out))
        assert result.code == 0, result.err
        outputs.append({path.relative_to(out): path.read_bytes() for path in sorted(out.rglob("*")) if path.is_file()})
    assert outputs[0] == outputs[1] == outputs[2]
    missing = cli("bundle", "--recipe", "cm://recipes/absent", "--kubeconfig", kubeconfig, "-o", str(tmp_path / "x"))
    assert missing.code == 3 and "ConfigMap recipes/absent not found" in missing.err, missing.err
