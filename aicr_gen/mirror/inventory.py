"""The mirror list of one or more trees: every chart and image once, with every place it comes from and,
with a site mirror, where it goes.

Sources: the references the tree names (``refs.discover``), the workload images of the spec's NVCRE
certification categories (``nvcre_images``), and a chart's default images when a local copy of the chart
was rendered (``chart_images``; the charts without one are listed as not resolved offline). Pure.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from aicr_gen.mirror.refs import Chart, Found, Origin, discover
from aicr_gen.text.image_reference import ImageRef, mirrored, parse_image

NOT_OFFLINE = "not resolved offline: give --charts DIR holding the pulled chart (helm pull)"


class ChartEntry(NamedTuple):
    chart: Chart
    origins: tuple[str, ...]
    namespace: str
    target: str
    """``oci://MIRROR/NAME:VERSION`` where the site mirror serves it ("" without one, or when the tree is
    already mirrored)."""
    unresolved: str
    """Why the chart's own default images are not in the list ("" when a local copy was rendered)."""


class ImageEntry(NamedTuple):
    image: ImageRef
    origins: tuple[str, ...]
    target: str


class Inventory(NamedTuple):
    charts: tuple[ChartEntry, ...]
    images: tuple[ImageEntry, ...]

    def to_json(self) -> dict[str, Any]:
        """The ``--format json`` shape."""
        return {
            "charts": [{"repository": entry.chart.repository, "name": entry.chart.name,
                        "version": entry.chart.version, "oci": entry.chart.oci, "namespace": entry.namespace,
                        "mirror": entry.target or None,
                        "defaultImages": "unresolved" if entry.unresolved else "listed",
                        "unresolved": entry.unresolved or None,
                        "origins": list(entry.origins)} for entry in self.charts],
            "images": [{"image": str(entry.image), "mirror": entry.target or None, "origins": list(entry.origins)}
                       for entry in self.images],
        }


def _version_key(version: str) -> str:
    # Argo CD's targetRevision drops the leading v that Flux, helm and helmfile keep; one chart either way
    return version.removeprefix("v")


def build(found: Iterable[Found], *, extra_images: Sequence[tuple[str, Origin]] = (),
          chart_images: Mapping[tuple[str, str, str], Sequence[tuple[str, str]]] | None = None,
          unresolved: Mapping[tuple[str, str, str], str] | None = None, charts_mirror: str | None = None,
          images_mirror: str | None = None) -> Inventory:
    """Group ``found`` (and ``extra_images``: image text and origin) into one entry per chart and per image.
    ``chart_images``: (repository, name, version key) -> [(image, template file)] from rendering the chart;
    ``unresolved``: the same key -> why a chart was not rendered."""
    charts: dict[tuple[str, str, str], tuple[Chart, list[str], str]] = {}
    images: dict[ImageRef, list[str]] = {}
    for item in found:
        if isinstance(item.ref, Chart):
            key = (item.ref.repository, item.ref.name, _version_key(item.ref.version))
            chart, origins, namespace = charts.setdefault(key, (item.ref, [], item.namespace))
            if item.ref.version.startswith("v") and not chart.version.startswith("v"):
                chart = item.ref  # the recipe's spelling
            charts[key] = (chart, [*origins, str(item.origin)], namespace or item.namespace)
        else:
            images.setdefault(item.ref, []).append(str(item.origin))
    for text, origin in extra_images:
        images.setdefault(parse_image(text), []).append(str(origin))
    resolved = chart_images or {}
    for key, rendered in resolved.items():
        label = f"{charts[key][0].name}-{charts[key][0].version}" if key in charts else key[1]
        for text, template in rendered:
            images.setdefault(parse_image(text), []).append(f"chart {label} default: {template}")
    chart_entries = tuple(
        ChartEntry(chart, tuple(dict.fromkeys(origins)), namespace,
                   _chart_target(chart, charts_mirror),
                   "" if key in resolved else (unresolved or {}).get(key, NOT_OFFLINE))
        for key, (chart, origins, namespace) in sorted(charts.items()))
    image_entries = tuple(
        ImageEntry(image, tuple(dict.fromkeys(origins)), _image_target(image, images_mirror))
        for image, origins in sorted(images.items(), key=lambda item: str(item[0])))
    return Inventory(chart_entries, image_entries)


def _chart_target(chart: Chart, mirror: str | None) -> str:
    if mirror is None or chart.repository == mirror:
        return ""
    return f"{mirror}/{chart.name}:{chart.version}"


def _image_target(image: ImageRef, mirror: str | None) -> str:
    if mirror is None:
        return ""
    target = mirrored(image, mirror)
    return "" if target == image else str(target)


def certification_images(tree: Mapping[str, bytes], service: str | None,
                         accelerator: str | None) -> list[tuple[str, Origin]]:
    """The NVCRE workload images of the Certifications of ``tree`` whose categories set no ``image`` option
    (the ones with an image name it, and ``discover`` lists it)."""
    from aicr_gen.mirror.nvcre_images import category_images
    from aicr_gen.yaml.foreign import load_all

    out: list[tuple[str, Origin]] = []
    for path, data in tree.items():
        if not path.endswith(".yaml") or b"kind: Certification" not in data:
            continue
        for doc in load_all(data, libyaml=False):
            spec = doc.get("spec") if isinstance(doc, dict) and doc.get("kind") == "Certification" else None
            if not isinstance(spec, dict) or spec.get("image"):
                continue
            for index, entry in enumerate(spec.get("categories") or []):
                if (entry.get("options") or {}).get("image"):
                    continue
                category = f"{entry.get('domain')}/{entry.get('variant')}"
                origin = Origin(path, f"spec.categories[{index}] ({category}, run by NVCRE)")
                out += [(image, origin) for image in category_images(category, service, accelerator)]
    return out


def for_tree(tree: Mapping[str, bytes], *, service: str | None = None, accelerator: str | None = None,
             chart_images: Mapping[tuple[str, str, str], Sequence[tuple[str, str]]] | None = None,
             unresolved: Mapping[tuple[str, str, str], str] | None = None,
             charts_mirror: str | None = None, images_mirror: str | None = None) -> Inventory:
    """The inventory of one rendered tree (``service``/``accelerator``: the spec's criteria, which pick the
    NVCRE image variants)."""
    return build(discover(tree), extra_images=certification_images(tree, service, accelerator),
                 chart_images=chart_images, unresolved=unresolved, charts_mirror=charts_mirror,
                 images_mirror=images_mirror)


def chart_key(chart: Chart) -> tuple[str, str, str]:
    """The key ``build`` groups a chart by."""
    return chart.repository, chart.name, _version_key(chart.version)
