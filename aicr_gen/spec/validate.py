"""A loaded document validated as a ``ClusterSpec``: the schema (``modelcheck``), then the checks a schema cannot
express, each refusing at the file, line and field of the value to fix: certification categories, thresholds,
options and schedule; sentinel, snapshot, Argo CD, Flux and mirror settings; pools; paths the spec reads."""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.spec.cluster import (
    ArgoCD,
    Certification,
    ClusterSpec,
    FluxSettings,
    Mirror,
    Pool,
    Scheduling,
    Sentinel,
    Snapshot,
    Spec,
    references,
    repo_folder,
)
from aicr_gen.spec.pools import (
    OWNER_LABEL,
    certification_name,
    certification_selector,
    disjoint,
    pool_tolerations,
    selector_text,
)
from aicr_gen.yaml import Document, FieldPath

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.errors import Where


def _at(doc: Document, path: FieldPath, check: Callable[[], object]) -> None:
    """Run ``check``; its input error is reported at ``path`` of ``doc``."""
    try:
        check()
    except InvalidInputError as err:
        raise _fail(doc, path, str(err)) from None


def _fail(doc: Document, path: FieldPath, message: str) -> InvalidInputError:
    """An input error at ``path`` of ``doc``: ``file:line: field.path: message``."""
    return doc.error(path, message)


def _relative(doc: Document, path: FieldPath, text: str) -> None:
    _at(doc, path, lambda: repo_folder(text))


