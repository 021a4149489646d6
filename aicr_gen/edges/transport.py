"""One HTTP exchange with a peer that may be hostile: the transport under the registry client (``mirror lock``
and ``mirror verify``) and the chart-repository index read (``bundle --vendor-charts``).

Rules, as Docker, containerd and ORAS hold them (containerd ``remotes/docker``, Go's ``net/http`` redirect
policy), and what client-go promises for its own requests:

- **Where a request may go.** ``https://`` always (certificates checked against the system's CAs or
  ``ca_file``); plain ``http://`` only to a loopback host (``localhost``, ``127.0.0.0/8``, ``::1``, as
  container runtimes treat it) or when the caller asks for it (``plain_http``, the ``--insecure`` flag). A URL
  with ``user:password@`` is never sent: credentials travel in headers only, and every URL in a message is
  ``redacted``. Every redirect hop is checked by the same rule and by the caller's ``check``.
- **Credentials stay with their origin.** Redirects are followed here, not by urllib3 (at most ``REDIRECTS``),
  so that each hop is seen: the ``Authorization``, ``Proxy-Authorization`` and ``Cookie`` headers are dropped
  the moment a hop leaves the first URL's origin (scheme, host and port), and never come back. A header value
  that is not one line of printable text (a token with CR/LF) is refused, never sent and never printed.
- **Bounded.** A connect timeout (``CONNECT_TIMEOUT``) and a read timeout per socket read (``READ_TIMEOUT``) on
  every exchange, and a total ``deadline`` per ``send`` (``DEADLINE``, redirects and retries included): a
  watchdog shuts the socket down when it passes, so a peer that trickles one byte per read timeout (slow
  loris) is cut off too. Every body read has a byte ``limit``: a ``Content-Length`` over it is refused unread,
  and a body (chunked, endless) that grows past it is cut off. Status lines and headers are bounded by
  ``http.client`` (a line of 64 KiB, 100 header lines); a compressed body is refused (none was asked for).
- **Patient.** An idempotent request (GET, HEAD) answered 429, 502, 503 or 504 is retried up to ``RETRIES``
  times, waiting what ``Retry-After`` asks (seconds or an HTTP date) or an exponential backoff from
  ``BACKOFF`` (at most ``BACKOFF_MAX``), never past the deadline: a wait that would pass it fails at once,
  saying so. Other methods are retried only when the caller says so (``retries``).
- **One clear message.** Every failure of the peer (refused, unresolvable, timed out, TLS, malformed status
  line, too many or too long headers, truncated or oversized body) is an ``UnreachableError`` (exit 3) naming
  the request and what went wrong, never the peer's raw text or a traceback; a URL the caller gives that breaks
  the rules above is an ``InvalidInputError`` (exit 2).

Built on urllib3 (already installed: the ``kubernetes`` client depends on it) rather than ``urllib`` or an OCI
library. urllib3 gives what ``urllib`` lacks: separate connect and read timeouts, bodies streamed
(``preload_content=False``) so a limit is enforced before the bytes are in memory, connection reuse, and
checked TLS with a CA file. The OCI libraries were weighed: ``oras`` (oras-py) would add ``requests`` and its
own dependencies for every user while giving none of the rules above (``requests`` keeps ``Authorization``
across a redirect to the same host name whatever the scheme or port, follows up to 30 redirects, has no total
deadline nor a body limit, and oras-py reads manifests whole); the registry calls aicr-gen needs (HEAD/GET a
manifest, a Bearer token, later pushing a blob and a manifest) are few and are where the risk is, so they stay
here, small and tested against hostile peers. The transport knows nothing of registries: ``registry.py``
builds the OCI requests on it, and a push (POST/PUT with a body) goes through the same ``send``.

This module is one of aicr-gen's IO edges.
"""

from __future__ import annotations

