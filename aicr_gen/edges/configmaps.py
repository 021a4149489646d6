"""Documents kept in ConfigMaps, as AICR keeps snapshots and recipes there: the ``cm://NAMESPACE/NAME``
source, AICR's keys (text in ``data``, gzip'ed in ``binaryData``), the bytes read through the kube client.
Loading and validating the document is its reader's job
(``drift/load.py``, ``catalog/recipe_file.py``)."""

from __future__ import annotations

from aicr_gen.errors import InvalidInputError, UnreachableError
from aicr_gen.text.configmap_source import parse_cm_source

# ConfigMap keys tried in order; binaryData holds the gzip variants of large documents.
CM_TEXT_KEYS = ("snapshot.yaml", "snapshot.json", "recipe.yaml", "recipe.json")
CM_GZIP_KEYS = ("snapshot.yaml.gz", "snapshot.json.gz", "recipe.yaml.gz", "recipe.json.gz")


def configmap_bytes(source: str, kubeconfig: str | None, context: str | None) -> tuple[bytes, str]:
    """The document a ``cm://NAMESPACE/NAME`` ConfigMap holds (a snapshot or a recipe, under AICR's keys), and
    where it was read (``source/key``); gzip'ed ``binaryData`` is base64-decoded, not yet unzipped."""
    import base64
    import binascii

    from aicr_gen.edges.kube.client import connect

    namespace, name = parse_cm_source(source)
    with connect(kubeconfig, context) as cluster:
        configmap = cluster.configmap(namespace, name)
    data = configmap.get("data") or {}
    binary = configmap.get("binaryData") or {}
    for key in CM_TEXT_KEYS:
        if isinstance(data.get(key), str):
            return data[key].encode("utf-8"), f"{source}/{key}"
    for key in CM_GZIP_KEYS:
        if isinstance(binary.get(key), str):
            where = f"{source}/{key}"
            try:
                raw = base64.b64decode(binary[key], validate=True)
            except (binascii.Error, ValueError):
                raise InvalidInputError(f"{where}: binaryData is not valid base64") from None
            return raw, where
    present = sorted([*data, *binary])
    raise UnreachableError(f"{source}: ConfigMap {namespace}/{name} has no {' or '.join(CM_TEXT_KEYS[:2])} key "
                           f"(keys: {', '.join(present) or 'none'}); it does not hold an aicr snapshot")
