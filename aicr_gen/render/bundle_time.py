"""What AICR's bundler adds to a recipe at bundle time, beyond scheduling (AICR 8703d8cf, pkg/bundler/bundler.go
and pkg/bundler/validations/checks.go), so a bundle deploys what ``aicr bundle`` deploys:

- the DRA driver's pods carry ``aicr.run/gpu-operator-chart-version`` (the GPU Operator's chart version) when
  both are deployed, so the DRA pods restart when the operator moves (``injectDRAChartVersionAnnotation``);
- agentgateway's inference gateway is scoped to the private ranges when ``allowedSourceRanges`` is unset,
  refused when it is not a list of CIDRs, and warned about when it holds an any-source range
  (``resolveAgentgatewayExposure``);
- on GKE each registry component with ``gkeCriticalPriority`` gets the ``aicr-gke-critical-pods``
  ResourceQuota among its pre-manifests: GKE admits pods of the critical priority classes only in a namespace
  with such a quota (``injectGKECriticalPriorityQuotas``);
- the registry's ``validations``: an ``error`` refuses the bundle, a ``warning`` or ``info`` is reported.

Pure: values in, values and messages out.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError
from aicr_gen.render.components import DRA_DRIVERS, GPU_OPERATORS
from aicr_gen.resolve.refs import is_enabled

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aicr_gen.spec.scheduling import Scheduling
DRA_ANNOTATION = "aicr.run/gpu-operator-chart-version"
AGENTGATEWAY = "agentgateway"
SOURCE_RANGES = "allowedSourceRanges"
PRIVATE_RANGES = ("10.0.0.0/8", "172.16.0.0/12", "192.168.0.0/16")
"""RFC 1918: reachable from the cluster and privately routed peers, not from the internet."""
GKE_QUOTA_NAME = "aicr-gke-critical-pods"
GKE_QUOTA_FILE = "gke-critical-pods-quota.yaml"
_QUOTA_PODS_PER_NODE = 32
_QUOTA_PODS_FLOOR = 32


def dra_annotation(values: dict[str, dict[str, Any]], refs: Sequence[Mapping[str, Any]]) -> None:
    """Annotate the DRA driver's controller and kubelet-plugin pods with the GPU Operator's chart version,
    in place (``values``: component -> values of the components deployed)."""
    operator = next((ref for ref in refs if ref["name"] in GPU_OPERATORS), None)
    dra = next((ref["name"] for ref in refs if ref["name"] in DRA_DRIVERS), None)
    if operator is None or dra is None or not operator.get("version"):
        return
    target = values.setdefault(dra, {})
    for section in ("controller", "kubeletPlugin"):
        part = target[section] if isinstance(target.get(section), dict) else {}
        annotations = part["podAnnotations"] if isinstance(part.get("podAnnotations"), dict) else {}
        target[section] = {**part, "podAnnotations": {**annotations, DRA_ANNOTATION: operator["version"]}}


def _cidr(text: str) -> tuple[bool, bool]:
    """``(valid, any source)`` of a CIDR as AICR reads one (pkg/netutil: canonical prefix, no IPv4-mapped
    IPv6)."""
    import ipaddress

    try:
        network = ipaddress.ip_network(text.strip(), strict=True)
    except ValueError:
        return False, False
    if isinstance(network, ipaddress.IPv6Network) and network.network_address.ipv4_mapped is not None:
        return False, False
    return True, network.prefixlen == 0


def agentgateway_exposure(values: dict[str, dict[str, Any]]) -> list[str]:
    """Scope agentgateway's LoadBalancer in place; returns the warnings."""
    gateway = values.get(AGENTGATEWAY)
    if gateway is None:
        return []
    ranges = gateway.get(SOURCE_RANGES)
    fix = f"--set-json {AGENTGATEWAY}:{SOURCE_RANGES}='[\"<cidr>\"]'"
    if ranges is None or ranges == []:
        gateway[SOURCE_RANGES] = list(PRIVATE_RANGES)
        return [f"{AGENTGATEWAY}: {SOURCE_RANGES} was not set; the inference gateway is scoped to the private ranges "
                f"({', '.join(PRIVATE_RANGES)}), not the internet; to admit other clients set {fix}, or "
                "[\"0.0.0.0/0\"] to expose it publicly"]
    problem = f"got a {type(ranges).__name__}, not a list" if not isinstance(ranges, list) else ""
    open_to_all = False
    for item in ranges if isinstance(ranges, list) else []:
        valid, any_source = _cidr(item) if isinstance(item, str) else (False, False)
        if not valid:
            problem = problem or (f"{item!r} is not a valid CIDR" if isinstance(item, str) else
                                  f"entry {item!r} is not a string")
        open_to_all = open_to_all or any_source
    if problem:
        raise InvalidInputError(f"{AGENTGATEWAY}: {SOURCE_RANGES} must be a list of CIDR strings ({problem}); set it "
                                f"with {fix} (a --set value renders an invalid Service)")
    if open_to_all:
        return [f"{AGENTGATEWAY}: the inference gateway is opened to the whole internet ({SOURCE_RANGES} holds an "
                "any-source CIDR such as 0.0.0.0/0); scope it to trusted networks unless that is intended"]
    return []


