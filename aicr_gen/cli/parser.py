"""The argparse tree: every subcommand's arguments (parsing only; ``cli.py`` dispatches). The certify/operate
commands' arguments are in ``cli_operate.py``."""

from __future__ import annotations

import argparse
import os
import sys

from aicr_gen import __version__
from aicr_gen.catalog.vocabulary import API_VERSION_PROFILED, DIMENSIONS, GENERATIONS
from aicr_gen.cli import operate as cli_operate
from aicr_gen.errors import INVALID

TYPE_CHECKING = False
if TYPE_CHECKING:  # typing costs ~6 ms to import, as much as a quick command's own work
    from collections.abc import Callable
    from typing import Any

RESULTS_JSON = """\
--format json prints one object (a stable shape; exit codes as for text):
  {"ok": BOOL, "files": [{"file": PATH, "ok": BOOL,
     "errors":   [{"file": PATH, "line": INT|null, "path": FIELD|null, "message": TEXT, "policy": NAME|null}],
     "warnings": [... the same ...]}]}
"""


def _terminal_width() -> int:
    """The columns argparse wraps help to, as ``shutil.get_terminal_size`` finds them ($COLUMNS, else the
    terminal of stdout, else 80): argparse imports shutil for it, with bz2 and lzma (~4 ms), in every formatter,
    and it makes one per add_argument."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as one line and exit code 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(INVALID, f"{self.prog}: error: {message}; see '{self.prog} --help'\n")

    def _get_formatter(self) -> argparse.HelpFormatter:
        return self.formatter_class(prog=self.prog, width=_terminal_width())  # type: ignore[call-arg]

    def add_subparsers(self, **kwargs: Any) -> Any:
        """Subcommands named after this parser's prog: argparse would lay out a usage line to find it (its
        parsers have no positional arguments before the subcommand)."""
        kwargs.setdefault("prog", self.prog)
        return super().add_subparsers(**kwargs)


def _catalog_option(parser: argparse.ArgumentParser, dest: str = "catalog") -> None:
    parser.add_argument(
        "--catalog", dest=dest, action="append", default=[], metavar="DIR",
        help="catalog folder laid out like AICR's recipes/ (repeatable, later wins; replaces the embedded one)")


def _recipe_parser(commands: Any) -> None:
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
    recipe.add_argument("--criteria", metavar="FILE", help="a RecipeCriteria file; flags override its values")
    recipe.add_argument("--api-version", choices=GENERATIONS, help=f"headers to write: {GENERATIONS[0]} (default; "
                        f"AICR >= 0.22, profiled recipes {API_VERSION_PROFILED}) or {GENERATIONS[1]} (AICR <= 0.21)")
    recipe_commands = recipe.add_subparsers(dest="recipe_command", metavar="list", parser_class=_Parser)
    listing = recipe_commands.add_parser("list", help="list the leaf overlays of the catalog")
    _catalog_option(listing, dest="list_catalog")
    listing.add_argument("--format", dest="list_format", choices=("table", "json"), default="table",
                         help="output format (default: table)")


def _bundle_parser(commands: Any) -> None:
    bundle = commands.add_parser("bundle", help="render a recipe into a deployer bundle folder")
    bundle.add_argument("--recipe", "-r", metavar="FILE",
                        help="RecipeResult file (aicr-gen's or AICR's), cm://NAMESPACE/NAME (a ConfigMap) or an "
                             "https:// URL")
    bundle.add_argument("--kubeconfig", "-k", metavar="FILE", help="kubeconfig for a cm:// recipe")
    bundle.add_argument("--context", metavar="NAME", help="kubeconfig context for a cm:// recipe")
    bundle.add_argument("--deployer", "-d", help="helm, argocd, argocd-helm, flux or helmfile (default: helm)")
    bundle.add_argument("--config", metavar="FILE",
                        help="AICR's AICRConfig file: spec.bundle gives the defaults of these flags")
    bundle.add_argument("--output", "-o", metavar="DIR",
                        help="bundle folder (written atomically), or oci://REGISTRY/REPOSITORY[:TAG] to publish it "
                             "(tag: aicr-gen's version)")
    bundle.add_argument("--image-refs", metavar="FILE", help="write the published manifest digest here (OCI output)")
    bundle.add_argument("--plain-http", action="store_true", help="publish over plain HTTP instead of HTTPS")
    bundle.add_argument("--insecure-tls", action="store_true",
                        help="publish without checking the registry's TLS certificate")
    bundle.add_argument("--flux-oci-source-name", metavar="NAME",
                        help="the OCIRepository a published flux bundle is pulled from (default aicr-bundle)")
    bundle.add_argument("--build", action="store_true",
                        help="print the manifests a flux or argocd bundle applies instead of writing it")
    bundle.add_argument("--set", action="append", default=[], metavar="COMP:PATH=VALUE",
                        help="a value (typed as AICR types --set); COMP:enabled=false drops a component; "
                             "deployer:KEY=VALUE sets a deployer option")
    bundle.add_argument("--set-json", action="append", default=[], metavar="COMP:PATH=JSON",
                        help="a JSON value; maps are deep-merged (null deletes a key), lists replaced")
    bundle.add_argument("--set-file", action="append", default=[], metavar="COMP:PATH=FILE",
                        help="a YAML or JSON value read from FILE, merged as --set-json")
    bundle.add_argument("--repo", metavar="URL", help="Git repository the bundle will live in (argocd, flux)")
    bundle.add_argument("--app-name", metavar="NAME",
                        help="Argo CD parent Application (default: nvidia-stack for argocd, aicr-stack for "
                             "argocd-helm)")
    bundle.add_argument("--flux-namespace", metavar="NS", help="namespace of the Flux objects (default flux-system)")
    bundle.add_argument("--dynamic", action="append", default=[], metavar="COMP:PATH",
                        help="a value path left to install time: moved out of the values into cluster-values.yaml "
                             "(helm, helmfile), a ConfigMap (flux) or the chart's values (argocd-helm)")
    bundle.add_argument("--readiness-hooks", action="store_true",
                        help="after each component with a readiness test (components/NAME/readiness.yaml), a gate "
                             "chart whose Job blocks the deploy until the component is ready (helm, argocd, "
                             "argocd-helm)")
    bundle.add_argument("--readiness-image", metavar="IMAGE",
                        help="the gate image (default: ghcr.io/nvidia/aicr-gate tagged with the AICR version the "
                             "recipe records, as AICR picks it)")
    bundle.add_argument("--vendor-charts", action="store_true",
                        help="pull each upstream Helm chart into the bundle with `helm pull` (helm on PATH): each "
                             "component becomes a local chart wrapping it, provenance.yaml records what came from "
                             "where; nothing is pulled from a chart repository at deploy time")
    bundle.add_argument("--serial", action="store_true",
                        help="install the components one at a time in deployment order, none in parallel (argocd "
                             "waves, flux dependsOn and helmfile levels become one chain)")
    bundle.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")
    _catalog_option(bundle)
    _scheduling_options(bundle)


def _scheduling_options(parser: Any) -> None:
    """AICR's bundle-time scheduling flags, with its names and defaults."""
    group = parser.add_argument_group("scheduling (written into each component's registry paths)")
    for kind in ("system", "accelerated"):
        group.add_argument(f"--{kind}-node-selector", action="append", default=[], metavar="KEY=VALUE",
                           help=f"node selector of {kind} pods (repeatable)")
        group.add_argument(f"--{kind}-node-toleration", action="append", default=[], metavar="KEY=VALUE:EFFECT",
                           help=f"toleration of {kind} pods, key=value:effect or key:effect (repeatable; default: "
                                "one wildcard, operator Exists)")
    group.add_argument("--workload-gate", default="", metavar="KEY=VALUE:EFFECT",
                       help="taint nodewright-operator requires on new nodes (key=value:effect or key:effect)")
    group.add_argument("--workload-selector", action="append", default=[], metavar="KEY=VALUE",
                       help="label selector of the training pods nodewright-customizations must not evict")
    group.add_argument("--nodes", type=int, default=0, metavar="N", help="estimated GPU node count (0: unset)")
    group.add_argument("--storage-class", default="", metavar="NAME",
                       help="StorageClass written into the registry's storageClassPaths")
    group.add_argument("--shared-storage-class", default="", metavar="NAME",
                       help="RWX StorageClass written into the registry's sharedStorageClassPaths")


