"""``aicr-gen sync --check SPEC...``: is each spec's committed tree (HEAD, or the index) what ``sync`` would
commit? Exit 0, or 1 listing the stale clusters and their files.

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
from aicr_gen.gitops.sync import Folder, entries
from aicr_gen.gitops.sync_specs import folder_files


def _all_records(repo: Repo, rev: str, *, index: bool) -> dict[str, list[record.Record]]:
    """The inputs records at ``rev`` (or in the index), by the spec they name."""
    from aicr_gen.gitops.objects import read_blobs

    listed = entries(repo, rev, [Folder(record.FOLDER, {})], index=index)
    contents = read_blobs(repo, [sha for _mode, sha in listed.values()])
    out: dict[str, list[record.Record]] = {}
    for name, (_mode, sha) in sorted(listed.items()):
        parsed = record.parse(contents[sha])
        if parsed is not None and record.path_of(parsed.path) == name:
            out.setdefault(parsed.spec, []).append(parsed)
    return out


def _candidate(found: list[record.Record], path_option: str | None) -> record.Record | None:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.gitops.spec import repo_folder

    try:
        wanted = repo_folder(path_option) if path_option is not None else None
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
    by_spec = _all_records(repo, rev, index=staged)
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
    problems: list[str] = []
    up_to_date = 0
    for spec in specs:
        path = fresh[spec].path if spec in fresh else rendered[spec].path
        stale = [] if spec in fresh else rendered[spec].stale
        if stale:
            problems.append(f"{path} is not up to date with {spec} in {against} "
                            f"(run 'aicr-gen sync {spec} --repo {repo.working_tree_dir}'):")
            problems += [f"  {line}" for line in stale]
        else:
            up_to_date += 1
            sys.stdout.write(f"aicr-gen: {path} is up to date with {spec} in {against}\n")
    count = f"{up_to_date} of {len(specs)} tree(s) up to date with {against}"
    if problems:
        raise FindingsError("\n".join([*problems, f"{count}; {len(specs) - up_to_date} stale"]))
    sys.stdout.write(f"aicr-gen: {count}\n")
    return OK
