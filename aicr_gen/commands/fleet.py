"""``aicr-gen fleet entry SPEC... --output DIR``: the fleet's entry points (``gitops/trees/fleet_entry.py``), written
once for the repository from its ClusterSpecs; ``--check`` compares them with the folder instead."""

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
