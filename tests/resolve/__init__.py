"""Tests of ``aicr_gen/resolve``: recipes resolved from catalogs as AICR resolves them."""
