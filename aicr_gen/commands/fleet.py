"""``aicr-gen fleet entry SPEC... --output DIR``: the fleet's entry points (``gitops/fleet_entry.py``), written once
for the repository from its ClusterSpecs; ``--check`` compares them with the folder instead."""

from __future__ import annotations

import sys
from collections.abc import Mapping
from pathlib import Path

from aicr_gen.errors import OK, FindingsError, InvalidInputError


def entry_command(spec_files: list[str], output: str, *, name: str, force: bool, check: bool = False) -> int:
    """Render the ApplicationSet and the Flux entry Kustomizations of the specs and write them to ``output``
    (``check``: exit 1 listing the files of ``output`` that differ from them, writing nothing)."""
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.gitops import fleet_entry
    from aicr_gen.spec.load import load_spec
    from aicr_gen.spec.patterns import clashes, expand

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
