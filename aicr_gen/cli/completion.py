"""``aicr-gen completion bash|zsh|fish``: a shell completion script, generated from the argparse tree.

The tree is reduced to one ``Command`` per (sub)command path: its subcommands, options and positional
choices. Each shell's script walks the words typed so far to find the command path (a word extends it only
when it names a subcommand there), then offers that command's subcommands and options, an option's
choices, or files and folders where an option or argument names one.
"""

from __future__ import annotations

import argparse
import shlex
import sys

from aicr_gen.errors import OK

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping
    from typing import NamedTuple
else:
    from aicr_gen.records import NamedTuple

SHELLS = ("bash", "zsh", "fish")
PROG = "aicr-gen"


class Option(NamedTuple):
    """One option: its flags, and what its value is (``None``: a switch)."""

    flags: tuple[str, ...]
    help: str
    value: str | None  # "file", "dir", "word" (free text) or "choice"
    choices: tuple[str, ...] = ()


class Command(NamedTuple):
    """A command path (``("sentinel", "values")``) and what may follow it."""

    path: tuple[str, ...]
    subcommands: tuple[tuple[str, str], ...]  # (name, help)
    options: tuple[Option, ...]
    arguments: str | None  # positional arguments: "file", "dir", "choice" or None
    choices: tuple[str, ...] = ()  # of the first positional argument with choices

    @property
    def key(self) -> str:
        """``/sentinel/values``: the path as the scripts spell it (the top level is the empty string)."""
        return "".join(f"/{name}" for name in self.path)


def _choices(action: argparse.Action, known: Mapping[str, tuple[str, ...]]) -> tuple[str, ...]:
    return tuple(str(choice) for choice in action.choices) if action.choices else known.get(action.dest, ())


def _kind(action: argparse.Action, known: Mapping[str, tuple[str, ...]]) -> str:
    if _choices(action, known):
        return "choice"
    metavar = str(action.metavar or action.dest).upper()
    if "DIR" in metavar and "FILE" not in metavar:
        return "dir"
    return "file" if any(word in metavar for word in ("FILE", "DIR", "SPEC", "SRC")) else "word"


def commands(parser: argparse.ArgumentParser, known: Mapping[str, tuple[str, ...]],
             path: tuple[str, ...] = ()) -> Iterator[Command]:
    """Every (sub)command of ``parser``, parents first; ``known`` gives the values of options (by their
    destination) whose choices argparse does not check, such as the criteria."""
    subs: list[tuple[str, str]] = []
    children: list[tuple[str, argparse.ArgumentParser]] = []
    options: list[Option] = []
    arguments: str | None = None
    choices: tuple[str, ...] = ()
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help or "" for choice in action._choices_actions}
            subs += [(name, helps.get(name, "")) for name in action.choices]
            children += list(action.choices.items())
        elif action.help == argparse.SUPPRESS:
            continue
        elif action.option_strings:
            takes_value = action.nargs != 0
            options.append(Option(tuple(action.option_strings), (action.help or "").replace("%%", "%"),
                                  _kind(action, known) if takes_value else None, _choices(action, known)))
        elif arguments is None:
            arguments = _kind(action, known)
            choices = _choices(action, known)
    yield Command(path, tuple(subs), tuple(options), arguments, choices)
    for name, child in children:
        yield from commands(child, known, (*path, name))


def _words(command: Command) -> list[str]:
    return [name for name, _ in command.subcommands] + list(command.choices)


def _flags(command: Command) -> list[str]:
    return [flag for option in command.options for flag in option.flags]


def _value_cases(tree: list[Command], spell: dict[str, str]) -> list[tuple[str, str]]:
    """``(case pattern, action)`` for every option value; ``spell`` maps a value kind to the shell's action
    (``{choices}`` is replaced by the choices)."""
    cases = []
    for command in tree:
        for option in command.options:
            if option.value is None:
                continue
            action = spell[option.value].replace("{choices}", " ".join(map(shlex.quote, option.choices)))
            cases += [(f"{command.key} {flag}", action) for flag in option.flags]
    return cases


