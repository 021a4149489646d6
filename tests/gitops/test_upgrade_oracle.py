"""What "blocked" means, from the real API server: ``widget-operator`` 1.0.0 installed on a fresh kube-apiserver, then
upgraded to each later version the way Argo CD syncs it, recording every refusal with the server's message and
every object of a user's that the upgrade deletes; then ``aicr_gen.gitops.review.upgrade.verdict`` of the same two
renders must name each of those. Both halves read ``upgrade_charts.SCENARIOS``.

The sync, as Argo CD's (server-side apply, ``argocd-controller`` field manager, conflicts forced): the release
namespace is created (``CreateNamespace=true``); every object of the new render is first applied as a server dry
run, Namespaces and CRDs first; a refusal fails the sync before anything is stored. Otherwise every object is
applied, then the objects only the old render has are pruned (custom resources first, Namespaces last) with
background propagation: there is no garbage collector or namespace controller here, so a pruned Namespace stays
Terminating, which is how the loss of what it holds shows. Before the sync a user's objects (``BYSTANDERS``: a Widget
of their own, a ConfigMap in the chart's namespace) are created beside the release, so what a prune takes with it
is seen.

This is Argo CD's behaviour (``--include-crds`` renders ``crds/`` as ordinary objects, pruned like the rest). Helm
and Flux's helm-controller install ``crds/`` once and by default never upgrade or delete them: under those 3.0.0
leaves v1alpha1 in place and 5.0.0 keeps the CRD.
"""

from __future__ import annotations

import contextlib
import copy
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.cluster.converge import ARGOCD_MANAGER, Api, Refused, describe, first_kinds
from tests.cluster.envtest import ControlPlane, binaries_or_skip, start
from tests.gitops.chart_sites import widget_charts, widget_renders  # noqa: F401  (the packaged chart's renders)
from tests.gitops.upgrade_charts import (
    BASELINE,
    BLOCKING_CODES,
    BYSTANDERS,
    CRD_NAME,
    EXTRA_NAMESPACE,
    NAMESPACE,
    SCENARIOS,
    UPGRADES,
    Scenario,
    crds,
)

USER_MANAGER = "kubectl-client-side-apply"
WAIT_SECONDS = 30.0


@dataclass
class Upgrade:
    """What the API server did with one upgrade."""

    refused: dict[str, str] = field(default_factory=dict)
    """``Kind namespace/name`` -> the server's message."""
    pruned: list[str] = field(default_factory=list)
    lost: list[str] = field(default_factory=list)
    """Bystanders (objects of a user's) deleted, or whose namespace is terminating."""


def _wait(check: Any, what: str) -> None:
    deadline = time.monotonic() + WAIT_SECONDS
    while not check():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {WAIT_SECONDS:g} s")
        time.sleep(0.05)


def _apply(api: Api, obj: dict[str, Any], manager: str) -> None:
    """Apply, waiting first until the object's kind is served (a CRD of the same sync is being established)."""
    _wait(lambda: api.resource(str(obj["apiVersion"]), str(obj["kind"])) is not None,
          f"{obj['kind']} of {obj['apiVersion']} served")
    api.apply(obj, manager)


def _install(api: Api, objects: Sequence[dict[str, Any]]) -> None:
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}}, ARGOCD_MANAGER)
    for obj in first_kinds(list(objects)):
        _apply(api, obj, ARGOCD_MANAGER)
    for obj in BYSTANDERS:
        _apply(api, dict(obj), USER_MANAGER)


def _get(api: Api, obj: dict[str, Any]) -> dict[str, Any] | None:
    found = api.resource(str(obj["apiVersion"]), str(obj["kind"]))
    if found is None:
        return None
    meta = obj["metadata"]
    try:
        answer: dict[str, Any] = api.call("GET", api.path(str(obj["apiVersion"]), found[0],
                                                          meta.get("namespace") if found[1] else None, meta["name"]))
    except Refused:
        return None
    return answer


def _prune(api: Api, obj: dict[str, Any]) -> None:
    found = api.resource(str(obj["apiVersion"]), str(obj["kind"]))
    if found is None:  # its CRD went first
        return
    meta = obj["metadata"]
    path = api.path(str(obj["apiVersion"]), found[0], meta.get("namespace") if found[1] else None, meta["name"])
    with contextlib.suppress(Refused):  # gone meanwhile
        api.call("DELETE", path, {"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Background"})
    if obj["kind"] == "CustomResourceDefinition":  # the API server deletes every custom resource, then the CRD
        _wait(lambda: _get(api, obj) is None, f"{describe(obj)} deleted")


def _lost(api: Api, obj: dict[str, Any]) -> bool:
    namespace = obj["metadata"].get("namespace")
    if namespace:
        holder = _get(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}})
        if holder is None or holder["metadata"].get("deletionTimestamp"):
            return True
    return _get(api, obj) is None


