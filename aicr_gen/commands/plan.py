"""``aicr-gen plan``: what merging would change in each cluster; every ClusterSpec rendered as ``sync`` would and
compared with the tree committed at ``--base``. Reads only: no ref, index or work-tree file changes."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from aicr_gen.errors import OK, InvalidInputError

if TYPE_CHECKING:
    from aicr_gen.gitops.git import Repo


def base_commit(repo: Repo, base: str) -> str:
    """The commit ``base`` names in ``repo``; anything else is an input error."""
    sha = repo.run("rev-parse", "--verify", "-q", f"{base}^{{commit}}", check=False)
    if not sha:
        raise InvalidInputError(f"--base {base}: not a commit in {repo.working_tree_dir}; give a branch, tag or "
                                "commit there (e.g. origin/main; in a pull request, its base commit)")
    return sha


def run(args: argparse.Namespace) -> int:
    """Write the plan (Markdown or JSON); exit 1 with ``--fail-on policy`` when a spec has a policy error."""
    from aicr_gen.gitops.objects import files_at
    from aicr_gen.gitops.plan import cluster_plan, plan
    from aicr_gen.gitops.plan_format import as_json, markdown
    from aicr_gen.gitops.render_tree import managed_path, render_tree
    from aicr_gen.gitops.spec import load_spec, resolve_spec
    from aicr_gen.gitops.specs import distinct, expand
    from aicr_gen.gitops.sync import open_repo
    from aicr_gen.output import write_text
    from aicr_gen.policy.check import findings_for

    specs = expand(args.spec_files)
    repo = open_repo(args.repo)
    commit = base_commit(repo, args.base)
    loaded = [(spec_file, load_spec(spec_file)) for spec_file in specs]
    distinct([(spec_file, cluster.metadata.name, managed_path(cluster)) for spec_file, cluster in loaded])
    clusters = []
    for spec_file, cluster in loaded:
        folder = Path(spec_file).resolve().parent
        path = managed_path(cluster)
        recipe = resolve_spec(cluster, folder)
        _policies, findings = findings_for(cluster, folder, [], recipe)
        tree = render_tree(cluster, folder, path, recipe)
        clusters.append(cluster_plan(cluster.metadata.name, spec_file, path, old=files_at(repo, commit, path),
                                     new=tree, findings=[finding.as_dict() for finding in findings]))
    result = plan(args.base, commit, clusters)
    write_text(args.output, as_json(result) if args.plan_format == "json" else markdown(result))
    if args.fail_on == "policy" and result.policyErrors:
        failing = [cluster.spec for cluster in result.clusters
                   if any(item.severity == "error" for item in cluster.policies)]
        sys.stderr.write(f"aicr-gen: plan: {result.policyErrors} policy error(s) in {', '.join(failing)} "
                         "(listed in the plan; see 'aicr-gen policy check SPEC')\n")
        return 1
    return OK
