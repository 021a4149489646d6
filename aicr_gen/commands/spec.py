"""``aicr-gen spec init``: write a commented starting ``ClusterSpec`` for criteria the catalog covers;
``aicr-gen spec show``: the effective spec, layered over its fleet, with where each value comes from."""

from __future__ import annotations

import argparse
import re

from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any
_ORDER = ("accelerator", "service", "os", "intent", "platform")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``spec init`` (criteria flags) and ``spec show SPEC``."""
    from aicr_gen.commands.recipe import catalog_option

    subcommands = parser.add_subparsers(dest="spec_command", metavar="init|show", required=True)
    init = subcommands.add_parser("init", help="write a commented starting ClusterSpec for covered criteria")
    for dim in DIMENSIONS:
        init.add_argument(f"--{dim}", default=None, help=f"{dim} criterion (or 'any')")
    init.add_argument("--nodes", type=int, default=0, help="advisory GPU node count")
    init.add_argument("--deployer", action="append", default=[], metavar="D",
                      help="bundle deployer: helm, argocd, argocd-helm, flux or helmfile (repeatable; default argocd)")
    catalog_option(init)
    init.add_argument("--repo-url", metavar="URL", help="Git repository the bundle is committed to, which Argo CD and "
                      "Flux pull (default: a placeholder that lint and sync refuse until you replace it)")
    init.add_argument("--name", metavar="NAME", help="metadata.name, a DNS label naming the cluster (default: from the "
                      "criteria, e.g. h100-eks-ubuntu-training)")
    init.add_argument("--path", metavar="FOLDER", help="spec.repo.path, the cluster's folder in the repository "
                      "(default: clusters/NAME)")
    init.add_argument("-o", "--output", metavar="FILE", help="write the spec to FILE (atomically; default stdout); an "
                      "existing FILE is kept unless --force")
    init.add_argument("--force", action="store_true", help="overwrite an existing -o FILE")
    init.add_argument("--extends", metavar="FLEET", help="write a short spec extending the Fleet file FLEET (its "
                      "criteria, name and repo.path; everything else from the fleet)")
    show = subcommands.add_parser(
        "show", help="print the effective spec (layered over its fleet) with where each value comes from",
        description="Print the spec as sync, plan and lint see it: the Fleet its spec.extends names layered under "
        "it (maps merge, the spec's lists and scalars replace the fleet's, a null removes the fleet's value; paths "
        "from the fleet rebased onto the spec's folder), validated, each value with the file and line it comes "
        "from.", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='--format json prints {"spec": THE EFFECTIVE DOCUMENT, "origins": {FIELD: "FILE:LINE"}, '
               '"rebased": {FIELD: "PATH AS WRITTEN IN THE FLEET"}}\n(one origin per scalar and per empty map '
               'or list; FIELD as in error messages, e.g. spec.catalogs[0])')
    show.add_argument("spec_file", metavar="SPEC", help="ClusterSpec file")
    show.add_argument("--format", dest="show_format", choices=("yaml", "json"), default="yaml",
                      help="yaml (default: origins in comments) or json (the shape below)")
    show.add_argument("-o", "--output", dest="show_output", metavar="FILE",
                      help="write to FILE (atomically; default stdout)")


def run(args: argparse.Namespace) -> int:
    """``spec show`` prints the effective spec, ``spec init`` writes a starting one."""
    if args.spec_command == "show":
        return show_command(args.spec_file, args.show_format, args.show_output)
    return init_command(args.catalog, {dim: getattr(args, dim) for dim in DIMENSIONS}, args.deployer, args.output,
                        nodes=args.nodes, repo_url=args.repo_url, extends=args.extends, name=args.name,
                        path=args.path, force=args.force)


def _q(text: str) -> str:
    """A YAML double-quoted scalar (JSON strings are valid YAML)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def spec_name(query: dict[str, str]) -> str:
    """A DNS-label cluster name from the criteria, like the catalog's leaf overlays (h100-eks-ubuntu-...)."""
    parts = [query[dim] for dim in _ORDER if query.get(dim) not in (None, "", "any")]
    name = re.sub(r"[^a-z0-9-]+", "-", "-".join(parts).lower()).strip("-")[:63].strip("-")
    return name or "cluster"


