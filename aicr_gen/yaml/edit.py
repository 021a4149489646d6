"""One value of a YAML file set in place, every other byte as it was (comments, order, quoting, line breaks):
pure, text in, text out. ``rollout advance`` and ``rollback`` set a wave's baseline in a fleet file with it.

The value's place is found with libyaml's composer (each node with its start and end in the text). A block
mapping value (``key:`` then indented lines) is replaced from its key to the end of its last line by the new value
in block style at the key's indentation; a flow or scalar value by the new value in flow style; a missing key is
added as the mapping's last key; a mapping written in flow style is rewritten whole, in flow style. Comments inside
the replaced value go with it. The result is read back and must be the file's data with only that value changed,
else the edit is refused (exit 2, naming the path to edit by hand): a value shared through an alias, say, would
change its anchor too. The file is never written wrong.
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import FieldPath, format_path

_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


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


def _child(node: yaml.Node | None, part: str | int) -> tuple[yaml.Node | None, yaml.Node] | None:
    """(key node or None for a list item, value node) of ``part`` under ``node``."""
    if isinstance(node, yaml.MappingNode) and isinstance(part, str):
        return next(((name, value) for name, value in node.value
                     if isinstance(name, yaml.ScalarNode) and name.value == part), None)
    if isinstance(node, yaml.SequenceNode) and isinstance(part, int) and 0 <= part < len(node.value):
        return None, node.value[part]
    return None


def _line_end(text: str, index: int) -> int:
    """The index just past the content of the line holding ``index`` (before its line break, ``\\n`` or
    ``\\r\\n``)."""
    end = text.find("\n", index)
    if end < 0:
        return len(text)
    return end - 1 if end > index and text[end - 1] == "\r" else end


def _last_content(text: str, start: int, end: int) -> int:
    """The index of the last character of a node spanning ``start:end`` that is neither white space nor on a
    comment line (a block node's end mark lies at the next token, past trailing comments and blank lines)."""
    offset = last = start
    for line in text[start:end].split("\n"):
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            last = offset + len(line.rstrip()) - 1
        offset += len(line) + 1
    return last


def set_value(text: str, source: str, path: FieldPath, value: Any) -> str:
    """``text`` (the YAML file ``source``) with the mapping key at ``path`` set to ``value`` (its parents must
    exist; the last part is a key)."""
    where = format_path(path)
    fix = f"; set {where} by hand"
    try:
        node: yaml.Node | None = yaml.compose(text, Loader=_LOADER)
    except yaml.YAMLError as err:
        raise InvalidInputError(f"{source}: cannot edit: {str(err).splitlines()[0]}{fix}") from None
    *parents, key = path
    for part in parents:
        found = _child(node, part)
        if found is None:
            raise InvalidInputError(f"{source}: has no {format_path(tuple(parents))}{fix}")
        node = found[1]
    if not isinstance(node, yaml.MappingNode) or not isinstance(key, str):
        raise InvalidInputError(f"{source}: {format_path(tuple(parents))} is not a mapping{fix}")
    newline = "\r\n" if "\r\n" in text else "\n"
    present = _child(node, key)
    if node.flow_style:
        data = json.loads(json.dumps(yaml.load(text[node.start_mark.index:node.end_mark.index], Loader=_LOADER)))
        edited = text[:node.start_mark.index] + _flow({**data, key: value}) + text[node.end_mark.index:]
    elif present is None:
        first = node.value[0][0]
        end = _line_end(text, _last_content(text, node.start_mark.index, node.end_mark.index))
        edited = text[:end] + newline + " " * first.start_mark.column + _block(
            key, value, first.start_mark.column, newline) + text[end:]
    else:
        name, old = present
        assert name is not None
        if getattr(old, "flow_style", False) or not isinstance(old, yaml.MappingNode) or not old.value:
            edited = text[:old.start_mark.index] + _flow(value) + text[old.end_mark.index:]
        else:
            end = _line_end(text, _last_content(text, old.start_mark.index, old.end_mark.index))
            edited = text[:name.start_mark.index] + _block(key, value, name.start_mark.column, newline) + text[end:]
    _check(text, edited, source, path=path, value=value, fix=fix)
    return edited


def _check(text: str, edited: str, source: str, *, path: FieldPath, value: Any, fix: str) -> None:
    from aicr_gen.yaml.load import load_bytes

    expected = json.loads(json.dumps(load_bytes(text.encode(), source).data))
    place = expected
    for part in path[:-1]:
        place = place[part]
    place[path[-1]] = value
    if json.loads(json.dumps(load_bytes(edited.encode(), source).data)) != expected:
        raise InvalidInputError(f"{source}: editing {format_path(path)} would change more than it{fix}")
