"""The one place that writes outputs: a file (atomically, or to standard output) or a bundle folder.

Paths are strings handled with ``os``: a quick command (``validate``, an unchanged ``bundle``) imports nothing
else from pathlib, which costs ~8 ms to import."""

from __future__ import annotations

import os
import stat
import sys

from aicr_gen.edges.files import walk_entries
from aicr_gen.errors import InvalidInputError
from aicr_gen.text.paths import as_pathlib

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping


def _parent(path: str) -> str:
    return os.path.dirname(path) or "."


def _make_parents(folder: str, label: str) -> list[str]:
    """Create ``folder`` and its missing parents; returns the ones created, deepest first, so that a failed
    write can remove them again (``_remove_created``)."""
    missing: list[str] = []
    probe = folder
    while not os.path.exists(probe) and probe != _parent(probe):
        missing.append(probe)
        probe = _parent(probe)
    made: list[str] = []
    for path in reversed(missing):
        try:
            os.mkdir(path)
        except OSError as err:
            _remove_created(made)
            raise InvalidInputError(f"{label}: cannot create folder {path}: {err.strerror or err}") from None
        made.insert(0, path)
    return made


def _remove_created(folders: list[str]) -> None:
    """Remove the folders ``_make_parents`` created (deepest first), if they are still empty."""
    for folder in folders:
        try:
            os.rmdir(folder)
        except OSError:
            return


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        return


def _special(name: str) -> bool:
    """Whether ``name`` is a device or a FIFO (``-o /dev/null``, ``-o /dev/stderr``, a named pipe): written
    into, never replaced by a renamed file (which would turn ``/dev/null`` into a regular file)."""
    import stat

    try:
        mode = os.stat(name).st_mode
    except OSError:
        return False
    return stat.S_ISCHR(mode) or stat.S_ISFIFO(mode) or stat.S_ISBLK(mode)


