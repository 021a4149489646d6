"""A recipe's deployment plan, prepared from its catalog as ``bundle`` and ``sync`` prepare it: the catalog
files it reads, values files parsed through the cache, Kustomize components built (for deployers that do not
apply them natively), readiness gates, and the deployer settings of ``--set deployer:KEY=VALUE``. The one part
of rendering that reads (catalog files, the cache, ``kustomize build``); every deployer module stays pure."""

from __future__ import annotations

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_DEPLOYER_SETTINGS = {"namePrefix": "name_prefix", "project": "project", "destinationServer": "destination_server",
                      "destinationName": "destination_name", "shared": "shared",
                      "targetRevision": "revision", "path": "path", "appName": "app_name",
                      "argocdNamespace": "argocd_namespace", "fluxNamespace": "flux_namespace",
                      "includeRootApp": "include_root_app", "extraPaths": "extra_paths"}


def _parsed_values(sources: dict[str, bytes], names: list[str]) -> dict[str, Any]:
    """The values files parsed, cached by their contents (parsing YAML is most of a bundle's time)."""
    from aicr_gen.edges import cache
    from aicr_gen.render.plan import parse_values

    key = cache.new_key("values-v1")
    for rel in names:
        key.update(rel.encode() + b"\0" + sources[rel] + b"\0")
    parsed = cache.get(key.hexdigest())
    if parsed is None:
        parsed = {rel: parse_values(rel, sources[rel]) for rel in names}
        cache.put(key.hexdigest(), parsed)
    return parsed


def bundle_options(settings: list[str], repo: str | None, deployer: str | None = None) -> Any:
    """``Options`` of ``deployer:KEY=VALUE`` settings (``bundle --set``, spec.argocd/flux in ``sync``) and ``repo``."""
    from aicr_gen.render.options import Options, default_app_name, parse_extra_paths
    from aicr_gen.spec.overrides import typed
    options = Options(app_name=default_app_name(deployer))
    options = options if repo is None else options.replace(repo=repo)
    for text in settings:
        key, sep, value = text.removeprefix("deployer:").partition("=")
        if not sep or key not in _DEPLOYER_SETTINGS:
            raise InvalidInputError(f"--set {text}: deployer settings are {', '.join(sorted(_DEPLOYER_SETTINGS))}")
        field = _DEPLOYER_SETTINGS[key]
        parsed = typed(value)
        flag = type(Options._field_defaults[field]) is bool
        if flag and not isinstance(parsed, bool):
            raise InvalidInputError(f"--set {text}: {key} takes true or false")
        new_value: Any = parsed if flag else value
        if field == "extra_paths":
            folders, namespaces = parse_extra_paths(value)
            options = options.replace(extra_paths=folders, extra_namespaces=namespaces)
            continue
        options = options.replace(**{field: new_value})
    return options


NATIVE_KUSTOMIZE = ("argocd", "argocd-helm", "flux")  # Argo CD and Flux apply Kustomize sources themselves


def _kustomize_builds(recipe: dict[str, Any], deployer: str) -> dict[str, bytes]:
    """``kustomize build`` output of each enabled Kustomize component, for deployers that install them as
    local charts (argocd and flux apply Kustomize sources natively)."""
    if deployer in NATIVE_KUSTOMIZE:
        return {}
    from aicr_gen.edges import kustomize
    from aicr_gen.resolve.refs import is_enabled

    return {ref["name"]: kustomize.build(kustomize.target(ref.get("source", ""), ref.get("path", ""),
                                                          ref.get("tag", "")), f"component {ref['name']!r}")
            for ref in recipe["componentRefs"] if ref.get("type") == "Kustomize" and is_enabled(ref)}


