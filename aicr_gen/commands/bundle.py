"""``aicr-gen bundle``: render a recipe for one deployer and write the bundle folder atomically."""

from __future__ import annotations

import sys

from aicr_gen.errors import OK, InvalidInputError
from aicr_gen.render.prepare import bundle_options, plan_for

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NamedTuple
else:
    from aicr_gen.records import NamedTuple

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
    from aicr_gen.commands import bundle_publish
    from aicr_gen.edges.output import write_bundle
    from aicr_gen.publish.target import is_oci
    from aicr_gen.render import render_bundle
    from aicr_gen.spec.overrides import parse
    publishing = publishing or Publishing()
    bundle_publish.check_flags(output, deployer, publishing.image_refs, publishing.flux_oci_source)
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
        options, target = bundle_publish.published_options(options, output, deployer, repo,
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
        return bundle_publish.publish(rendered, deployer, target, publishing.image_refs,
                                      publishing.client(target))
    written = write_bundle(rendered, output, force)
    sys.stderr.write(f"aicr-gen: wrote {deployer} bundle of {len(plan.units)} units to {written}\n")
    return OK