def _verify_parser(commands: Any) -> None:
    verify = commands.add_parser("verify", help="check bundle folders against their checksums.txt",
                                 epilog=RESULTS_JSON, formatter_class=argparse.RawDescriptionHelpFormatter)
    verify.add_argument("folders", metavar="DIR", nargs="+", help="bundle folder holding a checksums.txt")
    verify.add_argument("--format", dest="verify_format", choices=("text", "json"), default="text",
                        help="text (default) or json (the shape below; file is DIR/checksums.txt, path the "
                             "bundle file)")


def _schema_parser(commands: Any) -> None:
    schema = commands.add_parser("schema", help="print the JSON Schema of an input kind")
    schema.add_argument("kind", choices=("recipe", "overlay", "mixin", "registry", "criteria", "clusterspec", "fleet",
                                         "plan", "mirrorlock"),
                        help="the input kind whose schema to print")


def _spec_parser(commands: Any) -> None:
    spec = commands.add_parser("spec", help="write a ClusterSpec, or show one layered over its fleet")
    spec_commands = spec.add_subparsers(dest="spec_command", metavar="init|show", parser_class=_Parser,
                                        required=True)
    init = spec_commands.add_parser("init", help="write a commented starting ClusterSpec for covered criteria")
    for dim in DIMENSIONS:
        init.add_argument(f"--{dim}", default=None, help=f"{dim} criterion (or 'any')")
    init.add_argument("--nodes", type=int, default=0, help="advisory GPU node count")
    init.add_argument("--deployer", action="append", default=[], metavar="D",
                      help="bundle deployer: helm, argocd, argocd-helm, flux or helmfile (repeatable; default argocd)")
    _catalog_option(init)
    init.add_argument("--repo-url", metavar="URL", help="Git repository the bundle is committed to, which Argo CD and "
                      "Flux pull (default: a placeholder that lint and sync refuse until you replace it)")
    init.add_argument("--name", metavar="NAME", help="metadata.name, a DNS label naming the cluster (default: from the "
                      "criteria, e.g. h100-eks-ubuntu-training)")
    init.add_argument("--path", metavar="FOLDER", help="spec.repo.path, the cluster's folder in the repository "
                      "(default: clusters/NAME)")
    init.add_argument("-o", "--output", metavar="FILE", help="write the spec to FILE (atomically; default stdout); an "
                      "existing FILE is kept unless --force")
    init.add_argument("--force", action="store_true", help="overwrite an existing -o FILE")
    init.add_argument("--extends", metavar="FLEET", help="write a short spec extending the Fleet file FLEET (its "
                      "criteria, name and repo.path; everything else from the fleet)")
    show = spec_commands.add_parser(
        "show", help="print the effective spec (layered over its fleet) with where each value comes from",
        description="Print the spec as sync, plan and lint see it: the Fleet its spec.extends names layered under "
        "it (maps merge, the spec's lists and scalars replace the fleet's, a null removes the fleet's value; paths "
        "from the fleet rebased onto the spec's folder), validated, each value with the file and line it comes "
        "from.", formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog='--format json prints {"spec": THE EFFECTIVE DOCUMENT, "origins": {FIELD: "FILE:LINE"}, '
               '"rebased": {FIELD: "PATH AS WRITTEN IN THE FLEET"}}\n(one origin per scalar and per empty map '
               'or list; FIELD as in error messages, e.g. spec.catalogs[0])')
    show.add_argument("spec_file", metavar="SPEC", help="ClusterSpec file")
    show.add_argument("--format", dest="show_format", choices=("yaml", "json"), default="yaml",
                      help="yaml (default: origins in comments) or json (the shape below)")
    show.add_argument("-o", "--output", dest="show_output", metavar="FILE",
                      help="write to FILE (atomically; default stdout)")