def _walk_pattern(tree: list[Command]) -> str:
    return "|".join(f'"{command.key}"' for command in tree if command.path)


def bash(tree: list[Command]) -> str:
    """The bash script: ``_aicr_gen`` registered with ``complete -F``."""
    spell = {"file": "COMPREPLY=($(compgen -f -- \"$cur\"))", "dir": "COMPREPLY=($(compgen -d -- \"$cur\"))",
             "word": "COMPREPLY=()", "choice": "COMPREPLY=($(compgen -W '{choices}' -- \"$cur\"))"}
    lines = [
        f"# {PROG} completion for bash. Load it with: source <({PROG} completion bash)",
        f"# or save it as ~/.local/share/bash-completion/completions/{PROG}",
        "_aicr_gen() {",
        '    local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]} path="" i',
        "    for ((i = 1; i < COMP_CWORD; i++)); do",
        '        case "$path/${COMP_WORDS[i]}" in',
        f'            {_walk_pattern(tree)}) path="$path/${{COMP_WORDS[i]}}" ;;',
        "        esac",
        "    done",
        '    case "$path $prev" in',
        *[f'        "{pattern}") {action}; return ;;' for pattern, action in _value_cases(tree, spell)],
        "    esac",
        '    local words="" flags="" arguments=""',
        '    case "$path" in',
    ]
    for command in tree:
        words, flags = shlex.quote(" ".join(_words(command))), shlex.quote(" ".join(_flags(command)))
        lines.append(f'        "{command.key}") words={words}; flags={flags}; arguments={command.arguments or ""} ;;')
    lines += [
        "    esac",
        '    if [[ $cur == -* ]]; then',
        '        COMPREPLY=($(compgen -W "$flags" -- "$cur"))',
        "        return",
        "    fi",
        '    COMPREPLY=($(compgen -W "$words" -- "$cur"))',
        '    if [[ ${#COMPREPLY[@]} -eq 0 ]]; then',
        '        case "$arguments" in',
        '            file) COMPREPLY=($(compgen -f -- "$cur")) ;;',
        '            dir) COMPREPLY=($(compgen -d -- "$cur")) ;;',
        "        esac",
        "    fi",
        "}",
        f"complete -o filenames -F _aicr_gen {PROG}",
    ]
    return "\n".join(lines) + "\n"


def _zsh_quote(text: str) -> str:
    return "'" + text.replace("'", "'\\''") + "'"


def zsh(tree: list[Command]) -> str:
    """The zsh script: a ``#compdef`` function file (for a folder on $fpath) that also works when sourced."""
    spell = {"file": "_files", "dir": "_files -/", "word": "_message value", "choice": "compadd -- {choices}"}
    lines = [
        f"#compdef {PROG}",
        f"# {PROG} completion for zsh. Load it with: source <({PROG} completion zsh)",
        f"# or save it as _{PROG} in a folder on $fpath (before compinit runs)",
        "_aicr_gen() {",
        '    local key="" prev=${words[CURRENT-1]} i',
        "    for ((i = 2; i < CURRENT; i++)); do",
        '        case "$key/${words[i]}" in',
        f'            {_walk_pattern(tree)}) key="$key/${{words[i]}}" ;;',
        "        esac",
        "    done",
        '    case "$key $prev" in',
        *[f'        "{pattern}") {action}; return ;;' for pattern, action in _value_cases(tree, spell)],
        "    esac",
        '    local -a subcommands flags choices',
        '    local arguments=""',
        '    case "$key" in',
    ]
    for command in tree:
        described = " ".join(_zsh_quote(name.replace(":", "\\:") + ":" + text) for name, text in command.subcommands)
        flags = " ".join(_zsh_quote(flag) for flag in _flags(command))
        picks = " ".join(_zsh_quote(choice) for choice in command.choices)
        lines.append(f'        "{command.key}") subcommands=({described}); flags=({flags}); choices=({picks}); '
                     f'arguments={command.arguments or ""} ;;')
    lines += [
        "    esac",
        "    if [[ ${words[CURRENT]} == -* ]]; then",
        "        compadd -- $flags",
        "    elif (( ${#subcommands} )); then",
        "        _describe command subcommands",
        "    elif (( ${#choices} )); then",
        "        compadd -- $choices",
        "    else",
        '        case "$arguments" in',
        "            file) _files ;;",
        "            dir) _files -/ ;;",
        "        esac",
        "    fi",
        "}",
        'if [[ ${zsh_eval_context[-1]} == loadautofunc ]]; then',
        '    _aicr_gen "$@"',
        "else",
        f"    compdef _aicr_gen {PROG}",
        "fi",
    ]
    return "\n".join(lines) + "\n"


