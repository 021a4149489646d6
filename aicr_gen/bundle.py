"""``Bundle``: the immutable value every renderer returns, relative POSIX path -> bytes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping
from types import MappingProxyType

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located

CHECKSUMS = "checksums.txt"
_UNSAFE_PARTS = frozenset(("", ".", ".."))
_HEX = frozenset("0123456789abcdef")


def check_path(path: str) -> str:
    """A safe bundle path: relative, POSIX, no ``..``/``.``/empty parts, no backslash or NUL."""
    # an empty or absolute path has an empty part too
    if "\\" in path or "\0" in path or not _UNSAFE_PARTS.isdisjoint(path.split("/")):
        raise InvalidInputError(
            f"bundle path {path!r} is not a plain relative path; component and file names may not contain "
            "'/', '\\\\', '..' or NUL")
    return path


class Bundle(Mapping[str, bytes]):
    """Files of a rendered bundle; iteration is in sorted path order, so output is deterministic."""

    __slots__ = ("_files",)

    def __init__(self, files: Mapping[str, bytes] | None = None) -> None:
        checked = {check_path(path): bytes(data) for path, data in (files or {}).items()}
        self._files = MappingProxyType(dict(sorted(checked.items())))

    def __getitem__(self, path: str) -> bytes:
        return self._files[path]

    def __iter__(self) -> Iterator[str]:
        return iter(self._files)

    def __len__(self) -> int:
        return len(self._files)

    def __repr__(self) -> str:
        return f"Bundle({len(self)} files)"

    def merge(self, other: Mapping[str, bytes]) -> Bundle:
        """Both bundles' files; the same path with different content is a conflict."""
        clash = sorted(path for path in other if path in self._files and self._files[path] != other[path])
        if clash:
            raise InvalidInputError(f"two parts of the bundle write {clash[0]!r} differently; rename one")
        return Bundle({**self._files, **other})

    def under(self, folder: str) -> Bundle:
        """The same files below ``folder``."""
        return Bundle({f"{check_path(folder)}/{path}": data for path, data in self._files.items()})

    def with_checksums(self) -> Bundle:
        """Add ``checksums.txt``: ``sha256  path`` for every other file, sorted by path."""
        lines = [f"{hashlib.sha256(data).hexdigest()}  {path}\n"
                 for path, data in self._files.items() if path != CHECKSUMS]
        return Bundle({**self._files, CHECKSUMS: "".join(lines).encode()})


def parse_checksums(text: str, source: str) -> dict[str, str]:
    """``checksums.txt`` as path -> sha256; malformed lines are input errors naming the line."""
    entries: dict[str, str] = {}
    for number, line in enumerate(text.splitlines(), start=1):
        digest, sep, path = line.partition("  ")
        if not sep or len(digest) != 64 or not _HEX.issuperset(digest) or not path:
            raise InvalidInputError.at(Located(source, number, "expected '<sha256>  <path>'",
                                               fix="regenerate the bundle"))
        entries[check_path(path)] = digest
    return entries
