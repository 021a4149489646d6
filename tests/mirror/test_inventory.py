"""Air-gapped sites: image references read as the runtime reads them, the mirror list of a rendered tree
(complete against a walk of the tree), Hauler and Zarf manifests, and spec.mirror rewriting the tree so it
references only the mirror."""

from __future__ import annotations

import json
import re
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from aicr_gen.bundle import parse_checksums
from aicr_gen.cli.main import main
from aicr_gen.errors import InvalidInputError
from aicr_gen.gitops.trees.render_tree import render_tree
from aicr_gen.mirror import manifests
from aicr_gen.mirror.fields import value_images
from aicr_gen.mirror.inventory import for_tree
from aicr_gen.spec.load import load_spec
from aicr_gen.text.image_reference import familiar, mirrored, parse_image
from tests.conftest import ROOT
from tests.nvcre_elsewhere import certifying

EXAMPLE = ROOT / "examples" / "eks-h100-inference-dynamo.yaml"
SITE = {"charts": "oci://registry.site.example:5000/charts", "images": "registry.site.example:5000/mirror"}
OVERRIDES = ["gpu-operator:driver.repository=nvcr.io/nvidia", "gpu-operator:driver.image=driver",
             "kube-prometheus-stack:grafana.image.registry=docker.io",
             "kube-prometheus-stack:grafana.image.repository=grafana/grafana",
             "kube-prometheus-stack:grafana.image.tag=11.2.0",
             "nvsentinel:global.initContainerImage=busybox:1.36"]


@pytest.mark.parametrize(("text", "expected", "short"), [
    ("nginx", "docker.io/library/nginx", "nginx"),
    ("nginx:1.27", "docker.io/library/nginx:1.27", "nginx:1.27"),
    ("nvidia/cuda:12.8.0-base", "docker.io/nvidia/cuda:12.8.0-base", "nvidia/cuda:12.8.0-base"),
    ("docker.io/nginx", "docker.io/library/nginx", "nginx"),
    ("index.docker.io/library/nginx", "docker.io/library/nginx", "nginx"),
    ("localhost/app", "localhost/app", "localhost/app"),
    ("localhost:5000/team/app:v1", "localhost:5000/team/app:v1", "localhost:5000/team/app:v1"),
    ("nvcr.io/nvidia/gpu-operator:v26.3.3", "nvcr.io/nvidia/gpu-operator:v26.3.3",
     "nvcr.io/nvidia/gpu-operator:v26.3.3"),
    ("Registry/app", "Registry/app", "Registry/app"),  # an upper-case first component is a host
    ("10.0.0.1:5000/app@sha256:" + "a" * 64, "10.0.0.1:5000/app@sha256:" + "a" * 64,
     "10.0.0.1:5000/app@sha256:" + "a" * 64),
    ("ghcr.io/a/b:v1@sha256:" + "b" * 64, "ghcr.io/a/b:v1@sha256:" + "b" * 64, "ghcr.io/a/b:v1@sha256:" + "b" * 64),
    ("a__b/c-d.e_f", "docker.io/a__b/c-d.e_f", "a__b/c-d.e_f"),
])
def test_image_references_are_normalised_like_the_runtime(text: str, expected: str, short: str) -> None:
    ref = parse_image(text)
    assert str(ref) == expected
    assert familiar(ref) == short


@pytest.mark.parametrize("text", ["", " nginx", "Nginx", "nvcr.io/NVIDIA/cuda", "nginx:", "nginx:-x",
                                  "a/b@sha256:12", "a:b:c", "ghcr.io/a//b", "a" * 64, "ghcr.io/a_-b", "host:port/x",
                                  "x@md5:" + "c" * 31])
def test_references_the_runtime_refuses_are_refused(text: str) -> None:
    with pytest.raises(InvalidInputError):
        parse_image(text)


def test_a_mirror_keeps_the_repository_path() -> None:
    assert str(mirrored(parse_image("nvcr.io/nvidia/driver:580"), "mirror.example/site")) == \
        "mirror.example/site/nvidia/driver:580"
    assert str(mirrored(parse_image("busybox"), "mirror.example:5000")) == "mirror.example:5000/library/busybox"
    already = parse_image("mirror.example/site/nvidia/driver:580")
    assert mirrored(already, "mirror.example/site") == already


