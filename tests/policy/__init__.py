"""Tests of ``aicr_gen/policy``: CEL policies, the shipped ones and a user's."""
