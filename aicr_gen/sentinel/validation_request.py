"""NVSentinel ValidationRequest (``nvsentinel.nvidia.com/v1alpha1``, cluster-scoped): run lifecycle tests on
named nodes. lifecycle-manager runs each test through its provider (a Job, an NVCRE Certification) and,
when every test passes, lifts the scheduling gate (the cordon) it guards.

What its admission webhook would refuse is refused here, before anything is written: no nodes, empty or
repeated node names, repeated tests, and, given our NVSentinel values, a test its lifecycle config does
not define (or no tests where it has no defaults). Node names must be DNS-1123 subdomains, as Node names
are. ``spec.nodes`` and ``spec.tests`` are immutable, so the default name is derived from both.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.text.kube_names import is_dns_label, is_dns_subdomain
from aicr_gen.yaml import Document, shorten

API_VERSION = "nvsentinel.nvidia.com/v1alpha1"
KIND = "ValidationRequest"
MAX_NAME = 253



@dataclass(frozen=True)
class LifecycleTests:
    """The tests a lifecycle-manager config defines, and its default tests, read from ``source``."""

    source: str
    tests: tuple[str, ...]
    default_tests: tuple[str, ...]


def lifecycle_tests(doc: Document) -> LifecycleTests:
    """The lifecycle tests in NVSentinel values (ours, or a component's values that include ours)."""
    data = doc.data if isinstance(doc.data, dict) else {}
    switch = _at(data, ("global", "lifecycleManager", "enabled"))
    if switch is not True:
        raise doc.error(("global", "lifecycleManager", "enabled"), "the lifecycle manager is not enabled in "
                        "these values, so nothing would run the request; write values with "
                        "'aicr-gen sentinel values --mode quarantine --lifecycle'")
    config_path = ("lifecycle-manager", "config")
    tests = _at(data, (*config_path, "tests"))
    if not isinstance(tests, dict) or not tests:
        raise doc.error((*config_path, "tests"), "no lifecycle tests are defined (a "
                        "mapping of test name to provider settings is expected)")
    defaults = _at(data, (*config_path, "defaultTests"))
    if defaults is None:
        defaults = []
    if not isinstance(defaults, list) or not all(isinstance(test, str) for test in defaults):
        raise doc.error((*config_path, "defaultTests"), "expected a list of test names")
    return LifecycleTests(doc.source, tuple(str(name) for name in tests), tuple(defaults))


def _at(data: Any, path: Sequence[str]) -> Any:
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    return data


def build(nodes: Sequence[str], tests: Sequence[str] = (), name: str | None = None,
          lifecycle: LifecycleTests | None = None) -> dict[str, Any]:
    """The ValidationRequest for ``nodes`` running ``tests`` (none: the lifecycle config's defaultTests),
    named ``name`` or, by default, after its first node and a digest of its spec."""
    _check_nodes(nodes)
    _check_tests(tests, lifecycle)
    if name is None:
        name = default_name(nodes, tests)
    elif not _is_subdomain(name):
        raise InvalidInputError(f"--name {shorten(repr(name))}: not a valid object name (lowercase letters, "
                                f"digits, '-' and '.', starting and ending alphanumeric, at most {MAX_NAME})")
    spec: dict[str, Any] = {"nodes": [{"name": node} for node in nodes]}
    if tests:
        spec["tests"] = list(tests)
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "labels": {"app.kubernetes.io/managed-by": "aicr-gen"}},
        "spec": spec,
    }


def default_name(nodes: Sequence[str], tests: Sequence[str]) -> str:
    """``<first node>[-plus-<n>]-validation-<12 hex of the spec>``, cut to fit the 253-character limit.
    Deterministic, so writing the same request twice yields the same object; a new request for the same
    nodes and tests needs the old one deleted or another --name."""
    spec = json.dumps({"nodes": list(nodes), "tests": list(tests)}, separators=(",", ":"))
    suffix = f"-validation-{hashlib.sha256(spec.encode()).hexdigest()[:12]}"
    prefix = nodes[0] if len(nodes) == 1 else f"{nodes[0]}-plus-{len(nodes) - 1}"
    return prefix[:MAX_NAME - len(suffix)].rstrip("-.") + suffix


def _is_subdomain(text: str) -> bool:
    return is_dns_subdomain(text)


def _check_nodes(nodes: Sequence[str]) -> None:
    if not nodes:
        raise InvalidInputError("give at least one --node to validate")
    seen: set[str] = set()
    for node in nodes:
        if not node:
            raise InvalidInputError("--node '': a node name is empty; give the node's name")
        if not _is_subdomain(node):
            raise InvalidInputError(
                f"--node {shorten(repr(node))}: not a valid node name (a DNS-1123 subdomain: lowercase letters, "
                f"digits, '-' and '.', starting and ending alphanumeric, at most {MAX_NAME} characters)")
        if node in seen:
            raise InvalidInputError(f"--node {node}: given twice; list each node once")
        seen.add(node)


def _check_tests(tests: Sequence[str], lifecycle: LifecycleTests | None) -> None:
    seen: set[str] = set()
    for test in tests:
        if lifecycle is not None and test not in lifecycle.tests:
            raise InvalidInputError(f"--test {shorten(repr(test))}: not a test of the lifecycle config in "
                                    f"{lifecycle.source}; valid tests: {', '.join(lifecycle.tests)}")
        if not is_dns_label(test):
            raise InvalidInputError(f"--test {shorten(repr(test))}: not a test name (lowercase letters, digits "
                                    "and '-', at most 63 characters)")
        if test in seen:
            raise InvalidInputError(f"--test {test}: given twice; list each test once")
        seen.add(test)
    if lifecycle is not None and not tests and not lifecycle.default_tests:
        raise InvalidInputError(f"no --test given and the lifecycle config in {lifecycle.source} has no "
                                f"defaultTests; name tests with --test (valid: {', '.join(lifecycle.tests)})")
