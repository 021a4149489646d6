"""A small client of the OCI distribution API: what a tag or digest of a repository resolves to.

Only what locking needs: ``HEAD /v2/<name>/manifests/<reference>`` with the manifest media types a registry
may hold for an image or a Helm chart (OCI index and manifest, Docker manifest list and schema 2), read back
as the ``Docker-Content-Digest`` header (a registry that omits it on HEAD is asked with GET and the body,
at most ``MANIFEST_LIMIT`` bytes as containerd allows, hashed). Requests go through ``transport.py``
(timeouts, deadline, byte limits, retries, redirects checked hop by hop); this module adds the registry's rules,
as Docker, containerd and ORAS keep them:

- **Only the site's hosts.** A client reaches only the hosts it is given (``only``: the spec's mirror), and
  only at ``/v2/<name>/manifests/<reference>`` with ``name`` and ``reference`` checked by the distribution
  reference grammar (``reference.py``) first: nothing a lock file says can send a request to another host or
  out of ``/v2/``.
- **Credentials only to their registry and its token realm.** Per host from a docker ``config.json``
  (``auths.HOST.auth`` or ``username``/``password``; credential helpers are not run), or one ``default`` (the
  command's ``--username`` with ``--password-stdin``, or ``AICR_GEN_REGISTRY_USERNAME``/``_PASSWORD``). They
  are sent only when the registry challenges for them (``WWW-Authenticate``): ``Basic`` to the registry
  itself, ``Bearer realm=...`` to the token realm for the repository's pull scope, then the token to the
  registry. A realm over plain http on a host other than the registry's never gets them (the request is not
  made), and the transport drops them on a redirect to another origin. A user name or password with a control
  character (CR/LF) is refused unprinted, and so is a token that is not an RFC 6750 token.
- **Transport.** HTTPS with the system's CA certificates (or ``ca_file``); plain HTTP only when asked
  (``insecure``) or for a loopback host. ``endpoints`` points a registry host at another base URL (a site mirror
  named by its in-cluster address but reached from CI through another): no credentials in it, no path.

This module is one of aicr-gen's IO edges.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
import os
import re
import ssl
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from aicr_gen.edges.transport import Response, Transport, loopback, origin, redacted
from aicr_gen.errors import InvalidInputError, UnreachableError

MANIFEST_TYPES = (
    "application/vnd.oci.image.index.v1+json",
    "application/vnd.oci.image.manifest.v1+json",
    "application/vnd.docker.distribution.manifest.list.v2+json",
    "application/vnd.docker.distribution.manifest.v2+json",
)
MANIFEST_LIMIT = 4 * 1024 * 1024
"""Bytes of a manifest read whole (containerd's ``MaxManifestSize``)."""
TOKEN_LIMIT = 1024 * 1024
CONFIG_LIMIT = 4 * 1024 * 1024
_DIGEST = re.compile(r"^sha256:[a-f0-9]{64}\Z")
_CHALLENGE_PARAM = re.compile(r'(\w+)="([^"]*)"')
_B64TOKEN = re.compile(r"^[A-Za-z0-9._~+/-]+=*\Z")  # RFC 6750 section 2.1
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")
USER_ENV, PASSWORD_ENV = "AICR_GEN_REGISTRY_USERNAME", "AICR_GEN_REGISTRY_PASSWORD"


@dataclass(frozen=True)
class Credentials:
    """A user name and password (or token) for one registry host."""

    username: str
    password: str

    def basic(self) -> str:
        return "Basic " + base64.b64encode(f"{self.username}:{self.password}".encode()).decode()


def credentials(username: str, password: str, where: str) -> Credentials:
    """Checked credentials from ``where`` (an option or a config entry): a control character (CR/LF) would end
    a header line, and a ':' in the user name would split Basic credentials elsewhere (RFC 7617); neither value
    is ever printed."""
    if _CONTROL.search(username) or ":" in username or not username:
        raise InvalidInputError(f"{where}: the user name is empty or has a ':' or a control character (CR, LF); "
                                "give it on one line")
    if _CONTROL.search(password):
        raise InvalidInputError(f"{where}: the password has a control character (CR, LF) inside; give it on one "
                                "line (a trailing newline is dropped)")
    return Credentials(username, password)


def docker_config(path: Path | None = None) -> dict[str, Credentials]:
    """Host -> credentials of a docker ``config.json`` (``auths.HOST.auth`` base64 ``user:password``, or
    ``username``/``password``); default ``$DOCKER_CONFIG/config.json``, else ``~/.docker/config.json``. Credential
    helpers are not run: a host only they know is asked for without credentials. A file of another shape is an
    input error naming the entry, as ``docker login`` refuses it."""
    if path is None:
        folder = os.environ.get("DOCKER_CONFIG")
        path = Path(folder) / "config.json" if folder else Path.home() / ".docker" / "config.json"
        if not path.is_file():
            return {}
    where = f"--registry-config {path}"
    try:
        if path.stat().st_size > CONFIG_LIMIT:
            raise InvalidInputError(f"{where}: over {CONFIG_LIMIT} bytes; not a docker config.json")
        data = json.loads(path.read_bytes())
    except (OSError, ValueError, RecursionError) as err:
        reason = err.strerror if isinstance(err, OSError) else "not JSON, or nested too deeply"
        raise InvalidInputError(f"{where}: not a readable docker config.json ({reason})") from None
    auths = data.get("auths", {}) if isinstance(data, dict) else None
    if not isinstance(auths, dict):
        raise InvalidInputError(f"{where}: {'auths' if isinstance(data, dict) else 'the file'} is not a mapping "
                                "(docker config.json is {\"auths\": {\"HOST\": {\"auth\": \"...\"}}})")
    found: dict[str, Credentials] = {}
    for key, entry in auths.items():
        host = re.sub(r"^https?://", "", key).split("/", 1)[0]
        here = f"{where}: auths.{key[:100]}"
        if not isinstance(entry, dict):
            raise InvalidInputError(f"{here} is not a mapping (give {{\"auth\": \"base64 of user:password\"}})")
        if entry.get("auth"):
            try:
                if not isinstance(entry["auth"], str):
                    raise ValueError
                user, colon, password = base64.b64decode(entry["auth"], validate=True).decode().partition(":")
            except (ValueError, binascii.Error):
                colon = ""
            if not colon:
                raise InvalidInputError(f"{here}.auth is not the base64 of user:password")
            found[host] = credentials(user, password, f"{here}.auth")
        elif entry.get("username"):
            user, password = entry["username"], entry.get("password") or ""
            if not isinstance(user, str) or not isinstance(password, str):
                raise InvalidInputError(f"{here}: username and password must be strings")
            found[host] = credentials(user, password, here)
    return found


def endpoint(text: str) -> tuple[str, str]:
    """``(HOST or '*', base URL)`` of a ``--registry [HOST=]URL``: an http(s) URL of a registry's root (no
    credentials, no path: the API is at ``/v2/``)."""
    host, equals, url = text.partition("=")
    host, url = (host, url) if equals and "://" not in host else ("*", text)
    shown = f"--registry {'' if host == '*' else host + '='}{redacted(url)}"
    try:
        parts = urllib.parse.urlsplit(url)
        parts.port  # noqa: B018 - parsed for its check
    except ValueError:
        parts = urllib.parse.urlsplit("")
    if parts.username is not None or parts.password is not None:
        raise InvalidInputError(f"{shown}: credentials in the URL are not sent; give them with --username and "
                                f"--password-stdin, {USER_ENV}/{PASSWORD_ENV} or --registry-config")
    if parts.scheme not in ("http", "https") or not parts.hostname or parts.path.strip("/") or parts.query \
            or parts.fragment:
        raise InvalidInputError(f"{shown}: give [HOST=]URL, e.g. http://127.0.0.1:5000 or "
                                "registry.site.example:5000=https://10.0.0.5:5000 (no path: the API is at /v2/)")
    return host, f"{parts.scheme}://{parts.netloc}"


def _hostname(host: str) -> str:
    """The host name of ``HOST[:PORT]`` (an IPv6 literal without its brackets)."""
    return urllib.parse.urlsplit(f"//{host}").hostname or host


def _checked(host: str, repository: str, reference: str) -> None:
    """``host/repository`` and its tag or digest as the distribution reference grammar reads them, unchanged:
    nothing else may become a request path."""
    from aicr_gen.text.image_reference import parse_image

    text = f"{host}/{repository}" + (f"@{reference}" if ":" in reference else f":{reference}")
    ref = parse_image(text)
    if (ref.domain, ref.path) != (host, repository):
        raise InvalidInputError(f"registry reference {text!r}: not HOST/REPOSITORY as the distribution grammar "
                                "reads it")


@dataclass
class Client:
    """Resolves references on the registries of a site; one authorization per host and repository is reused."""

    credentials: Mapping[str, Credentials] = field(default_factory=dict)
    """Host[:port] -> credentials (``default`` applies to every host without its own)."""
    default: Credentials | None = None
    endpoints: Mapping[str, str] = field(default_factory=dict)
    """Host[:port] -> base URL to reach it at; ``*`` applies to every host."""
    ca_file: str | None = None
    insecure: bool = False
    loopback_http: bool = True
    """Plain HTTP to a loopback host without asking, as container runtimes do (off for ``bundle --output
    oci://``, which speaks HTTPS unless ``--plain-http``, as AICR's ORAS client does)."""
    insecure_tls: bool = False
    """Certificates not checked (``bundle --insecure-tls``, AICR's flag): for a registry with a self-signed
    certificate; the credentials then go to whoever answers on that address."""
    hosts: frozenset[str] = frozenset()
    """The hosts it may reach (``only``); no other is contacted."""
    _auth: dict[tuple[str, str, str], str] = field(default_factory=dict, repr=False)
    _transport: Transport = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if self.ca_file is not None:
            try:
                ssl.create_default_context(cafile=self.ca_file)
            except (OSError, ssl.SSLError) as err:
                raise InvalidInputError(f"--ca-file {self.ca_file}: not a readable PEM bundle ({err})") from None
        self._transport = Transport("registry", ca_file=self.ca_file, plain_http=self.insecure,
                                    verify=not self.insecure_tls)
        for url in self.endpoints.values():
            self._transport.check_url(url)

    def only(self, hosts: Iterable[str]) -> Client:
        """This client limited to ``hosts`` (its connections and tokens shared)."""
        narrowed = replace(self, hosts=frozenset(hosts))
        narrowed._transport = self._transport
        return narrowed

    def base_url(self, host: str) -> str:
        found = self.endpoints.get(host) or self.endpoints.get("*")
        if found:
            return found
        plain = self.insecure or (self.loopback_http and loopback(_hostname(host)))
        return f"{'http' if plain else 'https'}://{host}"

    def _credentials(self, host: str) -> Credentials | None:
        return self.credentials.get(host) or self.default

    def _token(self, host: str, repository: str, challenge: str, actions: str) -> str:
        """A Bearer token for the repository's scope (``actions``: ``pull``, or ``pull,push`` to publish) from the
        challenge's realm, with the host's credentials when the realm may have them."""
        params = dict(_CHALLENGE_PARAM.findall(challenge))
        realm = params.pop("realm", "")
        self._transport.check_url(realm, peer=f"registry {host}: the token realm")
        creds = self._credentials(host)
        realm_host = urllib.parse.urlsplit(realm).hostname
        registry_hosts = {urllib.parse.urlsplit(self.base_url(host)).hostname, _hostname(host)}
        if creds is not None and realm.startswith("http://") and realm_host not in registry_hosts:
            raise UnreachableError(f"registry {host}: the token realm {redacted(realm)} is plain http on another "
                                   "host; the credentials are not sent there (the token service must be https)")
        if actions != "pull" or "scope" not in params:  # a push asks for its own scope, whatever a HEAD was told
            params["scope"] = f"repository:{repository}:{actions}"
        headers = {"Accept": "application/json"}
        if creds is not None:
            headers["Authorization"] = creds.basic()
        url = realm + ("&" if "?" in realm else "?") + urllib.parse.urlencode(sorted(params.items()))
        answer = self._transport.send("GET", url, headers, limit=TOKEN_LIMIT)
        if answer.status != 200:
            raise UnreachableError(f"registry {host}: the token service {redacted(realm)} answered {answer.status} "
                                   f"for {params['scope']}; check the credentials (--registry-config, --username)")
        try:
            data = json.loads(answer.body)
        except (ValueError, RecursionError):
            data = None
        token = (data.get("token") or data.get("access_token")) if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise UnreachableError(f"registry {host}: the token service {redacted(realm)} returned no token")
        if not _B64TOKEN.match(token):
            raise UnreachableError(f"registry {host}: the token service {redacted(realm)} returned a token with "
                                   "characters a Bearer token cannot have (RFC 6750); not used")
        return token

    def _request(self, method: str, host: str, repository: str, path: str, limit: int, *, actions: str = "pull",
                 body: bytes | None = None, headers: Mapping[str, str] | None = None) -> Response:
        """``method`` on ``/v2/<repository>/<path>`` of ``host`` (or on ``path`` itself when it is an upload
        ``Location`` URL the registry gave), authorized for ``actions`` when the registry challenges. Credentials
        and tokens go only to the registry's own origin: an upload URL elsewhere gets none."""
        base = self.base_url(host)
        url = path if path.startswith(("https://", "http://")) else f"{base}/v2/{repository}/{path}"
        own = origin(url) == origin(base)
        sent_headers = {"Accept": ", ".join(MANIFEST_TYPES), **(headers or {})}
        key = (host, repository, actions)
        if own and (sent := self._auth.get(key)) is not None:
            sent_headers["Authorization"] = sent
        retries = 0 if body else None
        answer = self._transport.send(method, url, sent_headers, body, limit=limit, retries=retries)
        if answer.status == 401 and own:
            scheme, _, params = answer.headers.get("WWW-Authenticate", "").strip().partition(" ")
            creds = self._credentials(host)
            auth = ("Bearer " + self._token(host, repository, params, actions) if scheme.lower() == "bearer" else
                    creds.basic() if scheme.lower() == "basic" and creds is not None else None)
            if auth is not None and auth != sent_headers.get("Authorization"):
                self._auth[key] = auth
                answer = self._transport.send(method, url, {**sent_headers, "Authorization": auth}, body,
                                              limit=limit, retries=retries)
        if answer.status in (401, 403):
            raise UnreachableError(f"registry {host}: {answer.status} for {repository}; give credentials "
                                   "(--registry-config, --username with --password-stdin, or "
                                   f"{USER_ENV}/{PASSWORD_ENV})")
        return answer

    def push(self, method: str, host: str, repository: str, path: str, body: bytes | None = None, *,
             content_type: str | None = None) -> Response:
        """One request of a publication (``pull,push`` scope) on ``host``, which this client must be limited to;
        ``path`` is below ``/v2/<repository>/`` or an upload ``Location`` the registry answered with (resolved
        against the registry's URL)."""
        if host not in self.hosts:
            raise InvalidInputError(f"registry {host}: not the host this client publishes to")
        _checked(host, repository, "latest")
        headers = {"Content-Type": content_type} if content_type else {}
        return self._request(method, host, repository, path, MANIFEST_LIMIT, actions="pull,push", body=body,
                             headers=headers)

    def resolve(self, host: str, repository: str, reference: str) -> str | None:
        """The manifest digest ``reference`` (a tag or a digest) of ``host/repository`` resolves to; None when
        the registry has no such manifest. A host this client may not reach, or a name or reference outside the
        distribution grammar, is an input error before any request."""
        if host not in self.hosts:
            raise InvalidInputError(f"registry {host}: not a host of the spec's mirror; aicr-gen reaches only "
                                    f"{', '.join(sorted(self.hosts)) or 'the mirror'}")
        _checked(host, repository, reference)
        answer = self._request("HEAD", host, repository, f"manifests/{reference}", MANIFEST_LIMIT)
        if answer.status == 404:
            return None
        if answer.status != 200:
            raise UnreachableError(f"registry {host}: HEAD {repository} manifest {reference} answered "
                                   f"{answer.status}")
        found = str(answer.headers.get("Docker-Content-Digest") or "")
        if not _DIGEST.match(found):
            answer = self._request("GET", host, repository, f"manifests/{reference}", MANIFEST_LIMIT)
            if answer.status == 404:
                return None
            if answer.status != 200:
                raise UnreachableError(f"registry {host}: GET {repository} manifest {reference} answered "
                                       f"{answer.status}")
            found = "sha256:" + hashlib.sha256(answer.body).hexdigest()
        if reference.startswith("sha256:") and found != reference:
            raise UnreachableError(f"registry {host}: {repository}@{reference} came back as {found}")
        return found
