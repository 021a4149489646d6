"""One Argo CD (and one repository) for many clusters: per-cluster destinations, Argo CD object names unique across
the trees, collisions named by both clusters, the fleet's ApplicationSet (with a RollingSync by a cluster label)
and Flux's per-cluster entry Kustomizations, checked against the real CRDs and applied to a real API server."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.bundle import Bundle
from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.trees import collisions, fleet_entry
from aicr_gen.gitops.trees.render_tree import render_tree
from aicr_gen.render.argocd import SHARED_MAX_NAME
from aicr_gen.spec.cluster import ClusterSpec
from aicr_gen.spec.load import load_spec
from tests.bundles import YAMLSnapshot
from tests.cluster.conftest import cluster_with_crds, crd_seed  # noqa: F401 - the control plane fixtures
from tests.consumers import validate_manifests

REPO_URL = "https://github.com/example/gitops.git"
CRITERIA = {"service": "eks", "accelerator": "h100", "intent": "inference", "os": "ubuntu", "platform": "dynamo"}
FLEET = {"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "Fleet", "metadata": {"name": "gpu-fleet"},
         "spec": {"deployers": ["argocd", "flux"], "repo": {"url": REPO_URL},
                  "argocd": {"shared": True, "rollout": {"label": "stage", "order": ["canary", "prod"]}},
                  "flux": {"hub": "mgmt", "kubeConfigSecret": {"name": "cluster-kubeconfig"}}}}
CLUSTERS = {"gpu-west": ("prod", {"destinationServer": "https://gpu-west.example.com:6443"}),
            "gpu-east": ("canary", {"destinationName": "gpu-east"})}


def write(path: Path, data: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump(dict(data), sort_keys=False), encoding="utf-8")
    return path


def cluster_doc(name: str, stage: str | None, argocd: Mapping[str, Any] | None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"extends": "../fleet.yaml", "criteria": CRITERIA, "repo": {"path": f"clusters/{name}"},
                            **({"argocd": dict(argocd)} if argocd is not None else {}), **spec}
    return {"apiVersion": "aicr-gen.dev/v1alpha1", "kind": "ClusterSpec",
            "metadata": {"name": name, **({"labels": {"stage": stage}} if stage else {})}, "spec": body}


def write_fleet(root: Path, fleet: Mapping[str, Any] = FLEET,
                clusters: Mapping[str, tuple[str | None, Mapping[str, Any] | None]] = CLUSTERS) -> list[Path]:
    write(root / "fleet.yaml", fleet)
    return [write(root / "specs" / f"{name}.yaml", cluster_doc(name, stage, argocd))
            for name, (stage, argocd) in clusters.items()]


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, ClusterSpec], dict[str, Bundle]]:
    """The two clusters of ``FLEET`` loaded, and their rendered trees."""
    root = tmp_path_factory.mktemp("fleet")
    specs = {path.stem: load_spec(path) for path in write_fleet(root)}
    return specs, {name: render_tree(spec, root / "specs") for name, spec in specs.items()}


def objects(tree: Bundle, prefix: str) -> list[dict[str, Any]]:
    """The Applications of the tree's argocd bundle at ``prefix``: the root and every child."""
    paths = [path for path in sorted(tree) if path.startswith(prefix)
             and (path.endswith("/application.yaml") or path == f"{prefix}app-of-apps.yaml")]
    return [doc for path in paths for doc in yaml.safe_load_all(tree[path]) if doc]


# ------------------------------------------------------------------------------------------ names, destinations


def test_clusters_sharing_an_argocd_name_every_object_after_the_cluster(fleet: Any) -> None:
    _specs, trees = fleet
    for name, tree in trees.items():
        apps = objects(tree, "argocd/")
        assert apps and all(app["metadata"]["name"].startswith(f"{name}-") for app in apps)
        root = yaml.safe_load(tree["argocd/app-of-apps.yaml"])
        assert root["metadata"]["name"] == f"{name}-aicr-stack"
        assert root["spec"]["destination"] == {"server": "https://kubernetes.default.svc", "namespace": "argocd"}
        charts = [(app["metadata"]["name"], source) for app in apps
                  for source in app["spec"].get("sources") or [app["spec"]["source"]] if "chart" in source]
        assert charts
        for app_name, source in charts:  # the cluster's objects keep their names: Helm releases are the units'
            assert source["helm"]["releaseName"] == app_name.removeprefix(f"{name}-")
    destinations = {name: {tuple(sorted(set(app["spec"]["destination"]) - {"namespace"}))
                           for app in objects(tree, "argocd/") if not app["metadata"]["name"].endswith("aicr-stack")}
                    for name, tree in trees.items()}
    assert destinations == {"gpu-west": {("server",)}, "gpu-east": {("name",)}}
    west = yaml.safe_load(trees["gpu-west"]["argocd/003-cert-manager/application.yaml"])
    assert west["spec"]["destination"]["server"] == "https://gpu-west.example.com:6443"
    east = yaml.safe_load(trees["gpu-east"]["argocd/003-cert-manager/application.yaml"])
    assert east["spec"]["destination"]["name"] == "gpu-east"


