"""Several ClusterSpecs given at once (``sync --check``, ``plan``, ``lint``): patterns expanded as a shell would,
and no two of them sharing a managed folder or a cluster name."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from aicr_gen.errors import FindingsError, InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.gitops.spec import ClusterSpec


def expand(patterns: list[str]) -> list[str]:
    """SPEC arguments with glob patterns (``*``, ``?``, ``[``) expanded in sorted order, as a shell would
    (pre-commit passes hook args without one); a pattern matching no file is an input error."""
    import glob

    specs: list[str] = []
    for pattern in patterns:
        if not glob.has_magic(pattern):
            specs.append(pattern)
            continue
        found = sorted(glob.glob(pattern))  # noqa: PTH207 (absolute patterns too, like a shell)
        if not found:
            raise InvalidInputError(f"SPEC {pattern!r} matches no file; give ClusterSpec paths or a pattern "
                                    "that matches some (e.g. clusters/*.yaml)")
        specs += found
    return list(dict.fromkeys(specs))


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
    """Every pair of specs sharing a managed folder or a cluster name, the later one second."""
    from aicr_gen.gitops.render_tree import managed_path

    seen: dict[tuple[str, str], str] = {}
    found: list[Clash] = []
    for spec_file, cluster in loaded:
        for key in (("spec.repo.path", managed_path(cluster, path_option)), ("metadata.name", cluster.metadata.name)):
            if key in seen:
                found.append(Clash(seen[key], spec_file, *key))
            seen.setdefault(key, spec_file)
    return found


def distinct(loaded: list[tuple[str, ClusterSpec]], path_option: str | None = None) -> None:
    """Refuse specs given together that share a managed folder or a cluster name (exit 1 naming both)."""
    found = clashes(loaded, path_option)
    if found:
        raise FindingsError("\n".join(clash.message() for clash in found))
