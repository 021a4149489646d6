"""Hostile registries, token services and chart repositories on loopback against ``mirror lock`` / ``mirror
verify`` (and the ``--vendor-charts`` index read that shares their transport).

Each peer is a real socket server on a loopback address (``127.0.0.2`` and other ports play "another host")
that records every request it gets. Every case asserts the exit code and the message, that no secret (the
password, its Basic form, a token) reached an output, a file or a host it does not belong to, and what was
contacted; no case waits on a sleep: the timing limits are module constants made small here."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from aicr_gen.cli.main import main
from aicr_gen.edges import registry, transport
from tests.conftest import ROOT
from tests.mirror.test_inventory import _spec

USER, SECRET = "site-robot", "s3cr3t-Pa55word"
BASIC = "Basic " + base64.b64encode(f"{USER}:{SECRET}".encode()).decode()
TOKEN = "tok.en-0123456789"
FIRST_CHART = "/v2/charts/agentgateway-crds/manifests/v1.3.1"


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-case names."""


Answer = bytes | Callable[[socket.socket], None]


@dataclass
class Peer:
    """A loopback HTTP peer: each request (one per connection) answered with what ``script`` returns, raw bytes
    or a function writing to the socket; every request recorded in ``seen``."""

    script: Callable[[Request], Answer]
    host: str = "127.0.0.1"
    tls: ssl.SSLContext | None = None
    seen: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._server = socket.create_server((self.host, 0))
        self.address = f"{self.host}:{self._server.getsockname()[1]}"
        self.url = f"{'https' if self.tls else 'http'}://{self.address}"
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            conn.settimeout(10)
            data = b""
            try:
                if self.tls is not None:
                    conn = self.tls.wrap_socket(conn, server_side=True)
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head = data.partition(b"\r\n\r\n")[0].decode("latin-1").split("\r\n")
                method, path, _ = head[0].split(" ", 2)
                headers = {name.strip().lower(): value.strip()
                           for name, _, value in (line.partition(":") for line in head[1:])}
                request = Request(method, path, headers)
                self.seen.append(request)
                out = self.script(request)
                if callable(out):
                    out(conn)
                else:
                    conn.sendall(out)
            except OSError:
                pass

    def close(self) -> None:
        self._server.close()

    def authorizations(self) -> list[str]:
        return [request.headers["authorization"] for request in self.seen if "authorization" in request.headers]


def answer(status: int, headers: dict[str, str] | None = None, body: bytes = b"", *,
           length: int | None = None) -> bytes:
    lines = [f"HTTP/1.1 {status} X", f"Content-Length: {len(body) if length is None else length}",
             "Connection: close", *(f"{name}: {value}" for name, value in (headers or {}).items())]
    return ("\r\n".join(lines) + "\r\n\r\n").encode() + body


def digest_of(path: str) -> str:
    return "sha256:" + hashlib.sha256(path.encode()).hexdigest()


def manifest(request: Request) -> bytes:
    """A registry holding every manifest asked for (its digest derived from the path)."""
    return answer(200, {"Docker-Content-Digest": digest_of(request.path)})


def challenged(scheme: str, realm: str = "", token: str = TOKEN, then: Callable[[Request], Answer] = manifest
               ) -> Callable[[Request], Answer]:
    """A registry asking for ``Basic`` (the user's credentials) or ``Bearer`` (``token``, from ``realm``)."""
    def script(request: Request) -> Answer:
        wanted = BASIC if scheme == "Basic" else f"Bearer {token}"
        if request.headers.get("authorization") == wanted:
            return then(request)
        challenge = 'Basic realm="site"' if scheme == "Basic" else f'Bearer realm="{realm}",service="site"'
        return answer(401, {"WWW-Authenticate": challenge})
    return script


def token_service(token: str = TOKEN) -> Callable[[Request], Answer]:
    def script(request: Request) -> Answer:
        if request.headers.get("authorization") != BASIC:
            return answer(401)
        return answer(200, {"Content-Type": "application/json"}, json.dumps({"token": token}).encode())
    return script


