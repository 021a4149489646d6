"""An air-gapped site against a real registry: Debian's ``docker-registry`` (distribution 2.8) on loopback,
filled as an operator fills it (charts with the real ``helm push``, small OCI images through the registry's
upload API), then ``mirror list`` -> ``mirror lock`` -> ``sync`` pins every mirrored image and chart ->
``mirror verify``; a deleted manifest and a moved tag are named, an unreachable registry is exit 3, and the
pinned tree converges on a real API server with every Pod template image ``<mirror>/...@sha256:``."""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import re
import shutil
import subprocess
import tarfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pytest
import yaml

from aicr_gen.cli.main import main
from aicr_gen.mirror.fields import pod_images
from aicr_gen.text.image_reference import parse_image
from tests.cluster.conftest import cluster_with_crds, crd_seed  # noqa: F401  (the convergence fixtures)
from tests.cluster.envtest import ControlPlane, free_ports
from tests.mirror.test_inventory import GIT_REPO, _spec, tree_references

REGISTRY_BINARY = Path("/usr/bin/docker-registry")
OCI_MANIFEST = "application/vnd.oci.image.manifest.v1+json"
DIGESTED = "@sha256:"


class Registry(NamedTuple):
    host: str  # 127.0.0.1:PORT

    def call(self, method: str, path: str, body: bytes | None = None,
             headers: dict[str, str] | None = None) -> tuple[int, Any]:
        request = urllib.request.Request(f"http://{self.host}{path}" if path.startswith("/") else path,
                                         data=body, method=method, headers=headers or {})
        try:
            with urllib.request.urlopen(request, timeout=30) as response:
                return response.status, response.headers
        except urllib.error.HTTPError as err:
            return err.code, err.headers

    def blob(self, repository: str, data: bytes) -> str:
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        status, headers = self.call("POST", f"/v2/{repository}/blobs/uploads/")
        assert status == 202, status
        location = str(headers["Location"])
        location = location if location.startswith("http") else f"http://{self.host}{location}"
        status, _ = self.call("PUT", f"{location}{'&' if '?' in location else '?'}digest={digest}", data,
                              {"Content-Type": "application/octet-stream"})
        assert status == 201, status
        return digest

    def push_image(self, reference: str, build: str = "") -> str:
        """A one-layer OCI image at ``reference`` (on this registry), distinct per reference and ``build``; its
        digest."""
        ref = parse_image(reference)
        assert ref.domain == self.host, reference
        layer = io.BytesIO()
        with tarfile.open(fileobj=layer, mode="w") as tar:
            content = f"built for {reference} {build}\n".encode()
            info = tarfile.TarInfo("etc/aicr-test")
            info.size = len(content)
            tar.addfile(info, io.BytesIO(content))
        layer_gz = gzip.compress(layer.getvalue(), mtime=0)
        config = json.dumps({"architecture": "amd64", "os": "linux",
                             "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(
                                 layer.getvalue()).hexdigest()]},
                             "config": {"Labels": {"test.reference": reference}}}).encode()
        manifest = json.dumps({
            "schemaVersion": 2, "mediaType": OCI_MANIFEST,
            "config": {"mediaType": "application/vnd.oci.image.config.v1+json",
                       "digest": self.blob(ref.path, config), "size": len(config)},
            "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip",
                        "digest": self.blob(ref.path, layer_gz), "size": len(layer_gz)}]}).encode()
        status, headers = self.call("PUT", f"/v2/{ref.path}/manifests/{ref.tag or 'latest'}", manifest,
                                    {"Content-Type": OCI_MANIFEST})
        assert status == 201, status
        return str(headers["Docker-Content-Digest"])

    def delete(self, repository: str, digest: str) -> None:
        status, _ = self.call("DELETE", f"/v2/{repository}/manifests/{digest}")
        assert status == 202, status


def _helm() -> str:
    from tests.consumers import tool_path

    return str(tool_path("helm3"))