def _policy_parser(commands: Any) -> None:
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


def _lint_parser(commands: Any) -> None:
    lint = commands.add_parser("lint", help="check ClusterSpecs and Fleets as sync would, without Git (pre-commit "
                               "hook)",
                               description="Check each ClusterSpec: schema and semantics, layered over its fleet, the "
                               "files it reads, its recipe, its policies and its rendered tree; everything sync "
                               "refuses about a spec. A Fleet file is checked alone (schema and the paths it names); "
                               "its values are checked in each spec that extends it.",
                               epilog=RESULTS_JSON, formatter_class=argparse.RawDescriptionHelpFormatter)
    lint.add_argument("spec_files", nargs="+", metavar="SPEC", help="ClusterSpec or Fleet files")
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
    sync = commands.add_parser("sync", help="render ClusterSpecs' trees and commit them to a Git repository as one "
                               "commit")
    sync.add_argument("spec_files", metavar="SPEC", nargs="*", help="ClusterSpec files or glob patterns (one commit "
                      "for all; nothing is written unless every spec renders)")
    sync.add_argument("--repo", metavar="DIR", help="work tree of the Git repository (default: the one the current "
                      "folder is in)")
    sync.add_argument("--path", metavar="P", help="managed folder in the repository (default: spec.repo.path)")
    sync.add_argument("--branch", metavar="B", help="commit on branch B (created or updated from HEAD) without "
                      "touching the checkout, e.g. for a pull request")
    sync.add_argument("--message", metavar="M", help="commit message (the trailers are added)")
    sync.add_argument("--check", action="store_true", help="exit 1, listing the stale files, when HEAD differs")
    sync.add_argument("--staged", action="store_true", help="with --check: compare with the index (what is about "
                      "to be committed, as in a pre-commit hook) instead of HEAD")
    sync.add_argument("--force", action="store_true", help="overwrite uncommitted changes under the path (each "
                      "file it replaces is listed on stderr)")
    sync.add_argument("--push", action="store_true", help="push the branch to origin after committing")
    sync.add_argument("--repair", action="store_true", help="finish a sync that was interrupted (killed, out of "
                      "space); without SPEC only that (every sync does it first)")
    sync.add_argument("--jobs", "-j", type=int, metavar="N", help="render in N processes (default: one per CPU; "
                      "the commit is the same whatever N)")


