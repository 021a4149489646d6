"""A minimal Kubernetes API client: the user's kubeconfig, then GET and server-side apply of ConfigMaps.

Only the standard library is used (urllib + ssl). The kubeconfig is ``--kubeconfig``, else ``$KUBECONFIG``
(a ``:``-separated list, merged the way kubectl does: the first file to define a name wins), else
``~/.kube/config``. Supported credentials: bearer token, token file, client certificate/key (paths or
inline data), basic auth, and ``exec`` credential plugins (e.g. ``aws eks get-token``).

Every failure to reach or read the API is an ``UnreachableError`` (exit 3) naming the server and reason;
a kubeconfig that cannot be used is an ``InvalidInputError`` (exit 2).
"""

from __future__ import annotations

import base64
import binascii
import json
import os
import ssl
import subprocess
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicr_gen.errors import InvalidInputError, UnreachableError
from aicr_gen.yamlio import load_bytes

TIMEOUT_SECONDS = 15.0
FIELD_MANAGER = "aicr-gen"
MAX_RESPONSE_BYTES = 80 * 1024 * 1024
EXEC_TIMEOUT_SECONDS = 60.0


def kubeconfig_paths(kubeconfig: str | None = None) -> list[Path]:
    """The kubeconfig files to read, in precedence order."""
    if kubeconfig:
        return [Path(kubeconfig)]
    env = os.environ.get("KUBECONFIG", "")
    listed = [Path(part) for part in env.split(os.pathsep) if part]
    if listed:
        return listed
    return [Path.home() / ".kube" / "config"]


@dataclass
class _Config:
    """The merged kubeconfig sections (first definition of a name wins)."""

    current_context: str = ""
    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, dict[str, Any]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)


def _load_config(kubeconfig: str | None) -> _Config:
    config = _Config()
    explicit = bool(kubeconfig)
    for path in kubeconfig_paths(kubeconfig):
        try:
            raw = path.read_bytes()
        except FileNotFoundError:
            if explicit:
                raise InvalidInputError(f"--kubeconfig {path}: file not found") from None
            continue
        except OSError as err:
            raise InvalidInputError(f"{path}: cannot read the kubeconfig: {err.strerror or err}") from None
        data = load_bytes(raw, str(path)).data
        config.sources.append(str(path))
        config.current_context = config.current_context or str(data.get("current-context") or "")
        for section, target in (("clusters", config.clusters), ("users", config.users)):
            for entry in data.get(section) or []:
                if isinstance(entry, dict) and isinstance(entry.get(section[:-1]), dict):
                    target.setdefault(str(entry.get("name")), (entry[section[:-1]], path.parent))
        for entry in data.get("contexts") or []:
            if isinstance(entry, dict) and isinstance(entry.get("context"), dict):
                config.contexts.setdefault(str(entry.get("name")), entry["context"])
    if not config.sources:
        tried = ", ".join(str(p) for p in kubeconfig_paths(kubeconfig))
        raise UnreachableError(f"no kubeconfig found (tried {tried}); set KUBECONFIG or pass --kubeconfig")
    return config


def _file(value: Any, base: Path) -> Path:
    path = Path(str(value)).expanduser()
    return path if path.is_absolute() else base / path


def _b64(value: Any, what: str) -> bytes:
    try:
        return base64.b64decode(str(value), validate=True)
    except (binascii.Error, ValueError):
        raise InvalidInputError(f"kubeconfig {what} is not valid base64") from None


