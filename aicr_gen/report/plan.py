"""A ``Plan`` as JSON, as plain text (``sync``'s commit message words) or as Markdown that fits one GitHub comment
(pure: a plan in, text out).

The Markdown opens with the totals, a pie of the clusters by what merging does to them (``PIE``: each cluster in
the first of high-risk, policy error, changes, unchanged that holds; drawn when the plan has several clusters, as
``aicr_gen.text.mermaid`` writes it) and every cluster's high-risk changes, then one collapsible ``<details>``
section per cluster that changes or has policy findings (high-risk clusters first, then those with policy errors,
then the others), and ends with the unchanged clusters by name. GitHub refuses a comment over 65,536 characters,
so the text is kept under ``BUDGET``: each section's lists are cut shorter (with a count of what was left out)
until the sections fit, small sections keeping everything and large ones sharing what is left; the clusters whose
sections still do not fit are named in one line (a fleet-wide bump names every cluster). The JSON is never cut.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from functools import partial

from aicr_gen.gitops.review.model import change_sections, fleet_sections, grouped, headline, risk_lines
from aicr_gen.gitops.review.plan import ClusterPlan, Plan
from aicr_gen.gitops.review.rendered import ApplicationChange
from aicr_gen.gitops.review.upgrade import SEVERITY, UpgradeVerdict
from aicr_gen.text import markdown as md
from aicr_gen.text import mermaid
from aicr_gen.text.oneline import one_line

BUDGET = 60_000  # under GitHub's 65,536-character comment limit, with room for a marker and a heading
LINE = 400  # longest line of a list; longer ones are cut
CAPS = {"highRisk": 40, "policies": 40, "effects": 10, "components": 60, "values": 150, "constraints": 40,
        "sources": 20, "sentinel": 40, "certification": 40, "files": 200}
SHRINK = (1, 4, 16, 64)  # each section is tried with the caps divided by these, then as a summary alone
SUMMARY_RISKS = 30
UNCHANGED_NAMES = 100
GROUPS = 20  # changes several clusters share, listed in the header
GROUP_NAMES = 10  # cluster names shown per shared change
ERROR, WARNING, SAFE = "\u274c", "\u26a0\ufe0f", "\u2705"
MARKS = {"blocked": ERROR, "manual": WARNING, "safe": SAFE}
OBJECTS_SHARE = 0.6  # of the budget, at most, for the rendered-object diffs
RESERVE = 6_000  # kept for the cluster sections' summaries and the unchanged clusters' line
DIFF_LINES = 60  # lines of one object's diff in the comment; the full plan has all of them
OBJECTS = 25  # objects listed per application in the comment
VERDICT_GROUPS = 30
REASONS = 8  # reasons listed per verdict in the header
PIE = {"high-risk": "#c62828", "policy error": "#ef6c00", "changes": "#1f77b4", "unchanged": "#9e9e9e"}
"""The pie's slice per kind of cluster and its colour, most severe first."""


def as_json(plan: Plan) -> str:
    """The plan as JSON (the schema of ``aicr-gen schema plan``)."""
    from aicr_gen.yaml import dump_json

    return dump_json(plan.model_dump(mode="json"))


def as_text(plan: Plan) -> str:
    """The plan as plain text, written as ``sync``'s commit message is (``change_model``'s sections): one changed
    cluster in full; several as every change once with the clusters that make it, then a line per cluster. Then
    each policy error and what merging sets off. Never cut (each line on its one line, ``oneline``)."""
    shown = [cluster for cluster in plan.clusters if _news(cluster)]
    changed = [cluster for cluster in shown if cluster.changed]
    lines = [f"aicr-gen plan against {plan.base} ({plan.baseCommit[:12]}): " + " \u00b7 ".join(_totals(plan))]
    if len(changed) == 1:
        cluster = changed[0]
        lines += ["", f"{cluster.name} ({cluster.path}): {headline(cluster)}", "",
                  *change_sections(cluster)]
    elif changed:
        lines += fleet_sections([(cluster.name, cluster) for cluster in changed])
        lines += ["", "Clusters:", *(f"- {cluster.name} ({cluster.path}): {headline(cluster)}"
                                     for cluster in changed)]
    errors = [f"- {cluster.name}: {item.policy} at {item.path}: {item.message}" for cluster in shown
              for item in cluster.policies if item.severity == "error"]
    lines += ["", "Policy errors:", *errors] if errors else []
    effects = [f"- {cluster.name}: {item.text}" for cluster in changed for item in cluster.onMerge]
    lines += ["", "Merging will set off:", *effects] if effects else []
    quiet = [cluster.name for cluster in plan.clusters if not _news(cluster)]
    lines += ["", f"Unchanged ({len(quiet)}): {', '.join(quiet)}"] if quiet else []
    lines += ["", "Merging changes no cluster's tree."] if not changed else []
    return "".join(f"{one_line(line)}\n" for line in lines)


