"""Tests of ``aicr_gen/mirror``: air-gapped sites, the mirror list, lock and rewrite, against a real registry."""
