"""Command line: builds the argparse tree and dispatches. Subcommand modules are imported lazily."""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from aicr_gen import __version__, cli_operate
from aicr_gen.catalog.vocabulary import DIMENSIONS
from aicr_gen.errors import INVALID, AicrGenError, InvalidInputError

RESULTS_JSON = """\
--format json prints one object (a stable shape; exit codes as for text):
  {"ok": BOOL, "files": [{"file": PATH, "ok": BOOL,
     "errors":   [{"file": PATH, "line": INT|null, "path": FIELD|null, "message": TEXT, "policy": NAME|null}],
     "warnings": [... the same ...]}]}
"""


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(INVALID, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")


def _catalog_option(parser: argparse.ArgumentParser, dest: str = "catalog") -> None:
    parser.add_argument(
        "--catalog", dest=dest, action="append", default=[], metavar="DIR",
        help="catalog folder laid out like AICR's recipes/ (repeatable, later wins; replaces the embedded one)")


def _spec_parsers(commands: Any) -> None:
    """spec init, policy check and lint: writing and checking ClusterSpecs."""
    spec = commands.add_parser("spec", help="write or check a ClusterSpec (one cluster, end to end)")
    spec_commands = spec.add_subparsers(dest="spec_command", metavar="init", parser_class=_Parser, required=True)
    init = spec_commands.add_parser("init", help="write a commented starting ClusterSpec for covered criteria")
    for dim in DIMENSIONS:
        init.add_argument(f"--{dim}", default=None, help=f"{dim} criterion (or 'any')")
    init.add_argument("--nodes", type=int, default=0, help="advisory GPU node count")
    init.add_argument("--deployer", action="append", default=[], metavar="D",
                      help="bundle deployer: helm, argocd, argocd-helm, flux or helmfile (repeatable; default argocd)")
    _catalog_option(init)
    init.add_argument("--repo-url", metavar="URL", help="Git repository the bundle is committed to, which Argo CD and "
                      "Flux pull (default: a placeholder that lint and sync refuse until you replace it)")
    init.add_argument("-o", "--output", metavar="FILE", help="write the spec to FILE (atomically; default stdout)")

    policy = commands.add_parser("policy", help="check a ClusterSpec and its recipe against CEL policies")
    policy_commands = policy.add_subparsers(dest="policy_command", metavar="check", parser_class=_Parser,
                                            required=True)
    policy_check = policy_commands.add_parser("check", help="evaluate the shipped and your policies; "
                                              "exit 1 on an error-severity finding")
    policy_check.add_argument("spec_file", metavar="SPEC", help="ClusterSpec file")
    policy_check.add_argument("--policies", action="append", default=[], metavar="DIR",
                              help="folder of policy files (repeatable; later folders add, a same-named "
                                   "policy replaces an earlier one, shipped ones included)")
    policy_check.add_argument("--format", dest="policy_format", choices=("text", "json"), default="text",
                              help="output format (default: text)")
    lint = commands.add_parser("lint", help="check ClusterSpecs as sync would, without Git (pre-commit hook)",
                               description="Check each ClusterSpec: schema and semantics, the files it reads, its "
                               "recipe, its policies and its rendered tree; everything sync refuses about a spec.",
                               epilog=RESULTS_JSON, formatter_class=argparse.RawDescriptionHelpFormatter)
    lint.add_argument("spec_files", nargs="+", metavar="SPEC", help="ClusterSpec files")
    lint.add_argument("--policies", action="append", default=[], metavar="DIR",
                      help="folder of policy files (repeatable, as for policy check)")
    lint.add_argument("--format", dest="lint_format", choices=("text", "json"), default="text",
                      help="text (default) or json (the shape below)")


def _completion_parser(commands: Any) -> None:
    completion = commands.add_parser(
        "completion", help="print a shell completion script", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="load it:\n  bash  source <(aicr-gen completion bash)   (or save it in "
               "~/.local/share/bash-completion/completions/aicr-gen)\n"
               "  zsh   source <(aicr-gen completion zsh)    (or save it as _aicr-gen in a folder on $fpath)\n"
               "  fish  aicr-gen completion fish | source    (or save it in ~/.config/fish/completions/aicr-gen.fish)")
    completion.add_argument("shell", choices=("bash", "zsh", "fish"), help="the shell to complete in")


def _sync_parser(commands: Any) -> None:
    sync = commands.add_parser("sync", help="render a ClusterSpec's whole tree and commit it to a Git repository")
    sync.add_argument("spec_files", metavar="SPEC", nargs="+", help="ClusterSpec file (several only with --check)")
    sync.add_argument("--repo", required=True, metavar="DIR", help="work tree of the Git repository")
    sync.add_argument("--path", metavar="P", help="managed folder in the repository (default: spec.repo.path)")
    sync.add_argument("--branch", metavar="B", help="commit on branch B (created or updated from HEAD) without "
                      "touching the checkout, e.g. for a pull request")
    sync.add_argument("--message", metavar="M", help="commit message (the trailers are added)")
    sync.add_argument("--check", action="store_true", help="exit 1, listing the stale files, when HEAD differs")
    sync.add_argument("--staged", action="store_true", help="with --check: compare with the index (what is about "
                      "to be committed, as in a pre-commit hook) instead of HEAD")
    sync.add_argument("--force", action="store_true", help="overwrite uncommitted changes under the path")
    sync.add_argument("--push", action="store_true", help="push the branch to origin after committing")


def _plan_parser(commands: Any) -> None:
    plan = commands.add_parser("plan", help="what merging would change in each cluster: specs rendered as sync "
                               "would, compared with the tree committed at a base (writes nothing to the repository)")
    plan.add_argument("spec_files", metavar="SPEC", nargs="+", help="ClusterSpec files or glob patterns")
    plan.add_argument("--repo", required=True, metavar="DIR", help="work tree of the Git repository")
    plan.add_argument("--base", default="HEAD", metavar="REF",
                      help="commit to compare with, e.g. origin/main or a pull request's base (default: HEAD)")
    plan.add_argument("--format", dest="plan_format", choices=("markdown", "json"), default="markdown",
                      help="markdown (one GitHub comment, under 65,000 characters) or json (aicr-gen schema plan); "
                           "default: markdown")
    plan.add_argument("-o", "--output", metavar="FILE", help="write the plan to FILE (atomically; default stdout)")
    plan.add_argument("--fail-on", choices=("policy",), help="policy: exit 1 when a spec has a policy error")


def build_parser() -> argparse.ArgumentParser:
    """The whole argparse tree (also what ``aicr-gen completion`` and the help tests walk)."""
    parser = _Parser(prog="aicr-gen", description="Reproducible, certified and watched GPU Kubernetes clusters, "
                     "through Git: AICR recipes and bundles, NVCRE certification, NVSentinel operation.")
    parser.add_argument("--version", action="version", version=f"aicr-gen {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    recipe = commands.add_parser("recipe", help="resolve a version-locked recipe for a cluster")
    _catalog_option(recipe)
    for dim in DIMENSIONS:
        recipe.add_argument(f"--{dim}", default=None, help=f"{dim} criterion (or 'any')")
    recipe.add_argument("--gpu", dest="accelerator", help=argparse.SUPPRESS)
    recipe.add_argument("--nodes", type=int, default=0, help="advisory GPU node count")
    recipe.add_argument("--profile", metavar="NAME=VALUE", help="select a profile value instead of its default")
    recipe.add_argument("--slurm-accounting-mode", help="Slurm accounting for slurm recipes: disabled (default), "
                        "customer-managed or aicr-provided")
    recipe.add_argument("-o", "--output", metavar="FILE", help="write the recipe to FILE (atomically)")
    recipe.add_argument("--format", choices=("yaml", "json"), help="output format (default: yaml)")
    recipe_commands = recipe.add_subparsers(dest="recipe_command", metavar="list", parser_class=_Parser)
    listing = recipe_commands.add_parser("list", help="list the leaf overlays of the catalog")
    _catalog_option(listing, dest="list_catalog")
    listing.add_argument("--format", dest="list_format", choices=("table", "json"), default="table",
                         help="output format (default: table)")

    bundle = commands.add_parser("bundle", help="render a recipe into a deployer bundle folder")
    bundle.add_argument("--recipe", required=True, metavar="FILE", help="RecipeResult file (aicr-gen's or AICR's)")
    bundle.add_argument("--deployer", required=True, help="helm, argocd, argocd-helm, flux or helmfile")
    bundle.add_argument("--output", "-o", metavar="DIR", help="bundle folder (written atomically)")
    bundle.add_argument("--build", action="store_true",
                        help="print the manifests a flux or argocd bundle applies instead of writing it")
    bundle.add_argument("--set", action="append", default=[], metavar="COMP:PATH=VALUE",
                        help="a value (typed like helm --set); COMP:enabled=false drops a component; "
                             "deployer:KEY=VALUE sets a deployer option")
    bundle.add_argument("--set-json", action="append", default=[], metavar="COMP:PATH=JSON",
                        help="a JSON value; maps are deep-merged, lists replaced")
    bundle.add_argument("--repo", metavar="URL", help="Git repository the bundle will live in (argocd, flux)")
    bundle.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")
    _catalog_option(bundle)

    verify = commands.add_parser("verify", help="check bundle folders against their checksums.txt",
                                 epilog=RESULTS_JSON, formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("folders", metavar="DIR", nargs="+", help="bundle folder holding a checksums.txt")
    verify.add_argument("--format", dest="verify_format", choices=("text", "json"), default="text",
                        help="text (default) or json (the shape below; file is DIR/checksums.txt, path the "
                             "bundle file)")

    cli_operate.add_commands(commands, _Parser)

    schema = commands.add_parser("schema", help="print the JSON Schema of an input kind")
    schema.add_argument("kind", choices=("recipe", "overlay", "mixin", "registry", "criteria", "clusterspec", "plan"),
                        help="the input kind whose schema to print")

    _spec_parsers(commands)
    _sync_parser(commands)
    _plan_parser(commands)
    _completion_parser(commands)
    return parser


def _run(args: argparse.Namespace) -> int:
    if args.command == "recipe":
        from aicr_gen.commands import recipe

        if args.recipe_command == "list":
            resolve_only = [*DIMENSIONS, "profile", "slurm_accounting_mode", "output", "format"]
            given = [name for name in resolve_only if getattr(args, name) is not None]
            given += ["nodes"] if args.nodes else []
            if given:
                flag = given[0].replace("_", "-")
                raise InvalidInputError(f"recipe list takes only --catalog and --format (after 'list'); drop --{flag}")
            return recipe.list_leaves(args.catalog + args.list_catalog, args.list_format)
        criteria = {dim: getattr(args, dim) for dim in DIMENSIONS}
        return recipe.resolve_command(args.catalog, criteria, args.output, args.format or "yaml",
                                      nodes=args.nodes, profile=args.profile,
                                      accounting_mode=args.slurm_accounting_mode)
    if args.command == "bundle":
        from aicr_gen.commands.bundle import bundle_command

        return bundle_command(args.recipe, args.deployer, args.output, sets=args.set, set_jsons=args.set_json,
                              repo=args.repo, folders=args.catalog, force=args.force, build_only=args.build)
    if args.command == "verify":
        from aicr_gen.commands.verify import verify_command

        return verify_command(args.folders, args.verify_format)
    module = cli_operate.module_for(args)
    if module is not None:
        import importlib

        command: Any = importlib.import_module(f"aicr_gen.commands.{module}")
        code: int = command.run(args)
        return code
    if args.command == "spec":
        from aicr_gen.commands import spec

        return spec.init_command(args.catalog, {dim: getattr(args, dim) for dim in DIMENSIONS}, args.deployer,
                                 args.output, nodes=args.nodes, repo_url=args.repo_url)
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
    if args.command == "completion":
        from aicr_gen.commands import completion

        return completion.run(args.shell)
    if args.command == "schema":
        from aicr_gen.commands import schema

        return schema.print_schema(args.kind)
    build_parser().print_help()
    return INVALID


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``aicr-gen`` console script."""
    given = list(sys.argv[1:] if argv is None else argv)
    if given == ["--version"]:  # the pre-commit hooks' start-up check: skip building the whole parser
        sys.stdout.write(f"aicr-gen {__version__}\n")
        return 0
    args = build_parser().parse_args(given)
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


if __name__ == "__main__":
    sys.exit(main())
