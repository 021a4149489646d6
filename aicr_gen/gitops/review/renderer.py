"""How ``plan`` renders objects, as options a worker process can receive, and one ``Review`` per process and
options (its memo then serves every spec the process plans)."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import NamedTuple

from aicr_gen.gitops.review.rendered import Review


class RenderOptions(NamedTuple):
    """``plan``'s options for rendered objects: vendored charts, the cache, no network, the Kubernetes version,
    whether charts are rendered at all (manifests and plain chart folders always are) and the API versions the
    cluster serves beyond Kubernetes' own."""

    charts_dir: str | None = None
    cache_dir: str | None = None
    offline: bool = False
    kube_version: str = ""
    render: bool = True
    api_versions: tuple[str, ...] = ()


@functools.cache
def review_for(options: RenderOptions) -> Review:
    """The process's ``Review`` for ``options`` (its chart renderer's scratch folder lives as long as the process)."""
    from aicr_gen.mirror.chart_render import ChartRenderer, default_cache

    if not options.render:
        return Review(None, kube_version=options.kube_version)
    cache = Path(options.cache_dir) if options.cache_dir else default_cache()
    renderer = ChartRenderer(charts_dir=Path(options.charts_dir) if options.charts_dir else None, cache_dir=cache,
                             offline=options.offline, api_versions=options.api_versions)
    return Review(renderer, kube_version=options.kube_version)
