"""``--output oci://REGISTRY/REPOSITORY[:TAG]``: where ``bundle`` publishes, read as AICR reads it
(``pkg/oci/reference.go``, ``helm_version.go``).

- The reference is normalised as the container runtime does (``mirror.reference.parse_image``), then held to
  AICR's stricter forms: a host of DNS labels with an optional port, a repository of lower-case components joined
  by one ``.``, ``_`` or ``-``. A digest cannot be published to; no tag means the tool's version.
- The chart name of an argocd-helm bundle is the repository's last component, its parent the default ``repoURL``
  (``oci://REGISTRY/PARENT``), and its version the tag read as strict SemVer with the one ``_`` Helm writes for
  ``+`` (``1.2.3_build.5`` is ``1.2.3+build.5``; ``v1.2.3`` is refused, as ``helm push`` would refuse it).

Pure: values in, values out.
"""

from __future__ import annotations

import re

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from aicr_gen.records import NamedTuple

SCHEME = "oci://"
_HOST = re.compile(r"^[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?(\.[a-zA-Z0-9]([a-zA-Z0-9-]*[a-zA-Z0-9])?)*(:[0-9]+)?\Z")
_REPOSITORY = re.compile(r"^[a-z0-9]+([._-][a-z0-9]+)*(/[a-z0-9]+([._-][a-z0-9]+)*)*\Z")
_IDENTIFIER = r"(?:0|[1-9]\d*|\d*[A-Za-z-][0-9A-Za-z-]*)"
_STRICT_SEMVER = re.compile(rf"^(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)\.(?:0|[1-9]\d*)(?:-{_IDENTIFIER}(?:\.{_IDENTIFIER})*)?"
                            r"(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?\Z")


class Target(NamedTuple):
    """A parsed ``oci://`` output."""

    registry: str
    repository: str
    tag: str

    def __str__(self) -> str:
        return f"{self.registry}/{self.repository}:{self.tag}"

    @property
    def url(self) -> str:
        """``oci://REGISTRY/REPOSITORY``: what Argo CD and Flux read the bundle from."""
        return f"{SCHEME}{self.registry}/{self.repository}"

    @property
    def chart_name(self) -> str:
        """The chart an argocd-helm bundle is published as: the repository's last component."""
        return self.repository.rsplit("/", 1)[-1]

    @property
    def parent(self) -> str:
        """``oci://REGISTRY[/PARENT]``: the chart's repository without its name (Helm appends it)."""
        parent = self.repository.rpartition("/")[0]
        return f"{SCHEME}{self.registry}/{parent}" if parent else f"{SCHEME}{self.registry}"

    def chart_version(self) -> str:
        """The tag as the Helm chart version it encodes."""
        if self.tag.count("_") > 1:
            raise InvalidInputError(f"--output {SCHEME}{self}: a Helm chart tag has at most one '_' (Helm's "
                                    "stand-in for '+')")
        version = self.tag.replace("_", "+", 1)
        if not _STRICT_SEMVER.match(version):
            raise InvalidInputError(f"--output {SCHEME}{self}: tag {self.tag!r} is not a strict semantic version, "
                                    "which an argocd-helm bundle's chart needs (e.g. 1.2.3, 1.2.3-rc.1, "
                                    "1.2.3_build.5; no leading 'v')")
        return version


def is_oci(output: str | None) -> bool:
    """Whether ``--output`` names a registry rather than a folder."""
    return bool(output) and str(output).startswith(SCHEME)


def parse(output: str, default_tag: str) -> Target:
    """``--output oci://...`` checked, with ``default_tag`` when it names none."""
    from aicr_gen.text.image_reference import parse_image

    text = output[len(SCHEME):]
    try:
        ref = parse_image(text)
    except InvalidInputError as err:
        raise InvalidInputError(f"--output {output}: {err}") from None
    if ref.digest:
        raise InvalidInputError(f"--output {output}: a digest cannot be published to; give a tag (:TAG) or none")
    port = ref.domain.rpartition(":")[2] if ":" in ref.domain else "443"
    if not _HOST.match(ref.domain) or not 0 < int(port) < 65536:
        raise InvalidInputError(f"--output {output}: registry {ref.domain!r} must be a host name with an optional "
                                "port")
    if not _REPOSITORY.match(ref.path):
        raise InvalidInputError(f"--output {output}: repository {ref.path!r} must be lower-case letters and digits "
                                "joined by one '.', '_' or '-', in '/'-separated components")
    return Target(ref.domain, ref.path, ref.tag or default_tag)