@pytest.fixture(scope="session")
def registry(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Registry]:
    """Debian's docker-registry on a free loopback port, storage (deletes allowed) in a temporary folder."""
    import os

    from tests.conftest import ROOT

    tools = Path(os.environ.get("AICR_GEN_TOOLS") or ROOT / ".tools") / "docker-registry"
    binary = next((str(path) for path in (REGISTRY_BINARY, tools) if path.exists()), shutil.which("docker-registry"))
    if binary is None:
        pytest.skip("docker-registry (distribution 2.8) is not installed: scripts/tools.sh reads it out of Debian's "
                    "package where apt-get is, or apt-get install docker-registry")
    folder = tmp_path_factory.mktemp("registry")
    (port,) = free_ports(1)
    config = folder / "config.yml"
    config.write_text(yaml.safe_dump({
        "version": 0.1, "log": {"level": "warn"},
        "storage": {"filesystem": {"rootdirectory": str(folder / "data")}, "delete": {"enabled": True}},
        "http": {"addr": f"127.0.0.1:{port}"}}))
    log = (folder / "registry.log").open("wb")
    process = subprocess.Popen([str(binary), "serve", str(config)], stdout=log, stderr=subprocess.STDOUT)
    found = Registry(f"127.0.0.1:{port}")
    try:
        for _ in range(200):
            if process.poll() is not None:
                pytest.fail(f"docker-registry exited: {(folder / 'registry.log').read_text()}")
            try:
                if found.call("GET", "/v2/")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.05)
        else:
            pytest.fail("docker-registry did not answer /v2/ within 10 s")
        yield found
    finally:
        process.terminate()
        process.wait(10)
        log.close()


class Site(NamedTuple):
    spec: Path
    lock: Path
    registry: Registry
    listed: dict[str, Any]


@pytest.fixture(scope="module")
def site(registry: Registry, tmp_path_factory: pytest.TempPathFactory) -> Site:
    """A spec mirrored to the registry, every chart and image ``mirror list`` names pushed where it says, and
    locked."""
    folder = tmp_path_factory.mktemp("airgap")
    mirror = {"charts": f"oci://{registry.host}/charts", "images": f"{registry.host}/mirror"}
    spec = _spec(folder, mirror=mirror, deployers=["argocd", "flux", "helm", "helmfile"])
    listing = folder / "mirror.json"
    assert main(["mirror", "list", str(spec), "--format", "json", "-o", str(listing)]) == 0
    listed = json.loads(listing.read_text())
    helm, charts = _helm(), folder / "charts"
    charts.mkdir()
    subprocess.run([helm, "create", "chart"], cwd=charts, check=True, capture_output=True)
    for chart in listed["charts"]:
        meta = yaml.safe_load((charts / "chart" / "Chart.yaml").read_text())
        meta.update(name=chart["name"], version=chart["version"])
        (charts / "chart" / "Chart.yaml").write_text(yaml.safe_dump(meta))
        subprocess.run([helm, "package", "chart", "-d", "out"], cwd=charts, check=True, capture_output=True)
        package = charts / "out" / f"{chart['name']}-{chart['version']}.tgz"
        target = chart["mirror"].removesuffix(f"/{chart['name']}:{chart['version']}")
        subprocess.run([helm, "push", str(package), target, "--plain-http"], check=True, capture_output=True)
    for image in listed["images"]:
        if image["mirror"]:
            registry.push_image(image["mirror"])
    assert main(["mirror", "lock", str(spec)]) == 0
    return Site(spec, folder / "spec.lock.yaml", registry, listed)


def test_the_lock_holds_every_mirrored_chart_and_image_and_is_deterministic(site: Site) -> None:
    lock = yaml.safe_load(site.lock.read_text())
    assert lock["kind"] == "MirrorLock" and lock["mirror"]["images"] == f"{site.registry.host}/mirror"
    charts = {entry["reference"] for entry in lock["charts"]}
    assert charts == {chart["mirror"] for chart in site.listed["charts"]}
    images = {entry["reference"] for entry in lock["images"]}
    # every image the tree names on the mirror (the NVCRE workload images without an image option are picked by
    # NVCRE at run time and stay out of the tree)
    assert images and images <= {image["mirror"] for image in site.listed["images"]}
    assert all(entry["digest"].startswith("sha256:") for entry in lock["charts"] + lock["images"])
    before = site.lock.read_bytes()
    assert main(["mirror", "lock", str(site.spec)]) == 0
    assert site.lock.read_bytes() == before


