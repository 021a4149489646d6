"""NVCRE ``Certification`` objects (``nvcre.nvidia.com/v1alpha1``): the category catalog, typed options,
the target and threshold placement.

The fields follow NVCRE's ``api/v1alpha1/certification_types.go`` (``CertificationSpec`` inlines
``CategoryOptions`` as global defaults; ``categories[].options`` overrides them per category). The catalog
says which options each category reads (NVCRE ignores the rest, so an ignored option is refused here as
the mistake it is) and which threshold keys its measurements produce: a threshold on a metric a category
never measures makes NVCRE wait ``measurementTimeout`` and then fail the category.

Threshold placement: NVCRE replaces the global ``thresholds`` map with a category's own map rather than
merging the two, so when any category needs different thresholds each category gets its complete map
(the global thresholds it measures plus its own) and no global map is written.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from aicr_gen.errors import InvalidInputError, refusal
from aicr_gen.text.kube_names import is_dns_subdomain, is_label_value, label_key_problem

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.errors import Refuse, Where

API_VERSION = "nvcre.nvidia.com/v1alpha1"
KIND = "Certification"
MANAGED_BY = {"app.kubernetes.io/managed-by": "aicr-gen"}
POOL_LABEL = "aicr-gen.dev/pool"
"""Label of a Certification that certifies one GPU node pool (``spec.pools``); bisection and reports keep it."""
INT32_MAX = 2**31 - 1

_BANDWIDTH = ("algBandwidthGBps", "busBandwidthGBps")
_GOODPUT = ("avgStepTimeSec", "avgTFLOPsPerGPU", "goodputRatio")
_COMMON = frozenset({"gpusPerNode", "image", "imagePullSecrets", "repeatCount", "maxConcurrent", "timeoutPerJob",
                     "workloadMetadata"})
_MEASURED = frozenset({"thresholds", "measurementTimeout"})
_NCCL = frozenset({"maxBytes", "numIterations", "numCycles", "enableMNNVL", "mlnxPerNode", "nicResourceName"})
_MULTI_NODE = frozenset({"nodesPerJob", "testScale", "minGroupSize"})
_TRAINING = frozenset({"nodesPerJob", "enableCheckpoint", "maxSteps", "exitDurationMins",
                       "startupStallTimeoutSeconds", "mlnxPerNode", "nicResourceName", "resources", "enableMNNVL",
                       "storageClassName", "saveInterval", "saveRetainInterval", "saveTopK", "storageSize",
                       "maxRestarts", "sourceRepo"})


@dataclass(frozen=True)
class Category:
    """One NVCRE catalog entry: the options it reads and the threshold keys its measurements produce."""

    domain: str
    variant: str
    options: frozenset[str]
    measures: tuple[str, ...]

    @property
    def name(self) -> str:
        return f"{self.domain}/{self.variant}"


def _catalog() -> dict[str, Category]:
    entries = [Category("communication", variant, _COMMON | _MEASURED | _NCCL | _MULTI_NODE, _BANDWIDTH)
               for variant in ("nccl-all-reduce", "nccl-all-gather", "nccl-alltoall")]
    entries += [Category("communication", variant, _COMMON | _MEASURED | _NCCL, _BANDWIDTH)
                for variant in ("nccl-loopback", "nccl-loopback-nvswitch")]
    entries.append(Category("diagnostics", "dcgm-level4", _COMMON, ()))
    entries += [Category("training", variant, _COMMON | _MEASURED | _TRAINING, _GOODPUT)
                for variant in ("nemotron5-8b", "nemotron5-56b")]
    return {entry.name: entry for entry in entries}


CATALOG = _catalog()
"""NVCRE's catalog (``pkg/catalog/entries/<domain>/<variant>.yaml``) by ``domain/variant``."""


def load_schema() -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of the Certifications aicr-gen writes, shipped as package data."""
    from importlib.resources import files

    text = files("aicr_gen.certify").joinpath("data/certification.schema.json").read_text(encoding="utf-8")
    schema: dict[str, Any] = json.loads(text)
    return schema


# ---------------------------------------------------------------------------------------------- options

OPTION_ORDER = (
    "nodesPerJob", "enableCheckpoint", "maxSteps", "exitDurationMins", "startupStallTimeoutSeconds", "gpusPerNode",
    "mlnxPerNode", "nicResourceName", "resources", "enableMNNVL", "image", "imagePullSecrets", "storageClassName",
    "saveInterval", "saveRetainInterval", "saveTopK", "storageSize", "maxRestarts", "repeatCount", "testScale",
    "maxBytes", "numIterations", "numCycles", "thresholds", "maxConcurrent", "minGroupSize", "timeoutPerJob",
    "measurementTimeout", "sourceRepo", "workloadMetadata",
)
"""``CategoryOptions`` fields in NVCRE's order (the order they are written in)."""

