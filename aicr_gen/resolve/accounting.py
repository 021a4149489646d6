"""Slurm accounting mode: a build setting of slurm recipes (not a criterion), ``disabled`` by default.

It decides whether the MariaDB trio is installed and whether slinky-slurm runs accounting, and it is
recorded in ``configuration.slurm.accounting.mode`` (which makes the recipe ``aicr.run/v1alpha3``).
"""

from __future__ import annotations

from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.resolve.merge import deep_merge

MODES = ("disabled", "customer-managed", "aicr-provided")
SLURM = "slinky-slurm"
MARIADB = ("mariadb-operator-crds", "mariadb-operator", "slurm-accounting-mariadb")


def normalise(mode: str | None, platform: str) -> str | None:
    """The effective mode: None for non-slurm recipes, ``disabled`` when a slurm recipe names none."""
    if mode is not None:
        mode = mode.strip().lower()
        if mode not in MODES:
            raise InvalidInputError(f"--slurm-accounting-mode {mode!r}: use one of {', '.join(MODES)}")
        if platform != "slurm":
            raise InvalidInputError("--slurm-accounting-mode: only slurm recipes (--platform slurm) have accounting")
        return mode
    return "disabled" if platform == "slurm" else None


def apply(mode: str, refs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Switch accounting on slinky-slurm and install the MariaDB trio only when aicr provides it."""
    names = {ref["name"] for ref in refs}
    for required in (SLURM, *MARIADB):
        if required not in names:
            raise InvalidInputError(
                f"slurm recipe is missing component {required!r}, which accounting needs; add it to the overlay")
    patch: dict[str, dict[str, Any]] = {SLURM: {"accounting": {"enabled": mode != "disabled"}}}
    patch.update({name: {"install": mode == "aicr-provided"} for name in MARIADB})
    return [({**ref, "overrides": deep_merge(ref.get("overrides", {}), patch[ref["name"]])}
             if ref["name"] in patch else ref) for ref in refs]
