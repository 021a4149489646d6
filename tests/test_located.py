"""An input error carries its place and its problem as fields (``errors.Located``): ``str(err)`` is their text
rendering, ``lint``'s text and ``--format json`` read the fields, so the two name the same file, line and field
path, and no message text (a ``:`` in a key or a file name) can move them (issue 26)."""

from __future__ import annotations

import argparse
import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.commands import lint
from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.report.findings import Problem
from aicr_gen.spec.load import spec_of
from aicr_gen.yaml import load_bytes
from tests.commands.test_errors import EXAMPLE, OUT_OF_RANGE, example, write_spec
from tests.conftest import ROOT

REPORT = re.compile(r"^(?P<file>.+?):(?P<line>\d+):(?P<col>\d+): error \[input\] (?P<rest>.*)$")
"""lint's text line up to the path, which may itself hold ``: ``: ``file:line:col: error [input] path: message``."""


def _duplicate_deployer(spec: dict[str, Any]) -> None:
    spec["deployers"] = [*spec.get("deployers", ["argocd"]), *spec.get("deployers", ["argocd"])[:1]]


def _missing_policy(spec: dict[str, Any]) -> None:
    spec["policies"] = ["no-such-policy.yaml"]


# the schema (modelcheck), the semantics (spec/cluster's _fail), a missing file (check_present), YAML itself
EDITS = {
    "unknown field": lambda spec: spec.update(colour="blue"),
    "wrong type": lambda spec: spec["sentinel"].update(mode=["monitor"]),
    "two problems": lambda spec: spec["sentinel"].update(mode="nope", lifecycle="x"),
    "deployer twice": _duplicate_deployer,
    "missing policy file": _missing_policy,
}


def _corpus(folder: Path) -> list[Path]:
    """Bad specs: ``EDITS`` of the example, the out-of-range numbers of ``tests/commands/test_errors.py``, and YAML that
    does not parse."""
    specs = [write_spec(folder, example(edit), f"{name.replace(' ', '-')}.yaml") for name, edit in EDITS.items()]
    for name, source, (old, new), _path, _message in OUT_OF_RANGE:
        if source == EXAMPLE:
            specs.append(write_spec(folder, source.read_text().replace(old, new, 1), f"{name.replace(' ', '-')}.yaml"))
    specs.append(write_spec(folder, "apiVersion: v1\nkind: [\n", "broken.yaml"))
    return specs


def _lint(capsys: pytest.CaptureFixture[str], spec: Path, output_format: str) -> str:
    lint.run(argparse.Namespace(spec_files=[str(spec)], policies=[], lint_format=output_format))
    return capsys.readouterr().out


def _text_places(text: str, json_errors: list[dict[str, Any]]) -> list[tuple[str, int, str | None]]:
    """``(file, line, path)`` of each text line, its path told apart from the message by the JSON's message."""
    places = []
    for line, error in zip(text.splitlines()[:-1], json_errors, strict=True):
        found = REPORT.match(line)
        assert found is not None, line
        rest = found["rest"]
        assert rest.endswith(error["message"]), (line, error)
        path = rest.removesuffix(error["message"]).removesuffix(": ") or None
        places.append((found["file"], int(found["line"]), path))
    return places