def test_values_image_shapes() -> None:
    values = {"a": {"image": "nvcr.io/x/y:1"}, "b": {"image": {"repository": "quay.io/p/q", "tag": "2"}},
              "c": {"image": {"registry": "docker.io", "repository": "bitnami/redis", "tag": "7"}},
              "driver": {"repository": "nvcr.io/nvidia", "image": "driver", "version": "580"},
              "d": {"image": "driver"}, "e": {"repository": "https://charts.example"}, "f": {"kubectlImage": "k:1"}}
    found = {str(field.ref): field.shape for field in value_images(values)}
    assert found == {"nvcr.io/x/y:1": "string", "quay.io/p/q:2": "repository",
                     "docker.io/bitnami/redis:7": "registry", "nvcr.io/nvidia/driver:580": "repository+image",
                     "docker.io/library/k:1": "string"}


def _spec(tmp_path: Path, *, mirror: dict[str, str] | None = None, deployers: list[str] | None = None) -> Path:
    data = yaml.safe_load(certifying(EXAMPLE.read_text(), tmp_path))
    data["spec"]["deployers"] = deployers or ["argocd", "argocd-helm", "flux", "helm", "helmfile"]
    data["spec"]["overrides"]["set"] = OVERRIDES
    data["spec"]["certification"].update(schedule="0 3 * * 0", postChange=True)
    data["spec"]["certification"]["categories"].append("diagnostics/dcgm-level4")
    if mirror is not None:  # a site also names the workload image, which the mirror then moves
        data["spec"]["certification"]["options"] = {"image": "nvcr.io/nvidia/pytorch:26.01-py3"}
        data["spec"]["mirror"] = mirror
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


_TAGGED = re.compile(r"(?<![\w./:-])([a-z0-9-]+(?:\.[a-z0-9-]+)+(?::\d+)?/[a-z0-9._/-]+"
                     r"(?::[\w][\w.-]*(?:@sha256:[0-9a-f]{64})?|@sha256:[0-9a-f]{64}))")
_URL = re.compile(r"(?<![\w./:-])((?:oci|https)://[^\s\"'$]+)")
GIT_REPO = "https://github.com/example/gitops.git"


def tree_references(tree: dict[str, bytes]) -> tuple[set[str], set[str]]:
    """An independent walk of the files the cluster's tools read (recipes and READMEs are for people): every
    registry-qualified reference with a tag or digest in their text (embedded manifests included), and every
    oci:// or https:// URL but the Git repository's."""
    images: set[str] = set()
    urls: set[str] = set()
    for path, data in tree.items():
        name = path.rsplit("/", 1)[-1]
        if name in ("recipe.yaml", "README.md", "checksums.txt") or not name.endswith((".yaml", ".yml", ".sh")):
            continue
        text = data.decode()
        images.update(match.group(1) for match in _TAGGED.finditer(text))
        urls.update(match.group(1).rstrip(",") for match in _URL.finditer(text))
    return images, urls - {GIT_REPO, "https://kubernetes.default.svc"}  # the cluster itself, as Argo CD names it


@pytest.fixture(scope="module")
def upstream(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    folder = tmp_path_factory.mktemp("upstream")
    path = _spec(folder)
    return path, dict(render_tree(load_spec(path), folder))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, bytes]]:
    folder = tmp_path_factory.mktemp("site")
    path = _spec(folder, mirror=SITE)
    return path, dict(render_tree(load_spec(path), folder))


def test_the_mirror_list_covers_every_reference_of_the_tree(upstream: tuple[Path, dict[str, bytes]]) -> None:
    _, tree = upstream
    found = for_tree(tree, service="eks", accelerator="h100")
    images = {str(entry.image) for entry in found.images}
    charts = {entry.chart for entry in found.charts}
    walked_images, walked_urls = tree_references(tree)
    assert sorted(ref for ref in walked_images if str(parse_image(ref)) not in images) == []
    sources = {chart.repository for chart in charts} | {f"{chart.repository}/{chart.name}" for chart in charts}
    assert sorted(walked_urls - sources) == []
    assert {"nvcr.io/nvidia/driver:580.173.02", "docker.io/grafana/grafana:11.2.0",
            "docker.io/library/busybox:1.36", "registry.k8s.io/kubectl:v1.33.6", "ghcr.io/nvidia/aicr:v0.19.0",
            "nvcr.io/nvidia/pytorch:26.01-py3", "nvcr.io/nvidia/cloud-native/dcgm:4.5.2-1-ubuntu22.04",
            "public.ecr.aws/hpc-cloud/nccl-tests:cuda12.8.1-efa1.43.2-ofiv1.16.3-ncclv2.27.7-1-testsv2.16.9"} <= images
    assert "nvcr.io/nvidia/pytorch:25.06-py3" not in images  # NVCRE's GCP H100 variant: not on EKS
    assert len(charts) == 17 and all(entry.unresolved for entry in found.charts)
    origins = {origin for entry in found.images for origin in entry.origins}
    assert "snapshot-agent/cronjob.yaml: spec.jobTemplate.spec.template.spec.containers[0].image" in origins
    assert any("(diagnostics/dcgm-level4, run by NVCRE)" in origin for origin in origins)


