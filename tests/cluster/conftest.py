"""Fixtures of the tests that need a cluster of their own (``control_plane`` is shared: tests/conftest.py)."""

from tests.cluster.envtest import fresh_control_plane  # noqa: F401