INT_MINIMUM = {"nodesPerJob": 1, "maxSteps": -1, "exitDurationMins": 1, "startupStallTimeoutSeconds": 1,
               "gpusPerNode": 1, "mlnxPerNode": 0, "saveInterval": 1, "saveRetainInterval": 1, "saveTopK": 1,
               "maxRestarts": 0, "repeatCount": 1, "numIterations": 1, "numCycles": 1, "maxConcurrent": 0,
               "minGroupSize": 1}
BOOLEANS = ("enableCheckpoint", "enableMNNVL")
TEST_SCALES = ("intra-node", "intra-rack", "diagnose", "full-scale")
TAINT_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")
PATTERNS = {
    "maxBytes": (r"[0-9]+(K|M|G|T)?", 64, "16G"),
    "storageSize": (r"([0-9]+(\.[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei)?", 64, "10Ti"),
    "timeoutPerJob": (r"([0-9]+(h|m|s|ms))+", 64, "1h30m"),
    "measurementTimeout": (r"([0-9]+(h|m|s|ms))+", 64, "5m"),
    "sourceRepo": (r"(https|ssh)://[A-Za-z0-9._~:/@%+-]+", 2048, "https://github.com/NVIDIA/Megatron-LM.git"),
    "nicResourceName": (r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
                        r"/[a-zA-Z0-9]([-A-Za-z0-9_.]{0,61}[a-zA-Z0-9])?", 253, "rdma/ib"),
    "image": (r"[^\s]+", 512, "nvcr.io/nvidia/pytorch:26.01-py3"),
    "storageClassName": (r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*", 253, "fast-ssd"),
}
QUANTITY = re.compile(r"(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+|Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?")
_QUANTITY_SCALE: dict[str, Decimal | int] = {
    "": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"), "k": 10**3, "M": 10**6, "G": 10**9,
    "T": 10**12, "P": 10**15, "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50,
    "Ei": 2**60}
RESOURCE_KEYS = tuple(f"resources.{side}.{kind}" for side in ("limits", "requests") for kind in ("cpu", "memory"))
LABELS_PREFIX = "workloadMetadata.labels."
MAX_WORKLOAD_LABELS = 32


def option_keys() -> list[str]:
    """Every ``--option`` key, as users write it."""
    plain = [key for key in OPTION_ORDER if key not in ("thresholds", "resources", "workloadMetadata")]
    return sorted([*plain, *RESOURCE_KEYS, f"{LABELS_PREFIX}KEY"])


def parse_option(key: str, text: str, where: Where) -> tuple[tuple[str, ...], Any]:
    """``--option KEY=VALUE`` as a field path and a typed value (ints and bools typed, quantities and
    durations kept as strings). Unknown keys and bad values are input errors naming the valid form."""
    error = refusal(where)
    if key == "thresholds" or key.startswith("thresholds."):
        raise error("thresholds are set with --threshold [DOMAIN/VARIANT:]KEY=EXPR, e.g. "
                    "--threshold 'busBandwidthGBps=value >= 300'")
    if key in INT_MINIMUM:
        return (key,), _integer(key, text, INT_MINIMUM[key], error)
    if key in BOOLEANS:
        if text.lower() not in ("true", "false"):
            raise error(f"{key} takes true or false, not {text!r}")
        return (key,), text.lower() == "true"
    if key == "testScale":
        if text not in TEST_SCALES:
            raise error(f"testScale {text!r} is not one of {', '.join(TEST_SCALES)}")
        return (key,), text
    if key in PATTERNS:
        return (key,), _patterned(key, text, error)
    if key == "imagePullSecrets":
        names = text.split(",")
        for name in names:
            if not is_dns_subdomain(name):
                raise error("imagePullSecrets takes Secret names separated by commas "
                            f"(e.g. ngc-pull,mirror-pull); {name!r} is not a Secret name")
        if len(set(names)) != len(names):
            raise error("imagePullSecrets names a Secret twice; list each once")
        return (key,), [{"name": name} for name in names]
    if key in RESOURCE_KEYS:
        if not (len(text) <= 32 and QUANTITY.fullmatch(text)):
            raise error(f"{key} takes a non-negative Kubernetes quantity such as 64, 1500m or "
                        f"500Gi, not {text!r}")
        return tuple(key.split(".")), text
    if key.startswith(LABELS_PREFIX):
        label = key[len(LABELS_PREFIX):]
        _check_label(label, text, error, workload=True)
        return ("workloadMetadata", "labels", label), text
    raise error(f"unknown option {key!r}; options are {', '.join(option_keys())}")


def _integer(key: str, text: str, minimum: int, error: Refuse) -> int:
    if not re.fullmatch(r"-?[0-9]{1,12}", text) or not minimum <= int(text) <= INT32_MAX:
        raise error(f"{key} takes a whole number from {minimum} to {INT32_MAX}, not {text!r}")
    return int(text)


def _patterned(key: str, text: str, error: Refuse) -> str:
    pattern, limit, example = PATTERNS[key]
    if len(text) > limit or not re.fullmatch(pattern, text):
        raise error(f"{key} {text!r} is not valid; write it like {example!r}")
    if key == "nicResourceName" and ("kubernetes.io/" in text or text.startswith("k8s.io/") or ".k8s.io/" in text):
        raise error("nicResourceName must not use the reserved kubernetes.io or k8s.io domains")
    return text


def quantity(text: str) -> Decimal:
    """The value of a Kubernetes quantity already matched by ``QUANTITY``."""
    match = QUANTITY.fullmatch(text)
    if match is None:
        raise ValueError(text)
    number, suffix = Decimal(match.group(1)), match.group(3) or ""
    if suffix[:1] in ("e", "E"):
        return number * Decimal(10) ** int(suffix[1:])
    return number * Decimal(_QUANTITY_SCALE[suffix])


def _check_label(key: str, value: str, error: Refuse, *, workload: bool = False) -> None:
    if problem := label_key_problem(key):
        raise error(problem)
    if workload and (key == "app.kubernetes.io/managed-by" or key.startswith("nvcre.nvidia.com/")):
        raise error(f"label {key!r} is owned by the NVCRE controller; choose another key")
    if value and not is_label_value(value):
        raise error(f"label value {value!r} is not valid (at most 63 characters of "
                    "[A-Za-z0-9-_.], starting and ending alphanumeric)")


def check_resources(options: Mapping[str, Any], where: Where) -> None:
    """NVCRE's admission rule: a request may not exceed its limit at the same level."""
    error = refusal(where)
    resources = options.get("resources", {})
    for kind in ("cpu", "memory"):
        request, limit = resources.get("requests", {}).get(kind), resources.get("limits", {}).get(kind)
        if request is not None and limit is not None and quantity(request) > quantity(limit):
            raise error(f"resources.requests.{kind} {request} exceeds resources.limits.{kind} "
                        f"{limit}; NVCRE refuses the Certification, so raise the limit or lower the "
                        "request")


def set_option(options: dict[str, Any], path: tuple[str, ...], value: Any, where: Where) -> None:
    """Set ``path`` in ``options``; the same option twice is an error rather than a silent override."""
    error = refusal(where)
    node = options
    for part in path[:-1]:
        node = node.setdefault(part, {})
    if path[-1] in node:
        raise error(f"{'.'.join(path)} is given twice; give it once")
    node[path[-1]] = value
    labels = options.get("workloadMetadata", {}).get("labels", {})
    if len(labels) > MAX_WORKLOAD_LABELS:
        raise error(f"more than {MAX_WORKLOAD_LABELS} workloadMetadata labels (NVCRE's limit)")


# ---------------------------------------------------------------------------------------------- catalog


def category(text: str, where: Where) -> Category:
    """The catalog entry named ``DOMAIN/VARIANT``; an unknown one is an error listing the catalog."""
    error = refusal(where)
    found = CATALOG.get(text)
    if found is None:
        raise error(f"unknown category {text!r}; the NVCRE catalog has "
                    f"{', '.join(sorted(CATALOG))}")
    return found


def check_category_options(entry: Category, options: Mapping[str, Any], where: Where) -> None:
    """Refuse an option ``entry`` does not read (NVCRE would silently ignore it)."""
    error = refusal(where)
    for key in options:
        if key not in entry.options:
            raise error(f"{entry.name} does not use {key}; it takes "
                        f"{', '.join(sorted(entry.options - {'thresholds'}))}")


def check_global_options(entries: Sequence[Category], options: Mapping[str, Any], where: Where) -> None:
    """Refuse a global option that no selected category reads."""
    error = refusal(where)
    for key in options:
        if not any(key in entry.options for entry in entries):
            users = sorted(name for name, entry in CATALOG.items() if key in entry.options)
            raise error(f"none of the selected categories uses {key} (it applies to "
                        f"{', '.join(users)}); drop it or add such a category")


# ------------------------------------------------------------------------------------------- the object


def target(node_selector: Mapping[str, str], node_names: Sequence[str],
           taint_selectors: Sequence[Mapping[str, str]]) -> dict[str, Any]:
    """``spec.target``: nodes by label or by name (not both: NVCRE ignores the selector when names are
    given), optionally narrowed to nodes carrying every listed taint."""
    if bool(node_selector) == bool(node_names):
        raise InvalidInputError("give the target nodes with --node-selector K=V or with --node NAME (one of the two; "
                                "NVCRE ignores the selector when node names are given)")
    body: dict[str, Any] = ({"nodeSelector": dict(node_selector)} if node_selector
                            else {"nodeNames": list(node_names)})
    if taint_selectors:
        body["taintSelectors"] = [dict(taint) for taint in taint_selectors]
    return body


def ordered_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """Options in NVCRE's field order, nested maps sorted, so the output never depends on flag order."""
    out: dict[str, Any] = {}
    for key in OPTION_ORDER:
        if key in options:
            out[key] = _sorted(options[key]) if key != "imagePullSecrets" else options[key]
    return out


def _sorted(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {key: _sorted(value[key]) for key in sorted(value)}
    return value


def place_thresholds(entries: Sequence[Category], global_thresholds: Mapping[str, str],
                     category_thresholds: Mapping[str, Mapping[str, str]]) -> tuple[dict[str, str],
                                                                                 dict[str, dict[str, str]]]:
    """(spec-level map, per-category maps). Each key must be measured where it applies; see the module
    docstring for why a category with its own map gets the global keys it measures copied in."""
    for name, mapping in category_thresholds.items():
        entry = CATALOG[name]
        for key in mapping:
            if key not in entry.measures:
                raise InvalidInputError(_unmeasured(key, f"--threshold {name}:{key}", [entry]))
    for key in global_thresholds:
        if not any(key in entry.measures for entry in entries):
            raise InvalidInputError(_unmeasured(key, f"--threshold {key}", entries))
    effective = {entry.name: {**{k: v for k, v in global_thresholds.items() if k in entry.measures},
                              **category_thresholds.get(entry.name, {})} for entry in entries}
    if all(mapping == dict(global_thresholds) for mapping in effective.values()):
        return dict(sorted(global_thresholds.items())), {}
    return {}, {name: dict(sorted(mapping.items())) for name, mapping in effective.items() if mapping}


def _unmeasured(key: str, where: str, entries: Sequence[Category]) -> str:
    names = ", ".join(entry.name for entry in entries)
    measuring = sorted(name for name, entry in CATALOG.items() if key in entry.measures)
    detail = (f"it is measured by {', '.join(measuring)}" if measuring
              else "no category in the catalog measures it")
    return (f"{where}: {names} never measure{'s' if len(entries) == 1 else ''} {key} ({detail}); NVCRE would wait "
            "measurementTimeout for it and fail, so drop the threshold or scope it to a category that measures it")


def certification(name: str, namespace: str, *, target_spec: Mapping[str, Any], entries: Sequence[Category],
                  global_options: Mapping[str, Any], category_options: Mapping[str, Mapping[str, Any]],
                  global_thresholds: Mapping[str, str],
                  category_thresholds: Mapping[str, Mapping[str, str]],
                  labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The Certification object (categories in the given order), with ``labels`` beside aicr-gen's. Options and
    thresholds must already be parsed and compiled; this checks where they apply."""
    check_global_options(entries, global_options, "--option")
    check_resources(global_options, "--option")
    for entry in entries:
        options = category_options.get(entry.name, {})
        check_category_options(entry, options, f"--option {entry.name}:")
        check_resources(options, f"--option {entry.name}:")
    spec_thresholds, per_category = place_thresholds(entries, global_thresholds, category_thresholds)
    categories = []
    for entry in entries:
        options = dict(category_options.get(entry.name, {}))
        if entry.name in per_category:
            options["thresholds"] = per_category[entry.name]
        item: dict[str, Any] = {"domain": entry.domain, "variant": entry.variant}
        if options:
            item["options"] = ordered_options(options)
        categories.append(item)
    spec: dict[str, Any] = {"target": dict(target_spec), "categories": categories}
    spec.update(ordered_options({**global_options, **({"thresholds": spec_thresholds} if spec_thresholds else {})}))
    return {"apiVersion": API_VERSION, "kind": KIND,
            "metadata": {"name": name, "namespace": namespace, "labels": {**MANAGED_BY, **(labels or {})}},
            "spec": spec}


def with_generate_name(cert: Mapping[str, Any], labels: Mapping[str, str]) -> dict[str, Any]:
    """The same Certification named by the API server (``metadata.generateName: <name>-``), for jobs that
    create a fresh one each run; ``labels`` mark which job made it."""
    metadata = dict(cert["metadata"])
    name = metadata.pop("name")
    metadata = {"generateName": f"{name}-", **metadata, "labels": {**metadata.get("labels", {}), **labels}}
    return {**cert, "metadata": metadata}
