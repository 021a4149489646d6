"""Tests of ``aicr_gen/catalog``: reading recipe catalogs (ours, AICR's, site layers) and their file headers."""
