"""Requests to one API server through the official client: the reads of a snapshot capture (GET only, paged),
cm:// ConfigMaps and their server-side apply (field manager ``aicr-gen``), lists and deletes of one kind of object
(a retention's).

Requests are built by ``ApiClient.param_serialize`` and sent by ``ApiClient.call_api``: the same request, auth,
TLS, proxy and redirect handling as the generated ``CoreV1Api`` methods, whose module alone takes ~0.6 s to import;
answers are read as JSON, not deserialised into models (``bench/bench_kube.py``: 500 Nodes take ~11 ms with
``json.loads``, ~130 ms as models).

Bounds, so that no server can make a command hang or fail with a traceback (issue 24; client-go's own promises
where it makes one):

- connect and read timeouts of ``TIMEOUT_SECONDS`` each, and ``DEADLINE_SECONDS`` for the head of an answer
  (status line and headers; a watchdog shuts the socket down, ``_watch``) and again for its body (a server that
  trickles bytes resets a read timeout on every byte);
- at most ``MAX_RESPONSE_BYTES`` per answer (an announced ``Content-Length`` above it is refused unread) and
  ``MAX_PAGES`` pages of ``PAGE_SIZE`` items per list: 500,000 objects, over three times the 150,000 Pods of the
  largest cluster Kubernetes supports (kubernetes.io/docs/setup/best-practices/cluster-large), read within
  ``LIST_SECONDS`` in all;
- a 429, or a 5xx with an integer ``Retry-After``, is retried as client-go's ``rest.Request`` does
  (``kubernetes.utils.retry.on_retry_after_error``, the official client's port of ``rest/with_retry.go``: the
  server's delay when longer than the backoff) but at most ``RETRY_ATTEMPTS`` attempts and ``RETRY_SECONDS`` of
  waiting in all: a server asking for more is given up on at once;
- urllib3 retries a refused connection ``CONNECT_RETRIES`` times and a broken read once (GET only), and follows
  at most ``REDIRECTS`` redirects (Go's ``net/http`` stops at 10), dropping ``Authorization`` when one leads to
  another scheme, host or port (``Retry.DEFAULT_REMOVE_HEADERS_ON_REDIRECT``, applied in
  ``PoolManager.urlopen``; Go's client only keeps it for the same domain or a subdomain);
- truncated bodies, malformed status lines, too many (over 100) or too long header lines, JSON that is not an
  object or nests deeper than the interpreter's recursion limit: one line naming the server and what was asked.

Every failure is an ``UnreachableError`` (exit 3) in one line: the server cannot be reached (refused, TLS,
timeout), refuses the credentials (401) or the request (403, with the server's reason naming the user, verb
and resource), or the object is missing (a missing namespace and a missing ConfigMap are told apart).
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import time
import warnings
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen import __version__
from aicr_gen.errors import InvalidInputError, UnreachableError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient
    from kubernetes.client.api_client import RequestSerialized

TIMEOUT_SECONDS = 15.0
DEADLINE_SECONDS = 120.0
MAX_RESPONSE_BYTES = 80 * 1024 * 1024
PAGE_SIZE = 500
MAX_PAGES = 1000
LIST_SECONDS = 600.0
RETRY_ATTEMPTS = 5
RETRY_SECONDS = 60.0
RETRY_BACKOFF_SECONDS = 0.5
CONNECT_RETRIES = 2
REDIRECTS = 10
READ_CHUNK = 64 * 1024
MAX_MESSAGE_CHARS = 500
FIELD_MANAGER = "aicr-gen"
APPLY_PATCH = "application/apply-patch+yaml"
HELM_SELECTOR = "owner=helm"
CONFIGMAP_PATH = "/api/v1/namespaces/{namespace}/configmaps/{name}"
NAMESPACE_PATH = "/api/v1/namespaces/{name}"


class NotFoundError(UnreachableError):
    """The API answered 404."""


class _Answer(Exception):
    """A non-2xx answer; ``status`` and ``headers`` are what ``kubernetes.utils.retry`` reads to decide."""

    def __init__(self, status: int, reason: str | None, headers: Mapping[str, str], raw: bytes) -> None:
        super().__init__(status)
        self.status, self.reason, self.headers, self.raw = status, reason, headers, raw


class _TooLong(Exception):
    """The next wait would take the retries past ``RETRY_SECONDS``."""


class Inventory(NamedTuple):
    """What a snapshot capture reads: ``/version`` and every Node, Helm release Secret and Pod."""

    version: dict[str, Any]
    nodes: list[dict[str, Any]]
    secrets: list[dict[str, Any]]
    pods: list[dict[str, Any]]


class Cluster:
    """One API server, one set of credentials (``identity`` names them in messages)."""

    def __init__(self, api: ApiClient, identity: str) -> None:
        self.api = api
        self.identity = identity
        self.late = False
        api.user_agent = f"aicr-gen/{__version__}"
        _watch(api, self)

    @property
    def server(self) -> str:
        return without_credentials(str(self.api.configuration.host))

    def __enter__(self) -> Cluster:
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None,
                 trace: TracebackType | None) -> None:
        self.api.close()

    def request(self, method: str, path: str, what: str, *, params: Mapping[str, str] | None = None,
                query: Sequence[tuple[str, str | bool]] = (), body: dict[str, Any] | None = None,
                content_type: str | None = None) -> dict[str, Any]:
        """The JSON object answering ``method path`` (``{name}`` placeholders filled from ``params``)."""
        from kubernetes.utils import Backoff, is_retry_after_response, on_retry_after_error

        headers = {"Accept": "application/json", **({"Content-Type": content_type} if content_type else {})}
        prepared = self.api.param_serialize(method, path, path_params=dict(params or {}), query_params=list(query),
                                            header_params=headers, body=body, auth_settings=["BearerToken"])
        waited = [0.0]

        def wait(seconds: float) -> None:
            if waited[0] + seconds > RETRY_SECONDS:
                raise _TooLong(seconds)
            time.sleep(seconds)
            waited[0] += seconds

        backoff = Backoff(steps=RETRY_ATTEMPTS, duration=RETRY_BACKOFF_SECONDS, factor=2.0, jitter=0.1)
        try:
            raw = on_retry_after_error(backoff, is_retry_after_response, lambda: self._send(prepared, what),
                                       sleep_func=wait)
        except _Answer as answer:
            if is_retry_after_response(answer):
                raise self._busy(answer, what, f"after {RETRY_ATTEMPTS} attempts in {waited[0]:g}s") from None
            raise self._refused(answer.status, answer.reason, answer.raw, what) from None
        except _TooLong as too_long:
            raise UnreachableError(f"Kubernetes API at {self.server}: busy for {what} and asks to retry after "
                                   f"{too_long.args[0]:g}s, beyond the {RETRY_SECONDS:g}s aicr-gen waits in all; "
                                   "retry later") from None
        try:
            data = json.loads(raw)
        except (ValueError, RecursionError):
            data = None
        if not isinstance(data, dict):
            raise UnreachableError(f"Kubernetes API at {self.server}: the answer for {what} is not a JSON object")
        return data

    def _send(self, prepared: RequestSerialized, what: str) -> bytes:
        """The body of one 2xx answer (an ``_Answer`` raised for any other), read within the bounds."""
        import urllib3
        from kubernetes.client.exceptions import ApiException

        self.late = False
        try:
            answer = self.api.call_api(*prepared, _request_timeout=(TIMEOUT_SECONDS, TIMEOUT_SECONDS)).response
            try:
                raw = self._read(answer, what)
            except BaseException:
                answer.close()  # never back to the pool with an answer half read
                raise
            answer.release_conn()
            if self.late:  # the watchdog cut the head short: what http.client read is not the answer
                raise urllib3.exceptions.ProtocolError("cut at the deadline")
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as err:
            raise self._unreachable(err, what) from None
        if not 200 <= answer.status < 300:
            raise _Answer(answer.status, answer.reason, dict(answer.headers), raw)
        return raw

    def _read(self, answer: Any, what: str) -> bytes:
        """At most ``MAX_RESPONSE_BYTES`` of ``answer``'s body within ``DEADLINE_SECONDS``."""
        limit = f"the answer for {what} is over {_size(MAX_RESPONSE_BYTES)}"
        announced = str(answer.headers.get("Content-Length") or "")
        if announced.isdigit() and int(announced) > MAX_RESPONSE_BYTES:
            raise UnreachableError(f"Kubernetes API at {self.server}: {limit} ({announced} bytes announced)")
        deadline = time.monotonic() + DEADLINE_SECONDS
        chunks: list[bytes] = []
        size = 0
        while chunk := answer.read1(READ_CHUNK):
            chunks.append(chunk)
            size += len(chunk)
            if size > MAX_RESPONSE_BYTES:
                raise UnreachableError(f"Kubernetes API at {self.server}: {limit}")
            if time.monotonic() > deadline:
                raise UnreachableError(f"Kubernetes API at {self.server}: the answer for {what} took over "
                                       f"{DEADLINE_SECONDS:g}s to arrive; check the cluster and the network")
        return b"".join(chunks)

    def list_items(self, path: str, what: str, selector: str | None = None) -> list[dict[str, Any]]:
        """Every item of a list endpoint, following ``metadata.continue`` in pages of ``PAGE_SIZE``."""
        items: list[dict[str, Any]] = []
        token = ""
        deadline = time.monotonic() + LIST_SECONDS
        for _ in range(MAX_PAGES):
            if time.monotonic() > deadline:
                raise UnreachableError(f"Kubernetes API at {self.server}: the {what} took over {LIST_SECONDS:g}s "
                                       f"({len(items)} items so far); check the cluster and the network")
            query = [("limit", str(PAGE_SIZE)), *([("labelSelector", selector)] if selector else []),
                     *([("continue", token)] if token else [])]
            answer = self.request("GET", path, what, query=query)
            page = answer.get("items")
            if not isinstance(page, list):
                raise UnreachableError(f"Kubernetes API at {self.server}: the {what} answer has no items list")
            items += [item for item in page if isinstance(item, dict)]
            token = str((answer.get("metadata") or {}).get("continue") or "")
            if not token:
                return items
        raise UnreachableError(f"Kubernetes API at {self.server}: the {what} goes on past {MAX_PAGES} pages of "
                               f"{PAGE_SIZE} (it keeps answering a continue token); check the API server")

    def inventory(self) -> Inventory:
        """Read what a snapshot needs (GET only)."""
        return Inventory(self.request("GET", "/version", "server version"),
                         self.list_items("/api/v1/nodes", "node list"),
                         self.list_items("/api/v1/secrets", "Helm release secrets", HELM_SELECTOR),
                         self.list_items("/api/v1/pods", "pod list"))

    def configmap(self, namespace: str, name: str) -> dict[str, Any]:
        """The ConfigMap ``namespace/name``; a missing one names what is missing, it or its namespace."""
        try:
            return self.request("GET", CONFIGMAP_PATH, f"ConfigMap {namespace}/{name}",
                                params={"namespace": namespace, "name": name})
        except NotFoundError:
            # On a GET the server says `configmaps "NAME" not found` whether or not the namespace exists.
            if self._namespace_missing(namespace):
                raise self._missing_namespace(namespace, name) from None
            raise UnreachableError(f"cm://{namespace}/{name}: ConfigMap {namespace}/{name} not found on "
                                   f"{self.server}; write it with aicr-gen snapshot -o cm://{namespace}/{name} "
                                   "or fix the name") from None

    def apply_configmap(self, namespace: str, name: str, data: Mapping[str, str],
                        binary_data: Mapping[str, bytes], labels: Mapping[str, str]) -> dict[str, Any]:
        """Create or update ConfigMap ``namespace/name`` by server-side apply (forced); the applied object."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "ConfigMap",
                                "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)}}
        if data:
            body["data"] = dict(data)
        if binary_data:
            body["binaryData"] = {key: base64.b64encode(value).decode("ascii") for key, value in binary_data.items()}
        try:
            return self.request("PATCH", CONFIGMAP_PATH, f"ConfigMap {namespace}/{name}",
                                params={"namespace": namespace, "name": name},
                                query=[("fieldManager", FIELD_MANAGER), ("force", True)], body=body,
                                content_type=APPLY_PATCH)
        except NotFoundError:  # an apply creates the ConfigMap: only its namespace can be missing
            raise self._missing_namespace(namespace, name) from None

    def delete(self, path: str, what: str, *, params: Mapping[str, str] | None = None, uid: str = "",
               propagation: str = "Background") -> dict[str, Any] | None:
        """Delete the object at ``path`` (``{name}`` placeholders filled from ``params``), its dependents as
        ``propagation`` says and, given ``uid``, only if it is still that object (a namesake created since is
        refused with 409). The server's answer (the object, still there with a ``deletionTimestamp`` while its
        finalizers hold it, or a Status), or None when it was already gone."""
        body: dict[str, Any] = {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": propagation}
        if uid:
            body["preconditions"] = {"uid": uid}
        try:
            return self.request("DELETE", path, what, params=params, body=body, content_type="application/json")
        except NotFoundError:
            return None

    def _namespace_missing(self, namespace: str) -> bool:
        try:
            self.request("GET", NAMESPACE_PATH, f"namespace {namespace}", params={"name": namespace})
        except NotFoundError:
            return True
        except UnreachableError:  # e.g. not allowed to read namespaces: cannot tell
            return False
        return False

    def _missing_namespace(self, namespace: str, name: str) -> UnreachableError:
        return UnreachableError(f"cm://{namespace}/{name}: namespace {namespace!r} does not exist on {self.server}; "
                                f"create it (kubectl create namespace {namespace}) or fix the namespace")

    def _said(self, raw: bytes, reason: str | None, status: int) -> str:
        """What the server said, without the credentials sent to it (a hostile server may echo them)."""
        message = _status_message(raw) or " ".join(str(reason or "").split())[:MAX_MESSAGE_CHARS] or f"HTTP {status}"
        configuration = self.api.configuration
        for secret in (*configuration.api_key.values(), configuration.password):
            for part in str(secret or "").split():
                if len(part) >= 8:
                    message = message.replace(part, "<redacted>")
        return message

    def _refused(self, status: int, reason: str | None, raw: bytes, what: str) -> UnreachableError:
        message = self._said(raw, reason, status)
        if status == 404:
            return NotFoundError(f"{what} not found on {self.server}: {message}")
        if status == 401:
            return UnreachableError(f"Kubernetes API at {self.server}: unauthorized (401) for {what}: {message}; the "
                                    f"credentials of {self.identity} were refused: log in again or renew them")
        if status == 403:
            return UnreachableError(f"Kubernetes API at {self.server}: forbidden (403) for {what}: {message}; grant "
                                    f"{self.identity} that permission (RBAC) or use another --context")
        return UnreachableError(f"Kubernetes API at {self.server}: HTTP {status} for {what}: {message}")

    def _busy(self, answer: _Answer, what: str, tried: str) -> UnreachableError:
        message = self._said(answer.raw, answer.reason, answer.status)
        return UnreachableError(f"Kubernetes API at {self.server}: still busy (HTTP {answer.status}, {message}) for "
                                f"{what} {tried}; retry later")

    def _unreachable(self, err: BaseException, what: str) -> UnreachableError:
        import urllib3

        if self.late:
            return UnreachableError(f"Kubernetes API at {self.server}: the answer for {what} did not begin within "
                                    f"{DEADLINE_SECONDS:g}s; check the cluster and the network")
        cause = err.reason if isinstance(err, urllib3.exceptions.MaxRetryError) and err.reason else err
        if isinstance(cause, urllib3.exceptions.ProxyError):
            proxy = without_credentials(str(self.api.configuration.proxy))
            return UnreachableError(f"cannot reach the Kubernetes API at {self.server} through the proxy {proxy}: "
                                    f"{_innermost(cause)}; check proxy-url or HTTPS_PROXY/NO_PROXY")
        # urllib3's NewConnectionError (refused, unknown host) is a kind of its ConnectTimeoutError
        timeout = (urllib3.exceptions.TimeoutError, TimeoutError)
        if isinstance(cause, timeout) and not isinstance(cause, urllib3.exceptions.NewConnectionError):
            return UnreachableError(f"Kubernetes API at {self.server}: no answer within {TIMEOUT_SECONDS:g}s "
                                    f"({what}); check the cluster and your kubeconfig context")
        if isinstance(cause, urllib3.exceptions.ProtocolError | urllib3.exceptions.DecodeError):
            return UnreachableError(f"Kubernetes API at {self.server}: a broken answer for {what}: "
                                    f"{_innermost(cause)}; check that the server is a Kubernetes API server")
        tls = _tls_problem(cause)
        if tls:
            return UnreachableError(f"TLS with the Kubernetes API at {self.server} failed: {tls}; check the "
                                    f"certificate-authority and tls-server-name of the cluster of {self.identity}")
        return UnreachableError(f"cannot reach the Kubernetes API at {self.server}: {_innermost(cause)}; check the "
                                "cluster and your kubeconfig context")


CLUSTER_EXTRA = "the official Kubernetes client, aicr-gen's cluster extra"
INSTALL_CLUSTER = ("pipx install --force 'aicr-gen[cluster] @ git+https://github.com/aicr-gen/aicr-gen@v{version}' "
                   "(pip: pip install 'aicr-gen[cluster]', or pip install kubernetes)")


def require_client() -> None:
    """Exit 2 naming the install when the official client is missing: it is the ``cluster`` extra, left out of
    the pre-commit hooks' environment (lint and sync-check never talk to a cluster; it is most of that install)."""
    import importlib.util

    if importlib.util.find_spec("kubernetes") is None:
        from aicr_gen import __version__

        raise InvalidInputError(f"talking to a cluster needs {CLUSTER_EXTRA}, which is not installed: "
                                + INSTALL_CLUSTER.format(version=__version__))