def _plan_parser(commands: Any) -> None:
    plan = commands.add_parser("plan", help="what merging would change in each cluster: specs rendered as sync "
                               "would, compared with the tree committed at a base (writes nothing to the repository)")
    plan.add_argument("spec_files", metavar="SPEC", nargs="+", help="ClusterSpec files or glob patterns")
    plan.add_argument("--repo", metavar="DIR", help="work tree of the Git repository (default: the one the current "
                      "folder is in)")
    plan.add_argument("--base", default="HEAD", metavar="REF",
                      help="commit to compare with, e.g. origin/main or a pull request's base (default: HEAD)")
    plan.add_argument("--format", dest="plan_format", choices=("markdown", "text", "json"), default="markdown",
                      help="markdown (one GitHub comment, under 65,000 characters), text (as sync's commit message "
                           "words it) or json (aicr-gen schema plan); default: markdown")
    plan.add_argument("-o", "--output", metavar="FILE", help="write the plan to FILE (atomically; default stdout)")
    plan.add_argument("--fail-on", choices=("policy",), help="policy: exit 1 when a spec has a policy error")
    plan.add_argument("--jobs", "-j", type=int, metavar="N", help="render in N processes (default: one per CPU)")


def _fleet_parser(commands: Any) -> None:
    fleet = commands.add_parser("fleet", help="render the entry points of many clusters in one repository")
    fleet_commands = fleet.add_subparsers(dest="fleet_command", metavar="COMMAND", required=True)
    entry = fleet_commands.add_parser(
        "entry", help="write the Argo CD ApplicationSet and the Flux entry Kustomizations of the clusters",
        description="Render, from the ClusterSpecs, argocd/applicationset.yaml (one list element per cluster with a "
                    "shared Argo CD, RollingSync steps with spec.argocd.rollout) and flux/clusters/<name>/ (the "
                    "Kustomization applying each cluster's flux tree; a spoke's in its hub's folder, with its "
                    "kubeconfig Secret).")
    entry.add_argument("spec_files", metavar="SPEC", nargs="+", help="ClusterSpec files or glob patterns")
    entry.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write, e.g. fleet")
    entry.add_argument("--name", default="aicr-fleet", metavar="NAME", help="ApplicationSet name (default: "
                       "aicr-fleet)")
    entry.add_argument("--force", action="store_true", help="replace the entry points written there before")
    entry.add_argument("--check", action="store_true", help="write nothing; exit 1 listing the files of DIR that "
                       "differ from the entry points the specs render (as sync --check)")


