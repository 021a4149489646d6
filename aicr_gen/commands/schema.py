"""``aicr-gen schema KIND``: the JSON Schema of an input kind, for editors and check-jsonschema. Each is committed
as ``schemas/KIND.json`` (a test keeps them equal), so a release's schemas have addresses
(``text/schema_url.py``) that the files ``spec init`` and ``fleet init`` write name in their modeline."""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK

KINDS = ("recipe", "overlay", "mixin", "registry", "criteria", "clusterspec", "fleet", "plan", "mirrorlock")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``schema KIND``."""
    parser.add_argument("kind", choices=KINDS, help="the input kind whose schema to print")
    parser.add_argument("--output", "-o", metavar="FILE",
                        help="write the schema to FILE, e.g. clusterspec.schema.json for an editor (default: stdout)")


def schema_of(kind: str) -> dict[str, object]:
    """The JSON Schema (draft 2020-12) of ``kind``, titled and identified for editors."""
    from pydantic import BaseModel

    from aicr_gen.catalog.models import SCHEMA_KINDS
    from aicr_gen.gitops.review.plan import Plan
    from aicr_gen.mirror.lock import MirrorLock
    from aicr_gen.spec.cluster import ClusterSpec
    from aicr_gen.spec.fleet import Fleet

    models: dict[str, type[BaseModel]] = {"clusterspec": ClusterSpec, "fleet": Fleet, "plan": Plan,
                                          "mirrorlock": MirrorLock}
    model = models.get(kind) or SCHEMA_KINDS[kind]
    schema = model.model_json_schema()
    return {"$schema": "https://json-schema.org/draft/2020-12/schema",
            "$id": f"https://aicr-gen.dev/schemas/{kind}.json", **schema}


def run(args: argparse.Namespace) -> int:
    """Print the schema of ``args.kind`` as JSON, or write it to ``--output``."""
    from aicr_gen.edges.output import write_text
    from aicr_gen.yaml import dump_json

    write_text(args.output, dump_json(schema_of(args.kind)))
    return OK