TODO = "TODO(aicr-gen):"  # a placeholder spec init writes; lint reports each as an error until it is gone
_FLOOR = re.compile(r"^\s*>=\s*(\d+(?:\.\d+)?)\s*\Z")
_NCCL_FLOOR = "nccl-all-reduce-bw"  # AICR's NCCL all-reduce bus-bandwidth constraints (GB/s): -net, -nvls, ...


def _floors(validation: Any) -> dict[str, str]:
    """The NCCL all-reduce bus-bandwidth floors (constraint name -> GB/s) of a validation block."""
    performance = validation.get("performance") if isinstance(validation, dict) else None
    constraints = performance.get("constraints", []) if isinstance(performance, dict) else []
    return {str(c["name"]): match.group(1) for c in constraints
            if str(c.get("name", "")).startswith(_NCCL_FLOOR) and (match := _FLOOR.match(str(c.get("value", ""))))}


def deploys_nvcre(resolved: dict[str, Any]) -> bool:
    """Whether the resolved recipe deploys an enabled nvcre component (what acts on Certifications)."""
    from aicr_gen.resolve.refs import is_enabled

    return any(ref.get("name") == "nvcre" and is_enabled(ref) for ref in resolved.get("componentRefs", []))


def thresholds(resolved: dict[str, Any], catalog: Any) -> list[str]:
    """The spec's certification.thresholds lines, each choice explained in a comment: busBandwidthGBps from
    the recipe's NCCL floor (AICR's, calibrated on full nodes), the lowest when it has several; for a training
    recipe without one, the lowest floor the catalog has for the accelerator on another fabric (H100: AKS's 150
    GB/s under EKS's 300); for an accelerator with none, no threshold but a ``TODO`` placeholder that ``lint``
    reports (as the shipped training-needs-thresholds policy does an empty map), never a ``value > 0`` that
    passes any healthy or degraded fabric. The floors compare with NVCRE's busBandwidthGBps, the largest bus
    bandwidth over message sizes (nccl-tests' busbw = algbw x 2(n-1)/n for all-reduce), not nccl-tests'
    "Avg bus bandwidth" (../shared/design/facts-nvsentinel-nvcre.md, NVCRE thresholds and nccl-tests output)."""
    if not deploys_nvcre(resolved):  # thresholds without categories do nothing, and lint refuses them
        return ["    # Threshold key -> CEL expression over `value`, for the categories NVCRE runs: the recipe has no",
                "    # nvcre component, so none. With NVCRE, e.g.", "    #   busBandwidthGBps: \"value >= 300\"",
                "    thresholds: {}"]
    floors = _floors(resolved.get("validation"))
    applied = resolved.get("metadata", {}).get("appliedOverlays", [])
    if floors:
        name, value = min(floors.items(), key=lambda item: float(item[1]))
        source = next((overlay for overlay in reversed(applied)
                       if name in _floors(catalog.overlays[overlay]["spec"].get("validation"))), "the recipe")
        listed = ", ".join(f"{key} >= {floor}" for key, floor in sorted(floors.items()))
        lines = [f"    # busBandwidthGBps: the recipe's NCCL floor ({listed} GB/s, from overlay {source}; see",
                 "    # `aicr-gen recipe`, validation.performance), which AICR calibrated on full nodes: lower it for",
                 "    # smaller shapes of the same GPU."]
        if len(floors) > 1:
            lines.append(f"    # The lowest floor ({name}), so a certification over either transport clears it.")
        return [*lines, "    thresholds:", f"      busBandwidthGBps: \"value >= {value}\""]
    criteria = resolved.get("criteria", {})
    if criteria.get("intent") != "training":
        return ["    # Threshold key -> CEL expression over `value`; none by default. For example:",
                "    #   busBandwidthGBps: \"value >= 300\"", "    thresholds: {}"]
    accelerator = criteria.get("accelerator", "any")
    elsewhere = sorted((float(floor), floor, key, name) for name, overlay in catalog.overlays.items()
                       if (overlay["spec"].get("criteria") or {}).get("accelerator") == accelerator
                       for key, floor in _floors(overlay["spec"].get("validation")).items())
    if elsewhere:
        _, value, key, source = elsewhere[0]
        return ["    # busBandwidthGBps: the recipe has no NCCL floor for these criteria; the lowest AICR calibrated",
                f"    # for {accelerator} on another fabric ({key} >= {value} GB/s, overlay {source}). NVCRE",
                "    # compares it with the largest bus bandwidth over message sizes: raise it to what healthy nodes",
                "    # reach here.",
                "    thresholds:", f"      busBandwidthGBps: \"value >= {value}\""]
    return [f"    # {TODO} set a busBandwidthGBps floor for {accelerator}: no NCCL all-reduce figure is known for it.",
            "    # Run `aicr-gen certification` on healthy nodes and write the bus bandwidth they reach, e.g.",
            "    #   busBandwidthGBps: \"value >= 300\"",
            "    # then delete this TODO: lint fails while it is here (training-needs-thresholds: while none is set).",
            "    thresholds: {}"]


