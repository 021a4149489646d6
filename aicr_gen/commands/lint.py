"""``aicr-gen lint SPEC...``: ``policy check`` over several ClusterSpecs (the pre-commit hook's entry)."""

from __future__ import annotations

import sys

from aicr_gen.errors import OK, AicrGenError


def lint_command(spec_paths: list[str], folders: list[str]) -> int:
    """Check every spec, report each failure, and return the worst exit code."""
    from aicr_gen.commands.policy import check_command

    worst = OK
    for path in spec_paths:
        print(f"== {path}")
        try:
            code = check_command(path, folders)
        except AicrGenError as err:
            sys.stderr.write(f"aicr-gen: error: {err}\n")
            code = err.exit_code
        worst = max(worst, code)
    return worst
