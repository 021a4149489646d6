"""Tests of ``aicr_gen/gitops``: the synced tree, its commit, records, changes, ``plan``, many specs, pools."""