def _synced(site: Site, folder: Path) -> dict[str, bytes]:
    repo = folder / "gitops"
    repo.mkdir()
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.invalid", "commit",
                    "-q", "--allow-empty", "-m", "initial"], check=True)
    data = yaml.safe_load(site.spec.read_text())
    assert data["spec"]["repo"]["url"] == GIT_REPO
    assert main(["sync", str(site.spec), "--repo", str(repo)]) == 0
    root = repo / data["spec"]["repo"]["path"]
    return {path.relative_to(root).as_posix(): path.read_bytes() for path in root.rglob("*") if path.is_file()}


def test_sync_pins_every_mirrored_image_and_the_charts_where_the_deployer_takes_a_digest(site: Site,
                                                                                          tmp_path: Path) -> None:
    tree = _synced(site, tmp_path)
    host = f"{site.registry.host}/"
    images, urls = tree_references(tree)
    assert images and sorted(ref for ref in images if not ref.startswith(host)) == []
    # a split values shape joins repository and tag, so the walk sees the tag text: each carries the digest
    assert sorted(ref for ref in images if DIGESTED not in ref and not tree_has_digest_after(tree, ref)) == []
    assert sorted(url for url in urls if not url.startswith(f"oci://{host}charts/")) == []
    lock = yaml.safe_load(site.lock.read_text())
    chart_digest = {entry["reference"].rsplit("/", 1)[1]: entry["digest"] for entry in lock["charts"]}
    gpu = chart_digest["gpu-operator:v26.3.3"]
    app = next(yaml.safe_load_all(tree["argocd/012-gpu-operator/application.yaml"]))
    assert app["spec"]["sources"][0]["targetRevision"] == gpu
    source = yaml.safe_load(tree["flux/sources/ocirepo-" + site.registry.host.replace(".", "-").replace(":", "-")
                                 + "-charts-gpu-operator.yaml"])
    assert source["spec"]["ref"] == {"tag": "v26.3.3", "digest": gpu}
    install = tree["helm/012-gpu-operator/install.sh"].decode()
    assert f"oci://{host}charts/gpu-operator@{gpu} --version v26.3.3" in install
    values = yaml.safe_load(tree["argocd/012-gpu-operator/values.yaml"])
    assert values["driver"]["version"].startswith("sha256:")  # the GPU Operator's digest spelling
    # the lock is an input of the tree: the inputs record beside it names it
    (record,) = [path for path in (tmp_path / "gitops" / ".aicr-gen" / "inputs").rglob("*") if path.is_file()]
    assert "spec.lock.yaml" in record.read_text()


def tree_has_digest_after(tree: dict[str, bytes], ref: str) -> bool:
    """A ``repository:tag`` the walk found whose tag text is followed by the digest (``tag: TAG@sha256:``)."""
    return any(f"{ref}{DIGESTED}".encode() in data for data in tree.values())


def test_verify_passes_then_names_a_deleted_manifest_and_a_moved_tag(site: Site,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["mirror", "verify", str(site.spec)]) == 0
    assert "are on the registry" in capsys.readouterr().out
    lock = yaml.safe_load(site.lock.read_text())
    victim, moved = lock["images"][0], lock["images"][1]
    site.registry.delete(parse_image(victim["reference"]).path, victim["digest"])
    rebuilt = site.registry.push_image(moved["reference"], build="rebuilt")  # the tag moves, the old digest stays
    assert rebuilt != moved["digest"]
    assert main(["mirror", "verify", str(site.spec)]) == 1
    err = capsys.readouterr().err
    assert f"{victim['reference']}@{victim['digest']} is gone from the registry" in err
    assert f"the tag of {moved['reference']} now resolves to {rebuilt}; the lock has {moved['digest']}" in err
    assert "mirror verify: 2 problem(s)" in err
    site.registry.push_image(victim["reference"], build="again")  # pushed again, then locked again
    assert main(["mirror", "lock", str(site.spec)]) == 0
    assert main(["mirror", "verify", str(site.spec)]) == 0


