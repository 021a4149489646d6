"""``aicr-gen sync SPEC...``: every spec loaded and validated, the ones whose inputs changed since their tree's
record rendered (in worker processes when many), and all of it committed as one commit by ``sync.sync``.

In order, and nothing of this sync is written before the last step: git must have an identity to commit as
(checked first, exit 2); an earlier sync of this work tree that was interrupted is finished
(``sync.finish_interrupted``); every spec is surveyed (all problems reported at once, exit 2), two specs sharing
a folder or a cluster name, or naming different repositories, are refused; a spec whose inputs record at the
base says its tree is what rendering would give is skipped (neither rendered nor checked against its policies
again: they are among the inputs); the others are rendered and checked (again all problems at once); no tree may
define an Argo CD or Flux object another cluster's tree defines in the same control plane, among the run's trees
and against every other tree of the repository as its inputs record lists it (exit 2 naming both clusters:
``refuse_collisions``); the blobs are stored and ``sync.sync`` makes the one commit, with a new inputs record per
rendered tree and the specs' files that live in the repository.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import NamedTuple

from aicr_gen.edges.git import Repo, writing
from aicr_gen.errors import OK, InvalidInputError
from aicr_gen.gitops import commit_message, fingerprint, record
from aicr_gen.gitops.advance import finish_interrupted
from aicr_gen.gitops.collisions import Owned
from aicr_gen.gitops.render_many import Job, Rendered, Survey, SyncJob, for_sync, run_all, survey, workers_for
from aicr_gen.gitops.sync import Folder, Result, entries, require_identity, sync, target


class Options(NamedTuple):
    """What the command line asks of a sync."""

    path: str | None = None
    branch: str | None = None
    title: str | None = None
    force: bool = False
    push: bool = False
    jobs: int | None = None


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


def all_records(repo: Repo, rev: str, *, index: bool = False) -> dict[str, bytes]:
    """Managed folder -> its inputs record at ``rev`` (or in the index), every record of the repository (a
    file under the records' folder not named after the folder it records is no record)."""
    from aicr_gen.edges.git_objects import read_blobs

    listed = entries(repo, rev, [Folder(record.FOLDER, {})], index=index)
    contents = read_blobs(repo, [sha for _mode, sha in listed.values()])
    out: dict[str, bytes] = {}
    for name, (_mode, sha) in sorted(listed.items()):
        folder = name.removeprefix(f"{record.FOLDER}/").removesuffix(".json")
        if record.path_of(folder) == name:
            out[folder] = contents[sha]
    return out


def refuse_collisions(repo: Repo, rev: str, run: Mapping[str, Owned], records: Mapping[str, bytes], *,
                      index: bool = False) -> None:
    """Exit 2 naming both clusters when a tree of the run (``run``: folder -> its spec and objects) defines an
    Argo CD or Flux object that another of the run's trees, or another tree of the repository at ``rev`` (as its
    inputs record lists it, when that tree is still there), defines in the same control plane."""
    from aicr_gen.gitops import collisions

    others: dict[str, Owned] = {}
    for folder, data in records.items():
        parsed = record.parse(data) if folder not in run else None
        if parsed is not None and parsed.path == folder and parsed.objects:
            others[folder] = (parsed.spec, parsed.keyed())
    present = existing(repo, rev, sorted(others), index=index)
    collisions.refuse_found(collisions.in_repository(
        run, {folder: found for folder, found in others.items() if folder in present}))


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


def existing(repo: Repo, rev: str, folders: Sequence[str], *, index: bool = False) -> set[str]:
    """The ``folders`` that hold a file at ``rev`` (or in the index)."""
    if not folders:
        return set()
    wanted = set(folders)
    if index:
        return {folder for name in repo.run("ls-files", "-z", "--", *folders).split("\0")
                for folder in _parents(name) if folder in wanted}
    wanted = set(folders)
    return {name for name in repo.run("ls-tree", "-z", "--name-only", rev, "--", *folders).split("\0")
            if name in wanted}


def _parents(name: str) -> list[str]:
    parts = name.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts))]


def folder_files(repo: Repo, rev: str, paths: Sequence[str], *, index: bool = False) -> dict[str, dict[str, str]]:
    """Managed folder -> its files at ``rev`` (or in the index): relative path -> blob name."""
    listed = entries(repo, rev, [Folder(path, {}) for path in paths], index=index)
    out: dict[str, dict[str, str]] = {path: {} for path in paths}
    for name, (_mode, sha) in listed.items():
        parts = name.split("/")
        for end in range(1, len(parts)):
            folder = "/".join(parts[:end])
            if folder in out:
                out[folder]["/".join(parts[end:])] = sha
                break
    return out


def unchanged(found: Survey, now: fingerprint.Inputs, data: bytes | None, files: Mapping[str, str],
              root: Path) -> record.Record | None:
    """The record ``data`` of ``found``'s folder at the base when it says the tree there is what rendering
    ``found`` would give and its policies passed (then the spec need not be rendered), else None."""
    parsed = record.parse(data) if data is not None else None
    fits = bool(parsed and parsed.spec == fingerprint.name_of(Path(found.spec_file), root)
                and parsed.cluster == found.name and parsed.path == found.path
                and parsed.from_option == found.from_option and parsed.fresh(now, files, policies=True))
    return parsed if fits else None


def run(repo: Repo, specs: Sequence[str], options: Options) -> int:
    """Sync ``specs`` as one commit (see the module's docstring)."""
    from aicr_gen.edges.git_objects import name_in, object_format, store
    from aicr_gen.spec.patterns import distinct, one_repository

    _begin(repo)
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
    text = _message(synced, rendered, len(surveys), options.title, own_inputs)
    outcome = sync(repo, where, managed, text, inputs=input_names, force=options.force, push=options.push)
    _report(outcome, synced, surveys, len(todo), inputs)
    return OK


def _begin(repo: Repo) -> None:
    """Before anything is rendered: git can commit here, and an interrupted sync is finished."""
    require_identity(repo)
    finished = finish_interrupted(repo)
    if finished:
        sys.stdout.write(f"aicr-gen: {finished}\n")


def _message(synced: Sequence[commit_message.Synced], rendered: Sequence[Rendered], given: int, title: str | None,
             own_inputs: Mapping[str, Sequence[str]]) -> str:
    only = synced[0] if len(synced) == 1 else None
    if given == 1 and only is not None and only.changes is not None:
        return commit_message.message(only.name, only.path, only.changes, only.recipe, title=title,
                                      inputs=own_inputs[rendered[0].spec_file])
    return commit_message.fleet_message(synced, given, title=title,
                                        inputs=sorted({name for names in own_inputs.values() for name in names}))


def _report(result: Result, synced: Sequence[commit_message.Synced], surveys: Sequence[Survey], rendered: int,
            inputs: Mapping[str, bytes]) -> None:
    if len(surveys) == 1:
        path = surveys[0].path
        if result.commit is None:
            sys.stdout.write(f"aicr-gen: {path} is up to date on {result.ref}; nothing to commit\n")
        else:
            tree_files = [name for name in result.changed if name.startswith(f"{path}/")]
            sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref} ({len(tree_files)} files "
                             f"changed under {path}{' and its spec' if inputs else ''})\n")
        return
    counts = f"{len(surveys)} spec(s): {rendered} rendered, {len(surveys) - rendered} unchanged since their record"
    if result.commit is None:
        sys.stdout.write(f"aicr-gen: every tree is up to date on {result.ref}; nothing to commit ({counts})\n")
    else:
        sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref}: {len(synced)} cluster(s) "
                         f"changed, {len(result.changed)} files ({counts})\n")
