"""Every documented command runs as written: each line starting with ``$ aicr-gen`` in a ```console block of
``README.md`` and ``docs/**/*.md`` is one test, run with this checkout's ``aicr-gen`` entry point from the root
of a temporary copy of the repository (a fresh Git repository of the tracked and the untracked-but-not-ignored
files, committed once: ``sync``, ``plan`` and ``rollout`` need a work tree), so nothing is written into the
checkout. The lines of one file run in order in one copy (a later line may read what an earlier one wrote); a
test run alone first runs the lines of its file before it. A line exits 0 unless it ends with ``  # exit N``.

A line is split as a shell would (``shlex``: quotes, a ``\\`` at the end continues it on the next line, ``#``
starts a comment); no shell runs it, so pipes, redirections and globs are not supported (a command given a
glob pattern expands it itself). ``docs/examples.md`` shows every command and subcommand of the parser.

The output under a line is what it printed (standard output and error as they came), trimmed with ``...``.
``AICR_GEN_REFRESH_DOCS=1`` rewrites it from this run, trimmed to the shape it had: as many lines before the
first ``...`` and after the last one (all of it when it had none).
"""

from __future__ import annotations

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from markdown_it import MarkdownIt

from aicr_gen.cli.table import build_parser

ROOT = Path(__file__).resolve().parent.parent.parent
EXAMPLES = ROOT / "docs" / "examples.md"
PROMPT = "$ aicr-gen"
EXIT = re.compile(r"\s#\s*exit\s+(\d+)\s*$")
ELLIPSIS = "..."
REFRESH = "AICR_GEN_REFRESH_DOCS"
SHOWN_ROOT = "/path/to/aicr-gen"
"""Where the output shown says the copy was (it prints absolute paths of what it wrote)."""
TIMEOUT = 300
"""Seconds one documented command may take (the slowest render the whole catalog in seconds)."""


@dataclass(frozen=True)
class Line:
    """One documented command: its file (relative to the root), first line number and how many lines it spans,
    the line its block closes at (0-based), its text and expected exit code."""

    file: str
    number: int
    span: int
    block_end: int
    text: str
    exit: int

    @property
    def argv(self) -> list[str]:
        """The arguments after ``$ aicr-gen``."""
        return shlex.split(EXIT.sub("", self.text)[len(PROMPT):], comments=True)


def documents() -> list[Path]:
    """The Markdown files whose console blocks are run: the README and every page under docs/."""
    found = [ROOT / "README.md"] if (ROOT / "README.md").is_file() else []
    return found + sorted((ROOT / "docs").rglob("*.md"))


def console_lines(path: Path) -> list[Line]:
    """The ``$ aicr-gen`` lines of the ```console blocks of ``path``, in order."""
    lines = []
    for token in MarkdownIt("commonmark").parse(path.read_text(encoding="utf-8")):
        if token.type != "fence" or token.info.split()[:1] != ["console"] or token.map is None:
            continue
        body = token.content.splitlines()
        index = 0
        while index < len(body):
            start = index
            command = body[index].strip()
            while command.endswith("\\") and index + 1 < len(body):
                index += 1
                command = command[:-1] + " " + body[index].strip()
            index += 1
            if command == PROMPT or command.startswith(PROMPT + " "):
                found = EXIT.search(command)
                lines.append(Line(str(path.relative_to(ROOT)), token.map[0] + 2 + start, index - start,
                                  token.map[1] - 1, command, int(found.group(1)) if found else 0))
    return lines


DOCUMENTED = [line for doc in documents() for line in console_lines(doc)]


def _entry_point() -> tuple[str, str]:
    """The module and function of this checkout's ``aicr-gen`` script (pyproject's [project.scripts])."""
    with (ROOT / "pyproject.toml").open("rb") as file:
        target = tomllib.load(file)["project"]["scripts"]["aicr-gen"]
    module, _, function = target.partition(":")
    return module, function


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout


