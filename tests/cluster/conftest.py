"""Fixtures of the tests that need a cluster of their own (``control_plane`` is shared: tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.cluster.envtest import ControlPlane, binaries_or_skip, start


@pytest.fixture(scope="session")
def crd_seed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The etcd data of a control plane that has the real CRDs of Argo CD, Flux, the GPU Operator and NVSentinel
    installed (as those controllers' installations leave a cluster), stopped: each tree's cluster starts from a
    copy, instead of installing and waiting for the CRDs every time."""
    from tests.cluster.converge import Api, install_crds

    folder = tmp_path_factory.mktemp("crd-seed")
    plane = start(folder, binaries_or_skip())
    try:
        install_crds(Api(plane))
    finally:
        plane.stop()
    return folder / "etcd"


@pytest.fixture
def cluster_with_crds(tmp_path_factory: pytest.TempPathFactory, crd_seed: Path) -> Iterator[ControlPlane]:
    """A control plane of the test's own, started from ``crd_seed``."""
    plane = start(tmp_path_factory.mktemp("envtest"), binaries_or_skip(), crd_seed)
    try:
        yield plane
    finally:
        plane.stop()
