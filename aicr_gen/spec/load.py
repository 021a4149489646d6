"""Reading a ClusterSpec file: layered over the Fleet it extends (``fleet.effective``), then validated."""

from __future__ import annotations

from pathlib import Path

from aicr_gen.spec.cluster import ClusterSpec
from aicr_gen.spec.validate import check_references, parse_spec
from aicr_gen.yaml import Document


def load_spec(path: str | Path) -> ClusterSpec:
    """Read and validate a ClusterSpec file, layered over the Fleet it extends (``fleet.effective``); any
    problem is an ``InvalidInputError`` at ``file:line`` of the file the offending value is in."""
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.yaml import load_bytes

    source = str(path)
    return spec_of(load_bytes(read_input(source, "ClusterSpec"), source))


def spec_of(doc: Document) -> ClusterSpec:
    """The ClusterSpec of a loaded spec file (``load_spec`` after reading it)."""
    from aicr_gen.spec.fleet import KIND as FLEET
    from aicr_gen.spec.fleet import effective

    if isinstance(doc.data, dict) and doc.data.get("kind") == FLEET:
        raise doc.error(("kind",), f"this file is a {FLEET} (defaults for ClusterSpecs), not a ClusterSpec; give "
                        "the ClusterSpecs that name it in spec.extends (lint takes both)")
    cluster = parse_spec(effective(doc))
    if doc.source != "-":
        check_references(cluster, Path(doc.source))
    return cluster
