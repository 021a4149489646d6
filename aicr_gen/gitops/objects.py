"""Git objects by git itself: blob names from ``git hash-object`` (SHA-1 or SHA-256, whatever the repository
uses) and blob contents from ``git cat-file --batch``. GitPython's own object database and header parser only
know SHA-1, so neither is used for objects.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any


def hash_blobs(repo: Any, blobs: Sequence[bytes], *, write: bool) -> list[str]:
    """The object name of each blob (``write``: also stored in the repository), in one ``git hash-object``."""
    if not blobs:
        return []
    with tempfile.TemporaryDirectory(prefix="aicr-gen-blobs-") as scratch:
        paths = []
        for number, data in enumerate(blobs):
            path = Path(scratch) / str(number)
            path.write_bytes(data)
            paths.append(str(path))
        with tempfile.TemporaryFile() as stdin:
            stdin.write("".join(f"{path}\n" for path in paths).encode())
            stdin.seek(0)
            out: str = repo.git.execute(["git", "hash-object", *(["-w"] if write else []), "--no-filters",
                                         "--stdin-paths"], istream=stdin)
    names = out.split()
    assert len(names) == len(blobs), "git hash-object named fewer blobs than it was given"
    return names


def blob_names(repo: Any, files: Mapping[str, bytes], *, write: bool = False) -> dict[str, str]:
    """Path -> object name of each file's content."""
    names = hash_blobs(repo, list(files.values()), write=write)
    return dict(zip(files, names, strict=True))


def read_blobs(repo: Any, names: Iterable[str]) -> dict[str, bytes]:
    """Object name -> content, in one ``git cat-file --batch``."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    with tempfile.TemporaryFile() as stdin:
        stdin.write("".join(f"{name}\n" for name in wanted).encode())
        stdin.seek(0)
        raw: bytes = repo.git.execute(["git", "cat-file", "--batch"], istream=stdin, stdout_as_string=False,
                                      strip_newline_in_stdout=False)
    found: dict[str, bytes] = {}
    position = 0
    for name in wanted:
        end = raw.index(b"\n", position)
        header = raw[position:end].decode().split()
        if len(header) != 3:  # "<name> missing"
            raise LookupError(f"git object {name} is missing")
        size = int(header[2])
        found[name] = raw[end + 1:end + 1 + size]
        position = end + 1 + size + 1
    return found


def committed(repo: Any, rev: str, path: str) -> dict[str, str]:
    """``rev``'s files below ``path``: path relative to it -> blob name (empty when absent)."""
    out: str = repo.git.ls_tree("-r", "-z", rev, "--", f"{path}/")
    return _listing(out, path, name_column=2)


def indexed(repo: Any, path: str) -> dict[str, str]:
    """The index's (staged) files below ``path``: path relative to it -> blob name."""
    out: str = repo.git.ls_files("-s", "-z", "--", f"{path}/")
    return _listing(out, path, name_column=1)


def files_at(repo: Any, rev: str, path: str) -> dict[str, bytes]:
    """``rev``'s files below ``path`` with their contents (path relative to it)."""
    listed = committed(repo, rev, path)
    contents = read_blobs(repo, listed.values())
    return {name: contents[sha] for name, sha in listed.items()}


def _listing(out: str, path: str, name_column: int) -> dict[str, str]:
    """``ls-tree``/``ls-files -s`` output (``-z``): blob entries below ``path`` -> their object name."""
    files: dict[str, str] = {}
    for entry in filter(None, out.split("\0")):
        meta, _, name = entry.partition("\t")
        fields = meta.split()
        if fields[1] != "commit" and name.startswith(f"{path}/"):
            files[name[len(path) + 1:]] = fields[name_column]
    return files