def test_a_mirrored_tree_references_only_its_mirror(site: tuple[Path, dict[str, bytes]]) -> None:
    _, tree = site
    walked_images, walked_urls = tree_references(tree)
    host = "registry.site.example:5000/"
    assert walked_images and sorted(ref for ref in walked_images if not ref.startswith(host)) == []
    assert walked_urls and sorted(url for url in walked_urls if not url.startswith(f"oci://{host}charts/")) == []
    again = for_tree(tree)
    assert all(entry.chart.repository == SITE["charts"] for entry in again.charts)
    assert all(str(entry.image).startswith(host) for entry in again.images)
    values = yaml.safe_load(tree["argocd/012-gpu-operator/values.yaml"])
    assert values["driver"]["repository"] == "registry.site.example:5000/mirror/nvidia"
    assert values["driver"]["image"] == "driver"  # a name, not an image: left alone
    assert yaml.safe_load(tree["flux/011-kube-prometheus-stack/helmrelease.yaml"])["spec"]["values"]["grafana"][
        "image"] == {"registry": "registry.site.example:5000", "repository": "mirror/grafana/grafana", "tag": "11.2.0"}
    for folder in ("certification", "snapshot-agent", "argocd", "flux"):  # checksums follow the rewrite
        sums = parse_checksums(tree[f"{folder}/checksums.txt"].decode(), folder)
        import hashlib

        assert all(hashlib.sha256(tree[f"{folder}/{rel}"]).hexdigest() == digest for rel, digest in sums.items())
    assert yaml.safe_load(tree["recipe.yaml"]) == yaml.safe_load(tree["argocd/recipe.yaml"])


