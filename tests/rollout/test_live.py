"""``aicr-gen rollout`` reading LIVE evidence: three envtest control planes are the fleet's clusters (canary ``a``,
prod ``b`` and ``c``, the ``bumped`` repository of ``test_rollout.py``), one kubeconfig holds a context named like
each, and each plane holds what the controllers leave there (``tests/rollout/world.py``) and the snapshot the spec's
agent writes to ``cm://aicr/snapshot``.

The canary soaks, then ``advance`` commits the prod wave's move, and once prod proved it the rollout is complete;
a failed NCCL threshold halts it; a quarantined node or a tripped breaker fails ``no-quarantine``; the live read is
the exported one (``world.export``); an unreachable cluster is ``unknown`` while the others are judged; and a user
bound to ``READER_RULES`` alone reads everything: the least privilege a CI kubeconfig needs."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from tests.cluster.conftest import crd_seed  # noqa: F401  (the control planes start from it)
from tests.cluster.converge import Api, Refused
from tests.cluster.envtest import ControlPlane, binaries_or_skip, start
from tests.drift.test_fleet import _closed_port
from tests.gitops.test_sync import git
from tests.kubeapi import without_proxies
from tests.rollout import exported, world
from tests.rollout.test_rollout import AFTER_SOAK, BEFORE_SOAK, FINISHED, _clone, _identity, bumped  # noqa: F401

CLUSTERS = ("a", "b", "c")
NAMESPACE = "nvcre-system"
APPLIED = "2026-12-01T09:30:00Z"
SNAPSHOT_AT = "2026-12-01T12:00:00Z"
AGENT = ("aicr", "snapshot")
"""Where the fleet's agent writes its snapshot (``spec.snapshot.configmap: cm://aicr/snapshot``)."""
NVCRE_PLURALS = ("certifications", "workflows", "bandwidthmeasurements")

READER_RULES = [
    {"apiGroups": ["nvcre.nvidia.com"], "resources": ["certifications", "workflows", "bandwidthmeasurements"],
     "verbs": ["list"]},
    {"apiGroups": ["argoproj.io"], "resources": ["applications"], "verbs": ["list"]},
    {"apiGroups": ["kustomize.toolkit.fluxcd.io"], "resources": ["kustomizations"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["nodes"], "verbs": ["list"]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["list"], "resourceNames": [world.BREAKER]},
    {"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"], "resourceNames": [AGENT[1]]},
]
"""What ``rollout status`` reads of a cluster (``aicr_gen.rollout.read.live``): NVCRE's three kinds, the
deployer's root object and the GPU Nodes are listed; NVSentinel's breaker is a ConfigMap list across namespaces
with the field selector ``metadata.name=circuit-breaker``, which the API server authorizes as that name (so no
other ConfigMap is readable); the agent's snapshot is a ConfigMap get by name."""


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch: pytest.MonkeyPatch) -> None:
    without_proxies(monkeypatch)


@pytest.fixture(scope="module")
def planes(tmp_path_factory: pytest.TempPathFactory, crd_seed: Path) -> Iterator[dict[str, ControlPlane]]:  # noqa: F811
    """Three control planes started at once from the CRD seed (Argo CD's and Flux's real CRDs), NVCRE's CRDs
    installed on each."""
    binaries = binaries_or_skip()
    with contextlib.ExitStack() as stack, ThreadPoolExecutor(len(CLUSTERS)) as pool:
        futures = {name: pool.submit(start, tmp_path_factory.mktemp(f"cluster-{name}"), binaries, crd_seed)
                   for name in CLUSTERS}
        started: dict[str, ControlPlane] = {}
        for name, future in futures.items():  # every started plane is stopped, even when another failed
            with contextlib.suppress(Exception):
                started[name] = future.result()
                stack.callback(started[name].stop)
        missing = [name for name in CLUSTERS if name not in started]
        if missing:
            futures[missing[0]].result()  # raises why
        list(pool.map(lambda plane: world.install_nvcre_crds(Api(plane)), started.values()))
        yield started