def test_an_unreachable_registry_is_exit_3_and_writes_nothing(site: Site, tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    (port,) = free_ports(1)
    before = site.lock.read_bytes()
    assert main(["mirror", "lock", str(site.spec), "--registry", f"http://127.0.0.1:{port}"]) == 3
    assert "registry" in capsys.readouterr().err
    assert site.lock.read_bytes() == before
    assert main(["mirror", "verify", str(site.spec), "--registry", f"http://127.0.0.1:{port}"]) == 3


def test_the_pinned_tree_converges_with_every_pod_image_pinned_on_the_mirror(
        site: Site, tmp_path: Path, cluster_with_crds: ControlPlane) -> None:  # noqa: F811
    from tests.cluster.converge import Api, converge_argocd

    tree = _synced(site, tmp_path)
    checkout = tmp_path / "checkout"
    data = yaml.safe_load(site.spec.read_text())
    for path, content in tree.items():
        target = checkout / data["spec"]["repo"]["path"] / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
    outcome = converge_argocd(cluster_with_crds, checkout, f"{data['spec']['repo']['path']}/argocd", GIT_REPO)
    assert not outcome.refused, outcome.refused
    api = Api(cluster_with_crds)
    images = [str(ref) for kind, version in (("CronJob", "batch/v1"), ("Job", "batch/v1"))
              for obj in api.items(version, kind) for _, ref in pod_images(obj.get("spec"))]
    assert images, outcome.applied
    assert [image for image in images if not (image.startswith(f"{site.registry.host}/mirror/")
                                              and DIGESTED in image)] == []


def test_a_bearer_challenge_gets_a_pull_token_with_the_credentials() -> None:
    """A registry that answers 401 with a Bearer challenge (as Harbor, ghcr.io and Docker Hub do): the client
    asks the realm for the repository's pull scope with the user's credentials, then retries with the token."""
    import base64
    import http.server
    import threading

    from aicr_gen.edges.registry import Client, Credentials

    digest = "sha256:" + "c" * 64
    seen: list[tuple[str, str]] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _answer(self) -> None:
            seen.append((self.path, self.headers.get("Authorization", "")))
            if self.path.startswith("/token"):
                ok = self.headers.get("Authorization") == "Basic " + base64.b64encode(b"site:secret").decode()
                body = json.dumps({"token": "t0k"}).encode() if ok else b"{}"
                self.send_response(200 if ok else 401)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            elif self.headers.get("Authorization") == "Bearer t0k":
                self.send_response(200)
                self.send_header("Docker-Content-Digest", digest)
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_response(401)
                self.send_header("WWW-Authenticate", f'Bearer realm="http://{self.headers["Host"]}/token",'
                                 'service="registry.site"')
                self.send_header("Content-Length", "0")
                self.end_headers()

        do_GET = do_HEAD = _answer

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        host = f"127.0.0.1:{server.server_address[1]}"
        client = Client(default=Credentials("site", "secret"), hosts=frozenset({host}))
        assert client.resolve(host, "mirror/nvidia/driver", "580") == digest
        assert client.resolve(host, "mirror/nvidia/driver", "581") == digest  # the token is reused
    finally:
        server.shutdown()
    token_calls = [path for path, _ in seen if path.startswith("/token")]
    assert token_calls == ["/token?scope=repository%3Amirror%2Fnvidia%2Fdriver%3Apull&service=registry.site"]
    assert seen[-1] == ("/v2/mirror/nvidia/driver/manifests/581", "Bearer t0k")


def test_a_lock_of_another_mirror_or_missing_a_reference_is_refused(site: Site, tmp_path: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    from aicr_gen.errors import InvalidInputError
    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    spec = tmp_path / "spec.yaml"
    spec.write_text(site.spec.read_text())
    lock = yaml.safe_load(site.lock.read_text())
    dropped = lock["images"].pop(0)
    (tmp_path / "spec.lock.yaml").write_text(yaml.safe_dump(lock))
    with pytest.raises(InvalidInputError, match=re.escape(dropped["reference"])):
        render_tree(load_spec(spec), tmp_path)
    assert main(["mirror", "verify", str(spec)]) == 1
    assert f"{dropped['reference']} is not locked" in capsys.readouterr().err
    moved, lock["mirror"]["images"] = lock["mirror"]["images"], "registry.other.example/mirror"
    for entry in lock["images"]:  # a lock of another mirror names that mirror's images
        entry["reference"] = entry["reference"].replace(moved, "registry.other.example/mirror", 1)
    (tmp_path / "spec.lock.yaml").write_text(yaml.safe_dump(lock))
    with pytest.raises(InvalidInputError, match="the lock was computed for the mirror"):
        render_tree(load_spec(spec), tmp_path)