def _totals(plan: Plan) -> list[str]:
    return [f"{plan.changedClusters} of {_plural(len(plan.clusters), 'cluster')} change",
            _plural(plan.highRisk, "high-risk change"), _plural(plan.policyErrors, "policy error")]


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}{'' if count == 1 else 's'}"


def _cut(value: str) -> str:
    """``value`` on one line, cut to ``LINE``."""
    flat = " ".join(value.split())
    return flat if len(flat) <= LINE else flat[:LINE - 1] + "\u2026"


def _text(value: str) -> str:
    """Free text from the specs as Markdown (``aicr_gen.text.markdown``), cut to ``LINE``."""
    return md.text(_cut(value))


def _block(lines: Sequence[str]) -> list[str]:
    """Lines as a fenced code block, each cut to ``LINE``."""
    return md.block([line if len(line) <= LINE else line[:LINE - 1] + "\u2026" for line in lines])


def _capped(items: Sequence[str], cap: int, noun: str) -> list[str]:
    """At most ``cap`` items, then a count of the rest."""
    shown = list(items[:cap])
    return [*shown, f"\u2026 and {len(items) - cap} more {noun}"] if len(items) > cap else shown


def _bullets(title: str, items: Sequence[str], cap: int, noun: str) -> list[str]:
    if not items:
        return []
    shown = _capped([_text(item) for item in items], cap, noun)
    return ["", f"**{title}**", "", *(f"- {item}" for item in shown)]


def _counts(cluster: ClusterPlan) -> str:
    files = cluster.files
    total = len(files.added) + len(files.changed) + len(files.removed)
    if not cluster.changed:
        parts = ["no changes"]
    else:
        parts = [f"{'new cluster, ' if cluster.new else ''}{_plural(len(cluster.components), 'component')}, "
                 f"{_plural(len(cluster.values), 'value')}, {_plural(total, 'file')}"]
    errors = sum(1 for item in cluster.policies if item.severity == "error")
    warnings = len(cluster.policies) - errors
    parts += [f"{WARNING} {len(cluster.highRisk)} high-risk"] if cluster.highRisk else []
    parts += [f"{ERROR} {_plural(errors, 'policy error')}"] if errors else []
    parts += [_plural(warnings, "policy warning")] if warnings else []
    return " \u00b7 ".join(parts)


