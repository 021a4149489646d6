"""Errors that carry the process exit code; the CLI turns them into one clear message.

Exit codes: 0 ok, 1 findings, 2 invalid input or usage, 3 source unreachable or changed under us (rerun).
"""

from __future__ import annotations

OK = 0
INVALID = 2


class AicrGenError(Exception):
    """Base error: ``str(err)`` is the whole message shown to the user."""

    exit_code = INVALID


class InvalidInputError(AicrGenError):
    """Bad input or usage (exit 2). The message names the file, line/path and the fix."""

    exit_code = INVALID


class FindingsError(AicrGenError):
    """Checks ran and found problems (exit 1); the message lists them."""

    exit_code = 1


class UnreachableError(AicrGenError):
    """A source (cluster API, ConfigMap, registry, URL) could not be reached, misbehaved or does not exist, or
    something changed under us (a branch moved, a git lock held while syncing): a rerun may succeed (exit 3)."""

    exit_code = 3
