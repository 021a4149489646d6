"""``bundle-info.yaml``: the build record at a bundle's root, as AICR writes it (``kind: BundleInfo``,
``aicr.run/v1``; AICR #2816): which deployer built the bundle, which generator, the bundler settings visible
in the bundle's files, the recipe beside it (by digest), and which release landed in which folder.

Ours has AICR's fields where they mean the same. It differs in what only we know: ``metadata.version`` is
``aicr-gen <version>``; the settings AICR has and we lack (attestation, vendored charts, readiness hooks,
serial order, scheduling flags) are recorded as off or left out; and a release's ``path``/``manifest`` are
where our layout puts it (each deployer module's ``release_files``). There is no timestamp (AICR has none
either): the record is listed in ``checksums.txt``, so the same inputs must give the same bytes.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable

from aicr_gen import __version__
from aicr_gen.render.options import Options
from aicr_gen.render.plan import Plan, Unit
from aicr_gen.yaml import dump

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE = "bundle-info.yaml"
RECIPE = "recipe.yaml"
API_VERSION = "aicr.run/v1"
KIND = "BundleInfo"
GIT_DEPLOYERS = ("argocd", "argocd-helm", "flux")
"""Deployers whose bundles name the Git repository, revision and root application they are read from."""


def settings(deployer: str, options: Options) -> dict[str, Any]:
    """The bundler settings whose effect shows in the bundle's files (AICR's admission rule)."""
    recorded: dict[str, Any] = {"checksums": True, "attested": False, "vendorCharts": False,
                                "readinessHooks": False, "serial": False}
    if deployer in GIT_DEPLOYERS:
        recorded.update(repoURL=options.repo, targetRevision=options.revision, appName=options.app_name)
    return recorded


def render(plan: Plan, deployer: str, options: Options, recipe_yaml: bytes, *, entrypoint: str,
           release_files: Callable[[Unit], tuple[str, str]]) -> bytes:
    """The record of ``plan`` rendered by ``deployer`` beside ``recipe_yaml``; ``entrypoint`` and
    ``release_files`` (unit -> its folder and the file declaring it, or "") are the deployer's layout."""
    recipe: dict[str, Any] = {"path": RECIPE, "digest": "sha256:" + hashlib.sha256(recipe_yaml).hexdigest()}
    version = (plan.recipe.get("metadata") or {}).get("version")
    if version:
        recipe["version"] = str(version)
    releases = []
    for unit in plan.units:
        path, manifest = release_files(unit)
        release = {"name": unit.name, "component": unit.component, "namespace": unit.namespace, "path": path}
        releases.append({**release, "manifest": manifest} if manifest else release)
    info = {"apiVersion": API_VERSION, "kind": KIND, "metadata": {"version": f"aicr-gen {__version__}"},
            "build": {"deployer": deployer, "recipe": recipe, "settings": settings(deployer, options)},
            "layout": {"entrypoint": entrypoint, "releases": releases}}
    return dump(info).encode()
