"""``aicr-gen sync``: render ClusterSpecs' trees and commit them to a Git repository as one commit (or
``--check`` them)."""

from __future__ import annotations

import argparse

from aicr_gen.errors import InvalidInputError


def run(args: argparse.Namespace) -> int:
    """Sync the specs as one commit; ``--check`` compares their trees with HEAD (or the index)."""
    from aicr_gen.gitops import check_specs, sync_specs
    from aicr_gen.gitops.specs import expand
    from aicr_gen.gitops.sync import open_repo

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
    options = sync_specs.Options(path=args.path, branch=args.branch, title=args.message, force=args.force,
                                 push=args.push, jobs=args.jobs)
    return sync_specs.run(repo, specs, options)
