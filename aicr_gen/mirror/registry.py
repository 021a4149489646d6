"""A small client of the OCI distribution API: what a tag or digest of a repository resolves to.

Only what locking needs: ``HEAD /v2/<name>/manifests/<reference>`` with the manifest media types a registry
may hold for an image or a Helm chart (OCI index and manifest, Docker manifest list and schema 2), read back
as the ``Docker-Content-Digest`` header (a registry that omits it on HEAD is asked with GET and the body
hashed). Authentication as registries challenge for it: ``WWW-Authenticate: Bearer realm=...`` (a token
fetched from the realm for the repository's pull scope, with the credentials if there are any) or ``Basic``.

Written on ``urllib`` rather than a registry library: the two requests above are all it sends, and the
libraries that do more (oras, docker) would be a new runtime dependency for every user of aicr-gen, most of
whom never lock a mirror.

Transport: HTTPS with the system's CA certificates (or ``ca_file``); plain HTTP only when asked (``insecure``)
or for a loopback host (``localhost``, ``127.0.0.0/8``, ``::1``), which container runtimes also treat as
insecure. ``endpoints`` points a registry host at another base URL (a site mirror named by its in-cluster
address but reached from CI through another). This module is one of aicr-gen's IO edges.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import os
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aicr_gen.errors import InvalidInputError, UnreachableError

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
_DIGEST = re.compile(r"^sha256:[a-f0-9]{64}$")
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')
USER_ENV, PASSWORD_ENV = "AICR_GEN_REGISTRY_USERNAME", "AICR_GEN_REGISTRY_PASSWORD"
TIMEOUT = 30.0


@dataclass(frozen=True)
class Credentials:
    """A user name and password (or token) for one registry host."""

    username: str
    password: str

    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


def loopback(host: str) -> bool:
    """Whether ``host`` (without port) is this machine."""
    name = host.strip("[]")
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


def split_host(host_port: str) -> str:
    """The host of ``HOST[:PORT]`` (an IPv6 literal keeps its brackets)."""
    if host_port.startswith("["):
        return host_port[:host_port.index("]") + 1]
    return host_port.rsplit(":", 1)[0] if ":" in host_port else host_port


def docker_config(path: Path | None = None) -> dict[str, Credentials]:
    """Host -> credentials of a docker ``config.json`` (``auths.HOST.auth`` base64 ``user:password``, or
    ``username``/``password``); default ``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``. Credential
    helpers are not run: a host only they know is asked for without credentials."""
    if path is None:
        folder = os.environ.get("DOCKER_CONFIG")
        path = Path(folder) / "config.json" if folder else Path.home() / ".docker" / "config.json"
        if not path.is_file():
            return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as err:
        raise InvalidInputError(f"--registry-config {path}: not a readable docker config.json ({err})") from None
    found: dict[str, Credentials] = {}
    for key, entry in (data.get("auths") or {}).items() if isinstance(data, dict) else ():
        if not isinstance(entry, dict):
            continue
        host = re.sub(r"^https?://", "", str(key)).split("/", 1)[0]
        if entry.get("auth"):
            try:
                user, _, password = base64.b64decode(str(entry["auth"])).decode().partition(":")
            except ValueError:
                raise InvalidInputError(f"--registry-config {path}: auths.{key}.auth is not base64 "
                                        "user:password") from None
            found[host] = Credentials(user, password)
        elif entry.get("username"):
            found[host] = Credentials(str(entry["username"]), str(entry.get("password") or ""))
    return found


@dataclass
class Client:
    """Resolves references on the registries of a site; one token per host and repository is reused."""

    credentials: Mapping[str, Credentials] = field(default_factory=dict)
    """Host[:port] -> credentials (``default`` applies to every host without its own)."""
    default: Credentials | None = None
    endpoints: Mapping[str, str] = field(default_factory=dict)
    """Host[:port] -> base URL to reach it at; ``*`` applies to every host."""
    ca_file: str | None = None
    insecure: bool = False
    _tokens: dict[tuple[str, str], str] = field(default_factory=dict)

    def base_url(self, host: str) -> str:
        found = self.endpoints.get(host) or self.endpoints.get("*")
        if found:
            return found.rstrip("/")
        scheme = "http" if self.insecure or loopback(split_host(host)) else "https"
        return f"{scheme}://{host}"

    def _context(self) -> ssl.SSLContext:
        try:
            return ssl.create_default_context(cafile=self.ca_file)
        except (OSError, ssl.SSLError) as err:
            raise InvalidInputError(f"--ca-file {self.ca_file}: not a readable PEM bundle ({err})") from None

    def _send(self, method: str, url: str, headers: Mapping[str, str]) -> tuple[int, Any, bytes]:
        request = urllib.request.Request(url, method=method, headers=dict(headers))
        context = self._context() if url.startswith("https://") else None
        try:
            with urllib.request.urlopen(request, timeout=TIMEOUT, context=context) as response:
                return response.status, response.headers, response.read()
        except urllib.error.HTTPError as err:
            return err.code, err.headers, err.read()
        except (urllib.error.URLError, OSError) as err:
            reason = getattr(err, "reason", err)
            raise UnreachableError(f"registry {urllib.parse.urlsplit(url).netloc}: {reason} ({url})") from None

    def _token(self, host: str, repository: str, challenge: str) -> str:
        params = dict(_CHALLENGE_PARAM.findall(challenge))
        realm = params.pop("realm", "")
        if not realm.startswith(("https://", "http://")):
            raise UnreachableError(f"registry {host}: a Bearer challenge without a usable realm ({challenge!r})")
        params.setdefault("scope", f"repository:{repository}:pull")
        headers = {"Accept": "application/json"}
        creds = self.credentials.get(host) or self.default
        if creds is not None:
            headers["Authorization"] = creds.basic()
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(sorted(params.items()))
        status, _, body = self._send("GET", url, headers)
        if status != 200:
            raise UnreachableError(f"registry {host}: the token service {realm} answered {status} for "
                                   f"{params['scope']}; check the credentials (--registry-config, --username)")
        try:
            data = json.loads(body)
        except ValueError:
            data = {}
        token = data.get("token") or data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise UnreachableError(f"registry {host}: the token service {realm} returned no token")
        return token

    def _request(self, method: str, host: str, repository: str, path: str) -> tuple[int, Any, bytes]:
        url = f"{self.base_url(host)}/v2/{repository}/{path}"
        headers = {"Accept": ", ".join(MANIFEST_TYPES)}
        token = self._tokens.get((host, repository))
        if token is not None:
            headers["Authorization"] = f"Bearer {token}"
        elif (creds := self.credentials.get(host) or self.default) is not None and not url.startswith("http://"):
            headers["Authorization"] = creds.basic()
        status, answer, body = self._send(method, url, headers)
        challenge = answer.get("WWW-Authenticate", "") if status == 401 else ""
        if challenge.lower().startswith("bearer "):
            token = self._tokens[(host, repository)] = self._token(host, repository, challenge[len("bearer "):])
            status, answer, body = self._send(method, url, {**headers, "Authorization": f"Bearer {token}"})
        elif challenge.lower().startswith("basic ") and (creds := self.credentials.get(host) or self.default):
            status, answer, body = self._send(method, url, {**headers, "Authorization": creds.basic()})
        if status in (401, 403):
            raise UnreachableError(f"registry {host}: {status} for {repository}; give credentials "
                                   "(--registry-config, --username with --password-stdin, or "
                                   f"{USER_ENV}/{PASSWORD_ENV})")
        return status, answer, body

    def resolve(self, host: str, repository: str, reference: str) -> str | None:
        """The manifest digest ``reference`` (a tag or a digest) of ``host/repository`` resolves to; None when
        the registry has no such manifest."""
        status, headers, _ = self._request("HEAD", host, repository, f"manifests/{reference}")
        if status == 404:
            return None
        if status != 200:
            raise UnreachableError(f"registry {host}: HEAD {repository} manifest {reference} answered {status}")
        found = str(headers.get("Docker-Content-Digest") or "")
        if not _DIGEST.match(found):
            status, headers, body = self._request("GET", host, repository, f"manifests/{reference}")
            if status == 404:
                return None
            found = "sha256:" + hashlib.sha256(body).hexdigest()
        if reference.startswith("sha256:") and found != reference:
            raise UnreachableError(f"registry {host}: {repository}@{reference} came back as {found}")
        return found
