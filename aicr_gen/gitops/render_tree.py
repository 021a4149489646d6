"""The managed tree of ``aicr-gen sync``: everything a ClusterSpec renders, as one deterministic ``Bundle``.

Pure apart from reading the catalog (and a sentinel rules file): no Git, no writes. Layout (relative to
the managed path in the repository)::

    recipe.yaml                 the resolved recipe (its sha256 is the commit's recipe digest)
    <deployer>/...              one bundle per deployer in spec.deployers (with its own checksums.txt)
    certification/...           NVCRE Certification (+ CronJob / post-change jobs), when categories are set
    sentinel/values.yaml        NVSentinel values, when spec.sentinel is set
    checksums.txt               sha256 of every other file of the tree

Not yet merged: the sentinel values are written beside the bundles, not merged into the nvsentinel
component's values; ValidationRequest templates and the snapshot agent CronJob are not rendered.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aicr_gen.gitops.spec import ClusterSpec, resolve_spec
from aicr_gen.render.bundle import Bundle

CERT_NAME = "gpu-certification"
CERT_NAMESPACE = "nvcre-system"
DEFAULT_SELECTOR = {"nvidia.com/gpu.present": "true"}  # spec.certification.nodeSelector empty: every GPU node


def managed_path(cluster: ClusterSpec, override: str | None = None) -> str:
    """The folder the tree lives in: ``--path``, else spec.repo.path, else ``clusters/<name>``."""
    from aicr_gen.render.bundle import check_path

    path = (override or cluster.spec.repo.path or f"clusters/{cluster.metadata.name}").strip("/")
    return check_path(path)


def _plan(cluster: ClusterSpec, recipe: dict[str, Any], deployer: str) -> Any:
    """The deployment plan of ``recipe`` for ``deployer``, as ``aicr-gen bundle`` builds it."""
    from aicr_gen.commands.bundle import plan_for
    from aicr_gen.commands.recipe import open_catalog
    from aicr_gen.render.values import parse

    overrides = cluster.spec.overrides
    parsed = [parse("--set", text) for text in (overrides.set if overrides else [])]
    parsed += [parse("--set-json", text) for text in (overrides.setJson if overrides else [])]
    return plan_for(recipe, open_catalog(list(cluster.spec.catalogs)), parsed, deployer)


def _certification(cluster: ClusterSpec) -> Bundle:
    from aicr_gen.certify import cron, nvcre
    from aicr_gen.certify.thresholds import compile_thresholds
    from aicr_gen.gitops.spec import _option_text

    cert_spec = cluster.spec.certification
    assert cert_spec is not None
    entries = [nvcre.category(name, f"spec.certification.categories {name!r}") for name in cert_spec.categories]
    options: dict[str, Any] = {}
    for key, value in cert_spec.options.items():
        where = f"spec.certification.options.{key}"
        option_path, typed = nvcre.parse_option(key, _option_text(value), where)
        nvcre.set_option(options, option_path, typed, where)
    if cert_spec.thresholds:
        compile_thresholds(cert_spec.thresholds, "spec.certification.thresholds")
    cron.check_names(CERT_NAME, cert_spec.schedule is not None, cert_spec.postChange)
    target = nvcre.target(cert_spec.nodeSelector or DEFAULT_SELECTOR, [], [])
    cert = nvcre.certification(CERT_NAME, CERT_NAMESPACE, target_spec=target, entries=entries,
                               global_options=options, category_options={},
                               global_thresholds=dict(cert_spec.thresholds), category_thresholds={})
    return cron.render(cert, schedule=cert_spec.schedule, post_change=cert_spec.postChange).with_checksums()


def _sentinel(cluster: ClusterSpec, base: Path) -> bytes:
    from aicr_gen.certify import sentinel
    from aicr_gen.yamlio import decode, dump, load_text

    spec = cluster.spec.sentinel
    assert spec is not None
    rules: list[dict[str, Any]] = []
    if spec.rules is not None:
        from aicr_gen.inputs import read_input

        source = str(base / spec.rules)
        rules = sentinel.parse_rules(load_text(decode(read_input(source, "spec.sentinel.rules"), source), source))
    found = spec.breaker
    breaker = sentinel.Breaker(percentage=found.percentage if found else None,
                               duration=found.duration if found else None,
                               max_nodes=found.maxNodes if found else None)
    values = sentinel.values(spec.mode, rules=rules, breaker=breaker, lifecycle=spec.lifecycle,
                             validation=spec.validation, dry_run=spec.dryRun)
    return dump(values).encode()


def render_tree(cluster: ClusterSpec, base: Path, path: str | None = None,
                recipe: dict[str, Any] | None = None) -> Bundle:
    """The whole managed tree of ``cluster`` (paths relative to the managed folder), with checksums.txt."""
    from aicr_gen.commands.bundle import _options
    from aicr_gen.render import render_bundle
    from aicr_gen.yamlio import dump

    folder = managed_path(cluster, path)
    resolved = recipe if recipe is not None else resolve_spec(cluster, base)
    tree = Bundle({"recipe.yaml": dump(resolved).encode()})
    for deployer in cluster.spec.deployers:
        options = _options([f"deployer:targetRevision={cluster.spec.repo.branch}",
                            f"deployer:path={folder}/{deployer}"], cluster.spec.repo.url)
        tree = tree.merge(render_bundle(_plan(cluster, resolved, deployer), deployer, options).under(deployer))
    if cluster.spec.certification is not None and cluster.spec.certification.categories:
        tree = tree.merge(_certification(cluster).under("certification"))
    if cluster.spec.sentinel is not None:
        tree = tree.merge({"sentinel/values.yaml": _sentinel(cluster, base)})
    return tree.with_checksums()
