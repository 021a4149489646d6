"""Many ClusterSpecs at once, in worker processes when there are many: each one surveyed (loaded and validated:
its name, managed folder, repository and the inputs it reads), then rendered as ``sync`` commits it, checks it
(``for_sync``, ``for_check``) or plans it (``for_plan``).

A worker returns values only: the tree as blob names (with the contents of the blobs its folder did not hold at
the base), what changed, the stale files, a plan. Every spec is rendered alone and deterministically, and the
caller orders the results by spec, so the commit and the reports are the same bytes whatever the order of the
arguments or the number of workers. A problem in any spec is collected, not raised: the run reports all of them
in one error, and the caller writes nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from aicr_gen.errors import AicrGenError, FindingsError, InvalidInputError
from aicr_gen.gitops.review.model import Changes
from aicr_gen.gitops.trees.collisions import Keyed

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.gitops.review.renderer import RenderOptions

Item = TypeVar("Item")
Out = TypeVar("Out")
PER_WORKER = 4  # fewer specs per worker than this: rendered in this process (a worker costs a fork and a pipe)
_MEMO: dict[tuple[str, tuple[str, ...]], Any] = {}
"""Catalogs and policies opened during one ``run_all`` (in each worker), by the files they come from: a
fleet's specs share them. An input edited meanwhile is caught by the caller's digests after rendering."""


class Survey(NamedTuple):
    """A loaded, valid spec: what a run needs before rendering it."""

    spec_file: str
    name: str
    path: str
    url: str
    from_option: bool
    places: tuple[dict[str, Path], dict[str, Path]]
    fields: dict[str, str]
    """The spec field that names each input (``fingerprint.fields``)."""


class Job(NamedTuple):
    """One spec to render: its folder, the repository (work tree, object format) and the commit (or, for a
    check against the index, ``":index"``) its tree is compared with."""

    spec_file: str
    path: str
    from_option: bool
    repo: str
    fmt: str
    base: str
    objects: RenderOptions | None = None  # plan: how rendered objects are reviewed (None: not at all)


class SyncJob(NamedTuple):
    """A spec to render for a commit: the job and its folder's files at the base (relative path -> blob name),
    compared in full whatever the number of specs: the commit message names every change (``change_model``)."""

    job: Job
    old: dict[str, str]


class Rendered(NamedTuple):
    """A spec's tree: ``files`` (relative path -> blob name), the contents of the blobs not at the base under its
    folder, what changed against the base, the stale-file lines of a check, the sha256 of its recipe, its Argo
    CD and Flux objects with their control planes (``collisions``), its policy findings (a sync's: warnings)."""

    spec_file: str
    name: str
    path: str
    files: dict[str, str]
    blobs: dict[str, bytes]
    changes: Changes | None
    stale: list[str]
    recipe: str
    objects: list[Keyed]
    findings: list[dict[str, str]]


def workers_for(count: int, jobs: int | None) -> int:
    """How many processes render ``count`` specs: ``jobs`` (--jobs), else one per CPU; 1 (this process) when
    there are too few specs to share."""
    wanted = jobs if jobs is not None else (os.cpu_count() or 1)
    return max(1, min(wanted, count // PER_WORKER))


def run_all(work: Callable[[Item], Out], items: Sequence[Item], workers: int,
            label: Callable[[Item], str]) -> list[Out]:
    """``work`` over ``items`` in order, in ``workers`` processes (1: here). Every item's AicrGenError is
    collected; when one failed, its error is raised, when several, one error lists them all (exit 2 when one is
    invalid input, else 1)."""
    _MEMO.clear()
    results: list[Out | None] = []
    failed: list[tuple[str, AicrGenError]] = []
    for item, outcome in zip(items, _outcomes(work, items, workers), strict=True):
        if isinstance(outcome, AicrGenError):
            failed.append((label(item), outcome))
            results.append(None)
        else:
            results.append(outcome)
    if len(failed) == 1:
        raise failed[0][1]
    if failed:
        code = max(error.exit_code for _name, error in failed)
        text = f"{len(failed)} of {len(items)} spec(s) failed; nothing was written:\n" + "\n".join(
            "  " + (str(error) if str(error).startswith(name) else f"{name}: {error}").replace("\n", "\n    ")
            for name, error in failed)
        raise (InvalidInputError if code == InvalidInputError.exit_code else FindingsError)(text)
    return [item for item in results if item is not None]


def _guarded(work: Callable[[Item], Out], item: Item) -> Out | AicrGenError:
    try:
        return work(item)
    except AicrGenError as err:
        return err


def _outcomes(work: Callable[[Item], Out], items: Sequence[Item], workers: int) -> Iterator[Out | AicrGenError]:
    if workers <= 1 or len(items) < 2:
        return (_guarded(work, item) for item in items)
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor
    from functools import partial

    _preload()
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else None
    with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context(method)) as pool:
        chunk = max(1, min(16, len(items) // (workers * 8)))
        return iter(list(pool.map(partial(_guarded, work), items, chunksize=chunk)))


def _preload() -> None:
    """Import what rendering needs before the workers fork, so each starts with it loaded."""
    import aicr_gen.gitops.trees.render_tree
    import aicr_gen.policy.check
    import aicr_gen.render
    import aicr_gen.render.prepare  # noqa: F401


# ------------------------------------------------------------------------------------------- the work


def survey(spec_file: str, path_option: str | None, root: str) -> Survey:
    """Load and validate a spec: its name, managed folder, repository URL and the inputs it reads."""
    from aicr_gen.gitops.records import fingerprint
    from aicr_gen.spec.cluster import managed_path
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(spec_file)
    return Survey(spec_file, cluster.metadata.name, managed_path(cluster, path_option), cluster.spec.repo.url,
                  path_option is not None, fingerprint.named(cluster, spec_file, Path(root)),
                  fingerprint.fields(cluster, spec_file, Path(root)))


def _memo(kind: str, places: tuple[str, ...], load: Callable[[], Any]) -> Any:
    key = (kind, places)
    if key not in _MEMO:
        _MEMO[key] = load()
    return _MEMO[key]


def _catalog(cluster: Any, base: Path) -> Any:
    from aicr_gen.gitops.trees.recipes import open_spec_catalog
    places = tuple(str((base / folder).resolve()) for folder in cluster.spec.catalogs)
    return _memo("catalog", places, lambda: open_spec_catalog(cluster, base))


def findings(cluster: Any, base: Path, recipe: dict[str, Any]) -> list[Any]:
    """The policy findings of a spec (the shipped policies, then spec.policies), as ``policy check`` finds them."""
    from aicr_gen.policy.check import evaluate, load_policies
    from aicr_gen.policy.shipped import shipped_root
    from aicr_gen.spec.validate import check_present
    check_present(cluster, base, "policies")
    files = [base / name for name in cluster.spec.policies]
    policies = _memo("policies", tuple(str(file.resolve()) for file in files),
                     lambda: load_policies([shipped_root()], files))
    found: list[Any] = evaluate(policies, recipe, cluster.model_dump(mode="json"))
    return found


def _render(job: Job, *, policies: bool) -> tuple[Any, Mapping[str, bytes], list[dict[str, str]]]:
    """The spec, its tree and (``policies``) its policy findings, none an error."""
    from aicr_gen.gitops.trees.recipes import resolve_spec
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(job.spec_file)
    base = Path(job.spec_file).resolve().parent
    catalog = _catalog(cluster, base)
    recipe = resolve_spec(cluster, base, catalog)
    found = policy_errors(cluster, base, recipe, job.spec_file) if policies else []
    return cluster, render_tree(cluster, base, job.path, recipe, catalog=catalog), found


def policy_errors(cluster: Any, base: Path, recipe: dict[str, Any], spec_file: str) -> list[dict[str, str]]:
    """Refuse to sync a spec its policies reject (the shipped ones and spec.policies), listing the errors; else
    its findings (warnings), as the plan lists them."""
    found = findings(cluster, base, recipe)
    errors = [f"  {f.policy} {f.path}: {f.message}" for f in found if f.severity == "error"]
    if errors:
        raise FindingsError(f"{spec_file}: {len(errors)} policy error(s); nothing was committed "
                            "(fix the spec, see 'aicr-gen policy check'):\n" + "\n".join(errors))
    return [finding.as_dict() for finding in found]


def for_sync(work: SyncJob) -> Rendered:
    """Render a spec for a commit: its policies must pass; the blobs its folder lacks at the base and the changes
    against it come back."""
    import hashlib

    from aicr_gen.edges.git import Repo
    from aicr_gen.edges.git_objects import name_in, read_blobs
    from aicr_gen.gitops.review.compare import compare
    job, old = work.job, work.old
    cluster, tree, found = _render(job, policies=True)
    files = {name: name_in(data, job.fmt) for name, data in tree.items()}
    blobs = {files[name]: data for name, data in tree.items() if old.get(name) != files[name]}
    contents = read_blobs(Repo(job.repo), old.values())
    changes = compare({name: contents[sha] for name, sha in old.items()}, tree)
    return Rendered(job.spec_file, cluster.metadata.name, job.path, files, blobs, changes, [],
                    hashlib.sha256(tree["recipe.yaml"]).hexdigest(), placed(cluster, job.path, tree), found)


def placed(cluster: Any, path: str, tree: Mapping[str, bytes]) -> list[Keyed]:
    """The Argo CD and Flux objects of the tree at ``path`` with their control planes, files as repository
    paths."""
    from aicr_gen.gitops.trees.collisions import keyed, planes_of

    name = cluster.metadata.name
    return [(plane, item._replace(file=f"{path}/{item.file}"))
            for plane, item in keyed(name, tree, planes_of({name: cluster}))]


def for_check(job: Job) -> Rendered:
    """Render a spec and compare it with the commit (or the index): the stale-file lines."""
    from aicr_gen.edges.git import Repo
    from aicr_gen.edges.git_objects import committed, indexed, name_in
    from aicr_gen.gitops.commit.sync import stale

    cluster, tree, _found = _render(job, policies=False)
    repo = Repo(job.repo)
    have = indexed(repo, job.path) if job.base == ":index" else committed(repo, job.base, job.path)
    files = {name: name_in(data, job.fmt) for name, data in tree.items()}
    return Rendered(job.spec_file, cluster.metadata.name, job.path, files, {}, None, stale(have, tree, job.path),
                    "", placed(cluster, job.path, tree), [])


def for_plan(job: Job) -> tuple[Any, list[Keyed]]:
    """Render a spec and compare it with the tree at the base commit: its ``ClusterPlan``, policy findings
    included, and the tree's Argo CD and Flux objects."""
    from aicr_gen.edges.git import Repo
    from aicr_gen.edges.git_objects import files_at
    from aicr_gen.gitops.review.plan import cluster_plan
    from aicr_gen.gitops.review.renderer import review_for
    from aicr_gen.gitops.trees.recipes import resolve_spec
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(job.spec_file)
    base = Path(job.spec_file).resolve().parent
    catalog = _catalog(cluster, base)
    recipe = resolve_spec(cluster, base, catalog)
    found = findings(cluster, base, recipe)
    tree = render_tree(cluster, base, job.path, recipe, catalog=catalog)
    old = files_at(Repo(job.repo), job.base, job.path)
    review = review_for(job.objects) if job.objects is not None else None
    return (cluster_plan(cluster.metadata.name, job.spec_file, job.path, old=old, new=tree,
                         findings=[finding.as_dict() for finding in found], objects=review),
            placed(cluster, job.path, tree))
