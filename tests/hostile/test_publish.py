"""``bundle --output oci://`` against registries that ask for credentials, hand uploads to another host, use a
certificate nobody signed, or store something else than what was pushed: credentials go only to the registry
and its token realm (never to an upload host elsewhere), the push scope is asked for, and every failure is one
message with exit 3 and no secret printed."""

from __future__ import annotations

import base64
import hashlib
import http.server
import json
import ssl
import threading
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.edges import transport
from tests.hostile.test_registry import certificate  # noqa: F401  (the self-signed certificate fixture)

USER, PASSWORD, TOKEN = "ci", "s3cret-pw", "tok.en-123"
BASIC = "Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode()).decode()


@dataclass
class Seen:
    method: str
    path: str
    authorization: str | None
    body: bytes


Handler = Callable[[Seen], tuple[int, dict[str, str], bytes]]


@dataclass
class Server:
    """A loopback HTTP(S) server answering each request (body read whole) with ``handle``; all recorded."""

    handle: Handler
    host: str = "127.0.0.1"
    tls: ssl.SSLContext | None = None
    seen: list[Seen] = field(default_factory=list)

    def __post_init__(self) -> None:
        outer = self

        class _Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                request = Seen(self.command, self.path, self.headers.get("Authorization"), body)
                outer.seen.append(request)
                status, headers, answer = outer.handle(request)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": str(len(answer))}.items():
                    self.send_header(name, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer)

            do_GET = do_HEAD = do_POST = do_PUT = _any

            def log_message(self, *_: Any) -> None:
                pass

        self._httpd = http.server.ThreadingHTTPServer((self.host, 0), _Handler)
        self._httpd.handle_error = lambda *_: None  # type: ignore[method-assign]  # a client that hung up
        if self.tls is not None:
            self._httpd.socket = self.tls.wrap_socket(self._httpd.socket, server_side=True)
        self.address = f"{self.host}:{self._httpd.server_address[1]}"
        self.url = f"{'https' if self.tls else 'http'}://{self.address}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


class Registry:
    """Just enough of a registry to take a push: blobs by upload session, manifests by tag."""

    def __init__(self, *, upload_to: str = "", auth: str = "", realm: str = "",
                 confirm: Callable[[bytes], str] | None = None) -> None:
        self.blobs: dict[str, bytes] = {}
        self.manifests: dict[str, bytes] = {}
        self.upload_to, self.auth, self.realm = upload_to, auth, realm
        self.confirm = confirm or (lambda data: "sha256:" + hashlib.sha256(data).hexdigest())

    def __call__(self, request: Seen) -> tuple[int, dict[str, str], bytes]:
        if self.auth and request.authorization != self.auth and "/uploads/session" not in request.path:
            challenge = (f'Bearer realm="{self.realm}",service="site"' if self.auth.startswith("Bearer")
                         else 'Basic realm="site"')
            return 401, {"WWW-Authenticate": challenge}, b""
        path = request.path.partition("?")[0]
        if request.method == "HEAD" and "/blobs/" in path:
            return (200 if path.rsplit("/", 1)[1] in self.blobs else 404), {}, b""
        if request.method == "POST" and path.endswith("/blobs/uploads/"):
            return 202, {"Location": f"{self.upload_to}{path}session"}, b""
        if request.method == "PUT" and "/uploads/session" in path:
            return self.store(request)
        if request.method == "PUT" and "/manifests/" in path:
            self.manifests[path.rsplit("/", 1)[1]] = request.body
            return 201, {"Docker-Content-Digest": self.confirm(request.body)}, b""
        return 404, {}, b""

    def store(self, request: Seen) -> tuple[int, dict[str, str], bytes]:
        digest = request.path.partition("digest=")[2].replace("%3A", ":")
        if digest != "sha256:" + hashlib.sha256(request.body).hexdigest():
            return 400, {}, b""
        self.blobs[digest] = request.body
        return 201, {}, b""


@pytest.fixture
def servers() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(handle: Handler, host: str = "127.0.0.1", tls: ssl.SSLContext | None = None) -> Server:
        started.append(Server(handle, host, tls))
        return started[-1]

    yield start
    for server in started:
        server.close()


