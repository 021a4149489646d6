"""The trees ``plan`` compares: for each ClusterSpec, its managed folder at the base and the tree merging would
give, rendered only where the repository does not already hold it.

A spec's new tree comes from the first of:

1. the base, when the inputs record there says its tree is what rendering gives now: nothing changes;
2. HEAD, when HEAD's inputs record says its tree is what rendering gives now (a pull request whose branch ran
   ``sync``, as the pre-commit hook and the Action do): HEAD's tree and the record's policy findings are what
   rendering and the policy check would give, so the plan is the same bytes as a rendering one;
3. rendering (``render_many.for_plan``).

"Now" is the inputs as the work tree holds them, which is what rendering reads: the freshness test is
``committed.unchanged``'s (``record.fresh``, policies included). Only HEAD's commit is read, never the index or
the work-tree files of the managed folders: rendering does not read them either, so a staged or unstaged edit of a
tree never changes a plan, while an uncommitted edit of an input (a spec, the fleet file) makes HEAD's record
stale and that spec is rendered.

Git is read at the edges, once per run: both commits' listings, and every blob the compared trees hold in one
``git cat-file --batch`` (a fleet's trees share most blobs; each is read and kept once, and the comparison parses
each distinct file once per process). The comparisons run in the worker processes of ``render_many.run_all``,
forked once the blobs are read: a task carries blob names, the blobs are the run's (``_BLOBS``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

from aicr_gen.edges.git import Repo

if TYPE_CHECKING:
    from aicr_gen.gitops.records.record import Record
    from aicr_gen.gitops.render_many import Survey
    from aicr_gen.gitops.review.plan import ClusterPlan
    from aicr_gen.gitops.review.renderer import RenderOptions


class Tree(Mapping[str, bytes]):
    """A committed tree as ``review`` reads one: relative path -> content, from its blob names and the blobs read
    for the run (``files``: path -> blob name; ``blobs``: blob name -> content)."""

    def __init__(self, files: Mapping[str, str], blobs: Mapping[str, bytes]) -> None:
        self.files = files
        self._blobs = blobs

    def __getitem__(self, name: str) -> bytes:
        return self._blobs[self.files[name]]

    def __iter__(self) -> Iterator[str]:
        return iter(self.files)

    def __len__(self) -> int:
        return len(self.files)

    def __contains__(self, name: object) -> bool:
        return name in self.files


_BLOBS: dict[str, bytes] = {}
"""The run's blobs (name -> content), read before the comparisons' workers fork: they share them."""


class Committed(NamedTuple):
    """A spec whose tree HEAD holds, to compare: its files at the base and at HEAD (path -> blob name) and the
    policy findings of HEAD's inputs record."""

    name: str
    spec: str
    path: str
    old: dict[str, str]
    new: dict[str, str]
    findings: list[dict[str, str]]
    objects: RenderOptions | None = None  # how rendered objects are reviewed (None: not at all)


def compared(job: Committed) -> ClusterPlan:
    """The plan of a spec HEAD holds the tree of: its trees compared as ``review.plan.cluster_plan`` compares
    rendered ones, read from the run's blobs."""
    from aicr_gen.gitops.review.plan import cluster_plan
    from aicr_gen.gitops.review.renderer import review_for

    return cluster_plan(job.name, job.spec, job.path, old=Tree(job.old, _BLOBS), new=Tree(job.new, _BLOBS),
                        findings=job.findings, objects=review_for(job.objects) if job.objects is not None else None)


AtCommit = tuple[Mapping[str, bytes], Mapping[str, Mapping[str, str]]]
"""A commit's inputs records (folder -> record) and managed folders' files (folder -> path -> blob name)."""