@pytest.fixture(scope="module")
def apis(planes: dict[str, ControlPlane]) -> dict[str, Api]:
    return {name: Api(plane) for name, plane in planes.items()}


@pytest.fixture(scope="module")
def kubeconfig(planes: dict[str, ControlPlane], tmp_path_factory: pytest.TempPathFactory) -> str:
    """The planes' kubeconfigs merged: context ``<cluster>`` as the plane's admin, ``<cluster>-reader`` as its
    user ``nobody`` (no rights until a test binds some), and ``c-dead`` naming c's server on a closed port. The
    current context is ``a``: the reader must never fall back to it."""
    config: dict[str, Any] = {"apiVersion": "v1", "kind": "Config", "current-context": "a", "clusters": [],
                              "users": [], "contexts": []}
    for name, plane in planes.items():
        own = yaml.safe_load(plane.kubeconfig.read_text(encoding="utf-8"))
        users = {user["name"]: user["user"] for user in own["users"]}
        config["clusters"].append({"name": name, "cluster": own["clusters"][0]["cluster"]})
        config["users"] += [{"name": f"{name}-{user}", "user": users[user]} for user in ("admin", "nobody")]
        config["contexts"] += [{"name": name, "context": {"cluster": name, "user": f"{name}-admin"}},
                               {"name": f"{name}-reader", "context": {"cluster": name, "user": f"{name}-nobody"}}]
    dead = {**config["clusters"][-1]["cluster"], "server": f"https://127.0.0.1:{_closed_port()}"}
    config["clusters"].append({"name": "dead", "cluster": dead})
    config["contexts"].append({"name": "c-dead", "context": {"cluster": "dead", "user": "c-admin"}})
    path = tmp_path_factory.mktemp("kubeconfig") / "config"
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")
    return str(path)


# ------------------------------------------------------------------------------------------- the world


def _write_snapshot(kubeconfig: str, context: str, snapshot: Mapping[str, Any]) -> None:
    """The snapshot in the agent's ConfigMap, written as ``aicr-gen snapshot -o cm://aicr/snapshot`` writes it."""
    from aicr_gen.commands.snapshot import LABELS, configmap_payload
    from aicr_gen.edges.kube.client import connect
    from aicr_gen.yaml import dump

    data, binary = configmap_payload(dump(dict(snapshot)), str(snapshot["metadata"]["timestamp"]))
    with connect(kubeconfig, context) as cluster:
        cluster.apply_configmap(*AGENT, data, binary,
                                {**LABELS, "app.kubernetes.io/version": str(snapshot["metadata"]["version"])})


class Fleet(NamedTuple):
    """The test's copy of the repository and the planes its clusters run on."""

    repo: Path
    kubeconfig: str
    apis: dict[str, Api]

    def prove(self, name: str, *, certification: Mapping[str, Any] | None = None, quarantined: bool = False,
              tripped: bool = False, live: Mapping[str, str] | None = None, applied: str = APPLIED) -> None:
        """Cluster ``name`` as its controllers leave it after applying HEAD: two GPU nodes (gpu-1 quarantined when
        asked; any other Node deleted), NVSentinel's breaker, one Certification of its tree's stack digest
        (``certification``: the writer's arguments over a pass at 412 GB/s) with its Workflow and
        BandwidthMeasurement (earlier runs deleted), the root Application synced at HEAD, and the agent's snapshot
        of its recipe (``live``: component -> the version running instead)."""
        api, path = self.apis[name], f"clusters/{name}"
        for plural in NVCRE_PLURALS:
            api.call("DELETE", f"/apis/nvcre.nvidia.com/v1alpha1/namespaces/{NAMESPACE}/{plural}")
        api.call("DELETE", "/api/v1/nodes")
        for index in range(2):
            world.gpu_node(api, f"gpu-{index}", quarantined=quarantined and index == 1)
        world.circuit_breaker(api, tripped=tripped)
        world.certification(api, **{"name": f"gpu-certification-{name}", "namespace": NAMESPACE,
                                    "stack_digest": exported.stack_digest(self.repo, path), "bus_bw": 412.0,
                                    "finished_at": FINISHED, **(certification or {})})
        world.argo_application(api, revision=git(self.repo, "rev-parse", "HEAD").strip(), finished_at=applied)
        api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": AGENT[0]}}, "aicr-gen-tests")
        _write_snapshot(self.kubeconfig, name, exported.snapshot(exported.recipe_refs(self.repo, path), live=live,
                                                                 timestamp=SNAPSHOT_AT))

    def rollout(self, cli: Any, command: str, now: str, *extra: str) -> Any:
        """``aicr-gen rollout COMMAND`` of the fleet, read live at ``now``."""
        return cli("rollout", command, str(self.repo / "fleet.yaml"), "--kubeconfig", self.kubeconfig, "--now",
                   now, *extra)

    def head(self) -> str:
        return git(self.repo, "rev-parse", "HEAD").strip()


