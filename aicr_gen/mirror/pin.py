"""Digests from the mirror lock written into a mirrored tree, where each consumer takes one.

Images (every deployer; the kubelet pulls the digest, the tag stays for readers):

- an image string (``image: HOST/PATH/x:TAG``, Pod specs, Certification images) becomes
  ``HOST/PATH/x:TAG@sha256:...``;
- a ``{repository, tag}`` or ``{registry, repository, tag}`` map gets its ``digest`` when it has that key,
  else ``tag: TAG@sha256:...`` (charts join ``repository:tag``, which then reads as the pinned reference);
- the GPU Operator's ``{repository, image, version}`` gets ``version: sha256:...``, the spelling its image
  paths take a digest in (``repository/image@version``).

Charts (the deployer decides; checked with the real helm 3.18/4.1 against a registry):

- Flux: ``OCIRepository.spec.ref.digest`` beside the tag (source-controller pulls the digest over the tag);
- Argo CD and argocd-helm: the OCI source's ``targetRevision`` becomes the digest (Argo CD's OCI sources take
  a tag or a digest);
- helm: ``oci://HOST/PATH/NAME@sha256:...`` in ``install.sh`` (helm pulls that digest and ignores the
  ``--version`` kept beside it for readers);
- helmfile: left at its version (a release has no digest field), so ``mirror verify`` is what holds it.

A mirrored reference the lock does not list is collected and refused at the end (``Pins.check``): a tree is
pinned whole or not rendered, never partly. Pure.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.mirror.fields import GPU_OPERATOR, IMAGE_LINE, STRING, ImageField, field_node, value_images
from aicr_gen.mirror.lock import MirrorLock, locked_mirror, read_lock, spec_lock_file, stale
from aicr_gen.text.image_reference import ImageRef, parse_image

_REPO_URL = re.compile(r"^(?P<indent>\s*(?:-\s+)?)repoURL:\s*[\"']?(?P<url>oci://[^\"'\s]+)[\"']?\s*\Z")
_TARGET = re.compile(r"^(?P<head>\s*targetRevision:\s*)(?P<quote>[\"']?)(?P<version>[^\"'\s]+)(?P=quote)\s*\Z")
_FLUX_URL = re.compile(r"^\s*url:\s*[\"']?(?P<url>oci://[^\"'\s]+)[\"']?\s*\Z")
_FLUX_TAG = re.compile(r"^(?P<indent>\s*)tag:\s*[\"']?(?P<version>[^\"'\s]+)[\"']?\s*\Z")
_HELM_OCI = re.compile(r"(?P<url>oci://[^\s\"']+) --version (?P<version>[^\s\"']+)")


@dataclass
class Pins:
    """The lock of a spec, and what the tree names from the mirror that it lacks."""

    lock: MirrorLock
    source: str
    images_prefix: str | None
    charts_prefix: str | None
    missing: set[str] = field(default_factory=set)

    def __post_init__(self) -> None:
        self._images = self.lock.image_digests()
        self._charts = self.lock.chart_digests()

    def image(self, ref: ImageRef) -> ImageRef:
        """``ref`` pinned when it is on the mirror (an already pinned reference as it is)."""
        if self.images_prefix is None or not ref.name.startswith(f"{self.images_prefix}/") or ref.digest:
            return ref
        digest = self._images.get(ref.pinned)
        if digest is None:
            self.missing.add(ref.pinned)
            return ref
        return ref.with_digest(digest)

    def chart(self, url: str, version: str) -> str | None:
        """The digest of chart ``url`` (``oci://MIRROR/NAME``) at ``version``; None when not on the mirror."""
        if self.charts_prefix is None or url.rsplit("/", 1)[0] != self.charts_prefix or version.startswith("sha256:"):
            return None
        key = f"{url}:{version}"
        # Argo CD's targetRevision may drop the leading v that the recipe and the other deployers keep
        digest = next((found for text in (version, f"v{version}", version.removeprefix("v"))
                       if (found := self._charts.get(f"{url}:{text}")) is not None), None)
        if digest is None:
            self.missing.add(key)
        return digest

    def check(self) -> None:
        if self.missing:
            listed = "\n".join(f"  {item}" for item in sorted(self.missing))
            raise InvalidInputError(f"{self.source}: the mirror lock has no digest for {len(self.missing)} "
                                    f"reference(s) the tree pulls from the mirror:\n{listed}\nrun aicr-gen mirror "
                                    "lock on the spec again (after pushing them to the mirror)")


def _set_pinned(values: Any, item: ImageField, pinned: ImageRef) -> None:
    node = field_node(values, item)
    if item.shape == STRING:
        node[item.path[-1]] = str(pinned)
    elif item.shape == GPU_OPERATOR:
        node["version"] = pinned.digest
    elif "digest" in node or not pinned.tag:
        node["digest"] = pinned.digest
    else:
        key = next(key for key in ("tag", "version") if key in node)
        node[key] = f"{pinned.tag}@{pinned.digest}"


def pinned_values(values: Mapping[str, Any], pins: Pins) -> dict[str, Any]:
    """``values`` with every mirrored image field pinned."""
    out = copy.deepcopy(dict(values))
    for item in list(value_images(out)):
        pinned = pins.image(item.ref)
        if pinned != item.ref:
            _set_pinned(out, item, pinned)
    return out


def _pinned_line(line: str, pins: Pins) -> str:
    match = IMAGE_LINE.match(line)
    if match is None:
        return line
    try:
        ref = parse_image(match["ref"])
    except InvalidInputError:
        return line
    pinned = pins.image(ref)
    if pinned == ref:
        return line
    return f"{match['head']}{match['quote']}{pinned}{match['quote']}{match['tail']}"


def pinned_text(data: bytes, pins: Pins) -> bytes:
    """A manifest or template with its literal mirrored ``image:`` lines pinned."""
    if b"image:" not in data:
        return data
    return "\n".join(_pinned_line(line, pins) for line in data.decode("utf-8").split("\n")).encode()


def pinned_charts(path: str, data: bytes, pins: Pins) -> bytes:
    """A deployer file with its mirrored chart sources pinned: Argo CD ``targetRevision``, Flux
    ``OCIRepository.spec.ref.digest``, helm ``install.sh`` chart references."""
    if b"oci://" not in data:
        return data
    text = data.decode("utf-8")
    if path.endswith(".sh"):
        def helm(match: re.Match[str]) -> str:
            digest = pins.chart(match["url"], match["version"])
            return match[0] if digest is None else f"{match['url']}@{digest} --version {match['version']}"

        return _HELM_OCI.sub(helm, text).encode()
    lines = text.split("\n")
    out: list[str] = []
    url: str | None = None
    flux: str | None = None
    for line in lines:
        out.append(line)
        if (found := _REPO_URL.match(line)) is not None:
            url = found["url"]
            continue
        if (flux_url := _FLUX_URL.match(line)) is not None and b"kind: OCIRepository" in data:
            flux = flux_url["url"]
            continue
        if url is not None and (target := _TARGET.match(line)) is not None:
            digest = pins.chart(url, target["version"])
            if digest is not None:
                out[-1] = f"{target['head']}{target['quote']}{digest}{target['quote']}"
            url = None
        elif flux is not None and (tag := _FLUX_TAG.match(line)) is not None:
            digest = pins.chart(flux, tag["version"])
            if digest is not None:
                out.append(f"{tag['indent']}digest: {digest}")
            flux = None
    return "\n".join(out).encode()


def site_pins(cluster: Any) -> Any:
    """The ``pin.Pins`` of a ClusterSpec's lock file; None without spec.mirror or without a lock (the tree then
    keeps the mirror's tags). A lock of another mirror is an input error."""
    path = spec_lock_file(cluster)
    lock = read_lock(path) if path is not None else None
    if path is None or lock is None:
        return None
    site = locked_mirror(cluster.spec.mirror.charts, cluster.spec.mirror.images)
    stale(lock, site, path)
    return Pins(lock, str(path), site.images, site.charts)
