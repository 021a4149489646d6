"""Settings that shape a rendered bundle but are not part of the recipe."""

from __future__ import annotations

from collections.abc import Collection

from aicr_gen.errors import InvalidInputError
from aicr_gen.render.names import SEPARATORS, hashed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

DEPLOYERS = ("helm", "argocd", "argocd-helm", "flux", "helmfile")
EXTRA_PATHS_DEPLOYERS = ("argocd", "flux")
"""Deployers that can apply repository folders beside the stack (Argo CD and Flux read the repository)."""

_EXTRA_PATHS = "--set deployer:extraPaths"
IN_CLUSTER = "https://kubernetes.default.svc"
"""Argo CD's name for the cluster it runs in."""


def default_app_name(deployer: str | None) -> str:
    """AICR's parent Application: ``nvidia-stack`` for argocd, ``aicr-stack`` for argocd-helm (and the name of
    the Flux root Kustomization)."""
    return "nvidia-stack" if deployer == "argocd" else "aicr-stack"


class _Settings(NamedTuple):
    repo: str = "https://github.com/example/gitops.git"
    revision: str = "main"
    path: str = ""
    name_prefix: str = ""
    project: str = "default"
    destination_server: str = IN_CLUSTER
    destination_name: str = ""
    """A cluster registered in Argo CD, by name: the children's ``destination.name`` instead of ``server``."""
    argocd_namespace: str = "argocd"
    app_name: str = "aicr-stack"
    flux_namespace: str = "flux-system"
    flux_oci_source: str = "aicr-bundle"
    """Flux: the OCIRepository the cluster pulls the bundle from when ``repo`` is an ``oci://`` artifact
    (``bundle --output oci://``, AICR's ``--flux-oci-source-name``)."""
    inline_values: bool = False
    """Argo CD: upstream charts' values inline (``helm.valuesObject``) rather than a ``$values`` source, which
    Argo CD reads from Git only; set when the bundle is published to an OCI registry, as AICR does."""
    include_root_app: bool = True
    shared: bool = False
    """One Argo CD holds several clusters' Applications (``name_prefix`` is then the cluster's): a name over a
    limit is cut and given a hash instead of refused, and Helm releases keep the unit names."""
    extra_paths: tuple[str, ...] = ()
    """Repository folders applied after the whole stack (argocd, flux)."""
    extra_namespaces: tuple[tuple[str, str], ...] = ()
    """``(folder, namespace)`` for the ``extra_paths`` whose objects live in one namespace, which the deployer
    then creates when no component does (``deployer:extraPaths=DIR=NAMESPACE``)."""

    extra_annotations: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = ()
    """``(folder, ((key, value), ...))``: annotations the deployer adds to every object of an ``extra_paths``
    folder when it applies it (Argo CD: the Application's ``kustomize.commonAnnotations``), so that the folder's
    Application changes when they do, not the folder."""



class Options(_Settings):
    """Deployer settings (``--repo``, ``--set deployer:...``); a NamedTuple, not a dataclass: importing
    dataclasses (and the inspect it loads) was ~15 ms of every ``bundle``."""

    __slots__ = ()

    def __new__(cls, *args: Any, **kwargs: Any) -> Options:
        self = super().__new__(cls, *args, **kwargs)
        self._check()
        return self

    def replace(self, **changes: Any) -> Options:
        """A copy with ``changes``, checked like a new one."""
        return Options(**{**self._asdict(), **changes})

    def _check(self) -> None:
        if self.destination_name and self.destination_server != IN_CLUSTER:
            raise InvalidInputError(f"deployer:destinationServer={self.destination_server} and destinationName="
                                    f"{self.destination_name} name the destination twice; give one of them")
        check_extra_paths(self.extra_paths)  # refused when set, not only when a deployer reads it
        given = {folder for folder, _ in self.extra_namespaces} | {folder for folder, _ in self.extra_annotations}
        unknown = sorted(given - set(self.extra_paths))
        if unknown:
            raise InvalidInputError(f"{_EXTRA_PATHS}: a namespace or annotation is given for {unknown[0]!r}, which "
                                    "is not one of the extraPaths folders")

    def extra_namespace(self, folder: str) -> str | None:
        """The namespace of an ``extra_paths`` folder's objects, when known."""
        return dict(self.extra_namespaces).get(folder)

    def extra_annotations_of(self, folder: str) -> dict[str, str]:
        """The annotations the deployer adds to an ``extra_paths`` folder's objects."""
        return dict(dict(self.extra_annotations).get(folder, ()))