def preload() -> None:
    """Import the official client and what loading a kubeconfig needs, in this thread: several threads importing
    it for the first time at once can see its modules half-initialised (``diff --fleet`` reads ConfigMaps in
    threads)."""
    import importlib

    require_client()
    for module in ("kubernetes.client", "kubernetes.client.exceptions", "kubernetes.config.kube_config", "urllib3",
                   "yaml"):
        importlib.import_module(module)


def connect(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """A cluster client for ``context`` of the user's kubeconfig, or in-cluster (see ``aicr_gen.edges.kube.config``)."""
    require_client()
    from kubernetes.client import ApiClient

    from aicr_gen.edges.kube.config import load

    target = load(kubeconfig, context)
    target.configuration.retries = urllib3_retries()
    if not target.configuration.verify_ssl:
        import urllib3

        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        sys.stderr.write(f"aicr-gen: warning: {target.identity} sets insecure-skip-tls-verify: the API server's "
                         "certificate is not checked\n")
    return Cluster(ApiClient(target.configuration), target.identity)


def urllib3_retries() -> Any:
    """urllib3's retries for every request: refused connections, one broken read (idempotent methods only),
    ``REDIRECTS`` redirects; never a status (``Retry-After`` is ``Cluster.request``'s job, with its bounds)."""
    from urllib3.util.retry import Retry

    return Retry(total=CONNECT_RETRIES + 1 + REDIRECTS, connect=CONNECT_RETRIES, read=1, redirect=REDIRECTS,
                 status=0, other=0, respect_retry_after_header=False)


def _watch(api: ApiClient, cluster: Cluster) -> None:
    """Give every connection of ``api`` a deadline for the status line and headers of an answer: a read timeout
    restarts with each byte, so a server trickling its headers would hold the command for ever. At
    ``DEADLINE_SECONDS`` the socket is shut down (the read in progress ends) and ``cluster.late`` says why."""
    import socket
    import threading

    def watched(connection: Any) -> Any:
        class Watched(connection):  # type: ignore[misc]
            def getresponse(self) -> Any:
                sock = self.sock

                def expire() -> None:
                    cluster.late = True
                    try:
                        sock.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        return

                timer = threading.Timer(DEADLINE_SECONDS, expire)
                timer.daemon = True
                timer.start()
                try:
                    return super().getresponse()
                finally:
                    timer.cancel()

        return Watched

    manager: Any = api.rest_client.pool_manager
    manager.pool_classes_by_scheme = {
        scheme: type(pool.__name__, (pool,), {"ConnectionCls": watched(pool.ConnectionCls)})
        for scheme, pool in manager.pool_classes_by_scheme.items()}


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part: messages end up in CI logs."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}" if sep else url


def _size(count: int) -> str:
    mib = 1024 * 1024
    return f"{count // mib} MiB" if count % mib == 0 else f"{count} bytes"


def _status_message(raw: bytes) -> str:
    """The ``message`` of a Kubernetes ``Status`` answer, in one line of at most ``MAX_MESSAGE_CHARS``."""
    try:
        status = json.loads(raw[:1024 * 1024])
    except (ValueError, RecursionError):
        return ""
    message = " ".join(str(status.get("message") or "").split()) if isinstance(status, dict) else ""
    return message if len(message) <= MAX_MESSAGE_CHARS else f"{message[:MAX_MESSAGE_CHARS]}..."


def _chain(err: BaseException) -> list[BaseException]:
    """``err`` and what it wraps: urllib3 keeps the original in ``args[0]`` or ``__cause__``."""
    found: list[BaseException] = []
    current: BaseException | None = err
    while current is not None and current not in found:
        found.append(current)
        inner = current.args[0] if current.args and isinstance(current.args[0], BaseException) else None
        current = inner or current.__cause__ or current.__context__
    return found


def _tls_problem(err: BaseException) -> str:
    """What failed in the TLS handshake (``self-signed certificate``, ``Hostname mismatch, ...``), or ""."""
    import urllib3

    chain = _chain(err)
    for link in chain:
        if isinstance(link, ssl.SSLCertVerificationError):
            return str(link.verify_message or link.reason).rstrip(".")
    for link in chain:
        if isinstance(link, ssl.SSLError | urllib3.exceptions.SSLError):
            return " ".join(str(link).split())
    return ""


def _innermost(err: BaseException) -> str:
    """The OS reason (``Connection refused``), else the innermost message."""
    chain = _chain(err)
    for link in chain:
        if isinstance(link, OSError) and link.strerror:
            return link.strerror
    return " ".join(str(chain[-1]).split())
