"""``aicr_gen.edges.kube`` against the real API server: kubeconfig contexts and credentials (token, client certificate,
exec plugin, oidc), ``--context``, ``KUBECONFIG`` with several files, in-cluster config, TLS trust, proxies,
refusals and one-line failures; on a recording server, what the real one cannot show (redirects, oidc)."""

from __future__ import annotations

import base64
import json
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.edges.kube import client
from aicr_gen.edges.kube.client import Cluster, connect
from aicr_gen.errors import UnreachableError
from tests.cluster.envtest import ADMIN_TOKEN, ControlPlane, apply_json
from tests.conftest import Result
from tests.kubeapi import Recorder, derive, proxy, record, serving_context, without_proxies

CM = "/api/v1/namespaces/aicr/configmaps"
SNAPSHOT_CM = {"kind": "ConfigMap", "apiVersion": "v1", "metadata": {"name": "snap", "namespace": "aicr"},
               "data": {"snapshot.yaml": "measurements: []\n"}}


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)


def _whoami(cluster: Cluster) -> str:
    """The user name the server authenticated (a SelfSubjectReview, allowed to every user)."""
    review = cluster.request("POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", "whoami",
                             body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                             content_type="application/json")
    return str(review["status"]["userInfo"]["username"])


def _user(kubeconfig: str | Path | None, context: str | None = None) -> str:
    with connect(str(kubeconfig) if kubeconfig else None, context) as cluster:
        return _whoami(cluster)


def _one_line(result: Result, code: int, *fragments: str) -> None:
    assert result.code == code, result
    assert result.err.startswith("aicr-gen: error: ") and result.err.count("\n") == 1, result.err
    for fragment in fragments:
        assert fragment in result.err, f"{fragment!r} not in {result.err!r}"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


# ---------------------------------------------------------------- contexts and credentials


def test_token_certificate_and_unprivileged_contexts(control_plane: ControlPlane) -> None:
    assert _user(control_plane.kubeconfig) == "admin"  # the current-context
    assert [_user(control_plane.kubeconfig, name) for name in ("admin", "cert", "nobody")] == [
        "admin", "cert-admin", "nobody"]


def test_context_option_of_snapshot_validate_and_diff(control_plane: ControlPlane, cli: Any, tmp_path: Path) -> None:
    kubeconfig = str(control_plane.kubeconfig)
    _one_line(cli("snapshot", "--kubeconfig", kubeconfig, "--context", "nobody"), 3, "forbidden (403) for node list",
              'User "nobody" cannot list resource "nodes"', "context 'nobody' (user 'nobody')")
    assert cli("snapshot", "--kubeconfig", kubeconfig, "--context", "cert", "-o", str(tmp_path / "s.yaml")).code == 0
    recipe = tmp_path / "recipe.yaml"
    assert cli("recipe", "--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu",
               "--platform", "dynamo", "-o", str(recipe)).code == 0
    forbidden = 'User "nobody" cannot get resource "configmaps"'
    _one_line(cli("validate", "--recipe", str(recipe), "--snapshot", "cm://default/snap", "--kubeconfig", kubeconfig,
                  "--context", "nobody"), 3, forbidden)
    _one_line(cli("diff", "--baseline", str(tmp_path / "s.yaml"), "--target", "cm://default/snap", "--kubeconfig",
                  kubeconfig, "--context", "nobody"), 3, forbidden)
    _one_line(cli("diff", "--baseline", str(tmp_path / "s.yaml"), "--target", "cm://default/snap", "--kubeconfig",
                  kubeconfig, "--context", "staging"), 2,
              "context 'staging' is not defined (contexts: admin, cert, nobody); pass --context")


