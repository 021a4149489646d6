"""``aicr_gen/resolve/graph.py``: deployment order (dependencies first, alphabetical ties) and the cycle named as
AICR names it."""

from __future__ import annotations

import itertools

import pytest

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.graph import CycleError, deployment_order


def test_dependencies_come_first_and_ties_go_alphabetically() -> None:
    graph = {"operator": ["cert-manager", "nfd"], "nfd": [], "cert-manager": [], "dynamo": ["operator"], "a": []}
    assert deployment_order(graph) == ["a", "cert-manager", "nfd", "operator", "dynamo"]


def test_every_component_follows_its_dependencies_whatever_the_declaration_order() -> None:
    graph = {"d": ["b", "c"], "c": ["a"], "b": ["a"], "a": [], "e": ["d", "a"]}
    for keys in itertools.permutations(graph):
        shuffled = {key: graph[key] for key in keys}
        order = deployment_order(shuffled)
        assert order == ["a", "b", "c", "d", "e"]
        assert all(order.index(dep) < order.index(name) for name, deps in graph.items() for dep in deps)


def test_a_dependency_named_twice_counts_once() -> None:
    assert deployment_order({"b": ["a", "a"], "a": []}) == ["a", "b"]


def test_a_cycle_is_named_with_its_first_component_repeated() -> None:
    with pytest.raises(CycleError) as err:
        deployment_order({"a": ["b"], "b": ["c"], "c": ["a"], "d": []})
    assert err.value.cycle == ["a", "b", "c", "a"]
    assert isinstance(err.value, InvalidInputError)
    assert str(err.value) == ("circular dependencies exist: a -> b -> c -> a; remove one of these dependencyRefs")


def test_the_cycle_found_is_the_first_a_search_by_name_meets() -> None:
    with pytest.raises(CycleError) as err:  # x depends on the cycle y <-> z: the cycle, not the path into it
        deployment_order({"x": ["y"], "y": ["z"], "z": ["y"]})
    assert err.value.cycle == ["y", "z", "y"]
    with pytest.raises(CycleError) as self_loop:
        deployment_order({"a": ["a"]})
    assert self_loop.value.cycle == ["a", "a"]
