"""What ``sync --check`` rendered its trees from, so an unchanged set of specs is checked without rendering.

A set of specs is known by a ``key``: the digest of the aicr-gen code, the installed distributions, the Python
version, ``--path`` and each spec's place and bytes. Before rendering a spec, ``inputs`` records the work tree it
is in, the resolved place of every path it names and digests of the files and folders it reads (catalog layers
or the embedded catalog, the sentinel rules). After a check found every tree up to date (or a sync committed
one), ``remember`` stores under the key, per spec, those inputs and the blob names of its tree, provided the key
and every input read the same after rendering as before (so no file changed under the render). ``recall`` gives
the blob names back only when all of it is as remembered. Rendering is deterministic (it reads no clock,
environment or network), so the tree it would render is then the remembered one, and comparing its blob names
with Git's is the whole check. On any difference, a missing entry, a spec on standard input or caching off:
None, and the caller renders (and so gives every message a render gives).
"""

from __future__ import annotations

import functools
import hashlib
import os
import stat
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aicr_gen.gitops.git import work_tree

_KIND = "sync-check-v2"


def recall(set_key: str | None, spec_files: Sequence[str]) -> list[dict[str, Any]] | None:
    """Per spec, ``{"path": managed folder, "blobs": {relative path: blob name}}`` of the tree it renders, when
    nothing it was rendered from changed since ``remember``; else None."""
    from aicr_gen.catalog import cache

    entry = cache.get(set_key) if set_key is not None else None
    specs = entry.get("specs") if entry is not None else None
    if not isinstance(specs, list) or len(specs) != len(spec_files):
        return None
    for spec_file, spec in zip(spec_files, specs, strict=True):
        if spec.get("work_tree") != _work_tree(spec_file) or any(
                str(Path(joined).resolve()) != resolved or (digest and _digest(Path(joined)) != digest)
                for joined, resolved, digest in spec.get("inputs", [])):
            return None
    return [{"path": spec["path"], "blobs": spec["blobs"]} for spec in specs]


def inputs(spec_file: str, cluster: Any) -> dict[str, Any]:
    """What rendering ``cluster`` (loaded from ``spec_file``) reads besides the spec, as it is now."""
    return {"work_tree": _work_tree(spec_file), "inputs": _inputs(cluster, Path(spec_file).resolve().parent)}


def remember(set_key: str | None, spec_files: Sequence[str], path_option: str | None,
             rendered: Sequence[tuple[Any, Mapping[str, Any], str, Mapping[str, str]]]) -> None:
    """Store what each spec's tree was rendered from: ``rendered`` holds per spec its ClusterSpec, its
    ``inputs`` taken before rendering, its managed folder and the blob names of its tree. Nothing is stored
    when the specs or their inputs no longer read as they did before rendering."""
    from aicr_gen.catalog import cache

    if set_key is None or key(spec_files, path_option) != set_key:
        return
    specs = []
    for spec_file, (cluster, before, path, blobs) in zip(spec_files, rendered, strict=True):
        if inputs(spec_file, cluster) != before:
            return
        specs.append({**before, "path": path, "blobs": dict(blobs)})
    cache.put(set_key, {"specs": specs})


def key(spec_files: Sequence[str], path_option: str | None) -> str | None:
    """The key of this set of specs as their files are now (None: not to be remembered)."""
    from aicr_gen.catalog import cache

    if cache.folder() is None or "-" in spec_files:
        return None
    digest = hashlib.sha256(f"{_KIND}\0{_environment()}\0{path_option}".encode())
    for spec_file in spec_files:
        place = Path(spec_file).resolve()
        try:
            data = place.read_bytes()
        except OSError:
            return None
        digest.update(f"\0{place}\0".encode() + hashlib.sha256(data).digest())
    return digest.hexdigest()


def _work_tree(spec_file: str) -> str:
    root = work_tree(Path(spec_file).resolve().parent)
    return "" if root is None else str(root)


def _inputs(cluster: Any, base: Path) -> list[list[str]]:
    """``[joined, resolved, digest]`` of every path the spec names (the digest empty for the policies, which
    rendering does not read) and of the embedded catalog when it names no catalog."""
    from aicr_gen.catalog.load import embedded_root
    from aicr_gen.gitops.spec import references

    named = [(base / text, field[1] != "policies") for field, text in references(cluster)]
    if not cluster.spec.catalogs:
        named.append((embedded_root(), True))
    return [[str(path), str(path.resolve()), _digest(path) if read else ""] for path, read in named]


def _digest(path: Path) -> str:
    """The digest of a file's bytes, or of a folder as the catalog loader walks it (every name, what each is,
    where each symlink points and each regular file's bytes)."""
    digest = hashlib.sha256()
    if not path.is_dir():
        _add_file(digest, path)
        return digest.hexdigest()
    for folder, dirs, names in os.walk(path):
        dirs.sort()
        for name in sorted([*dirs, *names]):
            full = Path(folder) / name
            link = str(full.readlink()) if full.is_symlink() else ""
            digest.update(f"\0{full.relative_to(path).as_posix()}\0{link}\0".encode())
            if name in names:
                _add_file(digest, full)
    return digest.hexdigest()


def _add_file(digest: Any, path: Path) -> None:
    try:
        info = path.stat()
        digest.update(hashlib.sha256(path.read_bytes()).digest() if stat.S_ISREG(info.st_mode)
                      else f"mode {stat.S_IFMT(info.st_mode)}".encode())
    except OSError as err:
        digest.update(f"unreadable {err.errno}".encode())


@functools.cache
def _environment() -> str:
    """A digest of the code that renders: aicr-gen's own files (but its embedded catalog, an input above), the
    distributions installed where Python imports from (their versions are in the folder names) and Python."""
    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256(sys.version.encode())
    for folder, dirs, names in os.walk(package):
        dirs[:] = sorted(name for name in dirs if name not in ("__pycache__", "_catalog", "_policies"))
        for name in sorted(names):
            full = Path(folder) / name
            digest.update(f"\0{full.relative_to(package).as_posix()}\0".encode())
            _add_file(digest, full)
    for entry in sys.path:
        try:
            installed = sorted(item.name for item in Path(entry or ".").iterdir()
                               if item.name.endswith((".dist-info", ".egg-info")))
        except OSError:
            continue
        digest.update(f"\0{entry}\0{' '.join(installed)}".encode())
    return digest.hexdigest()
