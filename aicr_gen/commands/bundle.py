"""``aicr-gen bundle``: render a recipe for one deployer and write the bundle folder atomically."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

def arguments(parser: argparse.ArgumentParser) -> None:
    """``bundle``: the recipe, the deployer, where to write or publish, values, and AICR's scheduling flags."""
    from aicr_gen.commands.recipe import catalog_option

    parser.add_argument("--recipe", "-r", metavar="FILE",
                        help="RecipeResult file (aicr-gen's or AICR's), cm://NAMESPACE/NAME (a ConfigMap) or an "
                             "https:// URL")
    parser.add_argument("--kubeconfig", "-k", metavar="FILE", help="kubeconfig for a cm:// recipe")
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context for a cm:// recipe")
    parser.add_argument("--deployer", "-d", help="helm, argocd, argocd-helm, flux or helmfile (default: helm)")
    parser.add_argument("--config", metavar="FILE",
                        help="AICR's AICRConfig file: spec.bundle gives the defaults of these flags")
    parser.add_argument("--output", "-o", metavar="DIR",
                        help="bundle folder (written atomically), or oci://REGISTRY/REPOSITORY[:TAG] to publish it "
                             "(tag: aicr-gen's version)")
    parser.add_argument("--image-refs", metavar="FILE", help="write the published manifest digest here (OCI output)")
    parser.add_argument("--plain-http", action="store_true", help="publish over plain HTTP instead of HTTPS")
    parser.add_argument("--insecure-tls", action="store_true",
                        help="publish without checking the registry's TLS certificate")
    parser.add_argument("--flux-oci-source-name", metavar="NAME",
                        help="the OCIRepository a published flux bundle is pulled from (default aicr-bundle)")
    parser.add_argument("--build", action="store_true",
                        help="print the manifests a flux or argocd bundle applies instead of writing it")
    parser.add_argument("--set", action="append", default=[], metavar="COMP:PATH=VALUE",
                        help="a value (typed as AICR types --set); COMP:enabled=false drops a component; "
                             "deployer:KEY=VALUE sets a deployer option")
    parser.add_argument("--set-json", action="append", default=[], metavar="COMP:PATH=JSON",
                        help="a JSON value; maps are deep-merged (null deletes a key), lists replaced")
    parser.add_argument("--set-file", action="append", default=[], metavar="COMP:PATH=FILE",
                        help="a YAML or JSON value read from FILE, merged as --set-json")
    parser.add_argument("--repo", metavar="URL", help="Git repository the bundle will live in (argocd, flux)")
    parser.add_argument("--app-name", metavar="NAME",
                        help="Argo CD parent Application (default: nvidia-stack for argocd, aicr-stack for "
                             "argocd-helm)")
    parser.add_argument("--flux-namespace", metavar="NS", help="namespace of the Flux objects (default flux-system)")
    parser.add_argument("--dynamic", action="append", default=[], metavar="COMP:PATH",
                        help="a value path left to install time: moved out of the values into cluster-values.yaml "
                             "(helm, helmfile), a ConfigMap (flux) or the chart's values (argocd-helm)")
    parser.add_argument("--readiness-hooks", action="store_true",
                        help="after each component with a readiness test (components/NAME/readiness.yaml), a gate "
                             "chart whose Job blocks the deploy until the component is ready (helm, argocd, "
                             "argocd-helm)")
    parser.add_argument("--readiness-image", metavar="IMAGE",
                        help="the gate image (default: ghcr.io/nvidia/aicr-gate tagged with the AICR version the "
                             "recipe records, as AICR picks it)")
    parser.add_argument("--vendor-charts", action="store_true",
                        help="pull each upstream Helm chart into the bundle with `helm pull` (helm on PATH): each "
                             "component becomes a local chart wrapping it, provenance.yaml records what came from "
                             "where; nothing is pulled from a chart repository at deploy time")
    parser.add_argument("--serial", action="store_true",
                        help="install the components one at a time in deployment order, none in parallel (argocd "
                             "waves, flux dependsOn and helmfile levels become one chain)")
    parser.add_argument("--force", action="store_true", help="replace the files of a previous bundle in DIR")
    catalog_option(parser)
    _scheduling_arguments(parser)


def _scheduling_arguments(parser: argparse.ArgumentParser) -> None:
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


def run(args: argparse.Namespace) -> int:
    """Render (or publish, or ``--build``) the bundle the flags, over ``--config``'s, ask for."""
    if args.config is not None:
        from aicr_gen.commands import _bundle_config

        args = _bundle_config.apply(args)
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


def _readiness(args: argparse.Namespace) -> str | None:
    """The gate image of ``bundle --readiness-hooks`` ('' for AICR's), or None without gates."""
    if args.readiness_image and not args.readiness_hooks:
        raise InvalidInputError("--readiness-image needs --readiness-hooks")
    return (args.readiness_image or "") if args.readiness_hooks else None


def _print_build(bundle: Any, deployer: str) -> None:
    """What a flux or argocd bundle applies: ``kustomize build`` of a flux bundle, or the Applications."""
    import tempfile
    from pathlib import Path

    from aicr_gen.edges import kustomize
    if deployer == "argocd":
        documents = [bundle[path].decode() for path in bundle if path.endswith(".yaml") and (
            path == "app-of-apps.yaml" or path.endswith("/application.yaml"))]
        sys.stdout.write("---\n".join(documents))
        return
    with tempfile.TemporaryDirectory(prefix="aicr-gen-build-") as scratch:
        for path, data in bundle.items():
            target = Path(scratch) / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        sys.stdout.write(kustomize.build(scratch, "--build").decode())


