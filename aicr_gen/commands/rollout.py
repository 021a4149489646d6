"""``aicr-gen rollout status|advance|rollback|prune FLEET [SPEC...]``: a fleet's rollout in waves, gated on what
each cluster proves (``aicr_gen/rollout/``), and the retention of the Certifications that prove it.

Exit codes: 0 ok (status: every gate passed or is waiting; advance: advanced, waiting or complete); 1 a gate
failed (status lists it; advance halts on it); 2 invalid input (nothing committed; nothing written unless the
evidence was read and only the commit was refused, e.g. on a detached HEAD); 3 evidence could not be read (the
matrix is still written; 3 wins over 1, as ``diff --fleet``'s).
"""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK, FindingsError, InvalidInputError, UnreachableError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from datetime import datetime
    from pathlib import Path
    from typing import Any

    from aicr_gen.edges.git import Repo
    from aicr_gen.rollout.read import Member

EVIDENCE = """\
evidence: from --evidence DIR (DIR/<cluster>/*.yaml: kubectl get -o yaml output of Certifications, NVCRE
Workflows and BandwidthMeasurements, the deployer's Application or Kustomization, Nodes, NVSentinel's
circuit-breaker ConfigMap, and an AICR Snapshot), else live through kubeconfig contexts: --context
CLUSTER=CTX, else spec.snapshot.context, else the context named like the cluster (never the current one).
gates: certified (the newest finished Certification stamped with the tree's stack digest passed), healthy
(Argo CD Synced and Healthy / Flux Ready at a revision with this tree), no-drift (the snapshot matches the
recipe), no-quarantine (no GPU node quarantined by NVSentinel, breaker not TRIPPED); a wave that passed soaks
for its soak before the next wave gets its baseline.
exit codes: 0 ok, 1 a gate failed, 2 invalid input (nothing written), 3 evidence unreadable (3 wins over 1).
"""


