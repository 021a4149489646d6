"""``gitops/review/changes.py``: what differs between two sync trees, read from the trees' own files (no Git)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.gitops.review.changes import secret_key, stack_digest, value_changes
from aicr_gen.gitops.review.compare import compare
from aicr_gen.gitops.trees.render_tree import render_tree
from aicr_gen.spec.cluster import ClusterSpec
from aicr_gen.spec.load import load_spec
from tests.conftest import ROOT
from tests.nvcre_elsewhere import certifying

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
DRIVER = "gpu-operator: driver.version 580.173.02 -> 590.48.01"
DRA = "aicr.run/gpu-operator-chart-version"


def _tree(tmp_path: Path, edit: Callable[[dict[str, Any]], object]) -> dict[str, bytes]:
    data = yaml.safe_load(certifying(EXAMPLE.read_text(), tmp_path))
    edit(data)
    spec = tmp_path / f"spec-{len(list(tmp_path.iterdir()))}.yaml"
    spec.write_text(yaml.safe_dump(data))
    cluster: ClusterSpec = load_spec(spec)
    return dict(render_tree(cluster, tmp_path))


def _deployers(*names: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["spec"]["deployers"] = list(names)
    return edit


def _bumped(*names: str) -> Callable[[dict[str, Any]], None]:
    def edit(data: dict[str, Any]) -> None:
        data["spec"]["deployers"] = list(names)
        data["spec"]["versions"] = {"gpu-operator": "v26.4.0"}
        data["spec"]["overrides"]["set"] = ["gpu-operator:driver.version=590.48.01",
                                            "gpu-operator:toolkit.env[0].name=A",
                                            "gpu-operator:driver.licensingConfig.nlsToken=hunter2"]
        data["spec"]["overrides"]["setJson"] = ["gpu-operator:validator.plugin.env=[]"]
    return edit


@pytest.mark.parametrize("deployer", ["argocd", "helm", "helmfile", "argocd-helm", "flux"])
def test_values_changed_per_component_alike_from_every_deployer(tmp_path: Path, deployer: str) -> None:
    changes = compare(_tree(tmp_path, _deployers(deployer)), _tree(tmp_path, _bumped(deployer)))
    assert [item.text for item in changes.values] == [
        "gpu-operator: + driver.licensingConfig: {\"nlsToken\": \"<redacted>\"}",
        DRIVER,
        "gpu-operator: + toolkit.env: [{\"name\": \"A\"}]",
        "gpu-operator: validator.plugin.env [{\"name\": \"WITH_WORKLOAD\", \"value\": \"false\"}] -> []",
        # the DRA driver's pods restart with the operator, as AICR's bundler annotates them
        f"nvidia-dra-driver-gpu: controller.podAnnotations[\"{DRA}\"] v26.3.3 -> v26.4.0",
        f"nvidia-dra-driver-gpu: kubeletPlugin.podAnnotations[\"{DRA}\"] v26.3.3 -> v26.4.0"]
    assert [item.redacted for item in changes.values] == [True, False, False, False, False, False]
    assert [item.text for item in changes.components] == ["bumped gpu-operator v26.3.3 -> v26.4.0"]


def test_values_compare_across_deployers_and_a_deployer_added(tmp_path: Path) -> None:
    argocd = _tree(tmp_path, _deployers("argocd"))
    assert value_changes(argocd, _tree(tmp_path, _deployers("flux"))) == []  # argocd -> flux: same values
    assert value_changes(argocd, _tree(tmp_path, _deployers("argocd", "flux"))) == []
    both = compare(_tree(tmp_path, _deployers("flux", "helm")), _tree(tmp_path, _bumped("argocd", "helm")))
    assert DRIVER in [item.text for item in both.values]  # helm, the folder both trees have


def recipe(*components: str, versions: dict[str, str] | None = None,
           constraints: dict[str, str] | None = None) -> bytes:
    """A recipe.yaml with these components (version 1.0.0 unless in ``versions``) and constraints."""
    refs = [{"name": name, "version": (versions or {}).get(name, "1.0.0")} for name in components]
    text: str = yaml.safe_dump({"componentRefs": refs, "constraints": [{"name": key, "value": value}
                                                                       for key, value in (constraints or {}).items()]})
    return text.encode()


def test_values_added_removed_changed_by_key_path_and_local_charts_unwrapped() -> None:
    old = {"recipe.yaml": recipe("op", "local"),
           "argocd/001-op/values.yaml": b"mig:\n  strategy: single\nlist: [1, 2]\nnodeSelector:\n  a.b/c: x\n",
           "argocd/002-local/Chart.yaml": b"name: local\n", "argocd/002-local/values.yaml": b"local:\n  replicas: 1\n",
           "argocd/003-local-post/values.yaml": b"local:\n  replicas: 1\n"}
    new = {**old, "argocd/001-op/values.yaml": b"toolkit:\n  enabled: true\nlist: [1, 3]\nnodeSelector:\n  a.b/c: y\n",
           "argocd/002-local/values.yaml": b"local:\n  replicas: 2\n",
           "argocd/003-local-post/values.yaml": b"local:\n  replicas: 2\n"}
    assert [item.text for item in value_changes(old, new)] == [
        "local: replicas 1 -> 2",  # nested under its name in the local chart; the -post unit is not counted again
        "op: list[1] 2 -> 3", "op: - mig (was {\"strategy\": \"single\"})",
        "op: nodeSelector[\"a.b/c\"] x -> y", "op: + toolkit: {\"enabled\": true}"]


@pytest.mark.parametrize(("key", "secret"), [
    ("password", True), ("dbPassword", True), ("apiKey", True), ("API_KEY", True), ("nlsToken", True),
    ("existingSecret", True), ("tlsCert", True), ("caCertificate", True), ("basic-auth", True),
    ("clientCredentials", True), ("privateKey", True), ("certification", False), ("monkey", False),
    ("tokenizerThreads", False), ("enabled", False), ("driver", False)])
def test_secret_looking_keys(key: str, secret: bool) -> None:
    assert secret_key(key) is secret


def test_values_under_secret_keys_are_redacted_but_switches_shown() -> None:
    old = {"recipe.yaml": recipe("app"),
           "helm/001-app/values.yaml": b"auth:\n  enabled: false\n  password: old-pass\nimage: {tag: v1}\n"}
    new = {**old, "helm/001-app/values.yaml":
           b"auth:\n  enabled: true\n  password: new-pass\n  extra: {apiKey: k-123, user: bob}\nimage: {tag: v2}\n"}
    found = value_changes(old, new)
    lines = [item.text for item in found]
    assert lines == ["app: auth.enabled false -> true", "app: + auth.extra: {\"apiKey\": \"<redacted>\", "
                     "\"user\": \"<redacted>\"}", "app: auth.password <redacted> -> <redacted>",
                     "app: image.tag v1 -> v2"]
    assert not any(secret in line for line in lines for secret in ("old-pass", "new-pass", "k-123", "bob"))
    assert [item.redacted for item in found] == [False, True, True, False]


def test_constraints_and_stack_digest(tmp_path: Path) -> None:
    old = {"recipe.yaml": recipe("a", constraints={"OS.release.VERSION_ID": "22.04", "K8s.server.version": ">= 1.33"})}
    new = {"recipe.yaml": recipe("a", constraints={"OS.release.VERSION_ID": "24.04",
                                                    "OS.sysctl./proc/sys/kernel/osrelease": ">= 6.8"})}
    assert [item.text for item in compare(old, new).constraints] == [
        "constraint K8s.server.version removed (was >= 1.33)",
        "constraint OS.release.VERSION_ID: 22.04 -> 24.04",
        "constraint OS.sysctl./proc/sys/kernel/osrelease added: >= 6.8"]

    def post_change(data: dict[str, Any]) -> None:
        data["spec"]["certification"]["postChange"] = True

    digest = stack_digest(_tree(tmp_path, post_change))
    assert digest is not None and digest.startswith("sha256:")
    assert stack_digest(_tree(tmp_path, _deployers("argocd"))) is None  # no post-change certification