import contextlib
import email.utils
import http.client
import ipaddress
import re
import socket
import ssl
import threading
import time
import urllib.parse
import urllib.request
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from aicr_gen.errors import AicrGenError, InvalidInputError, UnreachableError

CONNECT_TIMEOUT = 10.0
READ_TIMEOUT = 30.0
DEADLINE = 120.0
RETRIES = 4
BACKOFF = 0.5
BACKOFF_MAX = 8.0
REDIRECTS = 10
BODY_LIMIT = 4 * 1024 * 1024
"""Bytes a response body may have unless the caller gives another ``limit``."""

_CHUNK = 64 * 1024
_RETRIED = frozenset({429, 502, 503, 504})
_REDIRECTED = frozenset({301, 302, 303, 307, 308})
_IDEMPOTENT = frozenset({"GET", "HEAD"})
_SENSITIVE = frozenset({"authorization", "proxy-authorization", "cookie"})
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+\Z")
_HEADER_VALUE = re.compile(r"^[\t\x20-\x7e]*\Z")
_URL_TEXT = re.compile(r"^[\x21-\x7e]+\Z")
_BROKEN = (urllib3.exceptions.HTTPError, http.client.HTTPException, OSError, ValueError)
"""What urllib3, http.client, ssl and socket raise for a peer that fails or breaks the protocol."""


@dataclass(frozen=True)
class Response:
    """A final answer (after redirects and retries): status, headers (case-insensitive), the body read within
    its limit (empty for HEAD) and the URL that gave it."""

    status: int
    headers: Mapping[str, str]
    body: bytes
    url: str


def loopback(host: str) -> bool:
    """Whether ``host`` (a host name or address, IPv6 with or without brackets, no port) is this machine."""
    name = host.strip("[]").lower()
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def redacted(url: str) -> str:
    """``url`` with its password (if any) replaced by ``xxxxx``: safe to print."""
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
    except ValueError:
        return "<a malformed URL>"
    if password is None:
        return url
    netloc = f"{parts.username}:xxxxx@{parts.netloc.rpartition('@')[2]}"
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc))


def origin(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of an http(s) URL, the default port filled in."""
    parts = urllib.parse.urlsplit(url)
    return parts.scheme, (parts.hostname or ""), parts.port or (443 if parts.scheme == "https" else 80)


class _Watch:
    """The deadline of one ``send``: when it passes, the socket in use is shut down, so a read blocked on a peer
    that trickles bytes returns at once (a read timeout restarts with every byte; this does not)."""

    current = threading.local()

    def __init__(self, seconds: float) -> None:
        self.expired = False
        self._socket: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(seconds, self._expire)
        self._timer.daemon = True

    def __enter__(self) -> _Watch:
        _Watch.current.watch = self
        self._timer.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._timer.cancel()
        _Watch.current.watch = None

    def use(self, sock: socket.socket) -> None:
        with self._lock:
            self._socket = sock
            if self.expired:
                _shut(sock)

    def _expire(self) -> None:
        with self._lock:
            self.expired = True
            if self._socket is not None:
                _shut(self._socket)


def _shut(sock: socket.socket) -> None:
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)


def _watched(sock: socket.socket) -> None:
    watch: _Watch | None = getattr(_Watch.current, "watch", None)
    if watch is not None:
        watch.use(sock)


class _Connection(HTTPConnection):
    """A connection whose socket the running ``send``'s watch can shut down (new or reused)."""

    raw: socket.socket | None = None

    def _new_conn(self) -> socket.socket:
        self.raw = super()._new_conn()
        _watched(self.raw)
        return self.raw

    def request(self, *args: Any, **kwargs: Any) -> None:
        if self.raw is not None:
            _watched(self.raw)
        super().request(*args, **kwargs)


class _TLSConnection(_Connection, HTTPSConnection):
    pass


class _Pool(HTTPConnectionPool):
    ConnectionCls = _Connection


class _TLSPool(HTTPSConnectionPool):
    ConnectionCls = _TLSConnection


def _retry_after(value: str | None) -> float | None:
    """Seconds a ``Retry-After`` header asks for (delta-seconds or an HTTP date); None when it says nothing
    usable."""
    text = (value or "").strip()
    if text.isdigit():
        return float(text)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when.timestamp() - time.time())