@pytest.fixture
def fleet(apis: dict[str, Api], kubeconfig: str, bumped: Path, tmp_path: Path) -> Fleet:  # noqa: F811
    """A copy of the bumped repository, every cluster proving its tree at HEAD (a test changes what it needs); the
    planes come first, so that without them the tests skip before the repository is built."""
    found = Fleet(_clone(bumped, tmp_path), kubeconfig, apis)
    for name in CLUSTERS:
        found.prove(name)
    return found


def _gates(document: Mapping[str, Any], cluster: str) -> dict[str, dict[str, str]]:
    row = next(item for wave in document["waves"] for item in wave["clusters"] if item["name"] == cluster)
    return dict(row["gates"])


# ------------------------------------------------------------------------------------------- the tests


def test_a_certified_canary_soaks_then_advance_moves_prod_and_prod_completes(cli: Any, fleet: Fleet) -> None:
    soaking = fleet.rollout(cli, "status", BEFORE_SOAK, "--format", "json")
    assert soaking.code == 0, soaking.err
    document = json.loads(soaking.out)
    canary, prod = document["waves"]
    assert canary["atTarget"] and canary["status"] == "soaking" and canary["text"] == "soaking, 23h left"
    head = fleet.head()
    assert _gates(document, "a") == {
        "certified": {"status": "pass", "text": "certified 412 GB/s >= 300", "since": FINISHED},
        "healthy": {"status": "pass", "text": f"Synced, Healthy at {head[:12]}", "since": APPLIED},
        "no-drift": {"status": "pass", "text": f"no drift (snapshot {SNAPSHOT_AT})", "since": ""},
        "no-quarantine": {"status": "pass", "text": "no quarantine (2 GPU nodes)", "since": ""}}
    assert not prod["atTarget"] and prod["text"] == "passed (on the previous baseline)"
    assert [sorted(_gates(document, name)) for name in "bc"] == [["certified", "healthy"]] * 2
    assert document["next"]["action"] == "wait" and document["next"]["wave"] == "prod"
    assert fleet.rollout(cli, "advance", BEFORE_SOAK).code == 0
    assert fleet.head() == head  # soaking: nothing committed

    advanced = fleet.rollout(cli, "advance", AFTER_SOAK)
    assert advanced.code == 0, advanced.err
    assert "advance prod (from canary)" in advanced.err
    assert "- a: certified certified 412 GB/s >= 300" in git(fleet.repo, "log", "-1", "--format=%B")
    trailers = git(fleet.repo, "log", "-1", "--format=%(trailers:only)")
    assert "Rollout-Wave: prod" in trailers and "Rollout-From: canary" in trailers
    assert "Rollout-Evidence: sha256:" in trailers
    changed = git(fleet.repo, "show", "--name-only", "--format=", "HEAD").split()
    assert {name.split("/")[1] for name in changed if name.startswith("clusters/")} == {"b", "c"}
    moved = fleet.head()
    again = fleet.rollout(cli, "status", AFTER_SOAK, "--format", "json")
    assert again.code == 0, again.err
    waiting = json.loads(again.out)
    assert waiting["next"]["action"] == "wait"  # prod's clusters still run (and certified) the old stack
    assert _gates(waiting, "b")["healthy"] == {"status": "wait", "since": "",
                                               "text": f"Application nvidia-stack at {head[:12]}, not yet at this tree"}
    assert _gates(waiting, "b")["certified"]["text"].startswith("no Certification of stack sha256:")

    for name in "bc":  # Argo CD applies the move, the post-change job certifies it
        fleet.prove(name, applied="2026-12-01T10:00:00Z", certification={"finished_at": "2026-12-02T13:00:00Z"})
    prod_soaking = json.loads(fleet.rollout(cli, "status", "2026-12-03T13:00:00Z", "--format", "json").out)
    assert prod_soaking["waves"][1]["text"] == "soaking, 1d left"
    soaked = fleet.rollout(cli, "status", "2026-12-04T13:00:00Z", "--format", "json")
    assert soaked.code == 0, soaked.err
    final = json.loads(soaked.out)
    assert [wave["status"] for wave in final["waves"]] == ["pass", "pass"]
    assert final["next"]["action"] == "complete"
    assert _gates(final, "c")["healthy"]["text"] == f"Synced, Healthy at {moved[:12]}"
    assert fleet.rollout(cli, "advance", "2026-12-04T13:00:00Z").code == 0
    assert fleet.head() == moved


