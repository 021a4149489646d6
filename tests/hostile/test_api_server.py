"""A hostile Kubernetes API server on 127.0.0.1 (TLS, its own CA, pointed at by a kubeconfig with a bearer
token): it answers 429/503 with ``Retry-After``, pages forever, announces or streams too much, cuts bodies
short, nests JSON too deep, stalls, trickles, redirects elsewhere, breaks the status line and the headers,
and echoes the credentials it was sent. Every case asserts the exit code, the one-line message, that the
token is in no output and what the server saw; none may hang or end in "internal error". What should work
is tested on the real API server (tests/cluster/test_kube_client.py)."""

from __future__ import annotations

import datetime
import json
import socket
import ssl
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.edges.kube import client
from tests.conftest import Result
from tests.kubeapi import without_proxies

TOKEN = "hostile-test-bearer-token-5f1e"
LISTS = ("/api/v1/nodes", "/api/v1/secrets", "/api/v1/pods")
VERSION = {"gitVersion": "v1.33.1", "platform": "linux/amd64"}
EMPTY_LIST: dict[str, Any] = {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}


@dataclass
class Seen:
    """One request as the server read it."""

    method: str
    path: str
    headers: dict[str, str]


Behaviour = Callable[[Seen, ssl.SSLSocket], None]


@dataclass
class Peer:
    """A TLS server answering each connection's one request with ``behaviour``; ``seen`` records them."""

    listener: socket.socket
    context: ssl.SSLContext
    behaviour: Behaviour
    seen: list[Seen] = field(default_factory=list)
    closing: threading.Event = field(default_factory=threading.Event)

    @property
    def port(self) -> int:
        return int(self.listener.getsockname()[1])

    def url(self, host: str = "127.0.0.1") -> str:
        return f"https://{host}:{self.port}"

    def serve(self) -> None:
        while not self.closing.is_set():
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        try:
            with self.context.wrap_socket(conn, server_side=True) as tls:
                tls.settimeout(10)
                reader = tls.makefile("rb")
                request = reader.readline().decode("latin-1").split()
                headers: dict[str, str] = {}
                while (line := reader.readline().decode("latin-1").rstrip("\r\n")):
                    name, _, value = line.partition(":")
                    headers[name.strip().lower()] = value.strip()
                reader.read(int(headers.get("content-length") or 0))
                seen = Seen(request[0], request[1], headers)
                self.seen.append(seen)
                self.behaviour(seen, tls)
        except OSError:
            return

    def wait_closing(self) -> None:
        """Hold the connection open, answering nothing, until the test ends."""
        self.closing.wait(30)


def answer(tls: ssl.SSLSocket, status: int, body: Any = None, *, headers: dict[str, str] | None = None,
           raw: bytes | None = None) -> None:
    """One HTTP/1.1 answer: ``raw`` bytes or ``body`` as JSON, ``Connection: close``."""
    payload = raw if raw is not None else json.dumps(body if body is not None else {}).encode()
    head = {"Content-Type": "application/json", "Content-Length": str(len(payload)), "Connection": "close",
            **(headers or {})}
    lines = [f"HTTP/1.1 {status} Status", *(f"{name}: {value}" for name, value in head.items()), "", ""]
    tls.sendall("\r\n".join(lines).encode() + payload)


def normal(seen: Seen, tls: ssl.SSLSocket) -> None:
    """What a healthy (empty) cluster answers to a snapshot's reads."""
    path = seen.path.partition("?")[0]
    if path == "/version":
        answer(tls, 200, VERSION)
    elif path in LISTS:
        answer(tls, 200, EMPTY_LIST)
    else:
        answer(tls, 404, {"kind": "Status", "message": "not found", "code": 404})


