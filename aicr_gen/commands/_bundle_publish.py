"""``aicr-gen bundle --output oci://REGISTRY/REPOSITORY[:TAG]``: the bundle published to an OCI registry, as AICR's
``aicr bundle --output oci://`` publishes it (``pkg/cli/bundle.go``), instead of written to a folder.

- The tag defaults to aicr-gen's version. Argo CD and Flux read a published bundle from the registry: ``argocd``
  Applications point at ``oci://REGISTRY/REPOSITORY`` at the tag (``--repo`` may name a mirror of it) with their
  upstream charts' values inline; ``flux`` reads it from the cluster's OCIRepository ``--flux-oci-source-name``
  (default ``aicr-bundle``); ``argocd-helm`` is a Helm chart named after the repository's last component, whose
  version is the tag. ``helm`` and ``helmfile`` bundles are published as they are.
- A published bundle has no Git folder: ``deployer:path``, ``deployer:extraPaths`` and ``deployer:targetRevision``
  are refused, and so is ``--repo`` for flux and argocd-helm (whose bundle is read from where it is published).
- ``--image-refs FILE`` receives the manifest digest and a newline (AICR's format, like ko's), written atomically.
- Nothing is written to a folder, the current one included (AICR also leaves a ``./bundle`` folder behind).
"""

from __future__ import annotations

import sys

from aicr_gen import __version__
from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from aicr_gen.edges.registry import Client
    from aicr_gen.publish.artifact import Artifact
    from aicr_gen.publish.target import Target
    from aicr_gen.render.options import Options

ANNOTATIONS = {"org.opencontainers.image.title": "AICR Bundle", "org.opencontainers.image.version": __version__}
"""The generic artifact's annotations: AICR's title, aicr-gen's version (AICR also names its vendor and source)."""
_FOLDER_SETTINGS = ("deployer:path=", "deployer:extraPaths=", "deployer:targetRevision=")


def check_flags(output: str | None, deployer: str, image_refs: str | None, flux_oci_source: str | None) -> None:
    """The OCI flags given only where they apply (AICR refuses them elsewhere)."""
    from aicr_gen.publish.target import is_oci

    if image_refs is not None and not is_oci(output):
        raise InvalidInputError("--image-refs is only valid with an OCI output (--output oci://...)")
    if flux_oci_source is not None and deployer != "flux":
        raise InvalidInputError("--flux-oci-source-name is only valid with --deployer flux")


def published_options(options: Options, output: str, deployer: str, repo: str | None, *,
                      deployer_sets: Sequence[str], flux_oci_source: str | None) -> tuple[Options, Target]:
    """``options`` for a bundle published to ``output``, and the parsed target."""
    from aicr_gen.publish.target import parse
    from aicr_gen.text.kube_names import is_dns_label

    target = parse(output, __version__)
    for text in deployer_sets:
        if text.startswith(_FOLDER_SETTINGS):
            raise InvalidInputError(f"--set {text}: a bundle published to {output} has no Git folder or revision; "
                                    "drop the setting")
    if repo is not None and deployer in ("flux", "argocd-helm"):
        raise InvalidInputError(f"--repo: a {deployer} bundle published to {output} is read from there; drop --repo")
    if deployer == "argocd-helm":
        target.chart_version()
    source = flux_oci_source or options.flux_oci_source
    if not is_dns_label(source):
        raise InvalidInputError(f"--flux-oci-source-name {source}: not an object name (lower-case letters, digits "
                                "and '-', 63 at most)")
    return options.replace(repo=repo or target.url, revision=target.tag, inline_values=deployer == "argocd",
                           flux_oci_source=source), target


def artifact_of(bundle: Mapping[str, bytes], deployer: str) -> Artifact:
    """The OCI artifact of a rendered bundle: a Helm chart for argocd-helm, AICR's generic artifact otherwise."""
    from aicr_gen.publish import artifact
    from aicr_gen.yaml import load_bytes

    if deployer == "argocd-helm":
        return artifact.chart_artifact(bundle, load_bytes(bundle["Chart.yaml"], "Chart.yaml").data, {})
    return artifact.bundle_artifact(bundle, ANNOTATIONS)


def publish(bundle: Mapping[str, bytes], deployer: str, target: Target, image_refs: str | None,
            registry: Client) -> int:
    """Push the bundle's artifact to ``target`` with the ``registry`` client; write ``image_refs``."""
    from aicr_gen.edges.output import write_text
    from aicr_gen.publish.push import push

    digest = push(registry, target, artifact_of(bundle, deployer))
    if image_refs is not None:
        write_text(image_refs, digest + "\n")
    sys.stderr.write(f"aicr-gen: published {deployer} bundle to {target}@{digest}\n")
    return OK
