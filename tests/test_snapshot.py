"""Loading AICR snapshots: files (YAML, JSON, gzip), stdin and cm:// ConfigMaps from a local fake API server."""

from __future__ import annotations

import gzip
import io
import json
import socket
import ssl
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.drift import kube
from aicr_gen.drift.snapshot import is_recipe, load_document, load_snapshot
from aicr_gen.errors import InvalidInputError, UnreachableError
from aicr_gen.yamlio import dump
from tests.conftest import REFERENCE
from tests.kubeapi import TOKEN, FakeApi, kubeconfig, serve, subtype_data, url, without_proxies

ROOT = Path(__file__).resolve().parent.parent
KUBE = Path(__file__).parent / "fixtures" / "kube"
MOCK = REFERENCE / "aicr" / "tests" / "chainsaw" / "cli" / "cuj1-training" / "mock-snapshot.yaml"


def _mock_text() -> str:
    """AICR's CUJ1 mock snapshot: the reference file, else the copy recorded in the ConfigMap fixture."""
    if MOCK.is_file():
        return MOCK.read_text(encoding="utf-8")
    return str(json.loads((KUBE / "configmap-snapshot.json").read_text())["data"]["snapshot.yaml"])


def _assert_cuj1(snapshot: dict[str, Any]) -> None:
    assert "kind" not in snapshot
    assert subtype_data(snapshot, "K8s", "server") == {"version": "v1.33.0"}
    helm = subtype_data(snapshot, "K8s", "helm")
    assert helm["gpu-operator.version"] == "v25.10.1"
    assert helm["aws-ebs-csi-driver.version"] == "2.55.0"
    assert subtype_data(snapshot, "OS", "release") == {"ID": "ubuntu", "VERSION_ID": "24.04"}
    assert subtype_data(snapshot, "OS", "sysctl")["/proc/sys/kernel/osrelease"] == "6.8.0-1015-aws"


# ---------------------------------------------------------------- files and stdin


def test_aicr_mock_snapshot_without_kind_loads_as_is(tmp_path: Path) -> None:
    path = tmp_path / "mock-snapshot.yaml"
    path.write_text(_mock_text(), encoding="utf-8")
    _assert_cuj1(load_snapshot(str(path)))


def test_json_and_gzip_variants_load_the_same(tmp_path: Path) -> None:
    source = tmp_path / "mock.yaml"
    source.write_text(_mock_text(), encoding="utf-8")
    expected = load_snapshot(str(source))
    as_json = tmp_path / "mock.json"
    as_json.write_text(json.dumps(expected), encoding="utf-8")
    zipped_yaml = tmp_path / "mock.yaml.gz"
    zipped_yaml.write_bytes(gzip.compress(source.read_bytes()))
    zipped_json = tmp_path / "mock.json.gz"
    zipped_json.write_bytes(gzip.compress(as_json.read_bytes()))
    for variant in (as_json, zipped_yaml, zipped_json):
        assert load_snapshot(str(variant)) == expected


def test_stdin() -> None:
    _assert_cuj1(load_snapshot("-", stdin=io.BytesIO(_mock_text().encode())))


def test_example_and_golden_snapshots_load() -> None:
    live = load_snapshot(str(ROOT / "snapshots" / "example-live.yaml"))
    golden = load_snapshot(str(ROOT / "snapshots" / "golden-baseline.yaml"))
    assert live["kind"] == golden["kind"] == "Snapshot"
    assert subtype_data(live, "GPU", "hardware")["gpu-count"] == 8
    live_helm, golden_helm = subtype_data(live, "K8s", "helm"), subtype_data(golden, "K8s", "helm")
    assert live_helm.keys() == golden_helm.keys()
    assert sorted(k for k in live_helm if live_helm[k] != golden_helm[k]) == [
        "gpu-operator.version", "kube-prometheus-stack.version", "nvsentinel.version"]


