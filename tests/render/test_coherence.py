"""AICR's coherence checks of effective values: driver ownership, NVSentinel's driver label and runtime class,
MariaDB ownership. Unit cases on hand-made values, then the same flags given to ``aicr bundle`` and ``aicr-gen
bundle`` on recipes of AICR's catalog: both refuse (naming the same fact) or both accept."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from aicr_gen.render import coherence
from aicr_gen.render.coherence import Inputs
from tests.conftest import AICR_CATALOG, needs

GPU_REGISTRY = {"gpu-operator": {"valueOverrideKeys": ["gpuoperator"]},
                "nvidia-dra-driver-gpu": {"valueOverrideKeys": ["dradriver"]},
                "nvsentinel": {"valueOverrideKeys": ["nv-sentinel"]}}


def _inputs(values: dict[str, dict[str, Any]], *, dynamic: dict[str, tuple[str, ...]] | None = None,
            metadata: dict[str, Any] | None = None, criteria: dict[str, str] | None = None,
            configuration: dict[str, Any] | None = None) -> Inputs:
    recipe = {"criteria": criteria or {"service": "eks", "os": "ubuntu"}, "metadata": metadata or {},
              "componentRefs": [{"name": name} for name in values], **({"configuration": configuration}
                                                                       if configuration else {})}
    return Inputs(recipe, values, dynamic or {}, GPU_REGISTRY)


# ------------------------------------------------------------------------------------------- driver ownership

OPERATOR_MANAGED = {"gpu-operator": {"driver": {"enabled": True}},
                    "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/run/nvidia/driver"}}
PREINSTALLED = {"gpu-operator": {"driver": {"enabled": False}, "toolkit": {"enabled": False}},
                "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/"}}


def _ownership(values: dict[str, dict[str, Any]], **kwargs: Any) -> list[str]:
    messages, refusals = coherence.driver_ownership("gpu-operator", _inputs(values, **kwargs))
    assert refusals == []
    return messages


@pytest.mark.parametrize("values", [
    OPERATOR_MANAGED, PREINSTALLED,
    {"gpu-operator": {}},  # chart defaults, no DRA driver
    {"gpu-operator": {"hostPaths": {"driverInstallDir": "/opt/nvidia/"}},
     "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/opt/nvidia"}},  # compared as cleaned paths
    {"gpu-operator": {"hostPaths": {"driverInstallDir": ""}},  # empty: the chart's default
     "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/run/nvidia/driver"}},
    {"gpu-operator": {"driver": {"enabled": False}},
     "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/home/kubernetes/bin/nvidia"}},
])
def test_coherent_driver_ownership_passes(values: dict[str, dict[str, Any]]) -> None:
    assert _ownership(values) == []


@pytest.mark.parametrize(("values", "says"), [
    ({**OPERATOR_MANAGED, "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/"}},
     "driverInstallDir=/run/nvidia/driver but the DRA kubelet plugin reads nvidiaDriverRoot=/, so CDI"),
    ({**OPERATOR_MANAGED, "nvidia-dra-driver-gpu": {}}, "pass --set dradriver:nvidiaDriverRoot=/run/nvidia/driver"),
    ({**PREINSTALLED, "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/run/nvidia/driver/"}},
     "driver.enabled=false but nvidia-dra-driver-gpu still reads nvidiaDriverRoot=/run/nvidia/driver"),
    ({**OPERATOR_MANAGED, "gpu-operator": {"hostPaths": {"driverInstallDir": "//"}}},
     "hostPaths.driverInstallDir=/ is refused"),
    ({"gpu-operator": {"hostPaths": {"driverInstallDir": "run/nvidia/driver"}}}, "is not an absolute path"),
    ({"gpu-operator": {"hostPaths": {"driverInstallDir": 7}}}, "hostPaths.driverInstallDir is 7 (an integer)"),
    ({"gpu-operator": {"hostPaths": None}}, "hostPaths is null"),
    ({"gpu-operator": {"hostPaths": ["x"]}}, "not a map"),
    ({"gpu-operator": {"driver": {"enabled": "false"}}}, 'driver.enabled is "false" (a string), not a boolean'),
    ({"gpu-operator": {"toolkit": None}}, "toolkit is null"),
    ({"gpu-operator": {"driver": "off"}}, "driver.enabled cannot be read"),
    ({**PREINSTALLED, "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": ""}}, "nvidiaDriverRoot is an empty string"),
    ({**PREINSTALLED, "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": 1}}, "nvidiaDriverRoot is 1 (an integer)"),
    ({**PREINSTALLED, "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "run/nvidia"}}, "is not an absolute path"),
])
def test_incoherent_driver_ownership_is_named(values: dict[str, dict[str, Any]], says: str) -> None:
    assert says in " ".join(_ownership(values))


@pytest.mark.parametrize(("state", "values", "fired"), [
    ("absent", PREINSTALLED, True),
    ("absent", {"gpu-operator": {"toolkit": {"enabled": False}}}, True),
    ("absent", OPERATOR_MANAGED, False),
    ("preinstalled", PREINSTALLED, False),
    ("", PREINSTALLED, False),
])
def test_a_driverless_snapshot_needs_the_operator_to_install_the_driver(
        state: str, values: dict[str, dict[str, Any]], fired: bool) -> None:
    found = _ownership(values, metadata={"gpuDriverState": state})
    assert any("metadata.gpuDriverState=absent" in text for text in found) is fired


@pytest.mark.parametrize(("criteria", "profiled", "fix"), [
    ({"service": "eks"}, False, "--set gpuoperator:driver.enabled=true --set gpuoperator:toolkit.enabled=true "
                                "--set gpuoperator:operator.runtimeClass=nvidia "
                                "--set dradriver:nvidiaDriverRoot=/run/nvidia/driver"),
    ({"service": "aks"}, False, "without --gpu-driver none"),
    ({"service": "aks"}, True, "--profile gpuStack=operator-managed"),
    ({"service": "gke", "os": "cos"}, True, "gpu-driver-version=disabled"),
    ({"service": "gke", "os": "ubuntu"}, True, "--set gpuoperator:hostPaths.driverInstallDir=/run/nvidia/driver"),
])
def test_the_driverless_fix_depends_on_the_service(criteria: dict[str, str], profiled: bool, fix: str) -> None:
    metadata = {"gpuDriverState": "absent", **({"selectedProfile": {"name": "gpuStack"}} if profiled else {})}
    assert fix in " ".join(_ownership(PREINSTALLED, metadata=metadata, criteria=criteria))


def test_an_unknown_driver_state_is_refused_as_a_misspelling() -> None:
    assert "metadata.gpuDriverState='Absent' is not" in _ownership(OPERATOR_MANAGED,
                                                                  metadata={"gpuDriverState": "Absent"})[0]


@pytest.mark.parametrize(("dynamic", "fired"), [
    ({"gpu-operator": ("driver.enabled",)}, True),
    ({"gpu-operator": ("driver",)}, True),  # holds a guarded path
    ({"gpu-operator": ("hostPaths.driverInstallDir.sub",)}, True),  # inside one
    ({"nvidia-dra-driver-gpu": ("nvidiaDriverRoot",)}, True),
    ({"gpu-operator": ("driver.version", "driverx")}, False),
])
def test_ownership_values_cannot_be_left_to_install_time(dynamic: dict[str, tuple[str, ...]], fired: bool) -> None:
    assert any("--dynamic" in text for text in _ownership(OPERATOR_MANAGED, dynamic=dynamic)) is fired


def test_the_legacy_fix_on_gke_cos_points_the_dra_driver_at_gkes_install() -> None:
    values = {**PREINSTALLED, "nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/run/nvidia/driver"}}
    found = _ownership(values, criteria={"service": "gke", "os": "cos"})
    assert "--set dradriver:nvidiaDriverRoot=/home/kubernetes/bin/nvidia" in found[0]
    assert "--set gpuoperator:driver.enabled=true" not in found[0]


def test_a_disabled_operator_is_not_checked() -> None:
    values = {"nvidia-dra-driver-gpu": {"nvidiaDriverRoot": "/"}}
    assert coherence.driver_ownership("gpu-operator", _inputs(values)) == ([], [])


# ------------------------------------------------------------------------------------------------- NVSentinel

HOST_DRIVER = {"gpu-operator": {"driver": {"enabled": False}}}
BOTH_OFF = {"global": {"metadataCollector": {"enabled": False}, "syslogHealthMonitor": {"enabled": False}}}


def _label(sentinel: dict[str, Any], operator: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
    values = {**({"gpu-operator": operator} if operator is not None else {}), "nvsentinel": sentinel}
    messages, refusals = coherence.driver_label("nvsentinel", _inputs(values, **kwargs))
    assert refusals == []
    return messages


@pytest.mark.parametrize(("operator", "sentinel", "dynamic", "says"), [
    (HOST_DRIVER["gpu-operator"], {}, {}, "metadata-collector, syslog-health-monitor-regular, "
                                          "syslog-health-monitor-kata get 0 desired pods"),
    (HOST_DRIVER["gpu-operator"], {"labeler": {"assumeDriverInstalled": {}}}, {}, "is not set"),  # {} is false
    (HOST_DRIVER["gpu-operator"], {"global": {"metadataCollector": {"enabled": False}}}, {},
     "and syslog-health-monitor-regular, syslog-health-monitor-kata get 0"),
    (HOST_DRIVER["gpu-operator"], {"labeler": {"assumeDriverInstalled": True}},
     {"nvsentinel": ("labeler",)}, "--dynamic nvsentinel:labeler leaves labeler.assumeDriverInstalled"),
    (HOST_DRIVER["gpu-operator"], BOTH_OFF, {"nvsentinel": ("global.metadataCollector.enabled",)},
     "both consumers of the driver label"),
    (HOST_DRIVER["gpu-operator"], {**BOTH_OFF, "labeler": {"assumeDriverInstalled": True}},
     {"nvsentinel": ("global.syslogHealthMonitor", "labeler.assumeDriverInstalled")}, "both consumers"),
])
def test_a_host_driver_without_the_labeler_remedy_is_refused(operator: dict[str, Any], sentinel: dict[str, Any],
                                                             dynamic: dict[str, tuple[str, ...]], says: str) -> None:
    assert says in " ".join(_label(sentinel, operator, dynamic=dynamic))


@pytest.mark.parametrize(("operator", "sentinel", "dynamic", "profile"), [
    (HOST_DRIVER["gpu-operator"], {"labeler": {"assumeDriverInstalled": True}}, {}, None),
    (HOST_DRIVER["gpu-operator"], {"labeler": {"assumeDriverInstalled": "yes"}}, {}, None),  # Helm: true
    ({}, {}, {"nvsentinel": ("labeler.assumeDriverInstalled",)}, None),  # the operator installs the driver
    ({"driver": {"enabled": "no"}}, {}, {}, None),  # the ownership check refuses that toggle
    (None, {}, {}, None),  # no GPU Operator: nothing to key on
    (HOST_DRIVER["gpu-operator"], BOTH_OFF, {"nvsentinel": ("labeler.assumeDriverInstalled",)}, None),
    (HOST_DRIVER["gpu-operator"], {**BOTH_OFF, "labeler": {"assumeDriverInstalled": True}},
     {"nvsentinel": ("global.metadataCollector.enabled",)}, None),
    (HOST_DRIVER["gpu-operator"], {}, {}, {"name": "gpuStack", "value": "driver-installer"}),
])
def test_the_label_check_stays_silent_where_the_label_is_applied_or_unread(
        operator: dict[str, Any] | None, sentinel: dict[str, Any], dynamic: dict[str, tuple[str, ...]],
        profile: dict[str, str] | None) -> None:
    criteria = {"service": "gke", "os": "cos"}
    assert _label(sentinel, operator, dynamic=dynamic, criteria=criteria,
                  metadata={"selectedProfile": profile} if profile else {}) == []


def test_googles_driver_installer_exempts_only_gke_cos() -> None:
    profile = {"selectedProfile": {"name": "gpuStack", "value": "driver-installer"}}
    assert _label({}, HOST_DRIVER["gpu-operator"], metadata=profile, criteria={"service": "aks", "os": "ubuntu"})


def _runtime(operator: dict[str, Any], sentinel: dict[str, Any], **kwargs: Any) -> list[str]:
    values = {"gpu-operator": operator, "nvsentinel": sentinel}
    messages, refusals = coherence.runtime_class("nvsentinel", _inputs(values, **kwargs))
    assert refusals == []
    return messages


CUSTOM = {"operator": {"runtimeClass": "nvidia-container-runtime"}}


@pytest.mark.parametrize(("operator", "sentinel", "dynamic"), [
    ({}, {}, {}),
    ({"operator": {"runtimeClass": ""}}, {"metadata-collector": {"runtimeClassName": "nvidia"}}, {}),
    (CUSTOM, {"metadata-collector": {"runtimeClassName": "nvidia-container-runtime"}}, {}),
    (CUSTOM, {"metadata-collector": {"runtimeClassName": ""}}, {"gpu-operator": ("operator.runtimeClass",)}),
    (CUSTOM, {"global": {"metadataCollector": {"enabled": False}}}, {}),
    ({"operator": {"runtimeClass": 3}}, {"metadata-collector": {"runtimeClassName": "x"}}, {}),  # unreadable
    (CUSTOM, {"metadata-collector": {"runtimeClassName": ["x"]}}, {}),
    ({}, {"global": {"metadataCollector": {"enabled": False}}},
     {"nvsentinel": ("global.metadataCollector.enabled",)}),  # matching defaults: a re-enable is admitted
])
def test_matching_runtime_classes_pass(operator: dict[str, Any], sentinel: dict[str, Any],
                                       dynamic: dict[str, tuple[str, ...]]) -> None:
    assert _runtime(operator, sentinel, dynamic=dynamic) == []


@pytest.mark.parametrize(("operator", "sentinel", "dynamic", "says"), [
    (CUSTOM, {}, {}, "--set nv-sentinel:metadata-collector.runtimeClassName=nvidia-container-runtime"),
    ({}, {"metadata-collector": {"runtimeClassName": "kata"}}, {}, "RuntimeClass \"kata\" not found"),
    ({}, {}, {"gpu-operator": ("operator",)}, "--dynamic gpu-operator:operator leaves operator.runtimeClass"),
    ({}, {}, {"nvsentinel": ("metadata-collector.runtimeClassName",)}, "runtime-class check verifies it"),
    ({}, {"metadata-collector": {"runtimeClassName": ""}}, {"nvsentinel": ("metadata-collector",)},
     "runtime-class check verifies it"),
    (CUSTOM, {"global": {"metadataCollector": {"enabled": False}}},
     {"nvsentinel": ("global.metadataCollector.enabled",)}, "metadata-collector is disabled"),
    ({}, {"global": {"metadataCollector": {"enabled": False}}},
     {"nvsentinel": ("global.metadataCollector", "metadata-collector.runtimeClassName")},
     "metadata-collector is disabled"),
])
def test_mismatched_or_install_time_runtime_classes_are_refused(operator: dict[str, Any], sentinel: dict[str, Any],
                                                                dynamic: dict[str, tuple[str, ...]], says: str) -> None:
    assert says in " ".join(_runtime(operator, sentinel, dynamic=dynamic))


# ---------------------------------------------------------------------------------------------------- MariaDB

AICR_PROVIDED = {"slurm": {"accounting": {"mode": "aicr-provided"}}}


@pytest.mark.parametrize(("state", "configuration", "warned", "refused"), [
    (None, AICR_PROVIDED, "no snapshot evidence", None),
    ("absent", AICR_PROVIDED, None, None),
    ("api-detected", AICR_PROVIDED, "MariaDB Operator API but no MariaDB resources", None),
    ("crs-detected", AICR_PROVIDED, None, "competing database stack"),
    ("unknown", AICR_PROVIDED, None, "could not tell"),
    ("Absent", AICR_PROVIDED, None, "'Absent' is not one of"),
    ("crs-detected", {"slurm": {"accounting": {"mode": "customer-managed"}}}, None, None),
    ("crs-detected", None, None, None),
])
def test_mariadb_ownership_follows_the_snapshot(state: str | None, configuration: dict[str, Any] | None,
                                                warned: str | None, refused: str | None) -> None:
    inputs = _inputs({"mariadb-operator": {}}, configuration=configuration,
                     metadata={"mariaDBOperatorState": state} if state else {})
    messages, refusals = coherence.mariadb_ownership("mariadb-operator", inputs)
    assert [warned in text for text in messages] == ([True] if warned else [])
    assert [refused in text for text in refusals] == ([True] if refused else [])


# ------------------------------------------------------------------------------------------- against AICR


class Leaf(NamedTuple):
    flags: tuple[str, ...]
    """``aicr recipe`` flags: a leaf's criteria, plus a profile or accounting mode."""
    bundle: tuple[str, ...] = ()
    """Flags both bundlers need on this leaf whatever the case."""