def _body(cluster: ClusterPlan, shrink: int) -> list[str]:
    """The section's lists, each cut to its cap divided by ``shrink``."""
    def cap(name: str) -> int:
        return max(1, CAPS[name] // shrink)

    lines = _bullets("High-risk", risk_lines(cluster), cap("highRisk"), "high-risk changes")
    if cluster.policies:
        found = [f"{ERROR if item.severity == 'error' else WARNING} {item.severity} {item.policy} at "
                 f"{item.path}: {item.message}" for item in cluster.policies]
        lines += _bullets("Policies", found, cap("policies"), "findings")
    lines += _bullets("Merging will set off", [item.text for item in cluster.onMerge], cap("effects"), "effects")
    lines += _bullets("Upgrades", [f"{MARKS[item.verdict]} {item.verdict} {item.component}"
                                   f"{' (acknowledged)' if item.acknowledged else ''}"
                                   f"{': ' + item.reasons[0].text if item.reasons else ''}"
                                   for item in cluster.upgrades], cap("components"), "components")
    lines += _bullets("Rendered objects", [_unit_summary(unit) for unit in cluster.applications],
                      cap("components"), "applications")
    lines += _bullets("Components", [item.text for item in cluster.components], cap("components"), "components")
    if cluster.values:
        shown = _capped([item.text for item in cluster.values], cap("values"), "values")
        lines += ["", "**Values**", "", *_block(shown)]
    lines += _bullets("Constraints", [item.text for item in cluster.constraints], cap("constraints"), "constraints")
    lines += _bullets("Sources", cluster.sources, cap("sources"), "source moves")
    lines += _bullets("NVSentinel", cluster.sentinel, cap("sentinel"), "NVSentinel changes")
    lines += _bullets("Certification", cluster.certification, cap("certification"), "certification changes")
    files = cluster.files
    listed = sorted([*((name, "added") for name in files.added), *((name, "changed") for name in files.changed),
                     *((name, "removed") for name in files.removed)])
    if listed:
        lines += ["", f"**Files**: {len(files.added)} added, {len(files.changed)} changed, {len(files.removed)} "
                      f"removed (under {md.code(cluster.path)})", ""]
        lines += _block(_capped([f"{kind:<7} {name}" for name, kind in listed], cap("files"), "files"))
    return lines


def section(cluster: ClusterPlan, shrink: int | None, *, open_: bool = False) -> str:
    """One cluster's collapsible section; ``shrink`` None: its summary line and a note where to see it all."""
    summary = (f"<b>{md.html(_cut(cluster.name))}</b> <code>{md.html(_cut(cluster.path))}</code>: "
               f"{_counts(cluster)}")
    if shrink is None:
        body = ["", f"Too large to show here: run {md.code(f'aicr-gen plan {cluster.spec}')} (or "
                    f"{md.code('--format json')}) to see all of it."]
    else:
        body = _body(cluster, shrink)
    return "\n".join([f"<details{' open' if open_ else ''}><summary>{summary}</summary>", *body, "", "</details>"])


def _header(plan: Plan) -> list[str]:
    totals = _totals(plan)
    commit = md.code(plan.baseCommit[:12])
    against = commit if plan.baseCommit.startswith(plan.base) else f"{md.code(plan.base)} ({commit})"
    lines = ["## aicr-gen plan", "", f"Against {against}: " + " \u00b7 ".join(totals)]
    if len(plan.clusters) > 1:
        kinds = Counter(_kind(cluster) for cluster in plan.clusters)
        lines += ["", *mermaid.pie("clusters in this plan",
                                   [(kind, kinds[kind], colour) for kind, colour in PIE.items()])]
    shared = grouped([(cluster.name, [_text(line) for line in risk_lines(cluster)])
                      for cluster in _ordered(plan.clusters)])
    risks = [f"**{_text(names[0])}**: {risk}" if len(names) == 1 else f"{risk} on {_names(names)}"
             for risk, names in shared]
    if risks:
        lines += ["", f"### {WARNING} High-risk changes", "",
                  *(f"- {item}" for item in _capped(risks, SUMMARY_RISKS, "(in the sections below)"))]
    if plan.groups:
        lines += ["", "### Changes in several clusters", "",
                  *(f"- {_text(group.change)} on {_names(group.clusters)}"
                    for group in plan.groups[:GROUPS])]
        lines += [f"- \u2026 and {len(plan.groups) - GROUPS} more shared changes ({md.code('--format json')}: "
                  "groups)"] if len(plan.groups) > GROUPS else []
    return lines


def _kind(cluster: ClusterPlan) -> str:
    """The slice of ``PIE`` a cluster counts in."""
    if cluster.highRisk:
        return "high-risk"
    if any(item.severity == "error" for item in cluster.policies):
        return "policy error"
    return "changes" if cluster.changed else "unchanged"


def _verdicts(plan: Plan, budget: int | None) -> list[str]:
    """Every component's upgrade verdict once with the clusters it holds for, blocked first, within ``budget``
    characters (the rest counted)."""
    shared = grouped([(cluster.name, [_verdict_key(item) for item in cluster.upgrades]) for cluster in plan.clusters])
    found = {_verdict_key(item): item for cluster in plan.clusters for item in cluster.upgrades}
    order = sorted(shared, key=lambda pair: -SEVERITY[found[pair[0]].verdict])
    lines: list[str] = []
    safe = [(found[key], names) for key, names in order if found[key].verdict == "safe" and not found[key].unchecked]
    judged = [(found[key], names) for key, names in order if found[key].verdict != "safe" or found[key].unchecked]
    for index, (item, names) in enumerate(judged):
        ack = " (acknowledged)" if item.acknowledged else ""
        group = [f"- {MARKS[item.verdict]} **{item.verdict}**{ack} {md.code(item.component)} on {_names(names)}"]
        group += [f"  - {md.code(reason.code)} {md.code(reason.object)}: {_text(reason.text)}"
                  for reason in item.reasons[:REASONS]]
        group += [f"  - \u2026 and {len(item.reasons) - REASONS} more reasons"] if len(item.reasons) > REASONS else []
        group += [f"  - not checked (no CRD rendered, so no transition rule evaluated): "
                  f"{', '.join(md.code(name) for name in item.unchecked[:REASONS])}"] if item.unchecked else []
        if index >= VERDICT_GROUPS or (budget is not None and sum(map(len, lines + group)) > budget):
            lines.append(f"- \u2026 and {len(judged) - index} more verdicts (the full plan and "
                         f"{md.code('--format json')} list them all)")
            break
        lines += group
    if safe:
        names = sorted({item.component for item, _ in safe})
        shown = ", ".join(_capped([md.code(_cut(name)) for name in names], VERDICT_GROUPS, "components"))
        lines.append(f"- {SAFE} **safe**: {shown}")
    if not lines:
        return []
    return ["", "### Upgrade verdicts", "", *lines]


def _verdict_key(item: UpgradeVerdict) -> str:
    return item.model_dump_json()


def _unit_summary(unit: ApplicationChange) -> str:
    counted = Counter(item.change for item in unit.objects)
    kinds = ", ".join(f"{counted[kind]} {kind}" for kind in ("changed", "added", "removed", "renamed", "moved")
                      if counted[kind])
    state = (kinds or "no object changes") if unit.rendered else f"not rendered: {unit.note}"
    return f"{unit.kind} {unit.name} \u00b7 {state} \u00b7 {unit.source}"


def _unit_block(unit: ApplicationChange, clusters: Sequence[str], *, diffs: bool, total: int,
                whole: bool = False) -> str:
    """One application's object changes as a collapsible section: each object with its diff (``diffs``), else
    the objects by name; cut to ``OBJECTS`` objects of ``DIFF_LINES`` lines unless ``whole``."""
    cap, lines_cap = (None, None) if whole else (OBJECTS, DIFF_LINES)
    more = " \u2026" if len(clusters) > GROUP_NAMES else ""
    where = md.html(_cut(clusters[0])) if len(clusters) == 1 else (
        f"{len(clusters)} clusters" if len(clusters) == total else
        f"{len(clusters)} clusters ({md.html(_cut(', '.join(clusters[:GROUP_NAMES])))}{more})")
    body: list[str] = []
    if unit.note:
        body += ["", _text(unit.note)]
    for item in unit.objects[:cap]:
        was = f" (was {md.code(item.was)})" if item.was else ""
        body += ["", f"{md.code(item.ref)} {item.change}{was}"]
        if diffs and item.diff:
            lines = item.diff.splitlines()
            rest = [f"\u2026 {len(lines) - DIFF_LINES} more lines in the full plan"] \
                if lines_cap is not None and len(lines) > lines_cap else []
            body += md.block([*lines[:lines_cap], *rest], "diff")
    body += ["", f"\u2026 and {len(unit.objects) - OBJECTS} more objects in the full plan"] \
        if cap is not None and len(unit.objects) > cap else []
    shown_for = f" (shown for {md.html(_cut(clusters[0]))}; names differ by cluster)" \
        if len(clusters) > 1 and clusters[0] in unit.model_dump_json() else ""
    summary = f"{md.html(_cut(_unit_summary(unit)))} \u00b7 {where}{shown_for}"
    return "\n".join([f"<details><summary>{summary}</summary>", *body, "", "</details>"])


def _objects(plan: Plan, budget: int | None) -> tuple[list[str], int]:
    """The rendered-object changes, each application change once with the clusters that make it, the biggest
    first, within ``budget`` characters (diffs dropped, then applications counted, when they do not fit); and how
    many were left out or shortened."""
    keyed: dict[str, ApplicationChange] = {}
    per_cluster: list[tuple[str, list[str]]] = []
    for cluster in plan.clusters:
        keys = [_same_change(unit, cluster.name) for unit in cluster.applications]
        for key, unit in zip(keys, cluster.applications, strict=True):
            keyed.setdefault(key, unit)
        per_cluster.append((cluster.name, keys))
    shared = grouped(per_cluster)
    if not shared:
        return [], 0
    order = sorted(shared, key=lambda pair: (-keyed[pair[0]].lines * len(pair[1]), keyed[pair[0]].name))
    total = len(plan.clusters)
    lines = ["", "### Rendered objects", ""]
    used, cut = sum(len(line) + 1 for line in lines), 0
    for index, (key, names) in enumerate(order):
        unit = keyed[key]
        block = _unit_block(unit, names, diffs=True, total=total, whole=budget is None)
        if budget is not None and used + len(block) > budget:
            block, cut = _unit_block(unit, names, diffs=False, total=total), cut + 1
        if budget is not None and used + len(block) > budget:
            lines.append(f"\u2026 and {len(order) - index} more application changes (the full plan has them)")
            return lines, cut + len(order) - index
        lines += [block, ""]
        used += len(block) + 2
    return lines, cut


def _same_change(unit: ApplicationChange, cluster: str) -> str:
    """What makes two clusters' application changes the same: equal once each cluster's own name is taken out
    (a shared Argo CD or Flux hub prefixes every object with it); the first cluster's is shown."""
    return unit.model_dump_json().replace(cluster, "\0cluster\0") if cluster else unit.model_dump_json()


def _names(names: Sequence[str]) -> str:
    """``N clusters: a, b, c \u2026 and M more``."""
    shown = ", ".join(md.code(name) for name in names[:GROUP_NAMES])
    more = f" \u2026 and {len(names) - GROUP_NAMES} more" if len(names) > GROUP_NAMES else ""
    return f"{len(names)} clusters: {shown}{more}"


def _ordered(clusters: Sequence[ClusterPlan]) -> list[ClusterPlan]:
    """High-risk clusters first, then those with a policy error, then the others (each in the order given)."""
    return sorted(clusters, key=lambda cluster: (not cluster.highRisk,
                                                 not any(item.severity == "error" for item in cluster.policies)))


def _fit(renders: Sequence[Callable[[int | None], str]], available: int) -> tuple[list[str], int]:
    """Each section at the largest size that fits: as many sections as fit as summaries are kept (the first
    ones), then the smallest sections are given their full text first and the rest share what is left."""
    smallest = [len(render(None)) + 2 for render in renders]
    kept, used = 0, 0
    while kept < len(renders) and used + smallest[kept] <= available:
        used += smallest[kept]
        kept += 1
    full = [len(renders[index](SHRINK[0])) for index in range(kept)]
    chosen: dict[int, str] = {}
    remaining = available
    waiting = sum(smallest[:kept])
    for position, index in enumerate(sorted(range(kept), key=lambda index: full[index])):
        waiting -= smallest[index]
        share = max(min(remaining // (kept - position), remaining - waiting), smallest[index])
        text = next((text for text in (renders[index](level) for level in SHRINK) if len(text) + 2 <= share),
                    None) or renders[index](None)
        chosen[index] = text
        remaining -= len(text) + 2
    return [chosen[index] for index in range(kept)], len(renders) - kept


def _news(cluster: ClusterPlan) -> bool:
    """A cluster gets its own section when merging changes it or a policy refuses it; the warnings of an
    unchanged cluster are no news (``policy check`` and the JSON still list them)."""
    return bool(cluster.changed or any(item.severity == "error" for item in cluster.policies))


def markdown(plan: Plan, budget: int | None = BUDGET, *, full: str | None = None) -> str:
    """The plan as Markdown of at most ``budget`` characters (None: all of it, every object diff); ``full`` names
    where the whole plan is written, for the comment to point to when it leaves something out."""
    lines = [*_header(plan), *_verdicts(plan, None if budget is None else budget // 5)]
    room = None
    if budget is not None:  # what the cluster sections need at least: a line naming each changed cluster
        naming = sum(len(md.code(cluster.name)) + 2 for cluster in plan.clusters if _news(cluster))
        room = max(0, min(int(budget * OBJECTS_SHARE), budget - sum(len(line) + 1 for line in lines) - naming
                          - RESERVE))
    rendered, cut = _objects(plan, room)
    lines += rendered
    if cut:
        where = f"in {md.code(full.replace(chr(92), '/').rsplit('/', 1)[-1])} (the job summary or the run's " \
            "artifact)" if full else f"with {md.code('aicr-gen plan --full FILE')}"
        lines += [f"{cut} application changes are shortened or left out here: every object diff is {where}."]
    budget = budget if budget is not None else 1 << 62
    shown = [cluster for cluster in _ordered(plan.clusters) if _news(cluster)]
    quiet = [cluster.name for cluster in plan.clusters if not _news(cluster)]
    tail: list[str] = []
    if quiet:
        names = ", ".join(_capped([md.code(name) for name in quiet], UNCHANGED_NAMES, "clusters"))
        tail = ["", f"Unchanged ({len(quiet)}): {names}"]
    if not shown:
        lines += ["", "Merging changes no cluster's tree."]
    head = "\n".join(lines) + "\n\n"
    foot = "\n".join(tail) + "\n"
    reserve = 200  # the line that counts the sections left out
    renders = [partial(section, cluster, open_=len(shown) == 1) for cluster in shown]
    available = budget - len(head) - len(foot) - reserve
    sections, left_out = _fit(renders, available)
    if left_out:  # name every cluster the comment leaves out: room for all their names, at most
        sections, left_out = _fit(renders, available - len(", ".join(md.code(cluster.name) for cluster in shown)))
        names = ", ".join(md.code(cluster.name) for cluster in shown[len(shown) - left_out:])
        sections.append(f"\u2026 and {_plural(left_out, 'more cluster')} with changes not shown (the comment would "
                        f"exceed GitHub's limit; {md.code('aicr-gen plan --format json')} has them all): {names}")
    return head + "\n\n".join(sections) + ("\n" if sections else "") + foot
