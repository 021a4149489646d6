"""``aicr-gen sync SPEC...`` without its output: every spec loaded and validated, the ones whose inputs changed
since their tree's record rendered (in worker processes when many), and all of it committed as one commit by
``sync.sync``.

Before ``commit_specs`` the command has checked that git has an identity to commit as (exit 2) and finished an
earlier sync of this work tree that was interrupted (``advance.finish_interrupted``). Then, in order, and nothing
of this sync is written before the last step: every spec is surveyed (all problems reported at once, exit 2),
two specs sharing a folder or a cluster name, or naming different repositories, are refused; a spec whose inputs
record at the base says its tree is what rendering would give is skipped (neither rendered nor checked against
its policies again: they are among the inputs); the others are rendered and checked (again all problems at
once); no tree may define an Argo CD or Flux object another cluster's tree defines in the same control plane,
among the run's trees and against every other tree of the repository as its inputs record lists it (exit 2
naming both clusters: ``committed.refuse_collisions``); the blobs are stored and ``sync.sync`` makes the one
commit, with a new inputs record per rendered tree and the specs' files that live in the repository.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

from aicr_gen.edges.git import Repo, writing
from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.commit.sync import Folder, Result, sync, target
from aicr_gen.gitops.committed import all_records, folder_files, refuse_collisions, unchanged
from aicr_gen.gitops.records import fingerprint, record
from aicr_gen.gitops.render_many import Job, Rendered, Survey, SyncJob, for_sync, run_all, survey, workers_for
from aicr_gen.gitops.review import commit_message
from aicr_gen.gitops.trees.collisions import Owned


class Options(NamedTuple):
    """What the command line asks of a sync."""

    path: str | None = None
    branch: str | None = None
    title: str | None = None
    force: bool = False
    push: bool = False
    jobs: int | None = None
    preface: tuple[str, ...] = ()
    """Lines of the message before what changed (``rollout``: the evidence a wave moved on)."""
    trailers: tuple[str, ...] = ()
    """Trailers after aicr-gen's own (``rollout``: ``Rollout-Wave: prod``)."""


class Outcome(NamedTuple):
    """What a sync did, for the command to report."""

    result: Result
    changed: int
    """Clusters whose tree (or only its record) changed."""
    paths: list[str]
    """The managed folder of each spec."""
    rendered: int
    """Specs rendered (the others unchanged since their record)."""
    inputs: bool
    """Whether spec files living in the repository were committed with the trees."""


def spec_inputs(repo: Repo, found: Survey, managed: set[str]) -> dict[str, bytes]:
    """Repository path -> content of the spec and every file it reads (its fleet, sentinel rules, policies,
    catalog folders) that lies inside the repository's work tree, as they are there now: committed with the
    tree, they make the commit self-consistent. One inside a managed folder is refused (the tree would replace
    it)."""
    root = Path(repo.working_tree_dir).resolve()
    render, policies = found.places
    named = {**render, **policies}
    out: dict[str, bytes] = {}
    for key, place in sorted(named.items()):
        item = place.resolve()
        if key.startswith("aicr-gen:") or not item.is_relative_to(root) or not item.exists():
            continue
        rel = item.relative_to(root).as_posix()
        listed = repo.run("ls-files", "-z", "--cached", "--others", "--exclude-standard", "--", rel) \
            if item.is_dir() else rel
        for name in filter(None, listed.split("\0")):
            parts = name.split("/")
            inside = next((folder for folder in ("/".join(parts[:end]) for end in range(1, len(parts)))
                           if folder in managed), None)
            if inside is not None:
                raise InvalidInputError(f"{found.spec_file}: {name} lies inside the managed folder {inside}, which "
                                        "sync replaces; keep specs and their files outside it")
            if (root / name).is_file():
                out[name] = (root / name).read_bytes()
    return out


def _specs_inputs(repo: Repo, surveys: Sequence[Survey]) -> tuple[dict[str, bytes], dict[str, list[str]]]:
    """``spec_inputs`` of every spec (repository path -> content), and each spec's own (spec file -> paths)."""
    managed = {item.path for item in surveys}
    inputs: dict[str, bytes] = {}
    own: dict[str, list[str]] = {}
    for item in surveys:
        found = spec_inputs(repo, item, managed)
        inputs.update(found)
        own[item.spec_file] = sorted(found)
    return inputs, own


def _refuse_reserved(surveys: Sequence[Survey]) -> None:
    for found in surveys:
        if found.path == record.FOLDER.split("/")[0] or found.path.startswith(f"{record.FOLDER.split('/')[0]}/"):
            raise InvalidInputError(f"{found.spec_file}: managed path {found.path!r} lies in "
                                    f"{record.FOLDER.split('/')[0]}/, where sync keeps the inputs records; choose "
                                    "another spec.repo.path")


