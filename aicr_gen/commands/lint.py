"""``aicr-gen lint SPEC...`` (the pre-commit hook): everything ``sync`` refuses about a spec, without Git.

Per spec, as ``sync`` does it: load it (layered over its fleet; schema, semantics, the files it reads:
``load_spec``), resolve its recipe, evaluate its policies, and render its whole tree (``render_tree``, which
reads its catalog layers and rules file); nothing is written. A Fleet file given alone is checked as a fleet
(schema, per-cluster fields, the paths it names); its values are checked in every spec that extends it. Across
the specs given: no two share a managed folder or cluster name, and no two trees define the same Argo CD or Flux
object in one control plane (``gitops/collisions``). Exit 2 when a file is invalid or two trees collide, 1 on a
policy error, else 0.
"""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, AicrGenError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path
    from typing import Any

    from aicr_gen.report.findings import FileResult, Problem


def arguments(parser: argparse.ArgumentParser) -> None:
    """``lint SPEC...``."""
    from aicr_gen.commands.verify import RESULTS_JSON

    parser.description = ("Check each ClusterSpec: schema and semantics, layered over its fleet, the files it reads, "
                          "its recipe, its policies and its rendered tree; everything sync refuses about a spec. A "
                          "Fleet file is checked alone (schema and the paths it names); its values are checked in "
                          "each spec that extends it.")
    parser.epilog = RESULTS_JSON
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("spec_files", nargs="+", metavar="SPEC", help="ClusterSpec or Fleet files")
    parser.add_argument("--policies", action="append", default=[], metavar="DIR",
                        help="folder of policy files (repeatable, as for policy check)")
    parser.add_argument("--format", dest="lint_format", choices=("text", "json"), default="text",
                        help="text (default) or json (the shape below)")


def lint_file(spec_path: str, folders: list[Path],
              trees: dict[str, Any] | None = None) -> tuple[FileResult, int, Any]:
    """What ``sync`` would refuse about the spec at ``spec_path``, the exit code for it, and the loaded spec
    (None when it does not load); its rendered tree is added to ``trees`` under the spec's path."""
    from pathlib import Path

    from aicr_gen.edges.inputs import read_input
    from aicr_gen.gitops.trees.recipes import resolve_spec
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.policy.check import findings_for
    from aicr_gen.report.findings import FileResult, Problem, from_error
    from aicr_gen.spec import fleet
    from aicr_gen.spec.load import spec_of
    from aicr_gen.yaml import load_bytes

    result = FileResult(spec_path)
    try:
        doc = load_bytes(read_input(spec_path, "ClusterSpec"), spec_path)
        if isinstance(doc.data, dict) and doc.data.get("kind") == fleet.KIND:
            fleet.check_fleet(doc)
            return result, OK, None
        cluster = spec_of(doc)
        base = Path(spec_path).resolve().parent
        recipe = resolve_spec(cluster, base)
        _policies, findings = findings_for(cluster, base, folders, recipe)
    except AicrGenError as err:
        result.errors += from_error(err, spec_path)
        return result, err.exit_code, None
    result.errors += _todos(spec_path)
    for finding in findings:
        file, line = cluster.origin(finding.path) or (spec_path, None)
        problem = Problem(file, line, finding.path, finding.message, finding.policy)
        (result.errors if finding.severity == "error" else result.warnings).append(problem)
    code = 1 if result.errors else OK  # policy findings and TODOs: the input itself is valid
    try:
        tree = render_tree(cluster, base, None, recipe)
        if trees is not None:
            trees[spec_path] = tree
    except AicrGenError as err:
        result.errors += from_error(err, spec_path)
        code = err.exit_code
    return result, code, cluster


def _todos(spec_path: str) -> list[Problem]:
    """Each ``TODO(aicr-gen):`` placeholder ``spec init`` left in the spec (a threshold to measure), an error at
    its line until the user resolves and deletes it."""
    from aicr_gen.commands.spec import TODO
    from aicr_gen.report.findings import Problem

    try:
        with open(spec_path, encoding="utf-8", errors="replace") as handle:  # noqa: PTH123 - a plain text read
            lines = handle.read().splitlines()
    except OSError:
        return []
    return [Problem(spec_path, number, None, f"{line.split(TODO, 1)[1].strip().rstrip('.')}; a TODO spec init "
                                             "left: do it, then delete the comment", "todo")
            for number, line in enumerate(lines, 1) if TODO in line]


def _collisions(loaded: dict[str, Any], trees: dict[str, Any], by_file: dict[str, FileResult]) -> int:
    """Argo CD and Flux objects two specs' trees would define alike in one control plane (``gitops/collisions``),
    each reported at the later spec, naming both clusters: exit 2, as sync refuses them."""
    from aicr_gen.errors import INVALID
    from aicr_gen.gitops.trees.collisions import collisions, planes_of
    from aicr_gen.report.findings import Problem

    names = {path: cluster.metadata.name for path, cluster in loaded.items() if path in trees}
    clusters = {names[path]: loaded[path] for path in names}
    if len(set(names.values())) != len(names):
        return OK  # two specs of one cluster name: reported as a clash already
    found = collisions({names[path]: trees[path] for path in names}, planes_of(clusters))
    files = {name: path for path, name in names.items()}
    for collision in found:
        second = files[collision.second.cluster]
        by_file[second].errors.append(Problem(second, None, None, collision.message()))
    return INVALID if found else OK


def _text(results: list[FileResult]) -> None:
    """Every problem as one ``file:line:col: severity [policy] path: message`` line on stdout, errors first,
    then a count: one format and one stream, whatever found it (schema, semantics, policy, rendering)."""
    for result in results:
        for severity, problems in (("error", result.errors), ("warning", result.warnings)):
            for problem in problems:
                print(problem.report(severity))
    errors, warnings = (sum(len(getattr(result, kind)) for result in results) for kind in ("errors", "warnings"))
    print(f"{errors} error(s), {warnings} warning(s) in {len(results)} file(s)")


def run(args: argparse.Namespace) -> int:
    """Check every spec, report each one's problems, and return the worst exit code."""
    from pathlib import Path

    from aicr_gen.report.findings import Problem, to_json
    from aicr_gen.spec.patterns import clashes

    spec_paths, folders, output_format = args.spec_files, args.policies, args.lint_format

    worst = OK
    results = []
    loaded = []
    trees: dict[str, Any] = {}
    for path in spec_paths:
        result, code, cluster = lint_file(path, [Path(folder) for folder in folders], trees)
        results.append(result)
        loaded += [(path, cluster)] if cluster is not None else []
        worst = max(worst, code)
    by_file = {result.file: result for result in results}
    for clash in clashes(loaded):  # sync --check and plan refuse them together: so does the hook
        cluster = dict(loaded)[clash.second]
        by_file[clash.second].errors.append(Problem(clash.second, cluster.line_of(clash.field), clash.field,
                                                    clash.message()))
        worst = max(worst, 1)
    worst = max(worst, _collisions(dict(loaded), trees, by_file))
    if output_format == "text":
        _text(results)
    if output_format == "json":
        sys.stdout.write(to_json(results))
    return worst
