"""AICR's four registry checks of values coherence (AICR 8703d8cf, pkg/bundler/validations/checks.go), on the
effective values a bundle deploys (catalog, recipe, ``--set``, scheduling, ``--set-json``/``--set-file``):

- ``CheckDriverOwnershipCoherence`` (gpu-operator): a recipe whose snapshot saw no driver on the GPU nodes must
  have the operator install it; the DRA driver's ``nvidiaDriverRoot`` must follow whoever owns the driver;
  ``hostPaths.driverInstallDir`` must be an absolute path other than ``/``; the toggles must be booleans.
- ``CheckNVSentinelDriverLabelDetectable`` (nvsentinel): where the driver ships in the node image, the labeler
  must be told to assume it (``labeler.assumeDriverInstalled``), or half of NVSentinel never schedules.
- ``CheckNVSentinelRuntimeClassCoherence`` (nvsentinel): metadata-collector's runtime class must be the one the
  GPU Operator creates, or its pods are refused at admission.
- ``CheckMariaDBOperatorOwnershipCoherence`` (mariadb-operator): aicr-provided Slurm accounting must not install a
  second database stack over the MariaDB resources the snapshot found.

Each value these checks vouch for is refused as a ``--dynamic`` path where an install-time edit could undo it.
A check returns ``(messages, refusals)``: messages take the registry's severity, refusals refuse the bundle
whatever it is. Pure: values in, messages out.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping, Sequence

from aicr_gen.render.components import DRA_DRIVERS, GPU_OPERATORS

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

OPERATOR_DRIVER_ROOT = "/run/nvidia/driver"
"""Where the GPU Operator's driver container installs the driver, and the chart's ``driverInstallDir``."""
GKE_DRIVER_ROOT = "/home/kubernetes/bin/nvidia"
"""Where GKE's own driver installer puts the driver."""
OPERATOR_MANAGED = ("--set gpuoperator:driver.enabled=true --set gpuoperator:toolkit.enabled=true "
                    "--set gpuoperator:operator.runtimeClass=nvidia "
                    f"--set dradriver:nvidiaDriverRoot={OPERATOR_DRIVER_ROOT}")
"""The flags that make the GPU Operator own the driver (AICR's ``gpuOperatorManagedOverrideSet``)."""
GKE_OPERATOR_MANAGED = f"{OPERATOR_MANAGED} --set gpuoperator:hostPaths.driverInstallDir={OPERATOR_DRIVER_ROOT}"
"""On GKE the profiles pin ``driverInstallDir`` to GKE's path, so both roots move."""
OWNERSHIP_PATHS = ("driver.enabled", "toolkit.enabled", "hostPaths.driverInstallDir")
ASSUME_DRIVER = "labeler.assumeDriverInstalled"
COLLECTOR_CLASS = "metadata-collector.runtimeClassName"
DEFAULT_RUNTIME_CLASS = "nvidia"
"""Both charts' default: the GPU Operator's ``operator.runtimeClass`` and metadata-collector's class."""
CONSUMERS = ("metadataCollector", "syslogHealthMonitor")
"""NVSentinel's subcharts that schedule only on nodes with the driver label."""
MARIADB_STATES = ("absent", "api-detected", "crs-detected", "unknown")


class Inputs(NamedTuple):
    """What the checks read."""

    recipe: Mapping[str, Any]
    values: Mapping[str, Mapping[str, Any]]
    """Component -> effective values, for every component the bundle deploys (and only those)."""
    dynamic: Mapping[str, Sequence[str]]
    """Component -> the ``--dynamic`` paths left to install time."""
    registry: Mapping[str, Mapping[str, Any]]


Findings = tuple[list[str], list[str]]


def _criterion(inputs: Inputs, key: str) -> str:
    return str((inputs.recipe.get("criteria") or {}).get(key) or "")


