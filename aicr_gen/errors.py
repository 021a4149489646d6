"""Errors that carry the process exit code; the CLI turns them into one clear message.

Exit codes: 0 ok, 1 findings, 2 invalid input or usage, 3 source unreachable or changed under us (rerun).

An error about a place in a file is built from ``located.Located`` values (``InvalidInputError.at(...)``): the
place (file, line, column, field path) and the problem (message, fix) as fields, so that ``str(err)`` (the text
rendering, ``Located.text``) and ``lint --format json`` (which reads the fields) are two renderings of one value.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Self, TypeAlias

    from aicr_gen.located import Located

    # The input error of a message about one value (``Document.error`` of its field path, say).
    Refuse: TypeAlias = Callable[[str], "InvalidInputError"]
    # Where a value was given: named by text (a flag: ``--option 'k=v'``), or its input error at its place in a
    # file (a ``Refuse``).
    Where: TypeAlias = str | Refuse

OK = 0
INVALID = 2


class AicrGenError(Exception):
    """Base error: ``str(err)`` is the whole message shown to the user; ``problems`` its located problems, when
    it was built from them (``at``)."""

    exit_code = INVALID
    problems: tuple[Located, ...] = ()

    @classmethod
    def at(cls, *problems: Located) -> Self:
        """The error of ``problems``: its message is their text, one a line."""
        err = cls("\n".join(problem.text() for problem in problems))
        err.problems = problems
        return err


class InvalidInputError(AicrGenError):
    """Bad input or usage (exit 2). The message names the file, line/path and the fix."""

    exit_code = INVALID


def refusal(where: Where) -> Refuse:
    """The input error of a message about the value ``where`` names: ``where: message`` when it is text."""
    if isinstance(where, str):
        return lambda message: InvalidInputError(f"{where}: {message}")
    return where


class FindingsError(AicrGenError):
    """Checks ran and found problems (exit 1); the message lists them."""

    exit_code = 1


class UnreachableError(AicrGenError):
    """A source (cluster API, ConfigMap, registry, URL) could not be reached, misbehaved or does not exist, or
    something changed under us (a branch moved, a git lock held while syncing): a rerun may succeed (exit 3)."""

    exit_code = 3
