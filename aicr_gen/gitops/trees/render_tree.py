"""The managed tree of ``aicr-gen sync``: everything a ClusterSpec renders, as one deterministic ``Bundle``.

Pure apart from reading the catalog (and a sentinel rules file): no Git, no writes. Layout (relative to
the managed path in the repository)::

    recipe.yaml                 the resolved recipe (its sha256 is the commit's recipe digest)
    <deployer>/...              one bundle per deployer in spec.deployers (with its own checksums.txt); with
                                spec.sentinel, its NVSentinel values are merged into the nvsentinel component
    certification/...           NVCRE Certification (+ CronJob / post-change jobs), when categories are set
    pools/<pool>/certification/ the pool's Certification bundle, when spec.pools[].certification is set
    pools/<pool>/validation/    the pool's ValidationRequest template, when spec.sentinel.lifecycle is on
    sentinel/values.yaml        the NVSentinel values alone (for review and ``aicr-gen rules test``)
    validation/...              a ValidationRequest template, when spec.sentinel.lifecycle is on
    snapshot-agent/...          the snapshot agent CronJob and its RBAC, when spec.snapshot is set
    (with spec.mirror, every chart source and image of the tree points at the site mirror: ``mirror/rewrite.py``)
    pools/...                   with spec.pools: each pool's recipe.yaml and a README of who brought what (the
                                pools' NVIDIADrivers are in each deployer bundle, after the GPU Operator chart)
    checksums.txt               sha256 of every other file of the tree
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

from aicr_gen.bundle import Bundle
from aicr_gen.certify.cron import STACK_DIGEST
from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.trees.certification import certification_bundle
from aicr_gen.gitops.trees.pools import (
    certified,
    pool_applied_folders,
    pool_certifications,
    pool_tree,
    pool_validation,
    rule_set_selectors,
)
from aicr_gen.gitops.trees.recipes import open_spec_catalog, resolve_spec
from aicr_gen.spec.cluster import ClusterSpec, managed_path
from aicr_gen.spec.pools import CERT_NAME
from aicr_gen.spec.validate import check_present

CERT_NAMESPACE = "nvcre-system"  # NVCRE's chart namespace, where the recipe has no nvcre component to say
NVCRE_COMPONENT = "nvcre"
POST_CHANGE_ARGOCD = "certification/post-change/argocd"
DEFAULT_SELECTOR = {"nvidia.com/gpu.present": "true"}  # spec.certification.nodeSelector empty: every GPU node
SENTINEL_COMPONENT = "nvsentinel"
TEMPLATE_NODE = "node-name"  # the placeholder of the ValidationRequest template


def _plan(cluster: ClusterSpec, catalog: Any, recipe: dict[str, Any], deployer: str,
          sentinel: dict[str, Any] | None) -> Any:
    """The deployment plan of ``recipe`` for ``deployer``, as ``aicr-gen bundle`` builds it: the NVSentinel
    values (if any) deep-merged over the nvsentinel component's as Helm layers values files, then the
    spec's overrides."""
    from aicr_gen.render.prepare import plan_for
    from aicr_gen.spec.overrides import Override, parse
    from aicr_gen.spec.validate import scheduling_of
    overrides = cluster.spec.overrides
    parsed = [] if sentinel is None else [Override(SENTINEL_COMPONENT, (), sentinel, merge=True, flag="spec.sentinel")]
    for flag, field in (("--set", "set"), ("--set-json", "setJson")):  # a refusal names the spec's line
        parsed += [parse(flag, text)._replace(flag=partial(cluster.error, ("spec", "overrides", field, index)))
                   for index, text in enumerate(getattr(overrides, field) if overrides else [])]
    scheduling = scheduling_of(cluster.spec.scheduling, lambda path, message: InvalidInputError(
        f"{'.'.join(('spec.scheduling', *map(str, path)))}: {message}"))
    dynamic = list(overrides.dynamic) if overrides else []
    if dynamic and deployer == "argocd":
        raise cluster.error(("spec", "overrides", "dynamic"), "the argocd deployer has no "
                            "install-time values; deploy with argocd-helm (values at helm install) or drop "
                            "spec.overrides.dynamic")
    return plan_for(recipe, catalog, parsed, deployer, scheduling, dynamic=dynamic)


def _enabled(recipe: dict[str, Any], component: str) -> dict[str, Any] | None:
    from aicr_gen.resolve.refs import is_enabled

    return next((ref for ref in recipe.get("componentRefs", []) if ref.get("name") == component and is_enabled(ref)),
                None)


def certification_namespace(recipe: dict[str, Any]) -> str:
    """Where the certification objects live: beside NVCRE, i.e. the nvcre component's namespace."""
    nvcre = _enabled(recipe, NVCRE_COMPONENT)
    return str(nvcre.get("namespace") or CERT_NAMESPACE) if nvcre else CERT_NAMESPACE


