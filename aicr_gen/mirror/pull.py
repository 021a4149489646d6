"""Pulling upstream charts into a bundle (``bundle --vendor-charts``) with the real ``helm pull``, as AICR does.

Before ``helm pull`` runs, as in AICR: the chart name and version must be plain tokens (never a helm flag), the
repository host (and, for an HTTP repository, every URL its ``index.yaml`` gives for the version) may not be a
loopback, private, link-local or cloud-metadata address, and the index must list the version. Everything is
bounded: the index read (``transport.py``: 120 s in all, 32 MiB, 10 redirects, each hop checked like the repository
host; credentials in the repository URL only as a header to its own origin, over https), the pull (5 minutes) and
the chart (64 MiB). A chart that two components share is pulled once. Errors exit as AICR classifies them: input 2,
repository or chart not there 3.
"""

from __future__ import annotations

import base64
import ipaddress
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import urllib.parse
from pathlib import Path

from aicr_gen.edges.transport import Transport, redacted
from aicr_gen.errors import InvalidInputError, UnreachableError
from aicr_gen.text.versions import parse_semver

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aicr_gen.render.plan import Plan, Vendored

PULL_TIMEOUT = 300.0
CHART_LIMIT = 64 * 1024 * 1024
INDEX_TIMEOUT = 120.0
"""Seconds for the whole index read (the transport's connect and read timeouts apply within it)."""
INDEX_LIMIT = 32 * 1024 * 1024
ALLOWED_HOSTS = "AICR_GEN_VENDOR_ALLOWED_HOSTS"
"""Comma-separated repository hosts exempt from the address check (an internal chart mirror); not in AICR."""

_NAME = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._-]*\Z")
_VERSION = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._+-]*\Z")
_TARBALL = re.compile(r"^[a-zA-Z0-9][a-zA-Z0-9._+-]*\.tgz\Z")
# The ranges Go's net.IP methods and AICR's policy refuse (Python's is_private covers more, e.g. TEST-NET)
_REFUSED = [(ipaddress.ip_network(net), reason) for net, reason in (
    ("169.254.169.254/32", "cloud-metadata"), ("100.100.100.200/32", "cloud-metadata"),
    ("fd00:ec2::254/128", "cloud-metadata"), ("fe80::a9fe:a9fe/128", "cloud-metadata"),
    ("127.0.0.0/8", "loopback"), ("::1/128", "loopback"), ("169.254.0.0/16", "link-local"),
    ("fe80::/10", "link-local"), ("224.0.0.0/4", "multicast"), ("ff00::/8", "multicast"),
    ("0.0.0.0/32", "unspecified"), ("::/128", "unspecified"), ("10.0.0.0/8", "private"),
    ("172.16.0.0/12", "private"), ("192.168.0.0/16", "private"), ("fc00::/7", "private"),
    ("100.64.0.0/10", "private"), ("0.0.0.0/8", "martian"), ("240.0.0.0/4", "martian"))]


def helm_binary() -> str:
    """``helm`` on PATH (exit 2 naming the fix when there is none)."""
    found = shutil.which("helm")
    if found is None:
        raise InvalidInputError("--vendor-charts: helm CLI not found on PATH (install helm or drop --vendor-charts)")
    return found


def vendored(plan: Plan) -> Plan:
    """``plan`` with every upstream Helm chart pulled into it."""
    from aicr_gen.render import vendor

    units = vendor.wanted(plan)
    if not units:
        return plan
    helm = helm_binary()
    puller = _puller_version(helm)
    pulled: dict[tuple[str, str, str], Vendored] = {}
    for unit in units:
        key = (unit.repository, unit.chart, unit.version)
        if key not in pulled:
            pulled[key] = pull(helm, unit.component, unit.chart, unit.version, unit.repository, puller=puller)
    return vendor.vendor(plan, {unit.name: pulled[(unit.repository, unit.chart, unit.version)] for unit in units})