def _copy(dest: Path) -> Path:
    """A fresh Git repository at ``dest`` holding the checkout's files (tracked, and untracked but not ignored:
    the docs being written), committed once."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip(f"{ROOT} is not a Git checkout (or git is missing): the documented lines run in a copy of one")
    listed = _git(ROOT, "ls-files", "-z", "--cached", "--others", "--exclude-standard")
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():  # a tracked file deleted in the work tree is left out, as a commit would
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, dest / name, follow_symlinks=False)
    _git(dest, "init", "-q", "-b", "main")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "--no-verify", "-m", "the checkout, for its documented commands")
    return dest


class Workspaces:
    """One copy of the repository per documented file, how many of its lines have run there, and what each
    printed."""

    def __init__(self, base: Path, home: Path) -> None:
        self.base, self.home = base, home
        self.done: dict[str, int] = {}
        self.printed: dict[Line, str] = {}
        module, function = _entry_point()
        self.prefix = [sys.executable, "-P", "-c",
                       f"import sys; sys.argv[0] = 'aicr-gen'; from {module} import {function}; "
                       f"sys.exit({function}())"]

    def run(self, line: Line) -> subprocess.CompletedProcess[str]:
        """Run ``line`` in its file's copy, after the lines of that file before it that have not run yet."""
        place = self.base / re.sub(r"[^A-Za-z0-9]+", "-", line.file)
        if line.file not in self.done:
            place.mkdir()
            _copy(place)
            self.done[line.file] = 0
        lines = [other for other in DOCUMENTED if other.file == line.file]
        result = None
        for other in lines[self.done[line.file]:lines.index(line) + 1]:
            result = self._run(other, place)
            if result.returncode == other.exit:
                self.printed[other] = result.stdout.replace(str(place), SHOWN_ROOT)
        self.done[line.file] = max(self.done[line.file], lines.index(line) + 1)
        assert result is not None, f"{line.file}:{line.number} ran before"
        return result

    def _run(self, line: Line, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "PYTHONUNBUFFERED": "1", "HOME": str(self.home),
               "COLUMNS": "120", "KUBECONFIG": str(self.home / "no-kubeconfig")}  # no documented line reaches a cluster
        return subprocess.run([*self.prefix, *line.argv], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=TIMEOUT,
                              check=False)

    def refresh(self) -> None:
        """Rewrite the output under every line that ran as documented with what it printed, trimmed to the old
        one's shape."""
        for file in sorted({line.file for line in self.printed}):
            path = ROOT / file
            text = path.read_text(encoding="utf-8").splitlines()
            for line in sorted((line for line in self.printed if line.file == file), key=lambda x: -x.number):
                indent = text[line.number - 1][:len(text[line.number - 1]) - len(text[line.number - 1].lstrip())]
                start = line.number - 1 + line.span
                end = next((i for i in range(start, line.block_end) if text[i].lstrip().startswith("$ ")),
                           line.block_end)
                before = [row[len(indent):] for row in text[start:end]]  # a block in a list item is indented
                text[start:end] = [indent + row if row else row for row in shown(self.printed[line], before)]
            path.write_text("\n".join(text) + "\n", encoding="utf-8")


def shown(printed: str, before: list[str]) -> list[str]:
    """``printed`` as the docs show it: trimmed to as many lines before the first ``...`` and after the last one
    as ``before`` had (all of it when ``before`` had no ``...``)."""
    lines = [row.rstrip() for row in printed.rstrip("\n").splitlines()]
    if ELLIPSIS not in before:
        return lines
    head = before.index(ELLIPSIS)
    tail = before[::-1].index(ELLIPSIS)
    if head + tail >= len(lines):
        return lines
    return [*lines[:head], ELLIPSIS, *lines[len(lines) - tail:]]


@pytest.fixture(scope="module")
def workspaces(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspaces]:
    places = Workspaces(tmp_path_factory.mktemp("documented"), tmp_path_factory.mktemp("home"))
    yield places
    if os.environ.get(REFRESH):
        places.refresh()


@pytest.mark.parametrize("line", DOCUMENTED, ids=[f"{line.file}:{line.number}" for line in DOCUMENTED])
def test_documented_command_runs_as_written(workspaces: Workspaces, line: Line) -> None:
    result = workspaces.run(line)
    assert result.returncode == line.exit, (
        f"{line.file}:{line.number}: `{line.text}` exited {result.returncode}, the docs say {line.exit}\n"
        f"{result.stdout[-4000:]}")
    assert "Traceback" not in result.stdout, result.stdout


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    """Every command and subcommand of the parser, as the words that name it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield (*path, name)
                yield from _commands(sub, (*path, name))


def test_examples_show_every_command_and_subcommand() -> None:
    text = EXAMPLES.read_text(encoding="utf-8")
    missing = [" ".join(words) for words in _commands(build_parser())
               if not re.search(rf"aicr-gen {re.escape(' '.join(words))}(?![\w-])", text)]
    assert not missing, f"{EXAMPLES.relative_to(ROOT)} shows no `aicr-gen {missing[0]}` (nor: {missing[1:]})"
    assert any(line.file == "docs/examples.md" for line in DOCUMENTED), "docs/examples.md has no console block"


def test_refreshed_output_keeps_the_shape_it_had() -> None:
    assert shown("a\nb\nc\nd  \n", ["x", ELLIPSIS, "y"]) == ["a", ELLIPSIS, "d"]
    assert shown("a\nb\nc\n", ["x", "y", ELLIPSIS]) == ["a", "b", ELLIPSIS]
    assert shown("a\nb\n", ["x", ELLIPSIS, "y"]) == ["a", "b"]  # nothing left to cut
    assert shown("a\nb\n", ["old"]) == ["a", "b"]
