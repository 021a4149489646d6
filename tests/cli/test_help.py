"""``--help`` of every command and subcommand: exit 0, no traceback, every option and subcommand explained, and
the input formats of ``report`` and ``rules test`` described where a user looks for them."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from typing import Any

import pytest

from aicr_gen.cli.table import build_parser, walk
from tests.conftest import ROOT

COMMANDS = list(walk(build_parser()))
IDS = [" ".join(path) or "aicr-gen" for path, _ in COMMANDS]


def test_the_tree_holds_every_command() -> None:
    paths = {" ".join(path) for path, _ in COMMANDS}
    assert {"recipe", "recipe list", "sentinel values", "rules test", "spec init", "policy check", "lint", "sync",
            "verify", "report", "completion"} <= paths


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_help_exits_0_without_a_traceback(cli: Any, path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
    result = cli(*path, "--help")
    assert result.code == 0, result
    assert result.err == ""
    assert result.out.startswith("usage: aicr-gen"), result.out
    assert "Traceback" not in result.out


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_a_run_builds_the_same_parser_as_the_whole_tree(path: tuple[str, ...],
                                                        parser: argparse.ArgumentParser) -> None:
    # a run builds only its subcommand's parser; help, usage and defaults must not notice
    if not path:
        return
    alone = dict(walk(build_parser(path[0])))[path]
    assert (alone.prog, alone.format_help(), [(action.dest, action.default) for action in alone._actions]) == \
        (parser.prog, parser.format_help(), [(action.dest, action.default) for action in parser._actions])


@pytest.mark.parametrize(("path", "parser"), COMMANDS, ids=IDS)
def test_every_option_and_subcommand_has_help(path: tuple[str, ...], parser: argparse.ArgumentParser) -> None:
    missing = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            missing += [f"subcommand {choice.dest}" for choice in action._choices_actions if not choice.help]
        elif action.help != argparse.SUPPRESS and not (action.help or "").strip():
            missing.append("/".join(action.option_strings) or action.dest)
    assert not missing, f"aicr-gen {' '.join(path)}: no help text for {', '.join(missing)}"


@pytest.mark.parametrize(("command", "fragments"), [
    (("report",), ["nccl-tests", "-J", "dcgmi diag -j", "Certification", "status", "kubectl get"]),
    (("rules", "test"), ["HealthEvent", "Node", "folder", "---", ".json", ".yaml", "kubectl get node", "nodeName"]),
])
def test_input_formats_are_described(cli: Any, command: tuple[str, ...], fragments: list[str]) -> None:
    out = cli(*command, "--help").out
    for fragment in fragments:
        assert fragment in out, f"{fragment!r} not in aicr-gen {' '.join(command)} --help"


@pytest.mark.parametrize("columns", [None, "", "abc", "0", "-5", "40", "200"])
def test_help_width_is_the_one_shutil_finds(columns: str | None) -> None:
    env = {key: value for key, value in os.environ.items() if key not in ("COLUMNS", "LINES")}
    if columns is not None:
        env["COLUMNS"] = columns
    code = ("import shutil\nfrom aicr_gen.cli import table as cli_parser\n"
            "print(cli_parser._terminal_width(), shutil.get_terminal_size().columns - 2)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT, env=env)
    ours, theirs = out.stdout.split()
    assert ours == theirs
