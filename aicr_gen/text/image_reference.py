"""Container image references, read the way the container runtime reads them.

The grammar is the Docker/OCI distribution reference grammar (distribution/reference ``reference.go`` and
its normalisation in ``normalize.go``): ``[domain/]path[:tag][@digest]``.

- The first ``/``-separated component is a registry host only when it contains ``.`` or ``:``, is
  ``localhost``, or has an upper-case letter; otherwise the whole name is a Docker Hub path (``nginx``,
  ``nvidia/cuda``). Docker Hub is ``docker.io`` (``index.docker.io`` is the same), and a one-component
  Docker Hub path lives under ``library/``.
- Path components are lower-case ``[a-z0-9]+`` joined by ``.``, ``_``, ``__`` or runs of ``-``; the whole
  name is at most 255 characters.
- A tag is ``[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}``; a digest is ``algorithm:hex`` with at least 32 hex digits
  (``sha256`` has exactly 64). Neither tag nor digest means ``latest``.

Pure: values in, values out.
"""

from __future__ import annotations

import re
from typing import NamedTuple

from aicr_gen.errors import InvalidInputError

DOCKER_HUB = "docker.io"
_LEGACY_HUB = "index.docker.io"
_OFFICIAL = "library"
_MAX_NAME = 255

_COMPONENT = r"[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*"
_PATH = re.compile(rf"^{_COMPONENT}(?:/{_COMPONENT})*\Z")
_DOMAIN_LABEL = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_HOST = rf"(?:{_DOMAIN_LABEL}(?:\.{_DOMAIN_LABEL})*|\[[a-fA-F0-9:]+\])"
_DOMAIN = re.compile(rf"^{_HOST}(?::[0-9]+)?\Z")
_TAG = re.compile(r"^[\w][\w.-]{0,127}\Z")
_DIGEST = re.compile(r"^[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}\Z")
_HEX64 = re.compile(r"^[a-f0-9]{64}\Z")


class ImageRef(NamedTuple):
    """A parsed, normalised image reference: ``domain/path[:tag][@digest]``."""

    domain: str
    path: str
    tag: str = ""
    digest: str = ""

    @property
    def name(self) -> str:
        """The repository: ``domain/path``."""
        return f"{self.domain}/{self.path}"

    def __str__(self) -> str:
        """The fully qualified reference, as the runtime pulls it (a bare name gets no ``:latest`` added)."""
        return self.name + (f":{self.tag}" if self.tag else "") + (f"@{self.digest}" if self.digest else "")

    @property
    def pinned(self) -> str:
        """The reference a pull resolves: the tag, ``latest`` when there is neither tag nor digest."""
        if self.tag or self.digest:
            return str(self)
        return f"{self.name}:latest"

    def with_digest(self, digest: str) -> ImageRef:
        """The same image pinned to ``digest`` (the tag is kept for readers; the runtime pulls the digest)."""
        return self._replace(digest=digest)


def parse_image(text: str) -> ImageRef:
    """``text`` as an image reference normalised as the runtime does; anything the runtime would refuse is
    an input error saying why."""
    if not text or text != text.strip():
        raise InvalidInputError(f"image reference {text!r} is empty or has surrounding spaces")
    rest, _, digest = text.partition("@")
    if digest and not _DIGEST.match(digest):
        raise InvalidInputError(f"image reference {text!r}: {digest!r} is not a digest (algorithm:hex, e.g. "
                                "sha256: and 64 hex digits)")
    if digest.startswith("sha256:") and len(digest) != len("sha256:") + 64:
        raise InvalidInputError(f"image reference {text!r}: a sha256 digest has 64 hex digits")
    tag = ""
    colon = rest.rfind(":")
    if colon > rest.rfind("/"):  # a ':' after the last '/' starts the tag (one before it is a port)
        rest, tag = rest[:colon], rest[colon + 1:]
        if not _TAG.match(tag):
            raise InvalidInputError(f"image reference {text!r}: {tag!r} is not a tag (letters, digits, '_', '.', "
                                    "'-'; 128 at most, not starting with '.' or '-')")
    domain, path = _split_domain(rest)
    if not _DOMAIN.match(domain):
        raise InvalidInputError(f"image reference {text!r}: {domain!r} is not a registry host[:port]")
    if not _PATH.match(path):
        reason = "must be lower-case" if path.lower() != path else "is not a repository path"
        raise InvalidInputError(f"image reference {text!r}: {path!r} {reason} (components of a-z, 0-9 joined by "
                                "'.', '_', '__' or '-')")
    if len(f"{domain}/{path}") > _MAX_NAME:
        raise InvalidInputError(f"image reference {text!r}: the repository name is longer than {_MAX_NAME}")
    if _HEX64.match(text):
        raise InvalidInputError(f"image reference {text!r}: a 64-hex-digit name is an image ID, not a reference")
    return ImageRef(domain, path, tag, digest)


