"""AICR document headers across ADR-022's two generations: checking what a reader is given, and writing a
document in the generation a user asks for.

Readers accept, per kind, the 1.0 header and the alpha one (see ``vocabulary.headers``); a missing or
foreign apiVersion is refused naming the accepted ones. Profile-bearing overlays and recipes carry their
own header in both generations, and the header must say whether the document bears a profile. Plain
Python (no pydantic), so the checks cost nothing on the paths that avoid validation.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aicr_gen.catalog.vocabulary import GENERATIONS, PROFILED_KINDS, generation_of, header, headers
from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml import Document


def is_profiled(kind: str, data: Mapping[str, Any]) -> bool:
    """Whether a document of ``kind`` bears a profile: an overlay's ``spec.profile``; a recipe's selected
    profile or its configuration (Slurm accounting), which AICR also writes under the profiled header."""
    if kind == "RecipeMetadata":
        return bool((data.get("spec") or {}).get("profile"))
    if kind == "RecipeResult":
        return bool((data.get("metadata") or {}).get("selectedProfile") or data.get("configuration"))
    return False


def accepted(kind: str) -> tuple[str, ...]:
    """Every apiVersion a reader takes for ``kind``."""
    found = headers(kind)
    return (*found, *headers(kind, profiled=True)) if kind in PROFILED_KINDS else found


def _listed(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


def check(doc: Document, kind: str) -> str:
    """The document's apiVersion, when it is one AICR writes for ``kind`` and agrees with its profile; an
    input error naming ``file:line`` and the accepted values otherwise. A document that is not a mapping is
    left for the model to explain."""
    data = doc.data
    if not isinstance(data, Mapping):
        return ""
    value = data.get("apiVersion")
    if value is None or value == "":
        raise InvalidInputError.at(Located(doc.source, 1, f"apiVersion is missing; a {kind} needs one of "
                                           f"{_listed(accepted(kind))} ({header(kind)} for AICR >= 0.22)"))
    if value not in accepted(kind):
        raise doc.error(("apiVersion",), f"value {value!r} is not allowed for a {kind}; "
                        f"use one of {_listed(accepted(kind))}")
    if kind in PROFILED_KINDS:
        profiled = is_profiled(kind, data)
        want = header(kind, generation_of(value), profiled=profiled)
        if value != want:
            what = "spec.profile" if kind == "RecipeMetadata" else "a selected profile or a configuration"
            raise doc.error(("apiVersion",), f"a {kind} declares {what} exactly when its apiVersion is "
                            f"{headers(kind, profiled=True)[0]} (or {headers(kind, profiled=True)[1]}); "
                            f"{'it has one' if profiled else 'it has none'}, so write apiVersion: {want}")
    return str(value)


def convert(data: Mapping[str, Any], kind: str, generation: str) -> dict[str, Any]:
    """``data`` (a document of ``kind``) with the header of ``generation`` (one of ``GENERATIONS``), its
    other content unchanged and in the same key order."""
    if generation not in GENERATIONS:
        raise InvalidInputError(f"--api-version {generation}: use one of {', '.join(GENERATIONS)}")
    want = header(kind, generation, profiled=is_profiled(kind, data))
    return {key: (want if key == "apiVersion" else value) for key, value in data.items()}
