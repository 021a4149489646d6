"""The suite's markers, given to every test from what it really uses, and the check that keeps the rest quick.

- ``cluster``: starts a real API server (etcd and kube-apiserver, ``tests/cluster/envtest.py``);
- ``consumers``: runs a real consumer tool as a process: helm, kubectl (kustomize), shellcheck, pre-commit,
  check-jsonschema (``tests/consumers/``, ``tests.conftest.tool``), the AICR binary (the ``aicr`` fixture) or
  Mermaid in chromium (``tests/consumers/render_mermaid.mjs``);
- ``conformance``: runs cel-spec's conformance suite or the cel-cpp oracle (``tests/cel/conformance.py``,
  ``tests/cel/oracle.py``);
- ``network``: serves on loopback (HTTP and registry peers, Debian's docker-registry) or installs from a
  package index (pre-commit's hook environment);
- ``slow``: starts processes (``aicr-gen`` as users and hooks run it, git, the rendered and shipped shell
  scripts), or is an in-process test over a CPU second named in ``SLOW_TESTS``.

``scripts/test.sh --quick`` runs the tests that have none of them. Nobody marks a test by hand: ``uses`` follows
what the test can reach, from the test function, the functions of
its fixtures (pytest's closure: a fixture's fixtures count, autouse ones too) and its parameters, through every
function, class and module of the ``tests`` package they name, to the *roots* below. A test marked by hand
keeps its marks. Over-reach only costs the quick loop a test; a miss makes it slow, and the budget catches it:
with ``AICR_GEN_UNMARKED_BUDGET=SECONDS`` (e.g. ``AICR_GEN_UNMARKED_BUDGET=1 scripts/test.sh --quick``) the
summary lists the unmarked tests that took the most CPU time (this process and the processes it waited for, in
setup, call and teardown; a shared fixture counts for the first test that uses it) and the run fails when one
took more than the budget.
"""

from __future__ import annotations

import functools
import importlib
import itertools
import os
import sys
import types
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

MARKERS = ("cluster", "consumers", "conformance", "network", "slow")
"""Registered in pyproject.toml ([tool.pytest.ini_options] markers); the quick loop deselects all of them."""

BUDGET_ENV = "AICR_GEN_UNMARKED_BUDGET"
SLOWEST_SHOWN = 10


@dataclass(frozen=True)
class Roots:
    """What gives a test the marker: reaching one of these functions, a subclass of one of these classes, any
    object defined in one of these modules, or one of these string constants (a ``python -m`` module name, a
    binary's name)."""

    functions: tuple[str, ...] = ()
    classes: tuple[str, ...] = ()
    modules: tuple[str, ...] = ()
    strings: tuple[str, ...] = ()


ROOTS = {
    "cluster": Roots(functions=("tests.cluster.envtest:start",)),
    "consumers": Roots(functions=("tests.consumers:tool_path", "tests.consumers:_run", "tests.conftest:tool",
                                  "tests.conftest:aicr_binary"),
                       strings=("check_jsonschema", "pre_commit", "render_mermaid.mjs")),
    "conformance": Roots(modules=("tests.cel.conformance", "tests.cel.oracle")),
    "network": Roots(functions=("socket:create_server",), classes=("socketserver:BaseServer",),
                     strings=("docker-registry", "pre_commit")),
    "slow": Roots(functions=("subprocess:run", "subprocess:check_output", "subprocess:check_call", "subprocess:call",
                             "tests.conftest:run_process"),
                  classes=("subprocess:Popen",)),
}

SLOW_TESTS = frozenset({
    "test_generated_specs_pass_lint_as_written_for_every_resolvable_combination",
    "test_fast_check_decides_every_variant_like_the_model",
    "test_ten_thousand_pools_are_refused_quickly",
    "test_criteria_errors_never_suggest_a_value_that_cannot_resolve",
    "test_json_fast_path_refuses_with_the_yaml_loaders_message",
    "test_what_cel_go_accepts_is_not_refused",
    "test_the_reference_catalog_with_1_0_headers_resolves_exactly_as_the_alpha_one",
    "test_hostile_json_is_refused_like_yaml",
    "test_agent_cronjob_bundle_validates",
    "test_a_thousand_clusters_of_twenty_components_from_files",
    "test_the_sync_commit_message_names_pool_certification_and_driver_changes",
    "test_crd_schemas_cover_every_served_reference_crd_and_are_valid_draft7",
    "test_the_markdown_plan_of_a_bump_of_two_thousand_clusters_names_every_one",
    "test_releases_install_the_recipes_charts_with_the_units_values",
    "test_rule_sets_are_bounded",
})
"""In-process tests over a CPU second (whole corpora, thousands of clusters), by function name so a moved test
file keeps the mark: the budget's list names the next one to add."""


