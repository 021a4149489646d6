"""Git objects by git itself: blobs stored with ``git hash-object -w`` and read with ``git cat-file --batch``, in
whichever object format (SHA-1 or SHA-256) the repository uses. Comparing a tree with committed blob names
needs no git at all: a blob's name is the hash of ``blob SIZE\0`` and its bytes, in the format the committed
names are in (their length tells it).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from aicr_gen.edges.git import Repo

_FORMATS = {40: "sha1", 64: "sha256"}


def hash_blobs(repo: Repo, blobs: Sequence[bytes], *, write: bool) -> list[str]:
    """The object name of each blob (``write``: also stored in the repository), in one ``git hash-object``."""
    import tempfile

    if not blobs:
        return []
    with tempfile.TemporaryDirectory(prefix="aicr-gen-blobs-") as scratch:
        paths = []
        for number, data in enumerate(blobs):
            path = Path(scratch) / str(number)
            path.write_bytes(data)
            paths.append(str(path))
        out = repo.run("hash-object", *(["-w"] if write else []), "--no-filters", "--stdin-paths",
                       stdin="".join(f"{path}\n" for path in paths).encode())
    names = out.split()
    assert len(names) == len(blobs), "git hash-object named fewer blobs than it was given"
    return names


def blob_names(repo: Repo, files: Mapping[str, bytes], *, write: bool = False) -> dict[str, str]:
    """Path -> object name of each file's content."""
    names = hash_blobs(repo, list(files.values()), write=write)
    return dict(zip(files, names, strict=True))


def blob_name(data: bytes, like: str) -> str:
    """The object name git gives a blob of ``data`` (``git hash-object --no-filters``), in the object format of
    the name ``like``."""
    return name_in(data, _FORMATS[len(like)])


def read_blobs(repo: Repo, names: Iterable[str]) -> dict[str, bytes]:
    """Object name -> content, in one ``git cat-file --batch``."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    raw = repo.run_bytes("cat-file", "--batch", stdin="".join(f"{name}\n" for name in wanted).encode())
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


def committed(repo: Repo, rev: str, path: str) -> dict[str, str]:
    """``rev``'s files below ``path``: path relative to it -> blob name (empty when absent)."""
    out = repo.run("ls-tree", "-r", "-z", rev, "--", f"{path}/")
    return _listing(out, path, name_column=2)


def indexed(repo: Repo, path: str) -> dict[str, str]:
    """The index's (staged) files below ``path``: path relative to it -> blob name."""
    out = repo.run("ls-files", "-s", "-z", "--", f"{path}/")
    return _listing(out, path, name_column=1)


def files_at(repo: Repo, rev: str, path: str) -> dict[str, bytes]:
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


def object_format(repo: Repo) -> str:
    """The repository's object format: sha1 or sha256."""
    return repo.run("rev-parse", "--show-object-format")


def name_in(data: bytes, fmt: str) -> str:
    """The object name git gives a blob of ``data`` in object format ``fmt`` (sha1 or sha256)."""
    digest = hashlib.new(fmt, b"blob %d\0" % len(data))
    digest.update(data)
    return digest.hexdigest()


def store(repo: Repo, blobs: Mapping[str, bytes]) -> None:
    """Write the blobs (object name -> content) the repository does not hold yet, in one ``git hash-object``."""
    if not blobs:
        return
    out = repo.run("cat-file", "--batch-check", stdin="".join(f"{name}\n" for name in blobs).encode())
    missing = [line.split()[0] for line in out.splitlines() if line.endswith(" missing")]
    written = hash_blobs(repo, [blobs[name] for name in missing], write=True)
    assert written == missing, "git named a stored blob differently"