def gke_quota(namespace: str, nodes: int) -> bytes:
    """The ResourceQuota that lets pods of the critical priority classes run in ``namespace`` on GKE: 32 pods a
    node, at least 32."""
    from aicr_gen.yaml import dump

    pods = max(_QUOTA_PODS_FLOOR, nodes * _QUOTA_PODS_PER_NODE)
    quota = {"apiVersion": "v1", "kind": "ResourceQuota",
             "metadata": {"name": GKE_QUOTA_NAME, "namespace": namespace},
             "spec": {"hard": {"pods": str(pods)},
                      "scopeSelector": {"matchExpressions": [
                          {"operator": "In", "scopeName": "PriorityClass",
                           "values": ["system-node-critical", "system-cluster-critical"]}]}}}
    return dump(quota).encode()


def needs_gke_quota(recipe: Mapping[str, Any], entry: Mapping[str, Any] | None) -> bool:
    """Whether a component of ``recipe`` gets the GKE critical-priority quota."""
    criteria = recipe.get("criteria") or {}
    return criteria.get("service") == "gke" and bool(entry and entry.get("gkeCriticalPriority"))


# ---------------------------------------------------------------------------------------------- profile lock


ALLOCATION_POLICY = {"gpu-operator": ("devicePlugin.enabled",), "gpu-operator-ocp": ("devicePlugin.enabled",),
                     "nvidia-dra-driver-gpu": ("gpuResourcesEnabledOverride", "resources.gpus.enabled"),
                     "nvidia-dra-driver-gpu-ocp": ("gpuResourcesEnabledOverride", "resources.gpus.enabled")}
"""The values that decide which component advertises whole GPUs (AICR pkg/allocpolicy ``Descriptor``)."""
_PATH = re.compile(r"^[^.\s]+(\.[^.\s]+)*\Z")


def owned_paths(recipe: Mapping[str, Any], source: str = "recipe") -> dict[str, list[str]]:
    """Component -> value paths the recipe's selected profile owns (``metadata.selectedProfile.ownedPaths``),
    widened as AICR widens them (``EffectiveLockSet``): when the profile names an external GPU advertiser or owns
    an allocation-policy value, every deployed allocation-policy component's presence and policy values too."""
    profile = (recipe.get("metadata") or {}).get("selectedProfile") or {}
    if not isinstance(profile, Mapping) or not profile:
        return {}
    owned = profile.get("ownedPaths") or {}
    where = f"{source}: metadata.selectedProfile.ownedPaths"
    if not isinstance(owned, Mapping) or not all(
            isinstance(paths, list) and all(isinstance(path, str) and _PATH.match(path) for path in paths)
            for paths in owned.values()):
        raise InvalidInputError(f"{where} must map each component to a list of dotted value paths; regenerate the "
                                "recipe")
    lock = {str(name): list(paths) for name, paths in owned.items()}
    closure = profile.get("advertiser") == "external" or any(
        path != "enabled" and any(_intersect(path, key) for key in ALLOCATION_POLICY.get(name, ()))
        for name, paths in lock.items() for path in paths)
    if closure:
        deployed = {ref["name"] for ref in recipe.get("componentRefs") or [] if is_enabled(ref)}
        for name, keys in ALLOCATION_POLICY.items():
            if name in deployed:
                lock[name] = sorted({*lock.get(name, []), "enabled", *keys})
    return lock