def test_the_mirror_list_of_a_mirrored_spec_says_where_each_goes(site: tuple[Path, dict[str, bytes]],
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    path, _ = site
    assert main(["mirror", "list", str(path), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    gpu = next(chart for chart in listed["charts"] if chart["name"] == "gpu-operator")
    assert gpu["repository"] == "https://helm.ngc.nvidia.com/nvidia"
    assert gpu["mirror"] == "oci://registry.site.example:5000/charts/gpu-operator:v26.3.3"
    assert gpu["namespace"] == "gpu-operator" and gpu["defaultImages"] == "unresolved"
    kubectl = next(image for image in listed["images"] if image["image"].startswith("registry.k8s.io/kubectl"))
    assert kubectl["mirror"] == "registry.site.example:5000/mirror/kubectl:v1.33.6"


def test_hauler_and_zarf_manifests_have_the_documented_shapes(upstream: tuple[Path, dict[str, bytes]]) -> None:
    _, tree = upstream
    found = for_tree(tree, service="eks", accelerator="h100")
    images_doc, charts_doc = yaml.safe_load_all(manifests.hauler(found, "site"))
    manifests.HaulerImages.model_validate(images_doc)
    manifests.HaulerCharts.model_validate(charts_doc)
    assert {"name": "nvcr.io/nvidia/driver:580.173.02"} in images_doc["spec"]["images"]
    assert {"name": "nvsentinel", "repoURL": "oci://ghcr.io/nvidia", "version": "v1.25.0"} in \
        charts_doc["spec"]["charts"]
    package = yaml.safe_load(manifests.zarf(found, "site"))
    manifests.ZarfPackage.model_validate(package)
    (component,) = package["components"]
    assert {"name": "gpu-operator", "version": "v26.3.3", "url": "https://helm.ngc.nvidia.com/nvidia",
            "repoName": "gpu-operator", "namespace": "gpu-operator"} in component["charts"]
    assert any(chart["url"] == "oci://ghcr.io/nvidia/nvsentinel" for chart in component["charts"])
    assert len({chart["name"] for chart in component["charts"]}) == len(component["charts"])


def test_chart_default_images_from_a_local_chart(tmp_path: Path, upstream: tuple[Path, dict[str, bytes]],
                                                 monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    from tests.consumers import tool_path

    path, _ = upstream
    charts = tmp_path / "charts"
    shutil.copytree(ROOT / "tests" / "fixtures" / "sentinel-chart", charts / "nvsentinel")
    meta = charts / "nvsentinel" / "Chart.yaml"
    meta.write_text(meta.read_text().replace("name: nvsentinel-fixture", "name: nvsentinel")
                    .replace("version: 0.1.0", "version: v1.25.0"))
    values = charts / "nvsentinel" / "values.yaml"  # the chart's defaults then run fault-quarantine
    values.write_text(values.read_text().replace("faultQuarantine:\n    enabled: false",
                                                 "faultQuarantine:\n    enabled: true"))
    monkeypatch.setenv("AICR_GEN_HELM", str(tool_path("helm3")))
    assert main(["mirror", "list", str(path), "--charts", str(charts), "--format", "json"]) == 0
    listed = json.loads(capsys.readouterr().out)
    sentinel = next(chart for chart in listed["charts"] if chart["name"] == "nvsentinel")
    assert sentinel["defaultImages"] == "listed"
    fixture = next(image for image in listed["images"] if image["image"] == "registry.invalid/fault-quarantine:fixture")
    assert fixture["origins"] == ["chart nvsentinel-v1.25.0 default: nvsentinel/charts/fault-quarantine/templates/"
                                  "deployment.yaml"]
    others = [chart for chart in listed["charts"] if chart["name"] != "nvsentinel"]
    assert all(chart["unresolved"].startswith("not resolved offline: no ") for chart in others)


@pytest.mark.parametrize(("mirror", "message"), [
    ({}, "names no mirror"),
    ({"charts": "https://charts.example"}, "spec.mirror.charts"),
    ({"images": "https://registry.example"}, "without a scheme"),
    ({"images": "registry.example/Upper"}, "HOST[:PORT][/PATH]"),
])
def test_a_bad_mirror_is_refused_at_its_line(tmp_path: Path, mirror: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidInputError, match=re.escape(message)):
        load_spec(_spec(tmp_path, mirror=mirror))


def test_two_charts_of_one_name_cannot_share_a_mirror() -> None:
    from aicr_gen.mirror.rewrite import mirror_plan
    from aicr_gen.render.plan import UPSTREAM, Plan, Unit

    units = tuple(Unit(name=name, component=name, role="main", kind=UPSTREAM, namespace=name, folder="", level=0,
                       depends_on=(), chart="app", repository=repo, version="1")
                  for name, repo in (("a", "https://one.example"), ("b", "https://two.example")))

    class Site:
        charts: str | None = "oci://mirror.example/charts"
        images: str | None = None

    with pytest.raises(InvalidInputError, match="both use a chart named 'app'"):
        mirror_plan(Plan(recipe={}, units=units), Site())


def test_a_site_that_allows_only_its_mirror_requires_the_mirror(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    shipped = (ROOT / "policies" / "allowed-sources.yaml").read_text()
    hosts = re.compile(r"\[\[\n(?:\s+'[^']+',?\n)+")
    assert hosts.search(shipped)
    site_policies = tmp_path / "site-policies"
    site_policies.mkdir()
    (site_policies / "allowed-sources.yaml").write_text(hosts.sub("[['registry.site.example:5000'\n", shipped))
    findings: dict[str, list[str]] = {}
    for label, mirror in (("mirrored", SITE), ("upstream", None), ("elsewhere", {"charts": "oci://other.example/c"})):
        folder = tmp_path / label
        folder.mkdir()
        spec = _spec(folder, mirror=mirror)
        for policies in ([], ["--policies", str(site_policies)]):
            main(["policy", "check", str(spec), "--format", "json", *policies])
            errors = [item for item in json.loads(capsys.readouterr().out)["findings"]
                      if item["policy"] == "allowed-sources"]
            findings[f"{label}{' site' if policies else ''}"] = [item["path"] for item in errors]
    assert findings["mirrored"] == findings["upstream"] == findings["elsewhere"] == []  # shipped: any site mirror
    assert findings["mirrored site"] == []
    assert len(findings["upstream site"]) == len(findings["elsewhere site"]) == 17
    assert "recipe.componentRefs[gpu-operator].source" in findings["upstream site"]


def test_schema_mirrorlock_validates_a_written_lock(cli: Callable[..., Any]) -> None:
    import jsonschema

    from aicr_gen.mirror.lock import LockedChart, LockedImage, LockedMirror, MirrorLock, dump_lock

    digest = "sha256:" + "ab" * 32
    lock = MirrorLock(apiVersion="aicr-gen.dev/v1alpha1", kind="MirrorLock",
                      mirror=LockedMirror(charts="oci://mirror.example:5000/charts", images="mirror.example:5000/m"),
                      charts=[LockedChart(reference="oci://mirror.example:5000/charts/gpu-operator:v26.3.3",
                                          digest=digest)],
                      images=[LockedImage(reference="mirror.example:5000/m/nvidia/driver:580", digest=digest)])
    result = cli("schema", "mirrorlock")
    assert result.code == 0, result
    schema = json.loads(result.out)
    jsonschema.Draft202012Validator.check_schema(schema)
    validator = jsonschema.Draft202012Validator(schema)
    written = yaml.safe_load(dump_lock(lock))
    assert not list(validator.iter_errors(written))
    written["images"][0]["digest"] = "sha256:short"
    assert list(validator.iter_errors(written))
