"""A fake Kubernetes API server on 127.0.0.1 for the cm:// and capture tests: it serves recorded API
objects by path, answers like the real one (Status objects for 401/404, server-side apply echoes the
object with a uid), and records every request for the tests to inspect."""

from __future__ import annotations

import json
import ssl
import threading
from collections.abc import Iterator, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.yamlio import dump

TOKEN = "test-token"
STATUS = Path(__file__).parent / "fixtures" / "kube"  # status-401.json, status-404.json
PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy")


class FakeApi(ThreadingHTTPServer):
    """``routes``: request path (without the query) -> response body; ``requests``: what was asked."""

    requests: list[dict[str, Any]]
    routes: dict[str, bytes]


class _Handler(BaseHTTPRequestHandler):
    server: FakeApi

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _send(self, code: int, payload: bytes) -> None:
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def _record(self) -> bool:
        length = int(self.headers.get("Content-Length") or 0)
        self.server.requests.append({"method": self.command, "path": self.path, "headers": dict(self.headers),
                                     "body": self.rfile.read(length) if length else b""})
        if self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._send(401, (STATUS / "status-401.json").read_bytes())
            return False
        return True

    def do_GET(self) -> None:
        if self._record():
            payload = self.server.routes.get(self.path.partition("?")[0])
            self._send(200, payload) if payload else self._send(404, (STATUS / "status-404.json").read_bytes())

    def do_PATCH(self) -> None:
        if self._record():
            applied = json.loads(self.server.requests[-1]["body"])
            applied["metadata"].update({"uid": "a1b2c3d4-0000-4000-8000-000000000001", "resourceVersion": "1"})
            self._send(200, json.dumps(applied).encode())


def serve(routes: Mapping[str, bytes], context: ssl.SSLContext | None = None) -> Iterator[FakeApi]:
    """Run a server (TLS with ``context``) until the generator is closed."""
    server = FakeApi(("127.0.0.1", 0), _Handler)
    server.requests = []
    server.routes = dict(routes)
    if context is not None:
        server.socket = context.wrap_socket(server.socket, server_side=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def without_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    """Requests to 127.0.0.1 must not go through a proxy the environment names."""
    for name in PROXIES:
        monkeypatch.delenv(name, raising=False)


def kubeconfig(tmp_path: Path, server: str, user: dict[str, Any] | None = None,
               cluster: dict[str, Any] | None = None) -> str:
    """A kubeconfig file for ``server`` (the token by default), its path as a string."""
    path = tmp_path / "kubeconfig"
    path.write_text(dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "test",
        "clusters": [{"name": "local", "cluster": {"server": server, **(cluster or {})}}],
        "contexts": [{"name": "test", "context": {"cluster": "local", "user": "me"}}],
        "users": [{"name": "me", "user": user if user is not None else {"token": TOKEN}}],
    }), encoding="utf-8")
    return str(path)


def url(server: FakeApi, scheme: str = "http") -> str:
    return f"{scheme}://127.0.0.1:{server.server_address[1]}"


def subtype_data(snapshot: Mapping[str, Any], kind: str, subtype: str) -> dict[str, Any]:
    """The ``data`` of ``kind``'s ``subtype`` in a snapshot."""
    measurement = next(m for m in snapshot["measurements"] if m["type"] == kind)
    return dict(next(s for s in measurement["subtypes"] if s["subtype"] == subtype)["data"])
