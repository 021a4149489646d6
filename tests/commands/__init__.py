"""Tests of ``aicr_gen/commands`` driven end to end: a command's arguments, output and exit code."""