def _split_domain(name: str) -> tuple[str, str]:
    first, slash, remainder = name.partition("/")
    if slash and (any(ch in first for ch in ".:") or first == "localhost" or first.lower() != first):
        domain = DOCKER_HUB if first == _LEGACY_HUB else first
        path = remainder
    else:
        domain, path = DOCKER_HUB, name
    if domain == DOCKER_HUB and "/" not in path:
        path = f"{_OFFICIAL}/{path}"
    return domain, path


def is_image(text: str) -> bool:
    """Whether ``text`` parses as an image reference."""
    try:
        parse_image(text)
    except InvalidInputError:
        return False
    return True


def familiar(ref: ImageRef) -> str:
    """The short form people write (``nginx:1.27`` for ``docker.io/library/nginx:1.27``)."""
    text = str(ref)
    if ref.domain == DOCKER_HUB:
        text = text.removeprefix(f"{DOCKER_HUB}/").removeprefix(f"{_OFFICIAL}/")
    return text


def mirrored(ref: ImageRef, mirror: str) -> ImageRef:
    """``ref`` moved to the mirror prefix ``mirror`` (``HOST[:PORT][/PATH]``): the source registry is dropped
    and its repository path kept, as ``skopeo sync`` and Hauler lay images out (``nvcr.io/nvidia/driver`` ->
    ``HOST/PATH/nvidia/driver``); tag and digest stay. A reference already under the mirror is kept."""
    prefix = parse_mirror_prefix(mirror)
    if ref.name.startswith(f"{prefix}/"):
        return ref
    host, _, base = prefix.partition("/")
    return ImageRef(host, f"{base}/{ref.path}" if base else ref.path, ref.tag, ref.digest)


def parse_mirror_prefix(text: str) -> str:
    """``HOST[:PORT][/PATH]`` of an image mirror, checked (no scheme, tag or digest)."""
    if "://" in text:
        raise InvalidInputError(f"image mirror {text!r}: give HOST[:PORT][/PATH] without a scheme, e.g. "
                                "registry.example.com:5000/mirror")
    host, _, path = text.strip().rstrip("/").partition("/")
    if "@" in host:  # USER:PASSWORD@HOST: never echoed
        raise InvalidInputError("image mirror: credentials (USER:PASSWORD@) do not belong in a mirror address; give "
                                "them to mirror lock/verify (--registry-config, or --username with --password-stdin)")
    if not _DOMAIN.match(host) or (path and not _PATH.match(path)):
        raise InvalidInputError(f"image mirror {text!r}: give HOST[:PORT][/PATH] (a registry host, then "
                                "lower-case repository path components), e.g. registry.example.com:5000/mirror")
    return f"{host}/{path}" if path else host


def chart_mirror(text: str) -> str:
    """``oci://HOST[:PORT]/PATH`` of a chart mirror, checked."""
    if not text.startswith("oci://"):
        raise InvalidInputError(f"chart mirror {text!r}: give an OCI registry folder, oci://HOST[:PORT]/PATH "
                                "(helm push CHART.tgz to it)")
    return "oci://" + parse_mirror_prefix(text.removeprefix("oci://"))