def scheduling_from(args: Any) -> Any:
    """The ``Scheduling`` of ``aicr-gen bundle``'s scheduling flags."""
    from aicr_gen.spec.scheduling import Scheduling, parse_selector, parse_taint, parse_tolerations
    if not 0 <= args.nodes <= 1_000_000:
        raise InvalidInputError(f"--nodes {args.nodes}: give the estimated GPU node count, 0 to 1000000")
    return Scheduling(
        system_node_selector=parse_selector("--system-node-selector", args.system_node_selector),
        system_tolerations=parse_tolerations("--system-node-toleration", args.system_node_toleration),
        accelerated_node_selector=parse_selector("--accelerated-node-selector", args.accelerated_node_selector),
        accelerated_tolerations=parse_tolerations("--accelerated-node-toleration", args.accelerated_node_toleration),
        workload_gate=parse_taint("--workload-gate", args.workload_gate),
        workload_selector=parse_selector("--workload-selector", args.workload_selector),
        nodes=args.nodes, storage_class=args.storage_class, shared_storage_class=args.shared_storage_class)


def report_notes(plan: Any) -> None:
    """Print what bundling reports without refusing, one line each on stderr."""
    for severity, message in plan.notes:
        sys.stderr.write(f"aicr-gen: {severity}: {message}\n")


class Publishing(NamedTuple):
    """How ``bundle --output oci://...`` publishes: AICR's ``--image-refs``, ``--plain-http``, ``--insecure-tls``
    and ``--flux-oci-source-name``."""

    image_refs: str | None = None
    plain_http: bool = False
    insecure_tls: bool = False
    flux_oci_source: str | None = None

    def client(self, target: Any) -> Any:
        """The registry client that pushes to ``target``, with the docker config's (or the environment's)
        credentials."""
        from aicr_gen.publish.push import client

        return client(target, plain_http=self.plain_http, insecure_tls=self.insecure_tls)


def bundle_command(recipe_path: str, deployer: str, output: str | None, *, sets: list[str], set_jsons: list[str],
                   repo: str | None, folders: list[str], force: bool, build_only: bool = False,
                   set_files: list[str] | None = None, scheduling: Any = None, app_name: str | None = None,
                   flux_namespace: str | None = None, serial: bool = False, dynamic: list[str] | None = None,
                   readiness: str | None = None, vendor_charts: bool = False, kubeconfig: str | None = None,
                   context: str | None = None, publishing: Publishing | None = None) -> int:
    """Render and write one bundle (or, with ``build_only``, print what it applies; with an ``oci://`` output,
    publish it); ``vendor_charts``: with the upstream charts pulled into it."""
    if (output is None) != build_only:
        raise InvalidInputError("bundle needs exactly one of --output DIR or --build")
    if build_only and deployer not in ("argocd", "flux"):
        raise InvalidInputError(f"--build shows what a flux or argocd bundle applies, not a {deployer} bundle")
    from aicr_gen.catalog.load import open_catalog
    from aicr_gen.commands import _bundle_publish
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.publish.target import is_oci
    from aicr_gen.render import render_bundle
    from aicr_gen.render.prepare import bundle_options, plan_for
    from aicr_gen.spec.overrides import parse
    publishing = publishing or Publishing()
    _bundle_publish.check_flags(output, deployer, publishing.image_refs, publishing.flux_oci_source)
    if repo is None and deployer in ("argocd", "flux") and not is_oci(output):
        raise InvalidInputError(
            f"--deployer {deployer} needs --repo URL: the Git repository this bundle will be committed to, which "
            "Argo CD or Flux reads it from")
    from aicr_gen.catalog.recipe_file import load_entry

    loaded = load_entry(recipe_path, kubeconfig, context)
    recipe = loaded["recipe"]
    deployer_sets = [text for text in sets if text.startswith("deployer:")]
    deployer_sets += [f"deployer:appName={app_name}"] if app_name is not None else []
    deployer_sets += [f"deployer:fluxNamespace={flux_namespace}"] if flux_namespace is not None else []
    options = bundle_options(deployer_sets, repo, deployer)
    target = None
    if output is not None and is_oci(output):
        options, target = _bundle_publish.published_options(options, output, deployer, repo,
                                                            deployer_sets=deployer_sets,
                                                            flux_oci_source=publishing.flux_oci_source)
    overrides = [parse("--set", text) for text in sets if not text.startswith("deployer:")]
    if set_files:
        from aicr_gen.edges.inputs import read_input

        overrides += [parse("--set-file", text, lambda path: read_input(path, "--set-file")) for text in set_files]
    overrides += [parse("--set-json", text) for text in set_jsons]
    catalog = open_catalog(folders, registry_only=True)
    if dynamic and deployer == "argocd":
        raise InvalidInputError("--dynamic: the argocd deployer has no install-time values; use --deployer "
                                "argocd-helm (values at helm install) or drop --dynamic")
    plan = plan_for(recipe, catalog, overrides, deployer, scheduling, serial=serial, dynamic=dynamic,
                    readiness=readiness)
    if vendor_charts:
        from aicr_gen.mirror.pull import vendored

        plan = vendored(plan)
    rendered = render_bundle(plan, deployer, options, recipe_yaml=loaded["yaml"])
    report_notes(plan)
    if output is None:
        _print_build(rendered, deployer)
        return OK
    if target is not None:
        return _bundle_publish.publish(rendered, deployer, target, publishing.image_refs,
                                       publishing.client(target))
    written = write_bundle(rendered, output, force)
    sys.stderr.write(f"aicr-gen: wrote {deployer} bundle of {len(plan.units)} units to {written}\n")
    return OK