class KubeClient:
    """Talks to one API server with one set of credentials."""

    def __init__(self, server: str, context: ssl.SSLContext | None = None, headers: Mapping[str, str] | None = None,
                 timeout: float = TIMEOUT_SECONDS) -> None:
        self.server = server.rstrip("/")
        self.ssl_context = context
        self.headers = dict(headers or {})
        self.timeout = timeout

    @classmethod
    def from_kubeconfig(cls, kubeconfig: str | None = None, timeout: float = TIMEOUT_SECONDS) -> KubeClient:
        """A client for the current context of the user's kubeconfig."""
        config = _load_config(kubeconfig)
        where = ", ".join(config.sources)
        name = config.current_context
        if not name or name not in config.contexts:
            raise InvalidInputError(f"{where}: current-context {name!r} is not defined; run kubectl config "
                                    "use-context NAME")
        ctx = config.contexts[name]
        cluster_entry = config.clusters.get(str(ctx.get("cluster")))
        if cluster_entry is None:
            raise InvalidInputError(f"{where}: context {name!r} names cluster {ctx.get('cluster')!r}, "
                                    "which is not defined")
        cluster, cluster_base = cluster_entry
        server = str(cluster.get("server") or "")
        if not server.startswith(("https://", "http://")):
            raise InvalidInputError(f"{where}: cluster {ctx.get('cluster')!r} has no http(s) server URL")
        user, user_base = config.users.get(str(ctx.get("user")), ({}, Path()))
        context = _ssl_context(cluster, cluster_base, user, user_base) if server.startswith("https://") else None
        return cls(server, context, _auth_headers(user, user_base), timeout)

    def request(self, method: str, path: str, body: bytes | None = None, content_type: str | None = None,
                what: str = "") -> dict[str, Any]:
        """The decoded JSON answer to ``method path``; every failure is an ``UnreachableError``."""
        headers = {"Accept": "application/json", "User-Agent": "aicr-gen", **self.headers}
        if content_type:
            headers["Content-Type"] = content_type
        req = urllib.request.Request(self.server + path, data=body, method=method, headers=headers)
        label = what or path
        try:
            with urllib.request.urlopen(req, timeout=self.timeout, context=self.ssl_context) as resp:
                raw = resp.read(MAX_RESPONSE_BYTES + 1)
        except urllib.error.HTTPError as err:
            raise self._http_error(err, label) from None
        except TimeoutError:
            raise UnreachableError(f"Kubernetes API at {self.server}: no answer within {self.timeout:g}s "
                                   f"({label})") from None
        except urllib.error.URLError as err:
            reason = err.reason
            text = reason.strerror if isinstance(reason, OSError) and reason.strerror else str(reason)
            raise UnreachableError(f"cannot reach the Kubernetes API at {self.server}: {text}; check the "
                                   "cluster and your kubeconfig context") from None
        except OSError as err:
            raise UnreachableError(f"cannot reach the Kubernetes API at {self.server}: {err}") from None
        if len(raw) > MAX_RESPONSE_BYTES:
            raise UnreachableError(f"Kubernetes API at {self.server}: answer for {label} is too large")
        try:
            answer = json.loads(raw)
        except ValueError:
            raise UnreachableError(f"Kubernetes API at {self.server}: answer for {label} is not JSON") from None
        if not isinstance(answer, dict):
            raise UnreachableError(f"Kubernetes API at {self.server}: answer for {label} is not an object")
        return answer

    def _http_error(self, err: urllib.error.HTTPError, label: str) -> UnreachableError:
        message = err.reason
        try:
            status = json.loads(err.read(1024 * 1024))
            if isinstance(status, dict) and status.get("message"):
                message = str(status["message"])
        except (ValueError, OSError):
            pass
        if err.code == 404:
            return UnreachableError(f"{label} not found ({self.server})")
        if err.code in (401, 403):
            word = "unauthorized" if err.code == 401 else "forbidden"
            return UnreachableError(f"Kubernetes API at {self.server}: {word} ({err.code}) for {label}: {message}; "
                                    "check the credentials of your kubeconfig user")
        return UnreachableError(f"Kubernetes API at {self.server}: HTTP {err.code} for {label}: {message}")

    def get_configmap(self, namespace: str, name: str) -> dict[str, Any]:
        """The ConfigMap object ``namespace/name``."""
        path = f"/api/v1/namespaces/{_q(namespace)}/configmaps/{_q(name)}"
        return self.request("GET", path, what=f"ConfigMap {namespace}/{name}")

    def apply_configmap(self, namespace: str, name: str, data: Mapping[str, str] | None = None,
                        binary_data: Mapping[str, bytes] | None = None,
                        labels: Mapping[str, str] | None = None) -> dict[str, Any]:
        """Create or update ConfigMap ``namespace/name`` by server-side apply; the applied object."""
        body: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": name, "namespace": namespace, **({"labels": dict(labels)} if labels else {})},
        }
        if data:
            body["data"] = dict(data)
        if binary_data:
            body["binaryData"] = {key: base64.b64encode(value).decode("ascii") for key, value in binary_data.items()}
        query = urllib.parse.urlencode({"fieldManager": FIELD_MANAGER, "force": "true"})
        path = f"/api/v1/namespaces/{_q(namespace)}/configmaps/{_q(name)}?{query}"
        return self.request("PATCH", path, json.dumps(body).encode("utf-8"), "application/apply-patch+yaml",
                            what=f"ConfigMap {namespace}/{name}")


