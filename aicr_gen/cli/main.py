"""Command line: parse, dispatch to the command's module, turn an error into its exit code, all under the output
guard. The commands are the rows of ``cli/table.py``; start-up is most of a quick command's time, so only the
arguments of the subcommand that runs are built, and what its ``run`` needs is imported when it runs."""

from __future__ import annotations

import gc
import os
import sys

from aicr_gen import __version__
from aicr_gen.errors import INVALID, AicrGenError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and argparse are not imported for --version
    from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aicr-gen`` console script (``argv`` None: the process's own arguments)."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given == ["--version"]:  # the pre-commit hooks' start-up check: answered before argparse is imported
        sys.stdout.write(f"aicr-gen {__version__}\n")
        return 0
    from aicr_gen.cli.console import Guarded

    with Guarded():  # nothing printed can be a CI runner's workflow command
        return _main(given, own_process=argv is None)


def _main(given: list[str], *, own_process: bool) -> int:
    import importlib

    from aicr_gen.cli.table import MODULES, build_parser

    # the top level takes no option with a value, so the first word naming a command is the subcommand; an option
    # before it (--help, or its abbreviation) is the top level's, whose help lists every command
    first = next((word for word in given if word in MODULES or word.startswith("-")), "")
    parser = build_parser(first if first in MODULES else "")
    args = parser.parse_args(given)
    try:
        if args.command is None:
            parser.print_help()
            return INVALID
        code: int = importlib.import_module(MODULES[args.command]).run(args)
        return code
    except AicrGenError as err:
        sys.stderr.write(f"aicr-gen: error: {err}\n")
        return err.exit_code
    except KeyboardInterrupt:
        sys.stderr.write("aicr-gen: interrupted\n")
        return 130
    except BrokenPipeError:
        # The reader (e.g. `| head`) stopped early: not an error. Silence the flush at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as err:  # a bug: say so in one line instead of a traceback
        if os.environ.get("AICR_GEN_DEBUG"):
            raise
        sys.stderr.write(
            f"aicr-gen: internal error: {type(err).__name__}: {err} "
            "(a bug; rerun with AICR_GEN_DEBUG=1 for details and report it)\n")
        return INVALID
    finally:
        if own_process:  # this process is the command, and it is ending: the interpreter's last garbage
            gc.freeze()  # collection would walk every object only to free it (~15 ms once a bundle is imported)


if __name__ == "__main__":
    sys.exit(main())
