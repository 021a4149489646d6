"""A chart's own default images, from a local copy of the chart (pulled with ``helm pull`` or vendored):
``helm template`` with the chart's defaults, then the container images of every rendered Pod spec.

The one IO edge of ``mirror/``: it reads the charts folder and runs helm (``$AICR_GEN_HELM``, else ``helm``
on PATH). A chart is found in the folder as ``NAME-VERSION.tgz`` (what ``helm pull`` writes) or as a folder
whose ``Chart.yaml`` has that name and version.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterable
from pathlib import Path

from aicr_gen.errors import InvalidInputError
from aicr_gen.mirror.fields import pod_images
from aicr_gen.mirror.refs import Chart

_SOURCE = "# Source: "


def helm_binary() -> str:
    """helm: ``$AICR_GEN_HELM`` or the one on PATH."""
    found = os.environ.get("AICR_GEN_HELM") or shutil.which("helm")
    if not found:
        raise InvalidInputError("--charts renders charts with helm, and none was found; install helm or set "
                                "AICR_GEN_HELM to its path")
    return found


def find_chart(folder: Path, chart: Chart) -> Path | None:
    """The local copy of ``chart`` in ``folder``, if any (the version with or without its leading v)."""
    from aicr_gen.yaml.foreign import load_one

    versions = {chart.version, chart.version.removeprefix("v"), f"v{chart.version.removeprefix('v')}"}
    for version in sorted(versions):
        archive = folder / f"{chart.name}-{version}.tgz"
        if archive.is_file():
            return archive
    for meta in sorted(folder.glob("*/Chart.yaml")):
        data = load_one(meta.read_text(encoding="utf-8"), libyaml=False) or {}
        if data.get("name") == chart.name and str(data.get("version")) in versions:
            return meta.parent
    return None


def rendered_images(manifests: str) -> list[tuple[str, str]]:
    """``(image, template)`` of the Pod specs in ``helm template`` output, in order, each once."""
    from aicr_gen.yaml.foreign import YAMLError, load_all

    out: list[tuple[str, str]] = []
    for block in manifests.split("\n---"):
        template = next((line[len(_SOURCE):].strip() for line in block.splitlines() if line.startswith(_SOURCE)),
                        "")
        try:
            docs = list(load_all(block, libyaml=False))
        except YAMLError:
            continue
        for doc in docs:
            for _, ref in pod_images(doc):
                if (str(ref), template) not in out:
                    out.append((str(ref), template))
    return out


def chart_images(folder: Path, charts: Iterable[Chart], helm: str | None = None) -> tuple[
        dict[Chart, list[tuple[str, str]]], dict[Chart, str]]:
    """For each chart with a local copy in ``folder``: its default images; for the others (and those helm
    could not render with their defaults), why not."""
    images: dict[Chart, list[tuple[str, str]]] = {}
    missing: dict[Chart, str] = {}
    for chart in charts:
        path = find_chart(folder, chart)
        if path is None:
            missing[chart] = f"no {chart.name}-{chart.version}.tgz or chart folder in {folder}"
            continue
        run = subprocess.run([helm or helm_binary(), "template", "mirror-list", str(path)], capture_output=True,
                             text=True, timeout=300, check=False)
        if run.returncode != 0:
            lines = (run.stderr.strip() or run.stdout.strip() or "failed").splitlines()
            missing[chart] = f"helm template with the chart's defaults failed: {lines[-1]}"
            continue
        images[chart] = rendered_images(run.stdout)
    return images, missing
