"""The one edit ``rollout advance`` and ``rollout rollback`` make to a fleet file: a wave's ``spec`` (its baseline)
set to a value, every other byte of the file as it was (comments, order, quoting), pure: text in, text out.

The wave's ``spec`` is found with libyaml's composer (PyYAML ``compose``: each node with its start and end in
the text). A block ``spec:`` is replaced from its key to the end of its last line by the new value in block style at
the key's indentation; a flow one (``spec: {...}``) by the value in flow style; a wave without ``spec`` gets it as
its last key; a wave written in flow style is rewritten whole, in flow style. Comments inside the replaced value
go with it. The result is read back and must be the file's data with only that value changed, else the edit is
refused (exit 2: edit the fleet by hand) -- the file is never written wrong.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from aicr_gen.errors import InvalidInputError


def _flow(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(", ", ": "))


def _block(key: str, value: Any, indent: int, newline: str) -> str:
    """``key: value`` in block style, continuation lines shifted by ``indent`` (the key's column), lines ended by
    ``newline`` (no final one)."""
    if not isinstance(value, dict) or not value:
        return f"{key}: {_flow(value)}"
    text = yaml.safe_dump({key: value}, sort_keys=False, default_flow_style=False, allow_unicode=True, width=1000)
    lines = text.rstrip("\n").split("\n")
    return newline.join([lines[0], *(" " * indent + line for line in lines[1:])])


def _child(node: yaml.Node, key: str) -> tuple[yaml.Node, yaml.Node] | None:
    if isinstance(node, yaml.MappingNode):
        for name, value in node.value:
            if isinstance(name, yaml.ScalarNode) and name.value == key:
                return name, value
    return None


def _line_end(text: str, index: int) -> int:
    """The index just past the content of the line holding ``index`` (before its line break, ``\\n`` or
    ``\\r\\n``)."""
    end = text.find("\n", index)
    if end < 0:
        return len(text)
    return end - 1 if end > index and text[end - 1] == "\r" else end


def set_wave_spec(text: str, source: str, index: int, value: dict[str, Any]) -> str:
    """``text`` (the fleet file ``source``) with ``rollout.waves[index].spec`` set to ``value``."""
    from aicr_gen.yaml import load_bytes

    fix = f"; set rollout.waves[{index}].spec by hand"
    try:
        root = yaml.compose(text, Loader=yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader)
    except yaml.YAMLError as err:
        raise InvalidInputError(f"{source}: cannot edit: {str(err).splitlines()[0]}{fix}") from None
    rollout = _child(root, "rollout") if root is not None else None
    waves = _child(rollout[1], "waves") if rollout is not None else None
    if waves is None or not isinstance(waves[1], yaml.SequenceNode) or len(waves[1].value) <= index:
        raise InvalidInputError(f"{source}: has no rollout.waves[{index}]{fix}")
    wave = waves[1].value[index]
    newline = "\r\n" if "\r\n" in text else "\n"
    found = _child(wave, "spec")
    if getattr(wave, "flow_style", False):
        data = load_bytes(text[wave.start_mark.index:wave.end_mark.index].encode(), source).data
        edited = text[:wave.start_mark.index] + _flow({**data, "spec": value}) + text[wave.end_mark.index:]
    elif found is None:
        first = wave.value[0][0]
        end = _line_end(text, _last_content(text, wave.start_mark.index, wave.end_mark.index))
        edited = text[:end] + newline + " " * first.start_mark.column + _block(
            "spec", value, first.start_mark.column, newline) + text[end:]
    else:
        key, node = found
        if getattr(node, "flow_style", False) or not isinstance(node, yaml.MappingNode) or not node.value:
            edited = text[:node.start_mark.index] + _flow(value) + text[node.end_mark.index:]
        else:
            end = _line_end(text, _last_content(text, node.start_mark.index, node.end_mark.index))
            edited = text[:key.start_mark.index] + _block("spec", value, key.start_mark.column, newline) + text[end:]
    _check(text, edited, source, index=index, value=value, fix=fix)
    return edited


def _last_content(text: str, start: int, end: int) -> int:
    """The index of the last character of a node spanning ``start:end`` that is not white space or a comment
    line (a block node's end mark lies at the next token, past trailing comments and blank lines)."""
    lines = text[start:end].split("\n")
    offset = start
    last = start
    for line in lines:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            last = offset + len(line.rstrip()) - 1
        offset += len(line) + 1
    return last


def _check(text: str, edited: str, source: str, *, index: int, value: dict[str, Any], fix: str) -> None:
    from aicr_gen.yaml import load_bytes

    before = load_bytes(text.encode(), source).data
    after = load_bytes(edited.encode(), source).data
    expected = json.loads(json.dumps(before))
    expected["rollout"]["waves"][index]["spec"] = value
    if json.loads(json.dumps(after)) != expected:
        raise InvalidInputError(f"{source}: editing rollout.waves[{index}].spec would change more than it{fix}")
