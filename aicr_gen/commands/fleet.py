"""``aicr-gen fleet entry SPEC... --output DIR``: the fleet's entry points (``gitops/fleet_entry.py``), written once
for the repository from its ClusterSpecs."""

from __future__ import annotations

import sys

from aicr_gen.errors import OK, InvalidInputError


def entry_command(spec_files: list[str], output: str, *, name: str, force: bool) -> int:
    """Render the ApplicationSet and the Flux entry Kustomizations of the specs and write them to ``output``."""
    from aicr_gen.gitops import fleet_entry
    from aicr_gen.gitops.spec import load_spec
    from aicr_gen.gitops.specs import clashes, expand
    from aicr_gen.output import write_bundle

    loaded = [(spec_file, load_spec(spec_file)) for spec_file in expand(spec_files)]
    found = clashes(loaded)
    if found:  # one cluster twice in the entry points
        raise InvalidInputError("\n".join(clash.message() for clash in found))
    bundle = fleet_entry.render([cluster for _file, cluster in loaded], name)
    written = write_bundle(bundle, output, force)
    sys.stderr.write(f"aicr-gen: wrote the entry points of {len(loaded)} clusters to {written}\n")
    return OK