def parse_extra_paths(value: str) -> tuple[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """``DIR[=NAMESPACE][,DIR[=NAMESPACE]]...`` -> (folders, (folder, namespace) pairs)."""
    from aicr_gen.text.kube_names import is_dns_label

    folders: list[str] = []
    namespaces: list[tuple[str, str]] = []
    for entry in value.split(","):
        folder, sep, namespace = entry.strip().partition("=")
        folders.append(folder.strip())
        if sep:
            if not is_dns_label(namespace.strip()):
                raise InvalidInputError(f"{_EXTRA_PATHS}={value}: {namespace.strip()!r} after {folder!r} is not a "
                                        "namespace name (lower-case letters, digits and '-', 63 at most)")
            namespaces.append((folder.strip(), namespace.strip()))
    check_extra_paths(tuple(folders), value)
    return tuple(folders), tuple(namespaces)


def check_extra_paths(folders: tuple[str, ...], given: str | None = None) -> None:
    """Each folder a plain relative path of the repository (``check_path``), given once; ``given`` is the
    setting as the user wrote it (for the message)."""
    from aicr_gen.bundle import check_path

    text = ",".join(folders) if given is None else given
    for folder in folders:
        try:
            check_path(folder)
        except InvalidInputError:
            raise InvalidInputError(
                f"{_EXTRA_PATHS}={text}: {folder!r} is not a folder of the repository; give comma-separated "
                "relative paths like clusters/gpu/certification (no empty entry, leading or trailing '/', '.', "
                "'..' or '\\\\')") from None
    duplicates = sorted({folder for folder in folders if folders.count(folder) > 1})
    if duplicates:
        raise InvalidInputError(f"{_EXTRA_PATHS}={text}: {duplicates[0]!r} is given twice; list each folder once")


def check_deployer(options: Options, deployer: str) -> None:
    """Refuse settings ``deployer`` would silently ignore."""
    if options.destination_name and deployer == "argocd-helm":
        raise InvalidInputError("--set deployer:destinationName: the argocd-helm chart takes "
                                "deployer.destinationServer (a URL); give destinationServer, or render with --deployer "
                                "argocd")
    if options.extra_paths and deployer not in EXTRA_PATHS_DEPLOYERS:
        raise InvalidInputError(
            f"{_EXTRA_PATHS}: deployer:extraPaths applies to {' and '.join(EXTRA_PATHS_DEPLOYERS)}, not to "
            f"{deployer}; drop the setting or render with --deployer argocd or flux")


def extra_names(folders: Collection[str], taken: Collection[str], prefix: str, limit: int,
                base: str | None = None) -> dict[str, str]:
    """Folder -> object name: ``prefix`` + the folder below ``base`` (the folder holding the bundle: a
    sibling ``certification/schedule`` becomes ``certification-schedule``), else its last segment, as a DNS
    label; a name that is already ``taken`` (or too long) gets a short hash of the folder appended, so every
    name is unique."""
    used = set(taken)
    names: dict[str, str] = {}
    parent = f"{base.rsplit('/', 1)[0]}/" if base and "/" in base else None
    for folder in folders:
        tail = folder.removeprefix(parent) if parent and folder.startswith(parent) else folder.rsplit("/", 1)[-1]
        name = prefix + (SEPARATORS.sub("-", tail.lower()).strip("-") or "extra")
        if name in used or len(name) > limit:
            name = hashed(name, folder, limit)
        used.add(name)
        names[folder] = name
    return names