def get_configmap(namespace: str, name: str, *, kubeconfig: str | None = None) -> dict[str, Any]:
    """The ConfigMap ``namespace/name`` read with the user's kubeconfig."""
    return KubeClient.from_kubeconfig(kubeconfig).get_configmap(namespace, name)


def apply_configmap(namespace: str, name: str, data: Mapping[str, str] | None = None,
                    binary_data: Mapping[str, bytes] | None = None, labels: Mapping[str, str] | None = None,
                    *, kubeconfig: str | None = None) -> dict[str, Any]:
    """Server-side apply of ConfigMap ``namespace/name`` with the user's kubeconfig."""
    return KubeClient.from_kubeconfig(kubeconfig).apply_configmap(namespace, name, data, binary_data, labels)


def _q(part: str) -> str:
    return urllib.parse.quote(part, safe="")


def _ssl_context(cluster: Mapping[str, Any], cluster_base: Path, user: Mapping[str, Any],
                 user_base: Path) -> ssl.SSLContext:
    context = ssl.create_default_context()
    try:
        if cluster.get("insecure-skip-tls-verify") is True:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif cluster.get("certificate-authority-data"):
            pem = _b64(cluster["certificate-authority-data"], "certificate-authority-data")
            context.load_verify_locations(cadata=pem.decode("ascii", "replace"))
        elif cluster.get("certificate-authority"):
            context.load_verify_locations(cafile=str(_file(cluster["certificate-authority"], cluster_base)))
        _load_client_cert(context, user, user_base)
    except (ssl.SSLError, OSError) as err:
        raise InvalidInputError(f"kubeconfig TLS settings cannot be used: {err}") from None
    return context


def _load_client_cert(context: ssl.SSLContext, user: Mapping[str, Any], base: Path) -> None:
    cert_data, key_data = user.get("client-certificate-data"), user.get("client-key-data")
    if cert_data and key_data:
        # ssl only loads certificates from files: write them to a private (0600) temp file, load, delete.
        pem = _b64(cert_data, "client-certificate-data") + b"\n" + _b64(key_data, "client-key-data")
        fd, name = tempfile.mkstemp(prefix="aicr-gen-client-", suffix=".pem")
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(pem)
            context.load_cert_chain(name)
        finally:
            Path(name).unlink(missing_ok=True)
    elif user.get("client-certificate") and user.get("client-key"):
        context.load_cert_chain(str(_file(user["client-certificate"], base)), str(_file(user["client-key"], base)))


def _auth_headers(user: Mapping[str, Any], base: Path) -> dict[str, str]:
    token = user.get("token")
    if not token and user.get("tokenFile"):
        try:
            token = _file(user["tokenFile"], base).read_text(encoding="utf-8").strip()
        except OSError as err:
            raise InvalidInputError(f"kubeconfig tokenFile {user['tokenFile']}: {err.strerror or err}") from None
    if not token and isinstance(user.get("exec"), dict):
        token = _exec_token(user["exec"])
    if token:
        return {"Authorization": f"Bearer {token}"}
    if user.get("username") and user.get("password"):
        pair = f"{user['username']}:{user['password']}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}
    return {}


def _exec_token(spec: Mapping[str, Any]) -> str:
    """Run an exec credential plugin (client.authentication.k8s.io) and return its token."""
    command = [str(spec.get("command") or ""), *(str(arg) for arg in spec.get("args") or [])]
    env = dict(os.environ)
    for entry in spec.get("env") or []:
        if isinstance(entry, dict) and entry.get("name"):
            env[str(entry["name"])] = str(entry.get("value", ""))
    try:
        done = subprocess.run(command, env=env, capture_output=True, timeout=EXEC_TIMEOUT_SECONDS, check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise UnreachableError(f"kubeconfig exec plugin {command[0]!r} failed: {err}") from None
    if done.returncode != 0:
        detail = done.stderr.decode("utf-8", "replace").strip()[-300:]
        raise UnreachableError(f"kubeconfig exec plugin {command[0]!r} exited {done.returncode}: {detail}")
    try:
        token = json.loads(done.stdout)["status"]["token"]
    except (ValueError, KeyError, TypeError):
        raise UnreachableError(f"kubeconfig exec plugin {command[0]!r} gave no status.token") from None
    return str(token)