def pull(helm: str, name: str, chart: str, version: str, repository: str, *, puller: str = "") -> Vendored:
    """One chart, checked and pulled; the tarball's bytes and name."""
    from aicr_gen.render.plan import Vendored

    oci = repository.startswith("oci://")
    _check_tokens(name, chart, version, repository, oci)
    deadline = time.monotonic() + PULL_TIMEOUT
    check_host(repository)
    if not oci:
        _check_index(chart, version, repository)
    target = f"{repository.rstrip('/')}/{chart}" if oci else chart
    args = [helm, "pull", target, *([] if oci else ["--repo", repository]), "--version", version]
    with tempfile.TemporaryDirectory(prefix="aicr-gen-vendor-") as scratch:
        try:
            done = subprocess.run([*args, "--destination", scratch], capture_output=True, text=True, check=False,
                                  timeout=max(1.0, deadline - time.monotonic()), stdin=subprocess.DEVNULL)
        except OSError as err:
            raise InvalidInputError(f"--vendor-charts: cannot run {helm}: {err}") from None
        except subprocess.TimeoutExpired:
            raise UnreachableError(f"--vendor-charts: pulling {chart} {version} from {redacted(repository)} took "
                                   f"longer than {PULL_TIMEOUT:.0f} s") from None
        if done.returncode != 0:
            raise _classified(chart, version, repository, done.stdout + done.stderr)
        tarballs = sorted(Path(scratch).glob("*.tgz"))
        if len(tarballs) != 1:
            raise UnreachableError(f"--vendor-charts: helm pull of {chart} {version} left {len(tarballs)} .tgz files")
        return Vendored(tarball=_tarball_name(tarballs[0].name), data=_bounded(tarballs[0]), puller=puller)


def _check_tokens(name: str, chart: str, version: str, repository: str, oci: bool) -> None:
    """Names and versions reach ``helm pull`` as arguments: a leading '-' would be a helm flag."""
    where = f"--vendor-charts: component {name!r}"
    if not _NAME.match(chart):
        raise InvalidInputError(f"{where}: chart name {chart!r} must match {_NAME.pattern}")
    if not _VERSION.match(version):
        raise InvalidInputError(f"{where}: version {version!r} must match {_VERSION.pattern}; pin one version")
    scheme = urllib.parse.urlsplit(repository).scheme
    if not oci and scheme not in ("http", "https"):
        raise InvalidInputError(f"{where}: repository {redacted(repository)!r} must be http(s):// or oci://")
    if scheme == "http" and "@" in urllib.parse.urlsplit(repository).netloc:
        raise InvalidInputError(f"{where}: repository {redacted(repository)!r} has credentials over plain http; "
                                "use https")


def _allowed_hosts() -> set[str]:
    return {host.strip().lower() for host in os.environ.get(ALLOWED_HOSTS, "").split(",") if host.strip()}


def refused_reason(address: str) -> str:
    """Why AICR's egress policy refuses ``address`` ('' when it does not); NAT64 and 6to4 addresses are judged
    by the IPv4 address they carry."""
    ip = ipaddress.ip_address(address.partition("%")[0])
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip in ipaddress.ip_network("64:ff9b::/96"):
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        elif ip.sixtofour is not None:
            ip = ip.sixtofour
    if ip == ipaddress.ip_address("255.255.255.255"):
        return "martian"
    return next((reason for net, reason in _REFUSED if ip.version == net.version and ip in net), "")


def check_host(url: str) -> None:
    """Refuse a URL whose host is, or resolves to, an address AICR's egress policy refuses (exit 2); an
    unresolvable host is unreachable (exit 3)."""
    host = (urllib.parse.urlsplit(url).hostname or "").lower()
    if not host:
        raise InvalidInputError(f"--vendor-charts: repository URL {redacted(url)!r} has no host")
    if host in _allowed_hosts():
        return
    try:
        addresses = [str(ipaddress.ip_address(host))]
    except ValueError:
        try:
            addresses = sorted({str(info[4][0]) for info in socket.getaddrinfo(host, None)})
        except (OSError, UnicodeError) as err:
            raise UnreachableError(f"--vendor-charts: cannot resolve repository host {host!r}: {err}") from None
    for address in addresses:
        reason = refused_reason(address)
        if reason:
            raise InvalidInputError(
                f"--vendor-charts: repository host {host!r} resolves to disallowed address {address} ({reason}); "
                f"pull from a public repository, or list the host in {ALLOWED_HOSTS}")


def _check_index(chart: str, version: str, repository: str) -> None:
    """The repository's index lists ``chart`` at ``version`` and every URL it gives for it passes the host
    check (a public index must not send helm to a private address)."""
    from aicr_gen.yaml import load_text

    index_url = repository.rstrip("/") + "/index.yaml"
    parts = urllib.parse.urlsplit(index_url)
    headers = {}
    if parts.username is not None:  # as Go's http client (and so helm) sends URL credentials
        headers["Authorization"] = "Basic " + base64.b64encode(
            f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}".encode()).decode()
        index_url = urllib.parse.urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))
    answer = Transport("--vendor-charts: repository index", plain_http=True).send(
        "GET", index_url, headers, limit=INDEX_LIMIT, deadline=INDEX_TIMEOUT, check=check_host)
    if answer.status != 200:
        message = f"--vendor-charts: GET {redacted(index_url)} returned HTTP {answer.status}"
        if 400 <= answer.status < 500 and answer.status not in (401, 403, 404, 408, 429):
            raise InvalidInputError(message)
        raise UnreachableError(message)
    try:
        index = load_text(answer.body.decode("utf-8"), index_url).data
    except (InvalidInputError, UnicodeDecodeError, RecursionError):
        raise InvalidInputError(f"--vendor-charts: index at {redacted(index_url)} is not valid YAML") from None
    entries = ((index or {}).get("entries") or {}).get(chart) if isinstance(index, dict) else None
    if not entries:
        raise UnreachableError(f"--vendor-charts: repository {redacted(repository)} has no chart {chart!r}")
    base = index_url.removesuffix("index.yaml")
    for url in _urls(entries, chart, version):
        check_host(urllib.parse.urljoin(base, url))


