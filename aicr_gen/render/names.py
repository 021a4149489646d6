"""Names made from URLs, for deployers that name one object per source: ``https://helm.ngc.nvidia.com/nvidia``
-> ``helm-ngc-nvidia-com-nvidia`` (host and path, as AICR names them).

The scheme is dropped, the rest lower-cased, and every run of characters other than ``a-z0-9`` becomes one
``-``, so a name is a DNS label as long as it is short enough; ``limit`` makes sure of that.
"""

from __future__ import annotations

import hashlib
import re

DNS_LABEL = 63
"""The longest DNS label (RFC 1123), and so the longest Kubernetes object name of most kinds."""

_HASH = 8
SEPARATORS = re.compile(r"[^a-z0-9]+")


def hashed(name: str, key: str, limit: int | None = None) -> str:
    """``<name>-<hash>``: the first 8 hex digits of ``key``'s SHA-256 appended, with ``name`` first cut (and
    stripped of a trailing ``-``) so that the result fits ``limit`` characters when one is given."""
    if limit is not None:
        name = name[:limit - _HASH - 1].rstrip("-")
    return f"{name}-{hashlib.sha256(key.encode()).hexdigest()[:_HASH]}"


def url_name(url: str, *, fallback: str, source_only: bool = False, limit: int | None = None) -> str:
    """The name of ``url``: its host and path as lower-case words joined by ``-``; ``fallback`` if none is left.

    ``source_only`` also drops what says nothing about the source: user info (``ssh://git@host/...``) and a
    ``.git`` suffix. A name longer than ``limit`` is cut and gets a short hash of the whole URL, so two long
    URLs that share their start still name apart.
    """
    rest = url.split("://", 1)[-1]
    if source_only and "@" in rest.split("/", 1)[0]:
        rest = rest.split("@", 1)[1]
    rest = rest.lower()
    if source_only:
        rest = rest.removesuffix(".git")
    name = SEPARATORS.sub("-", rest).strip("-") or fallback
    if limit is not None and len(name) > limit:
        name = hashed(name, url, limit)
    return name
