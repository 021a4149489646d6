"""The one model of what a ``sync`` changes in a cluster, from which the commit message of ``sync`` and every
format of ``aicr-gen plan`` (Markdown, JSON) are written, so both name the same change the same way for one
spec or a thousand (pure: values in, values out).

``review.compare`` fills a ``Changes`` from two trees; ``risks.high_risk`` adds the changes a reviewer must see
first. Every record carries its one-line ``text``; ``facts`` lists a cluster's changes as those lines, each led by
its area where the record does not name it (``NVSentinel:``, ``certification:``, ``sources:``), the form the
commit message and the plan's shared-change groups print; ``headline`` says the change in a few words for a commit
title. The records are pydantic models: they are also the JSON contract of ``aicr-gen schema plan``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from aicr_gen.modelcheck import Strict

Risk = Literal["gpu-driver", "gpu-operator", "network-operator", "os-constraint", "sources", "nvsentinel",
               "certification", "downgrade"]
RISK_ORDER: tuple[Risk, ...] = ("gpu-driver", "gpu-operator", "network-operator", "os-constraint", "sources",
                                "nvsentinel", "certification", "downgrade")
LABELS = {"gpu-driver": "GPU driver", "gpu-operator": "GPU operator", "network-operator": "network operator",
          "os-constraint": "kernel/OS", "sources": "sources", "nvsentinel": "NVSentinel",
          "certification": "certification", "downgrade": "downgrade"}
TITLE_WORDS = 72  # a commit title longer than this says the kinds of change instead of the change itself
LINES = 200  # lines of a section before the rest is counted
GROUP_NAMES = 10  # cluster names shown with a change several clusters make


class _Model(Strict, frozen=True):
    """Change records are values: compared and hashed whole."""


class ComponentChange(_Model):
    """A component added, removed, bumped or downgraded (version, compared as ``drift.versions`` does), changed
    (a version that is not one, e.g. a digest) or moved (same version, another namespace, source or chart)."""

    name: str = Field(description="Component name (recipe componentRefs[].name, NVIDIADriver/<pool> for a pool's "
                                  "driver)")
    change: Literal["added", "removed", "bumped", "downgraded", "changed", "moved"] = Field(
        description="What happened to it")
    oldVersion: str | None = Field(description="Chart version at the base; null when added")
    newVersion: str | None = Field(description="Chart version after the merge; null when removed")
    details: list[str] = Field(description="Namespace, source or chart changes, e.g. 'namespace a -> b'")
    text: str = Field(description="One line for a reviewer, e.g. 'bumped gpu-operator v26.3.3 -> v26.4.0'")


class ValueChange(_Model):
    """One Helm value of a component present at both sides, by key path."""

    component: str = Field(description="Component name")
    path: str = Field(description="Key path in the component's values, e.g. driver.version or env[0].name")
    change: Literal["added", "removed", "changed"] = Field(description="What happened to the value")
    old: str | None = Field(description="The value at the base (JSON unless a plain word); null when added")
    new: str | None = Field(description="The value after the merge; null when removed")
    redacted: bool = Field(description="The key looks secret (password, token, key, cert, auth...): values "
                                       "are shown as <redacted>")
    text: str = Field(description="One line, e.g. 'gpu-operator: driver.version 580.1 -> 590.2'")


class ConstraintChange(_Model):
    """A recipe constraint (constraints[].name) added, removed or changed."""

    name: str = Field(description="Constraint name, e.g. OS.sysctl./proc/sys/kernel/osrelease")
    old: str | None = Field(description="The constraint at the base; null when added")
    new: str | None = Field(description="The constraint after the merge; null when removed")
    text: str = Field(description="One line for a reviewer")


class HighRisk(_Model):
    """A change a reviewer should look at before anything else."""

    category: Risk = Field(description="gpu-driver, gpu-operator, network-operator, os-constraint (kernel or OS "
                                       "constraint), sources (chart or image sources move, e.g. spec.mirror), "
                                       "nvsentinel (starts acting on nodes, or its circuit breaker loosened), "
                                       "certification (loosened or removed) or downgrade (a component's version "
                                       "goes back)")
    text: str = Field(description="The change, in one line")


class FileChanges(_Model):
    """Files of the managed folder, relative to it."""

    added: list[str] = Field(default_factory=list, description="Files the base does not have")
    changed: list[str] = Field(default_factory=list, description="Files whose content changes")
    removed: list[str] = Field(default_factory=list, description="Files the merge deletes")


class Changes(_Model):
    """Everything that differs in a cluster's tree, empty lists where nothing did: what ``sync``'s commit message
    is written from and what each cluster of ``aicr-gen plan`` holds (``ClusterPlan`` is a ``Changes``)."""

    highRisk: list[HighRisk] = Field(default_factory=list,
                                     description="High-risk changes, most serious category first")
    components: list[ComponentChange] = Field(default_factory=list,
                                              description="Components added, removed, bumped, downgraded, changed "
                                                          "or moved")
    values: list[ValueChange] = Field(default_factory=list,
                                      description="Values changed per component present at both sides (an added "
                                                  "or removed component's values are its files)")
    constraints: list[ConstraintChange] = Field(default_factory=list,
                                                description="Recipe constraints (kernel, OS, Kubernetes) changed")
    sentinel: list[str] = Field(default_factory=list,
                                description="NVSentinel changes: mode, dry run, lifecycle manager, validation, rule "
                                            "sets, circuit breaker")
    certification: list[str] = Field(default_factory=list,
                                     description="Certification changes: categories, thresholds old -> new, "
                                                 "schedule, post-change (one added or removed lists them all)")
    sources: list[str] = Field(default_factory=list,
                               description="Image registries the tree's references move between, counted (a chart "
                                           "repository move is a moved component)")
    files: FileChanges = Field(default_factory=FileChanges, description="Files added, changed and removed")

    @property
    def file_count(self) -> int:
        return len(self.files.added) + len(self.files.changed) + len(self.files.removed)

    @property
    def first_tree(self) -> bool:
        """A first tree: only files added, a recipe among them."""
        return not self.files.changed and not self.files.removed and "recipe.yaml" in self.files.added


def facts(changes: Changes) -> list[str]:
    """Every change as one line, in a fixed order (components, constraints, sources, NVSentinel, certification,
    values): what both the commit message and the plan's shared-change groups list."""
    return [*(item.text for item in changes.components), *(item.text for item in changes.constraints),
            *(f"sources: {line}" for line in changes.sources), *(f"NVSentinel: {line}" for line in changes.sentinel),
            *(f"certification: {line}" for line in changes.certification), *(item.text for item in changes.values)]