def _metadata(inputs: Inputs) -> Mapping[str, Any]:
    return inputs.recipe.get("metadata") or {}


def _set_key(inputs: Inputs, name: str) -> str:
    """The component's name as AICR's fixes spell it in ``--set``: its last registry alias, else its name."""
    return str([name, *((inputs.registry.get(name) or {}).get("valueOverrideKeys") or [])][-1])


def _show(value: Any) -> str:
    kind = {bool: "a boolean", int: "an integer", float: "a number", str: "a string", list: "a list",
            dict: "a map"}.get(type(value), type(value).__name__)
    import json

    return "null" if value is None else f"{json.dumps(value, default=str)} ({kind})"


def _clean(path: str) -> str:
    """Go's ``path.Clean`` (which, unlike ``normpath``, also folds a leading ``//``)."""
    cleaned = posixpath.normpath(path)
    return "/" + cleaned.lstrip("/") if cleaned.startswith("//") else cleaned


def _dynamic(inputs: Inputs, component: str, guarded: Sequence[str]) -> list[tuple[str, str]]:
    """``(path, guarded path)`` of each ``--dynamic`` path of ``component`` that is a guarded path, holds one or
    lies inside one."""
    hits = []
    for path in inputs.dynamic.get(component, ()):
        guard = next((g for g in guarded if path == g or g.startswith(path + ".") or path.startswith(g + ".")),
                     None)
        if guard is not None:
            hits.append((path, guard))
    return hits


def _string_at(values: Mapping[str, Any], path: str) -> tuple[str | None, bool]:
    """``(string, readable)`` at a dotted path: ``(None, True)`` when absent (or a non-map is on the way),
    ``(None, False)`` when the value there is not a string."""
    node: Any = values
    *parents, leaf = path.split(".")
    for part in parents:
        node = node.get(part)
        if not isinstance(node, Mapping):
            return None, True
    if leaf not in node:
        return None, True
    return (node[leaf], True) if isinstance(node[leaf], str) else (None, False)


def _gpu_operator(inputs: Inputs) -> str | None:
    """The GPU Operator the recipe declares (first of its variants), when the bundle deploys it."""
    declared = {ref["name"] for ref in inputs.recipe.get("componentRefs") or []}
    name = next((name for name in GPU_OPERATORS if name in declared), None)
    return name if name in inputs.values else None


# ------------------------------------------------------------------------------------------- driver ownership


def _toggle(values: Mapping[str, Any], section: str) -> tuple[bool | None, str]:
    """``(value, problem)`` of ``<section>.enabled``: ``(None, "")`` when absent (the chart default applies)."""
    if section not in values:
        return None, ""
    part = values[section]
    if part is None:
        return None, (f"{section} is null, which deletes the chart's {section} defaults (its templates read "
                      f"{section}.* unconditionally, so the install fails) and leaves driver ownership unknown")
    if not isinstance(part, Mapping):
        return None, f"{section} is {_show(part)}, not a map, so {section}.enabled cannot be read"
    if "enabled" not in part:
        return None, ""
    if not isinstance(part["enabled"], bool):
        return None, f"{section}.enabled is {_show(part['enabled'])}, not a boolean"
    return part["enabled"], ""