_FAILURES: tuple[tuple[type[BaseException] | tuple[type[BaseException], ...], str], ...] = (
    (ConnectionRefusedError, "cannot reach the host (connection refused)"),
    (urllib3.exceptions.NameResolutionError, "cannot resolve the host name"),
    (http.client.LineTooLong, "a status or header line over 64 KiB"),
    ((http.client.RemoteDisconnected, ConnectionResetError), "the connection closed (or was reset) before a "
     "complete answer"),
    (http.client.BadStatusLine, "a malformed status line (not an HTTP answer)"),
    (http.client.IncompleteRead, "a body cut short (the connection closed before the announced length)"),
    (urllib3.exceptions.NewConnectionError, "cannot reach the host"),
    (urllib3.exceptions.ConnectTimeoutError, f"timed out connecting (no connection within {CONNECT_TIMEOUT:g} s)"),
    ((urllib3.exceptions.ReadTimeoutError, TimeoutError), "timed out waiting for the answer"),
)
"""What a failure in an exception's chain means, the first that matches (urllib3's NewConnectionError is a
ConnectTimeoutError too, so refusals come first)."""


_STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError)


def _causes(err: BaseException) -> list[BaseException]:
    """``err`` and what caused it (urllib3 keeps the cause in ``args[1]`` of a ProtocolError)."""
    causes: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and len(causes) < 10:
        causes.append(current)
        current = current.__cause__ or current.__context__ or (
            current.args[1] if len(current.args) > 1 and isinstance(current.args[1], BaseException) else None)
    return causes


def _peer_failure(err: BaseException) -> str:
    """What went wrong, from urllib3's or http.client's exception, without the peer's own text."""
    causes = _causes(err)
    for kinds, what in _FAILURES:
        if any(isinstance(cause, kinds) for cause in causes):
            return what
    tls = next((cause for cause in causes if isinstance(cause, (urllib3.exceptions.SSLError, ssl.SSLError))), None)
    if tls is not None:
        return f"TLS failed ({str(tls)[:200]}); give the right CA (--ca-file)"
    if any(isinstance(cause, http.client.HTTPException) and "headers" in str(cause) for cause in causes):
        return "more than 100 header lines"
    return f"a malformed or broken answer ({type(causes[-1]).__name__})"