def test_load_document_tells_recipe_from_snapshot(tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    recipe.write_text("kind: RecipeResult\napiVersion: aicr.run/v1alpha2\ncomponentRefs: []\n", encoding="utf-8")
    kind, data = load_document(str(recipe))
    assert (kind, data["componentRefs"]) == ("RecipeResult", [])
    assert is_recipe(data) and not is_recipe({"measurements": []}) and not is_recipe([])
    kind, data = load_document(str(ROOT / "snapshots" / "golden-baseline.yaml"))
    assert kind == "Snapshot" and data["apiVersion"] == "aicr.run/v1alpha2"
    with pytest.raises(InvalidInputError, match="is a recipe, not a snapshot"):
        load_snapshot(str(recipe))
    other = tmp_path / "criteria.yaml"
    other.write_text("kind: RecipeCriteria\nmeasurements: []\n", encoding="utf-8")
    with pytest.raises(InvalidInputError, match=r"criteria.yaml:1: kind: kind 'RecipeCriteria' is neither"):
        load_document(str(other))


@pytest.mark.parametrize(("text", "message"), [
    ("measurements:\n  - type: K8s\n    subtypes:\n      - subtype: server\n        data: {version: v1\n",
     r"bad.yaml:\d+: invalid YAML"),
    ("measurements:\n  - type: K8s\n    subtypes:\n      - subtype: server\n        data:\n          v: [1]\n",
     r"bad.yaml:6: measurements\[0\].subtypes\[0\].data.v: .*a reading must be a string, number or boolean"),
    ("kind: Snapshot\napiVersion: aicr.run/v1\nmeasurements: []\n", r"bad.yaml:2: apiVersion: value 'aicr.run/v1'"),
    ("measurements:\n  - type: K8s\n    subtypes: []\n    subtype: x\n",
     r"bad.yaml:4: measurements\[0\].subtype: unknown field 'subtype'; did you mean 'subtypes'"),
    ("measurements:\n  - {type: OS, subtypes: []}\n  - {type: OS, subtypes: []}\n",
     r"bad.yaml:3: measurements\[1\].type: measurement type 'OS' repeats"),
    ("measurements:\n  - type: OS\n    subtypes:\n      - subtype: release\n      - subtype: release\n",
     r"bad.yaml:5: measurements\[0\].subtypes\[1\].subtype: subtype 'release' repeats"),
    ("- measurements\n", r"bad.yaml:1: the document root is a list"),
])
def test_malformed_snapshots_are_input_errors_with_line(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInputError, match=message) as err:
        load_snapshot(str(path))
    assert err.value.exit_code == 2


def test_truncated_and_non_utf8_files(tmp_path: Path) -> None:
    truncated = tmp_path / "cut.json"
    truncated.write_text(json.dumps({"measurements": [{"type": "K8s", "subtypes": []}]}, indent=2)[:-12])
    with pytest.raises(InvalidInputError, match=r"cut.json:\d+: invalid YAML"):
        load_snapshot(str(truncated))
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes(b"measurements:\n  - type: OS\n    subtypes:\n      - subtype: caf\xe9\n")
    with pytest.raises(InvalidInputError, match=r"latin1.yaml:4: not valid UTF-8"):
        load_snapshot(str(latin1))
    cut_gzip = tmp_path / "cut.yaml.gz"
    cut_gzip.write_bytes(gzip.compress(_mock_text().encode())[:-40])
    with pytest.raises(InvalidInputError, match=r"cut.yaml.gz:1: gzip data is truncated"):
        load_snapshot(str(cut_gzip))
    with pytest.raises(InvalidInputError, match="file not found"):
        load_snapshot(str(tmp_path / "absent.yaml"))


def test_gzip_bomb_is_bounded(tmp_path: Path) -> None:
    bomb = tmp_path / "bomb.yaml.gz"
    bomb.write_bytes(gzip.compress(b" " * (65 * 1024 * 1024), compresslevel=9))
    assert bomb.stat().st_size < 200_000
    with pytest.raises(InvalidInputError, match="expands beyond the 64 MiB snapshot limit"):
        load_snapshot(str(bomb))


def test_ten_thousand_helm_keys_load_fast(tmp_path: Path) -> None:
    helm = {f"component-{i}.version": f"v1.{i}.0" for i in range(10_000)}
    path = tmp_path / "big.yaml"
    path.write_text(dump({"measurements": [{"type": "K8s", "subtypes": [{"subtype": "helm", "data": helm}]}]}))
    start = time.perf_counter()
    snapshot = load_snapshot(str(path))
    assert time.perf_counter() - start < 1.0
    assert len(subtype_data(snapshot, "K8s", "helm")) == 10_000


# ---------------------------------------------------------------- cm:// against a local API server


ROUTES = {f"/api/v1/namespaces/aicr/configmaps/{name}": (KUBE / fixture).read_bytes() for name, fixture in (
    ("cuj1-snapshot", "configmap-snapshot.json"), ("live-snapshot", "configmap-snapshot-gz.json"),
    ("kube-root-ca.crt", "configmap-other.json"))}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeApi]:
    without_proxies(monkeypatch)
    yield from serve(ROUTES)