def test_no_object_collides_across_the_trees_of_a_shared_argocd(fleet: Any) -> None:
    specs, trees = fleet
    assert collisions.collisions(trees, collisions.planes_of(specs)) == []
    assert collisions.collisions(trees) == []  # one Argo CD for the whole repository: still unique
    placed = [item for name, tree in trees.items() for item in collisions.objects(name, tree)]
    assert {item.controller for item in placed} == {"argocd", "flux"}


def test_a_collision_names_both_clusters(tmp_path: Path) -> None:
    own = {name: (stage, {"shared": False}) for name, (stage, _) in CLUSTERS.items()}
    specs = {path.stem: load_spec(path) for path in write_fleet(tmp_path, clusters=own)}
    trees = {name: render_tree(spec, tmp_path / "specs") for name, spec in specs.items()}
    assert collisions.collisions(trees, collisions.planes_of(specs)) == []  # each cluster has its own Argo CD
    found = collisions.collisions(trees)  # ... but in one Argo CD they would replace each other's
    assert found and {item.first.controller for item in found} == {"argocd"}
    root = next(item for item in found if item.first.name == "nvidia-stack")
    assert (root.first.cluster, root.second.cluster) == ("gpu-west", "gpu-east")
    assert root.first.file == root.second.file == "argocd/app-of-apps.yaml"
    assert re.search(r"Application argocd/nvidia-stack is defined by cluster 'gpu-west' .* and by cluster 'gpu-east'",
                     root.message())
    with pytest.raises(InvalidInputError) as err:
        collisions.refuse(trees)
    assert err.value.exit_code == 2


def test_names_past_the_label_limit_are_shortened_deterministically(tmp_path: Path) -> None:
    long = "gpu-" + "x" * 55
    paths = write_fleet(tmp_path, clusters={long: ("canary", {"shared": True})})
    first, second = (render_tree(load_spec(paths[0]), tmp_path / "specs") for _ in range(2))
    assert first == second
    names = [app["metadata"]["name"] for app in objects(first, "argocd/")]
    assert all(len(name) <= SHARED_MAX_NAME for name in names) and len(set(names)) == len(names)
    assert any(re.fullmatch(rf"{long[:40]}.*-[0-9a-f]{{8}}", name) for name in names)


@pytest.mark.parametrize(("argocd", "flux", "message"), [
    ({"destinationServer": "https://a:6443", "destinationName": "a"}, None,
     r"spec\.argocd\.destinationName: .*not both"),
    ({"destinationServer": "gpu-a"}, None, r"spec\.argocd\.destinationServer: 'gpu-a' is not an API server URL"),
    ({"rollout": {"label": "stage", "order": ["prod", "prod"]}}, None,
     r"spec\.argocd\.rollout\.order\[1\]: 'prod' is listed twice"),
    (None, {"hub": "mgmt"}, r"spec\.flux\.hub: .*give kubeConfigSecret too"),
    (None, {"hub": "a", "kubeConfigSecret": {"name": "k"}}, r"spec\.flux\.hub: names this cluster"),
])
def test_destinations_and_hubs_are_validated(tmp_path: Path, argocd: Any, flux: Any, message: str) -> None:
    write(tmp_path / "fleet.yaml", {**FLEET, "spec": {"deployers": ["argocd"], "repo": {"url": REPO_URL}}})
    spec = write(tmp_path / "specs" / "a.yaml", cluster_doc("a", None, argocd, **({"flux": flux} if flux else {})))
    with pytest.raises(InvalidInputError, match=rf"a\.yaml:\d+: {message}"):
        load_spec(spec)


