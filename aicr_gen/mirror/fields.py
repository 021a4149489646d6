"""Where images are named: Helm values image fields, Pod specs and ``image:`` lines of templates.

One walker serves discovery (``refs.py``) and the mirror rewrite (``rewrite.py``), so what the list shows is
what the rewrite moves. Helm charts spell an image in a few common shapes, each recognised here:

- a string under an image-ish key (``image``, ``initContainerImage``, ``kubectlImage``, ...):
  ``image: nvcr.io/nvidia/cuda:12.8``;
- a map under an image-ish key, or any map holding ``repository`` with ``tag``/``version``/``digest``:
  ``{repository: nvcr.io/nvidia/k8s-device-plugin, tag: v0.17}``;
- the same with a separate ``registry`` (Bitnami's ``{registry: docker.io, repository: bitnami/redis}``);
- the GPU Operator's ``{repository: nvcr.io/nvidia, image: driver, version: 580.95.05}``.

A field whose text does not parse as an image reference is not an image (``image: driver`` alone is a name).
Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from typing import Any, NamedTuple

from aicr_gen.errors import InvalidInputError
from aicr_gen.text.image_reference import ImageRef, mirrored, parse_image
from aicr_gen.yaml import FieldPath

STRING, REGISTRY, REPOSITORY, GPU_OPERATOR = "string", "registry", "repository", "repository+image"
_TAG_KEYS = ("tag", "version")
_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
IMAGE_LINE = re.compile(r"^(?P<head>\s*(?:-\s+)?image:\s*)(?P<quote>[\"']?)(?P<ref>[^\"'\s#{}]+)(?P=quote)"
                        r"(?P<tail>\s*(?:#.*)?)\Z")
"""An ``image:`` line with a literal value (a template expression is not one)."""


class ImageField(NamedTuple):
    """An image named in a values tree: the path of the field (the map for split shapes) and its shape."""

    path: FieldPath
    shape: str
    ref: ImageRef


def _image_key(key: object) -> bool:
    return isinstance(key, str) and (key.lower() == "image" or key.endswith("Image"))


def _scalar(value: Any) -> str | None:
    if isinstance(value, bool) or value is None:
        return None
    return str(value) if isinstance(value, str | int | float) else None


def _parsed(text: str) -> ImageRef | None:
    try:
        return parse_image(text)
    except InvalidInputError:
        return None


def _split(node: Mapping[str, Any], keyed: bool) -> tuple[str, ImageRef] | None:
    """A map naming an image by parts, as ``(shape, ref)``; None when it is not one."""
    repository = _scalar(node.get("repository"))
    if repository is None:
        return None
    tag = next((text for key in _TAG_KEYS if (text := _scalar(node.get(key))) is not None), "")
    digest = _scalar(node.get("digest")) or ""
    if not (keyed or tag or digest):
        return None
    registry, name = _scalar(node.get("registry")), _scalar(node.get("image"))
    if registry:
        shape, text = REGISTRY, f"{registry.rstrip('/')}/{repository}"
    elif name and "/" not in name and ":" not in name:
        shape, text = GPU_OPERATOR, f"{repository.rstrip('/')}/{name}"
    else:
        shape, text = REPOSITORY, repository
    if "@" in text or (":" in text.rsplit("/", 1)[-1]):
        return None  # the repository already carries a tag or digest: not the split shape
    ref = _parsed(text + (f":{tag}" if tag else "") + (f"@{digest}" if digest else ""))
    return None if ref is None else (shape, ref)


def value_images(values: Any, base: FieldPath = ()) -> Iterator[ImageField]:
    """Every image field of a Helm values tree, in document order."""
    if isinstance(values, list):
        for index, item in enumerate(values):
            yield from value_images(item, (*base, index))
        return
    if not isinstance(values, Mapping):
        return
    keyed = bool(base) and _image_key(base[-1])
    split = _split(values, keyed)
    if split is not None:
        yield ImageField(base, split[0], split[1])
        return
    for key, value in values.items():
        if _image_key(key) and isinstance(value, str):
            ref = _parsed(value)
            if ref is not None and ("/" in value or ":" in value or "@" in value):
                yield ImageField((*base, key), STRING, ref)
            continue
        yield from value_images(value, (*base, key))


def pod_images(obj: Any, base: FieldPath = ()) -> Iterator[tuple[FieldPath, ImageRef]]:
    """``(path, ref)`` of every container image of the Pod specs anywhere in a Kubernetes object (Pod,
    Deployment, Job, CronJob, a CRD embedding a pod template, ...)."""
    if isinstance(obj, list):
        for index, item in enumerate(obj):
            yield from pod_images(item, (*base, index))
        return
    if not isinstance(obj, Mapping):
        return
    for key, value in obj.items():
        if key in _CONTAINER_LISTS and isinstance(value, list):
            for index, container in enumerate(value):
                image = container.get("image") if isinstance(container, Mapping) else None
                ref = _parsed(image) if isinstance(image, str) else None
                if ref is not None:
                    yield (*base, key, index, "image"), ref
        yield from pod_images(value, (*base, key))


def field_node(values: Any, field: ImageField) -> Any:
    """The mapping in ``values`` that holds ``field``: the image mapping itself, or a string field's parent."""
    node = values
    for part in field.path[:-1] if field.shape == STRING else field.path:
        node = node[part]
    return node


def set_image(values: Any, field: ImageField, target: ImageRef) -> None:
    """Write ``target`` into ``values`` (a mutable copy) at ``field``, in the field's own shape."""
    node = field_node(values, field)
    if field.shape == STRING:
        node[field.path[-1]] = str(target)
    elif field.shape == REGISTRY:
        node["registry"] = target.domain
        node["repository"] = target.path
    elif field.shape == GPU_OPERATOR:
        node["repository"] = target.name.rsplit("/", 1)[0]
    else:
        node["repository"] = target.name


def mirrored_line(line: str, prefix: str) -> str:
    """``line`` with the literal image of an ``image:`` line moved under ``prefix``; other lines as they are."""
    match = IMAGE_LINE.match(line)
    if match is None:
        return line
    ref = _parsed(match["ref"])
    if ref is None:
        return line
    return f"{match['head']}{match['quote']}{mirrored(ref, prefix)}{match['quote']}{match['tail']}"


def line_images(text: str) -> Iterator[tuple[int, ImageRef]]:
    """``(line number, ref)`` of the literal ``image:`` lines of a text (a Helm template, a script)."""
    for number, line in enumerate(text.splitlines(), start=1):
        match = IMAGE_LINE.match(line)
        ref = _parsed(match["ref"]) if match else None
        if ref is not None:
            yield number, ref