def test_a_canary_below_its_nccl_threshold_halts_advance(cli: Any, fleet: Fleet) -> None:
    fleet.prove("a", certification={"outcome": "Failed", "bus_bw": 250.0})
    head = fleet.head()
    halted = fleet.rollout(cli, "advance", AFTER_SOAK, "--format", "markdown")
    assert halted.code == 1, halted.err
    assert "**Next: halt: prod waits for canary**" in halted.out
    assert "canary/a certified: gpu-certification-a FAILED: 250 GB/s, needs >= 300" in halted.out
    assert fleet.head() == head
    assert git(fleet.repo, "status", "--porcelain") == ""


@pytest.mark.parametrize(("marks", "text"), [
    ({"quarantined": True}, "1 node quarantined: gpu-1"),
    ({"tripped": True}, "NVSentinel circuit breaker TRIPPED"),
])
def test_a_quarantined_node_or_a_tripped_breaker_fails_no_quarantine(cli: Any, fleet: Fleet, *,
                                                                      marks: dict[str, bool], text: str) -> None:
    fleet.prove("a", **marks)
    status = fleet.rollout(cli, "status", AFTER_SOAK, "--format", "json")
    assert status.code == 1, status.err
    document = json.loads(status.out)
    assert _gates(document, "a")["no-quarantine"] == {"status": "fail", "text": text, "since": ""}
    assert document["next"]["action"] == "halt"


def _failing_canary(fleet: Fleet) -> None:
    """The canary below its threshold, a node quarantined and gpu-operator still on the old version."""
    fleet.prove("a", certification={"outcome": "Failed", "bus_bw": 250.0}, quarantined=True,
                live={"gpu-operator": "v26.3.3"})


def _without_gpu_nodes(fleet: Fleet) -> None:
    """The canary's GPU labels gone (a failed bump takes GPU feature discovery with it): CPU nodes only."""
    api = fleet.apis["a"]
    api.call("DELETE", "/api/v1/nodes")
    api.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "cpu-0"}}, world.KUBELET_MANAGER)