def _certification(cluster: ClusterSpec, namespace: str, stack_digest: str) -> Bundle:
    """The cluster-wide certification bundle of spec.certification."""
    cert_spec = cluster.spec.certification
    assert cert_spec is not None
    return certification_bundle(cert_spec, CERT_NAME, namespace, cert_spec.nodeSelector or DEFAULT_SELECTOR,
                                stack_digest)


def _sentinel(cluster: ClusterSpec, base: Path, recipe: dict[str, Any]) -> dict[str, Any]:
    """NVSentinel values of spec.sentinel; the recipe must carry an enabled nvsentinel component for them."""
    from aicr_gen.sentinel import values as sentinel
    from aicr_gen.yaml import decode, load_text

    spec = cluster.spec.sentinel
    assert spec is not None
    rules: list[dict[str, Any]] = []
    if spec.rules is not None:
        from aicr_gen.edges.inputs import read_input

        check_present(cluster, base, "sentinel")
        source = str(base / spec.rules)
        rules = sentinel.parse_rules(load_text(decode(read_input(source, "spec.sentinel.rules"), source), source))
    found = spec.breaker
    breaker = sentinel.Breaker(percentage=found.percentage if found else None,
                               duration=found.duration if found else None,
                               max_nodes=found.maxNodes if found else None)
    if _enabled(recipe, SENTINEL_COMPONENT) is None:
        raise cluster.error(("spec", "sentinel"), "the recipe has no enabled "
                            f"{SENTINEL_COMPONENT} component to carry these values; use a catalog that "
                            "includes it or drop spec.sentinel")
    out = sentinel.values(spec.mode, rules=rules, breaker=breaker, lifecycle=spec.lifecycle,
                          validation=spec.validation, dry_run=spec.dryRun)
    if not spec.ruleSetPools:
        return out
    try:
        return sentinel.limit_rule_sets(out, rule_set_selectors(cluster))
    except InvalidInputError as err:
        raise cluster.error(("spec", "sentinel", "ruleSetPools"), str(err)) from None


def _validation(values: dict[str, Any]) -> Bundle:
    """A ValidationRequest template for the lifecycle manager's default tests (``kubectl create`` it with
    the node names filled in, or use ``aicr-gen validation-request``)."""
    from aicr_gen.sentinel import validation_request
    from aicr_gen.yaml import Document, dump

    lifecycle = validation_request.lifecycle_tests(Document("spec.sentinel", values))
    request = validation_request.build([TEMPLATE_NODE], name=f"{TEMPLATE_NODE}-validation", lifecycle=lifecycle)
    readme = "\n".join([
        "# ValidationRequest template", "",
        f"`validation-request.yaml` asks NVSentinel's lifecycle manager to run its default tests "
        f"({', '.join(lifecycle.default_tests) or 'none'}) on a node and lift its scheduling gate when they pass.",
        f"Replace `{TEMPLATE_NODE}` (in the node list and the name) and create it; its spec is immutable, so delete "
        "a finished request before asking again for the same node:", "",
        "```bash",
        f"sed 's/{TEMPLATE_NODE}/NODE/g' validation-request.yaml | kubectl create -f -",
        "aicr-gen validation-request --node NODE --values ../sentinel/values.yaml  # named, checked, any tests",
        "```", ""])
    return Bundle({"validation-request.yaml": ("# Generated by aicr-gen\n" + dump(request)).encode(),
                   "README.md": readme.encode()}).with_checksums()


def _snapshot_agent(cluster: ClusterSpec) -> Bundle:
    from aicr_gen.drift.agent import agent_bundle
    from aicr_gen.text.configmap_source import parse_cm_source
    spec = cluster.spec.snapshot
    assert spec is not None
    namespace, name = parse_cm_source(spec.configmap)
    return agent_bundle(namespace, name, spec.schedule)


def applied_folders(cluster: ClusterSpec, deployer: str, recipe: dict[str, Any]) -> list[tuple[str, str]]:
    """``(folder, namespace)`` of the tree's folders (relative to the managed path) that ``deployer`` applies
    after the stack: the certification CronJob, the Argo CD post-change hook and the snapshot agent. The
    deployer creates each namespace that no component does. Only argocd and flux apply folders from Git; the
    Flux post-change Kustomization and the one-off Certification stay manual (see certification/README.md),
    as do the ValidationRequest template and the sentinel values."""
    from aicr_gen.render.options import EXTRA_PATHS_DEPLOYERS
    from aicr_gen.text.configmap_source import parse_cm_source

    if deployer not in EXTRA_PATHS_DEPLOYERS:
        return []
    folders: list[tuple[str, str]] = []
    cert = cluster.spec.certification
    if cert is not None and cert.categories:
        namespace = certification_namespace(recipe)
        folders += [("certification/schedule", namespace)] if cert.schedule is not None else []
        folders += [(POST_CHANGE_ARGOCD, namespace)] if cert.postChange and deployer == "argocd" else []
    folders += pool_applied_folders(cluster, deployer, certification_namespace(recipe))
    if cluster.spec.snapshot is not None:
        folders.append(("snapshot-agent", parse_cm_source(cluster.spec.snapshot.configmap)[0]))
    return folders


