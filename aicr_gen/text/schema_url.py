"""Where a released aicr-gen's JSON Schemas are served, and the modeline that points YAML editors at one.

``schemas/KIND.json`` in the repository is ``aicr-gen schema KIND``, committed (``tests/test_schema_files.py`` keeps
them equal); its address at the release tag of this version never changes, so a file written by this version
names the schema it was written against.
"""

from __future__ import annotations

HOME = "https://raw.githubusercontent.com/aicr-gen/aicr-gen"
"""The repository's files as served, by ref."""


def schema_url(kind: str) -> str:
    """The address of ``kind``'s schema at this version's release tag."""
    from aicr_gen import __version__

    return f"{HOME}/v{__version__}/schemas/{kind}.json"


def modeline(kind: str) -> str:
    """The first line of a YAML file of ``kind`` pointing editors at its schema: the Red Hat YAML language server's
    modeline (VS Code's YAML extension, Neovim's yamlls and other clients of it read it)."""
    return f"# yaml-language-server: $schema={schema_url(kind)}"