@pytest.mark.parametrize(("change", "code", "verdicts"), [
    (_failing_canary, 1, {"certified": ("fail", "gpu-certification-a FAILED: 250 GB/s, needs >= 300"),
                          "no-drift": ("fail", "drift: gpu-operator v26.3.3 -> v26.4.0"),
                          "no-quarantine": ("fail", "1 node quarantined: gpu-1")}),
    (_without_gpu_nodes, 0, {"no-quarantine": ("pass", "no quarantine (0 GPU nodes)")}),
], ids=["failing-canary", "no-gpu-labelled-node"])
def test_the_live_read_is_the_exported_one(cli: Any, fleet: Fleet, tmp_path: Path, *, change: Any, code: int,
                                           verdicts: dict[str, tuple[str, str]]) -> None:
    """``kubectl get -o yaml`` of each plane (``world.export``) and its agent's snapshot give the document reading
    the planes gives: for a canary failing three gates, and for one whose nodes lost the GPU label (live lists
    only GPU nodes: none is 0 of them, as the export of CPU nodes says, not "no Node read")."""
    change(fleet)
    folder = tmp_path / "evidence"
    for name, api in fleet.apis.items():
        world.export(api, folder / name)
        stored = api.call("GET", f"/api/v1/namespaces/{AGENT[0]}/configmaps/{AGENT[1]}")
        (folder / name / "snapshot.yaml").write_text(stored["data"]["snapshot.yaml"], encoding="utf-8")
    live = fleet.rollout(cli, "status", AFTER_SOAK, "--format", "json")
    files = cli("rollout", "status", str(fleet.repo / "fleet.yaml"), "--evidence", str(folder), "--now", AFTER_SOAK,
                "--format", "json")
    assert (live.code, files.code) == (code, code), live.err + files.err
    assert json.loads(live.out) == json.loads(files.out)
    gates = _gates(json.loads(live.out), "a")
    assert {gate: (gates[gate]["status"], gates[gate]["text"]) for gate in verdicts} == verdicts


def test_a_breaker_of_that_name_elsewhere_never_hides_a_tripped_one(cli: Any, fleet: Fleet) -> None:
    """The breaker is read in every namespace (NVSentinel's is its release's): another application's ConfigMap
    ``circuit-breaker``, listed first, must not make a TRIPPED breaker look absent."""
    api = fleet.apis["a"]
    fleet.prove("a", tripped=True)
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "billing"}}, "aicr-gen-tests")
    other = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": world.BREAKER, "namespace": "billing"},
             "data": {"failureThreshold": "5", "resetTimeout": "30s"}}
    api.apply(other, "billing")
    try:
        status = fleet.rollout(cli, "status", AFTER_SOAK, "--format", "json")
    finally:
        api.call("DELETE", f"/api/v1/namespaces/billing/configmaps/{world.BREAKER}")
    assert status.code == 1, status.err
    assert _gates(json.loads(status.out), "a")["no-quarantine"] == {
        "status": "fail", "text": "NVSentinel circuit breaker TRIPPED", "since": ""}


def test_the_quarantine_evidence_of_a_listing() -> None:
    """Without a cluster (the quick loop): a TRIPPED breaker wins over a ConfigMap of that name listed before it,
    and listed GPU nodes, even none, are counted where no Node read is no evidence."""
    from aicr_gen.rollout.evidence import Quarantine, evidence
    from aicr_gen.yaml import Document

    breakers = [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": world.BREAKER, "namespace": space},
                 "data": data} for space, data in (("billing", {"failureThreshold": "5"}),
                                                   ("nvsentinel", {"status": "TRIPPED"}))]
    listing = [Document("listing", {"kind": "List", "items": breakers}, {})]
    assert evidence(listing).quarantine == Quarantine(None, (), "TRIPPED")
    assert evidence(listing, gpu_nodes_listed=True).quarantine == Quarantine(0, (), "TRIPPED")


def test_an_unreachable_cluster_is_unknown_and_exit_3(cli: Any, fleet: Fleet) -> None:
    status = fleet.rollout(cli, "status", AFTER_SOAK, "--context", "c=c-dead", "--format", "json")
    assert status.code == 3, status.err
    assert "1 cluster(s) could not be read (c)" in status.err
    document = json.loads(status.out)
    for gate in _gates(document, "c").values():
        assert gate["status"] == "unknown"
        assert gate["text"].startswith("cannot reach the Kubernetes API at https://127.0.0.1:"), gate["text"]
    assert {row["name"]: row["status"] for wave in document["waves"] for row in wave["clusters"]} == {
        "a": "pass", "b": "pass", "c": "unknown"}
    assert document["next"]["action"] == "advance"  # c is of the wave behind the target: the canary decides