def _split(plane: ControlPlane, folder: Path) -> tuple[str, str]:
    """Two kubeconfig files: ``first`` (current-context admin, context admin -> admin) and ``second``
    (current-context nobody, a context also named admin but -> nobody, and the nobody context)."""
    config = yaml.safe_load(plane.kubeconfig.read_text(encoding="utf-8"))
    users = {user["name"]: user for user in config["users"]}
    first = {"apiVersion": "v1", "kind": "Config", "current-context": "admin", "clusters": config["clusters"],
             "users": [users["admin"]], "contexts": [{"name": "admin", "context": {"cluster": "envtest",
                                                                                  "user": "admin"}}]}
    second = {"apiVersion": "v1", "kind": "Config", "current-context": "nobody", "clusters": config["clusters"],
              "users": [users["nobody"]],
              "contexts": [{"name": name, "context": {"cluster": "envtest", "user": "nobody"}}
                           for name in ("admin", "nobody")]}
    paths = folder / "first.yaml", folder / "second.yaml"
    for path, content in zip(paths, (first, second), strict=True):
        path.write_text(yaml.safe_dump(content), encoding="utf-8")
    return str(paths[0]), str(paths[1])


def test_kubeconfig_env_merges_several_files_first_wins(control_plane: ControlPlane, tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = _split(control_plane, tmp_path)
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([str(tmp_path / "absent.yaml"), first, second]))
    assert _user(None) == "admin"  # the first file's current-context and its own "admin" context
    assert _user(None, "nobody") == "nobody"  # a context only the second file defines
    monkeypatch.setenv("KUBECONFIG", os.pathsep.join([second, first]))
    assert _user(None) == "nobody"
    assert _user(None, "admin") == "nobody"


def _exec_plugin(folder: Path, body: str) -> None:
    script = folder / "bin" / "get-token"
    script.parent.mkdir()
    script.write_text(f"#!{sys.executable}\nimport json, os, pathlib, sys\n{body}\n", encoding="utf-8")
    script.chmod(0o755)


def test_exec_plugin_with_exec_info_and_a_relative_command(control_plane: ControlPlane, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "conf"
    folder.mkdir()
    _exec_plugin(folder, 'pathlib.Path("exec-info.json").write_text(os.environ["KUBERNETES_EXEC_INFO"])\n'
                         'print(json.dumps({"apiVersion": "client.authentication.k8s.io/v1", "kind": '
                         f'"ExecCredential", "status": {{"token": "{ADMIN_TOKEN}"}}}}))')
    exec_user = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/get-token",
                          "provideClusterInfo": True, "interactiveMode": "Never"}}
    kubeconfig = derive(control_plane, folder / "config", users={"nobody": exec_user})
    monkeypatch.chdir(tmp_path)  # the relative command and its output are relative to the kubeconfig's folder
    assert _user(kubeconfig, "nobody") == "admin"
    info = json.loads((folder / "exec-info.json").read_text())
    assert info["kind"] == "ExecCredential" and info["apiVersion"] == "client.authentication.k8s.io/v1"
    assert info["spec"]["cluster"]["server"] == control_plane.server


def test_failing_exec_plugin_is_one_line(control_plane: ControlPlane, tmp_path: Path, cli: Any) -> None:
    _exec_plugin(tmp_path, 'sys.stderr.write("the SSO session expired\\n")\nsys.exit(1)')
    kubeconfig = derive(control_plane, tmp_path / "config", users={"admin": {"exec": {
        "apiVersion": "client.authentication.k8s.io/v1", "command": "./bin/get-token"}}})
    _one_line(cli("snapshot", "--kubeconfig", kubeconfig), 3,
              "the credential plugin of context 'admin' (user 'admin') failed: exec: process returned 1. the SSO "
              "session expired; fix it or log in again")