def _driver_absent_fix(service: str, os: str, profiled: bool) -> str:
    """What to do when a preinstalled-driver bundle meets a cluster whose GPU nodes have no driver."""
    if service == "aks" and not profiled:
        return ("Recreate the GPU node pools without --gpu-driver none (AKS installs the NVIDIA driver by default), "
                f"or bundle with the GPU Operator installing the driver: {OPERATOR_MANAGED}")
    if service == "aks":
        return ("Either repair AKS's own driver install (recreate the GPU node pools without --gpu-driver none) and "
                "capture the snapshot again, or move to operator-managed drivers throughout: recreate the pools with "
                "--gpu-driver none, capture the snapshot again and regenerate the recipe with --profile "
                "gpuStack=operator-managed (whose constraint needs the pools to read gpu-driver=None, so "
                "regenerating from the current snapshot alone fails). The gpuStack profile owns the driver-ownership "
                "values, so changing them with --set is refused")
    if service == "gke" and os == "cos":
        return ("On GKE COS node images the GPU Operator cannot install the driver. With the default gpuStack "
                "profile gke-default (no opt-out label) create the GPU node pools with GKE's driver install "
                "(gpu-driver-version=default); with --profile gpuStack=driver-installer (pools labeled "
                "gke-no-default-nvidia-gpu-device-plugin=true, which gives up GKE's install) deploy Google's "
                "nvidia-driver-installer DaemonSet and create the pools with gpu-driver-version=disabled "
                "(AICR docs/integrator/gke-gpu-setup.md)")
    if service == "gke" and os == "ubuntu":
        return f"On GKE Ubuntu node images the GPU Operator can install the driver: {GKE_OPERATOR_MANAGED}"
    if service == "gke":
        return ("On GKE COS node images the GPU Operator cannot install the driver: create the GPU node pools with "
                "GKE's driver install (node pool gpu-driver-version). On GKE Ubuntu node images it can: "
                f"{GKE_OPERATOR_MANAGED}")
    return ("Reprovision the GPU nodes with a driver the platform installs, or bundle with the GPU Operator "
            f"installing the driver: {OPERATOR_MANAGED}")


def _legacy_fix(service: str, os: str) -> str:
    """The alternative to regenerating a recipe made before the preinstalled-driver default."""
    cos = ("On GKE COS node images the GPU Operator cannot install the driver, so the operator-managed flags do not "
           "apply; if the GPU nodes use GKE's driver install, point the DRA driver there: "
           f"--set dradriver:nvidiaDriverRoot={GKE_DRIVER_ROOT}")
    if service != "gke":
        return f"Or let the GPU Operator install the driver: {OPERATOR_MANAGED}"
    if os == "cos":
        return cos
    if os == "ubuntu":
        return f"Or let the GPU Operator install the driver: {GKE_OPERATOR_MANAGED}"
    return f"{cos}. On GKE Ubuntu node images the GPU Operator can install the driver instead: {GKE_OPERATOR_MANAGED}"


def _install_dir(values: Mapping[str, Any], name: str) -> tuple[str, bool, list[str]]:
    """``(dir, declared, problems)`` of ``hostPaths.driverInstallDir`` (absent or empty: the chart's default)."""
    if "hostPaths" not in values:
        return OPERATOR_DRIVER_ROOT, False, []
    paths = values["hostPaths"]
    if paths is None:
        return OPERATOR_DRIVER_ROOT, False, [
            f"{name}: hostPaths is null, which deletes the chart's hostPaths defaults (its templates read "
            "hostPaths.* unconditionally, so the install fails); remove the null or set hostPaths.driverInstallDir "
            "to a real path"]
    if not isinstance(paths, Mapping):
        return OPERATOR_DRIVER_ROOT, False, [
            f"{name}: hostPaths is {_show(paths)}, not a map, so hostPaths.driverInstallDir cannot be read and the "
            "driver roots cannot be compared"]
    if "driverInstallDir" not in paths:
        return OPERATOR_DRIVER_ROOT, False, []
    directory = paths["driverInstallDir"]
    if not isinstance(directory, str):
        return OPERATOR_DRIVER_ROOT, False, [
            f"{name}: hostPaths.driverInstallDir is {_show(directory)}, not a string; the ClusterPolicy CRD takes a "
            f"string path, so the install would fail; set a path (e.g. {OPERATOR_DRIVER_ROOT}) or remove it"]
    if not directory:
        return OPERATOR_DRIVER_ROOT, False, []
    cleaned = _clean(directory)
    if not cleaned.startswith("/"):
        return OPERATOR_DRIVER_ROOT, False, [
            f"{name}: hostPaths.driverInstallDir={directory!r} is not an absolute path; the operator mounts it from "
            f"the host, which takes an absolute path such as {OPERATOR_DRIVER_ROOT}"]
    return cleaned, True, []