def _resolve(reference: str) -> Any:
    module, _, name = reference.partition(":")
    return getattr(importlib.import_module(module), name)


@dataclass
class _Graph:
    """Which markers each object reaches, walked once per object and shared by all tests."""

    functions: dict[int, set[str]] = field(default_factory=dict)
    classes: list[tuple[type, str]] = field(default_factory=list)
    modules: dict[str, str] = field(default_factory=dict)
    strings: dict[str, set[str]] = field(default_factory=dict)
    edges: dict[int, tuple[frozenset[str], tuple[Any, ...]]] = field(default_factory=dict)
    reached: dict[tuple[int, ...], frozenset[str]] = field(default_factory=dict)

    @classmethod
    def of(cls, roots: dict[str, Roots]) -> _Graph:
        graph = cls()
        for marker, root in roots.items():
            for ref in root.functions:
                graph.functions.setdefault(id(_resolve(ref)), set()).add(marker)
            graph.classes += [(_resolve(ref), marker) for ref in root.classes]
            graph.modules.update(dict.fromkeys(root.modules, marker))
            for text in root.strings:
                graph.strings.setdefault(text, set()).add(marker)
        return graph

    def markers(self, starts: Iterable[Any]) -> frozenset[str]:
        """The markers reachable from ``starts`` (functions, classes, modules, values)."""
        starts = tuple(starts)
        key = tuple(map(id, starts))
        if key not in self.reached:
            self.reached[key] = frozenset(self._search(starts))
        return self.reached[key]

    def _search(self, starts: tuple[Any, ...]) -> set[str]:
        found: set[str] = set()
        seen: set[int] = set()
        stack = list(starts)
        while stack:
            obj = stack.pop()
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            direct, children = self._step(obj)
            found |= direct
            stack.extend(children)
        return found

    def _step(self, obj: Any) -> tuple[frozenset[str], tuple[Any, ...]]:
        key = id(obj)
        if key not in self.edges:
            direct, children = self._walk(obj)
            self.edges[key] = (frozenset(direct), tuple(children))
        return self.edges[key]

    def _walk(self, obj: Any) -> tuple[set[str], list[Any]]:
        obj = _unwrap(obj)
        direct = set(self.functions.get(id(obj), ()))
        if isinstance(obj, type):
            direct |= {marker for root, marker in self.classes if issubclass(obj, root)}
        module = getattr(obj if isinstance(obj, type | types.FunctionType) else type(obj), "__module__", None)
        if isinstance(obj, types.ModuleType):
            module = obj.__name__
        if module in self.modules:
            direct.add(self.modules[module])
        if not _ours(obj):
            return direct, list(_contents(obj)) if isinstance(obj, dict | list | tuple | set | frozenset) else []
        if isinstance(obj, type):
            return direct, [_unwrap(value) for klass in obj.__mro__ if _ours(klass)
                            for value in vars(klass).values() if _callable_part(value) is not None]
        children: list[Any] = []
        for code in _codes(obj.__code__):
            for const in code.co_consts:
                if isinstance(const, str):
                    direct |= self.strings.get(const, set())
            children += _names(code, obj.__globals__)
        children += list(obj.__defaults__ or ())
        return direct, children


def _unwrap(obj: Any) -> Any:
    while True:
        inner = _callable_part(obj)
        if inner is None or inner is obj:
            return obj
        obj = inner


def _callable_part(value: Any) -> Any:
    """The function behind a method, property, cached or decorated function, or pytest fixture; None for data."""
    if isinstance(value, staticmethod | classmethod):
        return value.__func__
    if isinstance(value, property):
        return value.fget
    if hasattr(value, "__wrapped__"):
        return value.__wrapped__
    if isinstance(value, types.FunctionType | type):
        return value
    return None