def render(query: dict[str, str], deployers: list[str], catalogs: list[str], nodes: int, *,
           resolved: dict[str, Any], catalog: Any, repo_url: str | None = None, name: str | None = None,
           path: str | None = None) -> str:
    """The commented ClusterSpec text for resolved criteria (``resolved``, from ``catalog``), named ``name``
    (default: from the criteria) in folder ``path`` (default: clusters/NAME)."""
    from aicr_gen.gitops.trees.render_tree import SENTINEL_COMPONENT
    from aicr_gen.resolve.refs import is_enabled
    from aicr_gen.spec.cluster import API_VERSION, DEFAULT_SNAPSHOT_SCHEDULE, KIND, PLACEHOLDER_URL

    name = name or spec_name(query)
    path = path or f"clusters/{name}"
    url = f"    url: {_q(repo_url)}" if repo_url else \
        f"    url: {_q(PLACEHOLDER_URL)}  # a placeholder: lint and sync refuse it until you set your repository"
    sentinel = [
        "  # NVSentinel: monitor detects and reports only; quarantine cordons and taints faulty nodes.",
        "  sentinel:",
        "    mode: monitor",
        "    # rules: sentinel-rules.yaml  # extra fault-quarantine rule sets",
        "    # breaker: {percentage: 50, duration: 5m, maxNodes: 2}  # circuit breaker bounds",
        "    lifecycle: false  # lifecycle manager (scheduling gate)",
        "    validation: false  # post-remediation validation",
        "    dryRun: false  # log actions without taking them",
    ]
    if not any(ref.get("name") == SENTINEL_COMPONENT and is_enabled(ref) for ref in resolved.get("componentRefs", [])):
        sentinel = ["  # NVSentinel: the recipe has no enabled nvsentinel component, so there is no sentinel section",
                    "  # (use a catalog with it to add one)."]
    categories = ["    categories:", "      - communication/nccl-all-reduce"] if deploys_nvcre(resolved) else [
        "    # The recipe has no enabled nvcre component, so nothing would act on Certifications (policy",
        "    # certification-needs-nvcre): use a catalog with NVCRE, or install it, then list categories here.",
        "    categories: []  # e.g. - communication/nccl-all-reduce"]
    from aicr_gen.text.schema_url import modeline

    lines = [
        modeline("clusterspec"),
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
        url,
        f"    path: {_q(path)}  # relative POSIX path, no '..'",
        "    branch: main",
        "  # Component version pins over the catalog's (component: chart version).",
        "  versions: {}  # e.g. gpu-operator: v26.3.3",
        "  # Component value overrides, as `aicr-gen bundle --set/--set-json`.",
        "  overrides:",
        "    set: []  # e.g. - gpu-operator:driver.enabled=false",
        "    setJson: []  # e.g. - 'gpu-operator:tolerations=[]'",
        "  # NVCRE certification (`aicr-gen certification`).",
        "  certification:",
        *categories,
        *thresholds(resolved, catalog),
        "    options: {}  # e.g. gpusPerNode: 8",
        "    nodeSelector: {}  # label selector of the nodes to certify",
        "    # schedule: \"0 3 * * 0\"  # uncomment to certify weekly (Sundays at 03:00)",
        "    postChange: false  # true: certify after every change the deployer applies",
        *sentinel,
        "  # Drift watch: the snapshot agent CronJob stores snapshots in a ConfigMap; diff against the baseline.",
        "  snapshot:",
        f"    schedule: {_q(DEFAULT_SNAPSHOT_SCHEDULE)}  # hourly",
        "    configmap: \"cm://aicr/snapshot\"",
        f"    # baseline: {_q(path + '/golden-snapshot.yaml')}  # golden snapshot to diff against",
        "  # Policy files to enforce on the bundle.",
        "  policies: []",
    ]
    return "\n".join(lines) + "\n"


