"""``aicr-gen sync --check SPEC...`` without its output: is each spec's committed tree (HEAD, or the index) what
``sync`` would commit? ``check`` gives each tree's stale files and why, and the specs a changed policy now
refuses; the command reports them (exit 1 for either). Exit 2 when two trees of the run, or a tree of the run and
another tree of the repository (its record), define one Argo CD or Flux object in one control plane
(``committed.refuse_collisions``).

A spec is answered without loading or rendering it when the inputs record of its tree names it, aicr-gen and
every input it lists read as recorded, and the folder holds the recorded files (``record``). The others are
loaded, rendered (in worker processes when many) and compared file by file, which gives every message a render
gives; the record is not part of the comparison, so an input that changes no file (an edited policy, a catalog
file nothing reads) never makes a tree stale. A stale tree's message says why (``cause``): each input whose digest
differs from the record's, with the spec field that reads it (``fleet.yaml changed (spec.extends)``), aicr-gen
itself, or a hand edit of the tree (a Renovate bump of a fleet file alone: ``fleet.yaml changed (spec.extends)``
on every cluster that extends it).

A policy is not part of the tree, but ``sync`` refuses a spec its policies reject: a spec whose record lists
other policy digests than the policies now have (an edited ``spec.policies`` file, another aicr-gen's shipped
policies) has its policies evaluated again, and one they now refuse is exit 1 naming the policies that changed
and each error at its file and line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

from aicr_gen.edges.git import Repo
from aicr_gen.gitops.committed import all_records, folder_files, refuse_collisions
from aicr_gen.gitops.records import fingerprint, record
from aicr_gen.gitops.render_many import Job, for_check, run_all, survey, workers_for


class Tree(NamedTuple):
    """One spec's committed tree as checked."""

    spec: str
    path: str
    stale: list[str]
    """Its files that differ (``stale  PATH``, ``missing PATH``...), empty when it is up to date."""
    why: str
    """Why it is stale (``cause``), empty when it is not."""


class Checked(NamedTuple):
    """What ``sync --check`` found: every spec's tree in the order given, and the specs a changed policy now
    refuses (spec -> its message lines)."""

    against: str
    """``HEAD`` or ``the index``."""
    trees: list[Tree]
    refused: dict[str, list[str]]


def _by_spec(records: dict[str, bytes]) -> dict[str, list[record.Record]]:
    """The parsed inputs records, by the spec they name."""
    out: dict[str, list[record.Record]] = {}
    for folder, data in records.items():
        parsed = record.parse(data)
        if parsed is not None and parsed.path == folder:
            out.setdefault(parsed.spec, []).append(parsed)
    return out


def _candidate(found: list[record.Record], path_option: str | None) -> record.Record | None:
    wanted = None
    if path_option is not None:  # the spec model (pydantic) only when a --path needs checking
        from aicr_gen.errors import InvalidInputError
        from aicr_gen.spec.cluster import repo_folder

        try:
            wanted = repo_folder(path_option)
        except InvalidInputError:
            return None  # rendering says what is wrong with it
    fitting = [item for item in found if item.from_option == (wanted is not None)
               and (wanted is None or item.path == wanted)]
    return fitting[0] if len(fitting) == 1 else None


