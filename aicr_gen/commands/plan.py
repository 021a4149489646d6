"""``aicr-gen plan``: what merging would change in each cluster; every ClusterSpec rendered as ``sync`` would and
compared with the tree committed at ``--base``. Reads only: no ref, index or work-tree file changes."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.edges.git import Repo


def arguments(parser: argparse.ArgumentParser) -> None:
    """``plan SPEC...``: the repository, the base, the format."""
    parser.add_argument("spec_files", metavar="SPEC", nargs="+", help="ClusterSpec files or glob patterns")
    parser.add_argument("--repo", metavar="DIR", help="work tree of the Git repository (default: the one the current "
                        "folder is in)")
    parser.add_argument("--base", default="HEAD", metavar="REF",
                        help="commit to compare with, e.g. origin/main or a pull request's base (default: HEAD)")
    parser.add_argument("--format", dest="plan_format", choices=("markdown", "text", "json"), default="markdown",
                        help="markdown (one GitHub comment, under 65,000 characters), text (as sync's commit message "
                             "words it) or json (aicr-gen schema plan); default: markdown")
    parser.add_argument("-o", "--output", metavar="FILE", help="write the plan to FILE (atomically; default stdout)")
    parser.add_argument("--fail-on", choices=("policy",), help="policy: exit 1 when a spec has a policy error")
    parser.add_argument("--jobs", "-j", type=int, metavar="N", help="render in N processes (default: one per CPU)")


def base_commit(repo: Repo, base: str) -> str:
    """The commit ``base`` names in ``repo``; anything else is an input error."""
    sha = repo.run("rev-parse", "--verify", "-q", f"{base}^{{commit}}", check=False)
    if not sha:
        raise InvalidInputError(f"--base {base}: not a commit in {repo.working_tree_dir}; give a branch, tag or "
                                "commit there (e.g. origin/main; in a pull request, its base commit)")
    return sha


def run(args: argparse.Namespace) -> int:
    """Write the plan (Markdown or JSON); exit 1 with ``--fail-on policy`` when a spec has a policy error."""
    from aicr_gen.edges.output import write_text
    from aicr_gen.gitops.commit.sync import open_repo
    from aicr_gen.gitops.plan_trees import cluster_plans
    from aicr_gen.gitops.review.plan import plan
    from aicr_gen.report.plan import as_json, as_text, markdown
    from aicr_gen.spec.patterns import expand

    specs = expand(args.spec_files)
    if args.jobs is not None and args.jobs < 1:
        raise InvalidInputError(f"--jobs {args.jobs}: give a number of processes of 1 or more")
    repo = open_repo(args.repo)
    commit = base_commit(repo, args.base)
    result = plan(args.base, commit, cluster_plans(repo, specs, commit, args.jobs))
    render = {"json": as_json, "text": as_text}.get(args.plan_format, markdown)
    write_text(args.output, render(result))
    if args.fail_on == "policy" and result.policyErrors:
        failing = [cluster.spec for cluster in result.clusters
                   if any(item.severity == "error" for item in cluster.policies)]
        sys.stderr.write(f"aicr-gen: plan: {result.policyErrors} policy error(s) in {', '.join(failing)} "
                         "(listed in the plan; see 'aicr-gen policy check SPEC')\n")
        return 1
    return OK

