"""The commit message of ``aicr-gen sync`` (pure: what changed in, text out).

One cluster: a title, its components, NVSentinel and certification changes, the inputs committed with its tree,
its files by folder and by name, then the trailers. Several: ``aicr-gen: sync N clusters``, the changes several
clusters share (once, with how many), a line per changed cluster (``a: bumped gpu-operator v26.3.3 -> v26.4.0;
3 files changed``), both folded past ``LINES``, the inputs committed, the same trailers.

Spec text (names, versions, labels, file names, ``--message``) never shapes the message: each line is written
with ``one_line`` (a line break or other control character in a value is a space), so a value cannot add a line,
a paragraph or a trailer, and the last paragraph -- which git reads as the trailer block (git-interpret-trailers(1),
trailer.c) -- is always aicr-gen's own trailers. A title starting with ``---`` is refused: git ends the message it
reads trailers from at the first line starting with ``---`` and white space (``find_end_of_log_message``), so it
would hide the trailers.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.changes import Changes, grouped
from aicr_gen.oneline import one_line

LINES = 50  # list lines of a message section before the rest is counted
COMPONENTS_PER_LINE = 3


class Synced(NamedTuple):
    """A cluster the commit changes: its name, folder, what changed (None: only its inputs record) and the
    sha256 of its recipe."""

    name: str
    path: str
    changes: Changes | None
    recipe: str


def _folded(lines: Sequence[str], noun: str) -> list[str]:
    shown = list(lines[:LINES])
    return [*shown, f"- ... and {len(lines) - LINES} more {noun}"] if len(lines) > LINES else shown


def _new(changes: Changes) -> bool:
    return not changes.changed and not changes.removed and "recipe.yaml" in changes.added


def _files(changes: Changes) -> str:
    counts = [(len(changes.added), "added"), (len(changes.changed), "changed"), (len(changes.removed), "removed")]
    shown = [f"{count} {kind}" for count, kind in counts if count]
    total = changes.files
    files = f"{total} file{'' if total == 1 else 's'}"
    if len(shown) > 1:
        return f"{files}: {', '.join(shown)}"
    return f"{files} {shown[0].split()[1]}" if shown else "no files changed"


def cluster_line(item: Synced) -> str:
    """One line for a cluster: its component changes (at most a few) and its file counts."""
    if item.changes is None:
        return f"{item.name}: inputs record refreshed (tree unchanged)"
    if _new(item.changes):
        return f"{item.name}: new cluster, {len(item.changes.components)} components, {_files(item.changes)}"
    described = [change.describe() for change in item.changes.components]
    parts = described[:COMPONENTS_PER_LINE]
    if len(described) > COMPONENTS_PER_LINE:
        parts.append(f"{len(described) - COMPONENTS_PER_LINE} more components")
    if not described:
        parts = ["recipe changed" if "recipe.yaml" in item.changes.changed else "no component changes"]
    return f"{item.name}: {'; '.join([*parts, _files(item.changes)])}"


def message(name: str, path: str, changes: Changes, recipe: str, *, title: str | None = None,
            inputs: Sequence[str] = ()) -> str:
    """The message of a commit changing one cluster: a title (``--message``, else a summary), what changed for
    a reviewer, then the trailers (``recipe``: the sha256 of its recipe)."""
    sections: list[str] = ["Components:", *(f"- {item.describe()}" for item in changes.components)]
    if not changes.components:
        sections.append("- recipe changed (no component changes)" if "recipe.yaml" in changes.changed
                        else "- none changed")
    for heading, lines in (("NVSentinel:", changes.sentinel), ("Certification:", changes.certification)):
        if lines:
            sections += ["", heading, *(f"- {line}" for line in lines)]
    if inputs:
        sections += ["", "Inputs committed with the tree:", *(f"- {name}" for name in sorted(inputs))]
    folders: dict[str, Counter[str]] = {}
    for kind, names in (("added", changes.added), ("changed", changes.changed), ("removed", changes.removed)):
        for file in names:
            folder = f"{file.split('/')[0]}/" if "/" in file else "(top)"
            folders.setdefault(folder, Counter())[kind] += 1
    sections += ["", f"Files ({len(changes.added)} added, {len(changes.changed)} changed, "
                     f"{len(changes.removed)} removed):"]
    sections += [f"- {folder}: " + ", ".join(f"{count} {kind}" for kind, count in counts.items())
                 for folder, counts in sorted(folders.items())]
    listed = sorted([*(("added", f) for f in changes.added), *(("changed", f) for f in changes.changed),
                     *(("removed", f) for f in changes.removed)], key=lambda item: item[1])
    sections += ["", *(f"  {kind:<7} {path}/{file}" for kind, file in listed[:LINES])]
    if len(listed) > LINES:
        sections.append(f"  ... and {len(listed) - LINES} more")
    return _join(_title(title, f"aicr-gen: sync {name}"), sections, recipe)


def fleet_message(synced: Sequence[Synced], given: int, *, title: str | None = None,
                  inputs: Sequence[str] = ()) -> str:
    """The message of a commit changing several clusters (``synced``, of ``given`` specs)."""
    ordered = sorted(synced, key=lambda item: item.path)
    shared = [(change, clusters) for change, clusters in grouped(
        [(item.name, [change.describe() for change in item.changes.components]) for item in ordered
         if item.changes is not None and not _new(item.changes)]) if len(clusters) > 1]
    new = sum(1 for item in ordered if item.changes is not None and _new(item.changes))
    sections = [f"{len(ordered)} of {given} clusters changed{f' ({new} new)' if new else ''}."]
    if shared:
        sections += ["", "Changes in several clusters:",
                     *_folded([f"- {change} on {len(clusters)} clusters" for change, clusters in shared], "changes")]
    sections += ["", "Clusters:", *_folded([f"- {cluster_line(item)}" for item in ordered], "clusters")]
    if inputs:
        sections += ["", "Inputs committed with the trees:", *_folded([f"- {name}" for name in sorted(inputs)],
                                                                       "inputs")]
    listing = "".join(f"{item.recipe}  {item.path}/recipe.yaml\n" for item in ordered)
    return _join(_title(title, f"aicr-gen: sync {len(ordered)} clusters"), sections,
                 hashlib.sha256(listing.encode()).hexdigest())


def _title(title: str | None, default: str) -> str:
    """The first line: ``--message`` on one line, else ``default``."""
    given = " ".join(one_line(title or "").split())
    if given.startswith("---"):
        raise InvalidInputError(f"--message {title!r}: a commit message starting with '---' hides its trailers from "
                                "git; reword it")
    return given or one_line(default)


def _join(title: str, sections: Sequence[str], recipe: str) -> str:
    """The message: the title, the sections (each on its one line), then the trailers as the last paragraph."""
    return "\n".join([title, "", *(one_line(line) for line in sections), "", *trailers(recipe)]) + "\n"


def trailers(recipe: str) -> list[str]:
    """The commit trailers: the recipe's digest (of several clusters: the sha256 of their ``sha256  PATH/recipe.yaml``
    lines, sorted by path, as ``sha256sum`` prints them) and the aicr-gen version that rendered it."""
    from aicr_gen import __version__

    return [f"Aicr-Gen-Recipe-Digest: sha256:{recipe}", f"Aicr-Gen-Version: {__version__}"]