def test_a_fleet_gives_no_destination(tmp_path: Path) -> None:
    fleet = {**FLEET, "spec": {**FLEET["spec"], "argocd": {"destinationServer": "https://a:6443"}}}
    paths = write_fleet(tmp_path, fleet=fleet)
    with pytest.raises(InvalidInputError, match=r"fleet\.yaml:\d+: spec\.argocd\.destinationServer: a destination "
                                                r"is per cluster"):
        load_spec(paths[0])


# ------------------------------------------------------------------------------------------ entry points


@pytest.fixture(scope="module")
def entry(fleet: Any) -> Bundle:
    specs, _trees = fleet
    return fleet_entry.render(list(specs.values()))


def test_the_entry_points_validate_against_the_crds(entry: Bundle) -> None:
    assert sorted(entry) == ["argocd/applicationset.yaml", "checksums.txt", "flux/clusters/mgmt/spokes/gpu-east.yaml",
                             "flux/clusters/mgmt/spokes/gpu-west.yaml"]
    assert validate_manifests(dict(entry)) == 5


def test_the_applicationset_rolls_out_by_stage(entry: Bundle) -> None:
    appset = yaml.safe_load(entry["argocd/applicationset.yaml"])
    steps = appset["spec"]["strategy"]["rollingSync"]["steps"]
    assert [step["matchExpressions"] for step in steps] == [[{"key": "stage", "operator": "In", "values": ["canary"]}],
                                                           [{"key": "stage", "operator": "In", "values": ["prod"]}]]
    assert appset["spec"]["template"]["metadata"]["labels"]["stage"] == "{{.rollout}}"
    assert "syncPolicy" not in appset["spec"]["template"]["spec"]  # RollingSync syncs the roots itself
    elements = appset["spec"]["generators"][0]["list"]["elements"]
    assert [(item["cluster"], item["rollout"], item["app"]) for item in elements] == [
        ("gpu-west", "prod", "gpu-west-aicr-stack"), ("gpu-east", "canary", "gpu-east-aicr-stack")]


def test_the_applicationset_is_each_trees_app_of_apps(fleet: Any) -> None:
    specs, trees = fleet
    appset = fleet_entry.applicationset(list(specs.values()))
    for element in appset["spec"]["generators"][0]["list"]["elements"]:
        generated = generate(appset["spec"]["template"], element)
        root = yaml.safe_load(trees[element["cluster"]]["argocd/app-of-apps.yaml"])
        assert generated["metadata"]["name"] == root["metadata"]["name"]
        assert generated["spec"] == {key: value for key, value in root["spec"].items() if key != "syncPolicy"}


def test_a_cluster_no_step_selects_is_refused(tmp_path: Path) -> None:
    paths = write_fleet(tmp_path, clusters={**CLUSTERS, "gpu-lab": ("lab", {"shared": True})})
    with pytest.raises(InvalidInputError, match=r"gpu-lab\.yaml:\d+: metadata\.labels: cluster 'gpu-lab' has no stage "
                                                r"label with one of canary, prod"):
        fleet_entry.render([load_spec(path) for path in paths])


def test_a_cluster_with_its_own_argocd_is_not_in_the_applicationset(tmp_path: Path) -> None:
    paths = write_fleet(tmp_path, clusters={"gpu-west": ("prod", {"shared": False})})
    with pytest.raises(InvalidInputError, match="has its own Argo CD"):
        fleet_entry.render([load_spec(path) for path in paths])


def test_flux_entries_follow_the_clusters_layout(tmp_path: Path) -> None:
    fleet = {**FLEET, "spec": {"deployers": ["flux"], "repo": {"url": REPO_URL}}}
    own = write_fleet(tmp_path, fleet=fleet, clusters={"gpu-west": ("prod", None)})
    spoke = write(tmp_path / "specs" / "gpu-east.yaml",
                  cluster_doc("gpu-east", None, None, flux={"hub": "gpu-west",
                                                            "kubeConfigSecret": {"name": "east", "key": "value"}}))
    bundle = fleet_entry.render([load_spec(path) for path in [*own, spoke]])
    assert validate_manifests(dict(bundle)) == 3
    west = yaml.safe_load(bundle["flux/clusters/gpu-west/aicr-stack.yaml"])
    assert (west["metadata"], west["spec"]["path"], "kubeConfig" in west["spec"]) == (
        {"name": "aicr-stack", "namespace": "flux-system"}, "./clusters/gpu-west/flux", False)
    namespace, east = yaml.safe_load_all(bundle["flux/clusters/gpu-west/spokes/gpu-east.yaml"])
    assert namespace == {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "gpu-east"}}
    assert east["metadata"] == {"name": "aicr-stack", "namespace": "gpu-east"}
    assert east["spec"]["kubeConfig"] == {"secretRef": {"name": "east", "key": "value"}}
    assert east["spec"]["sourceRef"] == {"kind": "GitRepository", "name": "flux-system", "namespace": "flux-system"}