def _common(parser: argparse.ArgumentParser, *, evidence: bool = False, clusters: bool = False) -> None:
    """The arguments every subcommand takes; ``clusters``: it reads clusters; ``evidence``: it judges the gates."""
    parser.epilog = EVIDENCE
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("fleet", metavar="FLEET", help="the Fleet file with rollout.waves")
    parser.add_argument("spec_files", metavar="SPEC", nargs="*", help="the fleet's ClusterSpec files or glob "
                        "patterns (default: every spec whose inputs record at HEAD names the fleet)")
    parser.add_argument("--repo", metavar="DIR", help="the Git work tree of the trees (default: the fleet file's)")
    if clusters or evidence:
        parser.add_argument("--kubeconfig", metavar="FILE", help="kubeconfig of the clusters' contexts")
        parser.add_argument("--context", action="append", default=[], metavar="CLUSTER=CTX",
                            help="kubeconfig context of a cluster (repeatable)")
    if evidence:
        parser.add_argument("--evidence", metavar="DIR", help="read each cluster's evidence from DIR/<cluster>/ "
                            "instead of the cluster")
        parser.add_argument("--argocd-context", metavar="CTX", help="kubeconfig context of the shared Argo CD that "
                            "holds the clusters' Applications (default: each cluster's own context)")
        parser.add_argument("--now", metavar="TIME", help="judge soaks at this RFC 3339 time instead of the "
                            "clock (to replay a decision)")
        parser.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                            help="output format (default: table)")
        parser.add_argument("--output", "-o", metavar="FILE", help="write the status to FILE (default: stdout)")
        parser.add_argument("--markdown", metavar="FILE", help="also write the status as Markdown to FILE (a job "
                            "summary: at most 1 MiB)")
        parser.add_argument("--body", metavar="FILE", help="also write the status as Markdown within a pull "
                            "request body's 65,536 characters to FILE (passing clusters left out first)")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``rollout status|advance|rollback``."""
    subcommands = parser.add_subparsers(dest="rollout_command", metavar="COMMAND", required=True)
    status = subcommands.add_parser(
        "status", help="every wave and cluster with the verdict of each gate, and the next step",
        description="A wave x cluster matrix of gate verdicts with the reason for each, and the next step "
                    "(advance, wait, halt or complete).")
    _common(status, evidence=True)
    advance = subcommands.add_parser(
        "advance", help="when the waves at the new baseline passed and soaked, commit the next wave's move to it",
        description="Decide as status does; on advance, set the next wave's baseline to the one before it in the "
                    "fleet file and sync the fleet's trees, as one commit whose message carries the evidence. "
                    "Otherwise write nothing.")
    _common(advance, evidence=True)
    advance.add_argument("--dry-run", action="store_true", help="decide and print, commit nothing")
    advance.add_argument("--push", action="store_true", help="push the commit to its upstream")
    rollback = subcommands.add_parser(
        "rollback", help="return a wave to its baseline before its last change, as one commit",
        description="Set the wave's baseline back to what it was before the newest commit of the fleet file "
                    "that changed it, and sync the fleet's trees, as one commit.")
    _common(rollback)
    rollback.add_argument("--wave", required=True, metavar="NAME", help="the wave to roll back")
    rollback.add_argument("--push", action="store_true", help="push the commit to its upstream")
    prune = subcommands.add_parser(
        "prune", help="delete the Certifications the fleet's jobs made beyond the fleet's rollout.retention",
        description="Per cluster (through its kubeconfig context), keep the newest rollout.retention.keep finished "
                    "Certifications of each job and pool, the running ones, and the newest result and pass of the "
                    "stack its tree runs; delete the rest of those our jobs made.")
    _common(prune, clusters=True)
    prune.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    prune.add_argument("--format", choices=("table", "json"), default="table", help="output format (default: table)")
    prune.add_argument("--output", "-o", metavar="FILE", help="write the report to FILE (default: stdout)")


def _now(text: str | None) -> datetime:
    from datetime import UTC, datetime

    from aicr_gen.rollout.gates import when

    if text is None:
        return datetime.now(UTC)
    found = when(text)
    if found is None or found.tzinfo is None:
        raise InvalidInputError(f"--now {text!r}: give an RFC 3339 time with its zone, e.g. 2026-12-01T10:00:00Z")
    return found


def _fleet(args: argparse.Namespace) -> tuple[Path, Any, Repo, list[Member]]:
    from pathlib import Path

    from aicr_gen.gitops.commit.sync import open_repo
    from aicr_gen.rollout.read import members
    from aicr_gen.spec.fleet import load_fleet, waves_of
    from aicr_gen.spec.patterns import expand

    fleet_file = Path(args.fleet)
    _, doc = load_fleet(fleet_file)
    if not waves_of(doc):
        raise InvalidInputError(f"{fleet_file}: has no rollout.waves; add them (docs/fleets.md: Rollout waves)")
    repo = open_repo(args.repo if args.repo is not None else str(fleet_file.resolve().parent))
    return fleet_file, doc, repo, members(repo, fleet_file, expand(args.spec_files) if args.spec_files else [])


def _status(args: argparse.Namespace) -> tuple[Path, Any, Repo, list[Member], dict[str, Any]]:
    from pathlib import Path

    from aicr_gen.cel.durations import seconds
    from aicr_gen.edges.output import write_text
    from aicr_gen.gitops.trees.fleet_sources import pairs
    from aicr_gen.report.rollout import BODY_LIMIT, SUMMARY_LIMIT, markdown, render
    from aicr_gen.rollout import gates
    from aicr_gen.rollout.read import expectations, observe
    from aicr_gen.spec.fleet import waves_of

    now = _now(args.now)
    contexts = pairs(args.context, "--context")
    fleet_file, doc, repo, found = _fleet(args)
    names = {member.cluster.metadata.name for member in found}
    for name in sorted(contexts.keys() - names):
        raise InvalidInputError(f"--context {name}=...: no cluster of the fleet is named {name!r}")
    folder = Path(args.evidence) if args.evidence else None
    if folder is not None and not folder.is_dir():
        raise InvalidInputError(f"--evidence {args.evidence}: no such folder; give the folder holding <cluster>/ "
                                "folders of exported evidence")
    expected, recipes = expectations(repo, found)
    observed = observe(repo, found, expected, recipes, folder=folder, kubeconfig=args.kubeconfig, contexts=contexts,
                       argocd_context=args.argocd_context)
    document = gates.status(str(args.fleet), waves_of(doc), list(zip(expected, observed, strict=True)), now,
                            lambda wave: seconds(str(wave.get("soak", "0s"))) or 0.0,
                            name=str(doc.data["metadata"]["name"]))
    write_text(args.output, render(document, args.format))
    for target, limit in ((args.markdown, SUMMARY_LIMIT), (args.body, BODY_LIMIT)):
        if target:
            write_text(target, markdown(document, limit))
    return fleet_file, doc, repo, found, document


def _verdict(document: dict[str, Any], *, at_target_only: bool) -> None:
    """Exit 3 when evidence could not be read, 1 when a gate failed (of the waves at the target only, for
    advance)."""
    from aicr_gen.rollout.gates import FAIL, UNKNOWN

    rows = [item for wave in document["waves"] if wave["atTarget"] or not at_target_only for item in wave["clusters"]]
    unknown = [item["name"] for item in rows if item["status"] == UNKNOWN]
    failed = [item["name"] for item in rows if item["status"] == FAIL]
    if unknown:
        raise UnreachableError(f"the evidence of {len(unknown)} cluster(s) could not be read ({', '.join(unknown[:10])}"
                               f"{' ...' if len(unknown) > 10 else ''}); their rows say why")
    if failed:
        raise FindingsError(f"{len(failed)} cluster(s) failed a gate ({', '.join(failed[:10])}"
                            f"{' ...' if len(failed) > 10 else ''}); their rows say why")


def run(args: argparse.Namespace) -> int:
    import sys

    from aicr_gen.report.rollout import next_line

    if args.rollout_command == "rollback":
        return _rollback(args)
    if args.rollout_command == "prune":
        return _prune(args)
    fleet_file, doc, repo, found, document = _status(args)
    if args.rollout_command == "status":
        _verdict(document, at_target_only=False)
        return OK
    step = document["next"]
    if step["action"] != "advance":
        if step["action"] == "halt":
            _verdict(document, at_target_only=True)
        sys.stderr.write(f"aicr-gen: {next_line(document)}; nothing committed\n")
        return OK
    from aicr_gen.rollout.promote import advance_move
    from aicr_gen.spec.fleet import waves_of

    move = advance_move(str(args.fleet), str(doc.data["metadata"]["name"]), waves_of(doc), document)
    if args.dry_run:
        sys.stderr.write(f"aicr-gen: would {next_line(document)} (--dry-run: nothing committed)\n")
        return OK
    _commit(repo, fleet_file, found, move, push=args.push)
    return OK


def _rollback(args: argparse.Namespace) -> int:
    from aicr_gen.rollout.promote import rollback_move
    from aicr_gen.spec.fleet import waves_of

    fleet_file, doc, repo, found = _fleet(args)
    move = rollback_move(repo, fleet_file, str(doc.data["metadata"]["name"]), waves_of(doc), args.wave)
    _commit(repo, fleet_file, found, move, push=args.push)
    return OK


def _prune(args: argparse.Namespace) -> int:
    from aicr_gen.edges.output import write_text
    from aicr_gen.gitops.trees.fleet_sources import pairs
    from aicr_gen.report.rollout import pruned
    from aicr_gen.rollout.prune import prune_fleet
    from aicr_gen.rollout.read import expectations

    contexts = pairs(args.context, "--context")
    _, doc, repo, found = _fleet(args)
    expected, recipes = expectations(repo, found)
    keep = int(((doc.data.get("rollout") or {}).get("retention") or {}).get("keep", 5))
    rows = prune_fleet(found, expected, recipes, keep=keep, kubeconfig=args.kubeconfig, contexts=contexts,
                       dry_run=args.dry_run)
    write_text(args.output, pruned(rows, args.format, dry_run=args.dry_run))
    unreachable = [row.cluster for row in rows if row.plan is None]
    if unreachable:
        raise UnreachableError(f"{len(unreachable)} cluster(s) could not be pruned ({', '.join(unreachable[:10])}"
                               f"{' ...' if len(unreachable) > 10 else ''}); their rows say why")
    return OK


def _commit(repo: Repo, fleet_file: Path, found: list[Member], move: Any, *, push: bool) -> None:
    import sys

    from aicr_gen.gitops.commit.advance import finish_interrupted
    from aicr_gen.gitops.commit.sync import require_identity
    from aicr_gen.rollout.promote import commit_move

    require_identity(repo)
    finished = finish_interrupted(repo)
    if finished:
        sys.stderr.write(f"aicr-gen: {finished}\n")
    outcome = commit_move(repo, fleet_file, [member.spec_file for member in found], move, push=push)
    result = outcome.result
    if result.commit is None:
        sys.stderr.write(f"aicr-gen: {move.title}: nothing to commit (the trees already run it)\n")
    else:
        sys.stderr.write(f"aicr-gen: committed {result.commit[:12]} on {result.ref}: {move.title.split(': ', 2)[-1]}"
                         f", {outcome.changed} cluster(s) changed\n")
