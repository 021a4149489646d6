"""``aicr-gen plan``: what merging would change in each cluster; every ClusterSpec rendered as ``sync`` would and
compared with the tree committed at ``--base``. Reads only: no ref, index or work-tree file changes."""

from __future__ import annotations

import argparse
import re
import sys

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.edges.git import Repo
    from aicr_gen.gitops.review.plan import Plan
    from aicr_gen.gitops.review.renderer import RenderOptions


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
    parser.add_argument("--fail-on", action="append", choices=("policy", "blocked"), default=[],
                        help="policy: exit 1 when a spec has a policy error; blocked: exit 1 when an upgrade is "
                             "blocked and no --allow-blocked acknowledges it (repeat for both)")
    parser.add_argument("--allow-blocked", action="append", default=[], metavar="COMPONENT",
                        help="acknowledge a blocked upgrade of COMPONENT ('*': every one), e.g. from the pull "
                             "request's description; repeatable")
    objects = parser.add_argument_group("rendered objects")
    objects.add_argument("--charts", metavar="DIR", help="vendored charts (<chart>-<version>.tgz) to render before "
                         "the cache or the network")
    objects.add_argument("--chart-cache", metavar="DIR", help="where pulled charts and renders are kept "
                         "(default: <aicr-gen cache>/charts)")
    objects.add_argument("--offline", action="store_true", help="never pull a chart: render only what --charts or "
                         "the cache hold (the others are listed as not rendered)")
    objects.add_argument("--no-render", action="store_true", help="render no chart (manifests and plain chart "
                         "folders are still compared)")
    objects.add_argument("--kube-version", metavar="X.Y.Z", help="Kubernetes version charts render for (default: "
                         "the lowest the recipe's K8s.server.version constraint allows)")
    objects.add_argument("--api-versions", action="append", default=[], metavar="GROUP/VERSION[/KIND]",
                         help="an API the cluster serves, for charts that render objects only then (e.g. "
                              "monitoring.coreos.com/v1 for ServiceMonitors); repeatable")
    parser.add_argument("--full", metavar="FILE", help="also write the whole Markdown plan, every object diff, "
                        "to FILE (for the job summary or an artifact; the comment points to it)")
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
    from functools import partial

    from aicr_gen.edges.output import write_text
    from aicr_gen.gitops.commit.sync import open_repo
    from aicr_gen.gitops.plan_trees import cluster_plans
    from aicr_gen.gitops.review.plan import plan
    from aicr_gen.report.plan import as_json, as_text, markdown
    from aicr_gen.spec.patterns import expand

    options = render_options(args)
    specs = expand(args.spec_files)
    if args.jobs is not None and args.jobs < 1:
        raise InvalidInputError(f"--jobs {args.jobs}: give a number of processes of 1 or more")
    repo = open_repo(args.repo)
    commit = base_commit(repo, args.base)
    result = plan(args.base, commit, cluster_plans(repo, specs, commit, args.jobs, options),
                  allow_blocked=args.allow_blocked)
    if args.full:
        write_text(args.full, markdown(result, None))
    render = {"json": as_json, "text": as_text}.get(args.plan_format, partial(markdown, full=args.full))
    write_text(args.output, render(result))
    return _failed(args, result)


def render_options(args: argparse.Namespace) -> RenderOptions:
    """The rendered-object options, checked: a --charts folder that is no folder, a --kube-version that is no
    version are input errors."""
    from pathlib import Path

    from aicr_gen.gitops.review.renderer import RenderOptions

    if args.charts and not Path(args.charts).is_dir():
        raise InvalidInputError(f"--charts {args.charts}: not a folder; give the folder of vendored chart packages "
                                "(<chart>-<version>.tgz)")
    if args.kube_version and not re.fullmatch(r"v?\d+\.\d+\.\d+", args.kube_version):
        raise InvalidInputError(f"--kube-version {args.kube_version}: give a version as X.Y.Z, e.g. 1.34.0")
    for version in args.api_versions:
        if not re.fullmatch(r"[a-z0-9.-]+/v[0-9a-z]+(/[A-Za-z0-9]+)?|v1(/[A-Za-z0-9]+)?", version):
            raise InvalidInputError(f"--api-versions {version}: give GROUP/VERSION or GROUP/VERSION/KIND, e.g. "
                                    "monitoring.coreos.com/v1")
    return RenderOptions(charts_dir=str(Path(args.charts).resolve()) if args.charts else None,
                         cache_dir=str(Path(args.chart_cache).resolve()) if args.chart_cache else None,
                         offline=args.offline, kube_version=(args.kube_version or "").removeprefix("v"),
                         render=not args.no_render, api_versions=tuple(sorted(set(args.api_versions))))


def _failed(args: argparse.Namespace, result: Plan) -> int:
    """Exit 1 for what --fail-on names, saying why on stderr."""
    code = OK
    if "policy" in args.fail_on and result.policyErrors:
        failing = [cluster.spec for cluster in result.clusters
                   if any(item.severity == "error" for item in cluster.policies)]
        sys.stderr.write(f"aicr-gen: plan: {result.policyErrors} policy error(s) in {', '.join(failing)} "
                         "(listed in the plan; see 'aicr-gen policy check SPEC')\n")
        code = 1
    if "blocked" in args.fail_on and result.unacknowledged:
        blocked = [f"{item.component} in {cluster.name}" for cluster in result.clusters for item in cluster.upgrades
                   if item.verdict == "blocked" and not item.acknowledged]
        sys.stderr.write(f"aicr-gen: plan: {result.unacknowledged} blocked upgrade(s): {', '.join(blocked[:10])}"
                         f"{' ...' if len(blocked) > 10 else ''} (reasons in the plan; acknowledge one with "
                         "--allow-blocked COMPONENT once its steps are done)\n")
        code = 1
    return code
