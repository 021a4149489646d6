"""``aicr-gen mirror list``: every chart and image the trees of ClusterSpecs (or bundles of recipes) make the
cluster pull, with where each comes from and, with spec.mirror, where it goes; ``mirror lock``: their digests
on the site mirror, written beside each spec; ``mirror verify``: the lock still holds on the registry."""

from __future__ import annotations

import argparse

from aicr_gen.errors import OK, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from aicr_gen.mirror.inventory import Inventory
    from aicr_gen.mirror.refs import Found

FORMATS = ("text", "json", "hauler", "zarf")


def arguments(parser: argparse.ArgumentParser) -> None:
    """``mirror list``, ``mirror lock`` and ``mirror verify`` (the last two reach the registry alike)."""
    from aicr_gen.commands.recipe import catalog_option

    subcommands = parser.add_subparsers(dest="mirror_command", metavar="list|lock|verify", required=True)
    listing = subcommands.add_parser(
        "list", help="every chart and image the rendered trees reference, with where each comes from",
        description="List every Helm chart and container image the tree of each ClusterSpec (or the bundle of each "
                    "RecipeResult) makes the cluster pull: chart sources of every deployer, images of the values, "
                    "manifests and CronJobs, the NVCRE workload images of the certification categories, and with "
                    "--charts the charts' own default images. With spec.mirror, each entry shows where it goes on "
                    "the site mirror.")
    listing.add_argument("inputs", nargs="+", metavar="SPEC|RECIPE", help="ClusterSpec or RecipeResult files")
    listing.add_argument("--format", dest="mirror_format", choices=FORMATS,
                         default="text", help="text (default), json, hauler (Images and Charts manifests for hauler "
                         "store sync) or zarf (a zarf.yaml package config)")
    listing.add_argument("-o", "--output", metavar="FILE", help="write to FILE (atomically; default stdout)")
    listing.add_argument("--charts", metavar="DIR", help="folder of pulled or vendored charts (NAME-VERSION.tgz or "
                         "chart folders): their default images are listed too (helm template)")
    listing.add_argument("--deployer", default="helm", help="deployer a RecipeResult is rendered with (default: helm)")
    listing.add_argument("--name", default="aicr-mirror", help="name of the Hauler or Zarf manifests "
                         "(default: aicr-mirror)")
    catalog_option(listing)
    locking = subcommands.add_parser(
        "lock", help="resolve each mirrored chart and image to its digest and write SPEC.lock.yaml beside the spec",
        description="Ask the site mirror's registry (the OCI distribution API) for the digest of every chart and "
                    "image the spec's tree pulls from spec.mirror, and write them to SPEC.lock.yaml beside the spec "
                    "(review it in the pull request; sync then pins them). Exit 1 when a reference is not on the "
                    "mirror (nothing written for that spec), 2 for bad input, 3 when the registry is unreachable.")
    verifying = subcommands.add_parser(
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


def _kind(path: str) -> str:
    from aicr_gen.edges.inputs import read_input
    from aicr_gen.yaml import load_bytes

    data = load_bytes(read_input(path, "ClusterSpec or RecipeResult"), path).data
    kind = data.get("kind") if isinstance(data, dict) else None
    if kind not in ("ClusterSpec", "RecipeResult"):
        raise InvalidInputError(f"{path}: kind is {kind!r}; mirror list takes ClusterSpecs and RecipeResults")
    return str(kind)


def _spec_tree(path: str) -> tuple[dict[str, bytes], Any]:
    """The spec's tree as it renders without its mirror (what the mirror has to be filled from), and the spec."""
    from pathlib import Path

    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(path)
    upstream = cluster.model_copy(update={"spec": cluster.spec.model_copy(update={"mirror": None})})
    upstream._source = cluster.document
    return dict(render_tree(upstream, Path(path).resolve().parent)), cluster


def _recipe_tree(path: str, deployer: str, catalogs: list[str]) -> dict[str, bytes]:
    from aicr_gen.catalog.load import open_catalog
    from aicr_gen.catalog.recipe_file import load_recipe
    from aicr_gen.render import render_bundle
    from aicr_gen.render.prepare import bundle_options, plan_for

    recipe = load_recipe(path)
    plan = plan_for(recipe, open_catalog(catalogs, registry_only=True), [], deployer)
    return dict(render_bundle(plan, deployer, bundle_options([], None)))


def _prefixed(found: list[Found], label: str) -> list[Found]:
    from aicr_gen.mirror.refs import Origin

    return [item._replace(origin=Origin(f"{label}:{item.origin.file}", item.origin.field)) for item in found]


def collect(inputs: list[str], *, deployer: str = "helm", catalogs: list[str] | None = None,
            charts_dir: str | None = None) -> Inventory:
    """The inventory of every input (several inputs: each origin prefixed with its file)."""
    from pathlib import Path

    from aicr_gen.mirror import inventory
    from aicr_gen.mirror.refs import Chart, Origin, discover

    found: list[Found] = []
    extra: list[tuple[str, Origin]] = []
    mirrors: set[tuple[str | None, str | None]] = set()
    for path in inputs:
        label = path if len(inputs) > 1 else ""
        if _kind(path) == "ClusterSpec":
            tree, cluster = _spec_tree(path)
            criteria = cluster.spec.criteria
            site = cluster.spec.mirror
            mirrors.add((site.charts, site.images) if site is not None else (None, None))
            images = inventory.certification_images(tree, criteria.service, criteria.accelerator)
            extra += [(text, Origin(f"{label}:{origin.file}" if label else origin.file, origin.field))
                      for text, origin in images]
        else:
            tree = _recipe_tree(path, deployer, catalogs or [])
            mirrors.add((None, None))
        here = discover(tree)
        found += _prefixed(here, label) if label else here
    if len(mirrors) > 1:
        raise InvalidInputError("the inputs name different site mirrors (spec.mirror); list each site's specs "
                                "on their own")
    charts_mirror, images_mirror = next(iter(mirrors))
    if charts_mirror is not None:
        from aicr_gen.text.image_reference import chart_mirror

        charts_mirror = chart_mirror(charts_mirror)
    resolved: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    unresolved: dict[tuple[str, str, str], str] = {}
    if charts_dir is not None:
        from aicr_gen.mirror.chart_images import chart_images

        charts = sorted({item.ref for item in found if isinstance(item.ref, Chart)})
        rendered_by, missing = chart_images(Path(charts_dir), charts)
        for chart, rendered in rendered_by.items():
            resolved.setdefault(inventory.chart_key(chart), list(rendered))
        for chart, reason in missing.items():
            unresolved.setdefault(inventory.chart_key(chart), f"not resolved offline: {reason}")
        for key in resolved:
            unresolved.pop(key, None)
    return inventory.build(found, extra_images=extra, chart_images=resolved, unresolved=unresolved,
                           charts_mirror=charts_mirror, images_mirror=images_mirror)


def text_report(found: Inventory) -> str:
    """One line per chart and image, then its origins indented."""
    lines = [f"Charts ({len(found.charts)}):"]
    for chart in found.charts:
        target = f"  -> {chart.target}" if chart.target else ""
        lines.append(f"  {chart.chart.reference}{target}")
        lines += [f"      from {origin}" for origin in chart.origins[:3]]
        lines += [f"      ... and {len(chart.origins) - 3} more"] if len(chart.origins) > 3 else []
        lines += [f"      default images: {chart.unresolved}"] if chart.unresolved else []
    lines.append(f"Images ({len(found.images)}):")
    for image in found.images:
        target = f"  -> {image.target}" if image.target else ""
        lines.append(f"  {image.image}{target}")
        lines += [f"      from {origin}" for origin in image.origins[:3]]
        lines += [f"      ... and {len(image.origins) - 3} more"] if len(image.origins) > 3 else []
    return "\n".join(lines) + "\n"


def list_command(inputs: list[str], output_format: str, output: str | None, *, deployer: str = "helm",
                 catalogs: list[str] | None = None, charts_dir: str | None = None, name: str = "aicr-mirror") -> int:
    from aicr_gen.edges.output import write_text
    from aicr_gen.mirror import manifests
    from aicr_gen.yaml import dump_json

    found = collect(inputs, deployer=deployer, catalogs=catalogs, charts_dir=charts_dir)
    if output_format == "json":
        text = dump_json(found.to_json())
    elif output_format == "hauler":
        text = manifests.hauler(found, name)
    elif output_format == "zarf":
        text = manifests.zarf(found, name)
    else:
        text = text_report(found)
    write_text(output, text)
    return OK


def run(args: argparse.Namespace) -> int:
    """Dispatch ``aicr-gen mirror ...``."""
    if args.mirror_command == "lock":
        return lock_command(args.spec_files, client_of(args))
    if args.mirror_command == "verify":
        return verify_command(args.spec_files, client_of(args))
    return list_command(args.inputs, args.mirror_format, args.output, deployer=args.deployer,
                        catalogs=args.catalog, charts_dir=args.charts, name=args.name)


# ------------------------------------------------------------------------------------------ lock and verify


def client_of(args: argparse.Namespace) -> Any:
    """The registry client of ``mirror lock``/``verify``: endpoints, credentials and TLS from the options."""
    import os
    import sys
    from pathlib import Path

    from aicr_gen.edges import registry
    endpoints = dict(registry.endpoint(text) for text in args.registry or [])
    credentials = registry.docker_config(Path(args.registry_config) if args.registry_config else None)
    default = None
    username = args.username or os.environ.get(registry.USER_ENV)
    if args.password_stdin and not username:
        raise InvalidInputError("--password-stdin needs --username (or AICR_GEN_REGISTRY_USERNAME)")
    if username:
        password = sys.stdin.read().rstrip("\r\n") if args.password_stdin else os.environ.get(registry.PASSWORD_ENV)
        if password is None:
            raise InvalidInputError("--username: give the password on stdin (--password-stdin) or in "
                                    f"{registry.PASSWORD_ENV}")
        where = "--password-stdin" if args.password_stdin else f"{registry.USER_ENV}/{registry.PASSWORD_ENV}"
        default = registry.credentials(username, password, where)
    return registry.Client(credentials=credentials, default=default, endpoints=endpoints, ca_file=args.ca_file,
                           insecure=args.insecure)


def mirror_hosts(mirror: Any) -> set[str]:
    """The registry hosts of a locked mirror (``oci://HOST/PATH`` for charts, ``HOST/PATH`` for images): the
    only hosts ``mirror lock`` and ``verify`` reach for its spec."""
    return {text.removeprefix("oci://").split("/", 1)[0] for text in (mirror.charts, mirror.images) if text}


def wanted(spec_file: str) -> tuple[Any, Any, Any]:
    """``(cluster, locked mirror, lock.Wanted)`` of a spec: what its tree, rendered without the lock, pulls from
    its mirror."""
    from pathlib import Path

    from aicr_gen.gitops.trees.render_tree import render_tree
    from aicr_gen.mirror import lock
    from aicr_gen.mirror.inventory import for_tree
    from aicr_gen.spec.load import load_spec
    cluster = load_spec(spec_file)
    site = cluster.spec.mirror
    if site is None:
        raise InvalidInputError(f"{spec_file}: the spec has no spec.mirror; a lock holds the digests of a site "
                                "mirror's charts and images")
    mirror = lock.locked_mirror(site.charts, site.images)
    tree = render_tree(cluster, Path(spec_file).resolve().parent, locked=False)
    found = for_tree(tree, service=cluster.spec.criteria.service, accelerator=cluster.spec.criteria.accelerator)
    charts = sorted({f"{entry.chart.repository}/{entry.chart.name}:{entry.chart.version}" for entry in found.charts
                     if mirror.charts is not None and entry.chart.repository == mirror.charts})
    images = sorted({str(entry.image) if entry.image.digest else entry.image.pinned for entry in found.images
                     if mirror.images is not None and entry.image.name.startswith(f"{mirror.images}/")})
    return cluster, mirror, lock.Wanted(tuple(charts), tuple(images))


def _resolve(client: Any, reference: str, chart: bool, by: str | None = None) -> str | None:
    from aicr_gen.mirror.lock import chart_tag, image_ref

    host, repository, tag = chart_tag(reference) if chart else image_ref(reference)
    return client.resolve(host, repository, by or tag)  # type: ignore[no-any-return]


def lock_command(spec_files: list[str], client: Any) -> int:
    """Resolve every mirrored chart and image of each spec and write its lock file (all or nothing per spec:
    a reference the registry lacks writes no lock and is exit 1; an unreachable registry is exit 3)."""
    import sys

    from aicr_gen.edges.output import write_text
    from aicr_gen.errors import FindingsError
    from aicr_gen.mirror import lock

    absent: list[str] = []
    for spec_file in spec_files:
        _, mirror, want = wanted(spec_file)
        site = client.only(mirror_hosts(mirror))
        charts = {ref: _resolve(site, ref, True) for ref in want.charts}
        images = {ref: _resolve(site, ref, False) for ref in want.images}
        gone = [f"  {spec_file}: {ref} is not on the mirror" for ref, digest in {**charts, **images}.items()
                if digest is None]
        if gone:
            absent += gone
            continue
        path = lock.lock_path(spec_file)
        text = lock.dump_lock(lock.build(mirror, {ref: str(digest) for ref, digest in charts.items()},
                                         {ref: str(digest) for ref, digest in images.items()}))
        write_text(str(path), text)
        sys.stdout.write(f"{path}: {len(charts)} chart(s), {len(images)} image(s) locked\n")
    if absent:
        raise FindingsError(f"{len(absent)} reference(s) are not on the mirror; push them (aicr-gen mirror list "
                            "says where) and lock again; no lock was written for these specs:\n" + "\n".join(absent))
    return OK


def verify_command(spec_files: list[str], client: Any) -> int:
    """Check each spec's lock against its tree and the registry: every mirrored reference locked, every locked
    digest still there, every tag still resolving to its digest. Findings are exit 1, each named."""
    import sys

    from aicr_gen.errors import FindingsError
    from aicr_gen.mirror import lock
    from aicr_gen.spec.load import load_spec
    problems: list[str] = []
    checked = 0
    for spec_file in spec_files:
        path = lock.lock_path(spec_file)
        found = lock.read_lock(path)
        if found is None:
            problems.append(f"  {spec_file}: no mirror lock {path}; run aicr-gen mirror lock {spec_file}")
            load_spec(spec_file)
            continue
        _, mirror, want = wanted(spec_file)
        if found.mirror != mirror:
            problems.append(f"  {path}: computed for another mirror ({found.mirror.model_dump(exclude_none=True)}); "
                            f"lock the spec again")
            continue
        site = client.only(mirror_hosts(mirror))
        locked = {**found.chart_digests(), **found.image_digests()}
        problems += [f"  {path}: {ref} is not locked (the tree pulls it); lock the spec again"
                     for ref in (*want.charts, *want.images) if ref not in locked]
        for entries, chart in ((found.chart_digests(), True), (found.image_digests(), False)):
            for ref, digest in entries.items():
                checked += 1
                if _resolve(site, ref, chart, by=digest) is None:
                    problems.append(f"  {path}: {ref}@{digest} is gone from the registry")
                    continue
                now = _resolve(site, ref, chart) if "@" not in ref else digest
                if now != digest:
                    state = "is gone" if now is None else f"now resolves to {now}"
                    problems.append(f"  {path}: the tag of {ref} {state}; the lock has {digest}")
    if problems:
        raise FindingsError(f"mirror verify: {len(problems)} problem(s):\n" + "\n".join(problems))
    sys.stdout.write(f"mirror verify: {checked} locked digest(s) of {len(spec_files)} spec(s) are on the registry\n")
    return OK
