"""``lint --format json`` names the file, line and field path of every input error below from the error's fields
(``AicrGenError.problems``), not from its text: each case breaks one thing that a check refuses at a place in a
file (a spec's pools, certification, scheduling, pins and overrides; a catalog's registry, overlays, mixins and
component refs), and the message ``sync`` shows is those fields' text (issue 26)."""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.commands import lint
from tests import tiny_catalog
from tests.conftest import ROOT

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
POOLS = ROOT / "examples" / "pools"
TINY_SPEC = """\
apiVersion: aicr-gen.dev/v1alpha1
kind: ClusterSpec
metadata:
  name: tiny
spec:
  criteria:
    service: eks
  catalogs: [catalog]
  deployers: [helm]
  repo:
    url: https://github.com/example/gitops.git
    path: clusters/tiny
"""

Edit = Callable[[dict[str, Any]], None]


def _spec(source: Path, edit: Edit) -> Callable[[Path], Path]:
    """A copy of ``source`` (with its folder, for the files it names) with ``edit`` applied to its data."""
    def write(folder: Path) -> Path:
        shutil.copytree(source.parent, folder / "spec", ignore=shutil.ignore_patterns("*.md"))
        data = yaml.safe_load(source.read_text())
        edit(data["spec"])
        path = folder / "spec" / source.name
        path.write_text(yaml.safe_dump(data, sort_keys=False))
        return path
    return write


def _tiny(changes: dict[str, str | None]) -> Callable[[Path], Path]:
    """A spec over the tiny catalog (``tests/tiny_catalog.py``) with ``changes`` to the catalog's files."""
    def write(folder: Path) -> Path:
        tiny_catalog.make(folder / "catalog", changes)
        path = folder / "tiny.yaml"
        path.write_text(TINY_SPEC)
        return path
    return write


def _pool(index: int, **fields: Any) -> Edit:
    return lambda spec: spec["pools"][index].update(fields)


def _pool_certification(**fields: Any) -> Edit:
    return lambda spec: spec["pools"][0]["certification"].update(fields)


LEAF_WITH_MIXIN = tiny_catalog.LEAF_SPEC + "  mixins: [nope]\n"

# name -> (changes to the tiny catalog, the file of the error in it, its field path, text on its line): what
# resolving a recipe refuses (``lint`` reports it at the spec's criteria, naming the catalog's place in the message)
RESOLUTION: dict[str, tuple[dict[str, str | None], str, str, str]] = {
    "a mixin that does not exist": ({tiny_catalog.LEAF: tiny_catalog.overlay("eks", LEAF_WITH_MIXIN)},
                                    tiny_catalog.LEAF, "spec.mixins[0]", "mixins: [nope]"),
    "an unknown dependency": (
        {tiny_catalog.LEAF: tiny_catalog.overlay("eks", tiny_catalog.LEAF_SPEC.replace("- a", "- zz"))},
        tiny_catalog.LEAF, "spec.componentRefs[0].dependencyRefs[0]", "- zz"),
    "a values file that does not exist": (
        {tiny_catalog.LEAF: tiny_catalog.overlay("eks", tiny_catalog.LEAF_SPEC + "      valuesFile: none.yaml\n")},
        tiny_catalog.LEAF, "spec.componentRefs[0].valuesFile", "valuesFile"),
    "a values file climbing out of the catalog": (
        {tiny_catalog.LEAF: tiny_catalog.overlay("eks", tiny_catalog.LEAF_SPEC + "      valuesFile: ../x.yaml\n")},
        tiny_catalog.LEAF, "spec.componentRefs[0].valuesFile", "valuesFile"),
    "a component of no registry entry and no type": (
        {tiny_catalog.LEAF: tiny_catalog.overlay("eks", tiny_catalog.LEAF_SPEC.replace("name: b", "name: zz"))},
        tiny_catalog.LEAF, "spec.componentRefs[0]", "name: zz"),
    "a base that does not exist": (
        {tiny_catalog.LEAF: tiny_catalog.overlay("eks", tiny_catalog.LEAF_SPEC + "  base: nope\n")},
        tiny_catalog.LEAF, "spec.base", "base: nope"),
}