def _ours(obj: Any) -> bool:
    """A function or class of the ``tests`` package: the only code walked into."""
    return isinstance(obj, type | types.FunctionType) and (obj.__module__ or "").split(".")[0] == "tests"


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _names(code: types.CodeType, globals_: dict[str, Any]) -> list[Any]:
    """What the names of ``code`` can be: its globals, and attributes of the modules it names (``consumers.x``,
    ``http.server.X``, and modules imported inside the function)."""
    spaces: list[dict[str, Any]] = [globals_]
    modules = [globals_.get(name) for name in code.co_names] + [sys.modules.get(name) for name in code.co_names]
    seen: set[str] = set()
    while modules:
        module = modules.pop()
        if not isinstance(module, types.ModuleType) or module.__name__ in seen:
            continue
        seen.add(module.__name__)
        spaces.append(vars(module))
        modules += [vars(module).get(name) for name in code.co_names]
    return [space[name] for name in code.co_names for space in spaces if name in space]


def _contents(value: Any, depth: int = 3) -> Iterator[Any]:
    """A few of a data value's items, so a test that reads a global list of suite cases reaches their class."""
    if depth == 0:
        return
    for item in itertools.islice(value.values() if isinstance(value, dict) else value, 3):
        yield item
        if isinstance(item, dict | list | tuple | set | frozenset):
            yield from _contents(item, depth - 1)


@functools.cache
def _graph() -> _Graph:
    return _Graph.of(ROOTS)


def uses(item: pytest.Item) -> frozenset[str]:
    """The markers ``item`` earns from what it reaches."""
    starts: list[Any] = [getattr(item, "function", None)]
    info = getattr(item, "_fixtureinfo", None)
    if info is not None:
        starts += [definition.func for name in item.fixturenames
                   for definition in info.name2fixturedefs.get(name, ())]
    callspec = getattr(item, "callspec", None)
    params = list(callspec.params.values()) if callspec is not None else []
    named = {"slow"} if getattr(item, "originalname", item.name) in SLOW_TESTS else set()
    return _graph().markers(start for start in starts if start is not None) | _graph().markers(params) | named


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for marker in sorted(uses(item) - {mark.name for mark in item.iter_markers()}):
            item.add_marker(marker)


@dataclass
class _Timing:
    """CPU seconds (this process and the children it waited for) and wall seconds of each unmarked test: CPU
    time is what the budget checks, as it does not grow when other work shares the machine."""

    cpu: dict[str, float] = field(default_factory=dict)
    wall: dict[str, float] = field(default_factory=dict)

    def over(self) -> tuple[float, list[tuple[float, float, str]]] | None:
        budget = os.environ.get(BUDGET_ENV)
        if not budget:
            return None
        return float(budget), sorted(((self.cpu[nodeid], self.wall[nodeid], nodeid) for nodeid in self.cpu),
                                     reverse=True)


_timing = _Timing()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Iterator[object]:
    if any(item.get_closest_marker(marker) for marker in MARKERS):
        return (yield)
    before = os.times()
    try:
        return (yield)
    finally:
        after = os.times()
        _timing.cpu[item.nodeid] = sum(after[:4]) - sum(before[:4])
        _timing.wall[item.nodeid] = after.elapsed - before.elapsed


def pytest_sessionfinish(session: pytest.Session) -> None:
    found = _timing.over()
    if found and any(cpu > found[0] for cpu, _, _ in found[1]) and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    found = _timing.over()
    if found is None:
        return
    budget, timed = found
    over = [entry for entry in timed if entry[0] > budget]
    terminalreporter.write_sep("=", f"slowest tests without {', '.join(MARKERS)} ({BUDGET_ENV}={budget:g} CPU s)")
    for cpu, wall, nodeid in timed[:max(SLOWEST_SHOWN, len(over))]:
        terminalreporter.write_line(f"{cpu:6.2f} CPU s {wall:6.2f} s {'OVER ' if cpu > budget else ''}{nodeid}")
    terminalreporter.write_line(f"{len(timed)} unmarked tests: {sum(cpu for cpu, _, _ in timed):.1f} CPU s, "
                                f"{sum(wall for _, wall, _ in timed):.1f} s")
    if over:
        terminalreporter.write_line(f"{len(over)} unmarked tests took more than {budget:g} CPU s: mark what they use "
                                    f"(tests/markers.py ROOTS, SLOW_TESTS)", red=True)
