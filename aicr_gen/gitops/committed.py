"""What a repository holds at a revision (or in its index) that ``sync``, ``sync --check`` and ``plan`` compare
rendered trees with: the inputs records, the files of managed folders, whether a record says its tree is what
rendering would give, and the Argo CD and Flux objects other trees define (``refuse_collisions``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from aicr_gen.edges.git import Repo
from aicr_gen.gitops.commit.sync import Folder, entries
from aicr_gen.gitops.records import fingerprint, record
from aicr_gen.gitops.render_many import Survey
from aicr_gen.gitops.trees.collisions import Owned


def all_records(repo: Repo, rev: str, *, index: bool = False) -> dict[str, bytes]:
    """Managed folder -> its inputs record at ``rev`` (or in the index), every record of the repository (a
    file under the records' folder not named after the folder it records is no record)."""
    from aicr_gen.edges.git_objects import read_blobs

    listed = entries(repo, rev, [Folder(record.FOLDER, {})], index=index)
    contents = read_blobs(repo, [sha for _mode, sha in listed.values()])
    out: dict[str, bytes] = {}
    for name, (_mode, sha) in sorted(listed.items()):
        folder = name.removeprefix(f"{record.FOLDER}/").removesuffix(".json")
        if record.path_of(folder) == name:
            out[folder] = contents[sha]
    return out


def folder_files(repo: Repo, rev: str, paths: Sequence[str], *, index: bool = False) -> dict[str, dict[str, str]]:
    """Managed folder -> its files at ``rev`` (or in the index): relative path -> blob name."""
    listed = entries(repo, rev, [Folder(path, {}) for path in paths], index=index)
    out: dict[str, dict[str, str]] = {path: {} for path in paths}
    for name, (_mode, sha) in listed.items():
        parts = name.split("/")
        for end in range(1, len(parts)):
            folder = "/".join(parts[:end])
            if folder in out:
                out[folder]["/".join(parts[end:])] = sha
                break
    return out


def existing(repo: Repo, rev: str, folders: Sequence[str], *, index: bool = False) -> set[str]:
    """The ``folders`` that hold a file at ``rev`` (or in the index)."""
    if not folders:
        return set()
    wanted = set(folders)
    if index:
        return {folder for name in repo.run("ls-files", "-z", "--", *folders).split("\0")
                for folder in _parents(name) if folder in wanted}
    wanted = set(folders)
    return {name for name in repo.run("ls-tree", "-z", "--name-only", rev, "--", *folders).split("\0")
            if name in wanted}


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts))]


def unchanged(found: Survey, now: fingerprint.Inputs, data: bytes | None, files: Mapping[str, str],
              root: Path) -> record.Record | None:
    """The record ``data`` of ``found``'s folder at the base when it says the tree there is what rendering
    ``found`` would give and its policies passed (then the spec need not be rendered), else None."""
    parsed = record.parse(data) if data is not None else None
    fits = bool(parsed and parsed.spec == fingerprint.name_of(Path(found.spec_file), root)
                and parsed.cluster == found.name and parsed.path == found.path
                and parsed.from_option == found.from_option and parsed.fresh(now, files, policies=True))
    return parsed if fits else None


def refuse_collisions(repo: Repo, rev: str, run: Mapping[str, Owned], records: Mapping[str, bytes], *,
                      index: bool = False) -> None:
    """Exit 2 naming both clusters when a tree of the run (``run``: folder -> its spec and objects) defines an
    Argo CD or Flux object that another of the run's trees, or another tree of the repository at ``rev`` (as its
    inputs record lists it, when that tree is still there), defines in the same control plane."""
    from aicr_gen.gitops.trees import collisions
    others: dict[str, Owned] = {}
    for folder, data in records.items():
        parsed = record.parse(data) if folder not in run else None
        if parsed is not None and parsed.path == folder and parsed.objects:
            others[folder] = (parsed.spec, parsed.keyed())
    present = existing(repo, rev, sorted(others), index=index)
    collisions.refuse_found(collisions.in_repository(
        run, {folder: found for folder, found in others.items() if folder in present}))