def test_in_cluster_service_account_reads_but_may_not_write(control_plane: ControlPlane, tmp_path: Path, cli: Any,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """The snapshot agent's case: no kubeconfig, KUBERNETES_SERVICE_HOST set, a service account allowed to list
    nodes, pods and secrets only (read-only capture works, writing the ConfigMap is forbidden)."""
    from kubernetes.config import incluster_config

    reader = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "reader"},
              "rules": [{"apiGroups": [""], "resources": ["nodes", "pods", "secrets"], "verbs": ["list"]}]}
    apply_json(control_plane, [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "agent"}},
        {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "snapshot", "namespace": "agent"}},
        reader,
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": "reader"},
         "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "reader"},
         "subjects": [{"kind": "ServiceAccount", "name": "snapshot", "namespace": "agent"}]}])
    token = control_plane.kubectl("create", "token", "snapshot", "--namespace=agent").stdout.strip()
    (tmp_path / "token").write_text(token)
    monkeypatch.setattr(incluster_config, "SERVICE_TOKEN_FILENAME", str(tmp_path / "token"))
    monkeypatch.setattr(incluster_config, "SERVICE_CERT_FILENAME", str(control_plane.ca_file))
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "none"))
    host, _, port = control_plane.server.removeprefix("https://").rpartition(":")
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", host)
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", port)
    with connect() as cluster:
        assert _whoami(cluster) == "system:serviceaccount:agent:snapshot"
    assert cli("snapshot", "-o", str(tmp_path / "s.yaml")).code == 0
    _one_line(cli("snapshot", "-o", "cm://agent/snap"), 3, "forbidden (403) for ConfigMap agent/snap",
              'User "system:serviceaccount:agent:snapshot" cannot patch resource "configmaps"',
              "the pod's service account")
    (tmp_path / "token").unlink()
    _one_line(cli("snapshot"), 3, "in-cluster config (KUBERNETES_SERVICE_HOST is set, no kubeconfig at",
              "Service token file does not exist")


# ---------------------------------------------------------------- reachability and TLS


