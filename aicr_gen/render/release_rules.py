"""How a unit's Helm release is installed, the same in the helm and helmfile deployers (and as AICR's):
whether Helm waits for it, how long it may take, whether Helm creates its namespace and whether helm-diff
may check its objects against the live cluster before installing it."""

from __future__ import annotations

import re

from aicr_gen.render import readiness
from aicr_gen.render.plan import MAIN, POST, READINESS, Unit

TIMEOUT = 600
"""Seconds a release may take (Helm's ``--timeout 10m``)."""

ASYNC_COMPONENTS = frozenset({"kai-scheduler"})
"""Operators whose custom resources become ready long after their pods do, so ``--wait`` would time out on a
healthy install: installed without waiting (AICR's list)."""

ASYNC_TIMEOUT = 1200
"""Seconds an asynchronous component's release may take; Helm still waits this long for its hooks."""

_NAMESPACE_OBJECT = re.compile(rb"^kind:\s+Namespace\s*$", re.MULTILINE)


def is_async(unit: Unit) -> bool:
    """Whether Helm installs ``unit`` without waiting for its objects to become ready."""
    return unit.component in ASYNC_COMPONENTS


def timeout(unit: Unit) -> int:
    """Seconds Helm may take to install ``unit``."""
    if unit.role == READINESS:
        return readiness.HELM_TIMEOUT
    return ASYNC_TIMEOUT if is_async(unit) else TIMEOUT


def duration(seconds: int) -> str:
    """Helm's spelling of a timeout: ``600`` -> ``10m``."""
    return f"{seconds // 60}m" if seconds % 60 == 0 else f"{seconds}s"


def creates_namespace(unit: Unit) -> bool:
    """Whether Helm creates the namespace first: not when the unit's own manifests hold the Namespace object,
    which Helm then refuses to adopt (it exists, without the release's ownership labels)."""
    return not any(_NAMESPACE_OBJECT.search(data) for _, data in unit.manifests)


def disables_validation(unit: Unit) -> bool:
    """Whether helm-diff must skip checking the release's objects against the live cluster: the chart of a
    ``hasSelfRefCRDs`` component creates objects of CRDs it installs itself, and the post manifests of a
    ``manifestsUseChartCRDs`` component do, so on a fresh cluster neither kind is known when helmfile diffs."""
    return ((unit.role == MAIN and "hasSelfRefCRDs" in unit.flags)
            or (unit.role == POST and "manifestsUseChartCRDs" in unit.flags))
