"""Dependency graph of components: deployment order (Kahn, alphabetical ties) and cycles."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError

Graph = Mapping[str, Sequence[str]]


def _find_cycle(graph: Graph, nodes: set[str]) -> list[str]:
    """One dependency cycle among ``nodes`` (each of which is on or behind a cycle)."""
    for start in sorted(nodes):
        path: list[str] = []
        on_path: dict[str, int] = {}
        node: str | None = start
        while node is not None and node not in on_path:
            on_path[node] = len(path)
            path.append(node)
            node = next((dep for dep in sorted(graph[node]) if dep in nodes), None)
        if node is not None:
            return [*path[on_path[node]:], node]
    return sorted(nodes)


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
        raise CycleError(_find_cycle(graph, set(graph) - set(order)))
    return order