def _write_through(name: str, text: str) -> None:
    try:
        with open(name, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
    except OSError as err:
        raise InvalidInputError(f"-o {name}: cannot write: {err.strerror or err}") from None


def write_text(target: str | None, text: str) -> None:
    """Write ``text`` to ``target`` (``-`` or None: stdout) via a temp file and rename, so readers never
    see a half-written file and a failure leaves nothing behind (not even the missing folders it created).
    A symlink at ``target`` is replaced, never written through; a device or FIFO (``/dev/null``) is written
    into."""
    if target in (None, "-"):
        sys.stdout.write(text)
        sys.stdout.flush()
        return
    import tempfile  # here: printing, the common case, needs no temp file

    name = str(target)
    if not name or name.endswith(("/", os.sep)) or os.path.isdir(name):
        raise InvalidInputError(f"-o {name!r}: not a file name; give a file path such as out/recipe.yaml")
    if _special(name):
        _write_through(name, text)
        return
    path = as_pathlib(name)
    parent = _parent(path)
    created = _make_parents(parent, f"-o {name}")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=parent)
    except OSError as err:
        _remove_created(created)
        raise InvalidInputError(f"-o {name}: cannot write in {parent}: {err.strerror}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except OSError as err:
        _unlink(tmp)
        _remove_created(created)
        raise InvalidInputError(f"-o {name}: cannot write: {err.strerror or err}") from None
    except BaseException:
        _unlink(tmp)
        _remove_created(created)
        raise


def _existing(target: str) -> tuple[dict[str, str], set[str]]:
    """Files (relative path -> path) and folders under an existing output folder; a symlink anywhere inside is
    refused, never followed."""
    files: dict[str, str] = {}
    folders: set[str] = set()
    for rel, entry in walk_entries(target):
        if entry.is_symlink():
            raise InvalidInputError(
                f"{entry.path}: a symlink inside the output folder; remove it (aicr-gen never follows links there)")
        if entry.is_dir():
            folders.add(rel)
        else:
            files[rel] = entry.path
    return files, folders


def _mode(rel: str, umask: int) -> int:
    return (0o777 if rel.endswith(".sh") else 0o666) & ~umask


def _read(path: str) -> bytes:
    with open(path, "rb") as handle:
        return handle.read()


def _unchanged(target: str, bundle: Mapping[str, bytes], files: dict[str, str], folders: set[str], *,
               kept: set[str], umask: int) -> bool:
    """Whether ``target`` already holds exactly what writing ``bundle`` would leave there: its files with these
    contents and modes beside the kept ones, and no other folders. Then rewriting is skipped, since replacing
    the tree removes every old folder, on some file systems the slowest part of writing a bundle."""
    if files.keys() != {*bundle, *kept}:
        return False
    parents = {"/".join(parts[:depth]) for parts in (rel.split("/") for rel in files) for depth in range(1, len(parts))}
    if folders != parents or any(stat.S_IMODE(os.lstat(os.path.join(target, folder)).st_mode) != 0o777 & ~umask
                                 for folder in ("", *folders)):
        return False
    for rel, data in bundle.items():
        info = os.lstat(files[rel])
        if not stat.S_ISREG(info.st_mode) or info.st_size != len(data) or \
                stat.S_IMODE(info.st_mode) != _mode(rel, umask) or _read(files[rel]) != data:
            return False
    return True


def _managed(files: dict[str, str], target: str) -> set[str]:
    """Paths a previous bundle wrote: those in its checksums.txt, and checksums.txt itself."""
    from aicr_gen.bundle import CHECKSUMS, parse_checksums

    if CHECKSUMS not in files:
        return set()
    text = _read(files[CHECKSUMS]).decode("utf-8").replace("\r\n", "\n").replace("\r", "\n")  # as read_text reads it
    listed = parse_checksums(text, os.path.join(target, CHECKSUMS))
    return {*listed, CHECKSUMS}


def _fill(staging: str, bundle: Mapping[str, bytes], keep: dict[str, str], umask: int) -> None:
    """Write the new tree into ``staging``: the bundle's files, and the kept ones hard-linked."""
    made = {staging}
    for rel in [*bundle, *keep]:
        parent = os.path.dirname(os.path.join(staging, rel))
        if parent not in made:
            os.makedirs(parent, exist_ok=True)
            made.add(parent)
    for rel, data in bundle.items():
        _write_new(os.path.join(staging, rel), data, _mode(rel, umask))
    for rel, full in keep.items():
        os.link(full, os.path.join(staging, rel))
    os.chmod(staging, 0o777 & ~umask)


def _write_new(path: str, data: bytes, mode: int) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
    try:
        os.fchmod(fd, mode)  # exactly ``mode``, whatever default ACL the folder has
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    finally:
        os.close(fd)


def _restore(backup: str, target: str) -> None:
    if os.path.exists(backup) and not os.path.exists(target):
        os.rename(backup, target)


def write_bundle(bundle: Mapping[str, bytes], output: str, force: bool) -> str:
    """Write ``bundle`` to folder ``output`` atomically: render into a temp folder beside it, then rename; returns
    the folder's real path.

    A non-empty folder is refused unless ``force``; with ``force`` only the files the previous bundle
    wrote (its checksums.txt) are replaced or removed, every other file is kept (hard-linked into the
    new tree). On any error the target is as it was and nothing is left behind. A folder that already holds
    exactly this bundle is left as it is.
    """
    if not output:
        raise InvalidInputError("--output: give a folder path")
    target = os.path.realpath(output)
    if os.path.exists(target) and not os.path.isdir(target):
        raise InvalidInputError(f"--output {output}: is an existing file; give a folder")
    existing, folders = _existing(target) if os.path.isdir(target) else ({}, set())
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

    parent = _parent(target)
    created = _make_parents(parent, f"--output {output}")
    try:
        staging = tempfile.mkdtemp(prefix=f".{os.path.basename(target)}.", suffix=".new", dir=parent)
    except OSError as err:
        _remove_created(created)
        raise InvalidInputError(f"--output {output}: cannot write in {parent}: {err.strerror}") from None
    backup = f"{staging[:-4]}.old"
    try:
        _fill(staging, bundle, keep, umask)
        if os.path.isdir(target):
            os.rename(target, backup)
        os.rename(staging, target)
    except OSError as err:
        _restore(backup, target)
        shutil.rmtree(staging, ignore_errors=True)
        _remove_created(created)
        raise InvalidInputError(f"--output {output}: cannot write the bundle: {err.strerror or err}") from None
    except BaseException:
        _restore(backup, target)
        shutil.rmtree(staging, ignore_errors=True)
        _remove_created(created)
        raise
    shutil.rmtree(backup, ignore_errors=True)
    return target
