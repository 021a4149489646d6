"""The one table of commands, and the argparse tree built from it (``--help``, a run's parser, completion).

A command is a row here (its name, the help ``--help`` lists, its module) and a module exposing
``arguments(parser)`` (its subparser's arguments, description and subcommands) and ``run(args) -> int``; the
table's order is the order ``--help`` lists them. A module is imported only when its arguments are built, and a
run builds only its own command's: its top level imports argparse and light things, its run the rest.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from aicr_gen import __version__
from aicr_gen.errors import INVALID

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~6 ms to import, as much as a quick command's own work
    from collections.abc import Iterator
    from typing import Any

# (command, its help, the module that defines its arguments and runs it), in the order --help lists them
COMMANDS = (
    ("recipe", "resolve a version-locked recipe for a cluster", "aicr_gen.commands.recipe"),
    ("bundle", "render a recipe into a deployer bundle folder", "aicr_gen.commands.bundle"),
    ("verify", "check bundle folders against their checksums.txt", "aicr_gen.commands.verify"),
    ("certification", "NVCRE Certification manifests (optionally scheduled)", "aicr_gen.commands.certification"),
    ("sentinel", "NVSentinel Helm values", "aicr_gen.commands.sentinel"),
    ("rules", "test NVSentinel CEL rules against HealthEvent samples", "aicr_gen.commands.rules"),
    ("validation-request", "an NVSentinel ValidationRequest for nodes", "aicr_gen.commands.validation_request"),
    ("report", "report NCCL, DCGM or Certification results offline", "aicr_gen.commands.report"),
    ("bisect", "next Certifications to isolate failing nodes, or the suspects", "aicr_gen.commands.bisect"),
    ("snapshot", "capture a read-only AICR snapshot through the Kubernetes API", "aicr_gen.commands.snapshot"),
    ("validate", "evaluate a recipe's constraints against a snapshot", "aicr_gen.commands.validate"),
    ("diff", "drift between a baseline (snapshot or recipe) and a target snapshot, or of a fleet of clusters "
             "against their specs' recipes", "aicr_gen.commands.diff"),
    ("schema", "print the JSON Schema of an input kind", "aicr_gen.commands.schema"),
    ("spec", "write a ClusterSpec, or show one layered over its fleet", "aicr_gen.commands.spec"),
    ("policy", "check a ClusterSpec and its recipe against CEL policies", "aicr_gen.commands.policy"),
    ("lint", "check ClusterSpecs and Fleets as sync would, without Git (pre-commit hook)", "aicr_gen.commands.lint"),
    ("sync", "render ClusterSpecs' trees and commit them to a Git repository as one commit",
     "aicr_gen.commands.sync"),
    ("plan", "what merging would change in each cluster: specs rendered as sync would, compared with the tree "
             "committed at a base (writes nothing to the repository)", "aicr_gen.commands.plan"),
    ("fleet", "render the entry points of many clusters in one repository", "aicr_gen.commands.fleet"),
    ("rollout", "a fleet's rollout in waves: gate verdicts from what each cluster proves, and the commits that "
                "move the next wave", "aicr_gen.commands.rollout"),
    ("mirror", "air-gapped sites: the charts and images a tree pulls", "aicr_gen.commands.mirror"),
    ("completion", "print a shell completion script", "aicr_gen.cli.completion"),
)
MODULES = {name: module for name, _help, module in COMMANDS}


def _terminal_width() -> int:
    """The columns argparse wraps help to, as ``shutil.get_terminal_size`` finds them ($COLUMNS, else the
    terminal of stdout, else 80): argparse imports shutil for it, with bz2 and lzma (~4 ms), in every formatter,
    and it makes one per add_argument."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2 (subcommands' parsers are of this class
    too: argparse makes them of their parent's)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(INVALID, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=_terminal_width())  # type: ignore[call-arg]

    def add_subparsers(self, **kwargs: Any) -> Any:
        """Subcommands named after this parser's prog: argparse would lay out a usage line to find it (its
        parsers have no positional arguments before the subcommand)."""
        kwargs.setdefault("prog", self.prog)
        return super().add_subparsers(**kwargs)


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole argparse tree (what ``--help``, ``aicr-gen completion`` and the help tests walk), or with
    ``command`` the tree of that subcommand alone: a run parses one subcommand, and building every subcommand's
    parser costs more than the run of a quick command (~6 ms, mostly argparse's gettext look-ups per parser). A
    ``command`` naming none gives every subcommand without arguments (enough for ``--help`` and the usage errors
    of the top level)."""
    parser = _Parser(prog="aicr-gen", description="Reproducible, certified and watched GPU Kubernetes clusters, "
                     "through Git: AICR recipes and bundles, NVCRE certification, NVSentinel operation.")
    parser.add_argument("--version", action="version", version=f"aicr-gen {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, text, module in COMMANDS:
        if command in (None, "", name):
            sub = commands.add_parser(name, help=text)
            if command in (None, name):
                importlib.import_module(module).arguments(sub)
    return parser


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
        tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every (sub)command's parser of ``parser`` with its path of names (``()`` for ``parser`` itself), parents
    first, in the order ``--help`` lists them: what the help tests and the docs' command reference walk."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from walk(sub, (*path, name))
