"""Tests of ``aicr_gen/sentinel``: NVSentinel values, rule sets and ValidationRequests."""