LEAVES = {
    "eks-training": Leaf(("--service", "eks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
                          "--platform", "kubeflow")),
    "kind-inference": Leaf(("--service", "kind", "--accelerator", "h100", "--intent", "inference",
                            "--platform", "dynamo")),
    "oke-inference": Leaf(("--service", "oke", "--accelerator", "gb200", "--intent", "inference", "--os", "ubuntu",
                           "--platform", "dynamo")),
    "gke-cos-driver-installer": Leaf(("--service", "gke", "--accelerator", "h100", "--intent", "training",
                                      "--os", "cos", "--platform", "kubeflow", "--profile",
                                      "gpuStack=driver-installer")),
    "aks-inference": Leaf(("--service", "aks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu",
                           "--platform", "dynamo"),
                          ("--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule")),
    "gke-cos": Leaf(("--service", "gke", "--accelerator", "h100", "--intent", "training", "--os", "cos",
                     "--platform", "kubeflow")),
    "ocp-training": Leaf(("--service", "ocp", "--intent", "training"),
                         # AICR renders this unset value as <no value>; aicr-gen refuses it (docs/bundles.md)
                         ("--set", "prometheus-adapter-ocp:serviceAccount.name=prometheus-adapter")),
    "eks-slurm-aicr-accounting": Leaf(("--service", "eks", "--accelerator", "h100", "--intent", "training",
                                       "--os", "ubuntu", "--platform", "slurm",
                                       "--slurm-accounting-mode", "aicr-provided")),
}