def test_closed_port_and_silent_server_are_unreachable(control_plane: ControlPlane, tmp_path: Path, cli: Any,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    closed = f"https://127.0.0.1:{_closed_port()}"
    kubeconfig = derive(control_plane, tmp_path / "closed", cluster={"server": closed})
    _one_line(cli("snapshot", "--kubeconfig", kubeconfig), 3,
              f"cannot reach the Kubernetes API at {closed}: Connection refused")
    with socket.socket() as silent:  # accepts connections (the backlog) but never answers the TLS handshake
        silent.bind(("127.0.0.1", 0))
        silent.listen()
        server = f"https://127.0.0.1:{silent.getsockname()[1]}"
        monkeypatch.setattr(client, "TIMEOUT_SECONDS", 0.2)
        kubeconfig = derive(control_plane, tmp_path / "silent", cluster={"server": server})
        _one_line(cli("diff", "--baseline", "cm://aicr/a", "--target", "cm://aicr/b", "--kubeconfig", kubeconfig), 3,
                  f"Kubernetes API at {server}: no answer within 0.2s (ConfigMap aicr/a)")


def test_only_the_cluster_ca_is_trusted(control_plane: ControlPlane, tmp_path: Path, cli: Any,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """With SSL_CERT_FILE the default trust store trusts the API server; a kubeconfig naming another CA must
    still fail, so the store is not used beside the cluster CA."""
    monkeypatch.setenv("SSL_CERT_FILE", str(control_plane.ca_file))
    store_only = derive(control_plane, tmp_path / "store", cluster={"certificate-authority": None})
    assert cli("snapshot", "--kubeconfig", store_only, "-o", str(tmp_path / "s.yaml")).code == 0
    other_ca = derive(control_plane, tmp_path / "other",
                      cluster={"certificate-authority": str(control_plane.folder / "client-ca.crt")})
    _one_line(cli("snapshot", "--kubeconfig", other_ca), 3, "TLS with the Kubernetes API at",
              "check the certificate-authority and tls-server-name")
    pem = control_plane.ca_file.read_bytes()
    inline = derive(control_plane, tmp_path / "inline", cluster={
        "certificate-authority": None, "certificate-authority-data": base64.b64encode(pem).decode()})
    monkeypatch.delenv("SSL_CERT_FILE")
    assert cli("snapshot", "--kubeconfig", inline, "-o", str(tmp_path / "s.yaml")).code == 0


def test_tls_server_name_and_insecure_skip(control_plane: ControlPlane, tmp_path: Path, cli: Any) -> None:
    named = derive(control_plane, tmp_path / "named", cluster={"tls-server-name": "kubernetes.default.svc"})
    assert cli("snapshot", "--kubeconfig", named, "-o", str(tmp_path / "s.yaml")).code == 0
    wrong = derive(control_plane, tmp_path / "wrong", cluster={"tls-server-name": "api.example.com"})
    _one_line(cli("snapshot", "--kubeconfig", wrong), 3,
              "Hostname mismatch, certificate is not valid for 'api.example.com'")
    insecure = derive(control_plane, tmp_path / "insecure",
                      cluster={"certificate-authority": None, "insecure-skip-tls-verify": True})
    result = cli("snapshot", "--kubeconfig", insecure, "-o", str(tmp_path / "s.yaml"))
    assert result.code == 0
    assert result.err == ("aicr-gen: warning: context 'admin' (user 'admin') sets insecure-skip-tls-verify: the "
                          "API server's certificate is not checked\n")


def test_proxy_url_tunnels_to_the_api_server(control_plane: ControlPlane, tmp_path: Path, cli: Any) -> None:
    for tunnel in proxy():
        kubeconfig = derive(control_plane, tmp_path / "config", cluster={"proxy-url": tunnel.url})
        assert _user(kubeconfig) == "admin"
        assert tunnel.targets == [control_plane.server.removeprefix("https://")]
    closed = f"http://127.0.0.1:{_closed_port()}"
    kubeconfig = derive(control_plane, tmp_path / "config", cluster={"proxy-url": closed})
    _one_line(cli("snapshot", "--kubeconfig", kubeconfig), 3, f"through the proxy {closed}",
              "check proxy-url or HTTPS_PROXY/NO_PROXY")
    # a proxy's password never reaches the message (it ends up in CI logs)
    secret = closed.replace("http://", "http://alice:S3cretPass@")
    kubeconfig = derive(control_plane, tmp_path / "config", cluster={"proxy-url": secret})
    result = cli("snapshot", "--kubeconfig", kubeconfig)
    _one_line(result, 3, f"through the proxy {closed}")
    assert "S3cretPass" not in result.err and "alice" not in result.err


def test_kubeconfig_from_a_pipe(control_plane: ControlPlane, tmp_path: Path) -> None:
    """``--kubeconfig <(vault read ...)``: a named pipe is a file kubectl reads too."""
    pipe = tmp_path / "kubeconfig.fifo"
    os.mkfifo(pipe)
    text = Path(control_plane.kubeconfig).read_text()
    writer = subprocess.Popen(["sh", "-c", 'cat > "$1"', "sh", str(pipe)], stdin=subprocess.PIPE, text=True)
    try:
        writer.stdin.write(text)  # type: ignore[union-attr]
        writer.stdin.close()  # type: ignore[union-attr]
        assert _user(str(pipe)) == "admin"
    finally:
        writer.wait(timeout=10)


# ---------------------------------------------------------------- credentials never leak


@pytest.fixture
def recorders(control_plane: ControlPlane) -> Iterator[tuple[Recorder, Recorder, Recorder]]:
    """Two HTTPS recording servers with the API server's certificate, and one plain-http one."""
    context = serving_context(control_plane)
    for first in record(context):
        for second in record(context):
            for plain in record():
                yield first, second, plain


def test_redirect_to_another_port_or_scheme_drops_the_token(control_plane: ControlPlane, tmp_path: Path,
                                                            recorders: tuple[Recorder, Recorder, Recorder]) -> None:
    from aicr_gen.drift.load import load_snapshot
    first, second, plain = recorders
    first.routes = {f"{CM}/here": (307, {"Location": f"{first.url}{CM}/snap"}, {}),
                    f"{CM}/snap": (200, {}, SNAPSHOT_CM),
                    f"{CM}/away": (307, {"Location": f"{second.url}{CM}/snap"}, {}),
                    f"{CM}/plain": (307, {"Location": f"{plain.url}{CM}/snap"}, {})}
    second.routes = plain.routes = {f"{CM}/snap": (200, {}, SNAPSHOT_CM)}
    kubeconfig = derive(control_plane, tmp_path / "config", cluster={"server": first.url})
    for name in ("here", "away", "plain"):
        assert load_snapshot(f"cm://aicr/{name}", kubeconfig=kubeconfig) == {"measurements": []}
    bearer = f"Bearer {ADMIN_TOKEN}"
    assert [(r["path"], r["headers"].get("authorization")) for r in first.requests] == [
        (f"{CM}/here", bearer), (f"{CM}/snap", bearer), (f"{CM}/away", bearer), (f"{CM}/plain", bearer)]
    assert [r["path"] for r in second.requests + plain.requests] == [f"{CM}/snap", f"{CM}/snap"]
    assert not any("authorization" in r["headers"] for r in second.requests + plain.requests)


def test_credentials_are_never_sent_over_plain_http(control_plane: ControlPlane, tmp_path: Path, cli: Any,
                                                    recorders: tuple[Recorder, Recorder, Recorder]) -> None:
    _, _, plain = recorders
    plain.routes = {f"{CM}/snap": (200, {}, SNAPSHOT_CM)}
    for user in ({"token": ADMIN_TOKEN}, {"username": "admin", "password": "secret"}):
        kubeconfig = derive(control_plane, tmp_path / "config", cluster={"server": plain.url}, users={"admin": user})
        _one_line(cli("diff", "--baseline", "cm://aicr/snap", "--target", "cm://aicr/snap", "--kubeconfig",
                      kubeconfig), 2, f"has credentials but the server {plain.url} is plain http",
                  "use the API server's https:// address")
    assert plain.requests == []
    no_credentials = derive(control_plane, tmp_path / "proxy", cluster={"server": plain.url}, users={"admin": {}})
    assert cli("diff", "--baseline", "cm://aicr/snap", "--target", "cm://aicr/snap", "--kubeconfig",
               no_credentials).code == 0  # e.g. kubectl proxy
    assert [r["headers"].get("authorization") for r in plain.requests] == [None, None]


def _jwt(claims: dict[str, Any]) -> str:
    def part(value: dict[str, Any]) -> str:
        return base64.urlsafe_b64encode(json.dumps(value).encode()).decode().rstrip("=")

    return f"{part({'alg': 'none'})}.{part(claims)}.c2ln"


def test_oidc_auth_provider_token_is_sent_and_its_secrets_never_shown(
        control_plane: ControlPlane, tmp_path: Path, cli: Any, recorders: tuple[Recorder, Recorder, Recorder]) -> None:
    from aicr_gen.drift.load import load_snapshot
    first, _, _ = recorders
    first.routes = {f"{CM}/snap": (200, {}, SNAPSHOT_CM)}
    token = _jwt({"sub": "alice", "exp": 4102444800})
    oidc = {"name": "oidc", "config": {"id-token": token, "client-id": "aicr", "client-secret": "S3CRET",
                                       "refresh-token": "R3FRESH", "idp-issuer-url": "https://issuer.invalid"}}
    kubeconfig = derive(control_plane, tmp_path / "config", cluster={"server": first.url},
                        users={"admin": {"auth-provider": oidc}})
    assert load_snapshot("cm://aicr/snap", kubeconfig=kubeconfig) == {"measurements": []}
    assert first.requests[0]["headers"]["authorization"] == f"Bearer {token}"
    broken = {"name": "oidc", "config": {key: value for key, value in oidc["config"].items() if key != "id-token"}}
    kubeconfig = derive(control_plane, tmp_path / "config", users={"admin": {"auth-provider": broken}})
    result = cli("snapshot", "--kubeconfig", kubeconfig)
    _one_line(result, 2, "context 'admin' cannot be used: Invalid kube-config file. Expected key id-token")
    assert "S3CRET" not in result.err and "R3FRESH" not in result.err


# ---------------------------------------------------------------- kubeconfig problems


def test_unusable_kubeconfigs_are_input_errors(control_plane: ControlPlane, tmp_path: Path, cli: Any,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    bad = tmp_path / "bad"
    bad.write_text("clusters: [\n")
    _one_line(cli("snapshot", "--kubeconfig", str(bad)), 2, f"{bad}: not a usable kubeconfig")
    no_current = derive(control_plane, tmp_path / "config", **{"current-context": ""})
    _one_line(cli("snapshot", "--kubeconfig", no_current), 2,
              "no current-context; pass --context NAME (contexts: admin, cert, nobody)")
    _one_line(cli("snapshot", "--kubeconfig", str(tmp_path / "absent")), 2, "absent: file not found")
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "absent"))
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    _one_line(cli("snapshot"), 3, f"no kubeconfig found (tried {tmp_path / 'absent'}); set KUBECONFIG")
    wrong_token = derive(control_plane, tmp_path / "config", users={"admin": {"token": "expired"}})
    _one_line(cli("snapshot", "--kubeconfig", wrong_token), 3, "unauthorized (401) for server version: Unauthorized",
              "the credentials of context 'admin' (user 'admin') were refused")


# ---------------------------------------------------------------- the requests themselves


def test_apply_is_the_request_the_generated_client_sends(control_plane: ControlPlane,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from kubernetes.client import CoreV1Api

    apply_json(control_plane, [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "aicr"}}])
    with connect(str(control_plane.kubeconfig)) as cluster:
        sent: list[tuple[Any, ...]] = []
        call = cluster.api.call_api
        monkeypatch.setattr(cluster.api, "call_api", lambda *request, **options: sent.append(request) or call(
            *request, **options))
        applied = cluster.apply_configmap("aicr", "same", {"snapshot.yaml": "measurements: []\n"},
                                          {"snapshot.yaml.gz": b"\x1f\x8b"}, {"app": "aicr"})
        expected = CoreV1Api(cluster.api)._patch_namespaced_config_map_serialize(
            name="same", namespace="aicr", body={
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "same", "namespace": "aicr", "labels": {"app": "aicr"}},
                "data": {"snapshot.yaml": "measurements: []\n"}, "binaryData": {"snapshot.yaml.gz": "H4s="}},
            pretty=None, dry_run=None, field_manager="aicr-gen", field_validation=None, force=True,
            _request_auth=None, _content_type="application/apply-patch+yaml", _headers=None, _host_index=0)
    assert [request[:4] for request in sent] == [expected[:4]]  # method, URL, headers, body (no form fields)
    assert applied["binaryData"] == {"snapshot.yaml.gz": "H4s="}


