"""Rendering: a recipe's deployment plan into a ``Bundle`` for one deployer. Pure: no IO."""

from __future__ import annotations

import importlib
from collections.abc import Mapping

from aicr_gen.bundle import Bundle
from aicr_gen.render import bundle_info
from aicr_gen.render.options import DEPLOYERS, Options
from aicr_gen.render.plan import Plan
from aicr_gen.yaml import dump

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

_MODULES = {"helm": "helm", "argocd": "argocd", "argocd-helm": "argocd_helm", "flux": "flux",
            "helmfile": "helmfile"}


def render_bundle(plan: Plan, deployer: str, options: Options, *, recipe_yaml: str | None = None) -> Bundle:
    """Everything ``deployer`` applies, plus ``recipe.yaml``, ``bundle-info.yaml`` (the build record) and the
    closed-world ``checksums.txt``.
    ``recipe_yaml``: ``dump(plan.recipe)`` when the caller already has it (``bundle`` caches it)."""
    if deployer not in DEPLOYERS:
        from aicr_gen.errors import InvalidInputError

        raise InvalidInputError(f"--deployer {deployer!r}: use one of {', '.join(DEPLOYERS)}")
    from aicr_gen.render.options import check_deployer

    check_deployer(options, deployer)
    module: Any = importlib.import_module(f"aicr_gen.render.{_MODULES[deployer]}")
    files: Bundle = module.render(plan, options)
    recipe: Mapping[str, Any] = plan.recipe
    text = (dump(recipe) if recipe_yaml is None else recipe_yaml).encode()
    info = bundle_info.render(plan, deployer, options, text, entrypoint=module.ENTRYPOINT,
                              release_files=module.release_files)
    from aicr_gen.render import vendor

    provenance = vendor.provenance(plan)
    extra = {vendor.PROVENANCE: provenance} if provenance is not None else {}
    return files.merge({bundle_info.RECIPE: text, bundle_info.FILE: info, **extra}).with_checksums()