class Case(NamedTuple):
    leaf: str
    args: tuple[str, ...] = ()
    refused: str | None = None
    """A fact both refusals state; None: both bundle."""
    metadata: tuple[tuple[str, str], ...] = ()
    """Recipe metadata a snapshot would have recorded (written into the recipe both tools read)."""
    warned: str | None = None
    """A fact both warnings state."""


LABEL = "nv-sentinel:labeler.assumeDriverInstalled"
COLLECTOR = "nv-sentinel:metadata-collector.runtimeClassName"
DRIVER_OFF = ("--set", "gpuoperator:driver.enabled=false")
DRA_ROOT_HOST = ("--set", "dradriver:nvidiaDriverRoot=/")
ASSUME = ("--set", f"{LABEL}=true")
NO_ASSUME = ("--set", f"{LABEL}=false")
CONSUMERS_OFF = ("--set", "nv-sentinel:global.metadataCollector.enabled=false",
                 "--set", "nv-sentinel:global.syslogHealthMonitor.enabled=false")
RUNTIME = ("--set", "gpuoperator:operator.runtimeClass=custom")
RULE_1 = "(driver.enabled=false and/or toolkit.enabled=false)"

CASES = {
    # driver ownership
    "eks-as-resolved": Case("eks-training"),
    "eks-driver-off-keeps-operator-dra-root": Case("eks-training", DRIVER_OFF,
                                                   "nvidiaDriverRoot=/run/nvidia/driver"),
    "eks-dra-root-host-with-operator-driver": Case("eks-training", DRA_ROOT_HOST, "CDI spec generation"),
    "eks-preinstalled-with-label-remedy": Case("eks-training", (*DRIVER_OFF, *DRA_ROOT_HOST, *ASSUME)),
    "eks-install-dir-root": Case("eks-training", ("--set", "gpuoperator:hostPaths.driverInstallDir=/"),
                                 "driverInstallDir=/"),
    "eks-install-dir-relative": Case("eks-training", ("--set", "gpuoperator:hostPaths.driverInstallDir=opt/nvidia"),
                                     "opt/nvidia"),
    "eks-install-dir-moved-with-dra": Case("eks-training", ("--set", "gpuoperator:hostPaths.driverInstallDir=/opt/nv/",
                                                            "--set", "dradriver:nvidiaDriverRoot=/opt/nv")),
    "eks-toggle-string": Case("eks-training", ("--set", "gpuoperator:driver.enabled=False"), "not a boolean"),
    "eks-toggle-json-string": Case("eks-training", ("--set-json", 'gpuoperator:driver.enabled="false"'),
                                   "not a boolean"),
    "eks-driver-not-a-map": Case("eks-training", ("--set-json", "gpuoperator:driver=true"), "not a map"),
    "eks-dra-root-empty": Case("eks-training", ("--set-json", 'dradriver:nvidiaDriverRoot=""'), "empty string"),
    "eks-dra-root-number": Case("eks-training", ("--set-json", "dradriver:nvidiaDriverRoot=5"), "not a string"),
    "eks-dynamic-driver-enabled": Case("eks-training", ("--dynamic", "gpuoperator:driver.enabled"), "--dynamic"),
    "eks-dynamic-driver-section": Case("eks-training", ("--dynamic", "gpuoperator:driver"), "--dynamic"),
    "eks-dynamic-install-dir": Case("eks-training", ("--dynamic", "gpuoperator:hostPaths"), "--dynamic"),
    "eks-dynamic-dra-root": Case("eks-training", ("--dynamic", "dradriver:nvidiaDriverRoot"), "--dynamic"),
    "eks-dynamic-driver-version": Case("eks-training", ("--dynamic", "gpuoperator:driver.version")),
    "eks-dra-disabled-driver-off": Case("eks-training", (*DRIVER_OFF, "--set", "dradriver:enabled=false", *ASSUME)),
    "eks-driverless-snapshot": Case("eks-training", metadata=(("gpuDriverState", "absent"),)),
    "eks-driverless-snapshot-driver-off": Case("eks-training", (*DRIVER_OFF, *DRA_ROOT_HOST, *ASSUME),
                                               RULE_1, (("gpuDriverState", "absent"),)),
    "eks-driverless-snapshot-toolkit-off": Case("eks-training", ("--set", "gpuoperator:toolkit.enabled=false"),
                                                RULE_1, (("gpuDriverState", "absent"),)),
    "eks-preinstalled-snapshot-driver-off": Case("eks-training", (*DRIVER_OFF, *DRA_ROOT_HOST, *ASSUME),
                                                 metadata=(("gpuDriverState", "preinstalled"),)),
    "eks-misspelled-driver-state": Case("eks-training", refused="gpuDriverState",
                                        metadata=(("gpuDriverState", "none"),)),
    "eks-driverless-snapshot-fix": Case("eks-training", (*DRIVER_OFF, *DRA_ROOT_HOST, *ASSUME),
                                        "--set gpuoperator:driver.enabled=true --set gpuoperator:toolkit.enabled=true",
                                        (("gpuDriverState", "absent"),)),
    "aks-driverless-snapshot": Case("aks-inference", refused="--profile gpuStack=operator-managed",
                                    metadata=(("gpuDriverState", "absent"),)),
    "gke-cos-as-resolved": Case("gke-cos"),
    "gke-cos-driverless-snapshot": Case("gke-cos", refused="gpu-driver-version=disabled",
                                        metadata=(("gpuDriverState", "absent"),)),
    "gke-cos-operator-dra-root": Case("gke-cos", ("--set", "dradriver:nvidiaDriverRoot=/run/nvidia/driver"),
                                      "--set dradriver:nvidiaDriverRoot=/home/kubernetes/bin/nvidia"),
    "gke-cos-install-dir-root": Case("gke-cos", ("--set", "gpuoperator:hostPaths.driverInstallDir=/"),
                                     "mountpoint is on the top of rootfs"),
    "ocp-as-resolved": Case("ocp-training"),
    "ocp-driver-off": Case("ocp-training", ("--set", "gpuoperatorocp:driver.enabled=false"),
                           "nvidiaDriverRoot=/run/nvidia/driver"),
    "ocp-dra-root-host": Case("ocp-training", ("--set", "dradriverocp:nvidiaDriverRoot=/"), "CDI spec generation"),
    "ocp-preinstalled": Case("ocp-training", ("--set", "dradriverocp:nvidiaDriverRoot=/",
                                              "--set", "gpuoperatorocp:driver.enabled=false")),
    "kind-as-resolved": Case("kind-inference"),
    "kind-operator-dra-root-with-host-driver": Case("kind-inference",
                                                    ("--set", "dradriver:nvidiaDriverRoot=/run/nvidia/driver"),
                                                    "nvidiaDriverRoot=/run/nvidia/driver"),
    "kind-operator-driver-with-host-dra-root": Case("kind-inference", ("--set", "gpuoperator:driver.enabled=true"),
                                                    "CDI spec generation"),
    "oke-as-resolved": Case("oke-inference"),
    "aks-as-resolved": Case("aks-inference"),
    # NVSentinel driver label
    "kind-no-label-remedy": Case("kind-inference", NO_ASSUME, "labeler.assumeDriverInstalled"),
    "oke-no-label-remedy": Case("oke-inference", NO_ASSUME, "labeler.assumeDriverInstalled"),
    "kind-label-remedy-empty-map": Case("kind-inference", ("--set-json", f"{LABEL}={{}}"),
                                        "labeler.assumeDriverInstalled"),
    "kind-label-remedy-truthy-string": Case("kind-inference", ("--set", f"{LABEL}=on")),
    "kind-one-consumer-off": Case("kind-inference", (*NO_ASSUME, *CONSUMERS_OFF[:2]), "syslog-health-monitor-kata"),
    "kind-both-consumers-off": Case("kind-inference", (*NO_ASSUME, *CONSUMERS_OFF)),
    "kind-dynamic-label-remedy": Case("kind-inference", ("--dynamic", "nv-sentinel:labeler.assumeDriverInstalled"),
                                      "--dynamic"),
    "kind-consumers-off-dynamic-consumer": Case("kind-inference", (*NO_ASSUME, *CONSUMERS_OFF, "--dynamic",
                                                                   "nv-sentinel:global.metadataCollector.enabled"),
                                                "--dynamic"),
    "kind-consumers-off-remedy-dynamic-consumer": Case("kind-inference", (
        *CONSUMERS_OFF, "--dynamic", "nv-sentinel:global.metadataCollector.enabled")),
    "kind-consumers-off-dynamic-remedy": Case("kind-inference", (
        *CONSUMERS_OFF, "--dynamic", "nv-sentinel:labeler.assumeDriverInstalled")),
    "kind-consumers-off-both-dynamic": Case("kind-inference", (
        *CONSUMERS_OFF, "--dynamic", "nv-sentinel:labeler.assumeDriverInstalled", "--dynamic",
        "nv-sentinel:global.syslogHealthMonitor.enabled"), "--dynamic"),
    "eks-operator-driver-no-remedy": Case("eks-training", NO_ASSUME),
    "eks-operator-driver-dynamic-remedy": Case("eks-training", ("--dynamic",
                                                                "nv-sentinel:labeler.assumeDriverInstalled")),
    "gke-cos-driver-installer-as-resolved": Case("gke-cos-driver-installer"),
    # NVSentinel runtime class
    "eks-operator-runtime-class-moved": Case("eks-training", RUNTIME, "FailedCreate"),
    "eks-both-runtime-classes-moved": Case("eks-training", (
        *RUNTIME, "--set", "nv-sentinel:metadata-collector.runtimeClassName=custom")),
    "eks-collector-class-empty": Case("eks-training", (
        *RUNTIME, "--set-json", 'nv-sentinel:metadata-collector.runtimeClassName=""')),
    "eks-collector-off": Case("eks-training", (*RUNTIME, *CONSUMERS_OFF[:2])),
    "eks-collector-off-dynamic": Case("eks-training", (*RUNTIME, "--set",
                                                       "nv-sentinel:global.metadataCollector.enabled=false",
                                                       "--dynamic", "nv-sentinel:global.metadataCollector.enabled"),
                                      "--dynamic"),
    "eks-collector-class-unknown": Case("eks-training", ("--set", f"{COLLECTOR}=kata"),
                                        "FailedCreate"),
    "eks-collector-class-dynamic": Case("eks-training", ("--dynamic", COLLECTOR),
                                        "--dynamic"),
    "eks-operator-class-dynamic": Case("eks-training", ("--dynamic", "gpuoperator:operator.runtimeClass"),
                                       "--dynamic"),
    "eks-operator-class-unreadable": Case("eks-training", ("--set-json", "gpuoperator:operator.runtimeClass=5")),
    "eks-operator-class-empty": Case("eks-training", ("--set-json", 'gpuoperator:operator.runtimeClass=""')),
    # MariaDB ownership
    "slurm-no-evidence": Case("eks-slurm-aicr-accounting", warned="mariaDBOperatorState"),
    "slurm-mariadb-absent": Case("eks-slurm-aicr-accounting", metadata=(("mariaDBOperatorState", "absent"),)),
    "slurm-mariadb-api": Case("eks-slurm-aicr-accounting", metadata=(("mariaDBOperatorState", "api-detected"),),
                              warned="MariaDB Operator API"),
    "slurm-mariadb-crs": Case("eks-slurm-aicr-accounting", refused="customer-managed",
                              metadata=(("mariaDBOperatorState", "crs-detected"),)),
    "slurm-mariadb-unknown": Case("eks-slurm-aicr-accounting", refused="customer-managed",
                                  metadata=(("mariaDBOperatorState", "unknown"),)),
    "slurm-mariadb-unrecognized": Case("eks-slurm-aicr-accounting", refused="mariaDBOperatorState",
                                       metadata=(("mariaDBOperatorState", "present"),)),
}