def _dra_root(values: Mapping[str, Any], name: str, dra: str) -> tuple[str | None, list[str]]:
    """``(root, problems)`` of the DRA driver's ``nvidiaDriverRoot`` (``None`` when absent)."""
    if "nvidiaDriverRoot" not in values:
        return None, []
    root = values["nvidiaDriverRoot"]
    paths = "'/' for a preinstalled driver, the driver install dir when the operator installs it"
    if not isinstance(root, str):
        return None, [f"{name}: {dra} nvidiaDriverRoot is {_show(root)}, not a string; the DRA chart passes it "
                      f"through path template functions, so rendering fails; set a string path ({paths}) or remove "
                      "it for the chart's default"]
    if not root:
        return None, [f"{name}: {dra} nvidiaDriverRoot is an empty string, which the DRA chart writes as is into "
                      "host paths (it is not the chart's default), giving empty or relative mounts; set a real path "
                      "or remove it"]
    cleaned = _clean(root)
    if not cleaned.startswith("/"):
        return None, [f"{name}: {dra} nvidiaDriverRoot={root!r} is not an absolute path; the kubelet plugin mounts "
                      f"it from the host, which takes an absolute path ({paths})"]
    return cleaned, []


def _ownership_dynamic(inputs: Inputs, component: str, guarded: Sequence[str]) -> list[str]:
    return [f"{component}: --dynamic {component}:{path} leaves the driver-ownership value {guard} to install time "
            "(the editable cluster values), where no coherence check runs, so an edit there can undo the driver/DRA "
            "agreement checked here; set it at bundle time with --set or --set-json instead"
            for path, guard in _dynamic(inputs, component, guarded)]


def _dra_lockstep(inputs: Inputs, name: str, driver_enabled: bool, install_dir: str, trusted: bool) -> list[str]:
    """The DRA driver must read the driver where its owner puts it (AICR issue #1087)."""
    dra = next((candidate for candidate in DRA_DRIVERS if candidate in inputs.values), None)
    if dra is None:
        return []
    found = _ownership_dynamic(inputs, dra, ("nvidiaDriverRoot",))
    root, problems = _dra_root(inputs.values[dra], name, dra)
    if problems or not trusted or found:
        return found + problems
    fix = f"--set {_set_key(inputs, dra)}:nvidiaDriverRoot={install_dir}"
    if driver_enabled and root is not None and root != install_dir:
        found.append(f"{name}: the operator installs the driver to hostPaths.driverInstallDir={install_dir} but the "
                     f"DRA kubelet plugin reads nvidiaDriverRoot={root}, so CDI spec generation fails and pods given "
                     f"GPUs through DRA stay in ContainerCreating; pass {fix} (or, where the platform preinstalls the "
                     "driver, use the whole preinstalled-driver profile)")
    elif driver_enabled and root is None:
        found.append(f"{name}: {dra} declares no nvidiaDriverRoot, so it takes the DRA chart's default (/), which "
                     f"cannot be where the operator installs the driver; pass {fix}")
    elif not driver_enabled and root == OPERATOR_DRIVER_ROOT:
        found.append(f"{name}: driver.enabled=false but {dra} still reads nvidiaDriverRoot={OPERATOR_DRIVER_ROOT}, "
                     "which nothing fills when the operator does not install the driver; this is usually a recipe "
                     "made before the preinstalled-driver default: regenerate it with this catalog. "
                     f"{_legacy_fix(_criterion(inputs, 'service'), _criterion(inputs, 'os'))}")
    return found


