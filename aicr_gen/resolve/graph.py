"""Dependency graph of components: deployment order (Kahn, alphabetical ties) and cycles."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError

Graph = Mapping[str, Sequence[str]]


def _find_cycle(graph: Graph) -> list[str]:
    """The first cycle a depth-first search meets, visiting components by name and dependencies in
    declared order (as AICR does), with the first component repeated at the end."""
    done: set[str] = set()
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        stack.append(node)
        for dep in graph[node]:
            if dep in stack:
                return [*stack[stack.index(dep):], dep]
            if dep not in done:
                found = visit(dep)
                if found:
                    return found
        stack.pop()
        done.add(node)
        return None

    for node in sorted(graph):
        if node not in done:
            found = visit(node)
            if found:
                return found
    return []


class CycleError(InvalidInputError):
    """A dependency cycle; ``cycle`` lists it with the first component repeated at the end."""

    def __init__(self, cycle: list[str]) -> None:
        super().__init__(f"circular dependencies exist: {' -> '.join(cycle)}; remove one of these dependencyRefs")
        self.cycle = cycle


def deployment_order(graph: Graph) -> list[str]:
    """Topological order where every component comes after its dependencies; among the components
    ready at a step, the alphabetically first goes next. ``graph`` maps each component to its
    dependencies, which must all be keys of ``graph``."""
    remaining = {name: len(set(deps)) for name, deps in graph.items()}
    dependents: dict[str, list[str]] = {name: [] for name in graph}
    for name, deps in graph.items():
        for dep in set(deps):
            dependents[dep].append(name)
    ready = [name for name, count in remaining.items() if count == 0]
    heapq.heapify(ready)
    order: list[str] = []
    while ready:
        name = heapq.heappop(ready)
        order.append(name)
        for dependent in dependents[name]:
            remaining[dependent] -= 1
            if remaining[dependent] == 0:
                heapq.heappush(ready, dependent)
    if len(order) != len(graph):
        raise CycleError(_find_cycle(graph))
    return order

