"""Requests to one API server through the official client: the reads of a snapshot capture (GET only, paged),
cm:// ConfigMaps and their server-side apply (field manager ``aicr-gen``).

Requests are built by ``ApiClient.param_serialize`` and sent by ``ApiClient.call_api``: the same request, auth,
TLS, proxy and redirect handling as the generated ``CoreV1Api`` methods, whose module alone takes ~0.6 s to import;
answers are read as JSON, not deserialised into models (``bench/bench_kube.py``: 500 Nodes take ~11 ms with
``json.loads``, ~130 ms as models). urllib3 follows redirects but drops the ``Authorization`` header when one
leads to another scheme, host or port.

Every failure is an ``UnreachableError`` (exit 3) in one line: the server cannot be reached (refused, TLS,
timeout), refuses the credentials (401) or the request (403, with the server's reason naming the user, verb
and resource), or the object is missing (a missing namespace and a missing ConfigMap are told apart).
"""

from __future__ import annotations

import base64
import json
import ssl
import sys
import warnings
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, NamedTuple

from aicr_gen import __version__
from aicr_gen.errors import UnreachableError

if TYPE_CHECKING:
    from kubernetes.client import ApiClient

TIMEOUT_SECONDS = 15.0
MAX_RESPONSE_BYTES = 80 * 1024 * 1024
PAGE_SIZE = 500
FIELD_MANAGER = "aicr-gen"
APPLY_PATCH = "application/apply-patch+yaml"
HELM_SELECTOR = "owner=helm"
CONFIGMAP_PATH = "/api/v1/namespaces/{namespace}/configmaps/{name}"
NAMESPACE_PATH = "/api/v1/namespaces/{name}"


class NotFoundError(UnreachableError):
    """The API answered 404."""


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
        api.user_agent = f"aicr-gen/{__version__}"

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
        import urllib3
        from kubernetes.client.exceptions import ApiException

        headers = {"Accept": "application/json", **({"Content-Type": content_type} if content_type else {})}
        prepared = self.api.param_serialize(method, path, path_params=dict(params or {}), query_params=list(query),
                                            header_params=headers, body=body, auth_settings=["BearerToken"])
        try:
            answer = self.api.call_api(*prepared, _request_timeout=(TIMEOUT_SECONDS, TIMEOUT_SECONDS)).response
            raw = answer.read(MAX_RESPONSE_BYTES + 1)
        except (urllib3.exceptions.HTTPError, ApiException, OSError) as err:
            raise self._unreachable(err, what) from None
        if not 200 <= answer.status < 300:
            raise self._refused(answer.status, answer.reason, raw, what)
        if len(raw) > MAX_RESPONSE_BYTES:
            raise UnreachableError(f"Kubernetes API at {self.server}: the answer for {what} is over "
                                   f"{MAX_RESPONSE_BYTES // (1024 * 1024)} MiB")
        try:
            data = json.loads(raw)
        except ValueError:
            data = None
        if not isinstance(data, dict):
            raise UnreachableError(f"Kubernetes API at {self.server}: the answer for {what} is not a JSON object")
        return data

    def list_items(self, path: str, what: str, selector: str | None = None) -> list[dict[str, Any]]:
        """Every item of a list endpoint, following ``metadata.continue`` in pages of ``PAGE_SIZE``."""
        items: list[dict[str, Any]] = []
        token = ""
        while True:
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

    def _refused(self, status: int, reason: str | None, raw: bytes, what: str) -> UnreachableError:
        message = _status_message(raw) or reason or f"HTTP {status}"
        if status == 404:
            return NotFoundError(f"{what} not found on {self.server}: {message}")
        if status == 401:
            return UnreachableError(f"Kubernetes API at {self.server}: unauthorized (401) for {what}: {message}; the "
                                    f"credentials of {self.identity} were refused: log in again or renew them")
        if status == 403:
            return UnreachableError(f"Kubernetes API at {self.server}: forbidden (403) for {what}: {message}; grant "
                                    f"{self.identity} that permission (RBAC) or use another --context")
        return UnreachableError(f"Kubernetes API at {self.server}: HTTP {status} for {what}: {message}")

    def _unreachable(self, err: BaseException, what: str) -> UnreachableError:
        import urllib3

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
        tls = _tls_problem(cause)
        if tls:
            return UnreachableError(f"TLS with the Kubernetes API at {self.server} failed: {tls}; check the "
                                    f"certificate-authority and tls-server-name of the cluster of {self.identity}")
        return UnreachableError(f"cannot reach the Kubernetes API at {self.server}: {_innermost(cause)}; check the "
                                "cluster and your kubeconfig context")


def preload() -> None:
    """Import the official client and what loading a kubeconfig needs, in this thread: several threads importing
    it for the first time at once can see its modules half-initialised (``diff --fleet`` reads ConfigMaps in
    threads)."""
    import importlib

    for module in ("kubernetes.client", "kubernetes.client.exceptions", "kubernetes.config.kube_config", "urllib3",
                   "yaml"):
        importlib.import_module(module)


def connect(kubeconfig: str | None = None, context: str | None = None) -> Cluster:
    """A cluster client for ``context`` of the user's kubeconfig, or in-cluster (see ``aicr_gen.kube.config``)."""
    from kubernetes.client import ApiClient

    from aicr_gen.kube.config import load

    target = load(kubeconfig, context)
    if not target.configuration.verify_ssl:
        import urllib3

        warnings.filterwarnings("ignore", category=urllib3.exceptions.InsecureRequestWarning)
        sys.stderr.write(f"aicr-gen: warning: {target.identity} sets insecure-skip-tls-verify: the API server's "
                         "certificate is not checked\n")
    return Cluster(ApiClient(target.configuration), target.identity)


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part: messages end up in CI logs."""
    scheme, sep, rest = url.partition("://")
    host, slash, path = rest.partition("/")
    return f"{scheme}{sep}{host.rpartition('@')[2]}{slash}{path}" if sep else url


def _status_message(raw: bytes) -> str:
    """The ``message`` of a Kubernetes ``Status`` answer, in one line."""
    try:
        status = json.loads(raw[:1024 * 1024])
    except ValueError:
        return ""
    return " ".join(str(status.get("message") or "").split()) if isinstance(status, dict) else ""


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