@pytest.fixture
def recipe(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The small recipe's bundle arguments; credentials in the environment, no docker config of the machine's."""
    from tests.bundles import write_recipe

    found = write_recipe(cli, "small", tmp_path / "recipe")
    monkeypatch.setenv("DOCKER_CONFIG", str(tmp_path / "no-docker"))
    monkeypatch.setenv("AICR_GEN_REGISTRY_USERNAME", USER)
    monkeypatch.setenv("AICR_GEN_REGISTRY_PASSWORD", PASSWORD)
    monkeypatch.setattr(transport, "DEADLINE", 10.0)
    monkeypatch.chdir(tmp_path)
    return ["bundle", "-r", str(found.file), *found.catalog, "-d", "helm", "--plain-http"]


def _no_secret(*texts: str) -> None:
    for text in texts:
        assert PASSWORD not in text and BASIC.split()[1] not in text and TOKEN not in text


def test_a_bearer_registry_gets_a_push_token_from_its_realm(cli: Any, recipe: list[str],
                                                           servers: Callable[..., Server]) -> None:
    def tokens(request: Seen) -> tuple[int, dict[str, str], bytes]:
        ok = request.authorization == BASIC and "scope=repository%3Ateam%2Fstack%3Apull%2Cpush" in request.path
        return (200, {}, json.dumps({"token": TOKEN}).encode()) if ok else (401, {}, b"")

    realm = servers(tokens)  # on the registry's host: a plain-http realm elsewhere never gets them
    registry = Registry(auth=f"Bearer {TOKEN}", realm=f"{realm.url}/token")
    site = servers(registry)
    result = cli(*recipe, "-o", f"oci://{site.address}/team/stack:1.0.0")
    assert result.code == 0, result.err
    assert list(registry.manifests) == ["1.0.0"] and len(registry.blobs) == 2
    assert {seen.authorization for seen in realm.seen} == {BASIC}
    assert {seen.authorization for seen in site.seen} <= {None, f"Bearer {TOKEN}"}  # never the password
    _no_secret(result.out, result.err)


def test_an_upload_on_another_host_gets_no_credentials(cli: Any, recipe: list[str],
                                                      servers: Callable[..., Server]) -> None:
    storage_registry = Registry()
    storage = servers(storage_registry, host="127.0.0.2")
    registry = Registry(auth=BASIC, upload_to=storage.url)
    site = servers(registry)
    result = cli(*recipe, "-o", f"oci://{site.address}/team/stack:1.0.0")
    assert result.code == 0, result.err
    assert storage_registry.blobs and all(seen.authorization is None for seen in storage.seen)
    assert BASIC in {seen.authorization for seen in site.seen}
    _no_secret(result.out, result.err)


def test_a_registry_that_stores_something_else_is_exit_3(cli: Any, recipe: list[str],
                                                        servers: Callable[..., Server]) -> None:
    site = servers(Registry(confirm=lambda _: "sha256:" + "0" * 64))
    refs = Path("refs.txt")
    result = cli(*recipe, "-o", f"oci://{site.address}/team/stack:1.0.0", "--image-refs", str(refs))
    assert result.code == 3, result.err
    assert "stored team/stack:1.0.0 as sha256:000" in result.err and not refs.exists()


def test_a_refused_upload_is_exit_3(cli: Any, recipe: list[str], servers: Callable[..., Server]) -> None:
    site = servers(lambda request: (403, {}, b"denied") if request.method == "POST" else (404, {}, b""))
    result = cli(*recipe, "-o", f"oci://{site.address}/team/stack:1.0.0")
    assert result.code == 3 and "403" in result.err and "Traceback" not in result.err, result.err
    _no_secret(result.out, result.err)


def test_a_self_signed_registry_needs_insecure_tls(cli: Any, recipe: list[str], servers: Callable[..., Server],
                                                  certificate: tuple[Path, ssl.SSLContext]) -> None:  # noqa: F811
    """HTTPS, even to a loopback registry, unless --plain-http (AICR's rule)."""
    _, context = certificate
    recipe = [arg for arg in recipe if arg != "--plain-http"]
    registry = Registry(auth=BASIC)
    site = servers(registry, tls=context)
    refused = cli(*recipe, "-o", f"oci://{site.address}/team/stack:1.0.0")
    assert refused.code == 3 and "certificate verify failed" in refused.err, refused.err
    assert not site.seen
    published = cli(*recipe, "-o", f"oci://{site.address}/team/stack:1.0.0", "--insecure-tls")
    assert published.code == 0, published.err
    assert registry.manifests
    _no_secret(refused.out, refused.err, published.out, published.err)
