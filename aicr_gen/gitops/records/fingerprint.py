"""What a ClusterSpec's tree is rendered from, as digests: the spec and every file and folder it reads (its fleet,
catalog layers or the embedded catalog, sentinel rules, mirror lock), the policies ``sync`` checks it against, and
aicr-gen itself. ``record`` keeps them beside each committed tree, so a later check compares digests instead of
rendering.

Names are repository paths (POSIX, relative to the work tree's root, ``..`` for files outside it), or
``aicr-gen:catalog`` / ``aicr-gen:policies`` for what the installed aicr-gen ships: the same spec and files read
the same on every clone, whichever folder it is in. aicr-gen itself is its version, the digest of its code (less
the shipped catalog and policies, inputs above), the versions of the distributions it requires and Python's
minor version: the same release renders the same bytes on every machine.
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, NamedTuple

EMBEDDED_CATALOG = "aicr-gen:catalog"
SHIPPED_POLICIES = "aicr-gen:policies"
WAVE = "#wave="
"""Between a fleet's repository path and the name of the cluster's wave, when the fleet has rollout waves: the
input is then the part of the fleet the wave's clusters render from (``fleet.baseline_view``), so a bump of the
first wave's baseline leaves the other waves' records fresh."""


class Inputs(NamedTuple):
    """Name -> sha256 of what rendering reads (``render``) and of what the policy check reads (``policies``)."""

    render: dict[str, str]
    policies: dict[str, str]


def name_of(path: Path, root: Path) -> str:
    """``path`` as a repository path of the work tree at ``root`` (``..`` when outside it)."""
    return Path(os.path.relpath(path.resolve(), root)).as_posix()


def named(cluster: Any, spec_file: str, root: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    """Name -> place of what rendering ``cluster`` (loaded from ``spec_file``) reads, and of the policy files."""
    render, policies = _sources(cluster, spec_file, root)
    return ({name: place for name, place, _field in render}, {name: place for name, place, _field in policies})


def fields(cluster: Any, spec_file: str, root: Path) -> dict[str, str]:
    """Name -> the spec field that makes ``cluster`` read it (``spec.extends``, ``spec.sentinel.rules``, ...; the
    spec itself: ``""``), for every name ``named`` gives: a stale tree names the input that changed and why."""
    render, policies = _sources(cluster, spec_file, root)
    return {name: field for name, _place, field in [*render, *policies]}


Source = tuple[str, Path, str]
"""An input: its name, its place and the field that names it."""


def _sources(cluster: Any, spec_file: str, root: Path) -> tuple[list[Source], list[Source]]:
    from aicr_gen.catalog.load import embedded_root
    from aicr_gen.policy.shipped import shipped_root

    spec_path = Path(spec_file).resolve()
    base = spec_path.parent
    spec = cluster.spec
    render: list[Source] = [(name_of(spec_path, root), spec_path, "")]
    if spec.extends is not None:
        from aicr_gen.spec.fleet import wave_name

        fleet = base / spec.extends
        wave = wave_name(cluster.metadata.name, cluster.metadata.labels or {}, fleet)
        render.append((name_of(fleet, root) + (f"{WAVE}{wave}" if wave else ""), fleet, "spec.extends"))
    read = [(folder, "spec.catalogs") for folder in spec.catalogs]
    if spec.sentinel is not None and spec.sentinel.rules is not None:
        read.append((spec.sentinel.rules, "spec.sentinel.rules"))
    render += [(name_of(base / text, root), base / text, field) for text, field in read]
    if spec.mirror is not None:  # the mirror lock beside the spec: its digests are pinned in the tree
        from aicr_gen.mirror.lock import lock_path

        lock = lock_path(spec_path)
        render.append((name_of(lock, root), lock, "spec.mirror, its lock"))
    if not spec.catalogs:
        render.append((EMBEDDED_CATALOG, embedded_root(), "the embedded catalog"))
    policies: list[Source] = [(SHIPPED_POLICIES, shipped_root(), "the shipped policies")]
    policies += [(name_of(base / text, root), base / text, "spec.policies") for text in spec.policies]
    return render, policies


class Digests:
    """Digests of files and folders, each read once per run (a fleet's catalog is read once for all its
    clusters)."""

    def __init__(self) -> None:
        self._seen: dict[tuple[Path, str], str] = {}

    def of(self, path: Path, name: str = "") -> str:
        """The digest of the input ``name`` at ``path``: a fleet's wave (``WAVE`` in the name) is its view."""
        place = path.resolve()
        wave = name.partition(WAVE)[2]
        found = self._seen.get((place, wave))
        if found is None:
            found = self._seen[(place, wave)] = _wave_digest(place, wave) if wave else digest(place)
        return found

    def inputs(self, places: tuple[Mapping[str, Path], Mapping[str, Path]]) -> Inputs:
        render, policies = places
        return Inputs({name: self.of(path, name) for name, path in sorted(render.items())},
                      {name: self.of(path, name) for name, path in sorted(policies.items())})


def _wave_digest(path: Path, wave: str) -> str:
    from aicr_gen.spec.fleet import baseline_view

    try:
        data = path.read_bytes()
    except OSError as err:
        return hashlib.sha256(f"unreadable {err.errno}".encode()).hexdigest()
    return hashlib.sha256(baseline_view(data, path, wave)).hexdigest()


def digest(path: Path) -> str:
    """The sha256 of a file's bytes, or of a folder as the catalog loader walks it (every name, what each is,
    where each symlink points and each regular file's bytes); a missing path has a digest of its own."""
    found = hashlib.sha256()
    if not path.is_dir():
        _add_file(found, path)
        return found.hexdigest()
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted([*dirs, *names]):
            full = Path(folder) / name
            link = str(full.readlink()) if full.is_symlink() else ""
            found.update(f"\0{full.relative_to(path).as_posix()}\0{link}\0".encode())
            if name in names:
                _add_file(found, full)
    return found.hexdigest()


def _add_file(found: Any, path: Path) -> None:
    try:
        info = path.stat()
        found.update(hashlib.sha256(path.read_bytes()).digest() if stat.S_ISREG(info.st_mode)
                     else f"mode {stat.S_IFMT(info.st_mode)}".encode())
    except OSError as err:
        found.update(f"unreadable {err.errno}".encode())


@functools.cache
def code() -> dict[str, str]:
    """aicr-gen as the record names it: ``version`` and ``code``, the digest of its code files (but the shipped
    catalog and policies), the versions of the distributions it requires and Python's minor version."""
    import importlib.metadata
    import re

    from aicr_gen import __version__
    from aicr_gen.edges.cache import code_files

    found = hashlib.sha256(f"python {sys.version_info[0]}.{sys.version_info[1]}".encode())
    for name, full in code_files():
        found.update(f"\0{name}\0".encode())
        _add_file(found, Path(full))
    try:
        required = importlib.metadata.requires("aicr-gen") or []
    except importlib.metadata.PackageNotFoundError:
        required = []
    for requirement in sorted(item for item in required if "extra ==" not in item):
        name = re.split(r"[\s<>=!~;\[(]", requirement, maxsplit=1)[0]
        try:
            version = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            version = "-"
        found.update(f"\0{name}=={version}".encode())
    return {"version": __version__, "code": f"sha256:{found.hexdigest()}"}
