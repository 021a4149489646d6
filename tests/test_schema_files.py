"""The JSON Schemas committed under ``schemas/`` are ``aicr-gen schema KIND`` exactly, and the files ``spec init`` and
``fleet init`` write point editors at them (the YAML language server's modeline) and validate against them with
check-jsonschema, the consumer editors and CI use."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from aicr_gen import __version__
from aicr_gen.commands.schema import KINDS, schema_of
from aicr_gen.text.schema_url import HOME, modeline
from tests.conftest import ROOT


@pytest.mark.parametrize("kind", KINDS)
def test_the_committed_schema_is_the_commands(kind: str) -> None:
    from aicr_gen.yaml import dump_json

    committed = ROOT / "schemas" / f"{kind}.json"
    assert committed.read_text(encoding="utf-8") == dump_json(schema_of(kind)), \
        f"schemas/{kind}.json is stale: aicr-gen schema {kind} > schemas/{kind}.json"


def test_every_schema_file_is_a_kind() -> None:
    assert sorted(path.stem for path in (ROOT / "schemas").glob("*.json")) == sorted(KINDS)


def _schema_path(line: str) -> Path:
    prefix = f"# yaml-language-server: $schema={HOME}/v{__version__}/"
    assert line.startswith(prefix), line
    return ROOT / line[len(prefix):]


def test_spec_init_and_fleet_init_name_their_schema_and_validate_against_it(cli: Any, tmp_path: Path) -> None:
    from tests.conftest import tool

    fleet = tmp_path / "fleet.yaml"
    assert cli("fleet", "init", "-o", str(fleet), "--repo-url", "https://github.com/example/gitops.git").code == 0
    spec = tmp_path / "clusters" / "a.yaml"
    made = cli("spec", "init", "--extends", str(fleet), "--service", "eks", "--accelerator", "h100", "--intent",
               "inference", "--os", "ubuntu", "--platform", "dynamo", "-o", str(spec))
    assert made.code == 0, made.err
    whole = tmp_path / "whole.yaml"
    assert cli("spec", "init", "--service", "eks", "--accelerator", "h100", "--intent", "inference", "-o",
               str(whole)).code == 0
    for path, kind in ((fleet, "fleet"), (spec, "clusterspec"), (whole, "clusterspec")):
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert first == modeline(kind)
        schema = _schema_path(first)
        assert schema == ROOT / "schemas" / f"{kind}.json" and schema.is_file()
        checked = subprocess.run([tool("check-jsonschema"), "--schemafile", str(schema), str(path)],
                                 capture_output=True, text=True, check=False)
        assert checked.returncode == 0, checked.stdout + checked.stderr
    linted = cli("lint", str(fleet), str(spec))
    assert linted.code == 0, linted.out + linted.err


def test_fleet_init_refuses_what_it_cannot_write(cli: Any, tmp_path: Path) -> None:
    assert cli("fleet", "init", "--name", "Not_A_Label").code == 2
    assert cli("fleet", "init", "--deployer", "kubectl").code == 2
    target = tmp_path / "fleet.yaml"
    target.write_text("mine\n")
    assert cli("fleet", "init", "-o", str(target)).code == 2
    assert target.read_text() == "mine\n"
    assert json.loads(json.dumps(modeline("fleet")))  # a plain one-line string
