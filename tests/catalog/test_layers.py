"""--catalog layers: later layers win, by component/overlay name and by file path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.conftest import AICR_CATALOG, needs_reference

pytestmark = needs_reference
CUJ2 = ("--service", "eks", "--accelerator", "h100", "--intent", "inference", "--os", "ubuntu", "--platform", "dynamo")


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _refs(cli: Any, *layers: Path) -> dict[str, dict[str, Any]]:
    args = [item for layer in layers for item in ("--catalog", str(layer))]
    result = cli("recipe", *args, *CUJ2, "--format", "json")
    assert result.code == 0, result.err
    return {ref["name"]: ref for ref in json.loads(result.out)["componentRefs"]}


def test_a_later_layer_overrides_registry_pins_overlays_and_files(cli: Any, tmp_path: Path) -> None:
    site = tmp_path / "site"
    _write(site / "registry.yaml", """\
apiVersion: aicr.run/v1alpha2
kind: ComponentRegistry
components:
  - name: gpu-operator
    healthCheck: {assertFile: checks/gpu-operator/health-check.yaml}
    helm:
      defaultRepository: https://helm.ngc.nvidia.com/nvidia
      defaultChart: nvidia/gpu-operator
      defaultVersion: v26.3.4
      defaultNamespace: gpu-operator
""")
    _write(site / "checks/gpu-operator/health-check.yaml", "# site check\n")
    _write(site / "components/kai-scheduler/values-site.yaml", "global: {}\n")
    _write(site / "overlays/h100-eks-ubuntu-inference-dynamo.yaml", """\
kind: RecipeMetadata
apiVersion: aicr.run/v1alpha2
metadata: {name: h100-eks-ubuntu-inference-dynamo}
spec:
  base: h100-eks-ubuntu-inference
  criteria: {service: eks, accelerator: h100, os: ubuntu, intent: inference, platform: dynamo}
  componentRefs:
    - name: kai-scheduler
      valuesFile: components/kai-scheduler/values-site.yaml
""")
    upstream = _refs(cli, AICR_CATALOG)
    layered = _refs(cli, AICR_CATALOG, site)
    assert upstream["gpu-operator"]["version"] == "v26.3.3"
    assert layered["gpu-operator"]["version"] == "v26.3.4"
    assert layered["gpu-operator"]["healthCheckAsserts"] == "# site check\n"
    assert layered["kai-scheduler"]["valuesFile"] == "components/kai-scheduler/values-site.yaml"
    # The site overlay replaced the upstream leaf: no dynamo components any more.
    assert "dynamo-platform" in upstream and "dynamo-platform" not in layered
    assert layered["nfd"] == upstream["nfd"]