def test_an_answer_that_is_not_json_is_unreachable(control_plane: ControlPlane, tmp_path: Path,
                                                   recorders: tuple[Recorder, Recorder, Recorder]) -> None:
    first, _, _ = recorders
    first.routes = {"/version": (200, {}, ["not", "an", "object"])}
    kubeconfig = derive(control_plane, tmp_path / "config", cluster={"server": first.url})
    with connect(kubeconfig) as cluster, pytest.raises(UnreachableError, match="the answer for server version is "
                                                                               "not a JSON object"):
        cluster.request("GET", "/version", "server version")


def test_only_cluster_commands_import_the_client(tmp_path: Path) -> None:
    """``--version`` and a diff of two files never import ``kubernetes`` (~0.4 s); a cm:// source does."""
    probe = ("import sys\nfrom aicr_gen.cli.main import main\ntry:\n    main(sys.argv[1:])\n"
             "except SystemExit:\n    pass\nsys.stderr.write(f'KUBERNETES={\"kubernetes\" in sys.modules}\\n')")
    snapshot = str(Path(__file__).resolve().parents[2] / "snapshots" / "golden-baseline.yaml")

    def imports(*args: str) -> bool:
        done = subprocess.run([sys.executable, "-c", probe, *args], capture_output=True, text=True, check=False,
                              env={**os.environ, "AICR_GEN_CACHE_DIR": str(tmp_path / "cache")})
        return done.stderr.rsplit("KUBERNETES=", 1)[1].strip() == "True"

    assert not imports("--version")
    assert not imports("diff", "--baseline", snapshot, "--target", snapshot)
    assert not imports("snapshot", "--agent-cronjob", str(tmp_path / "agent"))
    assert imports("diff", "--baseline", snapshot, "--target", "cm://aicr/snap", "--kubeconfig", str(tmp_path / "x"))