def _mirror_parser(commands: Any) -> None:
    mirror = commands.add_parser("mirror", help="air-gapped sites: the charts and images a tree pulls")
    mirror_commands = mirror.add_subparsers(dest="mirror_command", metavar="list|lock|verify", parser_class=_Parser,
                                            required=True)
    listing = mirror_commands.add_parser(
        "list", help="every chart and image the rendered trees reference, with where each comes from",
        description="List every Helm chart and container image the tree of each ClusterSpec (or the bundle of each "
                    "RecipeResult) makes the cluster pull: chart sources of every deployer, images of the values, "
                    "manifests and CronJobs, the NVCRE workload images of the certification categories, and with "
                    "--charts the charts' own default images. With spec.mirror, each entry shows where it goes on "
                    "the site mirror.")
    listing.add_argument("inputs", nargs="+", metavar="SPEC|RECIPE", help="ClusterSpec or RecipeResult files")
    listing.add_argument("--format", dest="mirror_format", choices=("text", "json", "hauler", "zarf"),
                         default="text", help="text (default), json, hauler (Images and Charts manifests for hauler "
                         "store sync) or zarf (a zarf.yaml package config)")
    listing.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically; default stdout)")
    listing.add_argument("--charts", metavar="DIR", help="folder of pulled or vendored charts (NAME-VERSION.tgz or "
                         "chart folders): their default images are listed too (helm template)")
    listing.add_argument("--deployer", default="helm", help="deployer a RecipeResult is rendered with (default: helm)")
    listing.add_argument("--name", default="aicr-mirror", help="name of the Hauler or Zarf manifests "
                         "(default: aicr-mirror)")
    _catalog_option(listing)
    locking = mirror_commands.add_parser(
        "lock", help="resolve each mirrored chart and image to its digest and write SPEC.lock.yaml beside the spec",
        description="Ask the site mirror's registry (the OCI distribution API) for the digest of every chart and "
                    "image the spec's tree pulls from spec.mirror, and write them to SPEC.lock.yaml beside the spec "
                    "(review it in the pull request; sync then pins them). Exit 1 when a reference is not on the "
                    "mirror (nothing written for that spec), 2 for bad input, 3 when the registry is unreachable.")
    verifying = mirror_commands.add_parser(
        "verify", help="check that the registry still has every digest of each spec's mirror lock",
        description="Exit 1, naming each, when a locked digest is gone from the registry, a tag now resolves to "
                    "another digest, or the tree pulls a mirrored reference the lock lacks; 3 when the registry is "
                    "unreachable.")
    for sub in (locking, verifying):
        sub.add_argument("spec_files", nargs="+", metavar="SPEC", help="ClusterSpec files with spec.mirror")
        sub.add_argument("--registry", action="append", metavar="[HOST=]URL",
                         help="reach the mirror registry HOST (default: every host) at URL, e.g. "
                         "http://127.0.0.1:5000 (default: https://HOST, http:// for a loopback host); repeatable")
        sub.add_argument("--registry-config", metavar="FILE", help="docker config.json with the registry "
                         "credentials (default: $DOCKER_CONFIG/config.json, else ~/.docker/config.json)")
        sub.add_argument("--username", help="registry user name (or AICR_GEN_REGISTRY_USERNAME)")
        sub.add_argument("--password-stdin", action="store_true",
                         help="read the password for --username from stdin (or AICR_GEN_REGISTRY_PASSWORD)")
        sub.add_argument("--ca-file", metavar="FILE", help="CA certificates (PEM) the registry's TLS is checked with")
        sub.add_argument("--insecure", action="store_true", help="plain HTTP to every registry host (loopback "
                         "hosts always get it)")


# command -> the function adding its parser, in the order --help lists them
PARSERS: dict[str, Callable[[Any], None]] = {
    "recipe": _recipe_parser, "bundle": _bundle_parser, "verify": _verify_parser, **cli_operate.PARSERS,
    "schema": _schema_parser, "spec": _spec_parser, "policy": _policy_parser, "lint": _lint_parser,
    "sync": _sync_parser, "plan": _plan_parser, "fleet": _fleet_parser, "mirror": _mirror_parser,
    "completion": _completion_parser}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole argparse tree (what ``--help``, ``aicr-gen completion`` and the help tests walk), or with
    ``command`` the tree holding only that subcommand: a run parses one subcommand, and building every
    subcommand's parser costs more than the run of a quick command."""
    parser = _Parser(prog="aicr-gen", description="Reproducible, certified and watched GPU Kubernetes clusters, "
                     "through Git: AICR recipes and bundles, NVCRE certification, NVSentinel operation.")
    parser.add_argument("--version", action="version", version=f"aicr-gen {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    for name, add in PARSERS.items():
        if command in (None, name):
            add(commands)
    return parser