def answered(surveys: Sequence[Survey], root: Path, base: AtCommit,
             head: AtCommit) -> tuple[dict[str, Record], dict[str, Record]]:
    """The specs rendering need not answer, folder -> the record that says so: those whose tree at the base is
    what rendering gives now (unchanged), then those whose tree at HEAD is (synced)."""
    from aicr_gen.gitops.committed import unchanged
    from aicr_gen.gitops.records import fingerprint

    digests = fingerprint.Digests()
    kept: dict[str, Record] = {}
    synced: dict[str, Record] = {}
    for item in surveys:
        now = digests.inputs(item.places)
        if (found := unchanged(item, now, base[0].get(item.path), base[1][item.path], root)) is not None:
            kept[item.path] = found
        elif (found := unchanged(item, now, head[0].get(item.path), head[1].get(item.path, {}), root)) is not None:
            synced[item.path] = found
    return kept, synced


def head_commit(repo: Repo) -> str | None:
    """The commit HEAD names (None on a branch with no commit yet)."""
    return repo.run("rev-parse", "--verify", "-q", "HEAD^{commit}", check=False) or None


def cluster_plans(repo: Repo, specs: list[str], commit: str, jobs: int | None,
                  objects: RenderOptions | None = None) -> list[ClusterPlan]:
    """Every spec's plan against ``commit``, in the order given, its new tree from the base, HEAD or rendering as
    the module says. Exit 2 when two trees would collide (``committed.refuse_collisions``)."""
    import multiprocessing
    from functools import partial

    from aicr_gen.edges.git_objects import read_blobs
    from aicr_gen.gitops.committed import all_records, folder_files, refuse_collisions
    from aicr_gen.gitops.records import fingerprint
    from aicr_gen.gitops.render_many import Job, for_plan, run_all, survey, workers_for
    from aicr_gen.gitops.review.plan import unchanged_plan
    from aicr_gen.spec.patterns import distinct

    workers = workers_for(len(specs), jobs)
    root = Path(repo.working_tree_dir).resolve()
    surveys = run_all(partial(survey, path_option=None, root=str(root)), specs, workers, str)
    distinct([(item.spec_file, item.name, item.path) for item in surveys])
    paths = [item.path for item in surveys]
    records = all_records(repo, commit)
    old = folder_files(repo, commit, paths)
    head = head_commit(repo)
    at_head = all_records(repo, head) if head is not None and head != commit else {}
    new = folder_files(repo, head, paths) if head is not None and at_head else {}
    kept, synced = answered(surveys, root, (records, old), (at_head, new))
    todo = [item for item in surveys if item.path not in kept and item.path not in synced]
    jobs_ = [Job(item.spec_file, item.path, False, repo.working_tree_dir, "", commit, objects) for item in todo]
    rendered = dict(zip([item.path for item in todo], run_all(for_plan, jobs_, workers_for(len(jobs_), jobs),
                                                              lambda job: job.spec_file), strict=True))
    names = {item.path: fingerprint.name_of(Path(item.spec_file), root) for item in surveys}
    refuse_collisions(repo, commit, {**{path: (names[path], parsed.keyed())
                                        for path, parsed in (*kept.items(), *synced.items())},
                                     **{path: (names[path], found) for path, (_plan, found) in rendered.items()}},
                      records)
    committed = [Committed(item.name, item.spec_file, item.path, old[item.path], new[item.path],
                           synced[item.path].findings, objects) for item in surveys if item.path in synced]
    _BLOBS.update(read_blobs(repo, [sha for job in committed for files in (job.old, job.new)
                                    for sha in files.values()]))
    forked = "fork" in multiprocessing.get_all_start_methods()  # else a worker would not have the blobs
    try:
        plans = dict(zip([job.path for job in committed],
                         run_all(compared, committed, workers_for(len(committed), jobs) if forked else 1,
                                 lambda job: job.spec), strict=True))
    finally:
        _BLOBS.clear()
    return [rendered[item.path][0] if item.path in rendered else plans[item.path] if item.path in plans else
            unchanged_plan(item.name, item.spec_file, item.path, kept[item.path].findings) for item in surveys]