def risk_lines(changes: Changes) -> list[str]:
    """The high-risk changes as lines led by their category label (``GPU operator: bumped ...``)."""
    return [f"{LABELS[item.category]}: {item.text}" for item in changes.highRisk]


def _short(item: ComponentChange) -> str:
    versions = {"added": f"{item.newVersion or ''} added", "removed": f"{item.oldVersion or ''} removed",
                "moved": "moved"}.get(item.change, f"{item.oldVersion} -> {item.newVersion}")
    return f"{item.name} {versions}".replace("  ", " ")


def kinds(changes: Changes) -> list[str]:
    """The kinds of change, counted: ``2 bumped``, ``1 DOWNGRADED``, ``certification``, ``NVSentinel``..."""
    counted = Counter("source moved" if item.change == "moved" and any(
        detail.startswith("source ") for detail in item.details) else item.change for item in changes.components)
    out = [f"{counted[kind]} {kind.upper() if kind == 'downgraded' else kind}"
           for kind in ("bumped", "downgraded", "added", "removed", "changed", "moved") if counted[kind]]
    out += [f"{counted['source moved']} chart sources moved"] if counted["source moved"] else []
    out += ["image sources moved"] if changes.sources else []
    out += ["constraints"] if changes.constraints else []
    out += [f"NVSentinel {', '.join(dict.fromkeys(_area(line) for line in changes.sentinel))}"] \
        if changes.sentinel else []
    out += [f"certification {', '.join(dict.fromkeys(_area(line) for line in changes.certification))}"] \
        if changes.certification else []
    return out or (["values"] if changes.values else [])


AREAS = {"circuit": "circuit breaker", "rule": "rule sets", "mode": "mode", "category": "categories",
         "threshold": "thresholds", "no": "thresholds", "schedule": "schedule", "pool": "pools",
         "NVSentinel": "deployed", "certification": "added"}
"""The part of NVSentinel or certification a line is about, by its first word (``circuit breaker ...``)."""


def _area(line: str) -> str:
    """``circuit breaker``, ``rule sets``, ``thresholds``...; a switch (``dry run on``) is its name."""
    first = line.split(" ", 1)[0]
    if first in ("NVSentinel", "certification"):
        return line.rsplit(" ", 1)[-1]  # deployed, removed, added
    return AREAS.get(first) or line.rsplit(" ", 1)[0]


