"""The mirror lock: the digest of every chart and image a spec's tree pulls from its site mirror, as the
registry answered when ``aicr-gen mirror lock`` asked it.

The lock lives beside the spec (``SPEC.lock.yaml`` for ``SPEC.yaml``), is reviewed in the same pull request
and is one of the files the spec's tree is rendered from: ``sync`` pins what it lists (``pin.py``). It holds
no timestamps and no registry address it was reached through, only the mirror it was computed for (a lock of
another mirror is stale), so locking the same registry twice writes the same bytes.

Keys are what the tree names before pinning: an image as ``HOST/PATH:TAG`` (``:latest`` when the tree gives
no tag; an image the tree already pins is keyed by its digest reference), a chart as
``oci://HOST/PATH/NAME:VERSION`` (its OCI tag is the version with ``+`` as ``_``, as ``helm push`` tags it).

A lock is read as what it is, a reviewed input a pull request may change: every reference must parse by the
distribution reference grammar and lie under the lock's mirror (``mirror verify`` reaches the mirror's hosts
only), the file must be a regular file of at most ``LOCK_LIMIT`` bytes, and a symlink may not lead out of the
Git work tree the spec is in (or the spec's folder outside one).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, Literal, NamedTuple

from pydantic import AfterValidator, Field

from aicr_gen.errors import InvalidInputError
from aicr_gen.modelcheck import Strict

API_VERSION = "aicr-gen.dev/v1alpha1"
KIND = "MirrorLock"
SUFFIX = ".lock.yaml"
LOCK_LIMIT = 4 * 1024 * 1024
Digest = Annotated[str, Field(pattern=r"^sha256:[a-f0-9]{64}$", description="sha256:<64 hex digits>")]


def chart_tag(reference: str) -> tuple[str, str, str]:
    """``(host, repository, tag)`` of a locked chart reference ``oci://HOST/PATH/NAME:VERSION``, checked by the
    distribution reference grammar (an input error saying why)."""
    from aicr_gen.text.image_reference import parse_image

    rest, colon, version = reference.removeprefix("oci://").rpartition(":")
    host, _, repository = rest.partition("/")
    tag = version.replace("+", "_")
    ref = parse_image(f"{rest}:{tag}") if reference.startswith("oci://") and colon else None
    if ref is None or (ref.domain, ref.path, ref.tag) != (host, repository, tag):
        raise InvalidInputError(f"chart reference {reference!r}: give oci://HOST[:PORT]/PATH/NAME:VERSION")
    return host, repository, tag


def image_ref(reference: str) -> tuple[str, str, str]:
    """``(host, repository, tag or digest)`` of a locked image reference, checked by the grammar."""
    from aicr_gen.text.image_reference import parse_image

    ref = parse_image(reference)
    return ref.domain, ref.path, ref.digest or ref.tag or "latest"


def _grammar(parse: Callable[[str], tuple[str, str, str]]) -> AfterValidator:
    def check(value: str) -> str:
        try:
            parse(value)
        except InvalidInputError as err:
            raise ValueError(str(err)) from None
        return value

    return AfterValidator(check)


class _Strict(Strict, frozen=True):
    """A lock's entries are values: compared and hashed whole."""


class LockedMirror(_Strict):
    """The spec.mirror the lock was computed for."""

    charts: str | None = Field(None, description="spec.mirror.charts, oci://HOST[:PORT]/PATH")
    images: str | None = Field(None, description="spec.mirror.images, HOST[:PORT][/PATH]")


class LockedChart(_Strict):
    """A Helm chart on the mirror and the digest of its OCI manifest."""

    reference: Annotated[str, _grammar(chart_tag)] = Field(description="oci://HOST/PATH/NAME:VERSION")
    digest: Digest


class LockedImage(_Strict):
    """A container image on the mirror and the digest of its manifest (an index for multi-arch images)."""

    reference: Annotated[str, _grammar(image_ref)] = Field(description="HOST/PATH:TAG (or HOST/PATH@DIGEST)")
    digest: Digest


class MirrorLock(_Strict):
    """Digests of a spec's mirrored charts and images (``aicr-gen mirror lock``); ``sync`` pins them."""

    apiVersion: Literal["aicr-gen.dev/v1alpha1"] = Field(description=f"Always {API_VERSION}")
    kind: Literal["MirrorLock"] = Field(description=f"Always {KIND}")
    mirror: LockedMirror
    charts: list[LockedChart] = Field(default_factory=list, description="Sorted by reference")
    images: list[LockedImage] = Field(default_factory=list, description="Sorted by reference")

    def chart_digests(self) -> dict[str, str]:
        return {entry.reference: entry.digest for entry in self.charts}

    def image_digests(self) -> dict[str, str]:
        return {entry.reference: entry.digest for entry in self.images}