def plan_for(recipe: dict[str, Any], catalog: Any, overrides: list[Any], deployer: str,
             scheduling: Any = None, *, serial: bool = False, dynamic: list[str] | None = None,
             readiness: str | None = None) -> Any:
    """The deployment plan of ``recipe`` for ``deployer``: the catalog's values and manifests for its
    components (values files parsed through the cache), registry aliases, Kustomize builds if needed, and what
    AICR's bundler adds at bundle time (``scheduling``; default: AICR's defaults). ``readiness``: the gate image
    of ``--readiness-hooks`` ('' for AICR's, None for no gates)."""
    from aicr_gen.catalog.load import read_files
    from aicr_gen.render.plan import build, parse_dynamic

    wanted: list[str] = []
    for ref in recipe["componentRefs"]:
        wanted.append(f"components/{ref['name']}/values.yaml")
        wanted += [ref["valuesFile"]] if ref.get("valuesFile") else []
        wanted += [*ref.get("manifestFiles", []), *ref.get("preManifestFiles", [])]
    gate_files: list[str] = []
    if readiness is not None:
        from aicr_gen.render.readiness import FILE

        gate_files = [f"components/{ref['name']}/{FILE}" for ref in recipe["componentRefs"]]
    sources = read_files(catalog, wanted + gate_files)
    aliases = {alias: name for name, entry in catalog.registry.items() for alias in entry.get("valueOverrideKeys", [])}
    values_files = {rel for ref in recipe["componentRefs"]
                    for rel in (f"components/{ref['name']}/values.yaml", ref.get("valuesFile"))
                    if rel in sources}
    manifests = sorted(set(wanted) - values_files - {f"components/{ref['name']}/values.yaml"
                                                     for ref in recipe["componentRefs"]})
    memo_key, memo = _rendered_memo(sources, manifests)
    known = len(memo)
    plan = build(recipe, sources, overrides, aliases, parsed=_parsed_values(sources, sorted(values_files)),
                 built=_kustomize_builds(recipe, deployer), registry=catalog.registry, scheduling=scheduling,
                 serial=serial, dynamic=parse_dynamic(dynamic or [], aliases), templates=deployer == "flux",
                 memo=memo, gates=_gates(recipe, sources, gate_files, deployer, readiness))
    if len(memo) != known:
        from aicr_gen.edges import cache
        cache.put(memo_key, {key.hex(): value for key, value in list(memo.items())[-_MEMO_KEEP:]})
    return plan


def _gates(recipe: dict[str, Any], sources: dict[str, bytes], gate_files: list[str], deployer: str,
           image: str | None) -> dict[str, bytes] | None:
    """The readiness gate chart of each component whose catalog folder has a readiness test."""
    if image is None:
        return None
    from aicr_gen.render import readiness

    if deployer not in readiness.DEPLOYERS:
        raise InvalidInputError(f"--readiness-hooks: the {deployer} deployer has no readiness gates; use one of "
                                f"{', '.join(readiness.DEPLOYERS)}")
    image = image or readiness.gate_image(str((recipe.get("metadata") or {}).get("version") or ""))
    gates: dict[str, bytes] = {}
    for rel in gate_files:
        name = rel.split("/")[1]
        if rel in sources:
            readiness.check_test(name, sources[rel])
            gates[name] = readiness.gate_chart(name, image, sources[rel], deployer)
    return gates


_MEMO_KEEP = 512
"""Rendered manifests kept per set of catalog manifests (each recipe value set renders its own)."""


def _rendered_memo(sources: dict[str, bytes], names: list[str]) -> tuple[str, dict[bytes, bytes | None]]:
    """The cache key of the rendered manifests of these catalog files, and what it holds (digest -> bytes)."""
    from aicr_gen.edges import cache
    key = cache.new_key("rendered-v1")
    for rel in names:
        if rel in sources:
            key.update(rel.encode() + b"\0" + sources[rel] + b"\0")
    found = cache.get(key.hexdigest()) or {}
    return key.hexdigest(), {bytes.fromhex(digest): value for digest, value in found.items()}