def _observe(values: Mapping[str, Any], path: str) -> tuple[str, str]:
    """AICR's ``ObserveValuePath``: ``present`` with the value as its serialisation (so ``1`` is not ``true``),
    ``absent``, or ``blocked`` by a non-map on the way."""
    import json

    node: Any = values
    parts = path.split(".")
    for index, part in enumerate(parts):
        if part not in node:
            return "absent", ""
        if index == len(parts) - 1:
            return "present", json.dumps(node[part], sort_keys=True, default=str)
        node = node[part]
        if not isinstance(node, Mapping):
            return "blocked", ""
    return "absent", ""


def _intersect(first: str, second: str) -> bool:
    """The same path, or one an ancestor of the other."""
    left, right = first.split("."), second.split(".")
    return left[:len(right)] == right[:len(left)]


def allocation_policy(dynamic: Mapping[str, Sequence[str]], set_paths: Mapping[str, Sequence[str]]) -> list[str]:
    """AICR's rule for the values that decide the GPU advertiser (``enforceAllocationPolicyOverrides``): left to
    install time they are refused; set at bundle time they are warned about (the recipe should choose)."""
    warnings: list[str] = []
    for name, selectors in sorted(ALLOCATION_POLICY.items()):
        keys = (*selectors, "enabled")
        for path in dynamic.get(name, ()):
            key = next((key for key in keys if _intersect(path, key)), None)
            if key is not None:
                raise InvalidInputError(f"--dynamic {name}:{path}: {key!r} decides which component advertises whole "
                                        "GPUs and is verified from the recipe; it cannot be left to install time; set "
                                        "it in a catalog overlay instead")
        given = sorted(path for path in set_paths.get(name, ()) if any(_intersect(path, key) for key in keys))
        if given:
            warnings.append(f"deprecated: a bundle-time override of the GPU allocation-policy value(s) "
                            f"{', '.join(given)} of {name!r}: validation reads the policy from the recipe and will "
                            "report this as drift; choose the allocation mode in a catalog overlay")
    return warnings


def profile_lock(recipe: Mapping[str, Any], baseline: Mapping[str, Mapping[str, Any]],
                 values: Mapping[str, Mapping[str, Any]], dynamic: Mapping[str, Sequence[str]]) -> None:
    """A profile-bearing recipe (AICR v1alpha3 / v1beta2) owns some values of some components: a bundle may not
    change them (``--set``, ``--set-json``, scheduling), leave them to install time, or drop the component
    (AICR pkg/recipe ``ValidateProfileLock``). ``baseline``: the recipe's own values of the owning
    components; ``values``: the deployed components' bundle values."""
    profile = (recipe.get("metadata") or {}).get("selectedProfile") or {}
    chosen = f"{profile.get('name')}={profile.get('value')}"
    fix = f"choose another profile (aicr-gen recipe --profile {profile.get('name')}=VALUE) instead"
    for component, paths in sorted(owned_paths(recipe).items()):
        if component not in values:
            raise InvalidInputError(f"component {component!r} is owned by the recipe's profile {chosen}: it "
                                    f"cannot be dropped or missing; {fix}")
        for path in paths:
            for left in dynamic.get(component, ()):
                if _intersect(path, left):
                    raise InvalidInputError(f"--dynamic {component}:{left}: the recipe's profile {chosen} owns "
                                            f"{component}.{path}; it cannot be left to install time")
            if path == "enabled":
                continue
            want, got = _observe(baseline.get(component, {}), path), _observe(values[component], path)
            if want[0] == "blocked":
                raise InvalidInputError(f"{component}.{path}, owned by the recipe's profile {chosen}, goes through "
                                        "a value that is not a map in the recipe; regenerate the recipe")
            if want != got:
                raise InvalidInputError(f"{component}.{path} is owned by the recipe's profile {chosen} "
                                        f"({want[1] or 'absent'} there); a bundle may not change it; drop the "
                                        f"override, or {fix}")