class Wanted(NamedTuple):
    """What a tree pulls from its mirror: chart references and image references (lock keys), sorted."""

    charts: tuple[str, ...]
    images: tuple[str, ...]


def lock_path(spec_file: str | Path) -> Path:
    """The lock file of a spec file: ``NAME.lock.yaml`` beside ``NAME.yaml``."""
    path = Path(spec_file)
    stem = path.name.rsplit(".", 1)[0] if path.suffix in (".yaml", ".yml") else path.name
    return path.with_name(stem + SUFFIX)


def build(site: LockedMirror, charts: Mapping[str, str], images: Mapping[str, str]) -> MirrorLock:
    return MirrorLock(apiVersion=API_VERSION, kind=KIND, mirror=site,
                      charts=[LockedChart(reference=key, digest=charts[key]) for key in sorted(charts)],
                      images=[LockedImage(reference=key, digest=images[key]) for key in sorted(images)])


def dump_lock(lock: MirrorLock) -> str:
    """The lock file's bytes: deterministic YAML (sorted entries, no timestamps)."""
    from aicr_gen.yaml import dump

    data: dict[str, Any] = lock.model_dump(mode="json", exclude_none=True)
    return "# Generated by aicr-gen mirror lock; review it with the spec, refresh it with the same command\n" + \
        dump(data)


def read_lock(path: Path) -> MirrorLock | None:
    """The lock at ``path``; None when there is none. A lock that does not parse is an input error at its line;
    one that is a symlink out of the repository, not a regular file, over ``LOCK_LIMIT`` bytes or naming a
    reference off its mirror is an input error too."""
    if not path.exists() and not path.is_symlink():
        return None
    from aicr_gen.edges.files import work_tree
    from aicr_gen.modelcheck import check
    from aicr_gen.yaml import load_bytes

    folder = Path(os.path.abspath(path.parent))  # noqa: PTH100 - as named, symlinks kept
    root = (work_tree(folder) or folder).resolve()
    real = path.resolve()
    if not real.is_relative_to(root):
        raise InvalidInputError(f"{path}: a symlink to {real}, out of {root}; a mirror lock is a file of the "
                                "repository beside its spec (run aicr-gen mirror lock to write one)")
    if not real.is_file() or real.stat().st_size > LOCK_LIMIT:
        raise InvalidInputError(f"{path}: not a regular file of at most {LOCK_LIMIT} bytes; a mirror lock is "
                                "what aicr-gen mirror lock writes")
    lock: MirrorLock = check(load_bytes(real.read_bytes(), str(path)), MirrorLock)
    _on_mirror(lock, path)
    return lock


def _on_mirror(lock: MirrorLock, path: Path) -> None:
    """Every entry lies under the lock's mirror: a lock names no other host or repository."""
    for kind, references, prefix in (("charts", [entry.reference for entry in lock.charts], lock.mirror.charts),
                                     ("images", [entry.reference for entry in lock.images], lock.mirror.images)):
        for index, reference in enumerate(references):
            if prefix is None or not reference.startswith(f"{prefix}/"):
                raise InvalidInputError(
                    f"{path}: {kind}[{index}].reference {reference!r} is not on the lock's mirror "
                    f"({prefix or f'no mirror.{kind}'}); a lock names only its mirror's {kind}, the only registry "
                    "aicr-gen reaches for it")


def locked_mirror(charts: str | None, images: str | None) -> LockedMirror:
    """The normalised mirror a lock records (``chart_mirror`` / ``parse_mirror_prefix`` spellings)."""
    from aicr_gen.text.image_reference import chart_mirror, parse_mirror_prefix

    return LockedMirror(charts=chart_mirror(charts) if charts is not None else None,
                        images=parse_mirror_prefix(images) if images is not None else None)


def stale(lock: MirrorLock, site: LockedMirror, source: Path) -> None:
    """Refuse a lock computed for another mirror."""
    if lock.mirror != site:
        raise InvalidInputError(
            f"{source}: the lock was computed for the mirror {lock.mirror.model_dump(exclude_none=True)}, the spec "
            f"names {site.model_dump(exclude_none=True)}; run aicr-gen mirror lock on the spec again")


def spec_lock_file(cluster: Any) -> Path | None:
    """The lock file of a loaded ClusterSpec with spec.mirror (None for a spec without one, or read from stdin)."""
    document = cluster.document
    if cluster.spec.mirror is None or document is None or document.source == "-":
        return None
    return lock_path(document.source)