def _urls(entries: list[Any], chart: str, version: str) -> list[str]:
    """The tarball URLs of the entry ``version`` selects: the same version (``v1.2.3`` is ``1.2.3``), or for a
    partial one (``1.2``, ``1.2.x``) the highest release it covers."""
    pinned = parse_semver(version)
    versions = [(str(entry.get("version", "")), entry.get("urls") or [])
                for entry in entries if isinstance(entry, dict)]
    same = [urls for text, urls in versions if text == version or (pinned is not None and parse_semver(text) == pinned)]
    if same:
        urls = [str(url) for group in same for url in group]
        if not urls:
            raise UnreachableError(f"--vendor-charts: chart {chart!r} {version} has no tarball URL in the index")
        return urls
    parts = [part for part in version.removeprefix("v").split(".") if part not in ("x", "X", "*")]
    if pinned is not None or len(parts) > 3 or not all(part.isdigit() for part in parts):
        raise UnreachableError(f"--vendor-charts: chart {chart!r} has no index entry matching pinned version "
                               f"{version!r}")
    wanted = tuple(int(part) for part in parts)
    covered = [(parsed[:3], urls) for text, urls in versions
               if (parsed := parse_semver(text)) is not None and not parsed[3] and parsed[:len(wanted)] == wanted]
    if not covered:
        raise UnreachableError(f"--vendor-charts: chart {chart!r} has no index entry satisfying {version!r}")
    best = max(key for key, _ in covered)
    return [str(url) for key, urls in covered if key == best for url in urls]


def _classified(chart: str, version: str, repository: str, output: str) -> Exception:
    """``helm pull``'s failure as AICR classifies it: chart or repository not there, not allowed, too slow,
    unreachable (all exit 3) or another failure (exit 3, with helm's message)."""
    password = urllib.parse.urlsplit(repository).password
    text, where = output.strip(), f"{chart} {version} from {redacted(repository)}"
    text = text.replace(password, "xxxxx") if password else text
    lowered = text.lower()
    if any(word in lowered for word in ("not found", "404", "no chart version", "no chart name")):
        return UnreachableError(f"--vendor-charts: chart {where} not found: {text}")
    if any(word in lowered for word in ("401", "403", "unauthorized", "forbidden")):
        return UnreachableError(f"--vendor-charts: authentication failed pulling {where}: {text}")
    if any(word in lowered for word in ("no such host", "connection refused", "dial tcp")):
        return UnreachableError(f"--vendor-charts: cannot reach repository {redacted(repository)}: {text}")
    return UnreachableError(f"--vendor-charts: helm pull {where} failed: {text}")


def _bounded(path: Path) -> bytes:
    """The pulled chart, refused beyond ``CHART_LIMIT`` bytes (before reading it all)."""
    size = path.stat().st_size
    if size > CHART_LIMIT:
        raise InvalidInputError(f"--vendor-charts: pulled chart {path.name} is {size} bytes, over the "
                                f"{CHART_LIMIT}-byte limit")
    with path.open("rb") as handle:
        data = handle.read(CHART_LIMIT + 1)
    if len(data) > CHART_LIMIT:
        raise InvalidInputError(f"--vendor-charts: pulled chart {path.name} grew past {CHART_LIMIT} bytes")
    return data


def _tarball_name(name: str) -> str:
    if not _TARBALL.match(name):
        raise InvalidInputError(f"--vendor-charts: helm pull wrote {name!r}, not a plain <chart>-<version>.tgz")
    return name


def _puller_version(helm: str) -> str:
    """``helm-cli <helm version --short>`` for provenance.yaml; '' when helm does not say."""
    try:
        done = subprocess.run([helm, "version", "--short"], capture_output=True, text=True, check=False, timeout=30,
                              stdin=subprocess.DEVNULL)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return f"helm-cli {done.stdout.strip()}" if done.returncode == 0 and done.stdout.strip() else ""
