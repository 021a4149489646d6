"""``aicr-gen plan``: what merging would change in each cluster; every ClusterSpec rendered as ``sync`` would and
compared with the tree committed at ``--base``. Reads only: no ref, index or work-tree file changes."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.edges.git import Repo
    from aicr_gen.gitops.review.plan import ClusterPlan


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


def cluster_plans(repo: Repo, specs: list[str], commit: str, jobs: int | None) -> list[ClusterPlan]:
    """Every spec's plan against ``commit``, in the order given: a spec whose inputs record at the commit says
    its tree and policies are what rendering would give is unchanged and not rendered (its findings are the
    record's), the others are rendered. Exit 2 when two trees would collide (``sync_specs.refuse_collisions``)."""
    from functools import partial
    from pathlib import Path

    from aicr_gen.gitops.committed import all_records, folder_files, refuse_collisions, unchanged
    from aicr_gen.gitops.records import fingerprint
    from aicr_gen.gitops.render_many import Job, for_plan, run_all, survey, workers_for
    from aicr_gen.gitops.review.plan import unchanged_plan
    from aicr_gen.spec.patterns import distinct

    workers = workers_for(len(specs), jobs)
    root = Path(repo.working_tree_dir).resolve()
    surveys = run_all(partial(survey, path_option=None, root=str(root)), specs, workers, str)
    distinct([(item.spec_file, item.name, item.path) for item in surveys])
    records = all_records(repo, commit)
    old = folder_files(repo, commit, [item.path for item in surveys])
    digests = fingerprint.Digests()
    kept = {item.path: parsed for item in surveys
            if (parsed := unchanged(item, digests.inputs(item.places), records.get(item.path), old[item.path],
                                    root)) is not None}
    todo = [item for item in surveys if item.path not in kept]
    jobs_ = [Job(item.spec_file, item.path, False, repo.working_tree_dir, "", commit) for item in todo]
    rendered = dict(zip([item.path for item in todo], run_all(for_plan, jobs_, workers_for(len(jobs_), jobs),
                                                              lambda job: job.spec_file), strict=True))
    names = {item.path: fingerprint.name_of(Path(item.spec_file), root) for item in surveys}
    refuse_collisions(repo, commit, {**{path: (names[path], parsed.keyed()) for path, parsed in kept.items()},
                                     **{path: (names[path], found) for path, (_plan, found) in rendered.items()}},
                      records)
    return [rendered[item.path][0] if item.path in rendered else
            unchanged_plan(item.name, item.spec_file, item.path, kept[item.path].findings) for item in surveys]