def headline(changes: Changes) -> str:
    """The change in a few words: the component changes themselves when they are few and short
    (``gpu-operator v25.10.1 -> v26.3.3``), else the kinds of change (``3 bumped, NVSentinel``)."""
    if changes.first_tree:
        return f"new cluster, {len(changes.components)} components"
    others = [kind for kind in kinds(changes) if not kind[0].isdigit()]
    if 0 < len(changes.components) <= 2:
        named = ", ".join([*(_short(item) for item in changes.components), *others])
        if len(named) <= TITLE_WORDS:
            return named
    return ", ".join(kinds(changes)) or ("files changed" if changes.file_count else "inputs record refreshed")


def fleet_headline(per_cluster: Sequence[Changes]) -> str:
    """What several clusters' changes have in common, for a title: the one change they all make
    (``gpu-operator v25.10.1 -> v26.3.3``) when it is the same headline everywhere, else the kinds of change
    across them."""
    lines = {"new clusters" if item.first_tree else headline(item) for item in per_cluster}
    if len(lines) == 1:
        return lines.pop()
    seen: dict[str, None] = {}
    for item in per_cluster:
        seen.update(dict.fromkeys("new clusters" if item.first_tree else kind.split(" ", 1)[-1]
                                  for kind in kinds(item)))
    return ", ".join(seen) or "inputs records refreshed"


def grouped(per_cluster: Sequence[tuple[str, Sequence[str]]]) -> list[tuple[str, list[str]]]:
    """The same change made in several clusters, once: ``(change, clusters)`` from ``(cluster, changes)``,
    the change most clusters share first (then in the order first seen); clusters in the order given."""
    found: dict[str, list[str]] = {}
    for cluster, lines in per_cluster:
        for line in dict.fromkeys(lines):
            found.setdefault(line, []).append(cluster)
    order = {line: index for index, line in enumerate(found)}
    return sorted(found.items(), key=lambda item: (-len(item[1]), order[item[0]]))


def _folded(lines: Sequence[str]) -> list[str]:
    shown = list(lines[:LINES])
    return [*shown, f"- ... and {len(lines) - LINES} more (aicr-gen plan --format json lists them all)"] \
        if len(lines) > LINES else shown


def change_sections(changes: Changes) -> list[str]:
    """One cluster's changes as headed lists (``High-risk:``, ``Components:``, ``Constraints:``, ``Sources:``,
    ``NVSentinel:``, ``Certification:``, ``Values:``), blank lines between: the body of its commit message and of
    its section of ``plan --format text``."""
    sections: list[str] = []
    components = [item.text for item in changes.components] or (
        [] if changes.first_tree else ["recipe changed (no component changes)" if "recipe.yaml" in changes.files.changed
                                else "none changed"])
    for heading, lines in (("High-risk:", risk_lines(changes)), ("Components:", components),
                           ("Constraints:", [item.text for item in changes.constraints]),
                           ("Sources:", changes.sources), ("NVSentinel:", changes.sentinel),
                           ("Certification:", changes.certification),
                           ("Values:", [item.text for item in changes.values])):
        if lines:
            sections += ["", heading, *_folded([f"- {line}" for line in lines])]
    return sections[1:]


def _who(clusters: Sequence[str], total: int) -> str:
    """``gpu-a`` (one cluster), ``50 clusters`` (every one that changed), else ``3 clusters (a, b, c)``."""
    if len(clusters) == 1:
        return clusters[0]
    if len(clusters) == total:
        return f"{len(clusters)} clusters"
    more = f" and {len(clusters) - GROUP_NAMES} more" if len(clusters) > GROUP_NAMES else ""
    return f"{len(clusters)} clusters ({', '.join(clusters[:GROUP_NAMES])}{more})"


def fleet_sections(clusters: Sequence[tuple[str, Changes]]) -> list[str]:
    """Several clusters' changes, each once with the clusters that make it (``- 50 clusters: bumped ...``,
    ``- gpu-a: certification: ...``), under ``High-risk:`` and ``Changes:``; new clusters are left to their own
    line. Each section starts with a blank line."""
    sections: list[str] = []
    for heading, lines_of in (("High-risk:", risk_lines), ("Changes:", facts)):
        shared = grouped([(name, lines_of(changes)) for name, changes in clusters if not changes.first_tree])
        if shared:
            sections += ["", heading, *_folded([f"- {_who(names, len(clusters))}: {line}"
                                                for line, names in shared])]
    return sections