@pytest.fixture(scope="module")
def tls_files(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A self-signed certificate for 127.0.0.1 and localhost, and its key."""
    import ipaddress

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    folder = tmp_path_factory.mktemp("tls")
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hostile-apiserver")])
    now = datetime.datetime.now(datetime.UTC)
    names = [x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .add_extension(x509.SubjectAlternativeName(names), critical=False).sign(key, hashes.SHA256()))
    (folder / "tls.crt").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "tls.key").write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    return folder / "tls.crt", folder / "tls.key"


@pytest.fixture
def serve(tls_files: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Behaviour], Peer]]:
    """Start peers with a behaviour each; all are closed when the test ends."""
    without_proxies(monkeypatch)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(*tls_files)
    peers: list[Peer] = []

    def start(behaviour: Behaviour) -> Peer:
        listener = socket.create_server(("127.0.0.1", 0))
        peer = Peer(listener, context, behaviour)
        threading.Thread(target=peer.serve, daemon=True).start()
        peers.append(peer)
        return peer

    yield start
    for peer in peers:
        peer.closing.set()
        peer.listener.close()


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Small bounds, so that each case takes well under a second."""
    for name, value in (("TIMEOUT_SECONDS", 0.5), ("DEADLINE_SECONDS", 1.0), ("RETRY_ATTEMPTS", 3),
                        ("RETRY_SECONDS", 2.0), ("RETRY_BACKOFF_SECONDS", 0.01), ("MAX_PAGES", 5),
                        ("REDIRECTS", 3), ("MAX_RESPONSE_BYTES", 4096)):
        monkeypatch.setattr(client, name, value)


def kubeconfig(folder: Path, peer: Peer, ca: Path) -> str:
    """A kubeconfig for ``peer`` with the bearer token ``TOKEN``."""
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "hostile",
              "clusters": [{"name": "hostile", "cluster": {"server": peer.url(), "certificate-authority": str(ca)}}],
              "users": [{"name": "ci", "user": {"token": TOKEN}}],
              "contexts": [{"name": "hostile", "context": {"cluster": "hostile", "user": "ci"}}]}
    path = folder / "kubeconfig"
    path.write_text(yaml.safe_dump(config), encoding="utf-8")
    return str(path)


Run = Callable[[Peer, str], Result]


@pytest.fixture
def snapshot(cli: Any, tmp_path: Path, tls_files: tuple[Path, Path], quick: None) -> Run:
    """``aicr-gen snapshot --kubeconfig K -o OUTPUT`` against ``peer``; checks nothing leaked."""

    def run(peer: Peer, output: str = "") -> Result:
        result: Result = cli("snapshot", "--kubeconfig", kubeconfig(tmp_path, peer, tls_files[0]), "-o",
                             output or str(tmp_path / "snapshot.yaml"))
        assert TOKEN not in result.out + result.err
        assert "internal error" not in result.err and "Traceback" not in result.err
        return result

    return run


def fails(result: Result, *fragments: str) -> None:
    """Exit 3 with one line holding every fragment."""
    assert result.code == 3, result
    assert result.err.startswith("aicr-gen: error: ") and result.err.count("\n") == 1, result.err
    for fragment in fragments:
        assert fragment in result.err, f"{fragment!r} not in {result.err!r}"


def paths(peer: Peer) -> list[str]:
    return [seen.path.partition("?")[0] for seen in peer.seen]


def bearers(peer: Peer) -> set[str | None]:
    return {seen.headers.get("authorization") for seen in peer.seen}


# ---------------------------------------------------------------- a busy server


def test_429_with_retry_after_is_retried_a_bounded_number_of_times(serve: Callable[[Behaviour], Peer],
                                                                     snapshot: Run) -> None:
    peer = serve(lambda seen, tls: answer(tls, 429, {"kind": "Status", "message": "slow down"},
                                          headers={"Retry-After": "0"}))
    fails(snapshot(peer, ""), f"Kubernetes API at {peer.url()}: still busy (HTTP 429, slow down) for server "
                              "version after 3 attempts in", "retry later")
    assert paths(peer) == ["/version"] * 3
    assert bearers(peer) == {f"Bearer {TOKEN}"}


def test_503_with_retry_after_then_an_answer_succeeds(serve: Callable[[Behaviour], Peer], snapshot: Run,
                                                      tmp_path: Path) -> None:
    def twice_busy(seen: Seen, tls: ssl.SSLSocket) -> None:
        if paths(peer).count("/version") <= 2:
            answer(tls, 503, {"message": "etcd leader changed"}, headers={"Retry-After": "0"})
        else:
            normal(seen, tls)

    peer = serve(twice_busy)
    result = snapshot(peer, str(tmp_path / "out.yaml"))
    assert result.code == 0, result
    assert yaml.safe_load((tmp_path / "out.yaml").read_text())["kind"] == "Snapshot"
    assert paths(peer) == ["/version"] * 3 + list(LISTS)


