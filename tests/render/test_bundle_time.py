"""What AICR's bundler writes at bundle time (scheduling, the DRA annotation, agentgateway's source ranges, the
GKE quota, registry validations), checked rule by rule and on AICR's own catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.errors import InvalidInputError
from aicr_gen.render import bundle_time, scheduling
from aicr_gen.spec import scheduling as spec_scheduling
from aicr_gen.spec.scheduling import Scheduling
from tests.conftest import AICR_CATALOG, needs_reference

ENTRY = {"nodeScheduling": {
    "system": {"nodeSelectorPaths": ["operator.nodeSelector"], "tolerationPaths": ["operator.tolerations"]},
    "accelerated": {"nodeSelectorPaths": ["daemonsets.nodeSelector"], "tolerationPaths": ["daemonsets.tolerations"],
                    "taintStrPaths": ["manager.env.runtimeRequiredTaint"]},
    "nodeCountPaths": ["estimatedNodeCount"]},
    "podScheduling": {"workload": {"workloadSelectorPaths": ["workloadSelector"]}},
    "storageClassPaths": ["storage.storageClassName"]}
GPU = ({"key": "nvidia.com/gpu", "operator": "Equal", "value": "present", "effect": "NoSchedule"},)


def _apply(values: dict[str, Any], settings: Scheduling, overrides: dict[str, Any] | None = None,
           set_paths: frozenset[str] = frozenset()) -> dict[str, Any]:
    return scheduling.apply(values, ENTRY, overrides=overrides or {}, set_paths=set_paths, scheduling=settings)


def test_every_toleration_path_gets_the_wildcard_by_default_and_selectors_only_when_given() -> None:
    out = _apply({"operator": {"replicas": 1}}, Scheduling())
    assert out == {"operator": {"replicas": 1, "tolerations": [{"operator": "Exists"}]},
                   "daemonsets": {"tolerations": [{"operator": "Exists"}]}}


def test_given_selectors_and_tolerations_replace_what_the_values_had() -> None:
    settings = Scheduling(system_node_selector=(("role", "system"),), accelerated_node_selector=(("gpu", "h100"),),
                          accelerated_tolerations=GPU)
    out = _apply({"daemonsets": {"nodeSelector": {"old": "x"}, "tolerations": [{"key": "old"}]}}, settings)
    assert out["operator"]["nodeSelector"] == {"role": "system"}
    assert out["daemonsets"] == {"nodeSelector": {"gpu": "h100"}, "tolerations": [dict(GPU[0])]}


def test_an_overlay_that_empties_a_path_opts_out_and_one_that_fills_it_gets_the_tolerations_appended() -> None:
    values = {"operator": {"tolerations": [{"key": "mine"}]}, "daemonsets": {"tolerations": []}}
    overrides = {"operator": {"tolerations": [{"key": "mine"}]}, "daemonsets": {"tolerations": []}}
    out = _apply(values, Scheduling(), overrides)
    assert out["operator"]["tolerations"] == [{"key": "mine"}, {"operator": "Exists"}]
    assert out["daemonsets"]["tolerations"] == []


def test_a_set_path_keeps_its_tolerations_and_its_storage_class() -> None:
    values = {"daemonsets": {"tolerations": [{"key": "set"}]}, "storage": {"storageClassName": "mine"}}
    out = _apply(values, Scheduling(storage_class="gp3"),
                 set_paths=frozenset(("daemonsets.tolerations", "storage.storageClassName")))
    assert out["daemonsets"]["tolerations"] == [{"key": "set"}, {"operator": "Exists"}]
    assert out["storage"]["storageClassName"] == "mine"
    assert _apply({}, Scheduling(storage_class="gp3"))["storage"]["storageClassName"] == "gp3"


def test_taint_node_count_and_workload_selector_go_where_the_registry_says() -> None:
    settings = Scheduling(workload_gate=spec_scheduling.parse_taint("--workload-gate", "gate.io/wait=true:NoSchedule"),
                          nodes=64, workload_selector=(("job", "training"),))
    out = _apply({"manager": {"env": "not a map"}}, settings)
    assert "runtimeRequiredTaint" not in str(out["manager"])  # a non-map on the way: left alone, as AICR does
    assert out["estimatedNodeCount"] == 64 and out["workloadSelector"] == {"job": "training"}
    assert _apply({}, settings)["manager"]["env"]["runtimeRequiredTaint"] == "gate.io/wait=true:NoSchedule"


@pytest.mark.parametrize(("items", "expected"), [
    ([], [{"operator": "Exists"}]),
    (["*"], [{"operator": "Exists"}]),
    (["nvidia.com/gpu=present:NoSchedule"], [dict(GPU[0])]),
    (["nvidia.com/gpu:NoExecute"], [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoExecute"}]),
    ([":NoSchedule"], [{"operator": "Exists", "effect": "NoSchedule"}]),
])
def test_tolerations_parse_as_aicr_parses_them(items: list[str], expected: list[dict[str, str]]) -> None:
    parsed = spec_scheduling.parse_tolerations("--accelerated-node-toleration", items)
    assert [dict(item) for item in parsed] == expected


@pytest.mark.parametrize(("flag", "text", "says"), [
    ("--accelerated-node-toleration", "gpu=yes", "expected key=value:effect or key:effect"),
    ("--accelerated-node-toleration", "gpu=yes:Sometimes", "'Sometimes' is not one of NoSchedule"),
    ("--accelerated-node-toleration", "a:b:NoSchedule", "expected key=value:effect"),
    ("--workload-gate", "=x:NoSchedule", "the taint needs a key"),
    ("--system-node-selector", "novalue", "expected key=value"),
])
def test_bad_scheduling_flags_are_refused(flag: str, text: str, says: str) -> None:
    with pytest.raises(InvalidInputError, match=says):
        if flag.endswith("toleration"):
            spec_scheduling.parse_tolerations(flag, [text])
        elif flag == "--workload-gate":
            spec_scheduling.parse_taint(flag, text)
        else:
            spec_scheduling.parse_selector(flag, [text])


def test_the_dra_driver_pods_carry_the_operator_chart_version() -> None:
    values: dict[str, dict[str, Any]] = {"nvidia-dra-driver-gpu": {"controller": {"podAnnotations": {"a": "b"}}}}
    refs = [{"name": "gpu-operator", "version": "v26.3.3"}, {"name": "nvidia-dra-driver-gpu"}]
    bundle_time.dra_annotation(values, refs)
    dra = values["nvidia-dra-driver-gpu"]
    assert dra["controller"]["podAnnotations"] == {"a": "b", bundle_time.DRA_ANNOTATION: "v26.3.3"}
    assert dra["kubeletPlugin"]["podAnnotations"] == {bundle_time.DRA_ANNOTATION: "v26.3.3"}
    alone: dict[str, dict[str, Any]] = {"nvidia-dra-driver-gpu": {}}
    bundle_time.dra_annotation(alone, refs[1:])
    assert alone == {"nvidia-dra-driver-gpu": {}}


@pytest.mark.parametrize(("ranges", "kept", "warned"), [
    (None, list(bundle_time.PRIVATE_RANGES), "scoped to the private ranges"),
    ([], list(bundle_time.PRIVATE_RANGES), "scoped to the private ranges"),
    (["203.0.113.0/24"], ["203.0.113.0/24"], None),
    (["10.0.0.0/8", "0.0.0.0/0"], ["10.0.0.0/8", "0.0.0.0/0"], "whole internet"),
    (["::/0"], ["::/0"], "whole internet"),
])
def test_agentgateway_is_private_unless_opened(ranges: Any, kept: list[str], warned: str | None) -> None:
    values: dict[str, dict[str, Any]] = {"agentgateway": {} if ranges is None else {"allowedSourceRanges": ranges}}
    warnings = bundle_time.agentgateway_exposure(values)
    assert values["agentgateway"]["allowedSourceRanges"] == kept
    assert (warned in warnings[0]) if warned else warnings == []


@pytest.mark.parametrize("ranges", ["10.0.0.0/8", ["10.0.0.1/8"], ["::ffff:10.0.0.0/104"], [8], ["nope"]])
def test_agentgateway_source_ranges_that_are_not_cidrs_are_refused(ranges: Any) -> None:
    with pytest.raises(InvalidInputError, match="allowedSourceRanges must be a list of CIDR strings"):
        bundle_time.agentgateway_exposure({"agentgateway": {"allowedSourceRanges": ranges}})


@pytest.mark.parametrize(("nodes", "pods"), [(0, "32"), (1, "32"), (4, "128")])
def test_the_gke_quota_scales_with_the_nodes(nodes: int, pods: str) -> None:
    quota = yaml.safe_load(bundle_time.gke_quota("gpu-operator", nodes))
    assert quota["metadata"] == {"name": "aicr-gke-critical-pods", "namespace": "gpu-operator"}
    assert quota["spec"]["hard"] == {"pods": pods}
    assert quota["spec"]["scopeSelector"]["matchExpressions"][0]["values"] == [
        "system-node-critical", "system-cluster-critical"]


# ------------------------------------------------------------------ on AICR's catalog, through the CLI


def _recipe(cli: Any, tmp_path: Path, *criteria: str) -> Path:
    out = tmp_path / "recipe.yaml"
    result = cli("recipe", "--catalog", str(AICR_CATALOG), *criteria, "-o", str(out))
    assert result.code == 0, result.err
    return out


def _bundle(cli: Any, recipe: Path, out: Path, *args: str) -> Any:
    return cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", "helm",
               "-o", str(out), *args)


def _values(out: Path, component: str) -> dict[str, Any]:
    (path,) = out.glob(f"*-{component}/values.yaml")
    values: dict[str, Any] = yaml.safe_load(path.read_text())
    return values


AKS = ("--service", "aks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu",
       "--platform", "kubeflow")


@needs_reference
def test_aks_with_nodewright_needs_keyed_gpu_tolerations(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, *AKS)
    refused = _bundle(cli, recipe, tmp_path / "a")
    assert refused.code == 2
    assert "nodewright-customizations renders a wildcard (keyless) accelerated-node toleration" in refused.err
    assert not (tmp_path / "a").exists()
    keyed = _bundle(cli, recipe, tmp_path / "b", "--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule",
                    "--accelerated-node-selector", "agentpool=gpu", "--workload-selector", "kind=training")
    assert keyed.code == 0, keyed.err
    assert "info:" not in keyed.err
    gpu = _values(tmp_path / "b", "gpu-operator")
    assert gpu["daemonsets"]["tolerations"] == [{"key": "nvidia.com/gpu", "operator": "Exists",
                                                 "effect": "NoSchedule"}]
    assert gpu["operator"]["tolerations"] == [{"operator": "Exists"}]  # system pods: the default wildcard
    dropped = _bundle(cli, recipe, tmp_path / "c", "--set", "nodewright-customizations:enabled=false")
    assert dropped.code == 0, dropped.err


@needs_reference
def test_gke_gets_the_critical_pods_quota_before_the_gpu_operator(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "gke", "--accelerator", "h100", "--intent", "training",
                     "--os", "cos", "--nodes", "8")
    assert _bundle(cli, recipe, tmp_path / "b").code == 0
    (quota,) = (tmp_path / "b").glob("*-gpu-operator-pre/templates/gke-critical-pods-quota.yaml")
    assert yaml.safe_load(quota.read_text())["spec"]["hard"] == {"pods": "256"}
    order = sorted(path.name for path in (tmp_path / "b").iterdir() if path.is_dir())
    assert [name.split("-", 1)[1] for name in order].index("gpu-operator-pre") + 1 == \
        [name.split("-", 1)[1] for name in order].index("gpu-operator")


@needs_reference
def test_set_then_scheduling_then_set_json_as_aicr_orders_them(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    tolerations = tmp_path / "tolerations.yaml"
    tolerations.write_text("- key: from-file\n  operator: Exists\n")
    result = _bundle(cli, recipe, tmp_path / "b", "--set", "gpuoperator:daemonsets.tolerations=x",
                     "--set-file", f"gpu-operator:operator.tolerations={tolerations}",
                     "--set-json", 'gpu-operator:driver={"rdma": null, "version": "580.105.08"}',
                     "--nodes", "16", "--workload-gate", "skyhook.nvidia.com=runtime-required:NoSchedule")
    assert result.code == 0, result.err
    gpu = _values(tmp_path / "b", "gpu-operator")
    # a --set path is appended to, but a string is no list to append to: AICR replaces it
    assert gpu["daemonsets"]["tolerations"] == [{"operator": "Exists"}]
    assert gpu["operator"]["tolerations"] == [{"key": "from-file", "operator": "Exists"}]
    assert gpu["driver"]["version"] == "580.105.08" and "rdma" not in gpu["driver"]
    nodewright = _values(tmp_path / "b", "nodewright-operator")
    assert nodewright["estimatedNodeCount"] == 16
    assert nodewright["controllerManager"]["manager"]["env"]["runtimeRequiredTaint"] == \
        "skyhook.nvidia.com=runtime-required:NoSchedule"


@needs_reference
@pytest.mark.parametrize(("args", "says"), [
    (("--set-json", "gpu-operator:enabled=false"), "switches the component on or off"),
    (("--set-file", "gpu-operator:driver=missing.yaml"), "missing.yaml"),
    (("--set", "gpu-operator:driver.version.x=1"), "goes through a str, not a map"),
    (("--nodes", "-1"), "--nodes -1"),
    (("--set-json", 'agentgateway:allowedSourceRanges="10.0.0.0/8"'), "not in the recipe"),
])
def test_bad_bundle_time_input_is_refused(cli: Any, tmp_path: Path, args: tuple[str, ...], says: str) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    result = _bundle(cli, recipe, tmp_path / "b", *args)
    assert result.code == 2 and says in result.err, result.err


def test_spec_scheduling_reaches_every_deployer_of_a_synced_tree(tmp_path: Path) -> None:
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    from tests.conftest import ROOT

    text = (ROOT / "examples" / "eks-h100-inference-dynamo.yaml").read_text()
    text = text.replace("  catalogs: []", "  catalogs: []\n  scheduling:\n    acceleratedNodeSelector: {gpu: h100}\n"
                                          "    acceleratedNodeTolerations: ['nvidia.com/gpu=present:NoSchedule']", 1)
    text = text.replace("    - argocd\n", "    - argocd\n    - helm\n", 1)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    tree = render_tree(load_spec(spec), tmp_path)
    for deployer in ("argocd", "helm"):
        (path,) = [name for name in tree
                   if name.startswith(f"{deployer}/") and name.endswith("-gpu-operator/values.yaml")]
        values = yaml.safe_load(tree[path])
        assert values["daemonsets"]["nodeSelector"] == {"gpu": "h100"}, deployer
        assert values["daemonsets"]["tolerations"] == [dict(GPU[0])], deployer


@needs_reference
def test_serial_chains_every_component_after_the_one_before(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    for serial in ((), ("--serial",)):
        out = tmp_path / f"flux{len(serial)}"
        result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", "flux",
                     "--repo", "https://example.com/r.git", "-o", str(out), *serial)
        assert result.code == 0, result.err
        releases = [yaml.safe_load(path.read_text()) for path in sorted(out.glob("*/helmrelease.yaml"))]
        after = {release["metadata"]["name"]: [dep["name"] for dep in release["spec"].get("dependsOn", [])]
                 for release in releases}
        names = [release["metadata"]["name"] for release in releases]
        chained = all(after[name] == [names[index - 1]] for index, name in enumerate(names) if index)
        assert chained == bool(serial), after


CONFIG = """kind: AICRConfig
apiVersion: aicr.run/v1alpha2
metadata: {name: gpu}
spec:
  recipe:
    criteria: {service: eks}
  bundle:
    input: {recipe: RECIPE}
    output: {target: OUT}
    deployment:
      deployer: flux
      repo: https://example.com/gitops.git
      set: ["gpuoperator:driver.version=580.105.08"]
    scheduling:
      acceleratedNodeSelector: {nodeGroup: gpu}
      acceleratedNodeTolerations: ["nvidia.com/gpu=present:NoSchedule"]
