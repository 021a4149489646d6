"""A rendered bundle as the OCI artifact AICR publishes (``aicr bundle --output oci://``): pure, bytes in, bytes out.

**Generic bundles** (helm, argocd, flux, helmfile) are one layer, a gzip'ed tar of the bundle's files at the tar
root, in an OCI 1.1 image manifest whose ``artifactType`` is ``application/vnd.nvidia.aicr.artifact`` and whose
config is the empty descriptor (``{}``), as oras-go's ``PackManifest`` builds them (AICR ``pkg/oci/push.go``). The
layer carries ORAS's file-store annotations (``io.deis.oras.content.digest``: the digest of the tar before
compression; ``io.deis.oras.content.unpack``; title ``.``) so ``oras pull`` unpacks it into a folder.

**argocd-helm bundles** are a Helm chart (AICR ``pkg/oci/helm.go``): the chart's files under ``<chart>/`` in the
tar, Helm's config media type (``Chart.yaml`` as JSON) and chart layer, an OCI 1.0 manifest, so ``helm install
oci://...`` and Argo CD's Helm source pull it.

The tar is byte for byte the one Go's ``archive/tar`` writes for AICR (tested against an artifact the AICR binary
pushed): USTAR headers with mode, size and type only (owner 0, times 0, no user names), parents' directory entries
(``0755``) before their first file, files in sorted path order, a long path split into USTAR's prefix and name at
the last ``/`` that fits (Go's ``splitUSTARPath``), two zero blocks at the end and no padding to a 10 KiB record.
Only the deflate stream differs from Go's (zlib's level 9 and Go's ``BestCompression`` compress differently), so
the layer digest is ours while the ``content.digest`` of the tar matches. Files are ``0644``, scripts ``0755``,
whatever the umask.
"""

from __future__ import annotations

import gzip
import hashlib
import json
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from aicr_gen.errors import InvalidInputError

ARTIFACT_TYPE = "application/vnd.nvidia.aicr.artifact"
MANIFEST = "application/vnd.oci.image.manifest.v1+json"
LAYER = "application/vnd.oci.image.layer.v1.tar+gzip"
EMPTY_CONFIG = "application/vnd.oci.empty.v1+json"
HELM_CONFIG = "application/vnd.cncf.helm.config.v1+json"
HELM_LAYER = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
CREATED = "1970-01-01T00:00:00Z"
"""``org.opencontainers.image.created``: AICR's fixed time, so the same bundle is the same artifact."""

_CHART_FIELDS = ("apiVersion", "name", "version", "description", "type", "appVersion")
"""The ``Chart.yaml`` fields of the Helm config blob, in AICR's order (``pkg/oci/helm.go`` chartYAML)."""
_BLOCK = 512
_NAME, _PREFIX = 100, 155


class Blob(NamedTuple):
    """Bytes a manifest names, with their descriptor."""

    media_type: str
    data: bytes
    annotations: tuple[tuple[str, str], ...] = ()

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def descriptor(self, *, inline: bool = False) -> dict[str, Any]:
        """The OCI descriptor in oras-go's field order (``data`` only for the empty config, as oras writes it)."""
        found: dict[str, Any] = {"mediaType": self.media_type, "digest": self.digest, "size": len(self.data)}
        if self.annotations:
            found["annotations"] = dict(sorted(self.annotations))
        if inline:
            found["data"] = _base64(self.data)
        return found


class Artifact(NamedTuple):
    """The manifest and the blobs it names (config first), ready to push."""

    manifest: bytes
    blobs: tuple[Blob, ...]

    @property
    def digest(self) -> str:
        return "sha256:" + hashlib.sha256(self.manifest).hexdigest()


def _base64(data: bytes) -> str:
    import base64

    return base64.b64encode(data).decode()


def _octal(value: int, width: int) -> bytes:
    """Go's ``formatOctal``: zero-padded octal in ``width - 1`` digits and a NUL."""
    return f"{value:0{width - 1}o}".encode() + b"\0"


def _split(path: str) -> tuple[str, str]:
    """``(prefix, name)`` of a USTAR header, Go's ``splitUSTARPath``: the longest prefix that fits."""
    if len(path) <= _NAME:
        return "", path
    end = _PREFIX + 1 if len(path) > _PREFIX + 1 else len(path) - (1 if path.endswith("/") else 0)
    cut = path.rfind("/", 0, end)
    if cut <= 0 or not 0 < len(path) - cut - 1 <= _NAME or cut > _PREFIX:
        raise InvalidInputError(f"bundle path {path!r} is too long for an OCI bundle's tar (USTAR: 100 characters "
                                "after the last '/' that leaves at most 155 before it); shorten the file name")
    return path[:cut], path[cut + 1:]