def sync(plane: ControlPlane, old: Sequence[dict[str, Any]], new: Sequence[dict[str, Any]]) -> Upgrade:
    """Install ``old`` and the bystanders, then sync ``new`` over it as Argo CD does (module docstring)."""
    api = Api(plane)
    _install(api, old)
    outcome = Upgrade()
    ordered = first_kinds(list(new))
    for obj in ordered:
        try:
            api.apply(obj, ARGOCD_MANAGER, dry_run=True)
        except Refused as err:
            outcome.refused[describe(obj)] = str(err)
    if outcome.refused:
        return outcome
    for obj in ordered:
        _apply(api, obj, ARGOCD_MANAGER)
    kept = {describe(obj) for obj in new}
    for obj in reversed(first_kinds([obj for obj in old if describe(obj) not in kept])):
        _prune(api, obj)
        outcome.pruned.append(describe(obj))
    outcome.lost = [describe(obj) for obj in BYSTANDERS if _lost(api, dict(obj))]
    return outcome


@pytest.fixture(scope="module", params=UPGRADES, ids=[entry.id for entry in UPGRADES])
def oracle(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory,
            widget_renders: dict[str, list[dict[str, Any]]]) -> Iterator[tuple[Scenario, Upgrade]]:  # noqa: F811
    """One upgrade on a control plane of its own: (the scenario, what the API server did)."""
    entry: Scenario = request.param
    plane = start(tmp_path_factory.mktemp("upgrade"), binaries_or_skip())
    try:
        yield entry, sync(plane, widget_renders[BASELINE], widget_renders[entry.version])
    finally:
        plane.stop()


def test_the_api_server_refuses_exactly_what_the_scenario_says(oracle: tuple[Scenario, Upgrade]) -> None:
    entry, outcome = oracle
    assert sorted(outcome.refused) == sorted(refusal.object for refusal in entry.refusals), outcome.refused
    for refusal in entry.refusals:
        assert refusal.message in outcome.refused[refusal.object], (refusal, outcome.refused[refusal.object])
    assert sorted(outcome.lost) == sorted(entry.lost), outcome


@pytest.mark.parametrize("entry", UPGRADES, ids=[entry.id for entry in UPGRADES])
def test_the_verdict_names_every_refusal_and_loss(entry: Scenario,
                                                  widget_renders: dict[str, list[dict[str, Any]]]) -> None:  # noqa: F811
    upgrade = pytest.importorskip("aicr_gen.gitops.review.upgrade")
    old, new = copy.deepcopy(widget_renders[BASELINE]), copy.deepcopy(widget_renders[entry.version])
    result = upgrade.verdict("widget-operator", old, new, crds_old=crds(old), crds_new=crds(new))
    reasons = [(reason.code, reason.object) for reason in result.reasons]
    shown = "\n".join(f"{reason.code} {reason.object}: {reason.text}" for reason in result.reasons)
    assert result.verdict == entry.verdict, shown
    assert not set(entry.reasons) - set(reasons), shown
    blocked = {obj for code, obj in reasons if code in BLOCKING_CODES}
    refused = {refusal.object for refusal in entry.refusals}
    assert not refused - blocked, f"refused by the API server but not blocked: {sorted(refused - blocked)}\n{shown}"
    if entry.lost:
        assert result.verdict in ("manual", "blocked"), shown
    if entry.verdict == "safe":
        assert not reasons, shown
    assert all(reason.text for reason in result.reasons), shown


def test_each_version_carries_its_hazard_and_only_it(widget_renders: dict[str, list[dict[str, Any]]]) -> None:  # noqa: F811
    """The scenario table matches the rendered charts: the objects each version renders differ from 1.0.0's only
    where its hazard says (chart labels and the checksum annotation aside)."""
    names = {entry.version: sorted(describe(obj) for obj in widget_renders[entry.version]) for entry in SCENARIOS}
    base = names[BASELINE]
    assert names["1.1.0"] == names["3.0.0"] == names["4.0.0"] == base
    assert set(base) ^ set(names["2.0.0"]) == {
        f"ConfigMap {NAMESPACE}/widget-config", f"ConfigMap {EXTRA_NAMESPACE}/widget-config",
        f"Deployment {NAMESPACE}/widget-controller", f"Deployment {NAMESPACE}/widget-operator"}
    assert set(base) ^ set(names["5.0.0"]) == {
        f"CustomResourceDefinition {CRD_NAME}", f"Namespace {EXTRA_NAMESPACE}", f"Widget {NAMESPACE}/default"}
    versions = {entry.version: [version["name"] for crd in crds(widget_renders[entry.version])
                                for version in crd["spec"]["versions"]] for entry in SCENARIOS}
    assert versions["3.0.0"] == ["v1"] and versions[BASELINE] == ["v1alpha1", "v1"] and versions["5.0.0"] == []
    labels = [obj["metadata"]["labels"] for obj in widget_renders["1.1.0"] if obj["kind"] == "Deployment"]
    assert labels[0]["helm.sh/chart"] == "widget-operator-1.1.0" and labels[0]["app.kubernetes.io/version"] == "1.1.0"