def check(repo: Repo, specs: Sequence[str], path_option: str | None, *, staged: bool, jobs: int | None) -> Checked:
    """Check ``specs`` (see the module's docstring)."""
    from aicr_gen.edges.git_objects import object_format
    from aicr_gen.gitops.commit.sync import _head
    from aicr_gen.spec.patterns import distinct

    against = "the index" if staged else "HEAD"
    rev = ":index" if staged else _head(repo)
    root = Path(repo.working_tree_dir).resolve()
    every_record = all_records(repo, rev, index=staged)
    by_spec = _by_spec(every_record)
    digests = fingerprint.Digests()
    candidates = {spec: item for spec in specs if spec != "-" and (item := _candidate(
        by_spec.get(fingerprint.name_of(Path(spec), root), []), path_option)) is not None}
    listed = folder_files(repo, rev, sorted({item.path for item in candidates.values()}), index=staged)
    now = {spec: digests.inputs(item.places(root)) for spec, item in candidates.items()}
    fresh = {spec: item for spec, item in candidates.items()
             if item.fresh(now[spec], listed[item.path], policies=False)}
    rest = [spec for spec in specs if spec not in fresh]
    workers = workers_for(len(rest), jobs)
    surveys = run_all(partial(survey, path_option=path_option, root=str(root)), rest, workers, str)
    surveyed = {item.spec_file: item for item in surveys}
    distinct([(spec, fresh[spec].cluster, fresh[spec].path) if spec in fresh else
              (spec, surveyed[spec].name, surveyed[spec].path) for spec in specs])
    fmt = object_format(repo)
    jobs_ = [Job(item.spec_file, item.path, item.from_option, repo.working_tree_dir, fmt, rev) for item in surveys]
    rendered = {item.spec_file: item for item in run_all(for_check, jobs_, workers, lambda job: job.spec_file)}
    refuse_collisions(repo, rev, {**{item.path: (item.spec, item.keyed()) for item in fresh.values()},
                                  **{item.path: (fingerprint.name_of(Path(spec), root), item.objects)
                                     for spec, item in rendered.items()}},
                      every_record, index=staged)
    current = {spec: digests.inputs(surveyed[spec].places) if spec in surveyed else now[spec] for spec in candidates}
    moved = {spec: item for spec, item in candidates.items() if item.policies != current[spec].policies}
    refused = _refused(moved, current, workers_for(len(moved), jobs))
    trees = []
    for spec in specs:
        path = fresh[spec].path if spec in fresh else rendered[spec].path
        stale = [] if spec in fresh else rendered[spec].stale
        why = cause(candidates.get(spec), digests.inputs(surveyed[spec].places), surveyed[spec].fields) \
            if stale else ""
        trees.append(Tree(spec, path, stale, why))
    return Checked(against, trees, refused)


def cause(found: record.Record | None, now: fingerprint.Inputs, fields: Mapping[str, str]) -> str:
    """Why a tree is stale, for its message: the inputs whose digests differ from its record's (each with the spec
    field that reads it), aicr-gen itself, a hand edit of the tree, or no record."""
    if found is None:
        return f"it has no inputs record of this spec ({record.FOLDER}/): sync never committed it from this spec"
    changed = [_changed(name, found.inputs.get(name), now.render.get(name), fields.get(name))
               for name in sorted({*found.inputs, *now.render}) if found.inputs.get(name) != now.render.get(name)]
    code = fingerprint.code()
    if found.aicr_gen != code:
        old, new = found.aicr_gen.get("version", "?"), code["version"]
        changed.append(f"aicr-gen changed ({old} -> {new})" if old != new else "aicr-gen's code changed")
    return ", ".join(changed) or "its files differ from what sync committed (edited by hand)"


def _changed(name: str, old: str | None, new: str | None, field: str | None) -> str:
    if old is None:
        return f"it reads {name} now ({field})" if field else f"it reads {name} now"
    if new is None:
        return f"it no longer reads {name}"
    return f"{name} changed ({field})" if field else f"{name} changed"


def _refused(moved: Mapping[str, record.Record], current: Mapping[str, fingerprint.Inputs],
             workers: int) -> dict[str, list[str]]:
    """Spec -> its message lines, for the specs a changed policy now refuses (``sync`` would commit nothing for
    them): the policies that changed, then its errors at their files and lines."""
    names = sorted(moved)
    out: dict[str, list[str]] = {}
    for spec, errors in zip(names, run_all(refusals, names, workers, str), strict=True):
        if errors:
            was, now = moved[spec].policies, current[spec].policies
            policies = ", ".join(f"{name} ({'spec.policies' if name != fingerprint.SHIPPED_POLICIES else 'shipped'})"
                                 for name in sorted({*was, *now}) if was.get(name) != now.get(name))
            out[spec] = [f"{spec}: refused by its policies since {policies} changed; fix the spec or the policy "
                         "(see 'aicr-gen policy check'):", *(f"  {error}" for error in errors)]
    return out


def refusals(spec_file: str) -> list[str]:
    """The policy errors of a spec as ``sync`` would refuse it, each at the file and line of its value."""
    from aicr_gen.gitops.render_many import findings
    from aicr_gen.gitops.trees.recipes import resolve_spec
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(spec_file)
    base = Path(spec_file).resolve().parent
    out = []
    for item in findings(cluster, base, resolve_spec(cluster, base)):
        if item.severity == "error":
            file, line = cluster.origin(item.path) or (spec_file, None)
            out.append(f"{file}{'' if line is None else f':{line}'}: {item.policy} {item.path}: {item.message}")
    return out

