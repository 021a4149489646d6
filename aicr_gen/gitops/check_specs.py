"""``aicr-gen sync --check SPEC...``: is each spec's committed tree (HEAD, or the index) what ``sync`` would
commit? Exit 0, or 1 listing the stale clusters and their files; with several specs the up-to-date ones are
only counted ("998 of 1000 tree(s) up to date with HEAD; stale: ..."). Exit 2 when two trees of the run, or a
tree of the run and another tree of the repository (its record), define one Argo CD or Flux object in one
control plane (``sync_specs.refuse_collisions``).

A spec is answered without loading or rendering it when the inputs record of its tree names it, aicr-gen and
every input it lists read as recorded, and the folder holds the recorded files (``record``). The others are
loaded, rendered (in worker processes when many) and compared file by file, which gives every message a render
gives; the record is not part of the comparison, so an input that changes no file (an edited policy, a catalog
file nothing reads) never makes a tree stale.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

from aicr_gen.errors import OK, FindingsError
from aicr_gen.gitops import fingerprint, record
from aicr_gen.gitops.git import Repo
from aicr_gen.gitops.render_many import Job, for_check, run_all, survey, workers_for
from aicr_gen.gitops.sync_specs import all_records, folder_files, refuse_collisions

LISTED = 20
"""Stale trees named in the last line (all are listed above it, with their files)."""


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
        from aicr_gen.gitops.spec import repo_folder

        try:
            wanted = repo_folder(path_option)
        except InvalidInputError:
            return None  # rendering says what is wrong with it
    fitting = [item for item in found if item.from_option == (wanted is not None)
               and (wanted is None or item.path == wanted)]
    return fitting[0] if len(fitting) == 1 else None


def run(repo: Repo, specs: Sequence[str], path_option: str | None, *, staged: bool, jobs: int | None) -> int:
    """Check ``specs`` (see the module's docstring)."""
    from aicr_gen.gitops.objects import object_format
    from aicr_gen.gitops.specs import distinct
    from aicr_gen.gitops.sync import _head

    against = "the index" if staged else "HEAD"
    rev = ":index" if staged else _head(repo)
    root = Path(repo.working_tree_dir).resolve()
    every_record = all_records(repo, rev, index=staged)
    by_spec = _by_spec(every_record)
    digests = fingerprint.Digests()
    candidates = {spec: _candidate(by_spec.get(fingerprint.name_of(Path(spec), root), []), path_option)
                  for spec in specs if spec != "-"}
    listed = folder_files(repo, rev, sorted({item.path for item in candidates.values() if item is not None}),
                          index=staged)
    fresh = {spec: item for spec, item in candidates.items() if item is not None
             and item.fresh(digests.inputs(item.places(root)), listed[item.path], policies=False)}
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
    problems: list[str] = []
    stale_paths: list[str] = []
    for spec in specs:
        path = fresh[spec].path if spec in fresh else rendered[spec].path
        stale = [] if spec in fresh else rendered[spec].stale
        if stale:
            stale_paths.append(path)
            problems.append(f"{path} is not up to date with {spec} in {against} "
                            f"(run 'aicr-gen sync {spec} --repo {repo.working_tree_dir}'):")
            problems += [f"  {line}" for line in stale]
        elif len(specs) == 1:
            sys.stdout.write(f"aicr-gen: {path} is up to date with {spec} in {against}\n")
    count = f"{len(specs) - len(stale_paths)} of {len(specs)} tree(s) up to date with {against}"
    if problems:
        raise FindingsError("\n".join([*problems, f"{count}; stale: {_listed(stale_paths)}"]))
    sys.stdout.write(f"aicr-gen: {count}\n")
    return OK


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:LISTED])
    return shown if len(paths) <= LISTED else f"{shown} and {len(paths) - LISTED} more"