def test_applicationset_bytes(entry: Bundle, snapshot: Any) -> None:
    assert entry["argocd/applicationset.yaml"].decode() == snapshot(extension_class=YAMLSnapshot)


def test_the_entry_points_are_deterministic(fleet: Any, entry: Bundle) -> None:
    specs, _trees = fleet
    assert fleet_entry.render(list(specs.values())) == entry
    assert fleet_entry.render(list(reversed(specs.values()))) != entry  # the spec order is the element order


def test_fleet_entry_command_writes_the_folder(tmp_path: Path, cli: Any) -> None:
    paths = write_fleet(tmp_path)
    result = cli("fleet", "entry", str(tmp_path / "specs" / "*.yaml"), "-o", str(tmp_path / "out"))
    assert result.code == 0, result
    assert (tmp_path / "out" / "argocd" / "applicationset.yaml").is_file()
    assert cli("lint", *map(str, paths)).code == 0


# ------------------------------------------------------------------------------------------ a real API server


def generate(template: Any, element: Mapping[str, str]) -> Any:
    """The Application the list generator makes of ``element`` (goTemplate with missingkey=error)."""
    if isinstance(template, dict):
        return {key: generate(value, element) for key, value in template.items()}
    if isinstance(template, list):
        return [generate(value, element) for value in template]
    if isinstance(template, str):
        return re.sub(r"\{\{\.(\w+)\}\}", lambda match: element[match[1]], template)
    return template


def write_checkout(root: Path, trees: Mapping[str, Bundle], specs: Mapping[str, ClusterSpec]) -> Path:
    """The repository as a controller clones it: every tree in its managed folder."""
    for name, tree in trees.items():
        for path, data in tree.items():
            target = root / specs[name].spec.repo.path / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    return root


def test_the_applicationset_and_two_trees_coexist_in_one_argocd(fleet: Any, entry: Bundle, tmp_path: Path,
                                                                  cluster_with_crds: Any) -> None:  # noqa: F811
    from tests.cluster.converge import Api, converge_argocd

    specs, trees = fleet
    checkout = write_checkout(tmp_path / "checkout", trees, specs)
    api = Api(cluster_with_crds)
    appset = yaml.safe_load(entry["argocd/applicationset.yaml"])
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "argocd"}}, "argocd-install")
    api.apply(appset, "argocd-applicationset-controller")  # strict field validation against the real CRD
    for element in appset["spec"]["generators"][0]["list"]["elements"]:
        app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
               **generate(appset["spec"]["template"], element)}
        app["metadata"]["namespace"] = appset["metadata"]["namespace"]
        api.apply(app, "argocd-applicationset-controller")
    outcomes: dict[str, Any] = {}
    for name in trees:
        outcomes[name] = converge_argocd(cluster_with_crds, checkout, f"clusters/{name}/argocd", REPO_URL)
        assert not outcomes[name].refused, "\n".join(outcomes[name].refused)
    apps = {item["metadata"]["name"] for item in api.items("argoproj.io/v1alpha1", "Application", "argocd")}
    for tree in trees.values():
        mine = {app["metadata"]["name"] for app in objects(tree, "argocd/")}
        assert mine <= apps, sorted(mine - apps)
    assert len(apps) == sum(len(objects(tree, "argocd/")) for tree in trees.values())
    assert [item["metadata"]["name"] for item in api.items("argoproj.io/v1alpha1", "ApplicationSet", "argocd")] == [
        "aicr-fleet"]


def test_flux_spoke_entries_apply_to_the_hub(entry: Bundle, cluster_with_crds: Any) -> None:  # noqa: F811
    from tests.cluster.converge import Api, load_manifests

    api = Api(cluster_with_crds)
    api.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "flux-system"}}, "flux-install")
    for path in sorted(entry):
        if path.startswith("flux/"):
            for obj in load_manifests(entry[path].decode()):
                api.apply(obj, "kustomize-controller")
    applied = sorted(f"{item['metadata']['namespace']}/{item['metadata']['name']}"
                     for item in api.items("kustomize.toolkit.fluxcd.io/v1", "Kustomization"))
    assert applied == ["gpu-east/aicr-stack", "gpu-west/aicr-stack"]