def _option_text(value: str | int | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else str(value)


def certification_options(cert: Certification, where: Callable[[str], Where]) -> dict[str, Any]:
    """spec.certification.options as NVCRE's typed option tree (``where(key)`` names a bad one, or is its
    input error)."""
    from aicr_gen.certify import nvcre

    options: dict[str, Any] = {}
    for key, value in cert.options.items():
        option_path, typed = nvcre.parse_option(key, _option_text(value), where(key))
        nvcre.set_option(options, option_path, typed, where(key))
    return options


def check_certification(doc: Document, cert: Certification, base: FieldPath = ("spec", "certification")) -> None:
    """spec.certification (or a pool's, at ``base``): categories, thresholds, options and schedule."""
    from aicr_gen.certify import nvcre, thresholds
    from aicr_gen.text.cron import check_schedule

    entries = []
    for index, name in enumerate(cert.categories):
        if name in cert.categories[:index]:
            raise _fail(doc, (*base, "categories", index), f"category {name!r} is listed twice; list it once")
        entries.append(nvcre.category(name, partial(doc.error, (*base, "categories", index))))
    for key, expression in cert.thresholds.items():  # each refused at its own key
        _at(doc, (*base, "thresholds", key), partial(thresholds.compile_thresholds, {key: expression}, "threshold"))
    options = certification_options(cert, lambda key: partial(doc.error, (*base, "options", key)))
    if options:
        nvcre.check_global_options(entries, options, partial(doc.error, (*base, "options")))
    if cert.schedule is not None:
        schedule = cert.schedule
        _at(doc, (*base, "schedule"), lambda: check_schedule(schedule, repr(schedule)))
    if (cert.schedule is not None or cert.postChange) and not cert.categories:
        raise _fail(doc, (*base, "categories"), "a schedule or postChange certifies with categories; list at least "
                                                "one, e.g. communication/nccl-all-reduce")
    if cert.thresholds and not cert.categories:  # no category, no Certification: render_tree drops them
        raise _fail(doc, (*base, "thresholds"), "thresholds apply to the certification's categories, and it lists "
                                                "none, so nothing uses them; list the categories they are for (e.g. "
                                                "communication/nccl-all-reduce) or drop the field")


def _check_sentinel(doc: Document, sentinel: Sentinel) -> None:
    from aicr_gen.cel.durations import seconds as duration_seconds
    from aicr_gen.limits import MAX_WINDOW_SECONDS

    if sentinel.rules is not None and not sentinel.rules.strip():
        raise _fail(doc, ("spec", "sentinel", "rules"), "give a rule-set file path or drop the field")
    if sentinel.mode == "monitor":
        acting = [name for name, on in (("rules", sentinel.rules is not None),
                                        ("ruleSetPools", bool(sentinel.ruleSetPools)),
                                        ("lifecycle", sentinel.lifecycle), ("validation", sentinel.validation),
                                        ("breaker", sentinel.breaker is not None))
                  if on]
        if acting:
            raise _fail(doc, ("spec", "sentinel", acting[0]), "configures actions, and monitor mode takes none; set "
                                                              "spec.sentinel.mode: quarantine or drop the field")
    if sentinel.validation and not sentinel.lifecycle:
        raise _fail(doc, ("spec", "sentinel", "validation"), "needs lifecycle: true (the lifecycle manager runs the "
                                                             "validation tests and lifts the cordon when they pass)")
    duration = sentinel.breaker.duration if sentinel.breaker else None
    if duration is not None:
        seconds = duration_seconds(duration)
        if seconds is None or not 0 < seconds <= MAX_WINDOW_SECONDS:
            raise _fail(doc, ("spec", "sentinel", "breaker", "duration"),
                        f"{duration!r} is not a Go duration between 0 and 24h; e.g. 5m or 1h30m")


def _check_snapshot(doc: Document, snapshot: Snapshot) -> None:
    from aicr_gen.text.configmap_source import parse_cm_source
    from aicr_gen.text.cron import check_schedule

    _at(doc, ("spec", "snapshot", "schedule"), lambda: check_schedule(snapshot.schedule, repr(snapshot.schedule)))
    _at(doc, ("spec", "snapshot", "configmap"), lambda: parse_cm_source(snapshot.configmap))
    if snapshot.baseline is not None:
        _relative(doc, ("spec", "snapshot", "baseline"), snapshot.baseline)


def _check_argocd(doc: Document, argocd: ArgoCD) -> None:
    base: FieldPath = ("spec", "argocd")
    if argocd.destinationServer is not None and argocd.destinationName is not None:
        raise _fail(doc, (*base, "destinationName"), "the destination is already given by destinationServer; give "
                                                    "the API server URL or the registered cluster name, not both")
    server = argocd.destinationServer
    if server is not None and not re.match(r"^https?://[^/\s]+", server):
        raise _fail(doc, (*base, "destinationServer"), f"{server!r} is not an API server URL; give it as Argo CD's "
                                                      "cluster list shows it, e.g. https://10.0.0.1:6443")
    rollout = argocd.rollout
    if rollout is not None:
        for index, value in enumerate(rollout.order):
            if value in rollout.order[:index]:
                raise _fail(doc, (*base, "rollout", "order", index), f"{value!r} is listed twice; list each once")


def _check_flux(doc: Document, cluster: ClusterSpec, flux: FluxSettings) -> None:
    base: FieldPath = ("spec", "flux")
    if (flux.hub is None) != (flux.kubeConfigSecret is None):
        given, missing = ("hub", "kubeConfigSecret") if flux.hub is not None else ("kubeConfigSecret", "hub")
        raise _fail(doc, (*base, given), f"a hub reaches its spokes through their kubeconfig Secrets; give "
                                         f"{missing} too, or neither (the cluster's own Flux)")
    if flux.hub == cluster.metadata.name:
        raise _fail(doc, (*base, "hub"), "names this cluster; its own Flux applies its tree without hub")


def _check_mirror(doc: Document, mirror: Mirror) -> None:
    from aicr_gen.text.image_reference import chart_mirror, parse_mirror_prefix

    if mirror.charts is None and mirror.images is None:
        raise _fail(doc, ("spec", "mirror"), "names no mirror; give charts: oci://HOST/PATH and/or images: "
                                             "HOST/PATH, or drop the field")
    if mirror.charts is not None:
        charts = mirror.charts
        _at(doc, ("spec", "mirror", "charts"), lambda: chart_mirror(charts))
    if mirror.images is not None:
        images = mirror.images
        _at(doc, ("spec", "mirror", "images"), lambda: parse_mirror_prefix(images))


def reserved_host(url: str) -> bool:
    """Whether ``url`` (https://, ssh:// or scp-like git@host:path) names a host on the ``.invalid`` domain."""
    match = re.match(r"^(?:[a-z][a-z0-9+.-]*://)?(?:[^@/]*@)?\[?([^/:\]]+)", url.strip(), re.IGNORECASE)
    host = match.group(1).lower().rstrip(".") if match else ""
    return host == "invalid" or host.endswith(".invalid")


def scheduling_of(given: Scheduling | None, error: Callable[[FieldPath, str], InvalidInputError]) -> Any:
    """spec.scheduling as the renderer's ``Scheduling``; a bad entry is the input error ``error(path, message)``
    (``path`` below spec.scheduling: ``(field, index)``, ``("workloadGate",)``)."""
    from aicr_gen.spec import scheduling

    if given is None:
        return scheduling.Scheduling()

    def tolerations(field: str, items: list[str]) -> Any:
        for index, item in enumerate(items):
            try:
                scheduling.parse_tolerations("toleration", [item])
            except InvalidInputError as err:
                raise error((field, index), str(err)) from None
        return scheduling.parse_tolerations(field, items)

    try:
        gate = scheduling.parse_taint("workloadGate", given.workloadGate or "")
    except InvalidInputError as err:
        raise error(("workloadGate",), str(err)) from None
    return scheduling.Scheduling(
        system_node_selector=tuple(given.systemNodeSelector.items()),
        system_tolerations=tolerations("systemNodeTolerations", given.systemNodeTolerations),
        accelerated_node_selector=tuple(given.acceleratedNodeSelector.items()),
        accelerated_tolerations=tolerations("acceleratedNodeTolerations", given.acceleratedNodeTolerations),
        workload_gate=gate, workload_selector=tuple(given.workloadSelector.items()), nodes=given.nodes,
        storage_class=given.storageClass or "", shared_storage_class=given.sharedStorageClass or "")


def check_semantics(doc: Document, cluster: ClusterSpec, *, template: bool = False) -> None:
    """The checks beyond the schema; the first problem is an input error naming file, line and field. A
    ``template`` (what ``spec init`` writes) may keep the placeholder repository URL."""
    from aicr_gen.spec.overrides import parse
    spec = cluster.spec
    for index, deployer in enumerate(spec.deployers):
        if deployer in spec.deployers[:index]:
            raise _fail(doc, ("spec", "deployers", index), f"deployer {deployer!r} is listed twice; list it once")
    _relative(doc, ("spec", "repo", "path"), spec.repo.path)
    if spec.overrides is not None:
        for field, flag in (("set", "--set"), ("setJson", "--set-json")):
            texts: list[str] = getattr(spec.overrides, field)
            for index, text in enumerate(texts):
                try:
                    parse(flag, text)
                except InvalidInputError as err:
                    raise _fail(doc, ("spec", "overrides", field, index), str(err)) from None
    if spec.scheduling is not None:
        scheduling_of(spec.scheduling, lambda path, message: doc.error(("spec", "scheduling", *path), message))
    if spec.certification is not None:
        check_certification(doc, spec.certification)
        if spec.certification.nodeSelector and not spec.certification.categories and \
                not any(pool.certification for pool in spec.pools):  # no Certification targets it
            raise _fail(doc, ("spec", "certification", "nodeSelector"), "selects the nodes the certification's "
                        "categories run on, and no category is listed (nor does a pool certify, whose target it "
                        "narrows), so nothing uses it; list the categories or drop the field")
    if spec.sentinel is not None:
        _check_sentinel(doc, spec.sentinel)
        if spec.sentinel.ruleSetPools and not spec.pools:
            raise _fail(doc, ("spec", "sentinel", "ruleSetPools"), "limits rule sets to pools, and the spec has no "
                                                                   "spec.pools; define the pools or drop the field")
    if spec.snapshot is not None:
        _check_snapshot(doc, spec.snapshot)
    if spec.argocd is not None:
        _check_argocd(doc, spec.argocd)
    if spec.flux is not None:
        _check_flux(doc, cluster, spec.flux)
    if spec.mirror is not None:
        _check_mirror(doc, spec.mirror)
    if spec.pools:
        check_pools(doc, spec)
    for field in ("catalogs", "policies"):
        for index, text in enumerate(getattr(spec, field)):
            if not text.strip():
                raise _fail(doc, ("spec", field, index), "an empty path; give a file or folder path")
    if not template and reserved_host(spec.repo.url):
        raise _fail(doc, ("spec", "repo", "url"),
                    f"{spec.repo.url!r} is a placeholder (.invalid never resolves); set the URL of your GitOps "
                    "repository, which Argo CD and Flux pull, e.g. https://github.com/ORG/gitops.git")


def check_references(cluster: ClusterSpec, spec_file: Path) -> None:
    """The files a spec reads never go through ``.git`` and, for a spec inside a Git work tree, stay inside
    it (symlinks resolved): what a pull request's spec may make CI read, render and commit is the
    repository's own files, so every clone renders the same tree. A spec outside any repository may name
    any file of its machine."""
    check_paths(references(cluster), cluster.error, spec_file, "spec")


def check_paths(found: list[tuple[FieldPath, str]], error: Callable[[FieldPath, str], InvalidInputError], file: Path,
                what: str) -> None:
    """``check_references`` for the paths ``found`` in ``file`` (a ``what``: spec or fleet), relative to its
    folder; ``error(path, message)`` is the input error about a field path."""
    from aicr_gen.edges.files import work_tree
    base = file.resolve().parent
    root = work_tree(base)
    for path, text in found:
        if any(part.lower() == ".git" for part in Path(text).parts):
            raise error(path, f"{text!r} goes through .git; name a file of the work tree instead")
        if root is None:
            continue
        if Path(text).is_absolute():
            raise error(path, f"{text!r} is absolute; in a Git repository give a path relative to the {what}'s "
                              f"folder ({base}), inside the repository")
        if not (base / text).resolve().is_relative_to(root):
            raise error(path, f"{text!r} leads out of the Git repository the {what} is in ({root}); keep the files "
                              f"a {what} reads inside it (a path relative to the {what}'s folder), so every clone "
                              "renders the same tree")


def parse_spec(doc: Document, *, template: bool = False) -> ClusterSpec:
    """Validate a loaded document as a ``ClusterSpec`` (schema, then semantics; a ``template`` may keep the
    placeholder repository URL)."""
    from aicr_gen.modelcheck import check

    cluster = check(doc, ClusterSpec)
    check_semantics(doc, cluster, template=template)
    cluster._source = doc
    return cluster


def check_present(cluster: ClusterSpec, base: Path, field: str) -> None:
    """The files or folders the spec names in ``spec.<field>`` (``catalogs``, ``policies`` or ``sentinel``: its
    rules file) exist under ``base`` (its folder); a missing one is an input error at the file, line and field
    that named it (the spec's, or its fleet's for a value it takes from there), before anything reads it."""
    for path, text in references(cluster):
        found = base / text
        folder = field == "catalogs"
        if path[1] != field or (found.is_dir() if folder else found.is_file()):
            continue
        written = cluster.origin(".".join(str(part) for part in path))
        message = (f"{'catalog folder' if folder else 'file'} {text!r} not found ({found}); create it or fix the "
                   "path (relative to the spec's folder)")
        raise InvalidInputError.at(Located(*written, message, path)) if written else cluster.error(path, message)


def check_pools(doc: Document, spec: Spec) -> None:
    """spec.pools: no cluster accelerator beside them, unique names, pool overrides that parse, no selector on
    the operator's owner label, and pairwise disjoint node selectors (the first overlap names both pools)."""
    from aicr_gen.spec.overrides import parse
    if spec.criteria.accelerator not in (None, ""):
        raise doc.error(("spec", "criteria", "accelerator"), "with spec.pools each pool names "
                        "its accelerator; drop spec.criteria.accelerator (criteria hold the cluster-wide "
                        "service, intent, os and platform)")
    if spec.scheduling is not None and OWNER_LABEL in spec.scheduling.acceleratedNodeSelector:
        raise doc.error(("spec", "scheduling", "acceleratedNodeSelector", OWNER_LABEL),
                        f"every pool's NVIDIADriver takes this selector, and the GPU Operator sets "
                        f"{OWNER_LABEL} itself and rejects selectors on it; select GPU nodes by another label")
    for index, pool in enumerate(spec.pools):
        base = ("spec", "pools", index)
        twin = next((other for other in spec.pools[:index] if other.name == pool.name), None)
        if twin is not None:
            raise doc.error((*base, "name"), f"pool {pool.name!r} is named twice; give each "
                            "pool its own name")
        if OWNER_LABEL in pool.nodeSelector:
            raise doc.error((*base, "nodeSelector", OWNER_LABEL), "the GPU Operator sets "
                            f"{OWNER_LABEL} itself and rejects selectors on it; select the pool by a label "
                            "of its nodes (e.g. node.kubernetes.io/instance-type)")
        for number, text in enumerate(pool.tolerations):
            try:
                pool_tolerations([text])
            except InvalidInputError as err:
                raise doc.error((*base, "tolerations", number), str(err)) from None
        for field, flag in (("set", "--set"), ("setJson", "--set-json")):
            for number, text in enumerate(getattr(pool.overrides, field) if pool.overrides else []):
                try:
                    parse(flag, text)
                except InvalidInputError as err:
                    raise doc.error((*base, "overrides", field, number), str(err)) from None
        for earlier, other in enumerate(spec.pools[:index]):
            if not disjoint(other.nodeSelector, pool.nodeSelector):
                raise doc.error(
                    (*base, "nodeSelector"), f"pools {other.name!r} (spec.pools[{earlier}]) and "
                    f"{pool.name!r} can select the same node ({selector_text(other.nodeSelector)} and "
                    f"{selector_text(pool.nodeSelector)}); selectors are disjoint only when a label key is in both "
                    "with different values: select both pools by one such label, e.g. "
                    "node.kubernetes.io/instance-type")
        _check_operations(doc, spec, index, pool)
    _check_rule_set_pools(doc, spec)


def _check_operations(doc: Document, spec: Spec, index: int, pool: Pool) -> None:
    """A pool's selector as Kubernetes labels (it becomes NVCRE targets and NVSentinel rules), its certification
    (as spec.certification's, plus categories, a target that can match and names within their limits) and its
    validation tests (they need the lifecycle manager)."""
    from aicr_gen.text.kube_names import LABEL_VALUE, label_key_problem

    base = ("spec", "pools", index)
    for key, value in pool.nodeSelector.items():
        problem = label_key_problem(key)
        if problem is None and value and not LABEL_VALUE.fullmatch(value):
            problem = f"label value {value!r} is not valid (at most 63 of [A-Za-z0-9-_.], alphanumeric ends)"
        if problem:
            raise doc.error((*base, "nodeSelector", key), problem)
    cert = pool.certification
    if cert is not None:
        where = (*base, "certification")
        check_certification(doc, cert, where)
        if not cert.categories:
            raise doc.error((*where, "categories"), "a pool's certification is one "
                            "Certification of its nodes; list at least one category, e.g. "
                            "communication/nccl-all-reduce")
        try:
            certification_selector(spec, pool)
        except InvalidInputError as err:
            raise doc.error((*where, "nodeSelector"), str(err)) from None
        from aicr_gen.certify.cron import name_room

        room = name_room(cert.schedule is not None, cert.postChange) - len(certification_name(""))
        if len(pool.name) > room:
            raise doc.error((*base, "name"), "the pool's Certification "
                            f"{certification_name(pool.name)!r} and the objects named after it (CronJob, "
                            f"post-change Jobs) would go over their name limits; certify a pool whose name has "
                            f"at most {room} characters")
    if pool.validationTests:
        where = (*base, "validationTests")
        if spec.sentinel is None or not spec.sentinel.lifecycle:
            raise doc.error(where, "the lifecycle manager runs these tests; set "
                            "spec.sentinel.lifecycle: true (with mode: quarantine) or drop the field")
        for number, test in enumerate(pool.validationTests):
            if test in pool.validationTests[:number]:
                raise doc.error((*where, number), f"test {test!r} is listed twice; list it once")


def _check_rule_set_pools(doc: Document, spec: Spec) -> None:
    limits = spec.sentinel.ruleSetPools if spec.sentinel is not None else {}
    names = [pool.name for pool in spec.pools]
    for rule_set, pools in limits.items():
        where = ("spec", "sentinel", "ruleSetPools", rule_set)
        if not pools:
            raise doc.error(where, "name the pools the rule set is limited to, or drop it")
        for number, name in enumerate(pools):
            if name not in names:
                raise doc.error((*where, number), f"{name!r} is not a pool of spec.pools "
                                f"({', '.join(names)})")