@pytest.fixture(scope="session")
def recipes(aicr: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """AICR's recipe of each leaf."""
    folder = tmp_path_factory.mktemp("coherence-recipes")
    made = {}
    for name, leaf in LEAVES.items():
        made[name] = folder / f"{name}.yaml"
        subprocess.run([str(aicr), "recipe", *leaf.flags, "-o", str(made[name])], capture_output=True, check=True)
    return made


@needs(AICR_CATALOG)
@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_refuses_and_warns_where_aicr_does(case: Case, aicr: Path, recipes: dict[str, Path], cli: Any,
                                           tmp_path: Path) -> None:
    recipe = recipes[case.leaf]
    if case.metadata:
        data = yaml.safe_load(recipe.read_text())
        data["metadata"].update(dict(case.metadata))
        recipe = tmp_path / "recipe.yaml"
        recipe.write_text(yaml.safe_dump(data, sort_keys=False))
    # argocd-helm: a deployer both tools give --dynamic paths to (the checks do not depend on the deployer)
    args = ("--deployer", "argocd-helm", *LEAVES[case.leaf].bundle, *case.args)
    theirs = subprocess.run([str(aicr), "bundle", "-r", str(recipe), "-o", str(tmp_path / "aicr"), *args],
                            capture_output=True, text=True, check=False)
    ours = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "-o", str(tmp_path / "ours"), *args)
    said = theirs.stdout + theirs.stderr
    error = next((line for line in said.splitlines() if "command failed" in line), "")
    if case.refused is None:
        assert (theirs.returncode, ours.code) == (0, 0), (error, ours.err)
    else:
        assert (theirs.returncode, ours.code) == (2, 2), (said[-2000:], ours.err)
        assert case.refused in error, error
        assert ours.err.startswith("aicr-gen: error: ") and case.refused in ours.err, ours.err
        assert "Traceback" not in ours.err
    warnings = ("Warning: mariadb-operator: " in said, "aicr-gen: warning: mariadb-operator: " in ours.err)
    assert warnings == (bool(case.warned),) * 2, (said, ours.err)
    assert not case.warned or (case.warned in said and case.warned in ours.err), (said, ours.err)


def test_the_dispatch_knows_every_coherence_check() -> None:
    from aicr_gen.render import bundle_time, coherence

    assert set(coherence.CHECKS) == bundle_time.COHERENCE
