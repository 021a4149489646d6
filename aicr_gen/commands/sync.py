"""``aicr-gen sync``: render ClusterSpecs' trees and commit them to a Git repository as one commit (or
``--check`` them, or ``--repair`` a sync that was interrupted); the work is ``gitops/sync_specs.py`` and
``gitops/check_specs.py``, what it prints is here."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from aicr_gen.edges.git import Repo
    from aicr_gen.gitops.sync_specs import Outcome

LISTED = 20
"""Stale trees ``--check`` names in its last line (all are listed above it, with their files)."""


def arguments(parser: argparse.ArgumentParser) -> None:
    """``sync SPEC...``: the repository, the folder, the branch and message, ``--check``, ``--repair``."""
    parser.add_argument("spec_files", metavar="SPEC", nargs="*", help="ClusterSpec files or glob patterns (one "
                        "commit for all; nothing is written unless every spec renders)")
    parser.add_argument("--repo", metavar="DIR", help="work tree of the Git repository (default: the one the current "
                        "folder is in)")
    parser.add_argument("--path", metavar="P", help="managed folder in the repository (default: spec.repo.path)")
    parser.add_argument("--branch", metavar="B", help="commit on branch B (created or updated from HEAD) without "
                        "touching the checkout, e.g. for a pull request")
    parser.add_argument("--message", metavar="M", help="commit message (the trailers are added)")
    parser.add_argument("--check", action="store_true", help="exit 1, listing the stale files, when HEAD differs")
    parser.add_argument("--staged", action="store_true", help="with --check: compare with the index (what is about "
                        "to be committed, as in a pre-commit hook) instead of HEAD")
    parser.add_argument("--force", action="store_true", help="overwrite uncommitted changes under the path (each "
                        "file it replaces is listed on stderr)")
    parser.add_argument("--push", action="store_true", help="push the branch to origin after committing")
    parser.add_argument("--repair", action="store_true", help="finish a sync that was interrupted (killed, out of "
                        "space); without SPEC only that (every sync does it first)")
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="render in N processes (default: one per CPU; "
                        "the commit is the same whatever N)")


def run(args: argparse.Namespace) -> int:
    """Sync the specs as one commit; ``--check`` compares their trees with HEAD (or the index); ``--repair``
    without specs only finishes an interrupted sync (every sync does that first)."""
    from aicr_gen.gitops import sync_specs
    from aicr_gen.gitops.commit.advance import finish_interrupted
    from aicr_gen.gitops.commit.sync import open_repo, require_identity
    from aicr_gen.spec.patterns import expand

    if args.repair and args.check:
        raise InvalidInputError("--repair finishes an interrupted sync and --check writes nothing; give one of them")
    if not args.spec_files and not args.repair:
        raise InvalidInputError("give at least one SPEC (or --repair, to finish an interrupted sync)")
    if args.check and args.spec_files and _none_yet(args.spec_files):
        sys.stdout.write(f"aicr-gen: no ClusterSpec matches {' '.join(args.spec_files)} yet; nothing to check\n")
        return OK
    specs = expand(args.spec_files)
    if args.staged and not args.check:
        raise InvalidInputError("--staged compares with the index and needs --check; add --check")
    if len(specs) > 1 and args.path:
        raise InvalidInputError("--path names the folder of one spec; give one SPEC with --path")
    if args.jobs is not None and args.jobs < 1:
        raise InvalidInputError(f"--jobs {args.jobs}: give a number of processes of 1 or more")
    repo = open_repo(args.repo)
    if args.check:
        return _check(repo, specs, args)
    if not specs:
        sys.stdout.write(f"aicr-gen: {finish_interrupted(repo) or 'no interrupted sync to finish'}\n")
        return OK
    require_identity(repo)  # before anything is rendered: git can commit here, and an interrupted sync is finished
    finished = finish_interrupted(repo)
    if finished:
        sys.stdout.write(f"aicr-gen: {finished}\n")
    options = sync_specs.Options(path=args.path, branch=args.branch, title=args.message, force=args.force,
                                 push=args.push, jobs=args.jobs)
    _report(sync_specs.commit_specs(repo, specs, options))
    return OK


def _none_yet(patterns: list[str]) -> bool:
    """Whether every SPEC is a glob pattern and none matches a file: a repository with the pre-commit hook (which
    runs on every commit) but no ClusterSpec yet has nothing stale. ``sync`` itself still refuses such patterns,
    and a SPEC named outright must exist."""
    import glob

    return all(glob.has_magic(pattern) and not glob.glob(pattern) for pattern in patterns)  # noqa: PTH207


def _check(repo: Repo, specs: list[str], args: argparse.Namespace) -> int:
    """Exit 0, or 1 listing the stale clusters and their files and the specs a changed policy refuses; with several
    specs the up-to-date ones are only counted ("998 of 1000 tree(s) up to date with HEAD; stale: ...")."""
    from aicr_gen.errors import FindingsError
    from aicr_gen.gitops.check_specs import check

    found = check(repo, specs, args.path, staged=args.staged, jobs=args.jobs)
    problems: list[str] = []
    for tree in found.trees:
        if tree.stale:
            problems.append(f"{tree.path} is not up to date with {tree.spec} in {found.against}: stale because "
                            f"{tree.why}; run 'aicr-gen sync {tree.spec} --repo {repo.working_tree_dir}':")
            problems += [f"  {line}" for line in tree.stale]
        elif len(specs) == 1 and not found.refused:
            sys.stdout.write(f"aicr-gen: {tree.path} is up to date with {tree.spec} in {found.against}\n")
    for lines in found.refused.values():
        problems += lines
    stale_paths = [tree.path for tree in found.trees if tree.stale]
    count = f"{len(specs) - len(stale_paths)} of {len(specs)} tree(s) up to date with {found.against}"
    if problems:
        stale_list = f"; stale: {_listed(stale_paths)}" if stale_paths else ""
        refused_list = f"; refused by a changed policy: {_listed(list(found.refused))}" if found.refused else ""
        raise FindingsError("\n".join([*problems, f"{count}{stale_list}{refused_list}"]))
    sys.stdout.write(f"aicr-gen: {count}\n")
    return OK


def _listed(paths: Sequence[str]) -> str:
    shown = ", ".join(paths[:LISTED])
    return shown if len(paths) <= LISTED else f"{shown} and {len(paths) - LISTED} more"


def _report(outcome: Outcome) -> None:
    """One line: the commit made (or that there was nothing to commit), with counts."""
    result = outcome.result
    if len(outcome.paths) == 1:
        path = outcome.paths[0]
        if result.commit is None:
            sys.stdout.write(f"aicr-gen: {path} is up to date on {result.ref}; nothing to commit\n")
        else:
            tree_files = [name for name in result.changed if name.startswith(f"{path}/")]
            sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref} ({len(tree_files)} files "
                             f"changed under {path}{' and its spec' if outcome.inputs else ''})\n")
        return
    given = len(outcome.paths)
    counts = f"{given} spec(s): {outcome.rendered} rendered, {given - outcome.rendered} unchanged since their record"
    if result.commit is None:
        sys.stdout.write(f"aicr-gen: every tree is up to date on {result.ref}; nothing to commit ({counts})\n")
    else:
        sys.stdout.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref}: {outcome.changed} cluster(s) "
                         f"changed, {len(result.changed)} files ({counts})\n")
