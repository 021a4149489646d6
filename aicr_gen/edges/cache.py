"""Content-keyed cache of validated catalogs, so an unchanged catalog loads without parsing.

The key is a digest of every document's bytes (and of aicr-gen's code, so an upgrade or an edit misses); the
value is the validated plain data. It lives in ``$AICR_GEN_CACHE_DIR`` (``off`` disables it), else
``$XDG_CACHE_HOME/aicr-gen`` or ``~/.cache/aicr-gen``, and keeps the newest entries only.
"""

from __future__ import annotations

import functools
import gc
import marshal
import os

try:  # CPython's own BLAKE2: a key needs no SHA-256, and hashlib loads OpenSSL (~4 ms) on import
    from _blake2 import blake2b
except ImportError:  # an interpreter without it
    from hashlib import blake2b

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator
    from typing import Any

KEEP = 16
_PACKAGE = os.path.dirname(os.path.dirname(os.path.realpath(__file__)))
_NOT_CODE = ("__pycache__", "_catalog", "_policies")  # bytecode, and the shipped data (keyed on its own bytes)


def code_files(package: str = _PACKAGE) -> Iterator[tuple[str, str]]:
    """aicr-gen's own code, as (path inside the package with ``/``, full path) in a fixed order: every file of
    the package but bytecode and the shipped catalog and policies, a folder's files (sorted) before its folders
    (sorted, symlinks to folders not followed), as ``os.walk`` lists them. Derived from the folder, never listed
    by hand, so no module that changes what aicr-gen accepts or writes can be left out."""
    return _files(package, "")


def _files(folder: str, inside: str) -> Iterator[tuple[str, str]]:
    """``code_files`` of ``folder``, named with the prefix ``inside``: scandir, as ``os.walk`` does, without its
    and ``relpath``'s work per file (~2 ms of every cache hit)."""
    with os.scandir(folder) as found:
        entries = sorted(found, key=lambda entry: entry.name)
    folders = []
    for entry in entries:
        if entry.is_dir():
            folders.append(entry)
        else:
            yield f"{inside}{entry.name}", entry.path
    for entry in folders:
        if entry.name not in _NOT_CODE and not entry.is_symlink():
            yield from _files(entry.path, f"{inside}{entry.name}/")


@functools.cache
def code_digest(package: str = _PACKAGE) -> bytes:
    """A digest of every code file's path, size and modification time, once per process: CPython's rule for a
    stale ``.pyc`` (an edit changes them). Stats, not bytes: reading every file would cost each cache hit ten
    times as much (about 8 ms against 0.8)."""
    found = blake2b(digest_size=32)
    for name, full in code_files(package):
        info = os.stat(full)
        found.update(f"\0{name}\0{info.st_size}\0{info.st_mtime_ns}".encode())
    return found.digest()


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def digest(data: bytes) -> bytes:
    """The digest keys are made of (BLAKE2b, 32 bytes)."""
    return blake2b(data, digest_size=32).digest()


def new_key(kind: str) -> blake2b:
    """A digest seeded with ``kind``, the aicr-gen version and its code (``code_digest``); feed it the inputs."""
    from aicr_gen import __version__

    key = blake2b(f"{kind}-{__version__}".encode(), digest_size=32)
    key.update(code_digest())
    return key


def folder() -> str | None:
    """Where entries live, or None when caching is off."""
    explicit = os.environ.get("AICR_GEN_CACHE_DIR")
    if explicit == "off":
        return None
    if explicit:
        return explicit
    home = os.path.expanduser("~")
    if not os.environ.get("XDG_CACHE_HOME") and home.startswith("~"):  # no home folder: no cache, not ./~
        return None
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache")
    return os.path.join(base, "aicr-gen")


def get(key: str) -> dict[str, Any] | None:
    """The cached value, or None (missing, unreadable or corrupt entries are misses)."""
    where = folder()
    if where is None:
        return None
    collecting = gc.isenabled()
    gc.disable()  # loading creates every container at once and none is garbage: collections would only walk them
    try:
        value = marshal.loads(_read(os.path.join(where, f"{key}.marshal")))
    except (OSError, EOFError, ValueError, TypeError):
        return None
    finally:
        if collecting:
            gc.enable()
    return value if isinstance(value, dict) else None


def put(key: str, value: dict[str, Any]) -> None:
    """Store atomically; drop all but the newest entries. A cache that cannot be written is skipped."""
    where = folder()
    if where is None:
        return
    try:
        os.makedirs(where, exist_ok=True)
        tmp = os.path.join(where, f".{key}.{os.getpid()}.tmp")
        with open(tmp, "wb") as handle:
            handle.write(marshal.dumps(value))
        os.replace(tmp, os.path.join(where, f"{key}.marshal"))
        with os.scandir(where) as found:
            entries = sorted((entry for entry in found if entry.name.endswith(".marshal")),
                             key=lambda entry: entry.stat().st_mtime_ns, reverse=True)
        for stale in entries[KEEP:]:
            try:
                os.unlink(stale.path)
            except FileNotFoundError:  # another process removed it first
                continue
    except OSError:
        return
