"""``aicr-gen sync``: render ClusterSpecs' trees and commit them to a Git repository as one commit (or
``--check`` them, or ``--repair`` a sync that was interrupted)."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, InvalidInputError


def run(args: argparse.Namespace) -> int:
    """Sync the specs as one commit; ``--check`` compares their trees with HEAD (or the index); ``--repair``
    without specs only finishes an interrupted sync (every sync does that first)."""
    from aicr_gen.gitops import check_specs, sync_specs
    from aicr_gen.gitops.advance import finish_interrupted
    from aicr_gen.gitops.sync import open_repo
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
        return check_specs.run(repo, specs, args.path, staged=args.staged, jobs=args.jobs)
    if not specs:
        sys.stdout.write(f"aicr-gen: {finish_interrupted(repo) or 'no interrupted sync to finish'}\n")
        return OK
    options = sync_specs.Options(path=args.path, branch=args.branch, title=args.message, force=args.force,
                                 push=args.push, jobs=args.jobs)
    return sync_specs.run(repo, specs, options)


def _none_yet(patterns: list[str]) -> bool:
    """Whether every SPEC is a glob pattern and none matches a file: a repository with the pre-commit hook (which
    runs on every commit) but no ClusterSpec yet has nothing stale. ``sync`` itself still refuses such patterns,
    and a SPEC named outright must exist."""
    import glob

    return all(glob.has_magic(pattern) and not glob.glob(pattern) for pattern in patterns)  # noqa: PTH207
