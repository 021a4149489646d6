"""Tests of ``aicr_gen/drift``: snapshots (loaded, captured), constraints, diffs of a cluster, its pools, a fleet."""
