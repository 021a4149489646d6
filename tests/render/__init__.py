"""Tests of ``aicr_gen/render``: bundles of each deployer, checked by the consumers that read them."""
