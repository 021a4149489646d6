"""Helpers for the tests that talk to an API server: kubeconfigs derived from the control plane's, and what the
real server cannot show: a recorded-response HTTPS server on 127.0.0.1 (a redirect to another port, the
credentials a client sends) and a CONNECT proxy."""

from __future__ import annotations

import json
import selectors
import socket
import ssl
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.cluster.envtest import PROXIES, ControlPlane

NOT_FOUND = {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": "not found", "reason": "NotFound",
             "code": 404}


def without_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests to 127.0.0.1 must not go through a proxy the environment names."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)


def derive(plane: ControlPlane, path: Path, *, cluster: Mapping[str, Any] | None = None,
           users: Mapping[str, Mapping[str, Any]] | None = None, **top: Any) -> str:
    """A copy of the control plane's kubeconfig at ``path``: ``cluster`` fields merged into its one cluster (a
    None value removes the field), ``users`` replacing those users' credentials, ``top`` replacing top-level
    fields (``**{"current-context": "cert"}``). Its path as a string."""
    config = yaml.safe_load(plane.kubeconfig.read_text(encoding="utf-8"))
    entry = config["clusters"][0]["cluster"]
    for key, value in (cluster or {}).items():
        entry.pop(key, None) if value is None else entry.__setitem__(key, value)
    for user in config["users"]:
        user["user"] = dict((users or {}).get(user["name"], user["user"]))
    config.update(top)
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return str(path)


def serving_context(plane: ControlPlane) -> ssl.SSLContext:
    """A server-side TLS context with the control plane's own serving certificate (valid for 127.0.0.1)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    certs = plane.ca_file.parent
    context.load_cert_chain(certs / "apiserver.crt", certs / "apiserver.key")
    return context


class Recorder(ThreadingHTTPServer):
    """``routes``: request path (without the query) -> (status, headers, JSON body); ``requests``: what was
    asked (method, path, headers by lower-case name)."""

    routes: dict[str, tuple[int, dict[str, str], Any]]
    requests: list[dict[str, Any]]

    @property
    def url(self) -> str:
        scheme = "https" if isinstance(self.socket, ssl.SSLSocket) else "http"
        return f"{scheme}://127.0.0.1:{self.server_address[1]}"


class _Quiet(BaseHTTPRequestHandler):
    def log_message(self, format: str, *args: Any) -> None:
        return


class _Answer(_Quiet):
    server: Recorder

    def _answer(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        self.rfile.read(length)
        headers = {key.lower(): value for key, value in self.headers.items()}
        self.server.requests.append({"method": self.command, "path": self.path, "headers": headers})
        status, headers, body = self.server.routes.get(self.path.partition("?")[0], (404, {}, NOT_FOUND))
        payload = json.dumps(body).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_PATCH = _answer


def record(context: ssl.SSLContext | None = None) -> Iterator[Recorder]:
    """A recording server on 127.0.0.1 (TLS with ``context``) until the generator is closed."""
    server = Recorder(("127.0.0.1", 0), _Answer)
    server.routes, server.requests = {}, []
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    yield from _running(server)


class Proxy(ThreadingHTTPServer):
    """An HTTP CONNECT proxy; ``targets`` lists the ``host:port`` of every tunnel asked for."""

    targets: list[str]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Tunnel(_Quiet):
    server: Proxy

    def do_CONNECT(self) -> None:
        self.server.targets.append(self.path)
        host, _, port = self.path.rpartition(":")
        with socket.create_connection((host, int(port)), timeout=10) as upstream:
            self.send_response(200, "Connection established")
            self.end_headers()
            with selectors.DefaultSelector() as selector:
                selector.register(self.connection, selectors.EVENT_READ, upstream)
                selector.register(upstream, selectors.EVENT_READ, self.connection)
                while events := selector.select(timeout=10):
                    for key, _ in events:
                        chunk = key.fileobj.recv(65536)  # type: ignore[union-attr]
                        if not chunk:
                            return
                        key.data.sendall(chunk)


def proxy() -> Iterator[Proxy]:
    """A CONNECT proxy on 127.0.0.1 until the generator is closed."""
    server = Proxy(("127.0.0.1", 0), _Tunnel)
    server.targets = []
    yield from _running(server)


def _running(server: ThreadingHTTPServer) -> Iterator[Any]:
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def subtype_data(snapshot: Mapping[str, Any], kind: str, subtype: str) -> dict[str, Any]:
    """The ``data`` of ``kind``'s ``subtype`` in a snapshot."""
    measurement = next(m for m in snapshot["measurements"] if m["type"] == kind)
    return dict(next(s for s in measurement["subtypes"] if s["subtype"] == subtype)["data"])