def _fish_quote(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def fish(tree: list[Command]) -> str:
    """The fish script: ``complete`` rules conditioned on the command path."""
    lines = [
        f"# {PROG} completion for fish. Load it with: {PROG} completion fish | source",
        f"# or save it as ~/.config/fish/completions/{PROG}.fish",
        "function __aicr_gen_path",
        '    set -l key ""',
        "    for word in (commandline -opc)[2..-1]",
        '        switch "$key/$word"',
        f"            case {' '.join(command.key for command in tree if command.path)}",
        '                set key "$key/$word"',
        "        end",
        "    end",
        '    echo "$key"',
        "end",
        f"complete -c {PROG} -f",
    ]
    for command in tree:
        when = "-n " + _fish_quote(f"test (__aicr_gen_path) = '{command.key}'")
        base = f"complete -c {PROG} {when}"
        lines += [f"{base} -a {_fish_quote(name)} -d {_fish_quote(text)}" for name, text in command.subcommands]
        if command.choices:
            lines.append(f"{base} -a {_fish_quote(' '.join(command.choices))}")
        elif command.arguments in ("file", "dir"):
            lines.append(f"{base} -F")
        for option in command.options:
            flags = " ".join(f"-l {flag[2:]}" if flag.startswith("--") else f"-s {flag[1:]}" for flag in option.flags)
            value = {None: "", "word": " -x", "file": " -r -F", "dir": " -x -a '(__fish_complete_directories)'",
                     "choice": f" -x -a {_fish_quote(' '.join(option.choices))}"}[option.value]
            lines.append(f"{base} {flags}{value} -d {_fish_quote(option.help)}")
    return "\n".join(lines) + "\n"


def script(shell: str, parser: argparse.ArgumentParser) -> str:
    """The completion script of ``shell`` for ``parser``, completing criteria and deployers by name."""
    from aicr_gen.catalog.vocabulary import DIMENSIONS
    from aicr_gen.render.options import DEPLOYERS

    render = {"bash": bash, "zsh": zsh, "fish": fish}[shell]
    return render(list(commands(parser, {**DIMENSIONS, "deployer": DEPLOYERS})))


def arguments(parser: argparse.ArgumentParser) -> None:
    """``completion SHELL``."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = (
        "load it:\n  bash  source <(aicr-gen completion bash)   (or save it in "
        "~/.local/share/bash-completion/completions/aicr-gen)\n"
        "  zsh   source <(aicr-gen completion zsh)    (or save it as _aicr-gen in a folder on $fpath)\n"
        "  fish  aicr-gen completion fish | source    (or save it in ~/.config/fish/completions/aicr-gen.fish)")
    parser.add_argument("shell", choices=SHELLS, help="the shell to complete in")


def run(args: argparse.Namespace) -> int:
    """Print the completion script of ``args.shell`` for the whole tree."""
    from aicr_gen.cli.table import build_parser

    sys.stdout.write(script(args.shell, build_parser()))
    return OK