"""


@needs_reference
def test_an_aicr_config_file_gives_the_flags_and_a_flag_replaces_its_value(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    config = tmp_path / "aicr-config.yaml"
    config.write_text(CONFIG.replace("RECIPE", str(recipe)).replace("OUT", str(tmp_path / "flux")))
    result = cli("bundle", "--config", str(config), "--catalog", str(AICR_CATALOG))
    assert result.code == 0, result.err
    (release,) = (tmp_path / "flux").glob("*-gpu-operator/helmrelease.yaml")
    values = yaml.safe_load(release.read_text())["spec"]["values"]
    assert values["driver"]["version"] == "580.105.08"
    assert values["daemonsets"]["nodeSelector"] == {"nodeGroup": "gpu"}
    result = cli("bundle", "--config", str(config), "--catalog", str(AICR_CATALOG), "--deployer", "helm",
                 "-o", str(tmp_path / "helm"), "--accelerated-node-selector", "pool=a100",
                 "--set", "gpuoperator:driver.version=590.48.01")
    assert result.code == 0, result.err
    values = _values(tmp_path / "helm", "gpu-operator")
    assert values["driver"]["version"] == "590.48.01"
    assert values["daemonsets"]["nodeSelector"] == {"pool": "a100"}
    assert values["daemonsets"]["tolerations"][0]["key"] == "nvidia.com/gpu"  # not given: the file's


@pytest.mark.parametrize(("edit", "says"), [
    (("kind: AICRConfig", "kind: Config"), ":1: kind"),
    (("deployer: flux", "deployr: flux"), "spec.bundle.deployment.deployr"),
    (("nvidia.com/gpu=present:NoSchedule", "nvidia.com/gpu"),
     ":16: spec.bundle.scheduling.acceleratedNodeTolerations[0]"),
    (("output: {target: OUT}", "output: {target: OUT}\n    registry: {plainHTTP: 'yes'}"),
     ":10: spec.bundle.registry.plainHTTP"),
])
def test_a_bad_aicr_config_is_refused_at_its_line(cli: Any, tmp_path: Path, edit: tuple[str, str],
                                                  says: str) -> None:
    config = tmp_path / "aicr-config.yaml"
    config.write_text(CONFIG.replace(*edit))
    result = cli("bundle", "--config", str(config))
    assert result.code == 2 and says in result.err, result.err
    assert str(config) in result.err


@needs_reference
def test_dynamic_paths_leave_the_baked_values_for_install_time(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    dynamic = ("--dynamic", "gpuoperator:driver.version", "--dynamic", "gpu-operator:daemonsets.tolerations",
               "--dynamic", "gpu-operator:cluster.name")

    def bundle(deployer: str) -> Path:
        out = tmp_path / deployer
        result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", deployer,
                     "--repo", "https://example.com/r.git", "-o", str(out), *dynamic)
        assert result.code == 0, result.err
        return out

    flux = bundle("flux")
    (release_file,) = flux.glob("*-gpu-operator/helmrelease.yaml")
    release = yaml.safe_load(release_file.read_text())
    assert release["spec"]["valuesFrom"] == [{"kind": "ConfigMap", "name": "gpu-operator-values"}]
    assert "version" not in release["spec"]["values"]["driver"]
    assert "daemonsets" not in release["spec"]["values"]  # the wildcard toleration is left to install time
    configmap = yaml.safe_load((release_file.parent / "values-configmap.yaml").read_text())
    install_time = yaml.safe_load(configmap["data"]["values.yaml"])
    assert install_time["cluster"] == {"name": ""}
    assert install_time["driver"]["version"] and install_time["daemonsets"] == {"tolerations": ""}
    assert "values-configmap.yaml" in (release_file.parent.parent / "kustomization.yaml").read_text()
    chart = bundle("argocd-helm")
    defaults = yaml.safe_load((chart / "values.yaml").read_text())["gpuoperator"]
    assert defaults["driver"] == install_time["driver"] and defaults["cluster"] == {"name": ""}
    refused = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", "argocd",
                  "--repo", "https://example.com/r.git", "-o", str(tmp_path / "argocd"), *dynamic)
    assert refused.code == 2 and "use --deployer argocd-helm" in refused.err
    for bad, says in (("nope:x", "not deployed by this recipe"), ("gpu-operator", "use COMPONENT:PATH")):
        result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "-o", str(tmp_path / "x"),
                     "--deployer", "argocd-helm", "--dynamic", bad)
        assert result.code == 2 and says in result.err, result.err


# ------------------------------------------------------------------ manifests rendered while bundling


@needs_reference
@pytest.mark.parametrize("deployer", ["helm", "argocd", "argocd-helm", "flux", "helmfile"])
def test_sync_phase_hooks_are_stripped_so_argo_cd_applies_the_objects(cli: Any, tmp_path: Path,
                                                                       deployer: str) -> None:
    """Manifests are rendered while bundling and lose their sync-phase hooks, except under Flux: its local
    charts keep the catalog's templates for helm-controller, which runs Helm's hooks (AICR does the same)."""
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    assert "helm.sh/hook" in (AICR_CATALOG / "components" / "kubeflow-trainer" / "manifests" /
                              "torch-distributed-cluster-training-runtime.yaml").read_text()
    out = tmp_path / deployer
    result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", deployer,
                 "--repo", "https://example.com/r.git", "-o", str(out))
    assert result.code == 0, result.err
    texts = {path: path.read_text() for path in out.rglob("*.yaml")}
    (runtime,) = [path for path in texts if path.name == "torch-distributed-cluster-training-runtime.yaml"]
    if deployer == "flux":
        assert texts[runtime] == (AICR_CATALOG / "components" / "kubeflow-trainer" / "manifests" /
                                  runtime.name).read_text()
        return
    assert not [path for path, text in texts.items() if "helm.sh/hook" in text]
    document = yaml.safe_load(texts[runtime])
    assert document["kind"] == "ClusterTrainingRuntime" and document["metadata"]["name"] == "torch-distributed"


@needs_reference
def test_a_template_reading_a_missing_value_fails_while_bundling(cli: Any, tmp_path: Path) -> None:
    """AICR writes `name: <no value>` into ocp's prometheus-adapter ClusterRoleBinding; aicr-gen refuses it,
    naming the catalog file, its line and the component, and a --set mends it."""
    recipe = _recipe(cli, tmp_path, "--service", "ocp", "--intent", "training")
    refused = _bundle(cli, recipe, tmp_path / "a")
    assert refused.code == 2
    assert "component 'prometheus-adapter-ocp': components/prometheus-adapter-ocp/manifests/rbac.yaml:36: " \
           "{{ $v.serviceAccount.name }} reads a value that is not set" in refused.err
    assert not (tmp_path / "a").exists()
    mended = _bundle(cli, recipe, tmp_path / "b", "--set", "prometheus-adapter-ocp:serviceAccount.name=adapter")
    assert mended.code == 0, mended.err
    (rbac,) = (tmp_path / "b").glob("*-prometheus-adapter-ocp*/templates/rbac.yaml")
    subjects = [doc["subjects"] for doc in yaml.safe_load_all(rbac.read_text()) if doc and "subjects" in doc]
    assert {"adapter"} <= {subject["name"] for found in subjects for subject in found}


def test_a_template_that_does_not_parse_names_its_file_line_and_component(cli: Any, tmp_path: Path) -> None:
    from tests.bundles import SMALL_CATALOG, write_recipe

    rel = "components/web/manifests/greeting.yaml"
    broken = {rel: SMALL_CATALOG[rel] + "  extra: {{ .Values.web.greeting | nosuchfunc }}\n"}
    recipe = write_recipe(cli, "small", tmp_path, broken)
    result = recipe.run_bundle(cli, "helm", tmp_path / "b")
    assert result.code == 2
    assert f'component \'web\': {rel}:8: function "nosuchfunc" not defined' in result.err, result.err


# ------------------------------------------------------------------ readiness gates


def _helm_objects(chart: Path, namespace: str) -> dict[tuple[str, str], Any]:
    from tests.consumers import helm_template

    return {(obj["kind"], obj["metadata"]["name"]): obj
            for obj in helm_template(chart, "helm4", namespace=namespace)}


@needs_reference
@pytest.mark.parametrize("deployer", ["argocd", "argocd-helm"])
def test_readiness_gates_deploy_what_aicrs_deploy(cli: Any, tmp_path: Path, deployer: str, aicr: Path) -> None:
    import subprocess

    binary = str(aicr)
    recipe = tmp_path / "recipe.yaml"
    subprocess.run([binary, "recipe", "--service", "eks", "--accelerator", "h100", "--intent", "training",
                    "--os", "ubuntu", "--platform", "kubeflow", "-o", str(recipe)], check=True, capture_output=True)
    theirs, ours = tmp_path / "aicr", tmp_path / "ours"
    subprocess.run([binary, "bundle", "-r", str(recipe), "-d", deployer, "--repo", "https://example.com/r.git",
                    "-o", str(theirs), "--readiness-hooks"], check=True, capture_output=True)
    result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", deployer,
                 "--repo", "https://example.com/r.git", "-o", str(ours), "--readiness-hooks")
    assert result.code == 0, result.err
    (their_gate,) = theirs.glob("*-gpu-operator-readiness")
    (our_gate,) = ours.glob("*-gpu-operator-readiness")
    assert their_gate.name == our_gate.name  # the same place in the install order
    assert _helm_objects(our_gate, "gpu-operator") == _helm_objects(their_gate, "gpu-operator")
    if deployer == "argocd":
        waves = [yaml.safe_load((gate / "application.yaml").read_text())["metadata"]["annotations"]
                 for gate in (their_gate, our_gate)]
        assert waves[0] == waves[1]


@needs_reference
def test_readiness_gates_need_a_deployer_that_waits_and_a_chainsaw_test(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    for deployer in ("flux", "helmfile"):
        result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", deployer,
                     "--repo", "https://example.com/r.git", "-o", str(tmp_path / deployer), "--readiness-hooks")
        assert result.code == 2 and f"the {deployer} deployer has no readiness gates" in result.err
    layer = tmp_path / "layer"
    (layer / "components" / "gpu-operator").mkdir(parents=True)
    (layer / "registry.yaml").write_text((AICR_CATALOG / "registry.yaml").read_text())
    (layer / "components" / "gpu-operator" / "readiness.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n")
    result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--catalog", str(layer),
                 "-o", str(tmp_path / "helm"), "--readiness-hooks", "--readiness-image", "registry.local/gate:1")
    assert result.code == 2
    assert "components/gpu-operator/readiness.yaml: a readiness gate is a Chainsaw Test" in result.err
    result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "-o", str(tmp_path / "x"),
                 "--readiness-image", "registry.local/gate:1")
    assert result.code == 2 and "--readiness-image needs --readiness-hooks" in result.err


@needs_reference
def test_helm_and_helmfile_take_install_time_values_and_wait_for_gates(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    for deployer in ("helm", "helmfile"):
        out = tmp_path / deployer
        extra = ("--readiness-hooks",) if deployer == "helm" else ()
        result = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "--deployer", deployer,
                     "-o", str(out), "--dynamic", "gpu-operator:driver.version", *extra)
        assert result.code == 0, result.err
        (folder,) = out.glob("*-gpu-operator")
        install_time = yaml.safe_load((folder / "cluster-values.yaml").read_text())
        assert install_time["driver"]["version"] and "version" not in _values(out, "gpu-operator")["driver"]
        if deployer == "helm":
            assert '--values "$here/values.yaml" --values "$here/cluster-values.yaml"' in \
                (folder / "install.sh").read_text()
            (gate,) = out.glob("*-gpu-operator-readiness")
            assert "wait_args=(--wait --wait-for-jobs --timeout 95m)" in (gate / "install.sh").read_text()
            assert f"install_unit {gate.name} gpu-operator async" in (out / "deploy.sh").read_text()
        else:
            (level,) = [yaml.safe_load(path.read_text()) for path in out.glob("level-*.yaml")
                        if folder.name in path.read_text()]
            (release,) = [item for item in level["releases"] if item["name"] == "gpu-operator"]
            assert release["values"] == [f"./{folder.name}/values.yaml", f"./{folder.name}/cluster-values.yaml"]


PROFILE_CASES = [
    ((), 0),
    (("--set", "gpuoperator:driver.enabled=true"), 2),
    (("--dynamic", "gpu-operator:toolkit.enabled"), 2),
    (("--dynamic", "gpu-operator:operator"), 2),
    (("--set", "nvsentinel:enabled=false"), 2),
    (("--set-json", 'gpu-operator:operator={"runtimeClass": "x"}'), 2),
    (("--set", "gpuoperator:driver.version=1.2.3"), 0),
]


GKE_PROFILE_CASES = [
    (("--set", "nvsentinel:labeler.assumeDriverInstalled=1"), 2),  # 1 is not true
    (("--set", "gpu-operator:devicePlugin.enabled=0"), 2),
    (("--set", "nvidia-dra-driver-gpu:resources.gpus.enabled=true"), 2),  # the external advertiser's closure
    (("--set", "nvidia-dra-driver-gpu:enabled=false"), 2),
    (("--dynamic", "gpu-operator:devicePlugin.enabled"), 2),  # an allocation-policy value, never install-time
    (("--set", "gpu-operator:driver.version=1.2.3"), 0),
]


@needs_reference
@pytest.mark.parametrize(("criteria", "cases"), [
    (("--service", "aks", "--accelerator", "h100", "--intent", "training", "--os", "ubuntu", "--platform",
      "kubeflow"), PROFILE_CASES),
    (("--service", "gke", "--accelerator", "a100", "--intent", "training", "--os", "cos", "--platform",
      "kubeflow"), GKE_PROFILE_CASES),
], ids=["aks-azure-managed", "gke-default"])
def test_a_profile_owns_its_values_as_aicr_holds_them(cli: Any, tmp_path: Path, aicr: Path,
                                                      criteria: tuple[str, ...], cases: Any) -> None:
    """A profile-bearing recipe owns values a bundle may not change, drop or leave to install time (and, with an
    external GPU advertiser, every allocation-policy value): the AICR binary and aicr-gen refuse and accept
    alike."""
    import subprocess

    recipe = tmp_path / "recipe.yaml"
    subprocess.run([str(aicr), "recipe", *criteria, "-o", str(recipe)], check=True, capture_output=True)
    keyed = ("--accelerated-node-toleration", "nvidia.com/gpu:NoSchedule")
    for number, (args, code) in enumerate(cases):
        theirs = subprocess.run([str(aicr), "bundle", "-r", str(recipe), "-o", str(tmp_path / f"a{number}"), *keyed,
                                 *args], capture_output=True, text=True, check=False)
        ours = cli("bundle", "--recipe", str(recipe), "--catalog", str(AICR_CATALOG), "-o",
                   str(tmp_path / f"o{number}"), *keyed, *args)
        assert (theirs.returncode, ours.code) == (code, code), (args, theirs.stderr[-300:], ours.err)
        if code:
            assert "gpuStack=" in ours.err or "GPU" in ours.err, ours.err


@needs_reference
def test_the_name_beats_its_alias_and_a_shared_storage_class_must_land(cli: Any, tmp_path: Path) -> None:
    recipe = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "h100", "--intent", "training",
                     "--os", "ubuntu", "--platform", "kubeflow")
    result = _bundle(cli, recipe, tmp_path / "b", "--set", "gpu-operator:driver.version=AAA",
                     "--set", "gpuoperator:driver.version=BBB")
    assert result.code == 0 and _values(tmp_path / "b", "gpu-operator")["driver"]["version"] == "AAA"
    slurm = _recipe(cli, tmp_path, "--service", "eks", "--accelerator", "gb200", "--intent", "training",
                    "--os", "ubuntu", "--platform", "slurm")
    refused = _bundle(cli, slurm, tmp_path / "s", "--shared-storage-class", "rwx",
                      "--set", "slinky-slurm:storage.home=x")
    assert refused.code == 2 and "--shared-storage-class: storage.home.storageClassName" in refused.err, refused.err


def test_spec_overrides_dynamic_leaves_values_to_install_time_in_a_synced_tree(tmp_path: Path) -> None:
    """``spec.overrides.dynamic`` is ``bundle --dynamic`` for a ClusterSpec: helm's cluster-values.yaml holds the
    path, the baked values no longer do; argocd, which has no install-time values, is refused naming the field."""
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    from tests.conftest import ROOT

    text = (ROOT / "examples" / "eks-h100-inference-dynamo.yaml").read_text()
    text = text.replace("    - argocd\n", "    - helm\n", 1)
    text = text.replace("    setJson: []", "    setJson: []\n    dynamic: ['gpu-operator:driver.version']", 1)
    spec = tmp_path / "spec.yaml"
    spec.write_text(text)
    tree = render_tree(load_spec(spec), tmp_path)
    (values,) = [name for name in tree if name.startswith("helm/") and name.endswith("-gpu-operator/values.yaml")]
    dynamic = yaml.safe_load(tree[values.replace("/values.yaml", "/cluster-values.yaml")])
    assert "version" in dynamic["driver"] and "version" not in (yaml.safe_load(tree[values]).get("driver") or {})
    spec.write_text(text.replace("    - helm\n", "    - argocd\n", 1))
    with pytest.raises(InvalidInputError, match=r"spec\.overrides\.dynamic: the argocd deployer"):
        render_tree(load_spec(spec), tmp_path)
    spec.write_text(text.replace("gpu-operator:driver.version", "gpu-operator driver"))
    with pytest.raises(InvalidInputError, match=r"spec.overrides.dynamic\[0\]"):
        load_spec(spec)
