"""Tests of ``aicr_gen/spec``: the ClusterSpec and Fleet input model."""