# name -> (how to write the input, the file of the error relative to the input's folder, its field path)
CASES: dict[str, tuple[Callable[[Path], Path], str, str]] = {
    "a pool named twice": (_spec(POOLS / "eks-h100-gb200.yaml", _pool(1, name="h100")),
                           "spec/eks-h100-gb200.yaml", "spec.pools[1].name"),
    "a pool test listed twice": (
        _spec(POOLS / "eks-h100-gb200.yaml", _pool(0, validationTests=["dcgm-diag-test", "dcgm-diag-test"])),
        "spec/eks-h100-gb200.yaml", "spec.pools[0].validationTests[1]"),
    "an unknown category": (_spec(POOLS / "eks-h100-gb200.yaml", _pool_certification(categories=["no/such"])),
                            "spec/eks-h100-gb200.yaml", "spec.pools[0].certification.categories[0]"),
    "an unknown option": (_spec(POOLS / "eks-h100-gb200.yaml", _pool_certification(options={"bogus": 1})),
                          "spec/eks-h100-gb200.yaml", "spec.pools[0].certification.options.bogus"),
    "a pool's pin of no component": (_spec(POOLS / "eks-h100-gb200.yaml", _pool(0, versions={"nope": "1.0.0"})),
                                     "spec/eks-h100-gb200.yaml", "spec.pools[0].versions.nope"),
    "a rule set limited to no pool": (
        _spec(POOLS / "eks-h100-gb200.yaml",
              lambda spec: spec["sentinel"]["ruleSetPools"].update({"NVSwitch fatal error ruleset": ["nope"]})),
        "spec/eks-h100-gb200.yaml", "spec.sentinel.ruleSetPools.NVSwitch fatal error ruleset[0]"),
    "a pin of no component": (_spec(EXAMPLE, lambda spec: spec.update(versions={"nope": "v1"})),
                              "spec/eks-h100-inference-dynamo.yaml", "spec.versions.nope"),
    "a bad toleration": (
        _spec(EXAMPLE, lambda spec: spec.setdefault("scheduling", {}).update(systemNodeTolerations=["a=b:Never"])),
        "spec/eks-h100-inference-dynamo.yaml", "spec.scheduling.systemNodeTolerations[0]"),
    "dynamic values for argocd": (
        _spec(EXAMPLE, lambda spec: spec["overrides"].update(dynamic=["gpu-operator:driver.version"])),
        "spec/eks-h100-inference-dynamo.yaml", "spec.overrides.dynamic"),
    "an override of no component": (_spec(EXAMPLE, lambda spec: spec["overrides"].update(set=["nope:x=1"])),
                                     "spec/eks-h100-inference-dynamo.yaml", "spec.overrides.set[0]"),
    "an override switching a component by a word": (
        _spec(EXAMPLE, lambda spec: spec["overrides"].update(setJson=['gpu-operator:enabled="yes"'])),
        "spec/eks-h100-inference-dynamo.yaml", "spec.overrides.setJson[0]"),
    "a component listed twice in the registry": (
        _tiny({tiny_catalog.REGISTRY: tiny_catalog.REGISTRY_TEXT.replace("- name: c", "- name: a")}),
        "catalog/registry.yaml", "components[2].name"),
    "an overlay header of no generation": (
        _tiny({tiny_catalog.LEAF: tiny_catalog.overlay("eks", tiny_catalog.LEAF_SPEC, api="aicr.run/v9")}),
        "catalog/overlays/eks.yaml", "apiVersion"),
    "a health check climbing out of the catalog": (
        _tiny({tiny_catalog.REGISTRY: tiny_catalog.REGISTRY_TEXT.replace("checks/a.yaml", "../a.yaml")}),
        "catalog/registry.yaml", "components[0].healthCheck.assertFile"),
    "a catalog refusing to resolve the spec's criteria": (_tiny(RESOLUTION["a mixin that does not exist"][0]),
                                                        "tiny.yaml", "spec.criteria"),
}


def _lint(capsys: pytest.CaptureFixture[str], spec: Path) -> tuple[int, list[dict[str, Any]]]:
    code = lint.run(argparse.Namespace(spec_files=[str(spec)], policies=[], lint_format="json"))
    return code, json.loads(capsys.readouterr().out)["files"][0]["errors"]


@pytest.mark.parametrize("case", list(CASES))
def test_each_input_error_is_found_at_its_file_line_and_path(
        case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    class Unused:
        def match(self, message: str) -> None:
            raise AssertionError(f"read out of the message text: {message}")

    monkeypatch.setattr("aicr_gen.report.findings._WHERE", Unused())  # each error here is built from fields
    write, file, path = CASES[case]
    spec = write(tmp_path)
    code, errors = _lint(capsys, spec)
    assert code == 2, errors
    (error,) = errors
    assert (error["file"], error["path"]) == (str(tmp_path / file), path), error
    assert isinstance(error["line"], int), error
    line = (tmp_path / file).read_text().splitlines()[error["line"] - 1]  # the key's line, or its list item's
    assert path.rsplit(".", 1)[-1].split("[")[0] in line or line.lstrip().startswith("- "), (line, error)


@pytest.mark.parametrize("case", list(RESOLUTION))
def test_each_catalog_error_is_at_its_file_line_and_path(case: str, tmp_path: Path) -> None:
    from aicr_gen.catalog.load import load
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.located import format_path
    from aicr_gen.resolve import recipe

    changes, file, path, needle = RESOLUTION[case]
    catalog = load([str(tiny_catalog.make(tmp_path, changes))])
    with pytest.raises(InvalidInputError) as caught:
        recipe.resolve(catalog, recipe.query_for(catalog, {"service": "eks"}))
    (problem,) = caught.value.problems
    assert (problem.file, format_path(problem.path or ()), str(caught.value)) == (
        str(tmp_path / file), path, problem.text())
    assert problem.line == tiny_catalog.line_of(tmp_path, file, needle)