def _check_naming(name: str | None, path: str | None) -> None:
    """``--name`` is a DNS label and ``--path`` a folder inside the repository, refused naming the option."""
    from aicr_gen.spec.cluster import repo_folder
    from aicr_gen.text.kube_names import is_dns_label

    if name is not None and not is_dns_label(name):
        raise InvalidInputError(f"--name {name!r}: give a DNS label (at most 63 lowercase letters, digits and '-', "
                                "starting and ending alphanumeric), e.g. h100-prod")
    if path is not None:
        try:
            repo_folder(path)
        except InvalidInputError as err:
            raise InvalidInputError(f"--path {err}") from None


def init_command(folders: list[str], values: dict[str, str | None], deployers: list[str], output: str | None,
                 *, nodes: int = 0, repo_url: str | None = None, extends: str | None = None,
                 name: str | None = None, path: str | None = None, force: bool = False) -> int:
    """Resolve the criteria (so uncovered ones fail as ``recipe`` does), then write the starting spec: one that
    passes ``aicr-gen lint`` as written once its repository URL is set (``repo_url``, else a placeholder) and,
    for a training cluster on a GPU with no known NCCL floor, its ``TODO`` threshold; with ``extends``, a short
    spec extending that Fleet file (``extending``). ``name`` and ``path`` set metadata.name and spec.repo.path.
    An existing ``output`` file is refused unless ``force``: it may be a hand-edited spec."""
    import os

    from aicr_gen.catalog.load import open_catalog
    from aicr_gen.edges.output import write_text
    from aicr_gen.render.options import DEPLOYERS
    from aicr_gen.resolve import criteria, recipe
    from aicr_gen.spec.validate import parse_spec, reserved_host
    from aicr_gen.yaml import load_text

    if nodes < 0:
        raise InvalidInputError(f"--nodes: {nodes} is negative; give a node count of 0 or more")
    chosen = deployers or ["argocd"]
    for deployer in chosen:
        if deployer not in DEPLOYERS:
            raise InvalidInputError(f"--deployer {deployer!r}: use one of {', '.join(DEPLOYERS)}")
    if len(set(chosen)) != len(chosen):
        raise InvalidInputError("--deployer: a deployer is given twice; give each once")
    _check_naming(name, path)
    if output not in (None, "-") and os.path.lexists(output) and not force:
        raise InvalidInputError(f"-o {output}: the file exists (a spec you may have edited); give another file, "
                                "or --force to overwrite it")
    if extends is not None:
        return extending(extends, folders, values, deployers, output, nodes=nodes, repo_url=repo_url, name=name,
                         path=path)
    catalog = open_catalog(folders)
    query = recipe.query_for(catalog, values)
    if all(value == criteria.ANY for value in query.values()):
        raise InvalidInputError(
            "no criteria given; pass at least one of --service, --accelerator, --intent, --os, --platform")
    if repo_url is not None and (not repo_url.strip() or reserved_host(repo_url)):
        raise InvalidInputError(f"--repo-url {repo_url!r}: give the URL of your GitOps repository, which Argo CD and "
                                "Flux pull, e.g. https://github.com/ORG/gitops.git")
    resolved = recipe.resolve(catalog, query, recipe.Options(nodes=nodes))
    text = render(dict(query), chosen, folders, nodes, resolved=resolved, catalog=catalog, repo_url=repo_url,
                  name=name, path=path)
    parse_spec(load_text(text, output or "<stdout>"), template=True)  # the starting spec must be valid
    write_text(output, text)
    return OK


