"""Tests of ``aicr_gen/edges``: the IO edges (files, output, cache, git, kube, registry)."""