def argocd_settings(cluster: ClusterSpec, deployer: str) -> dict[str, Any]:
    """The deployer settings spec.argocd gives the argocd and argocd-helm bundles (``Options`` fields): the
    destination, Argo CD's namespace and project, and for a shared Argo CD the cluster's name as the prefix of
    every Argo CD object (``argocd.shared_names``)."""
    from aicr_gen.render.argocd import shared_names
    from aicr_gen.render.options import IN_CLUSTER

    settings = cluster.spec.argocd
    if settings is None or deployer not in ("argocd", "argocd-helm"):
        return {}
    found: dict[str, Any] = {"destination_server": settings.destinationServer or IN_CLUSTER,
                             "destination_name": settings.destinationName or "",
                             "argocd_namespace": settings.namespace, "project": settings.project}
    if settings.is_shared():
        prefix, root = shared_names(cluster.metadata.name)
        # the chart of argocd-helm names its Applications at install time, so only argocd shortens names
        found |= {"name_prefix": prefix, "app_name": root, "shared": deployer == "argocd"}
    return found


def deployer_options(cluster: ClusterSpec, deployer: str, folder: str) -> Any:
    """The ``Options`` of ``deployer``'s bundle in the tree at ``folder``: repository, branch, the bundle's
    folder and spec.argocd's settings (the folders it applies after the stack come on top: ``render_tree``)."""
    from aicr_gen.render.prepare import bundle_options

    return bundle_options([f"deployer:targetRevision={cluster.spec.repo.branch}", f"deployer:path={folder}/{deployer}"],
                          cluster.spec.repo.url, deployer).replace(**argocd_settings(cluster, deployer))


def render_tree(cluster: ClusterSpec, base: Path, path: str | None = None,
                recipe: dict[str, Any] | None = None, *, catalog: Any = None, locked: bool = True) -> Bundle:
    """The whole managed tree of ``cluster`` (paths relative to the managed folder), with checksums.txt;
    ``catalog``: the spec's catalog when the caller has opened it already; ``locked``: pin the digests of the
    spec's mirror lock (``mirror lock`` renders without them)."""
    from aicr_gen.catalog import headers
    from aicr_gen.mirror.pin import site_pins
    from aicr_gen.mirror.rewrite import mirror_plan, mirror_tree
    from aicr_gen.render import render_bundle
    from aicr_gen.yaml import dump

    folder = managed_path(cluster, path)
    pins = site_pins(cluster) if locked else None
    catalog = catalog if catalog is not None else open_spec_catalog(cluster, base)
    resolved = recipe if recipe is not None else resolve_spec(cluster, base, catalog)
    resolved = headers.convert(resolved, "RecipeResult", cluster.spec.aicrApiVersion)
    tree = Bundle({"recipe.yaml": dump(resolved).encode()})
    pooled = pool_tree(cluster, base, catalog) if cluster.spec.pools else None
    if pooled is not None:
        tree = tree.merge(pooled.files)
    sentinel = None if cluster.spec.sentinel is None else _sentinel(cluster, base, resolved)
    stack_digest = ""
    for deployer in cluster.spec.deployers:
        plan = _plan(cluster, catalog, resolved, deployer, sentinel)
        plan = pooled.plan(plan) if pooled is not None else plan
        plan = mirror_plan(plan, cluster.spec.mirror, pins)
        stack_digest = stack_digest or plan.digest()  # the deployers' plans deploy the same stack
        applied = [(f"{folder}/{extra}", namespace)
                   for extra, namespace in applied_folders(cluster, deployer, resolved)]
        marked = [(path, ((STACK_DIGEST, stack_digest),)) for path, _ in applied if path.endswith(POST_CHANGE_ARGOCD)]
        options = deployer_options(cluster, deployer, folder).replace(
            extra_paths=tuple(path for path, _ in applied), extra_namespaces=tuple(applied),
            extra_annotations=tuple(marked))
        tree = tree.merge(render_bundle(plan, deployer, options).under(deployer))
    if cluster.spec.certification is not None and cluster.spec.certification.categories:
        tree = tree.merge(_certification(cluster, certification_namespace(resolved), stack_digest)
                          .under("certification"))
    if certified(cluster):
        tree = tree.merge(pool_certifications(cluster, certification_namespace(resolved), stack_digest))
    if sentinel is not None:
        tree = tree.merge({"sentinel/values.yaml": dump(sentinel).encode()})
        if cluster.spec.sentinel is not None and cluster.spec.sentinel.lifecycle:
            tree = tree.merge(_validation(sentinel).under("validation"))
            tree = tree.merge(pool_validation(cluster, sentinel, TEMPLATE_NODE))
    if cluster.spec.snapshot is not None:
        tree = tree.merge(_snapshot_agent(cluster).under("snapshot-agent"))
    return mirror_tree(tree, cluster.spec.mirror, skip=cluster.spec.deployers, pins=pins).with_checksums()
