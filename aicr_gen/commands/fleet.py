"""``aicr-gen fleet entry SPEC... --output DIR``: the fleet's entry points (``gitops/trees/fleet_entry.py``), written
once for the repository from its ClusterSpecs; ``--check`` compares them with the folder instead. ``aicr-gen fleet
init``: a commented starting Fleet file (with its editor schema modeline), which ``spec init --extends`` then
extends."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, FindingsError, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path


def arguments(parser: argparse.ArgumentParser) -> None:
    """``fleet entry SPEC... -o DIR``."""
    subcommands = parser.add_subparsers(dest="fleet_command", metavar="COMMAND", required=True)
    init = subcommands.add_parser(
        "init", help="write a commented starting Fleet file",
        description="Write a Fleet: the defaults its ClusterSpecs share (deployers, repository, certification, "
                    "snapshots), with rollout waves sketched in comments. Extend it with 'aicr-gen spec init "
                    "--extends FLEET'.")
    init.add_argument("-o", "--output", metavar="FILE", help="write it to FILE (atomically; default stdout)")
    init.add_argument("--name", default="fleet", metavar="NAME", help="metadata.name, a DNS label (default: fleet)")
    init.add_argument("--deployer", action="append", default=[], metavar="D",
                      help="deployer of every cluster (repeatable; default argocd)")
    init.add_argument("--repo-url", metavar="URL", help="the Git repository the trees are committed to")
    init.add_argument("--force", action="store_true", help="overwrite an existing -o FILE")
    entry = subcommands.add_parser(
        "entry", help="write the Argo CD ApplicationSet and the Flux entry Kustomizations of the clusters",
        description="Render, from the ClusterSpecs, argocd/applicationset.yaml (one list element per cluster with a "
                    "shared Argo CD, RollingSync steps with spec.argocd.rollout) and flux/clusters/<name>/ (the "
                    "Kustomization applying each cluster's flux tree; a spoke's in its hub's folder, with its "
                    "kubeconfig Secret).")
    entry.add_argument("spec_files", metavar="SPEC", nargs="+", help="ClusterSpec files or glob patterns")
    entry.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write, e.g. fleet")
    entry.add_argument("--name", default="aicr-fleet", metavar="NAME", help="ApplicationSet name (default: "
                       "aicr-fleet)")
    entry.add_argument("--force", action="store_true", help="replace the entry points written there before")
    entry.add_argument("--check", action="store_true", help="write nothing; exit 1 listing the files of DIR that "
                       "differ from the entry points the specs render (as sync --check)")


def run(args: argparse.Namespace) -> int:
    """``fleet init`` or ``fleet entry``."""
    if args.fleet_command == "init":
        return _init(args)
    return _entry(args)


def fleet_text(name: str, deployers: list[str], repo_url: str | None) -> str:
    """A starting Fleet file: the modeline, then commented defaults that ``lint`` accepts once the repository URL
    is set."""
    import json

    from aicr_gen.spec.cluster import API_VERSION, PLACEHOLDER_URL
    from aicr_gen.text.schema_url import modeline

    url = repo_url or PLACEHOLDER_URL
    note = "" if repo_url else "  # a placeholder: lint and sync refuse it until you set your repository"
    lines = [
        modeline("fleet"),
        "# Fleet: the defaults many ClusterSpecs share. A spec names it with spec.extends; its own values win",
        "# (maps merge, lists and scalars replace, null removes). `aicr-gen spec show SPEC` shows where each",
        "# value comes from.",
        f"apiVersion: {API_VERSION}",
        "kind: Fleet",
        "metadata:",
        f"  name: {name}",
        "spec:",
        "  deployers:",
        *(f"    - {deployer}" for deployer in deployers),
        "  repo:",
        f"    url: {json.dumps(url)}{note}",
        "    branch: main",
        "  versions: {}  # component pins for every cluster, e.g. gpu-operator: v26.3.3",
        "  # NVCRE certification of every cluster (its recipe must deploy nvcre, e.g. a training-kubeflow overlay):",
        "  # certification:",
        "  #   categories: [communication/nccl-all-reduce]",
        "  #   thresholds: {busBandwidthGBps: \"value >= 300\"}  # GB/s: set your fabric's floor",
        "  #   postChange: true  # certify each change the deployer applies (the rollout's certified gate reads it)",
        "  snapshot:",
        "    configmap: \"cm://aicr/snapshot\"  # where each cluster's snapshot agent writes (diff, rollout)",
        "# Roll changes out in waves: every cluster in exactly one wave (by metadata.name or labels); a bump goes",
        "# into the first wave's spec and `aicr-gen rollout advance` moves it on once the wave proved it.",
        "# rollout:",
        "#   waves:",
        "#     - name: canary",
        "#       selector: {ring: canary}",
        "#       soak: 24h",
        "#       spec: {versions: {}}",
        "#     - name: prod",
        "#       selector: {ring: prod}",
        "#       soak: 48h",
        "#       spec: {versions: {}}",
    ]
    return "\n".join(lines) + "\n"


def _init(args: argparse.Namespace) -> int:
    from pathlib import Path

    from aicr_gen.edges.output import write_text
    from aicr_gen.render.options import DEPLOYERS
    from aicr_gen.text.kube_names import is_dns_label

    if not is_dns_label(args.name):
        raise InvalidInputError(f"--name {args.name!r}: give a DNS label (lower-case letters, digits, '-')")
    deployers = args.deployer or ["argocd"]
    for deployer in deployers:
        if deployer not in DEPLOYERS:
            raise InvalidInputError(f"--deployer {deployer!r}: use one of {', '.join(DEPLOYERS)}")
    if args.output and Path(args.output).exists() and not args.force:
        raise InvalidInputError(f"{args.output} exists; give --force to replace it")
    write_text(args.output, fleet_text(args.name, deployers, args.repo_url))
    if args.output:
        sys.stderr.write(f"aicr-gen: wrote {args.output}; extend it with 'aicr-gen spec init --extends "
                         f"{args.output} ...'\n")
    return OK


def _entry(args: argparse.Namespace) -> int:
    """Render the ApplicationSet and the Flux entry Kustomizations of the specs and write them to ``--output``
    (``--check``: exit 1 listing the files there that differ from them, writing nothing)."""
    from pathlib import Path

    from aicr_gen.edges.output import write_bundle
    from aicr_gen.gitops.trees import fleet_entry
    from aicr_gen.spec.load import load_spec
    from aicr_gen.spec.patterns import clashes, expand

    spec_files, output, name, force, check = args.spec_files, args.output, args.name, args.force, args.check
    if check and force:
        raise InvalidInputError("--check writes nothing; give --check or --force, not both")
    loaded = [(spec_file, load_spec(spec_file)) for spec_file in expand(spec_files)]
    found = clashes(loaded)
    if found:  # one cluster twice in the entry points
        raise InvalidInputError("\n".join(clash.message() for clash in found))
    bundle = fleet_entry.render([cluster for _file, cluster in loaded], name)
    if check:
        differences = differ(bundle, Path(output))
        if differences:
            raise FindingsError("\n".join([
                f"{output} is not up to date with the entry points of the {len(loaded)} clusters (run 'aicr-gen "
                f"fleet entry ... -o {output} --force'):", *(f"  {line}" for line in differences)]))
        sys.stdout.write(f"aicr-gen: {output} is up to date with the entry points of {len(loaded)} clusters\n")
        return OK
    written = write_bundle(bundle, output, force)
    sys.stderr.write(f"aicr-gen: wrote the entry points of {len(loaded)} clusters to {written}\n")
    return OK


def differ(bundle: Mapping[str, bytes], folder: Path) -> list[str]:
    """The files of ``folder`` that are not ``bundle``'s, as ``sync --check`` lists them: ``stale`` (other
    bytes), ``missing``, and ``extra`` (written by an earlier entry, its checksums.txt says, and no longer
    rendered), sorted by path."""
    from aicr_gen.bundle import CHECKSUMS, parse_checksums

    written = folder / CHECKSUMS
    earlier = set(parse_checksums(written.read_text(encoding="utf-8"), str(written))) if written.is_file() else set()
    lines = [f"{'stale  ' if (folder / name).is_file() else 'missing'} {folder / name}"
             for name, data in bundle.items() if not (folder / name).is_file() or (folder / name).read_bytes() != data]
    lines += [f"extra   {folder / name}" for name in earlier - set(bundle) if (folder / name).exists()]
    return sorted(lines, key=lambda line: line.split()[-1])