def extending(fleet_file: str, folders: list[str], values: dict[str, str | None], deployers: list[str],
              output: str | None, *, nodes: int, repo_url: str | None, name: str | None = None,
              path: str | None = None) -> int:
    """Write a ClusterSpec extending the Fleet file ``fleet_file``: its name, criteria (resolved against the
    fleet's catalogs, or ``folders``) and folder, plus what the options give; everything else comes from the
    fleet. The spec is validated layered over the fleet, and its paths as ``lint`` checks them (a fleet outside
    the Git repository the spec is written in is refused), before it is written."""
    import os
    from pathlib import Path

    from aicr_gen.catalog.load import open_catalog
    from aicr_gen.edges.output import write_text
    from aicr_gen.resolve import criteria, recipe
    from aicr_gen.spec.cluster import API_VERSION, KIND, PLACEHOLDER_URL
    from aicr_gen.spec.fleet import check_fleet, effective, load_fleet
    from aicr_gen.spec.validate import check_references, parse_spec
    from aicr_gen.yaml import load_text

    loaded, doc = load_fleet(fleet_file)
    check_fleet(doc)
    fleet: Any = loaded  # the Fleet model is built at import time
    spec = fleet.spec
    fleet_folder = Path(fleet_file).parent
    catalog = open_catalog(folders or [str(fleet_folder / folder) for folder in spec.catalogs or []])
    query = recipe.query_for(catalog, values)
    if all(value == criteria.ANY for value in query.values()):
        raise InvalidInputError(
            "no criteria given; pass at least one of --service, --accelerator, --intent, --os, --platform")
    resolved = recipe.resolve(catalog, query, recipe.Options(nodes=nodes))
    name = name or spec_name(query)
    here = Path(output).parent if output else Path()
    relative = Path(os.path.relpath(Path(fleet_file).absolute(), here.absolute())).as_posix()
    from aicr_gen.text.schema_url import modeline

    lines = [modeline("clusterspec"),
             f"# ClusterSpec of the fleet {fleet.metadata.name}: everything not set here comes from {relative}",
             "# (`aicr-gen spec show FILE` prints the effective spec, each value with the file it comes from).",
             f"apiVersion: {API_VERSION}", f"kind: {KIND}", "metadata:",
             f"  name: {_q(name)}  # a DNS label naming the cluster", "spec:", f"  extends: {_q(relative)}",
             "  criteria:", *(f"    {dim}: {_q(query[dim])}" for dim in DIMENSIONS)]
    lines += [f"    nodes: {nodes}  # advisory GPU node count"] if nodes else []
    lines += ["  deployers:", *(f"    - {deployer}" for deployer in deployers)] if deployers else []
    lines += ["  repo:"]
    if repo_url is not None or spec.repo is None or spec.repo.url is None:
        url = repo_url or PLACEHOLDER_URL
        note = "" if repo_url else "  # a placeholder: lint and sync refuse it until you set your repository"
        lines.append(f"    url: {_q(url)}{note}")
    lines.append(f"    path: {_q(path or 'clusters/' + name)}  # this cluster's own folder")
    fleet_thresholds = spec.certification is not None and spec.certification.thresholds
    if not fleet_thresholds and (query["intent"] == "training" or _floors(resolved.get("validation"))):
        # thresholds apply to categories: the fleet's, else this cluster's own where NVCRE runs them
        fleet_categories = spec.certification is not None and spec.certification.categories
        categories = ["    categories:", "      - communication/nccl-all-reduce"] \
            if deploys_nvcre(resolved) and not fleet_categories else []
        lines += ["  # The fleet sets no certification thresholds; this cluster's:", "  certification:",
                  *categories, *thresholds(resolved, catalog)]
    if spec.argocd is not None and spec.argocd.shared:
        lines += ["  # The fleet's Argo CD is shared: where this cluster's Applications deploy (absent: the cluster",
                  "  # that Argo CD runs in).",
                  "  # argocd:",
                  "  #   destinationServer: \"https://API-SERVER\"  # or destinationName: NAME-IN-ARGO-CD"]
    text = "\n".join(lines) + "\n"
    cluster = parse_spec(effective(load_text(text, output or "<stdout>")), template=True)  # valid over its fleet
    # the rule lint applies: in a Git work tree, the fleet must be inside it (refused now, not at the first lint)
    check_references(cluster, Path(output) if output else Path.cwd() / "spec.yaml")
    write_text(output, text)
    return OK


# ------------------------------------------------------------------------------------------- spec show

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_./-]*\Z")
_WORDS = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}  # YAML 1.1 reads them as booleans or null


def _yaml_key(key: str) -> str:
    return key if _PLAIN_KEY.match(key) and key.lower() not in _WORDS else _q(key)


def _note(origin: Any) -> str:
    written = f" (written there as {_q(origin.written)})" if origin.written is not None else ""
    return f"  # {origin}{written}"