def driver_ownership(name: str, inputs: Inputs) -> Findings:
    """``CheckDriverOwnershipCoherence`` of GPU Operator ``name``."""
    if name not in inputs.values:
        return [], []
    found = _ownership_dynamic(inputs, name, OWNERSHIP_PATHS)
    if found:
        return found, []
    state = str(_metadata(inputs).get("gpuDriverState") or "")
    if state not in ("", "preinstalled", "absent"):
        found.append(f"{name}: metadata.gpuDriverState={state!r} is not 'preinstalled', 'absent' or empty (unknown); "
                     "the driverless-cluster rule reads it, so a misspelling would switch that rule off; fix the field "
                     "or regenerate the recipe with this catalog")
    values = inputs.values[name]
    (driver, driver_problem), (toolkit, toolkit_problem) = _toggle(values, "driver"), _toggle(values, "toolkit")
    problems = [problem for problem in (driver_problem, toolkit_problem) if problem]
    if problems:
        return found + [f"{name}: {problem}; the chart writes it unquoted into the ClusterPolicy, where YAML retypes "
                        "it (the string \"false\" deploys as false), so driver ownership cannot be checked; set a bare "
                        "boolean, e.g. --set gpuoperator:driver.enabled=false or --set-json "
                        "gpuoperator:driver.enabled=false" for problem in problems], []
    driver_enabled = driver is not False
    if state == "absent" and (not driver_enabled or toolkit is False):
        fix = _driver_absent_fix(_criterion(inputs, "service"), _criterion(inputs, "os"),
                                 bool(_metadata(inputs).get("selectedProfile")))
        found.append(f"{name}: the values expect a driver and container toolkit preinstalled on the nodes "
                     "(driver.enabled=false and/or toolkit.enabled=false), but the snapshot this recipe came from "
                     "found no NVIDIA kernel driver on the sampled GPU node (metadata.gpuDriverState=absent): the GPU "
                     f"nodes would be left without a driver. {fix}")
    install_dir, declared, dir_problems = _install_dir(values, name)
    found += dir_problems
    if declared and install_dir == "/":
        found.append(f"{name}: hostPaths.driverInstallDir=/ is refused: the operator-validator bind-mounts it as a "
                     "container's rootfs target and runc refuses a mount onto / (\"mountpoint is on the top of "
                     f"rootfs\", AICR issue #1106); point it at a dedicated directory such as {OPERATOR_DRIVER_ROOT}")
    return found + _dra_lockstep(inputs, name, driver_enabled, install_dir, trusted=not dir_problems), []


# ------------------------------------------------------------------------------------------------- NVSentinel


def _guard(inputs: Inputs, name: str, component: str, guarded: Sequence[str], why: str) -> list[str]:
    return [f"{name}: --dynamic {component}:{path} leaves {guard} to install time (the editable cluster values, "
            f"applied over the values checked here), but {why}; an edit there silently undoes what this check "
            "verified; set it at bundle time with --set or --set-json instead"
            for path, guard in _dynamic(inputs, component, guarded)]


def _consumer_off(values: Mapping[str, Any], key: str) -> bool:
    """Whether ``global.<key>.enabled`` is false (absent or unreadable: the chart's default, on)."""
    shared = values.get("global")
    section = shared.get(key) if isinstance(shared, Mapping) else None
    return isinstance(section, Mapping) and section.get("enabled") is False


