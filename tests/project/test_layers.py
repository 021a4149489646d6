"""The house holds (docs/architecture.md): every import of aicr_gen, those inside functions included, goes down
the layer contract in pyproject.toml (``[tool.importlinter]``, checked with import-linter, the field's tool), and no
two modules import each other, however indirectly."""

from __future__ import annotations

import os
import sys
import tomllib
from pathlib import Path

import grimp
import pytest

ROOT = Path(__file__).resolve().parents[2]
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["importlinter"]


@pytest.fixture(scope="module")
def graph() -> grimp.ImportGraph:
    sys.path.insert(0, str(ROOT))  # the package of this checkout, wherever pytest runs from
    try:
        return grimp.build_graph("aicr_gen", cache_dir=None)
    finally:
        sys.path.remove(str(ROOT))


def test_the_layer_contracts_are_kept(capsys: pytest.CaptureFixture[str]) -> None:
    from importlinter.cli import lint_imports

    cwd = Path.cwd()
    os.chdir(ROOT)  # import-linter reads pyproject.toml of the working folder
    try:
        exit_code = lint_imports(no_logo=True, no_cache=True)
    finally:
        os.chdir(cwd)
    assert exit_code == 0, capsys.readouterr().out


def test_every_module_of_the_package_is_in_a_layer(graph: grimp.ImportGraph) -> None:
    layers = next(item["layers"] for item in CONFIG["contracts"] if item["id"] == "layers")
    named = {name.strip() for layer in layers for name in layer.split("|")}
    top = {module for module in graph.modules if module.count(".") == 1}
    assert top - named == set(), "add the new module or package to the layers of [tool.importlinter]"


def test_the_graph_counts_imports_inside_functions(graph: grimp.ImportGraph) -> None:
    """``ClusterSpec.origin`` imports ``spec.layered`` inside the method: the contract sees such an import, so a
    lazy import cannot hide an upward arrow."""
    assert "def origin(" in (ROOT / "aicr_gen/spec/cluster.py").read_text(encoding="utf-8")
    assert graph.direct_import_exists(importer="aicr_gen.spec.cluster", imported="aicr_gen.spec.layered")


def cycles(imports: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for other in sorted(imports.get(module, ())):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in on_stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for module in sorted(imports):
        if module not in index:
            visit(module)
    return found


def test_cycles_are_found() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_no_two_modules_import_each_other(graph: grimp.ImportGraph) -> None:
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10 * len(graph.modules)))
    try:
        found = cycles({module: set(graph.find_modules_directly_imported_by(module)) for module in graph.modules})
    finally:
        sys.setrecursionlimit(limit)
    assert found == []