# ------------------------------------------------------------------------------------------------ validations


def _matches(criteria: Mapping[str, Any], conditions: Mapping[str, Sequence[str]]) -> bool:
    """AICR's ``checkConditions``: every named criterion is one of the listed values (an unset or ``any``
    criterion matches all)."""
    for key, expected in conditions.items():
        if key not in ("intent", "service", "accelerator", "os", "platform"):
            continue
        actual = str(criteria.get(key) or "")
        if actual not in ("", "any") and not any(actual == value for value in expected if value not in ("", "any")):
            return False
    return True


def _wildcard_toleration(name: str, scheduling: Scheduling) -> str | None:
    tolerations = scheduling.accelerated_tolerations
    if tolerations and all(item.get("key") for item in tolerations):
        return None
    return f"{name} renders a wildcard (keyless) accelerated-node toleration"


def _host_mofed(name: str, disabled: frozenset[str], set_values: Mapping[tuple[str, str], Any]) -> str | None:
    del name
    if "network-operator" not in disabled or set_values.get(("gpu-operator", "driver.rdma.useHostMofed")) is False:
        return None
    return ("gpu-operator: network-operator is disabled but driver.rdma.useHostMofed is not set to false — add --set "
            "gpuoperator:driver.rdma.useHostMofed=false to avoid MOFED-related errors")


COHERENCE = frozenset(("CheckDriverOwnershipCoherence", "CheckNVSentinelDriverLabelDetectable",
                       "CheckNVSentinelRuntimeClassCoherence", "CheckMariaDBOperatorOwnershipCoherence"))
"""AICR's checks of effective values (``coherence.CHECKS``)."""


def validations(recipe: Mapping[str, Any], registry: Mapping[str, Mapping[str, Any]], deployed: Sequence[str], *,
                scheduling: Scheduling, disabled: frozenset[str], set_values: Mapping[tuple[str, str], Any],
                values: Mapping[str, Mapping[str, Any]],
                dynamic: Mapping[str, Sequence[str]]) -> list[tuple[str, str]]:
    """Run the registry's ``validations`` of every ``deployed`` component: ``(severity, message)`` of each
    warning and info; an error refuses the bundle. ``disabled``: components switched off with ``--set
    COMP:enabled=false``; ``set_values``: ``(component, dotted path) -> value`` of the ``--set`` values;
    ``values``: component -> effective values of the deployed components; ``dynamic``: component -> its
    ``--dynamic`` paths."""
    criteria = recipe.get("criteria") or {}
    found: list[tuple[str, str]] = []
    for name in deployed:
        for check in (registry.get(name) or {}).get("validations") or []:
            function = check["function"]
            if not _matches(criteria, check.get("conditions") or {}):
                continue
            if function in COHERENCE:  # imported only for a registry that asks for them
                from aicr_gen.render import coherence

                inputs = coherence.Inputs(recipe, values, dynamic, registry)
                texts, refusals = coherence.CHECKS[function](name, inputs)
                if refusals:
                    raise InvalidInputError(f"{check['message']}: {refusals[0]}" if check.get("message")
                                            else refusals[0])
                text = ". Also: ".join(texts) or None
            elif function == "CheckWorkloadSelectorMissing":
                text = None if scheduling.workload_selector else f"{name} is enabled but --workload-selector is not set"
            elif function == "CheckAcceleratedSelectorMissing":
                text = (None if scheduling.accelerated_node_selector else
                        f"{name} is enabled but --accelerated-node-selector is not set")
            elif function == "CheckWildcardAcceleratedToleration":
                text = _wildcard_toleration(name, scheduling)
            elif function == "CheckHostMofedWithoutNetworkOperator":
                text = _host_mofed(name, disabled, set_values)
            else:
                raise InvalidInputError(f"registry component {name!r}: unknown validation function {function!r}; "
                                        "fix registry.yaml")
            if text is None:
                continue
            message = f"{text}. {check['message']}" if check.get("message") else text
            if check["severity"] == "error":
                raise InvalidInputError(message)
            found.append((check["severity"], message))
    return found
