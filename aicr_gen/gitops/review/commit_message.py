"""The commit message of ``aicr-gen sync`` (pure: the change model in, text out).

Both messages are written from ``change_model``, as ``aicr-gen plan`` is, so a commit and a plan name a change
the same way. One cluster: ``aicr-gen: sync NAME: HEADLINE`` (``aicr-gen: sync gpu-a: gpu-operator v25.10.1 ->
v26.3.3``), its high-risk changes, components, constraints, sources, NVSentinel, certification and values, the
inputs committed with its tree, its files by folder and by name, then the trailers. Several specs: ``aicr-gen: sync
N clusters: HEADLINE`` (the change when every cluster makes the same one, else the kinds of change; the cluster's
name when one changed), the high-risk changes and every change, each once with the clusters it is in (``50
clusters: bumped ...``, one cluster by name), a line per changed cluster, the inputs committed, the same trailers.
Lists past ``LINES`` (clusters: ``CLUSTERS``) end with a count of the rest: ``aicr-gen plan`` lists them all.

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
from aicr_gen.gitops.review.model import LINES, Changes, change_sections, fleet_headline, fleet_sections, headline
from aicr_gen.text.oneline import one_line

CLUSTERS = 1000  # cluster lines of a fleet message before the rest is counted


class Extra(NamedTuple):
    """What a caller adds: lines before what changed, and trailers after aicr-gen's own (each written with
    ``one_line``; a trailer must be ``Token: value``)."""

    preface: Sequence[str] = ()
    trailers: Sequence[str] = ()


NO_EXTRA = Extra()


class Synced(NamedTuple):
    """A cluster the commit changes: its name, folder, what changed (None: only its inputs record) and the
    sha256 of its recipe."""

    name: str
    path: str
    changes: Changes | None
    recipe: str


def _folded(lines: Sequence[str], noun: str, limit: int) -> list[str]:
    shown = list(lines[:limit])
    return [*shown, f"- ... and {len(lines) - limit} more {noun} (aicr-gen plan lists them all)"] \
        if len(lines) > limit else shown


def _files(changes: Changes) -> str:
    found = changes.files
    counts = [(len(found.added), "added"), (len(found.changed), "changed"), (len(found.removed), "removed")]
    shown = [f"{count} {kind}" for count, kind in counts if count]
    total = changes.file_count
    files = f"{total} file{'' if total == 1 else 's'}"
    if len(shown) > 1:
        return f"{files}: {', '.join(shown)}"
    return f"{files} {shown[0].split()[1]}" if shown else "no files changed"


def cluster_line(item: Synced) -> str:
    """One line for a cluster: its headline and its file counts."""
    if item.changes is None:
        return f"{item.name}: inputs record refreshed (tree unchanged)"
    return f"{item.name}: {headline(item.changes)}; {_files(item.changes)}"


def message(name: str, path: str, changes: Changes, recipe: str, *, title: str | None = None,
            inputs: Sequence[str] = (), extra: Extra = NO_EXTRA) -> str:
    """The message of a commit changing one cluster: a title (``--message``, else ``aicr-gen: sync NAME:
    HEADLINE``), what changed for a reviewer, then the trailers (``recipe``: the sha256 of its recipe)."""
    sections = change_sections(changes)
    if inputs:
        sections += ["", "Inputs committed with the tree:", *(f"- {name}" for name in sorted(inputs))]
    folders: dict[str, Counter[str]] = {}
    files = changes.files
    for kind, names in (("added", files.added), ("changed", files.changed), ("removed", files.removed)):
        for file in names:
            folder = f"{file.split('/')[0]}/" if "/" in file else "(top)"
            folders.setdefault(folder, Counter())[kind] += 1
    sections += ["", f"Files ({len(files.added)} added, {len(files.changed)} changed, "
                     f"{len(files.removed)} removed):"]
    sections += [f"- {folder}: " + ", ".join(f"{count} {kind}" for kind, count in counts.items())
                 for folder, counts in sorted(folders.items())]
    listed = sorted([*(("added", f) for f in files.added), *(("changed", f) for f in files.changed),
                     *(("removed", f) for f in files.removed)], key=lambda item: item[1])
    sections += ["", *(f"  {kind:<7} {path}/{file}" for kind, file in listed[:LINES])]
    if len(listed) > LINES:
        sections.append(f"  ... and {len(listed) - LINES} more")
    return _join(_title(title, f"aicr-gen: sync {name}: {headline(changes)}"), sections, recipe, extra)


def fleet_message(synced: Sequence[Synced], given: int, *, title: str | None = None,
                  inputs: Sequence[str] = (), extra: Extra = NO_EXTRA) -> str:
    """The message of a commit over several specs (``synced`` changed, of ``given``): every change once, with
    the clusters it is in."""
    ordered = sorted(synced, key=lambda item: item.path)
    changed = [item for item in ordered if item.changes is not None]
    new = sum(1 for item in changed if item.changes is not None and item.changes.first_tree)
    sections = [f"{len(ordered)} of {given} clusters changed{f' ({new} new)' if new else ''}."]
    sections += fleet_sections([(item.name, item.changes) for item in changed if item.changes is not None])
    sections += ["", "Clusters:", *_folded([f"- {cluster_line(item)}" for item in ordered], "clusters", CLUSTERS)]
    if inputs:
        sections += ["", "Inputs committed with the trees:", *_folded([f"- {name}" for name in sorted(inputs)],
                                                                       "inputs", LINES)]
    listing = "".join(f"{item.recipe}  {item.path}/recipe.yaml\n" for item in ordered)
    if len(changed) == 1 and changed[0].changes is not None:
        default = f"aicr-gen: sync {changed[0].name}: {headline(changed[0].changes)}"
    else:
        summary = fleet_headline([item.changes for item in changed if item.changes is not None])
        default = f"aicr-gen: sync {len(ordered)} cluster{'' if len(ordered) == 1 else 's'}: {summary}"
    return _join(_title(title, default), sections, hashlib.sha256(listing.encode()).hexdigest(), extra)


def _title(title: str | None, default: str) -> str:
    """The first line: ``--message`` on one line, else ``default``."""
    given = " ".join(one_line(title or "").split())
    if given.startswith("---"):
        raise InvalidInputError(f"--message {title!r}: a commit message starting with '---' hides its trailers from "
                                "git; reword it")
    return given or one_line(default)


def _join(title: str, sections: Sequence[str], recipe: str, extra: Extra) -> str:
    """The message: the title, the caller's preface, the sections (each on its one line), then the trailers as
    the last paragraph."""
    for trailer in extra.trailers:
        token, sep, value = trailer.partition(": ")
        if not (sep and value.strip() and token.replace("-", "").isalnum()):
            raise ValueError(f"not a trailer: {trailer!r}")
    preface = [*extra.preface, ""] if extra.preface else []
    return "\n".join([title, "", *(one_line(line) for line in [*preface, *sections]), "", *trailers(recipe),
                      *(one_line(line) for line in extra.trailers)]) + "\n"


def trailers(recipe: str) -> list[str]:
    """The commit trailers: the recipe's digest (of several clusters: the sha256 of their ``sha256  PATH/recipe.yaml``
    lines, sorted by path, as ``sha256sum`` prints them) and the aicr-gen version that rendered it."""
    from aicr_gen import __version__

    return [f"Aicr-Gen-Recipe-Digest: sha256:{recipe}", f"Aicr-Gen-Version: {__version__}"]