def test_cm_snapshot_from_data_key(api: FakeApi, tmp_path: Path) -> None:
    snapshot = load_snapshot("cm://aicr/cuj1-snapshot", kubeconfig=kubeconfig(tmp_path, url(api)))
    _assert_cuj1(snapshot)
    [request] = api.requests
    assert request["method"] == "GET"
    assert request["path"] == "/api/v1/namespaces/aicr/configmaps/cuj1-snapshot"
    assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert request["headers"]["Accept"] == "application/json"


def test_cm_snapshot_from_gzip_binary_data_and_kubeconfig_env(api: FakeApi, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(TOKEN + "\n")
    monkeypatch.setenv("KUBECONFIG", kubeconfig(tmp_path, url(api), {"tokenFile": str(token_file)}))
    kind, snapshot = load_document("cm://aicr/live-snapshot")
    assert kind == "Snapshot"
    assert snapshot == load_snapshot(str(ROOT / "snapshots" / "example-live.yaml"))


def test_cm_errors_are_unreachable_with_reason(api: FakeApi, tmp_path: Path) -> None:
    config = kubeconfig(tmp_path, url(api))
    with pytest.raises(UnreachableError, match="ConfigMap aicr/missing not found") as err:
        load_snapshot("cm://aicr/missing", kubeconfig=config)
    assert err.value.exit_code == 3
    with pytest.raises(UnreachableError, match=r"has no snapshot.yaml or snapshot.json key \(keys: ca.crt\)"):
        load_snapshot("cm://aicr/kube-root-ca.crt", kubeconfig=config)
    wrong = kubeconfig(tmp_path, url(api), {"token": "expired"})
    with pytest.raises(UnreachableError, match=r"unauthorized \(401\) for ConfigMap aicr/cuj1-snapshot: Unauthorized"):
        load_snapshot("cm://aicr/cuj1-snapshot", kubeconfig=wrong)
    with pytest.raises(InvalidInputError, match="expected cm://NAMESPACE/NAME"):
        load_snapshot("cm://Bad_NS/x", kubeconfig=config)


def test_cm_closed_port_is_unreachable(tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    server = f"http://127.0.0.1:{port}"
    with pytest.raises(UnreachableError, match=f"cannot reach the Kubernetes API at {server}") as err:
        load_snapshot("cm://aicr/snap", kubeconfig=kubeconfig(tmp_path, server))
    assert err.value.exit_code == 3


def test_apply_configmap_is_a_server_side_apply(api: FakeApi, tmp_path: Path) -> None:
    labels = {"app.kubernetes.io/name": "aicr", "app.kubernetes.io/component": "Snapshot"}
    applied = kube.apply_configmap("aicr", "snap", {"snapshot.yaml": "measurements: []\n", "format": "yaml"},
                                   {"snapshot.yaml.gz": b"\x1f\x8b-bytes"}, labels,
                                   kubeconfig=kubeconfig(tmp_path, url(api)))
    assert applied["metadata"]["resourceVersion"] == "1"
    [request] = api.requests
    assert request["method"] == "PATCH"
    assert request["path"] == "/api/v1/namespaces/aicr/configmaps/snap?fieldManager=aicr-gen&force=true"
    assert request["headers"]["Content-Type"] == "application/apply-patch+yaml"
    assert request["headers"]["Authorization"] == f"Bearer {TOKEN}"
    assert json.loads(request["body"]) == {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "snap", "namespace": "aicr", "labels": labels},
        "data": {"snapshot.yaml": "measurements: []\n", "format": "yaml"},
        "binaryData": {"snapshot.yaml.gz": "H4stYnl0ZXM="},
    }


def test_https_with_certificate_authority_data(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    try:
        from cryptography import x509  # type: ignore[import-not-found, unused-ignore]
    except ImportError:
        pytest.skip("the cryptography package is not installed, so no self-signed certificate can be made")
    import base64
    import datetime
    import ipaddress

    from cryptography.hazmat.primitives import hashes, serialization  # type: ignore[import-not-found, unused-ignore]
    from cryptography.hazmat.primitives.asymmetric import ec  # type: ignore[import-not-found, unused-ignore]

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(x509.NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=1))
            .not_valid_after(now + datetime.timedelta(hours=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
            .sign(key, hashes.SHA256()))
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    (tmp_path / "tls.pem").write_bytes(cert_pem + key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(tmp_path / "tls.pem")
    for proxy in ("https_proxy", "HTTPS_PROXY"):
        monkeypatch.delenv(proxy, raising=False)
    for server in serve(ROUTES, context):
        config = kubeconfig(tmp_path, url(server, "https"),
                             cluster={"certificate-authority-data": base64.b64encode(cert_pem).decode()})
        _assert_cuj1(load_snapshot("cm://aicr/cuj1-snapshot", kubeconfig=config))
