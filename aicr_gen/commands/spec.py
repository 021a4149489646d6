"""``aicr-gen spec init``: write a commented starting ``ClusterSpec`` for criteria the catalog covers."""

from __future__ import annotations

import json
import re

from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.errors import OK, InvalidInputError
from aicr_gen.output import write_text

_ORDER = ("accelerator", "service", "os", "intent", "platform")


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    return json.dumps(text, ensure_ascii=False)


def spec_name(query: dict[str, str]) -> str:
    """A DNS-label cluster name from the criteria, like the catalog's leaf overlays (h100-eks-ubuntu-...)."""
    parts = [query[dim] for dim in _ORDER if query.get(dim) not in (None, "", "any")]
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")[:63].strip("-")
    return name or "cluster"


def render(query: dict[str, str], deployers: list[str], catalogs: list[str], nodes: int) -> str:
    """The commented ClusterSpec text for resolved criteria."""
    from aicr_gen.gitops.spec import API_VERSION, DEFAULT_SNAPSHOT_SCHEDULE, KIND

    name = spec_name(query)
    lines = [
        "# ClusterSpec: one cluster, end to end. Check it with `aicr-gen schema clusterspec` (editor schema).",
        f"apiVersion: {API_VERSION}",
        f"kind: {KIND}",
        "metadata:",
        f"  name: {_q(name)}  # a DNS label naming the cluster",
        "spec:",
        "  # The recipe: which catalog overlays apply (see `aicr-gen recipe list`).",
        "  criteria:",
    ]
    lines += [f"    {dim}: {_q(query[dim])}" for dim in DIMENSIONS]
    if nodes:
        lines.append(f"    nodes: {nodes}  # advisory GPU node count")
    lines += ["  # Catalog folders laid out like AICR's recipes/, later wins; empty: the embedded catalog."]
    lines += ["  catalogs:"] + [f"    - {_q(folder)}" for folder in catalogs] if catalogs else ["  catalogs: []"]
    lines += [
        "  # Bundle deployer(s): helm, argocd, argocd-helm, flux or helmfile, each at most once.",
        "  deployers:",
        *[f"    - {deployer}" for deployer in deployers],
        "  # Where the bundle is committed: argocd and flux follow this repository, path and branch.",
        "  repo:",
        f"    url: {_q('https://github.com/example/gitops.git')}  # replace with your repository",
        f"    path: {_q('clusters/' + name)}  # relative POSIX path, no '..'",
        "    branch: main",
        "  # Component version pins over the catalog's (component: chart version).",
        "  versions: {}  # e.g. gpu-operator: v26.3.3",
        "  # Component value overrides, as `aicr-gen bundle --set/--set-json`.",
        "  overrides:",
        "    set: []  # e.g. - gpu-operator:driver.enabled=false",
        "    setJson: []  # e.g. - 'gpu-operator:tolerations=[]'",
        "  # NVCRE certification (`aicr-gen certification`).",
        "  certification:",
        "    categories:",
        "      - communication/nccl-all-reduce",
        "    # Threshold key -> CEL expression over `value`; none by default. For example:",
        "    #   busBandwidthGBps: \"value >= 300\"",
        "    thresholds: {}",
        "    options: {}  # e.g. gpusPerNode: 8",
        "    nodeSelector: {}  # label selector of the nodes to certify",
        "    # schedule: \"0 3 * * 0\"  # uncomment to certify weekly (Sundays at 03:00)",
        "    postChange: false  # true: certify after every change the deployer applies",
        "  # NVSentinel: monitor detects and reports only; quarantine cordons and taints faulty nodes.",
        "  sentinel:",
        "    mode: monitor",
        "    # rules: sentinel-rules.yaml  # extra fault-quarantine rule sets",
        "    # breaker: {percentage: 50, duration: 5m, maxNodes: 2}  # circuit breaker bounds",
        "    lifecycle: false  # lifecycle manager (scheduling gate)",
        "    validation: false  # post-remediation validation",
        "    dryRun: false  # log actions without taking them",
        "  # Drift watch: the snapshot agent CronJob stores snapshots in a ConfigMap; diff against the baseline.",
        "  snapshot:",
        f"    schedule: {_q(DEFAULT_SNAPSHOT_SCHEDULE)}  # hourly",
        "    configmap: \"cm://aicr/snapshot\"",
        f"    # baseline: {_q('clusters/' + name + '/golden-snapshot.yaml')}  # golden snapshot to diff against",
        "  # Policy files to enforce on the bundle.",
        "  policies: []",
    ]
    return "\n".join(lines) + "\n"


def init_command(folders: list[str], values: dict[str, str | None], deployers: list[str], output: str | None,
                 *, nodes: int = 0) -> int:
    """Resolve the criteria (so uncovered ones fail as ``recipe`` does), then write the starting spec."""
    from aicr_gen.commands.recipe import open_catalog
    from aicr_gen.gitops.spec import parse_spec
    from aicr_gen.render.options import DEPLOYERS
    from aicr_gen.resolve import criteria, recipe
    from aicr_gen.yamlio import load_text

    if nodes < 0:
        raise InvalidInputError(f"--nodes: {nodes} is negative; give a node count of 0 or more")
    chosen = deployers or ["argocd"]
    for deployer in chosen:
        if deployer not in DEPLOYERS:
            raise InvalidInputError(f"--deployer {deployer!r}: use one of {', '.join(DEPLOYERS)}")
    if len(set(chosen)) != len(chosen):
        raise InvalidInputError("--deployer: a deployer is given twice; give each once")
    catalog = open_catalog(folders)
    query = recipe.query_for(catalog, values)
    if all(value == criteria.ANY for value in query.values()):
        raise InvalidInputError(
            "no criteria given; pass at least one of --service, --accelerator, --intent, --os, --platform")
    recipe.resolve(catalog, query, recipe.Options(nodes=nodes))
    text = render(dict(query), chosen, folders, nodes)
    parse_spec(load_text(text, output or "<stdout>"))  # the starting spec must be valid
    write_text(output, text)
    return OK
