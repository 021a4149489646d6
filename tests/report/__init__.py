"""Tests of ``aicr_gen/report``: reports read back from certification results."""
