"""``--expect``: expected outcomes, and the differences between them and what was evaluated."""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aicr_gen.edges.inputs import read_input
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.rules.model import Outcome, Taint
from aicr_gen.sentinel.rules.source import _expect_type, _parse_file, _Source, _suggest
from aicr_gen.yaml import FieldPath

_EXPECT_KEYS = ("node", "matched", "cordon", "taints", "labels", "skipped", "validation")


def load_expectations(path: str) -> dict[str, dict[str, Any]]:
    """Expected outcomes by event name: a mapping ``event name -> {matched, cordon, taints, labels, ...}``
    (any subset of keys), or a list shaped like ``--format json`` output."""
    source = _parse_file(read_input(str(Path(path)), "--expect"), path)
    data = source.data
    entries: list[tuple[FieldPath, str, Any]]
    if isinstance(data, list):
        entries = []
        for index, item in enumerate(data):
            _expect_type(source, (index,), item, Mapping, "a mapping with event: and the expected outcome")
            _expect_type(source, (index, "event"), item.get("event"), str, "the event's name")
            entries.append(((index,), item["event"], {k: v for k, v in item.items() if k != "event"}))
    elif isinstance(data, Mapping):
        entries = [((name,), str(name), item) for name, item in data.items()]
    else:
        raise InvalidInputError(f"{path}: expectations must be a mapping (event name -> outcome) or a list")
    out: dict[str, dict[str, Any]] = {}
    for where, name, item in entries:
        _expect_type(source, where, item, Mapping, f"a mapping of {', '.join(_EXPECT_KEYS)}")
        for key in item:
            if key not in _EXPECT_KEYS:
                raise source.error((*where, key), f"unknown key {key!r}"
                                   f"{_suggest(str(key), _EXPECT_KEYS)} (keys: {', '.join(_EXPECT_KEYS)})")
        if name in out:
            raise source.error(where, f"event {name!r} is expected twice; keep one")
        out[name] = _expected(source, where, item)
    return out


def _expected(source: _Source, where: FieldPath, item: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in item.items():
        path = (*where, key)
        if key in ("matched", "validation"):
            _expect_type(source, path, value, list, "a list of rule set names")
            names = [entry.get("name") if isinstance(entry, Mapping) else entry for entry in value]
            for index, name in enumerate(names):
                _expect_type(source, (*path, index), name, str, "a rule set name")
            out[key] = names
        elif key == "cordon":
            _expect_type(source, path, value, bool, "true or false")
            out[key] = value
        elif key == "taints":
            _expect_type(source, path, value, list, "a list of {key, value, effect}")
            taints = []
            for index, taint in enumerate(value):
                _expect_type(source, (*path, index), taint, Mapping, "a mapping {key, value, effect}")
                taints.append(Taint(str(taint.get("key", "")), str(taint.get("value", "")),
                                    str(taint.get("effect", ""))))
            out[key] = sorted(taints, key=lambda t: (t.key, t.value, t.effect))
        elif key == "labels":
            _expect_type(source, path, value, Mapping, "a mapping of label key -> value")
            out[key] = {str(k): str(v) for k, v in value.items()}
        else:
            if value is not None:
                _expect_type(source, path, value, str, "a string")
            out[key] = value
    return out


def _show(value: Any) -> str:
    if isinstance(value, list):
        return "[" + ", ".join(_show(item) for item in value) + "]"
    if isinstance(value, Taint):
        return f"{value.key}={value.value}:{value.effect}"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}={v}" for k, v in value.items()) + "}"
    if value is None:
        return "none"
    if isinstance(value, bool):
        return str(value).lower()
    return str(value)


def compare(outcomes: Sequence[Outcome], expected: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Readable differences between outcomes and expectations (empty when everything matches)."""
    got = {outcome.event: outcome for outcome in outcomes}
    diffs: list[str] = []
    for name, want in expected.items():
        outcome = got.get(name)
        if outcome is None:
            close = difflib.get_close_matches(name, list(got), n=1)
            diffs.append(f"{name}: expected, but no such event{f' (did you mean {close[0]!r}?)' if close else ''}")
            continue
        actual: dict[str, Any] = {
            "node": outcome.node, "matched": outcome.matched, "cordon": outcome.cordon, "taints": outcome.taints,
            "labels": outcome.labels, "skipped": outcome.skipped,
            "validation": [r.name for r in outcome.validation or []],
        }
        lines = []
        for key, value in want.items():
            same = (sorted(actual[key]) == sorted(value) if key in ("matched", "validation")
                    else actual[key] == value)
            if same:
                continue
            line = f"{key}: expected {_show(value)}, got {_show(actual[key])}"
            if key in ("matched", "validation"):
                missing = [n for n in value if n not in actual[key]]
                extra = [n for n in actual[key] if n not in value]
                detail = [f"missing {_show(missing)}" if missing else "", f"unexpected {_show(extra)}" if extra else ""]
                line += f" ({'; '.join(d for d in detail if d)})"
            lines.append(line)
        if lines:
            diffs.append(f"{name}:\n      " + "\n      ".join(lines))
    return diffs
