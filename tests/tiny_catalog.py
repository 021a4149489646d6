"""A tiny catalog for tests that break one thing in it: registry components a, b, c; ``base`` deploys a; the leaf
``eks`` adds b, which depends on a; ``make`` writes it with changes, the ``catalog`` fixture as it is."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import ROOT, Result, assert_refused
from tests.hostile.test_catalog import line_of

Run = Callable[..., Result]

REGISTRY = "registry.yaml"
BASE = "overlays/base.yaml"
LEAF = "overlays/eks.yaml"
MIXIN = "mixins/mx.yaml"


def _component(name: str) -> str:
    return f"""\
  - name: {name}
    healthCheck:
      assertFile: checks/{name}.yaml
    helm:
      defaultRepository: https://charts.example.com
      defaultChart: example/{name}
      defaultVersion: 1.0.0
      defaultNamespace: ns-{name}
"""


REGISTRY_TEXT = "apiVersion: aicr.run/v1alpha2\nkind: ComponentRegistry\ncomponents:\n" + "".join(
    _component(name) for name in "abc")


def overlay(name: str, spec: str, api: str = "aicr.run/v1alpha2") -> str:
    """An overlay document; ``spec`` is the indented body under ``spec:``."""
    return f"kind: RecipeMetadata\napiVersion: {api}\nmetadata:\n  name: {name}\nspec:\n{spec}"


LEAF_SPEC = """\
  criteria:
    service: eks
  componentRefs:
    - name: b
      dependencyRefs:
        - a
"""

FILES: dict[str, str] = {
    REGISTRY: REGISTRY_TEXT,
    BASE: overlay("base", "  componentRefs:\n    - name: a\n"),
    LEAF: overlay("eks", LEAF_SPEC),
    **{f"checks/{name}.yaml": f"{name}: healthy\n" for name in "abc"},
}

MIXIN_HEAD = "kind: RecipeMixin\napiVersion: aicr.run/v1alpha2\nmetadata:\n  name: mx\nspec:\n"


def make(root: Path, changes: dict[str, str | None] | None = None) -> Path:
    """Write the tiny catalog under ``root`` with ``changes`` (relative path -> text, None deletes)."""
    files: dict[str, str | None] = {**FILES, **(changes or {})}
    for rel, text in files.items():
        if text is None:
            continue
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


@pytest.fixture
def catalog(tmp_path: Path) -> Path:
    return make(tmp_path / "catalog")


def recipe(cli: Run, catalog: Path, *args: str) -> Result:
    return cli("recipe", "--catalog", str(catalog), *args)


refused = assert_refused


def resolved(result: Result) -> dict[str, Any]:
    """The recipe of a successful run."""
    assert result.code == 0, result.err
    assert result.err == ""
    data: dict[str, Any] = yaml.safe_load(result.out)
    return data


def ref_named(data: dict[str, Any], name: str) -> dict[str, Any]:
    return next(ref for ref in data["componentRefs"] if ref["name"] == name)


def at(catalog: Path, rel: str, needle: str) -> str:
    """``/abs/catalog/rel:LINE`` of the first line of ``rel`` containing ``needle``."""
    return f"{catalog / rel}:{line_of(catalog, rel, needle)}"


def aicr_gen_process(*args: str | bytes, timeout: float = 30) -> subprocess.CompletedProcess[bytes]:
    """``python -m aicr_gen ARGS`` as a real process, bounded in time (a hang fails, it does not block)."""
    return subprocess.run([sys.executable, "-m", "aicr_gen", *args], capture_output=True, cwd=ROOT,
                          timeout=timeout, check=False)