def _proxy_for(url: str) -> str | None:
    """The proxy the environment names for ``url`` (``HTTPS_PROXY``, ``HTTP_PROXY``, ``NO_PROXY``), as urllib
    and Go read them; a loopback host is always reached directly."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    if loopback(host) or urllib.request.proxy_bypass(host):
        return None
    return urllib.request.getproxies_environment().get(parts.scheme)


@dataclass
class Transport:
    """Sends requests by the rules above; keeps connections to the hosts it reached for reuse."""

    label: str
    """What the messages call the peer (``registry``, ``--vendor-charts: repository``)."""
    ca_file: str | None = None
    plain_http: bool = False
    """Plain HTTP to any host (``--insecure``); loopback hosts get it anyway."""
    verify: bool = True
    """Check the peer's TLS certificate (off only for ``bundle --insecure-tls``)."""
    _managers: dict[str | None, urllib3.PoolManager] = field(default_factory=dict, repr=False)

    def check_url(self, url: str, *, peer: str = "") -> None:
        """Refuse a URL the rules above do not allow: a caller's is an input error (exit 2); one a peer gave
        (``peer`` says what it is: a redirect, a token realm) is the peer's failure (exit 3)."""
        error = UnreachableError if peer else InvalidInputError
        where = f"{peer} {redacted(url)[:200]!r}" if peer else f"{self.label}: {redacted(url)}"
        try:
            parts = urllib.parse.urlsplit(url)
            port = parts.port
        except ValueError:
            raise error(f"{where}: not a valid URL") from None
        if not _URL_TEXT.match(url) or parts.scheme not in ("http", "https") or not parts.hostname:
            raise error(f"{where}: not an http(s) URL with a host")
        if parts.username is not None or parts.password is not None:
            raise error(f"{where}: credentials in a URL are not sent; give them as the command's options")
        if port == 0:
            raise error(f"{where}: port 0")
        if parts.scheme == "http" and not (self.plain_http or loopback(parts.hostname)):
            raise error(f"{where}: plain http to a host that is not loopback; use https (or, for a registry "
                        "without TLS, --insecure)")

    def send(self, method: str, url: str, headers: Mapping[str, str] | None = None, body: bytes | None = None,
             *, limit: int = BODY_LIMIT, deadline: float | None = None, retries: int | None = None,
             check: Callable[[str], None] | None = None) -> Response:
        """``method url`` with ``headers`` and ``body``, redirects followed and retries made by the rules above;
        the final answer whatever its status (the caller judges it). ``limit``: bytes the final body may
        have; ``deadline``: seconds for everything (default ``DEADLINE``); ``retries``: how often a 429/5xx
        is retried (default ``RETRIES`` for GET/HEAD, 0 for other methods); ``check``: called with every
        redirect target before it is contacted (raises to refuse it)."""
        seconds = DEADLINE if deadline is None else deadline
        allowed = (RETRIES if method in _IDEMPOTENT else 0) if retries is None else retries
        sent = {"User-Agent": "aicr-gen", **(headers or {})}
        for name, value in sent.items():
            if not _HEADER_NAME.match(name) or not _HEADER_VALUE.match(value):
                raise InvalidInputError(f"{self.label}: the {name[:40]!r} header is not one line of printable "
                                        "text; it is not sent")
        self.check_url(url)
        first, stop, hops, attempt = origin(url), time.monotonic() + seconds, 0, 0
        with _Watch(seconds) as watch:
            while True:
                answer = self._open(method, url, sent, body, stop=stop, seconds=seconds, watch=watch)
                location = answer.headers.get("Location") if answer.status in _REDIRECTED else None
                if location is not None:
                    answer.close()
                    answer.release_conn()
                    hops += 1
                    target = urllib.parse.urljoin(url, location.strip())
                    if hops > REDIRECTS:
                        self._fail(method, url, f"more than {REDIRECTS} redirects")
                    self.check_url(target, peer=f"{self.label}: redirected to")
                    if check is not None:
                        check(target)
                    if origin(target) != first:
                        sent = {name: value for name, value in sent.items() if name.lower() not in _SENSITIVE}
                    if answer.status == 303 or (answer.status in (301, 302) and method not in _IDEMPOTENT):
                        method, body = "GET", None
                    url = target
                    continue
                if answer.status in _RETRIED and attempt < allowed:
                    asked = _retry_after(answer.headers.get("Retry-After"))
                    answer.close()
                    answer.release_conn()
                    wait = asked if asked is not None else min(BACKOFF_MAX, BACKOFF * 2 ** attempt)
                    if time.monotonic() + wait > stop:
                        self._fail(method, url, f"answered {answer.status} and asks to retry after {wait:g} s, past "
                                   f"the {seconds:g}-second deadline; try again later")
                    time.sleep(wait)
                    attempt += 1
                    continue
                data = self._read(answer, method, url, limit=limit, seconds=seconds, watch=watch)
                return Response(answer.status, answer.headers, data, url)

    def _manager(self, url: str) -> urllib3.PoolManager:
        proxy = _proxy_for(url)
        if proxy not in self._managers:
            options: dict[str, Any] = {"ca_certs": self.ca_file, "num_pools": 8,
                                       "cert_reqs": "CERT_REQUIRED" if self.verify else "CERT_NONE"}
            if not self.verify:
                options["assert_hostname"] = False
                warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
            if proxy is None:
                manager = urllib3.PoolManager(**options)
            else:
                auth = urllib.parse.urlsplit(proxy)
                userinfo = f"{auth.username}:{auth.password or ''}" if auth.username else None
                manager = urllib3.ProxyManager(
                    proxy, proxy_headers=urllib3.make_headers(proxy_basic_auth=userinfo) if userinfo else None,
                    **options)
            manager.pool_classes_by_scheme = {"http": _Pool, "https": _TLSPool}
            self._managers[proxy] = manager
        return self._managers[proxy]

    def _open(self, method: str, url: str, headers: Mapping[str, str], body: bytes | None, *, stop: float,
              seconds: float, watch: _Watch) -> urllib3.BaseHTTPResponse:
        """The answer's status and headers; an idempotent request whose connection closed before any answer is
        sent once more at once (a kept-alive connection the peer had just closed, as urllib3 itself retries)."""
        again = method in _IDEMPOTENT
        while True:
            left = max(0.01, stop - time.monotonic())
            timeout = urllib3.Timeout(connect=min(CONNECT_TIMEOUT, left), read=min(READ_TIMEOUT, left))
            try:
                answer = self._manager(url).request(method, url, headers=dict(headers), body=body, timeout=timeout,
                                                    retries=False, redirect=False, preload_content=False,
                                                    decode_content=False)
            except _BROKEN as err:
                if watch.expired:
                    self._late(method, url, seconds)
                if again and any(isinstance(cause, _STALE) for cause in _causes(err)):
                    again = False
                    continue
                if isinstance(err, urllib3.exceptions.ProxyError):
                    self._fail(method, url, "the proxy (HTTPS_PROXY/HTTP_PROXY) refused or failed")
                self._fail(method, url, _peer_failure(err))
            if watch.expired:  # the headers ended where the watch cut them: not an answer
                answer.close()
                answer.release_conn()
                self._late(method, url, seconds)
            return answer

    def _read(self, answer: urllib3.BaseHTTPResponse, method: str, url: str, *, limit: int, seconds: float,
              watch: _Watch) -> bytes:
        """The body, within ``limit`` bytes and the deadline; the connection is reused only after a whole read."""
        done = False
        try:
            if method == "HEAD" or answer.status in (204, 304) or answer.status < 200:
                done = True
                return b""
            encoding = answer.headers.get("Content-Encoding", "identity").strip().lower()
            if encoding not in ("", "identity"):
                self._fail(method, url, f"a body in Content-Encoding {encoding[:40]!r}, which was not asked for")
            announced = answer.headers.get("Content-Length", "").strip()
            if announced.isdigit() and int(announced) > limit:
                self._fail(method, url, f"announces a {int(announced)}-byte body, over the {limit}-byte limit; "
                           "not read")
            chunks: list[bytes] = []
            total = 0
            while chunk := answer.read(min(_CHUNK, limit + 1 - total)):
                chunks.append(chunk)
                total += len(chunk)
                if total > limit:
                    self._fail(method, url, f"a body of more than {limit} bytes; cut off there")
            if watch.expired:
                self._late(method, url, seconds)
            done = True
            return b"".join(chunks)
        except AicrGenError:
            raise
        except _BROKEN as err:
            if watch.expired:
                self._late(method, url, seconds)
            self._fail(method, url, _peer_failure(err))
        finally:
            if not done:
                answer.close()
            answer.release_conn()

    def _fail(self, method: str, url: str, what: str) -> NoReturn:
        raise UnreachableError(f"{self.label}: {method} {redacted(url)}: {what}")

    def _late(self, method: str, url: str, seconds: float) -> NoReturn:
        self._fail(method, url, f"timed out: no complete answer within the {seconds:g}-second deadline (a peer "
                   "that stalls or trickles)")
