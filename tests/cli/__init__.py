"""Tests of ``aicr_gen/cli``: the command line as a user meets it (version, help, shell completion)."""
