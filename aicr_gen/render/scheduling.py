"""Where a cluster's pods run, written into chart values at bundle time as AICR's bundler writes them.

The registry names, per component, the value paths that take the system and accelerated (GPU) node selectors
and tolerations, the workload selector, the workload-gate taint, the estimated node count and the storage
classes (``nodeScheduling``, ``podScheduling``, ``storageClassPaths``, ``sharedStorageClassPaths``). AICR's
rules (pkg/bundler/bundler.go ``applyNodeSchedulingOverrides``, pkg/component/overrides.go, pkg/snapshotter
``ParseTolerations``/``ParseTaint``, AICR 8703d8cf):

- tolerations default to one wildcard ``{operator: Exists}``, for system and accelerated nodes alike, so every
  toleration path of every component gets it unless the cluster names keyed tolerations;
- node selectors are written only when given, and replace what the values had;
- a path the recipe's overrides set to an empty value (null, ``[]``, ``{}``) is left alone (the overlay opted
  out); a path the recipe's overrides or a ``--set`` already fill keeps its tolerations, the injected ones
  appended after them;
- the taint string, node count and storage classes are set like ``--set`` values; a storage class path that a
  ``--set`` names keeps the user's value.

Pure: values in, new values out.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.merge import copy_tree
from aicr_gen.spec.overrides import typed
from aicr_gen.spec.scheduling import Scheduling

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def value_at(values: Mapping[str, Any], path: str) -> tuple[bool, Any]:
    """``(found, value)`` at a dotted path, through maps only."""
    node: Any = values
    for part in path.split("."):
        if not isinstance(node, Mapping) or part not in node:
            return False, None
        node = node[part]
    return True, node


def _parent(values: dict[str, Any], path: str, *, strict: bool) -> tuple[dict[str, Any], str] | None:
    """The map holding a dotted path's last key, created on the way; a non-map on the way is replaced, or with
    ``strict`` ends the walk (``None``)."""
    *parents, key = path.split(".")
    node = values
    for part in parents:
        child = node.get(part)
        if not isinstance(child, dict):
            if child is not None and strict:
                return None
            child = node[part] = {}
        node = child
    return node, key


def set_at(values: dict[str, Any], path: str, value: Any, *, strict: bool = False) -> bool:
    """Set ``value`` at a dotted path in place; False when ``strict`` and a non-map is in the way."""
    found = _parent(values, path, strict=strict)
    if found is None:
        return False
    found[0][found[1]] = value
    return True


def _is_empty(value: Any) -> bool:
    return value is None or (isinstance(value, list | dict) and not value)


def _policy(paths: Sequence[str], overrides: Mapping[str, Any], set_paths: frozenset[str]) -> tuple[set[str], set[str]]:
    """``(opted out, appended)`` paths: the recipe's overrides set to an empty value opt a path out; a path its
    overrides or a ``--set`` fill takes the injected tolerations after its own."""
    opt_out: set[str] = set()
    append: set[str] = set()
    for path in paths:
        found, value = value_at(overrides, path)
        if found and _is_empty(value):
            opt_out.add(path)
        elif found or path in set_paths:
            append.add(path)
    return opt_out, append


def _paths(entry: Mapping[str, Any], *keys: str) -> list[str]:
    node: Any = entry
    for key in keys:
        node = node.get(key) if isinstance(node, Mapping) else None
    return list(node or [])


def apply(values: Mapping[str, Any], entry: Mapping[str, Any] | None, *, overrides: Mapping[str, Any],
          set_paths: frozenset[str], scheduling: Scheduling, opted_out: frozenset[str] = frozenset()) -> dict[str, Any]:
    """``values`` with the cluster's scheduling written into the registry ``entry``'s paths. ``overrides``:
    the recipe's overrides of the component; ``set_paths``: the dotted paths its ``--set`` values name;
    ``opted_out``: paths left to install time (``--dynamic``)."""
    out: dict[str, Any] = copy_tree(dict(values))
    if not entry:
        return out
    system_selector = _paths(entry, "nodeScheduling", "system", "nodeSelectorPaths")
    system_toleration = _paths(entry, "nodeScheduling", "system", "tolerationPaths")
    gpu_selector = _paths(entry, "nodeScheduling", "accelerated", "nodeSelectorPaths")
    gpu_toleration = _paths(entry, "nodeScheduling", "accelerated", "tolerationPaths")
    workload = _paths(entry, "podScheduling", "workload", "workloadSelectorPaths")
    opt_out, append = _policy([*system_selector, *system_toleration, *gpu_selector, *gpu_toleration, *workload],
                              overrides, set_paths)
    opt_out |= opted_out

    def selectors(paths: list[str], selector: tuple[tuple[str, str], ...]) -> None:
        for path in paths:
            if selector and path not in opt_out:
                set_at(out, path, dict(selector))

    def tolerations(paths: list[str], given: tuple[Mapping[str, Any], ...]) -> None:
        for path in paths:
            if not given or path in opt_out:
                continue
            items = [dict(item) for item in given]
            found, current = value_at(out, path)
            if path in append and found and isinstance(current, list):
                items = [*current, *items]
            set_at(out, path, items)

    selectors(system_selector, scheduling.system_node_selector)
    tolerations(system_toleration, scheduling.system_tolerations)
    selectors(gpu_selector, scheduling.accelerated_node_selector)
    tolerations(gpu_toleration, scheduling.accelerated_tolerations)
    selectors(workload, scheduling.workload_selector)
    # set as --set values are (pkg/component ApplyMapOverrides): a non-map on the way leaves the path unset
    if scheduling.workload_gate:
        for path in _paths(entry, "nodeScheduling", "accelerated", "taintStrPaths"):
            set_at(out, path, typed(scheduling.workload_gate), strict=True)
    if scheduling.nodes > 0:
        for path in _paths(entry, "nodeScheduling", "nodeCountPaths"):
            set_at(out, path, scheduling.nodes, strict=True)
    for path in _paths(entry, "storageClassPaths"):
        if scheduling.storage_class and path not in set_paths:
            set_at(out, path, typed(scheduling.storage_class), strict=True)
    for path in _paths(entry, "sharedStorageClassPaths"):  # AICR refuses what it cannot write here
        if scheduling.shared_storage_class and path not in set_paths and not set_at(
                out, path, typed(scheduling.shared_storage_class), strict=True):
            raise InvalidInputError(f"--shared-storage-class: {path} goes through a value that is not a map; "
                                    "fix the override that set it")
    return out
