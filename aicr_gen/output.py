"""The one place that writes outputs: a file (atomically, or to standard output) or a bundle folder."""

from __future__ import annotations

import os
import stat
import sys
from collections.abc import Mapping
from pathlib import Path

from aicr_gen.errors import InvalidInputError


def _make_parents(folder: Path, label: str) -> list[Path]:
    """Create ``folder`` and its missing parents; returns the ones created, deepest first, so that a failed
    write can remove them again (``_remove_created``)."""
    missing: list[Path] = []
    probe = folder
    while not probe.exists() and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    made: list[Path] = []
    for path in reversed(missing):
        try:
            path.mkdir()
        except OSError as err:
            _remove_created(made)
            raise InvalidInputError(f"{label}: cannot create folder {path}: {err.strerror or err}") from None
        made.insert(0, path)
    return made


def _remove_created(folders: list[Path]) -> None:
    """Remove the folders ``_make_parents`` created (deepest first), if they are still empty."""
    for folder in folders:
        try:
            folder.rmdir()
        except OSError:
            return


def write_text(target: str | None, text: str) -> None:
    """Write ``text`` to ``target`` (``-`` or None: stdout) via a temp file and rename, so readers never
    see a half-written file and a failure leaves nothing behind (not even the missing folders it created).
    A symlink at ``target`` is replaced, never written through."""
    if target in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    import tempfile  # here: printing, the common case, needs no temp file

    name = str(target)
    if not name or name.endswith(("/", os.sep)) or Path(name).is_dir():
        raise InvalidInputError(f"-o {name!r}: not a file name; give a file path such as out/recipe.yaml")
    path = Path(name)
    created = _make_parents(path.parent, f"-o {name}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as err:
        _remove_created(created)
        raise InvalidInputError(f"-o {name}: cannot write in {path.parent}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        Path(tmp).chmod(0o666 & ~umask)
        Path(tmp).replace(path)
    except OSError as err:
        Path(tmp).unlink(missing_ok=True)
        _remove_created(created)
        raise InvalidInputError(f"-o {name}: cannot write: {err.strerror or err}") from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        _remove_created(created)
        raise


def _existing(target: Path) -> tuple[dict[str, Path], set[str]]:
    """Files (relative path -> path) and folders under an existing output folder; a symlink anywhere inside is
    refused, never followed."""
    files: dict[str, Path] = {}
    folders: set[str] = set()
    pending = [("", target)]
    while pending:
        prefix, folder = pending.pop()
        try:
            with os.scandir(folder) as found:
                entries = list(found)
        except OSError:  # an unreadable folder is skipped, as os.walk does
            continue
        for entry in entries:
            full, rel = folder / entry.name, prefix + entry.name
            if entry.is_symlink():
                raise InvalidInputError(
                    f"{full}: a symlink inside the output folder; remove it (aicr-gen never follows links there)")
            if entry.is_dir():
                folders.add(rel)
                pending.append((rel + "/", full))
            else:
                files[rel] = full
    return files, folders


def _mode(rel: str, umask: int) -> int:
    return (0o777 if rel.endswith(".sh") else 0o666) & ~umask


def _unchanged(target: Path, bundle: Mapping[str, bytes], files: dict[str, Path], folders: set[str], *,
               kept: set[str], umask: int) -> bool:
    """Whether ``target`` already holds exactly what writing ``bundle`` would leave there: its files with these
    contents and modes beside the kept ones, and no other folders. Then rewriting is skipped, since replacing
    the tree removes every old folder, on some file systems the slowest part of writing a bundle."""
    if files.keys() != {*bundle, *kept}:
        return False
    parents = {"/".join(parts[:depth]) for parts in (rel.split("/") for rel in files) for depth in range(1, len(parts))}
    if folders != parents or any(stat.S_IMODE((target / folder).lstat().st_mode) != 0o777 & ~umask
                                 for folder in ("", *folders)):
        return False
    for rel, data in bundle.items():
        info = files[rel].lstat()
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data) or \
                stat.S_IMODE(info.st_mode) != _mode(rel, umask) or files[rel].read_bytes() != data:
            return False
    return True


def _managed(files: dict[str, Path], target: Path) -> set[str]:
    """Paths a previous bundle wrote: those in its checksums.txt, and checksums.txt itself."""
    from aicr_gen.render.bundle import CHECKSUMS, parse_checksums

    if CHECKSUMS not in files:
        return set()
    listed = parse_checksums(files[CHECKSUMS].read_text(encoding="utf-8"), str(target / CHECKSUMS))
    return {*listed, CHECKSUMS}


def _fill(staging: Path, bundle: Mapping[str, bytes], keep: dict[str, Path], umask: int) -> None:
    """Write the new tree into ``staging``: the bundle's files, and the kept ones hard-linked."""
    made = {staging}
    for rel in [*bundle, *keep]:
        parent = (staging / rel).parent
        if parent not in made:
            parent.mkdir(parents=True, exist_ok=True)
            made.add(parent)
    for rel, data in bundle.items():
        _write_new(staging / rel, data, _mode(rel, umask))
    for rel, full in keep.items():
        os.link(full, staging / rel)
    staging.chmod(0o777 & ~umask)


def _write_new(path: Path, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # exactly ``mode``, whatever default ACL the folder has
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def write_bundle(bundle: Mapping[str, bytes], output: str, force: bool) -> Path:
    """Write ``bundle`` to folder ``output`` atomically: render into a temp folder beside it, then rename.

    A non-empty folder is refused unless ``force``; with ``force`` only the files the previous bundle
    wrote (its checksums.txt) are replaced or removed, every other file is kept (hard-linked into the
    new tree). On any error the target is as it was and nothing is left behind. A folder that already holds
    exactly this bundle is left as it is.
    """
    if not output:
        raise InvalidInputError("--output: give a folder path")
    target = Path(os.path.realpath(output))
    if target.exists() and not target.is_dir():
        raise InvalidInputError(f"--output {output}: is an existing file; give a folder")
    existing, folders = _existing(target) if target.is_dir() else ({}, set())
    if existing and not force:
        raise InvalidInputError(f"--output {output}: folder is not empty; pass --force to replace a previous bundle")
    managed = _managed(existing, target)
    keep = {rel: full for rel, full in existing.items() if rel not in managed}
    clash = sorted(set(keep) & set(bundle))
    if clash:
        raise InvalidInputError(
            f"--output {output}: {clash[0]} is not from a previous bundle (not in its checksums.txt) and the new "
            "bundle writes it; move it away")
    umask = os.umask(0)
    os.umask(umask)
    if existing and _unchanged(target, bundle, existing, folders, kept=set(keep), umask=umask):
        return target
    import shutil
    import tempfile  # here: an unchanged bundle needs no temp folder (nor shutil's bz2 and lzma)

    created = _make_parents(target.parent, f"--output {output}")
    try:
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", suffix=".new", dir=target.parent))
    except OSError as err:
        _remove_created(created)
        raise InvalidInputError(f"--output {output}: cannot write in {target.parent}: {err.strerror}") from None
    backup = target.parent / f"{staging.name[:-4]}.old"
    try:
        _fill(staging, bundle, keep, umask)
        if target.is_dir():
            target.rename(backup)
        staging.rename(target)
    except OSError as err:
        if backup.exists() and not target.exists():
            backup.rename(target)
        shutil.rmtree(staging, ignore_errors=True)
        _remove_created(created)
        raise InvalidInputError(f"--output {output}: cannot write the bundle: {err.strerror or err}") from None
    except BaseException:
        if backup.exists() and not target.exists():
            backup.rename(target)
        shutil.rmtree(staging, ignore_errors=True)
        _remove_created(created)
        raise
    shutil.rmtree(backup, ignore_errors=True)
    return target
