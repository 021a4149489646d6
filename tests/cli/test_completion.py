"""``aicr-gen completion bash|zsh|fish``: scripts built from the argparse tree that each shell parses and that
complete subcommands, options, their choices and files."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.cli.completion import commands
from aicr_gen.cli.table import build_parser

TREE = list(commands(build_parser(), {}))
SUBCOMMANDS = sorted({name for command in TREE for name, _ in command.subcommands})
BASH = shutil.which("bash")
ZSH = shutil.which("zsh")
FISH = shutil.which("fish")


def _script(cli: Any, shell: str, tmp_path: Path) -> Path:
    result = cli("completion", shell)
    assert result.code == 0 and result.err == "", result
    path = tmp_path / f"completion.{shell}"
    path.write_text(result.out)
    return path


def _parsed(cli: Any, shell: str | None, tmp_path: Path) -> tuple[str, Path]:
    """The shell and its script, which ``SHELL -n`` parses."""
    assert shell is not None
    script = _script(cli, Path(shell).name, tmp_path)
    proc = subprocess.run([shell, "-n", str(script)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return shell, script


def test_the_tree_has_every_subcommand() -> None:
    assert {"recipe", "list", "sentinel", "values", "rules", "test", "lint", "sync", "completion"} <= set(SUBCOMMANDS)


@pytest.mark.parametrize("shell", ["bash", "zsh", "fish"])
def test_every_script_names_every_subcommand(cli: Any, tmp_path: Path, shell: str) -> None:
    text = _script(cli, shell, tmp_path).read_text()
    for name in SUBCOMMANDS:
        assert name in text, f"{shell}: {name}"
    flags = ["breaker-percentage", "deployer"] if shell == "fish" else ["--breaker-percentage", "--deployer"]
    assert all(flag in text for flag in flags)  # fish spells a long option -l NAME


def test_an_unknown_shell_is_a_usage_error(cli: Any) -> None:
    result = cli("completion", "tcsh")
    assert result.code == 2 and "invalid choice: 'tcsh'" in result.err


def _bash(script: Path, *words: str) -> list[str]:
    assert BASH is not None
    program = (f'source {script}\nCOMP_WORDS=({" ".join(repr(word) for word in words)})\n'
               'COMP_CWORD=$((${#COMP_WORDS[@]} - 1))\n_aicr_gen\nprintf "%s\\n" "${COMPREPLY[@]}"\n')
    proc = subprocess.run([BASH, "--norc", "-c", program], capture_output=True, text=True, check=True,
                          cwd=script.parent)
    return [line for line in proc.stdout.splitlines() if line]


@pytest.mark.skipif(BASH is None, reason="bash is not installed")
def test_bash_parses_the_script_and_completes(cli: Any, tmp_path: Path) -> None:
    _, script = _parsed(cli, BASH, tmp_path)
    assert _bash(script, "aicr-gen", "") == [name for name, _ in TREE[0].subcommands]
    assert _bash(script, "aicr-gen", "sentinel", "") == ["values"]
    assert _bash(script, "aicr-gen", "sentinel", "values", "--m") == ["--mode"]
    assert _bash(script, "aicr-gen", "sentinel", "values", "--mode", "") == ["monitor", "quarantine"]
    assert _bash(script, "aicr-gen", "bundle", "--deployer", "argo") == ["argocd", "argocd-helm"]
    assert _bash(script, "aicr-gen", "recipe", "--service", "eks", "--accelerator", "h2") == ["h200"]
    assert _bash(script, "aicr-gen", "recipe", "--service", "eks", "l") == ["list"]
    assert _bash(script, "aicr-gen", "report", "") == ["nccl", "dcgm", "certification"]
    assert _bash(script, "aicr-gen", "lint", "compl") == ["completion.bash"]  # SPEC: files


@pytest.mark.skipif(ZSH is None, reason="zsh is not installed (apt-get install zsh)")
def test_zsh_parses_the_script_and_completes(cli: Any, tmp_path: Path) -> None:
    zsh, script = _parsed(cli, ZSH, tmp_path)
    # zsh's completion builtins stubbed to print what they are given; words/CURRENT as the completion system
    # sets them
    stubs = ('compdef() { print -r -- "compdef $*"; }\ncompadd() { print -r -- "compadd $*"; }\n'
             '_describe() { print -r -- "describe ${(@P)2}"; }\n_files() { print -r -- "files $*"; }\n'
             '_message() { print -r -- "message $*"; }\n')

    def complete(*typed: str) -> str:
        program = f'{stubs}source {script}\nwords=({" ".join(repr(word) for word in typed)})\nCURRENT={len(typed)}\n' \
                  "_aicr_gen\n"
        return subprocess.run([zsh, "-fc", program], capture_output=True, text=True, check=True).stdout

    assert complete("aicr-gen", "").startswith("compdef _aicr_gen aicr-gen\ndescribe recipe:resolve a version")
    assert complete("aicr-gen", "sentinel", "values", "--mode", "").endswith("compadd -- monitor quarantine\n")
    assert complete("aicr-gen", "bundle", "--output", "").endswith("files -/\n")
    assert "compadd -- -h --help --mode" in complete("aicr-gen", "sentinel", "values", "-")
    assert complete("aicr-gen", "lint", "").endswith("files \n")


@pytest.mark.skipif(FISH is None, reason="fish is not installed (apt-get install fish)")
def test_fish_parses_the_script_and_completes(cli: Any, tmp_path: Path) -> None:
    fish, script = _parsed(cli, FISH, tmp_path)

    def complete(line: str) -> list[str]:
        program = f"source {script}; complete -C {line!r}"
        out = subprocess.run([fish, "--no-config", "-c", program], capture_output=True, text=True, check=True,
                             cwd=tmp_path).stdout
        return [row.split("\t")[0] for row in out.splitlines()]

    assert sorted(complete("aicr-gen ")) == sorted(name for name, _ in TREE[0].subcommands)
    assert complete("aicr-gen sentinel values --mode ") == ["monitor", "quarantine"]
    assert complete("aicr-gen sentinel values --breaker-p") == ["--breaker-percentage"]
    assert "h200" in complete("aicr-gen recipe --accelerator ")
    assert complete("aicr-gen lint compl") == ["completion.fish"]