def _header(path: str, mode: int, size: int, directory: bool) -> bytes:
    if not path.isascii():
        raise InvalidInputError(f"bundle path {path!r} is not ASCII; OCI bundle tars hold ASCII names only")
    prefix, name = _split(path)
    block = bytearray(_BLOCK)
    block[0:len(name)] = name.encode()
    block[100:108] = _octal(mode, 8)
    block[108:116] = _octal(0, 8)
    block[116:124] = _octal(0, 8)
    block[124:136] = _octal(size, 12)
    block[136:148] = _octal(0, 12)
    block[148:156] = b" " * 8
    block[156:157] = b"5" if directory else b"0"
    block[257:265] = b"ustar\x0000"
    block[329:337] = _octal(0, 8)
    block[337:345] = _octal(0, 8)
    block[345:345 + len(prefix)] = prefix.encode()
    block[148:156] = _octal(sum(block), 7) + b" "
    return bytes(block)


def file_mode(path: str) -> int:
    """The mode a bundle file gets in the tar: scripts are executable."""
    return 0o755 if path.endswith(".sh") else 0o644


def tar(files: Mapping[str, bytes], prefix: str = "", mode: Callable[[str], int] = file_mode) -> bytes:
    """The files (relative POSIX paths), under ``prefix/`` when given, as Go's ``archive/tar`` writes them;
    ``mode`` gives each file's permissions."""
    out: list[bytes] = []
    written: set[str] = set()
    for rel in sorted(files):
        path = f"{prefix}/{rel}" if prefix else rel
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            folder = "/".join(parts[:depth]) + "/"
            if folder not in written:
                written.add(folder)
                out.append(_header(folder, 0o755, 0, True))
        data = files[rel]
        out.append(_header(path, mode(rel), len(data), False))
        out.append(data + b"\0" * (-len(data) % _BLOCK))
    out.append(b"\0" * (2 * _BLOCK))
    return b"".join(out)


def compress(data: bytes) -> bytes:
    """gzip at the best compression, no time and OS "unknown" in the header, as AICR writes its layer."""
    return gzip.compress(data, compresslevel=9, mtime=0)


def _json(document: Mapping[str, Any]) -> bytes:
    """Go's ``encoding/json``: compact, ``<``, ``>`` and ``&`` escaped."""
    text = json.dumps(document, separators=(",", ":"), ensure_ascii=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026").encode()


def bundle_artifact(files: Mapping[str, bytes], annotations: Mapping[str, str]) -> Artifact:
    """A generic bundle as AICR's artifact: one layer at the tar root, the empty config, ``artifactType``."""
    raw = tar(files)
    layer = Blob(LAYER, compress(raw), (
        ("io.deis.oras.content.digest", "sha256:" + hashlib.sha256(raw).hexdigest()),
        ("io.deis.oras.content.unpack", "true"),
        ("org.opencontainers.image.title", ".")))
    config = Blob(EMPTY_CONFIG, b"{}")
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "artifactType": ARTIFACT_TYPE,
                "config": config.descriptor(inline=True), "layers": [layer.descriptor()],
                "annotations": dict(sorted({**annotations, "org.opencontainers.image.created": CREATED}.items()))}
    return Artifact(_json(manifest), (config, layer))


def chart_artifact(files: Mapping[str, bytes], chart: Mapping[str, Any], annotations: Mapping[str, str]) -> Artifact:
    """An argocd-helm bundle as the Helm chart AICR pushes: ``<name>/...`` in the tar, ``Chart.yaml``'s fields
    (AICR's six, empty ones left out) as Helm's JSON config, OCI 1.0 (no ``artifactType``)."""
    name, version = str(chart["name"]), str(chart["version"])
    layer = Blob(HELM_LAYER, compress(tar(files, prefix=name)))
    fields = {key: str(chart[key]) for key in _CHART_FIELDS if chart.get(key) or key in _CHART_FIELDS[:3]}
    config = Blob(HELM_CONFIG, _json(fields))
    found = {**annotations, "org.opencontainers.image.created": CREATED, "org.opencontainers.image.title": name,
             "org.opencontainers.image.version": version}
    if chart.get("description"):
        found["org.opencontainers.image.description"] = str(chart["description"])
    manifest = {"schemaVersion": 2, "mediaType": MANIFEST, "config": config.descriptor(),
                "layers": [layer.descriptor()], "annotations": dict(sorted(found.items()))}
    return Artifact(_json(manifest), (config, layer))