@pytest.fixture
def peers() -> Iterator[Callable[..., Peer]]:
    started: list[Peer] = []

    def start(script: Callable[[Request], Answer], host: str = "127.0.0.1",
              tls: ssl.SSLContext | None = None) -> Peer:
        started.append(Peer(script, host, tls))
        return started[-1]

    yield start
    for peer in started:
        peer.close()


@pytest.fixture(autouse=True)
def _small_limits(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Limits small enough for a fast suite (the rules are the same); no docker config of the machine's."""
    monkeypatch.setattr(transport, "DEADLINE", 5.0)
    monkeypatch.setattr(transport, "READ_TIMEOUT", 2.0)
    monkeypatch.setattr(transport, "CONNECT_TIMEOUT", 2.0)
    monkeypatch.setattr(transport, "BACKOFF", 0.01)
    monkeypatch.setattr(transport, "RETRIES", 2)
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker-config"))
    for name in (registry.USER_ENV, registry.PASSWORD_ENV, "HTTP_PROXY", "HTTPS_PROXY", "http_proxy",
                 "https_proxy"):
        monkeypatch.delenv(name, raising=False)


@dataclass
class Site:
    folder: Path
    spec: Path
    config: Path
    """A docker config.json with the user's credentials for the registry (outside ``folder``)."""


def site(tmp_path: Path, registry_peer: Peer) -> Site:
    folder = tmp_path / "site"
    folder.mkdir()
    spec = _spec(folder, mirror={"charts": f"oci://{registry_peer.address}/charts",
                                 "images": f"{registry_peer.address}/mirror"}, deployers=["helm"])
    config = tmp_path / "creds" / "config.json"
    config.parent.mkdir()
    config.write_text(json.dumps({"auths": {registry_peer.address: {
        "auth": base64.b64encode(f"{USER}:{SECRET}".encode()).decode()}}}))
    return Site(folder, spec, config)


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    assert "internal error" not in err and "Traceback" not in err, err
    return code, out, err


def assert_no_secret(*texts: str, folder: Path | None = None) -> None:
    """Neither the password, its Basic form nor the token in ``texts`` or any file under ``folder``."""
    secrets = (SECRET, BASIC.split()[1], TOKEN)
    for text in texts:
        assert not any(secret in text for secret in secrets), text
    for path in folder.rglob("*") if folder is not None else ():
        if path.is_file():
            data = path.read_bytes()
            assert not any(secret.encode() in data for secret in secrets), path


def lock(capsys: pytest.CaptureFixture[str], where: Site, *extra: str) -> tuple[int, str, str]:
    return run(capsys, "mirror", "lock", str(where.spec), "--registry-config", str(where.config), *extra)


# ----------------------------------------------------------------------------- credentials where they belong


@pytest.mark.parametrize("scheme", ["Basic", "Bearer"])
@pytest.mark.parametrize("elsewhere", ["127.0.0.2", "127.0.0.1"])  # another host; the same host, another port
def test_a_redirect_to_another_origin_never_carries_the_credentials(
        scheme: str, elsewhere: str, peers: Callable[..., Peer], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    other = peers(manifest, elsewhere)

    def moved(request: Request) -> Answer:
        return answer(307, {"Location": f"{other.url}{request.path}"})

    tokens = peers(token_service())  # the registry's host, another port
    reg = peers(challenged(scheme, f"{tokens.url}/token", then=moved))
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where)
    assert code == 0, err
    assert other.seen and other.authorizations() == []  # followed, without the Authorization header
    assert set(reg.authorizations()) == {BASIC if scheme == "Basic" else f"Bearer {TOKEN}"}
    locked = yaml.safe_load((where.folder / "spec.lock.yaml").read_text())
    assert locked["charts"][0]["digest"] == digest_of(FIRST_CHART)
    assert_no_secret(out, err, folder=where.folder)


def test_basic_credentials_never_go_to_a_token_realm_on_another_host_over_plain_http(
        peers: Callable[..., Peer], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = peers(token_service(), "127.0.0.2")
    reg = peers(challenged("Bearer", f"{tokens.url}/token"))
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where)
    assert code == 3, err
    assert f"the token realm {tokens.url}/token is plain http on another host; the credentials are not sent" in err
    assert tokens.seen == [] and reg.authorizations() == []
    assert not (where.folder / "spec.lock.yaml").exists()
    assert_no_secret(out, err, folder=where.folder)


def test_a_token_realm_on_the_registry_host_gets_them_and_the_token_is_reused(
        peers: Callable[..., Peer], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = peers(token_service())  # 127.0.0.1, another port: the registry's host
    reg = peers(challenged("Bearer", f"{tokens.url}/token"))
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where)
    assert code == 0, err
    scopes = [request.path for request in tokens.seen]
    assert scopes and len(scopes) == len(set(scopes))  # one token per repository, each once
    assert all(request.headers["authorization"] == BASIC for request in tokens.seen)
    assert_no_secret(out, err, folder=where.folder)


def test_only_the_mirror_host_is_contacted_whatever_the_lock_names(
        peers: Callable[..., Peer], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(challenged("Basic"))
    evil = peers(manifest, "127.0.0.2")
    where = site(tmp_path, reg)
    assert lock(capsys, where)[0] == 0
    path = where.folder / "spec.lock.yaml"
    data = yaml.safe_load(path.read_text())
    data["images"][1]["reference"] = data["images"][1]["reference"].replace(reg.address, evil.address)
    path.write_text(yaml.safe_dump(data))
    contacted = len(reg.seen)
    code, out, err = run(capsys, "mirror", "verify", str(where.spec), "--registry-config", str(where.config))
    assert code == 2, err
    assert f"images[1].reference '{evil.address}/mirror/" in err and "is not on the lock's mirror" in err
    assert evil.seen == [] and len(reg.seen) == contacted
    assert_no_secret(out, err, folder=where.folder)


@pytest.mark.parametrize(("kind", "reference"), [
    ("images", "{host}/mirror/../../../../admin:v1"),
    ("images", "{host}/mirror/x:v1@sha256:../../admin"),
    ("charts", "oci://{host}/charts/../../../../admin/x:1.0"),
    ("charts", "oci://{host}/charts/x"),
])
def test_a_lock_reference_outside_the_grammar_is_refused_before_any_request(
        kind: str, reference: str, peers: Callable[..., Peer], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(manifest)
    where = site(tmp_path, reg)
    assert lock(capsys, where)[0] == 0
    path = where.folder / "spec.lock.yaml"
    data = yaml.safe_load(path.read_text())
    data[kind][0]["reference"] = reference.format(host=reg.address)
    path.write_text(yaml.safe_dump(data))
    contacted = len(reg.seen)
    code, _, err = run(capsys, "mirror", "verify", str(where.spec))
    assert code == 2, err
    assert "spec.lock.yaml:" in err and f"{kind}[0].reference" in err
    assert len(reg.seen) == contacted


def test_the_client_refuses_a_path_out_of_v2_and_a_host_it_was_not_given(peers: Callable[..., Peer]) -> None:
    from aicr_gen.errors import InvalidInputError

    reg = peers(manifest)
    client = registry.Client().only({reg.address})
    for repository, reference in (("../../admin", "v1"), ("mirror/x", "../../../admin"), ("mirror/x", "a/b"),
                                  ("Mirror/x", "v1"), ("mirror/x", "sha256:zz")):
        with pytest.raises(InvalidInputError):
            client.resolve(reg.address, repository, reference)
    with pytest.raises(InvalidInputError, match="not a host of the spec's mirror"):
        client.resolve("127.0.0.2:5000", "mirror/x", "v1")
    assert reg.seen == []
    assert client.resolve(reg.address, "mirror/x", "v1") == digest_of("/v2/mirror/x/manifests/v1")
    assert [request.path for request in reg.seen] == ["/v2/mirror/x/manifests/v1"]


def test_a_lock_that_is_a_symlink_out_of_the_repository_is_refused(
        peers: Callable[..., Peer], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(manifest)
    where = site(tmp_path, reg)
    subprocess.run(["git", "init", "-q", str(where.folder)], check=True)
    assert lock(capsys, where)[0] == 0
    outside = tmp_path / "outside.lock.yaml"
    (where.folder / "spec.lock.yaml").rename(outside)
    (where.folder / "spec.lock.yaml").symlink_to(outside)
    contacted = len(reg.seen)
    code, _, err = run(capsys, "mirror", "verify", str(where.spec))
    assert code == 2, err
    message = f"spec.lock.yaml: a symlink to {outside}, out of {where.folder}"
    assert message in err
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.mirror.pin import site_pins
    from aicr_gen.spec.load import load_spec
    with pytest.raises(InvalidInputError, match="out of"):  # nor does sync pin from it
        site_pins(load_spec(where.spec))
    assert len(reg.seen) == contacted and (where.folder / "spec.lock.yaml").is_symlink()


def test_a_lock_that_is_no_regular_file_or_too_large_is_refused(peers: Callable[..., Peer], tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    from aicr_gen.mirror import lock as lock_module

    reg = peers(manifest)
    where = site(tmp_path, reg)
    assert lock(capsys, where)[0] == 0
    monkeypatch.setattr(lock_module, "LOCK_LIMIT", 100)
    code, _, err = run(capsys, "mirror", "verify", str(where.spec))
    assert code == 2 and "spec.lock.yaml: not a regular file of at most 100 bytes" in err
    path = where.folder / "spec.lock.yaml"
    path.unlink()
    os.mkfifo(path)  # a reader that would block forever
    code, _, err = run(capsys, "mirror", "verify", str(where.spec))
    assert code == 2 and "spec.lock.yaml: not a regular file" in err


# ------------------------------------------------------------------------------------- secrets never printed


@pytest.mark.parametrize("text", [f"http://{USER}:{SECRET}@127.0.0.1:5000",
                                  f"127.0.0.1:5000=https://{USER}:{SECRET}@registry.site.example"])
def test_a_registry_url_with_credentials_is_refused_and_redacted(text: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, mirror={"charts": "oci://127.0.0.1:5000/charts", "images": "127.0.0.1:5000/mirror"},
                 deployers=["helm"])
    code, out, err = run(capsys, "mirror", "lock", str(spec), "--registry", text)
    assert code == 2, err
    assert f"{USER}:xxxxx@" in err and "credentials in the URL are not sent" in err
    assert_no_secret(out, err, folder=tmp_path)


def test_a_spec_mirror_with_credentials_is_refused_unprinted(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, mirror={"charts": f"oci://{USER}:{SECRET}@127.0.0.1:5000/charts",
                                   "images": f"{USER}:{SECRET}@127.0.0.1:5000/mirror"}, deployers=["helm"])
    for command in (["mirror", "lock"], ["mirror", "list"], ["lint"]):
        code, out, err = run(capsys, *command, str(spec))
        assert code == 2, err
        assert "spec.mirror.charts: image mirror: credentials (USER:PASSWORD@) do not belong" in out + err
        assert_no_secret(out, err)


def test_plain_http_to_a_host_that_is_not_loopback_needs_insecure(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    spec = _spec(tmp_path, mirror={"charts": "oci://192.0.2.1:5000/charts", "images": "192.0.2.1:5000/mirror"},
                 deployers=["helm"])
    code, _, err = run(capsys, "mirror", "lock", str(spec), "--registry", "http://192.0.2.1:5000")
    assert code == 2, err
    assert "plain http to a host that is not loopback; use https (or, for a registry without TLS, --insecure)" in err


def _cli(args: list[str], stdin: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "aicr_gen", *args], input=stdin, capture_output=True, text=True,
                          check=False, timeout=60, env={**os.environ, "PYTHONPATH": str(ROOT), **env})


@pytest.mark.parametrize("password", [f"{SECRET}\r\nX-Injected: 1", f"{SECRET}\nmore", f"{SECRET}\x1b[2K"])
def test_a_password_with_a_line_break_is_refused_unprinted(password: str, peers: Callable[..., Peer],
                                                           tmp_path: Path) -> None:
    reg = peers(challenged("Basic"))
    where = site(tmp_path, reg)
    env = {"DOCKER_CONFIG": str(tmp_path / "none")}
    stdin = _cli(["mirror", "lock", str(where.spec), "--username", USER, "--password-stdin"], password + "\n", env)
    from_env = _cli(["mirror", "lock", str(where.spec)], "",
                    {**env, registry.USER_ENV: USER, registry.PASSWORD_ENV: password})
    for done, where_from in ((stdin, "--password-stdin"), (from_env, registry.USER_ENV)):
        assert done.returncode == 2, done.stderr
        assert f"{where_from}" in done.stderr and "the password has a control character (CR, LF) inside" in \
            done.stderr
        assert_no_secret(done.stdout, done.stderr)
    assert reg.seen == []
    assert_no_secret(folder=where.folder)


def bearer_on(peer: Peer, token: str = TOKEN, service: Callable[[Request], Answer] | None = None) -> None:
    """``peer`` as a registry asking for Bearer ``token`` from the token service it also is (at /token)."""
    challenge, tokens = challenged("Bearer", f"{peer.url}/token", token=token), service or token_service(token)
    peer.script = lambda request: tokens(request) if request.path.startswith("/token") else challenge(request)


@pytest.mark.parametrize("token", ["tok\r\nX-Injected: 1", "tok en", 'tok"en', ""])
def test_a_token_that_is_not_a_bearer_token_is_refused_unprinted(token: str, peers: Callable[..., Peer],
                                                                 tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(manifest)
    bearer_on(reg, token)
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where)
    assert code == 3, err
    assert ("returned no token" if not token else "a token with characters a Bearer token cannot have") in err
    assert "X-Injected" not in err and "tok en" not in err and 'tok"en' not in err
    assert all(value == BASIC for value in reg.authorizations())  # the token never went into a header
    assert_no_secret(out, err, folder=where.folder)


@pytest.mark.parametrize(("content", "message"), [
    ("[]", "the file is not a mapping"),
    ('{"auths": []}', "auths is not a mapping"),
    ('{"auths": {"HOST": "dXNlcjpwYXNz"}}', "auths.HOST is not a mapping"),
    ('{"auths": {"HOST": {"auth": "%%%not base64"}}}', "auths.HOST.auth is not the base64 of user:password"),
    ('{"auths": {"HOST": {"auth": "' + base64.b64encode(b"no-colon").decode() + '"}}}',
     "auths.HOST.auth is not the base64 of user:password"),
    ('{"auths": {"HOST": {"auth": 42}}}', "auths.HOST.auth is not the base64 of user:password"),
    ('{"auths": {"HOST": {"auth": "' + base64.b64encode(f"{USER}:{SECRET}\r\nX: 1".encode()).decode() + '"}}}',
     "auths.HOST.auth: the password has a control character"),
    ('{"auths": {"HOST": {"username": ["x"], "password": "p"}}}', "username and password must be strings"),
    ("[" * 100_000 + "]" * 100_000, "not JSON, or nested too deeply"),
    ("{not json", "not JSON, or nested too deeply"),
])
def test_a_docker_config_of_the_wrong_shape_is_one_clear_message(content: str, message: str,
                                                                 peers: Callable[..., Peer], tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(manifest)
    where = site(tmp_path, reg)
    where.config.write_text(content.replace("HOST", reg.address))
    code, out, err = lock(capsys, where)
    assert code == 2, err
    assert f"--registry-config {where.config}" in err and message.replace("HOST", reg.address) in err
    assert reg.seen == []
    assert_no_secret(out, err, folder=where.folder)


# -------------------------------------------------------------------------------- peers that hang or misbehave


@pytest.fixture
def _one_second(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(transport, "DEADLINE", 1.0)
    monkeypatch.setattr(transport, "READ_TIMEOUT", 0.5)


def _first_chart(then: Callable[[Request], Answer]) -> Callable[[Request], Answer]:
    """A registry without Docker-Content-Digest on HEAD (so the manifest is read) answering the GET with
    ``then``."""
    return lambda request: answer(200) if request.method == "HEAD" else then(request)


def _trickle(head: bytes, step: float) -> Callable[[socket.socket], None]:
    def write(conn: socket.socket) -> None:
        conn.sendall(head)
        for _ in range(10_000):
            conn.sendall(b"x")
            time.sleep(step)
    return write


def _endless_chunks(conn: socket.socket) -> None:
    conn.sendall(b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n")
    chunk = b"%x\r\n%s\r\n" % (65536, b"{" * 65536)
    for _ in range(100_000):
        conn.sendall(chunk)


def _silent(conn: socket.socket) -> None:
    conn.recv(1)  # until the client gives up


@pytest.mark.parametrize(("script", "message"), [
    (_first_chart(lambda request: answer(200, body=b"{}", length=2 * 1024 ** 3)),
     "announces a 2147483648-byte body, over the 4194304-byte limit; not read"),
    (_first_chart(lambda request: _endless_chunks), "a body of more than 4194304 bytes; cut off there"),
    (_first_chart(lambda request: answer(200, body=b"{}", length=100)), "a body cut short"),
    (_first_chart(lambda request: answer(200, {"Content-Encoding": "gzip"}, b"\x1f\x8b")),
     "a body in Content-Encoding 'gzip', which was not asked for"),
    (lambda request: b"HTTP/1.1 two hundred OK\r\n\r\n", "a malformed status line"),
    (lambda request: b"SSH-2.0-OpenSSH_9.6\r\n\r\n", "a malformed status line"),
    (lambda request: b"HTTP/1.1 200 OK\r\n" + b"X-Pad: 1\r\n" * 150 + b"\r\n", "more than 100 header lines"),
    (lambda request: b"HTTP/1.1 200 OK\r\nX-Pad: " + b"a" * 70_000 + b"\r\n\r\n", "a status or header line over"),
    (lambda request: b"", "the connection closed (or was reset) before a complete answer"),
    (lambda request: _trickle(b"HTTP/1.1 200 OK\r\nX-Slow: ", 0.05), "timed out: no complete answer within the "
     "1-second deadline"),
    (_first_chart(lambda request: _trickle(b"HTTP/1.1 200 OK\r\nContent-Length: 999999\r\n\r\n", 0.05)),
     "timed out: no complete answer within the 1-second deadline"),
    (lambda request: _silent, "timed out"),
    (lambda request: answer(302, {"Location": request.path}), "more than 10 redirects"),
    (lambda request: answer(302, {"Location": "http://192.0.2.1/v2/"}),
     "redirected to 'http://192.0.2.1/v2/': plain http to a host that is not loopback"),
    (lambda request: answer(302, {"Location": f"http://{USER}:{SECRET}@127.0.0.2/v2/"}),
     f"redirected to 'http://{USER}:xxxxx@127.0.0.2/v2/': credentials in a URL are not sent"),
    (lambda request: answer(429, {"Retry-After": "3600"}),
     "answered 429 and asks to retry after 3600 s, past the 1-second deadline"),
    (lambda request: answer(503), "HEAD charts/agentgateway-crds manifest v1.3.1 answered 503"),
])
@pytest.mark.usefixtures("_one_second")
def test_a_misbehaving_registry_is_one_clear_message_exit_3_and_quick(
        script: Callable[[Request], Answer], message: str, peers: Callable[..., Peer], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(challenged("Basic", then=script))
    where = site(tmp_path, reg)
    started = time.monotonic()
    code, out, err = lock(capsys, where)
    assert code == 3, err
    assert message in err, err
    assert err.count("\n") == 1 and err.startswith("aicr-gen: error: registry")
    assert time.monotonic() - started < 8
    assert not (where.folder / "spec.lock.yaml").exists()
    assert_no_secret(out, err, folder=where.folder)
    assert {request.path.split("?")[0] for request in reg.seen} <= {FIRST_CHART, "/v2/"}


@pytest.mark.usefixtures("_one_second")
def test_headers_cut_off_at_the_deadline_are_no_answer(peers: Callable[..., Peer], tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """The watch ends a trickled header block: what came before it is not taken for a (digest-less) answer."""
    reg = peers(lambda request: _trickle(b"HTTP/1.1 200 OK\r\nX-Slow: ", 0.05))
    code, _, err = lock(capsys, site(tmp_path, reg))
    assert code == 3 and "timed out: no complete answer within the 1-second deadline" in err
    assert [request.method for request in reg.seen] == ["HEAD"]


def test_429_and_503_are_retried_as_retry_after_asks_then_succeed(peers: Callable[..., Peer], tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    refusals = iter([answer(429, {"Retry-After": "0"}), answer(503, {"Retry-After": "0"})])
    reg = peers(lambda request: next(refusals, None) or manifest(request))
    where = site(tmp_path, reg)
    code, _, err = lock(capsys, where)
    assert code == 0, err
    assert [request.path for request in reg.seen[:3]] == [FIRST_CHART] * 3
    assert len(reg.seen) == 23 + 2


def test_503_forever_is_retried_a_bounded_number_of_times(peers: Callable[..., Peer], tmp_path: Path,
                                                          capsys: pytest.CaptureFixture[str]) -> None:
    reg = peers(lambda request: answer(503))
    where = site(tmp_path, reg)
    code, _, err = lock(capsys, where)
    assert code == 3 and "answered 503" in err
    assert len(reg.seen) == 1 + transport.RETRIES


def test_a_deeply_nested_token_answer_is_no_token(peers: Callable[..., Peer], tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    reg = peers(manifest)
    bearer_on(reg, service=lambda request: answer(200, body=deep))
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where)
    assert code == 3, err
    assert "returned no token" in err
    assert_no_secret(out, err, folder=where.folder)


# ------------------------------------------------------------------------- the chart index read (--vendor-charts)


def test_the_index_read_sends_url_credentials_to_its_origin_only_and_is_bounded(
        peers: Callable[..., Peer], monkeypatch: pytest.MonkeyPatch) -> None:
    from aicr_gen.errors import InvalidInputError, UnreachableError
    from aicr_gen.mirror import pull

    index = yaml.safe_dump({"apiVersion": "v1", "entries": {"demo": [
        {"version": "1.0.0", "urls": ["https://charts.example.com/demo-1.0.0.tgz"]}]}}).encode()
    other = peers(lambda request: answer(200, body=index), "127.0.0.2")
    repo = peers(lambda request: answer(302, {"Location": f"{other.url}/index.yaml"}))
    _, _, port = repo.address.partition(":")
    monkeypatch.setattr(pull, "check_host", lambda url: None)  # the address policy is tested on its own
    pull._check_index("demo", "1.0.0", f"http://{USER}:{SECRET}@127.0.0.1:{port}")
    assert repo.seen[0].headers["authorization"] == BASIC and other.authorizations() == []
    assert f"{SECRET}" not in repo.seen[0].path
    with pytest.raises(InvalidInputError, match="has credentials over plain http; use https") as refused:
        pull._check_tokens("demo", "demo", "1.0.0", f"http://{USER}:{SECRET}@charts.example.com/", False)
    assert_no_secret(str(refused.value))
    monkeypatch.setattr(pull, "INDEX_LIMIT", 100)
    with pytest.raises(UnreachableError, match="over the 100-byte limit") as err:
        pull._check_index("demo", "1.0.0", f"http://{USER}:{SECRET}@127.0.0.1:{port}")
    assert_no_secret(str(err.value))


# -------------------------------------------------------------------------------------------------------- TLS


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, ssl.SSLContext]:
    """A self-signed certificate for 127.0.0.1 and 127.0.0.2 (the CA file) and a server context with it."""
    import datetime
    import ipaddress

    pytest.importorskip("cryptography", reason="the TLS cases make their certificate with cryptography")
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "aicr-gen test registry")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(hours=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address(address))
                                                        for address in ("127.0.0.1", "127.0.0.2")]), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    folder = tmp_path_factory.mktemp("tls")
    (folder / "ca.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (folder / "key.pem").write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                                       serialization.PrivateFormat.PKCS8,
                                                       serialization.NoEncryption()))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(folder / "ca.pem", folder / "key.pem")
    return folder / "ca.pem", context


def test_https_with_the_site_ca_and_a_token_realm_on_another_https_host(
        certificate: tuple[Path, ssl.SSLContext], peers: Callable[..., Peer], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ca_file, context = certificate
    tokens = peers(token_service(), "127.0.0.2", context)  # another host, over https: it gets the credentials
    reg = peers(challenged("Bearer", f"{tokens.url}/token"), tls=context)
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where, "--registry", reg.url, "--ca-file", str(ca_file))
    assert code == 0, err
    assert tokens.seen and {request.headers["authorization"] for request in tokens.seen} == {BASIC}
    assert set(reg.authorizations()) == {f"Bearer {TOKEN}"}
    assert_no_secret(out, err, folder=where.folder)


def test_a_certificate_the_site_ca_does_not_sign_is_exit_3_before_any_request(
        certificate: tuple[Path, ssl.SSLContext], peers: Callable[..., Peer], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    _, context = certificate
    reg = peers(challenged("Basic"), tls=context)
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where, "--registry", reg.url)
    assert code == 3, err
    assert "TLS failed" in err and "certificate verify failed" in err and "--ca-file" in err
    assert reg.seen == []
    assert_no_secret(out, err, folder=where.folder)


def test_a_redirect_from_https_to_plain_http_drops_the_credentials(
        certificate: tuple[Path, ssl.SSLContext], peers: Callable[..., Peer], tmp_path: Path,
        capsys: pytest.CaptureFixture[str]) -> None:
    ca_file, context = certificate
    plain = peers(manifest)

    def downgraded(request: Request) -> Answer:
        return answer(308, {"Location": f"{plain.url}{request.path}"})

    reg = peers(challenged("Basic", then=downgraded), tls=context)
    where = site(tmp_path, reg)
    code, out, err = lock(capsys, where, "--registry", reg.url, "--ca-file", str(ca_file))
    assert code == 0, err
    assert plain.seen and plain.authorizations() == []
    assert_no_secret(out, err, folder=where.folder)


def test_a_proxy_sees_a_tunnel_request_and_no_credentials_and_loopback_is_never_proxied(
        peers: Callable[..., Peer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    proxy = peers(lambda request: answer(403))
    monkeypatch.setenv("HTTPS_PROXY", proxy.url)
    monkeypatch.setenv("HTTP_PROXY", proxy.url)
    reg = peers(challenged("Basic"))
    where = site(tmp_path, reg)
    assert lock(capsys, where)[0] == 0  # a loopback registry is reached directly
    assert proxy.seen == []
    remote = Site(where.folder, _spec(where.folder, mirror={
        "charts": "oci://registry.site.example:5000/charts", "images": "registry.site.example:5000/mirror"},
        deployers=["helm"]), where.config)
    where.config.write_text(json.dumps({"auths": {"registry.site.example:5000": {
        "auth": base64.b64encode(f"{USER}:{SECRET}".encode()).decode()}}}))
    code, out, err = lock(capsys, remote)
    assert code == 3, err
    assert "the proxy (HTTPS_PROXY/HTTP_PROXY) refused or failed" in err
    assert [(request.method, request.path) for request in proxy.seen] == [("CONNECT", "registry.site.example:5000")]
    assert proxy.authorizations() == []
    assert_no_secret(out, err)
