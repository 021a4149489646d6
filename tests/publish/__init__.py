"""Tests of ``aicr_gen/publish``: bundles pushed to an OCI registry as AICR pushes them."""
