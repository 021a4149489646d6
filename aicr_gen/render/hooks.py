"""AICR's removal of Helm hooks from a rendered manifest (``localformat/hooks.go``).

AICR installs a component's manifests as a local chart after the chart they depend on, so the sync-phase hooks
(pre/post install, upgrade and rollback, crd-install, test) no longer order anything, and Argo CD would treat a
hooked resource as a hook that never fires under automated sync: those phases are dropped from
``helm.sh/hook``, and ``helm.sh/hook-weight`` and ``helm.sh/hook-delete-policy`` go with the annotation when no
phase is left. Delete-time hooks (pre-delete, post-delete) stay.

Like AICR, every document is parsed and written again (yaml.v3's style, comments not kept); null documents are
dropped; text with no document at all is returned unchanged.
"""

from __future__ import annotations

import functools

from aicr_gen.errors import InvalidInputError
from aicr_gen.render import goyaml

SYNC_PHASES = frozenset({"pre-install", "post-install", "pre-upgrade", "post-upgrade", "pre-rollback",
                         "post-rollback", "crd-install", "test", "test-success", "test-failure"})
_HOOK = "helm.sh/hook"
_PAIRED = frozenset({"helm.sh/hook-weight", "helm.sh/hook-delete-policy"})


def _value_of(mapping: goyaml.Node | None, key: str) -> goyaml.Node | None:
    if mapping is None or mapping.kind != goyaml.MAP:
        return None
    for key_node, value in mapping.value:
        if key_node.kind == goyaml.SCALAR and key_node.value == key:
            return value  # type: ignore[no-any-return]
    return None


def _strip(document: goyaml.Node) -> None:
    annotations = _value_of(_value_of(document, "metadata"), "annotations")
    if annotations is None or annotations.kind != goyaml.MAP:
        return
    kept: list[str] = []
    for key, value in annotations.value:
        if key.kind == goyaml.SCALAR and key.value == _HOOK:
            text = value.value if value.kind == goyaml.SCALAR else ""
            kept = [phase.strip() for phase in text.split(",") if phase.strip() and phase.strip() not in SYNC_PHASES]
            break
    pairs = []
    for key, value in annotations.value:
        name = key.value if key.kind == goyaml.SCALAR else None
        if (name == _HOOK or name in _PAIRED) and not kept:
            continue
        if name == _HOOK:
            style = value.style if value.kind == goyaml.SCALAR else goyaml.PLAIN
            pairs.append((key, goyaml.Node(goyaml.SCALAR, ",".join(kept), style)))
        else:
            pairs.append((key, value))
    annotations.value = pairs


@functools.lru_cache(maxsize=256)
def strip_hooks(text: str, source: str) -> str:
    """``text`` (a rendered manifest, possibly several documents) without its sync-phase Helm hooks, written
    again as AICR writes it; ``InvalidInputError`` naming ``source`` when it is not YAML. Cached: most manifests
    (CRDs above all) render to the same text for every recipe."""
    from aicr_gen.yaml.foreign import YAMLError, compose_all

    try:
        composed = list(compose_all(text))
    except YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        line = f":{mark.line + 1}" if mark is not None else ""
        problem = getattr(err, "problem", None) or str(err)
        raise InvalidInputError(f"{source}{line}: the rendered manifest is not valid YAML: {problem}; "
                                "fix the template") from None
    documents = []
    for node in composed:
        if node is None:
            continue
        document = goyaml.from_composed(node)
        if document.kind == goyaml.SCALAR and document.style == goyaml.PLAIN and document.value in goyaml.NULLS:
            continue
        _strip(document)
        documents.append(document)
    if not documents:
        return text
    return goyaml.emit(documents)
