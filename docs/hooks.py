"""mkdocs hook: the reference pages, made at build time from the code so they cannot drift from it.

``reference/commands.md`` is every command's and subcommand's ``--help``, walked through the argparse tree
``aicr_gen/cli/table.py`` builds (the tree ``--help`` and ``aicr-gen completion`` walk), wrapped at 100 columns
whatever the terminal. ``reference/schemas.md`` is every kind of ``aicr-gen schema KIND``, each beside its
schema file ``reference/schemas/KIND.json`` for editors to download. Nothing is written into ``docs/``: the pages
exist only in the built site. The reference is of this checkout's ``aicr_gen``, whatever else is installed.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from aicr_gen.cli.table import build_parser, walk  # noqa: E402
from aicr_gen.commands.schema import KINDS, schema_of  # noqa: E402
from aicr_gen.yaml import dump_json  # noqa: E402

COLUMNS = "102"  # argparse wraps help to $COLUMNS - 2 (aicr_gen/cli/table.py)


def commands_page() -> str:
    """``reference/commands.md``: one section per command (its subcommands below it), the help as printed."""
    lines = ["# Commands", "",
             "Every command's `--help`, as `aicr-gen COMMAND --help` prints it. Generated from the argument parser "
             "when the site is built.", ""]
    saved = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = COLUMNS
    try:
        for path, parser in walk(build_parser()):
            level = "##" if len(path) <= 1 else "###"
            lines += [f"{level} {' '.join(('aicr-gen', *path))}", "", "```text", parser.format_help().rstrip(),
                      "```", ""]
    finally:
        if saved is None:
            del os.environ["COLUMNS"]
        else:
            os.environ["COLUMNS"] = saved
    return "\n".join(lines)


def schemas_page() -> str:
    """``reference/schemas.md``: per kind its title and description, the command that writes it, its file and
    the schema itself (folded)."""
    lines = ["# JSON Schemas", "",
             "The JSON Schema (draft 2020-12) of every input kind, as `aicr-gen schema KIND` prints it. Generated "
             "from the models when the site is built; how to point an editor at one: [Editors](../editors.md).", ""]
    for kind in KINDS:
        schema = schema_of(kind)
        lines += [f"## {kind}", ""]
        description = str(schema.get("description", "")).strip()
        if description:
            lines += [description, ""]
        lines += [f"`aicr-gen schema {kind} -o {kind}.schema.json` writes it; the file: "
                  f"[{kind}.json](schemas/{kind}.json).", "",
                  f'??? note "The {kind} schema"', "", "    ```json",
                  *(f"    {line}" if line else "" for line in dump_json(schema).rstrip().split("\n")),
                  "    ```", ""]
    return "\n".join(lines)


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated reference pages and schema files to the site."""
    files.append(File.generated(config, "reference/commands.md", content=commands_page()))
    files.append(File.generated(config, "reference/schemas.md", content=schemas_page()))
    for kind in KINDS:
        files.append(File.generated(config, f"reference/schemas/{kind}.json", content=dump_json(schema_of(kind))))
    return files
