"""``--nodes``: Node objects, reduced to what fault-quarantine caches (metadata and spec)."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from aicr_gen.cel import to_cel
from aicr_gen.edges.inputs import read_input
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.rules.source import _describe, _files, _get, _parse_file, _Source
from aicr_gen.yaml import FieldPath


def load_nodes(path: str | None) -> dict[str, dict[str, Any]]:
    """Nodes by name: a Node, a List/NodeList or a YAML/JSON list, in a file or a folder. As
    fault-quarantine caches them: metadata and spec only."""
    if path is None:
        return {}
    nodes: dict[str, dict[str, Any]] = {}
    for _name, file in _files(Path(path), "--nodes"):
        source = _parse_file(read_input(str(file), "--nodes"), str(file))
        items: list[tuple[FieldPath, Any]] = []
        for root, data in source.documents():
            if isinstance(data, list):
                items += [((*root, index), item) for index, item in enumerate(data)]
            elif isinstance(data, Mapping) and isinstance(data.get("items"), list):
                items += [((*root, "items", index), item) for index, item in enumerate(data["items"])]
            else:
                items.append((root, data))
        for item_path, item in items:
            name = _node_name(source, item_path, item)
            if name in nodes:
                raise source.error(item_path, f"node {name!r} is given twice; keep one")
            nodes[name] = node_view(item)
    return nodes


def _node_name(source: _Source, path: FieldPath, item: Any) -> str:
    if not isinstance(item, Mapping) or item.get("kind", "Node") != "Node":
        kind = item.get("kind") if isinstance(item, Mapping) else None
        raise source.error(path, f"not a Node ({'a ' + str(kind) if kind else _describe(item)})"
                           "; give Node objects, e.g. `kubectl get node NAME -o yaml`")
    name = _get(item, ("metadata", "name"))
    if not isinstance(name, str) or not name:
        raise source.error(path, "a Node without metadata.name")
    return name


def node_view(node: Mapping[str, Any]) -> dict[str, Any]:
    """What fault-quarantine's Node rules see: the object without status (its informer caches metadata and
    spec) and without managedFields."""
    view = {key: value for key, value in node.items() if key != "status"}
    metadata = view.get("metadata")
    if isinstance(metadata, Mapping):
        view["metadata"] = {key: value for key, value in metadata.items() if key != "managedFields"}
    try:
        converted: dict[str, Any] = to_cel(view)
    except ValueError as err:
        raise InvalidInputError(f"node {_get(node, ('metadata', 'name'))!r}: {err}") from None
    return converted


def bare_node(name: str) -> dict[str, Any]:
    """A Node of that name with no labels, for events whose node is not given."""
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": {}, "annotations": {}},
            "spec": {}}