def test_a_flux_clusters_kustomization_reads_live_as_exported(fleet: Fleet, tmp_path: Path) -> None:
    """The Flux path of the reader (the fleet deploys with Argo CD): the root Kustomization in ``flux-system``,
    its status written through ``/status`` by kustomize-controller, read live is what its export says."""
    from aicr_gen.rollout.evidence import Deployed
    from aicr_gen.rollout.read import Place, live
    from aicr_gen.rollout.read import exported as exported_read
    from aicr_gen.spec.load import load_spec

    api, head = fleet.apis["a"], fleet.head()
    world.flux_kustomization(api, revision=head, at=APPLIED)
    try:
        world.export(api, tmp_path / "a")
        (tmp_path / "a" / "snapshot.yaml").write_text(api.call(
            "GET", f"/api/v1/namespaces/{AGENT[0]}/configmaps/{AGENT[1]}")["data"]["snapshot.yaml"], encoding="utf-8")
        read = live(load_spec(str(fleet.repo / "clusters" / "a.yaml")), "flux", fleet.kubeconfig, "a",
                    Place("a", "flux-system"))
    finally:
        api.call("DELETE", "/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/flux-system/kustomizations/aicr-stack")
    assert read.evidence is not None, read.error
    assert read.evidence.deployed == (Deployed("Kustomization", "flux-system", "aicr-stack", head, "healthy", "Ready",
                                               APPLIED),)
    files = exported_read(tmp_path, "a")
    assert files.evidence is not None
    assert read.evidence.runs == files.evidence.runs and read.evidence.quarantine == files.evidence.quarantine
    assert read.snapshot == files.snapshot


def test_a_hub_holds_the_deployer_object(fleet: Fleet) -> None:
    """One Argo CD for many clusters (or a Flux hub): the root object of cluster a lives on plane b, named for
    the cluster, and is read there while the rest comes from a's own context."""
    from aicr_gen.rollout.read import Place, deployer_place, live
    from aicr_gen.spec.load import load_spec

    hub, head = fleet.apis["b"], fleet.head()
    world.argo_application(hub, name="a-aicr-stack", revision=head, finished_at=APPLIED)
    cluster = load_spec(str(fleet.repo / "clusters" / "a.yaml"))
    try:
        read = live(cluster, "argocd", fleet.kubeconfig, "a", Place("b", "argocd"))
    finally:
        hub.call("DELETE", "/apis/argoproj.io/v1alpha1/namespaces/argocd/applications/a-aicr-stack")
    assert read.evidence is not None, read.error
    assert "a-aicr-stack" in {item.name for item in read.evidence.deployed}  # beside b's own root
    assert read.evidence.runs[0].name == "gpu-certification-a"  # the rest from a's own plane
    from aicr_gen.spec.cluster import ArgoCD

    shared = cluster.model_copy(update={"spec": cluster.spec.model_copy(update={"argocd": ArgoCD(shared=True)})})
    assert deployer_place(shared, "argocd", "a", {}, "hub") == Place("hub", "argocd")
    assert deployer_place(cluster, "argocd", "a", {}, "hub") == Place("a", "argocd")


# ------------------------------------------------------------------------------------------- least privilege


READER = "aicr-gen-rollout-reader"


def _reader_role(api: Api, rules: list[dict[str, Any]]) -> None:
    """ClusterRole ``aicr-gen-rollout-reader`` of ``rules`` bound to user ``nobody`` (re-applied: rules left out
    are removed)."""
    api.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": READER},
               "rules": rules}, "aicr-gen-tests")
    api.apply({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": READER},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": READER},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "nobody"}]},
              "aicr-gen-tests")