def annotated(data: dict[str, Any], origin: Any) -> str:
    """Block YAML of ``data`` with every leaf's origin (``origin(path)``: an ``Origin``) in a comment beside it;
    strings JSON-quoted (valid YAML, never retyped)."""
    import json

    out: list[str] = []

    def entry(head: str, value: Any, path: tuple[str | int, ...], indent: str) -> None:
        if isinstance(value, dict) and value:
            out.append(head)
            for key, item in value.items():
                entry(f"{indent}{_yaml_key(key)}:", item, (*path, key), indent + "  ")
        elif isinstance(value, list) and value:
            out.append(head)
            for index, item in enumerate(value):
                start = len(out)
                entry(f"{indent}-", item, (*path, index), indent + "  ")
                if out[start] == f"{indent}-" and len(out) > start + 1:  # a map: its first key on the dash line
                    out[start:start + 2] = [f"{indent}- {out[start + 1].lstrip()}"]
        else:
            empty = "{}" if isinstance(value, dict) else "[]" if isinstance(value, list) else json.dumps(value)
            out.append(f"{head} {empty}{_note(origin(path))}")

    for key, value in data.items():
        entry(f"{_yaml_key(key)}:", value, (key,), "  ")
    return "\n".join(out) + "\n"


def in_model_order(data: Any, model: Any) -> Any:
    """``data`` with each map the pydantic ``model`` describes in its fields' order (layering puts a fleet's
    keys after the cluster's; a reader looks for them where the schema has them); other maps as they are."""
    import typing

    from pydantic import BaseModel

    if not (isinstance(data, dict) and isinstance(model, type) and issubclass(model, BaseModel)):
        return data
    fields = list(model.model_fields)
    out = {}
    for key in sorted(data, key=lambda key: fields.index(key) if key in fields else len(fields)):
        info = model.model_fields.get(key)
        annotation = info.annotation if info is not None else None
        nested = next((arg for arg in (annotation, *typing.get_args(annotation))
                       if isinstance(arg, type) and issubclass(arg, BaseModel)), None)
        out[key] = in_model_order(data[key], nested)
    return out


def leaves(data: Any, path: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """The field paths of ``data``'s scalars and empty maps and lists, in document order."""
    if isinstance(data, dict) and data:
        return [found for key, item in data.items() for found in leaves(item, (*path, key))]
    if isinstance(data, list) and data:
        return [found for index, item in enumerate(data) for found in leaves(item, (*path, index))]
    return [path]


def pool_notes(cluster: Any, spec_file: str) -> list[str]:
    """With spec.pools, what resolving them gives (``gitops.pools.provenance``): who owns the driver, which pool
    brought which component or value; no pools: nothing."""
    from pathlib import Path

    from aicr_gen.gitops.trees.pools import provenance
    from aicr_gen.gitops.trees.recipes import resolve_pools
    if not cluster.spec.pools:
        return []
    base = Path.cwd() if spec_file == "-" else Path(spec_file).resolve().parent
    return provenance(cluster, resolve_pools(cluster, base))


def show_command(spec_file: str, output_format: str = "yaml", output: str | None = None) -> int:
    """Print the effective spec of ``spec_file`` (layered over its fleet, validated) with each value's origin:
    YAML with ``# FILE:LINE`` comments, or JSON ``{"spec": ..., "origins": {PATH: "FILE:LINE"}, "rebased":
    {PATH: AS_WRITTEN}}``."""
    from aicr_gen.edges.output import write_text
    from aicr_gen.spec.cluster import ClusterSpec
    from aicr_gen.spec.layered import origin_of
    from aicr_gen.spec.load import load_spec
    from aicr_gen.yaml import dump_json, format_path

    cluster = load_spec(spec_file)
    doc = cluster.document
    assert doc is not None
    data: dict[str, Any] = in_model_order(doc.data, ClusterSpec)
    pools = pool_notes(cluster, spec_file)
    if output_format == "json":
        origins = {path: origin_of(doc, path) for path in leaves(data)}
        text = dump_json({"spec": data, "origins": {format_path(path): str(found) for path, found in origins.items()},
                          "rebased": {format_path(path): found.written for path, found in origins.items()
                                      if found.written is not None},
                          **({"pools": pools} if pools else {})})
    else:
        fleet = f", layered over the fleet {cluster.spec.extends}" if cluster.spec.extends else ""
        text = (f"# The effective ClusterSpec of {spec_file}{fleet}; beside each value, the file and line it comes "
                "from.\n" + annotated(data, lambda path: origin_of(doc, path))
                + "".join(f"# {line}\n" for line in (["The pools, resolved:"] if pools else []) + pools))
    write_text(output, text)
    return OK
