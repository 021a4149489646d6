"""The tree ``aicr-gen sync`` renders (pure, no Git): NVSentinel values merged into the nvsentinel component
of every deployer, the ValidationRequest template and the snapshot agent, each checked by its consumer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.certify.cron import STACK_DIGEST
from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.trees.render_tree import render_tree
from aicr_gen.spec.load import load_spec
from tests.conftest import ROOT
from tests.consumers import kustomize_build, validate_manifests, validate_objects
from tests.nvcre_elsewhere import certifying
from tests.sentinel.test_validation_request import crd_schema

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
COMPONENT_VALUES = ROOT / "overlays" / "components" / "nvsentinel" / "values.yaml"


def tree_of(tmp_path: Path, **sentinel_fields: Any) -> dict[str, bytes]:
    data = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["deployers"] = ["argocd", "flux", "helm"]
    data["spec"]["sentinel"].update(sentinel_fields)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return dict(render_tree(load_spec(path), tmp_path))


@pytest.fixture(scope="module")
def quarantine(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return tree_of(tmp_path_factory.mktemp("q"), mode="quarantine", breaker={"percentage": 10, "maxNodes": 3},
                   lifecycle=True, validation=True)


def flux_values(tree: dict[str, bytes]) -> dict[str, Any]:
    release = yaml.safe_load(tree["flux/018-nvsentinel/helmrelease.yaml"])
    values: dict[str, Any] = release["spec"]["values"]
    return values


@pytest.mark.parametrize("source", ["argocd/018-nvsentinel/values.yaml", "helm/018-nvsentinel/values.yaml", "flux"])
def test_sentinel_values_are_merged_into_the_component(quarantine: dict[str, bytes], source: str) -> None:
    ours = yaml.safe_load(quarantine["sentinel/values.yaml"])
    merged = flux_values(quarantine) if source == "flux" else yaml.safe_load(quarantine[source])
    component = yaml.safe_load(COMPONENT_VALUES.read_text())
    assert merged["fault-quarantine"]["ruleSets"] == ours["fault-quarantine"]["ruleSets"]  # complete, not merged
    assert merged["fault-quarantine"]["circuitBreaker"] == {"enabled": True, "percentage": 10, "duration": "5m",
                                                            "maxNodes": 3}
    assert merged["global"]["dryRun"] is False  # ours wins over the catalog's monitor-only true
    assert merged["global"]["tolerations"] == component["global"]["tolerations"]  # the catalog's kept
    assert merged["lifecycle-manager"] == ours["lifecycle-manager"]
    assert merged["fullnameOverride"] == component["fullnameOverride"]


def test_monitor_mode_keeps_the_catalog_values_switched_off(tmp_path: Path) -> None:
    tree = tree_of(tmp_path)
    merged = yaml.safe_load(tree["argocd/018-nvsentinel/values.yaml"])
    assert merged["global"]["faultQuarantine"] == {"enabled": False}
    assert "validation/validation-request.yaml" not in tree
    assert "fault-quarantine" not in merged or not merged["fault-quarantine"].get("ruleSets")


def test_validation_request_template_is_accepted_by_the_crd(quarantine: dict[str, bytes]) -> None:
    files = {path: data for path, data in quarantine.items() if path.startswith("validation/")}
    assert sorted(files) == ["validation/README.md", "validation/checksums.txt", "validation/validation-request.yaml"]
    assert validate_manifests(files, extra_schemas=crd_schema()) == 1
    request = yaml.safe_load(files["validation/validation-request.yaml"])
    assert request["metadata"]["name"] == "node-name-validation"
    assert request["spec"] == {"nodes": [{"name": "node-name"}]}  # the lifecycle manager's default tests


def test_snapshot_agent_is_rendered_from_the_spec(quarantine: dict[str, bytes]) -> None:
    files = {path: data for path, data in quarantine.items() if path.startswith("snapshot-agent/")}
    assert validate_manifests(files) >= 6
    cronjob = yaml.safe_load(files["snapshot-agent/cronjob.yaml"])
    assert cronjob["metadata"]["namespace"] == "aicr" and cronjob["spec"]["schedule"] == "0 * * * *"
    assert "cm://aicr/snapshot" in " ".join(cronjob["spec"]["jobTemplate"]["spec"]["template"]["spec"]
                                            ["containers"][0]["command"])


def test_no_snapshot_section_no_agent(tmp_path: Path) -> None:
    data = yaml.safe_load(EXAMPLE.read_text())
    del data["spec"]["snapshot"]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    assert not any(name.startswith("snapshot-agent/") for name in render_tree(load_spec(path), tmp_path))


def test_sentinel_without_the_component_is_refused(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog"
    (catalog / "overlays").mkdir(parents=True)
    (catalog / "overlays" / "base.yaml").write_text(
        (ROOT / "overlays" / "overlays" / "base.yaml").read_text().replace("- name: nvsentinel", "- name: nvsentinel\n"
                                                                           "      overrides: {enabled: false}", 1))
    data = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["catalogs"] = [str(ROOT / "overlays"), str(catalog)]
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(InvalidInputError, match=r"spec\.yaml:\d+: spec\.sentinel: the recipe has no enabled nvs"):
        render_tree(load_spec(path), tmp_path)


def test_argocd_and_flux_apply_the_cronjob_folders(tmp_path: Path) -> None:
    data = yaml.safe_load(certifying(EXAMPLE.read_text(), tmp_path))
    data["spec"]["deployers"] = ["argocd", "flux", "helm"]
    data["spec"]["certification"].update(schedule="0 3 * * 0", postChange=True)
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    tree = dict(render_tree(load_spec(path), tmp_path))
    managed = data["spec"]["repo"]["path"]
    argocd = {yaml.safe_load(tree[name])["spec"]["source"]["path"] for name in tree
              if name.startswith("argocd/extra-") and name.endswith("/application.yaml")}
    flux = {yaml.safe_load(tree[name])["spec"]["path"] for name in tree
            if name.startswith("flux/extra-") and name.endswith("/flux-kustomization.yaml")}
    wanted = {"certification/schedule", "snapshot-agent"}
    assert argocd == {f"{managed}/{folder}" for folder in [*wanted, "certification/post-change/argocd"]}
    assert flux == {f"./{managed}/{folder}" for folder in wanted}
    assert not any(name.startswith("helm/extra-") for name in tree)
    out = tmp_path / "tree"
    for name, body in tree.items():
        (out / name).parent.mkdir(parents=True, exist_ok=True)
        (out / name).write_bytes(body)
    for folder in sorted(argocd):  # what Argo CD and Flux build there: kustomize, accepted by the API schemas
        objects = kustomize_build(out / folder.removeprefix(f"{managed}/"))
        assert validate_objects(objects, folder) >= 3


def test_extra_paths_are_refused_for_helm_on_the_command_line(cli: Any, tmp_path: Path) -> None:
    recipe = tmp_path / "recipe.yaml"
    assert cli("recipe", "--service", "kind", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu",
               "--platform", "dynamo", "-o", str(recipe)).code == 0
    result = cli("bundle", "--recipe", str(recipe), "--deployer", "helm", "-o", str(tmp_path / "out"),
                 "--set", "deployer:extraPaths=clusters/x/snapshot-agent")
    assert result.code == 2 and "deployer:extraPaths applies to argocd and flux, not to helm" in result.err
    assert not (tmp_path / "out").exists()


def test_catalog_layers_are_relative_to_the_spec_for_resolving_and_rendering(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    layer = tmp_path / "cluster" / "catalog" / "components" / "gpu-operator"
    layer.mkdir(parents=True)
    base_values = (ROOT / "overlays" / "components" / "gpu-operator" / "values.yaml").read_text()
    (layer / "values.yaml").write_text(base_values + "\naicrGenLayerMarker: from-the-spec-folder\n")
    data = yaml.safe_load(EXAMPLE.read_text())
    data["spec"]["catalogs"] = [str(ROOT / "overlays"), "catalog"]
    path = tmp_path / "cluster" / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    monkeypatch.chdir(tmp_path)  # elsewhere: the layer must still be found beside the spec
    tree = render_tree(load_spec(path), path.parent)
    values = yaml.safe_load(tree["argocd/012-gpu-operator/values.yaml"])
    assert values["aicrGenLayerMarker"] == "from-the-spec-folder"


def _post_change_tree(tmp_path: Path, name: str, edit: Any) -> dict[str, bytes]:
    data = yaml.safe_load(certifying(EXAMPLE.read_text(), tmp_path))
    data["spec"]["deployers"] = ["argocd", "flux"]
    data["spec"]["certification"].update(postChange=True, schedule="0 3 * * 0")
    edit(data["spec"])
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(data))
    return dict(render_tree(load_spec(path), tmp_path))


def _synced_by_argocd(tree: dict[str, bytes]) -> tuple[dict[str, Any], dict[str, str]]:
    """What the post-change Application compares with the cluster: its folder's objects (hooks left out: Argo CD
    does not count them for sync status) and the annotations its own manifest adds to them."""
    folder = "certification/post-change/argocd/"
    objects = [yaml.safe_load(data) for path, data in tree.items()
               if path.startswith(folder) and path.endswith(".yaml") and not path.endswith("kustomization.yaml")]
    app = yaml.safe_load(tree["argocd/extra-certification-post-change-argocd/application.yaml"])
    return ({obj["kind"]: obj for obj in objects
             if "argocd.argoproj.io/hook" not in (obj["metadata"].get("annotations") or {})},
            app["spec"]["source"]["kustomize"]["commonAnnotations"])


def test_post_change_certification_changes_exactly_when_the_stack_does(tmp_path: Path) -> None:
    base = _post_change_tree(tmp_path, "base", lambda spec: None)
    recipe = yaml.safe_load(base["recipe.yaml"])
    current = next(ref["version"] for ref in recipe["componentRefs"] if ref["name"] == "gpu-operator")
    major, minor = current.lstrip("v").split(".")[:2]
    bumped = _post_change_tree(tmp_path, "bumped",
                               lambda spec: spec["versions"].update({"gpu-operator": f"v{major}.{int(minor) + 1}.0"}))
    values = _post_change_tree(tmp_path, "values", lambda spec: spec["overrides"]["set"].append(
        "gpu-operator:driver.enabled=false"))
    unrelated = _post_change_tree(tmp_path, "unrelated", lambda spec: (
        spec["snapshot"].update(schedule="*/15 * * * *"), spec["certification"].update(schedule="0 4 * * 1")))
    digest = STACK_DIGEST
    objects, annotations = _synced_by_argocd(base)
    assert annotations[digest].startswith("sha256:")
    for changed in (bumped, values):
        after_objects, after = _synced_by_argocd(changed)
        # the Application changes (the app-of-apps applies it in the wave after the stack), not the folder, so the
        # hook's Application is not out of sync before the stack's own Applications have been updated
        assert after[digest] != annotations[digest]
        assert after_objects == objects
        flux_job = yaml.safe_load(changed["certification/post-change/flux/job/job.yaml"])
        # Flux patches a Job's metadata in place; only a changed pod template (immutable) makes it recreate it
        assert flux_job["spec"]["template"]["metadata"]["annotations"][digest] == after[digest]
    # other edits leave the stack digest, and so the post-change Application, unchanged: nothing re-certifies
    assert _synced_by_argocd(unrelated) == (objects, annotations)
    assert unrelated["argocd/012-gpu-operator/application.yaml"] == base["argocd/012-gpu-operator/application.yaml"]


def _pools_tree(tmp_path: Path, deployers: list[str], edit: Any = lambda spec: None) -> dict[str, bytes]:
    """The pools example with a cluster-wide certification too, every job on, rendered for ``deployers``."""
    import copy

    from tests.gitops.test_pools import example, write

    data = copy.deepcopy(example())
    data["spec"].update(deployers=deployers, certification={"categories": ["diagnostics/dcgm-level4"],
                                                            "schedule": "0 5 * * 0", "postChange": True})
    edit(data["spec"])
    folder = tmp_path / "-".join(deployers)
    folder.mkdir(parents=True)
    return dict(render_tree(load_spec(write(folder, data)), folder))


def _template_digests(tree: dict[str, bytes]) -> dict[str, str | None]:
    """Folder -> the stack digest of the Certification template its job creates from (every job of the tree)."""
    found: dict[str, str | None] = {}
    for path, body in tree.items():
        document = yaml.safe_load(body) if path.endswith("configmap.yaml") and "certification/" in path else None
        if document and "certification.yaml" in document.get("data", {}):
            template = yaml.safe_load(document["data"]["certification.yaml"])
            assert template["kind"] == "Certification" and "generateName" in template["metadata"]
            found[path.rpartition("/")[0]] = (template["metadata"].get("annotations") or {}).get(STACK_DIGEST)
    return found


@pytest.fixture(scope="module")
def every_deployer(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    return _pools_tree(tmp_path_factory.mktemp("digest"), ["argocd", "flux", "helm", "helmfile"])


@pytest.mark.parametrize("deployers", [["argocd", "flux", "helm", "helmfile"], ["argocd"], ["flux"], ["helm"],
                                       ["helmfile"]])
def test_every_certification_a_job_creates_names_the_stack_of_its_tree(
        every_deployer: dict[str, bytes], tmp_path: Path, deployers: list[str]) -> None:
    """A rollout's ``certified`` gate matches a Certification to a tree by its stack digest: each job's template
    carries it (the cluster's and each pool's, schedule and post-change), whichever deployer applies the tree, and
    it is the digest the post-change Application of the Argo CD bundle carries."""
    tree = every_deployer if len(deployers) > 1 else _pools_tree(tmp_path, deployers)
    app = yaml.safe_load(every_deployer["argocd/extra-certification-post-change-argocd/application.yaml"])
    digest = app["spec"]["source"]["kustomize"]["commonAnnotations"][STACK_DIGEST]
    jobs = [f"{owner}certification/{job}" for owner in ("", "pools/gb200/", "pools/h100/")
            for job in ("schedule", "post-change/argocd", "post-change/flux/job")]
    assert _template_digests(tree) == dict.fromkeys(jobs, digest)
    if deployers == ["helm"]:  # a new stack, a new digest in every template
        recipe = yaml.safe_load(tree["recipe.yaml"])
        current = next(ref["version"] for ref in recipe["componentRefs"] if ref["name"] == "gpu-operator")
        major, minor = current.lstrip("v").split(".")[:2]
        bumped = _pools_tree(tmp_path / "bumped", deployers, lambda spec: spec.setdefault("versions", {}).update(
            {"gpu-operator": f"v{major}.{int(minor) + 1}.0"}))
        (after,) = set(_template_digests(bumped).values())
        assert after != digest and after is not None and after.startswith("sha256:")


def test_certification_lives_beside_nvcre() -> None:
    from aicr_gen.gitops.trees.render_tree import certification_namespace

    nvcre = {"name": "nvcre", "namespace": "gpu-certify"}
    assert certification_namespace({"componentRefs": [nvcre]}) == "gpu-certify"
    assert certification_namespace({"componentRefs": [{**nvcre, "overrides": {"enabled": False}}]}) == "nvcre-system"
    assert certification_namespace({"componentRefs": [{"name": "gpu-operator", "namespace": "x"}]}) == "nvcre-system"
