"""Fixtures of the commands tests."""

from tests.tiny_catalog import catalog  # noqa: F401  (the tiny catalog, written per test)