def _helm_true(value: Any) -> bool:
    """Whether a Helm ``{{ if }}`` takes ``value`` as true (Go's ``template.IsTrue``)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return value != 0
    if isinstance(value, str | list | dict):
        return len(value) > 0
    return False


def _driver_pod_visible(inputs: Inputs) -> bool:
    """Whether a driver pod the labeler sees runs although the operator installs no driver: only GKE COS with
    ``gpuStack=driver-installer`` (Google's nvidia-driver-installer DaemonSet)."""
    profile = _metadata(inputs).get("selectedProfile") or {}
    return (_criterion(inputs, "service") == "gke" and _criterion(inputs, "os") == "cos"
            and profile.get("name") == "gpuStack" and profile.get("value") == "driver-installer")


def driver_label(name: str, inputs: Inputs) -> Findings:
    """``CheckNVSentinelDriverLabelDetectable`` of NVSentinel ``name`` (AICR issue #2175)."""
    operator = _gpu_operator(inputs)
    if name not in inputs.values or operator is None:
        return [], []
    driver, problem = _toggle(inputs.values[operator], "driver")
    # an unreadable toggle is the ownership check's to refuse (the operator is deployed, so it runs)
    if problem or driver is not False or _driver_pod_visible(inputs):
        return [], []
    values = inputs.values[name]
    labeler = values.get("labeler")
    remedy = isinstance(labeler, Mapping) and _helm_true(labeler.get("assumeDriverInstalled"))
    remedy_dynamic = bool(_dynamic(inputs, name, (ASSUME_DRIVER,)))
    if all(_consumer_off(values, key) for key in CONSUMERS):
        if remedy and not remedy_dynamic:
            return [], []
        return _guard(inputs, name, name, [f"global.{key}.enabled" for key in CONSUMERS],
                      "both consumers of the driver label (metadata-collector, syslog-health-monitor) are disabled, "
                      f"which is what lets the bundle through without {ASSUME_DRIVER}; re-enabling one at install "
                      "time brings back DaemonSets with 0 desired pods (AICR issue #2175), as the remedy is missing "
                      "or itself dynamic"), []
    found = _guard(inputs, name, name, (ASSUME_DRIVER,),
                   "the driver-label check depends on it on this platform: removing it at install time brings back "
                   "DaemonSets with 0 desired pods (AICR issue #2175)")
    if found or remedy:
        return found, []
    affected = ([] if _consumer_off(values, "metadataCollector") else ["metadata-collector"]) + (
        [] if _consumer_off(values, "syslogHealthMonitor") else
        ["syslog-health-monitor-regular", "syslog-health-monitor-kata"])
    return [f"{name}: the values leave the NVIDIA driver to the node image ({operator} driver.enabled=false) and no "
            f"driver pod the NVSentinel labeler can see is deployed, yet {ASSUME_DRIVER} is not set; the labeler then "
            "never applies the node label nvsentinel.dgxc.nvidia.com/driver.installed, and "
            f"{', '.join(affected)} get 0 desired pods with no error and no event (gpu-health-monitor schedules on "
            "the DCGM label and looks healthy). Set --set nv-sentinel:labeler.assumeDriverInstalled=true. Labeling "
            "the nodes by hand does not last (the labeler removes the label on its next pass); do not set the flag "
            "where the GPU Operator installs the driver: it skips driver-pod detection and would hide an unloaded "
            "driver"], []


def runtime_class(name: str, inputs: Inputs) -> Findings:
    """``CheckNVSentinelRuntimeClassCoherence`` of NVSentinel ``name`` (AICR issue #2176)."""
    operator = _gpu_operator(inputs)
    if name not in inputs.values or operator is None:
        return [], []
    operator_class, readable = _string_at(inputs.values[operator], "operator.runtimeClass")
    if not readable:
        return [], []
    operator_class = operator_class or DEFAULT_RUNTIME_CLASS
    values = inputs.values[name]
    collector, readable = _string_at(values, COLLECTOR_CLASS)
    if readable and collector is None:
        collector = DEFAULT_RUNTIME_CLASS
    if _consumer_off(values, "metadataCollector"):
        coherent = readable and collector in ("", operator_class)
        dynamic = bool(_dynamic(inputs, name, (COLLECTOR_CLASS,)))
        if collector != "":  # an empty class is omitted from the pod: any operator class admits it
            dynamic = dynamic or bool(_dynamic(inputs, operator, ("operator.runtimeClass",)))
        if coherent and not dynamic:
            return [], []
        return _guard(inputs, name, name, ("global.metadataCollector.enabled",),
                      "metadata-collector is disabled and its runtime class is not known to match the GPU Operator's "
                      "(mismatched, unreadable, or itself dynamic), so re-enabling it at install time can deploy a "
                      "collector whose pods are refused at admission (AICR issue #2176)"), []
    if not readable:
        return [], []
    why = ("the runtime-class check verifies it: an install-time edit can set the collector's and the GPU Operator's "
           "runtime classes apart, and every metadata-collector pod is then refused at admission (AICR issue #2176)")
    found = _guard(inputs, name, name, (COLLECTOR_CLASS,), why)
    if collector == "":  # omitted from the pod, which any RuntimeClass then admits
        return found, []
    found += _guard(inputs, name, operator, ("operator.runtimeClass",), why)
    if found or collector == operator_class:
        return found, []
    return [f"{name}: metadata-collector sets runtimeClassName={collector!r} but the GPU Operator names its "
            f"RuntimeClass {operator_class!r} ({operator} operator.runtimeClass); no RuntimeClass {collector!r} "
            f"exists, so the API server refuses every metadata-collector pod (RuntimeClass \"{collector}\" not found): "
            "the DaemonSet shows desired pods and none created, with only a FailedCreate event on it. Align them: "
            f"--set nv-sentinel:{COLLECTOR_CLASS}={operator_class}"], []


# ---------------------------------------------------------------------------------------------------- MariaDB


def mariadb_ownership(name: str, inputs: Inputs) -> Findings:
    """``CheckMariaDBOperatorOwnershipCoherence`` of ``name``: what the snapshot says about MariaDB Operators
    already on the cluster, for aicr-provided Slurm accounting."""
    slurm = (inputs.recipe.get("configuration") or {}).get("slurm")
    accounting = slurm.get("accounting") if isinstance(slurm, Mapping) else None
    if name not in inputs.values or not isinstance(accounting, Mapping) or accounting.get("mode") != "aicr-provided":
        return [], []
    state = str(_metadata(inputs).get("mariaDBOperatorState") or "")
    customer = "--slurm-accounting-mode customer-managed"
    if state == "":
        return [f"{name}: the recipe records no metadata.mariaDBOperatorState (no snapshot evidence), so conflicts "
                "with a MariaDB Operator already on the cluster were not checked; aicr-provided accounting is bundled "
                "anyway: regenerate the recipe from a current snapshot to check the cluster before deploying"], []
    if state == "absent":
        return [], []
    if state == "api-detected":
        return [f"{name}: the snapshot found the official MariaDB Operator API but no MariaDB resources; "
                "aicr-provided accounting is bundled, but make sure a second operator instance will not conflict, "
                f"or regenerate the recipe with {customer}"], []
    if state == "crs-detected":
        return [], [f"{name}: the snapshot found official MariaDB resources on the cluster, and aicr-provided "
                    "accounting would install a competing database stack; regenerate the recipe with "
                    f"{customer} to use the existing database"]
    if state == "unknown":
        return [], [f"{name}: the snapshot could not tell whether a MariaDB Operator is installed, so aicr-provided "
                    "accounting cannot be installed safely; capture a new snapshot with enough Kubernetes discovery "
                    f"permissions, or regenerate the recipe with {customer}"]
    return [], [f"{name}: metadata.mariaDBOperatorState={state!r} is not one of {', '.join(MARIADB_STATES)}; "
                "regenerate the recipe with this version before bundling aicr-provided accounting"]


CHECKS: Mapping[str, Callable[[str, Inputs], Findings]] = {
    "CheckDriverOwnershipCoherence": driver_ownership,
    "CheckNVSentinelDriverLabelDetectable": driver_label,
    "CheckNVSentinelRuntimeClassCoherence": runtime_class,
    "CheckMariaDBOperatorOwnershipCoherence": mariadb_ownership,
}