def test_a_retry_after_beyond_the_budget_is_given_up_at_once(serve: Callable[[Behaviour], Peer],
                                                             snapshot: Run) -> None:
    peer = serve(lambda seen, tls: answer(tls, 503, {}, headers={"Retry-After": "3600"}))
    began = time.monotonic()
    fails(snapshot(peer, ""), "busy for server version and asks to retry after 3600s, beyond the 2s aicr-gen "
                              "waits in all; retry later")
    assert time.monotonic() - began < 2
    assert paths(peer) == ["/version"]


def test_a_503_without_retry_after_is_not_retried(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    peer = serve(lambda seen, tls: answer(tls, 503, {"kind": "Status", "message": "unavailable"}))
    fails(snapshot(peer, ""), "HTTP 503 for server version: unavailable")
    assert paths(peer) == ["/version"]


def test_the_apply_of_a_configmap_is_retried_too(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    def busy_writes(seen: Seen, tls: ssl.SSLSocket) -> None:
        if seen.method == "PATCH":
            answer(tls, 429, {"message": "too many requests"}, headers={"Retry-After": "0"})
        else:
            normal(seen, tls)

    peer = serve(busy_writes)
    fails(snapshot(peer, "cm://aicr/snap"), "still busy (HTTP 429, too many requests) for ConfigMap aicr/snap "
                                            "after 3 attempts")
    assert [seen.method for seen in peer.seen].count("PATCH") == 3


# ---------------------------------------------------------------- endless and oversized answers


def test_an_endless_list_of_continue_tokens_stops_at_the_page_cap(serve: Callable[[Behaviour], Peer],
                                                                 snapshot: Run) -> None:
    def endless(seen: Seen, tls: ssl.SSLSocket) -> None:
        if seen.path.startswith("/api/v1/nodes"):
            answer(tls, 200, {**EMPTY_LIST, "metadata": {"continue": f"page-{len(peer.seen)}"}})
        else:
            normal(seen, tls)

    peer = serve(endless)
    fails(snapshot(peer, ""), "the node list goes on past 5 pages of 500 (it keeps answering a continue token)")
    assert paths(peer) == ["/version"] + ["/api/v1/nodes"] * 5
    assert "continue=page-5" in peer.seen[-1].path


def test_a_list_that_pages_past_its_deadline_stops(serve: Callable[[Behaviour], Peer], snapshot: Run,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "MAX_PAGES", 1_000_000)
    monkeypatch.setattr(client, "LIST_SECONDS", 0.3)

    def endless(seen: Seen, tls: ssl.SSLSocket) -> None:
        if seen.path.startswith("/api/v1/nodes"):
            answer(tls, 200, {**EMPTY_LIST, "items": [{"metadata": {"name": "n"}}], "metadata": {"continue": "more"}})
        else:
            normal(seen, tls)

    peer = serve(endless)
    began = time.monotonic()
    fails(snapshot(peer, ""), "the node list took over 0.3s (", "items so far)")
    assert time.monotonic() - began < 3


def test_an_announced_body_over_the_limit_is_not_read(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    def huge(seen: Seen, tls: ssl.SSLSocket) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 2147483648\r\n\r\n{")
        peer.wait_closing()

    peer = serve(huge)
    fails(snapshot(peer, ""), "the answer for server version is over 4096 bytes (2147483648 bytes announced)")


def test_an_endless_chunked_body_stops_at_the_limit(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    def endless(seen: Seen, tls: ssl.SSLSocket) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n")
        chunk = b"[" * 1024
        while not peer.closing.is_set():
            tls.sendall(b"%x\r\n%s\r\n" % (len(chunk), chunk))

    peer = serve(endless)
    fails(snapshot(peer, ""), "the answer for server version is over 4096 bytes")


def test_a_trickling_body_stops_at_the_deadline(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    def trickle(seen: Seen, tls: ssl.SSLSocket) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 4000\r\n\r\n")
        while not peer.closing.wait(0.05):  # one byte every 50 ms: each read returns before its timeout
            tls.sendall(b" ")

    peer = serve(trickle)
    fails(snapshot(peer, ""), "the answer for server version took over 1s to arrive")


def test_trickling_headers_stop_at_the_deadline(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    def trickle(seen: Seen, tls: ssl.SSLSocket) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nX-Slow: ")
        while not peer.closing.wait(0.05):  # a header that never ends, one byte every 50 ms
            tls.sendall(b"x")

    peer = serve(trickle)
    began = time.monotonic()
    fails(snapshot(peer, ""), "the answer for server version did not begin within 1s")
    assert time.monotonic() - began < 5
    assert paths(peer) == ["/version"]


# ---------------------------------------------------------------- malformed answers


@pytest.mark.parametrize(("body", "message"), [
    (b'{"gitVersion": "v1', "the answer for server version is not a JSON object"),
    (b"<html>hello</html>", "the answer for server version is not a JSON object"),
    (b"[" * 100_000 + b"]" * 100_000, "the answer for server version is not a JSON object"),  # RecursionError
])
def test_malformed_and_deeply_nested_json(serve: Callable[[Behaviour], Peer], snapshot: Run, body: bytes,
                                          message: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client, "MAX_RESPONSE_BYTES", 1024 * 1024)
    peer = serve(lambda seen, tls: answer(tls, 200, raw=body))
    fails(snapshot(peer, ""), message)
    assert paths(peer) == ["/version"]


def test_a_truncated_body(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    def truncated(seen: Seen, tls: ssl.SSLSocket) -> None:
        tls.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"git")

    peer = serve(truncated)
    fails(snapshot(peer, ""), f"Kubernetes API at {peer.url()}: a broken answer for server version",
          "5 bytes read, 995 more expected")


@pytest.mark.parametrize(("head", "message"), [
    (b"HTTP/1.1 two hundred OK\r\n\r\n", "a broken answer for server version"),
    (b"SPDY/9 200\r\n\r\n", "a broken answer for server version"),
    (b"HTTP/1.1 200 OK\r\n" + b"".join(b"X-%d: x\r\n" % n for n in range(150)) + b"\r\n",
     "got more than 100 headers"),
    (b"HTTP/1.1 200 OK\r\nX-Long: " + b"x" * 70_000 + b"\r\n\r\n", "a broken answer for server version"),
])
def test_malformed_status_lines_and_headers(serve: Callable[[Behaviour], Peer], snapshot: Run, head: bytes,
                                            message: str) -> None:
    peer = serve(lambda seen, tls: tls.sendall(head))
    fails(snapshot(peer, ""), message, "check that the server is a Kubernetes API server")
    assert paths(peer) == ["/version"] * 2  # urllib3 retries a broken read of a GET once


def test_a_stall_after_the_request_is_a_read_timeout(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    peer = serve(lambda seen, tls: peer.wait_closing())
    began = time.monotonic()
    fails(snapshot(peer, ""), f"Kubernetes API at {peer.url()}: no answer within 0.5s (server version)")
    assert time.monotonic() - began < 5
    assert paths(peer) == ["/version"] * 2


# ---------------------------------------------------------------- credentials


def test_a_redirect_to_another_host_never_carries_the_token(serve: Callable[[Behaviour], Peer],
                                                           snapshot: Run) -> None:
    elsewhere = serve(normal)

    def redirect(seen: Seen, tls: ssl.SSLSocket) -> None:
        answer(tls, 307, {}, headers={"Location": f"{elsewhere.url('localhost')}{seen.path}"})

    peer = serve(redirect)
    assert snapshot(peer, "").code == 0
    assert bearers(peer) == {f"Bearer {TOKEN}"}
    assert paths(elsewhere) == ["/version", *LISTS]
    assert bearers(elsewhere) == {None}


def test_a_redirect_loop_stops(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    peer = serve(lambda seen, tls: answer(tls, 302, {}, headers={"Location": seen.path}))
    fails(snapshot(peer, ""), f"cannot reach the Kubernetes API at {peer.url()}: ", "too many redirects")
    assert paths(peer) == ["/version"] * 4  # the first request and REDIRECTS more


def test_a_server_echoing_the_token_does_not_get_it_printed(serve: Callable[[Behaviour], Peer],
                                                           snapshot: Run) -> None:
    def echo(seen: Seen, tls: ssl.SSLSocket) -> None:
        answer(tls, 401, {"kind": "Status", "message": f"token {seen.headers.get('authorization')} is not valid"})

    peer = serve(echo)
    fails(snapshot(peer, ""), "unauthorized (401) for server version: token Bearer <redacted> is not valid")


def test_a_long_status_message_is_cut(serve: Callable[[Behaviour], Peer], snapshot: Run) -> None:
    peer = serve(lambda seen, tls: answer(tls, 500, {"kind": "Status", "message": "x" * 2000 + "\n::error::x"}))
    result = snapshot(peer, "")
    fails(result, "HTTP 500 for server version: " + "x" * client.MAX_MESSAGE_CHARS + "...")
    assert "::error" not in result.err


# ---------------------------------------------------------------- what the answers hold


def test_a_helm_release_nested_too_deep_is_skipped(serve: Callable[[Behaviour], Peer], snapshot: Run,
                                                   tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    release = base64.b64encode(base64.b64encode(b"[" * 100_000 + b"]" * 100_000)).decode()
    secret = {"metadata": {"name": "sh.helm.release.v1.x.v1", "namespace": "default"}, "type": "helm.sh/release.v1",
              "data": {"release": release}}

    def deep(seen: Seen, tls: ssl.SSLSocket) -> None:
        if seen.path.startswith("/api/v1/secrets"):
            answer(tls, 200, {**EMPTY_LIST, "items": [secret]})
        else:
            normal(seen, tls)

    peer = serve(deep)
    monkeypatch.setattr(client, "MAX_RESPONSE_BYTES", 1024 * 1024)
    result = snapshot(peer, str(tmp_path / "out.yaml"))
    assert result.code == 0, result
    assert "helm" not in {s["subtype"] for m in yaml.safe_load((tmp_path / "out.yaml").read_text())["measurements"]
                          for s in m["subtypes"]}


@pytest.mark.parametrize("state", ["full", "read-only"])
def test_a_snapshot_on_a_full_or_read_only_disk(serve: Callable[[Behaviour], Peer], tmp_path: Path,
                                                tls_files: tuple[Path, Path], state: str) -> None:
    """A tmpfs mounted in a mount namespace of the aicr-gen process: full, or read-only."""
    import subprocess
    import sys

    from tests.hostile.test_limits import mounted

    peer = serve(normal)
    mount = tmp_path / "mnt"
    config = kubeconfig(tmp_path, peer, tls_files[0])
    done = subprocess.run([*mounted(mount, state), sys.executable, "-m", "aicr_gen", "snapshot", "--kubeconfig",
                           config, "-o", str(mount / "snapshots" / "s.yaml")],
                          capture_output=True, text=True, check=False, timeout=60)
    target = mount / "snapshots" / "s.yaml"
    said = {"full": f"-o {target}: cannot write: No space left on device",
            "read-only": f"-o {target}: cannot create folder {target.parent}: Read-only file system"}[state]
    assert (done.returncode, done.stderr) == (2, f"aicr-gen: error: {said}\n"), done
    assert TOKEN not in done.stdout + done.stderr
    assert paths(peer) == ["/version", *LISTS]


def test_the_page_cap_on_the_real_api_server(control_plane: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Real continue tokens: N namespaces in pages of one fit in N pages, not in N - 1."""
    from aicr_gen.edges.kube.client import connect
    from aicr_gen.errors import UnreachableError

    without_proxies(monkeypatch)
    monkeypatch.setattr(client, "PAGE_SIZE", 1)
    with connect(str(control_plane.kubeconfig)) as cluster:
        count = len(cluster.list_items("/api/v1/namespaces", "namespace list"))
        assert count >= 4  # default, kube-node-lease, kube-public, kube-system
        monkeypatch.setattr(client, "MAX_PAGES", count)
        assert len(cluster.list_items("/api/v1/namespaces", "namespace list")) == count
        monkeypatch.setattr(client, "MAX_PAGES", count - 1)
        with pytest.raises(UnreachableError, match=f"the namespace list goes on past {count - 1} pages of 1"):
            cluster.list_items("/api/v1/namespaces", "namespace list")