def _objects(surveys: Sequence[Survey], rendered: Sequence[Rendered], records: Mapping[str, bytes],
             root: Path) -> dict[str, Owned]:
    """Managed folder -> its spec and the Argo CD and Flux objects of its tree: as rendered, or as the record of
    a skipped spec lists them."""
    specs = {item.path: fingerprint.name_of(Path(item.spec_file), root) for item in surveys}
    found: dict[str, Owned] = {result.path: (specs[result.path], result.objects) for result in rendered}
    for item in surveys:
        kept = record.parse(records[item.path]) if item.path not in found else None
        if kept is not None:
            found[item.path] = (specs[item.path], kept.keyed())
    return found


def commit_specs(repo: Repo, specs: Sequence[str], options: Options) -> Outcome:
    """Sync ``specs`` as one commit (see the module's docstring)."""
    from aicr_gen.edges.git_objects import name_in, object_format, store
    from aicr_gen.spec.patterns import distinct, one_repository

    where = target(repo, options.branch)
    root = Path(repo.working_tree_dir).resolve()
    workers = workers_for(len(specs), options.jobs)
    surveys = run_all(partial(survey, path_option=options.path, root=str(root)), specs, workers, str)
    distinct([(item.spec_file, item.name, item.path) for item in surveys])
    one_repository([(item.spec_file, item.url) for item in surveys])
    _refuse_reserved(surveys)
    fmt = object_format(repo)
    every_record = all_records(repo, where.base)
    records = {item.path: every_record[item.path] for item in surveys if item.path in every_record}
    old = folder_files(repo, where.base, [item.path for item in surveys])
    digests = fingerprint.Digests()
    now = {item.spec_file: digests.inputs(item.places) for item in surveys}
    todo = [item for item in surveys
            if unchanged(item, now[item.spec_file], records.get(item.path), old[item.path], root) is None]
    inputs, own_inputs = _specs_inputs(repo, surveys)
    jobs = [SyncJob(Job(item.spec_file, item.path, item.from_option, repo.working_tree_dir, fmt, where.base),
                    old[item.path]) for item in todo]
    rendered = run_all(for_sync, jobs, workers_for(len(jobs), options.jobs), lambda work: work.job.spec_file)
    refuse_collisions(repo, where.base, _objects(surveys, rendered, records, root), every_record)
    after = fingerprint.Digests()
    blobs: dict[str, bytes] = {}
    managed: list[Folder] = []
    synced: list[commit_message.Synced] = []
    for item, result in zip(todo, rendered, strict=True):
        blobs.update(result.blobs)
        managed.append(Folder(item.path, result.files))
        # a record only when no input changed while rendering (else the next run renders again)
        data = record.build(item.name, item.path, fingerprint.name_of(Path(item.spec_file), root),
                            now[item.spec_file], result.files, objects=result.objects, findings=result.findings,
                            from_option=item.from_option) \
            if after.inputs(item.places) == now[item.spec_file] else None
        record_blob = {"": name_in(data, fmt)} if data is not None else {}
        if data is not None:
            blobs[record_blob[""]] = data
        managed.append(Folder(record.path_of(item.path), record_blob, single=True))
        if result.files != old[item.path]:
            synced.append(commit_message.Synced(result.name, item.path, result.changes, result.recipe))
        elif data != records.get(item.path):
            synced.append(commit_message.Synced(result.name, item.path, None, result.recipe))
    rendered_paths = {item.path for item in todo}
    for item in surveys:  # unchanged: kept as they are, but their folders must be clean too (or --force restores them)
        if item.path not in rendered_paths:
            kept = records[item.path]
            managed += [Folder(item.path, old[item.path]),
                        Folder(record.path_of(item.path), {"": name_in(kept, fmt)}, single=True)]
    input_names = {name: name_in(data, fmt) for name, data in inputs.items()}
    blobs.update({input_names[name]: data for name, data in inputs.items()})
    with writing(repo):
        store(repo, blobs)
    text = _message(synced, rendered, len(surveys), options, own_inputs)
    outcome = sync(repo, where, managed, text, inputs=input_names, force=options.force, push=options.push)
    return Outcome(outcome, len(synced), [item.path for item in surveys], len(todo), bool(inputs))


def _message(synced: Sequence[commit_message.Synced], rendered: Sequence[Rendered], given: int, options: Options,
             own_inputs: Mapping[str, Sequence[str]]) -> str:
    only = synced[0] if len(synced) == 1 else None
    extra = commit_message.Extra(options.preface, options.trailers)
    if given == 1 and only is not None and only.changes is not None:
        return commit_message.message(only.name, only.path, only.changes, only.recipe, title=options.title,
                                      inputs=own_inputs[rendered[0].spec_file], extra=extra)
    return commit_message.fleet_message(synced, given, title=options.title, extra=extra,
                                        inputs=sorted({name for names in own_inputs.values() for name in names}))

