"""Several ClusterSpecs given at once (``sync``, ``sync --check``, ``plan``, ``lint``): patterns expanded as a shell
would, no two of them sharing a managed folder or a cluster name, and all of one repository."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import TYPE_CHECKING

from aicr_gen.errors import InvalidInputError
from aicr_gen.limits import MAX_SPECS

if TYPE_CHECKING:
    from aicr_gen.spec.cluster import ClusterSpec


_INPUT = re.compile(r"""^(kind:[ \t]*["']?(Fleet|MirrorLock|Policy)["']?[ \t]*(#.*)?|ruleSets:.*)$""", re.MULTILINE)
"""A top-level ``kind`` of another input a spec reads (Fleet, MirrorLock, Policy), or an NVSentinel rules file's
top-level ``ruleSets``."""


def _input_file(path: str) -> bool:
    """Whether ``path`` reads as a file a spec reads rather than a spec (``_INPUT``), which a pattern skips."""
    try:
        with open(path, "rb") as handle:  # noqa: PTH123 - a peek at the head, not a load
            return _INPUT.search(handle.read(65536).decode("utf-8", "replace")) is not None
    except OSError:
        return False


def expand(patterns: list[str]) -> list[str]:
    """SPEC arguments with glob patterns (``*``, ``?``, ``[``) expanded in sorted order, as a shell would
    (pre-commit passes hook args without one); a pattern matching no file is an input error. A pattern skips
    the other files a spec reads that may sit beside it (``clusters/*.yaml`` with the fleet, a mirror lock, a
    rules file or a policy among the specs): each is read through the specs that name it. More than
    ``MAX_SPECS`` specs is an input error."""
    import glob

    specs: list[str] = []
    for pattern in patterns:
        if not glob.has_magic(pattern):
            specs.append(pattern)
            continue
        found = [path for path in sorted(glob.glob(pattern))  # noqa: PTH207 (absolute patterns too, like a shell)
                 if not _input_file(path)]
        if not found:
            raise InvalidInputError(f"SPEC {pattern!r} matches no file; give ClusterSpec paths or a pattern "
                                    "that matches some (e.g. clusters/*.yaml)")
        specs += found
    unique = list(dict.fromkeys(specs))
    if len(unique) > MAX_SPECS:
        raise InvalidInputError(f"SPEC: {len(unique)} ClusterSpecs, over the limit of {MAX_SPECS} for one run; run "
                                "them in several runs (e.g. one pattern per folder)")
    return unique


@dataclass(frozen=True)
class Clash:
    """Two specs with the same managed folder (``spec.repo.path``) or cluster name (``metadata.name``)."""

    first: str
    second: str
    field: str
    value: str

    def message(self) -> str:
        what = "managed path" if self.field == "spec.repo.path" else "cluster name"
        return (f"{self.first} and {self.second} have the same {what} {self.value!r}; give each cluster its own "
                "metadata.name and spec.repo.path")


def clashes(loaded: list[tuple[str, ClusterSpec]], path_option: str | None = None) -> list[Clash]:
    """Every pair of loaded specs sharing a managed folder or a cluster name, the later one second."""
    from aicr_gen.spec.cluster import managed_path
    return clashes_of([(spec_file, cluster.metadata.name, managed_path(cluster, path_option))
                       for spec_file, cluster in loaded])


def clashes_of(named: list[tuple[str, str, str]]) -> list[Clash]:
    """``clashes`` of ``(spec file, cluster name, managed folder)``."""
    seen: dict[tuple[str, str], str] = {}
    found: list[Clash] = []
    for spec_file, name, path in named:
        for key in (("spec.repo.path", path), ("metadata.name", name)):
            if key in seen:
                found.append(Clash(seen[key], spec_file, *key))
            seen.setdefault(key, spec_file)
    return found


def distinct(named: list[tuple[str, str, str]]) -> None:
    """Refuse specs given together that share a managed folder or a cluster name (exit 2 naming both): one
    would replace the other's tree."""
    found = clashes_of(named)
    if found:
        raise InvalidInputError("\n".join(clash.message() for clash in found))


def one_repository(urls: list[tuple[str, str]]) -> None:
    """Refuse specs of one run that name different repositories (spec.repo.url): a run makes one commit in one
    repository, and a tree whose deployers pull another one would never be applied."""
    by_url: dict[str, list[str]] = {}
    for spec_file, url in urls:
        by_url.setdefault(url, []).append(spec_file)
    if len(by_url) > 1:
        lines = [f"  {url}: {', '.join(files[:3])}{f' and {len(files) - 3} more' if len(files) > 3 else ''}"
                 for url, files in sorted(by_url.items(), key=lambda item: (-len(item[1]), item[0]))]
        raise InvalidInputError(f"the specs name {len(by_url)} repositories (spec.repo.url), but one sync commits to "
                                "one; sync each repository's specs separately:\n" + "\n".join(lines))