def test_text_and_json_name_the_same_place(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    class Unused:
        def match(self, message: str) -> None:
            raise AssertionError(f"read out of the message text: {message}")

    monkeypatch.setattr("aicr_gen.report.findings._WHERE", Unused())  # every problem here is built from fields
    corpus = _corpus(tmp_path)
    for spec in corpus:
        errors = json.loads(_lint(capsys, spec, "json"))["files"][0]["errors"]
        assert errors, spec
        assert [(error["file"], error["line"], error["path"]) for error in errors] == \
            _text_places(_lint(capsys, spec, "text"), errors), spec
    assert len(corpus) == len(EDITS) + 4  # the three out-of-range numbers of the example, the broken YAML


def test_an_error_built_from_fields_renders_them(tmp_path: Path) -> None:
    """``str(err)`` is the text of its problems, one a line; the JSON entry of each is its fields."""
    spec = write_spec(tmp_path, example(EDITS["two problems"]))
    with pytest.raises(InvalidInputError) as caught:
        spec_of(load_bytes(spec.read_bytes(), str(spec)))
    problems = caught.value.problems
    assert [problem.path for problem in problems] == [("spec", "sentinel", "mode"), ("spec", "sentinel", "lifecycle")]
    assert str(caught.value) == "\n".join(problem.text() for problem in problems)
    assert [Problem.of(problem).as_dict() for problem in problems] == [
        {"file": str(spec), "line": problem.line, "path": f"spec.sentinel.{problem.path[-1]}",
         "message": f"{problem.message}; {problem.fix}", "policy": None} for problem in problems if problem.path]


def test_the_text_rendering_is_the_message() -> None:
    """``Located.text``: ``file:line: field.path: message; fix``, the path and the fix when known."""
    assert Located("a.yaml", 3, "bad", ("spec", "pools", 0, "name")).text() == "a.yaml:3: spec.pools[0].name: bad"
    assert Located("a.yaml", 1, "empty", (), fix="give one").text() == "a.yaml:1: (document root): empty; give one"
    assert Located("a.yaml", 7, "not YAML", column=4).text() == "a.yaml:7: not YAML"
    err = InvalidInputError.at(Located("a.yaml", 3, "one"), Located("b.yaml", 4, "two", ("x",)))
    assert str(err) == "a.yaml:3: one\nb.yaml:4: x: two"


def test_a_key_or_a_file_name_holding_a_colon_does_not_move_the_place(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by issue 26: ``lint --format json`` parsed the place out of the message, so a key holding a space or
    a ``:`` (``spec.bad key``) came back as part of the message, with no path, and an error in a file whose name
    holds a ``:`` came back at no line of the spec. The fields name them."""
    spec = write_spec(tmp_path, example(lambda spec: spec.update({"bad key: x": 1})))
    (error,) = json.loads(_lint(capsys, spec, "json"))["files"][0]["errors"]
    assert (error["path"], error["message"].startswith("unknown field 'bad key: x'; ")) == ("spec.bad key: x", True)
    assert error["line"] == next(number for number, line in enumerate(spec.read_text().splitlines(), 1)
                                 if "bad key" in line)

    odd = write_spec(tmp_path / "a:b", "apiVersion: v1\nkind: [\n", "x:1: spec.y.yaml")
    (error,) = json.loads(_lint(capsys, odd, "json"))["files"][0]["errors"]
    assert (error["file"], error["line"], error["path"]) == (str(odd), 3, None), error
    assert error["message"].startswith("invalid YAML: "), error


def test_every_problem_of_a_fleet_is_its_own_entry(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Found by issue 26: the schema problems of a spec's fleet were one ``lint`` entry, the later ones inside the
    first one's message; each is now an entry at its own line, as a spec's are. The message ``sync`` shows, all
    of them one a line and then the fleet's name, is the same."""
    shutil.copytree(ROOT / "examples" / "fleet", tmp_path / "fleet")
    fleet = tmp_path / "fleet" / "fleet.yaml"
    fleet.write_text(fleet.read_text().replace("    mode: monitor\n", "    mode: nope\n    lifecycle: x\n"))
    spec = tmp_path / "fleet" / "clusters" / "eks-h100-inference.yaml"
    errors = json.loads(_lint(capsys, spec, "json"))["files"][0]["errors"]
    assert [(error["file"], error["line"], error["path"]) for error in errors] == [
        (str(fleet), 18, "spec.sentinel.mode"), (str(fleet), 19, "spec.sentinel.lifecycle")]
    assert "\n" not in errors[0]["message"] and errors[1]["message"].endswith(
        f"(the fleet named by {spec}:7: spec.extends)")
    with pytest.raises(InvalidInputError) as caught:
        spec_of(load_bytes(spec.read_bytes(), str(spec)))
    assert str(caught.value) == "\n".join(f"{error['file']}:{error['line']}: {error['path']}: {error['message']}"
                                          for error in errors)
