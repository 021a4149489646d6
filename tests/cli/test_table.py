"""One way to add a command: a row of ``cli/table.py`` and a module with ``arguments`` and ``run``."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

from aicr_gen.cli.table import COMMANDS

ROOT = Path(__file__).resolve().parents[2]


def test_every_command_module_is_one_row_of_the_table() -> None:
    public = {f"aicr_gen.commands.{path.stem}" for path in (ROOT / "aicr_gen" / "commands").glob("*.py")
              if not path.stem.startswith("_")}
    listed = [module for _name, _help, module in COMMANDS]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert public == {module for module in listed if module.startswith("aicr_gen.commands.")}


def test_every_row_exposes_arguments_and_run() -> None:
    for name, _help, module_name in COMMANDS:
        module = importlib.import_module(module_name)
        assert list(inspect.signature(module.arguments).parameters) == ["parser"], name
        first, *rest = inspect.signature(module.run).parameters.values()
        assert first.name == "args", name
        assert all(parameter.default is not parameter.empty for parameter in rest), name


def test_a_command_module_imports_only_light_things_at_its_top() -> None:
    """Building the parser imports every command module (not their ``_parts``): their top levels import argparse,
    the error types, the catalog's vocabulary and records, and the rest inside ``run``."""
    allowed = {"__future__", "argparse", "sys", "os", "re", "typing", "collections.abc", "aicr_gen", "aicr_gen.errors",
               "aicr_gen.catalog.vocabulary", "aicr_gen.records"}
    for path in sorted((ROOT / "aicr_gen" / "commands").glob("[!_]*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ImportFrom):
                assert node.module in allowed, f"{path.name}: from {node.module} import at the top"
            elif isinstance(node, ast.Import):
                assert all(alias.name in allowed for alias in node.names), f"{path.name}: import at the top"
