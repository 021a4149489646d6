"""Command line: dispatch only (the argparse tree is in ``cli_parser.py``). Start-up is most of a quick
command's time, so only the parser of the subcommand that runs is built, and its module imported when it runs."""

from __future__ import annotations

import gc
import os
import sys

from aicr_gen import __version__
from aicr_gen.errors import INVALID, AicrGenError, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing and argparse are not imported for --version
    import argparse
    from collections.abc import Sequence


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The argparse tree, or the tree holding only subcommand ``command`` (see ``cli_parser.build_parser``)."""
    from aicr_gen.cli import parser as cli_parser
    return cli_parser.build_parser(command)


def _run(args: argparse.Namespace) -> int:
    from aicr_gen.catalog.vocabulary import DIMENSIONS
    from aicr_gen.cli import operate as cli_operate

    if args.command == "recipe":
        from aicr_gen.commands import recipe

        if args.recipe_command == "list":
            resolve_only = [*DIMENSIONS, "profile", "slurm_accounting_mode", "output", "format", "criteria",
                            "api_version"]
            given = [name for name in resolve_only if getattr(args, name) is not None]
            given += ["nodes"] if args.nodes else []
            if given:
                flag = given[0].replace("_", "-")
                raise InvalidInputError(f"recipe list takes only --catalog and --format (after 'list'); drop --{flag}")
            return recipe.list_leaves(args.catalog + args.list_catalog, args.list_format)
        criteria = {dim: getattr(args, dim) for dim in DIMENSIONS}
        return recipe.resolve_command(args.catalog, criteria, args.output, args.format or "yaml",
                                      nodes=args.nodes, profile=args.profile,
                                      accounting_mode=args.slurm_accounting_mode, api_version=args.api_version,
                                      criteria_file=args.criteria)
    if args.command == "bundle":
        from aicr_gen.commands.bundle import Publishing, bundle_command, scheduling_from

        if args.config is not None:
            from aicr_gen.commands import bundle_config

            args = bundle_config.apply(args)
        if args.recipe is None:
            raise InvalidInputError("bundle needs --recipe FILE (or spec.bundle.input.recipe in --config)")

        return bundle_command(args.recipe, args.deployer or "helm", args.output, sets=args.set, set_jsons=args.set_json,
                              set_files=args.set_file, repo=args.repo, folders=args.catalog, force=args.force,
                              build_only=args.build, scheduling=scheduling_from(args),
                              app_name=args.app_name, flux_namespace=args.flux_namespace, serial=args.serial,
                              dynamic=args.dynamic, readiness=_readiness(args), vendor_charts=args.vendor_charts,
                              kubeconfig=args.kubeconfig, context=args.context,
                              publishing=Publishing(args.image_refs, args.plain_http, args.insecure_tls,
                                                    args.flux_oci_source_name))
    if args.command == "verify":
        from aicr_gen.commands.verify import verify_command

        return verify_command(args.folders, args.verify_format)
    module = cli_operate.module_for(args)
    if module is not None:
        import importlib

        command = importlib.import_module(f"aicr_gen.commands.{module}")
        code: int = command.run(args)
        return code
    if args.command == "spec":
        from aicr_gen.commands import spec

        if args.spec_command == "show":
            return spec.show_command(args.spec_file, args.show_format, args.show_output)
        return spec.init_command(args.catalog, {dim: getattr(args, dim) for dim in DIMENSIONS}, args.deployer,
                                 args.output, nodes=args.nodes, repo_url=args.repo_url, extends=args.extends,
                                 name=args.name, path=args.path, force=args.force)
    if args.command == "policy":
        from aicr_gen.commands.policy import check_command

        return check_command(args.spec_file, args.policies, args.policy_format)
    if args.command == "lint":
        from aicr_gen.commands.lint import lint_command

        return lint_command(args.spec_files, args.policies, args.lint_format)
    if args.command == "sync":
        from aicr_gen.commands import sync

        return sync.run(args)
    if args.command == "plan":
        from aicr_gen.commands import plan

        return plan.run(args)
    if args.command == "fleet":
        from aicr_gen.commands.fleet import entry_command

        return entry_command(args.spec_files, args.output, name=args.name, force=args.force, check=args.check)
    if args.command == "mirror":
        from aicr_gen.commands import mirror

        return mirror.run(args)
    if args.command == "completion":
        from aicr_gen.cli import completion
        return completion.run(args.shell)
    if args.command == "schema":
        from aicr_gen.commands import schema

        return schema.print_schema(args.kind)
    build_parser().print_help()
    return INVALID


def _readiness(args: argparse.Namespace) -> str | None:
    """The gate image of ``bundle --readiness-hooks`` ('' for AICR's), or None without gates."""
    if args.readiness_image and not args.readiness_hooks:
        raise InvalidInputError("--readiness-image needs --readiness-hooks")
    return (args.readiness_image or "") if args.readiness_hooks else None


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
    from aicr_gen.cli.parser import PARSERS

    # the first word names the subcommand unless it is an option (-h lists every subcommand)
    args = build_parser(given[0] if given and given[0] in PARSERS else None).parse_args(given)
    try:
        return _run(args)
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