def _allowed(api: Api, group: str, resource: str, verb: str, name: str = "") -> bool:
    """What the real authorizer answers for user ``nobody`` (a SubjectAccessReview, cluster-wide)."""
    attributes = {"group": group, "resource": resource, "verb": verb, **({"name": name} if name else {})}
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
              "spec": {"user": "nobody", "groups": ["system:authenticated"], "resourceAttributes": attributes}}
    return bool(api.call("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)["status"]
                .get("allowed"))


def _settled(api: Api, rules: list[dict[str, Any]]) -> None:
    """Wait until the authorizer answers as ``rules`` say (RBAC reads its objects through a cache)."""
    granted = set(_triples(rules))
    for _ in range(200):
        if all(_allowed(api, *triple) == (triple in granted) for triple in _triples(READER_RULES)):
            return
        time.sleep(0.05)
    raise AssertionError(f"RBAC never settled on {rules}")


def _triples(rules: list[dict[str, Any]]) -> list[tuple[str, str, str, str]]:
    """Each (group, resource, verb, resource name or "") ``rules`` grant."""
    return [(group, resource, verb, name) for rule in rules for group in rule["apiGroups"]
            for resource in rule["resources"] for verb in rule["verbs"] for name in rule.get("resourceNames") or [""]]


def test_a_reader_bound_to_the_listed_rules_reads_everything(cli: Any, fleet: Fleet) -> None:
    """The least privilege of a CI kubeconfig: ``READER_RULES`` in a ClusterRole bound to a user with no other
    right. Reading through it gives the admin's document; without the binding the cluster is unknown."""
    api = fleet.apis["a"]
    with contextlib.suppress(Refused):  # not bound yet
        api.call("DELETE", f"/apis/rbac.authorization.k8s.io/v1/clusterrolebindings/{READER}")
        _settled(api, [])
    refused = fleet.rollout(cli, "status", AFTER_SOAK, "--context", "a=a-reader", "--format", "json")
    assert refused.code == 3 and "forbidden" in json.dumps(_gates(json.loads(refused.out), "a")).lower()
    _reader_role(api, READER_RULES)
    _settled(api, READER_RULES)
    assert not any(_allowed(api, "", resource, verb, name) for resource, verb, name in (
        ("secrets", "list", ""), ("nodes", "watch", ""), ("configmaps", "list", ""), ("configmaps", "get", "other")))
    admin = fleet.rollout(cli, "status", AFTER_SOAK, "--format", "json")
    reader = fleet.rollout(cli, "status", AFTER_SOAK, "--context", "a=a-reader", "--format", "json")
    assert reader.code == admin.code == 0, reader.err
    assert json.loads(reader.out) == json.loads(admin.out)


def test_each_rule_of_the_reader_is_needed(apis: dict[str, Api], kubeconfig: str, bumped: Path) -> None:  # noqa: F811
    """Without any one verb of ``READER_RULES`` the live read of a cluster fails, naming the refusal: the whole
    cluster for a list, the snapshot (``no-drift``) for the agent's ConfigMap get. Kustomizations are listed for a
    Flux cluster, Applications for an Argo CD one."""
    from aicr_gen.rollout.read import deployer_place, live
    from aicr_gen.spec.load import load_spec

    cluster = load_spec(str(bumped / "clusters" / "a.yaml"))
    api = apis["a"]
    try:
        for triple in _triples(READER_RULES):
            _group, resource, verb, _name = triple
            rules = [{"apiGroups": [group], "resources": [plural], "verbs": [action],
                      **({"resourceNames": [name]} if name else {})}
                     for group, plural, action, name in _triples(READER_RULES) if (group, plural, action, name)
                     != triple]
            _reader_role(api, rules)
            _settled(api, rules)
            deployer = "flux" if resource == "kustomizations" else "argocd"
            read = live(cluster, deployer, kubeconfig, "a-reader",
                        deployer_place(cluster, deployer, "a-reader", {}, None))
            said = read.snapshot_error if (resource, verb) == ("configmaps", "get") else read.error
            assert "forbidden" in said.lower() and resource in said, (triple, read)
    finally:
        _reader_role(api, READER_RULES)
