"""Catalog-relative paths: nothing a catalog names may point outside the catalog."""

from __future__ import annotations

import os
import posixpath

from aicr_gen.errors import InvalidInputError, refusal

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.errors import Where


def check_relative(rel: str, where: Where) -> None:
    """Reject absolute, parent-escaping, backslash and NUL paths, naming ``where`` they came from (text, or the
    error of the field that holds the path)."""
    problem = None
    if not rel:
        problem = "is empty"
    elif "\0" in rel or "\\" in rel:
        problem = "contains a backslash or NUL"
    elif rel.startswith("/") or (len(rel) > 1 and rel[1] == ":"):
        problem = "is absolute"
    elif ".." in rel.split("/"):
        problem = "climbs out with '..'"
    if problem:
        raise refusal(where)(f"path {rel!r} {problem}; use a path relative to the catalog root, such as "
                             "components/<name>/values.yaml")


def check_inside(path: str | os.PathLike[str], root: str | os.PathLike[str], rel: str) -> None:
    """Reject a file whose real location (after symlinks) is outside the catalog root."""
    real = os.path.realpath(path)
    real_root = os.path.realpath(root)
    if os.path.commonpath([real, real_root]) != real_root:
        raise InvalidInputError(
            f"{path}: {rel!r} is a symlink to {real}, outside the catalog {root}; copy the file into the catalog")


def as_pathlib(text: str) -> str:
    """``text`` as pathlib writes a path (no empty or ``.`` parts, no trailing slash; ``..`` kept), for code that
    handles paths with ``os`` to name and split them as pathlib did."""
    head = "/" if text.startswith("/") else ""
    return head + "/".join(part for part in text.split("/") if part not in ("", ".")) or "."


def normalise(rel: str, where: Where) -> str:
    """The checked path in canonical form (``./checks/a.yaml`` -> ``checks/a.yaml``)."""
    check_relative(rel, where)
    return posixpath.normpath(rel)
