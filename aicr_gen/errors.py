"""Errors that carry the process exit code; the CLI turns them into one clear message."""

from __future__ import annotations

OK = 0
FINDINGS = 1
INVALID = 2
UNREACHABLE = 3


class AicrGenError(Exception):
    """Base error: ``str(err)`` is the whole message shown to the user."""

    exit_code = INVALID


class InvalidInputError(AicrGenError):
    """Bad input or usage (exit 2). The message names the file, line/path and the fix."""

    exit_code = INVALID


class FindingsError(AicrGenError):
    """Checks ran and found problems (exit 1)."""

    exit_code = FINDINGS


class UnreachableError(AicrGenError):
    """A source (cluster, ConfigMap) could not be reached (exit 3)."""

    exit_code = UNREACHABLE
