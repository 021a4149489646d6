"""The inputs record ``sync`` commits beside each tree: what the tree was rendered from (``fingerprint``) and which
files it is, so a check of an unchanged spec compares digests instead of rendering.

One JSON file per managed folder, ``.aicr-gen/inputs/<folder>.json`` at the repository's root. It lives outside
the folder on purpose: the folder's ``checksums.txt`` is closed-world (``aicr-gen verify``) and the tree stays
exactly what rendering gives, so an input that changes no file (a new catalog file nothing reads, an edited
policy) never makes a tree stale. ``tree`` is the digest of the folder's files as Git names them (path and blob
name, in the repository's object format): a hand edit of a committed file no longer matches it.

A tree is fresh for ``sync --check`` when its record names the spec, aicr-gen is the same, every input it
lists still has its digest and the folder holds the recorded files: rendering (deterministic, reading no clock,
environment or network) would give the same tree. For ``sync`` the policies must match too, since a policy
change may refuse a spec that passed. The record's list of inputs is complete because it is a function of
the spec's and its fleet's bytes, both in the list.

The record also lists the tree's Argo CD and Flux objects (control plane, controller, kind, namespace, name,
file) and the spec's policy findings (warnings) from its sync: a run checks its trees for collisions with
every other tree of the repository from the records alone, and ``plan`` reports an unchanged spec without
rendering it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from aicr_gen.gitops.records import fingerprint
from aicr_gen.gitops.trees import collisions

FOLDER = ".aicr-gen/inputs"
API_VERSION = "aicr-gen.dev/v1alpha1"
KIND = "TreeInputs"
ROW = 6  # an object: plane, controller, kind, namespace, name, file


def path_of(folder: str) -> str:
    """The repository path of the record of the managed ``folder``."""
    return f"{FOLDER}/{folder}.json"


def tree_digest(files: Mapping[str, str]) -> str:
    """The digest of a folder's files: relative path -> blob name."""
    lines = "".join(f"{name} {files[name]}\n" for name in sorted(files))
    return f"sha256:{hashlib.sha256(lines.encode()).hexdigest()}"


class Record(NamedTuple):
    """A parsed record (see the module's docstring)."""

    cluster: str
    path: str
    from_option: bool
    spec: str
    aicr_gen: dict[str, str]
    inputs: dict[str, str]
    policies: dict[str, str]
    tree: str
    objects: list[list[str]] | None
    """The tree's Argo CD and Flux objects (``collisions.as_rows``); None in a record written before they were
    kept."""
    findings: list[dict[str, str]]
    """The policy findings of the spec when it was synced (warnings: an error refuses the sync)."""

    def fresh(self, now: fingerprint.Inputs | None, files: Mapping[str, str], *, policies: bool) -> bool:
        """Whether the tree is what rendering would give now: ``now`` the inputs' digests (None: unknown), ``files``
        the folder's files as committed; ``policies``: the policies must match too (sync)."""
        return (now is not None and self.aicr_gen == fingerprint.code() and now.render == self.inputs
                and (not policies or now.policies == self.policies) and tree_digest(files) == self.tree)

    def places(self, root: Path) -> tuple[dict[str, Path], dict[str, Path]]:
        """Name -> place of each input the record lists, read from the work tree at ``root``."""
        from aicr_gen.catalog.load import embedded_root
        from aicr_gen.policy.shipped import shipped_root

        shipped = {fingerprint.EMBEDDED_CATALOG: embedded_root(), fingerprint.SHIPPED_POLICIES: shipped_root()}

        def place(name: str) -> Path:
            return shipped.get(name, root / name.partition(fingerprint.WAVE)[0])

        return {name: place(name) for name in self.inputs}, {name: place(name) for name in self.policies}

    def keyed(self) -> list[collisions.Keyed]:
        """The tree's Argo CD and Flux objects with their control planes (none when the record lacks them)."""
        return collisions.from_rows(self.objects or [], self.cluster, self.path)


def build(cluster: str, path: str, spec: str, inputs: fingerprint.Inputs, files: Mapping[str, str], *,
          objects: Sequence[collisions.Keyed], findings: Sequence[Mapping[str, str]], from_option: bool) -> bytes:
    """The record of the tree at ``path`` (its files: relative path -> blob name; its Argo CD and Flux
    ``objects``) rendered from ``spec`` (a repository path) and ``inputs``."""
    aicr_gen = fingerprint.code()
    whole = hashlib.sha256(json.dumps([aicr_gen, inputs.render, inputs.policies], sort_keys=True).encode())
    data = {"apiVersion": API_VERSION, "kind": KIND, "cluster": cluster, "path": path,
            "pathFrom": "--path" if from_option else "spec.repo.path", "spec": spec,
            "digest": f"sha256:{whole.hexdigest()}", "aicrGen": aicr_gen, "inputs": inputs.render,
            "policies": inputs.policies, "tree": tree_digest(files), "objects": collisions.as_rows(objects, path),
            "findings": [dict(item) for item in findings]}
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode()


def parse(data: bytes) -> Record | None:
    """A record's content, or None when it is not one this aicr-gen reads (then the tree is rendered)."""
    try:
        raw: Any = json.loads(data)
        if raw.get("apiVersion") != API_VERSION or raw.get("kind") != KIND:
            return None
        rows = raw.get("objects")
        objects = None if rows is None else [[str(field) for field in row] for row in rows
                                             if isinstance(row, list) and len(row) == ROW]
        return Record(str(raw["cluster"]), str(raw["path"]), raw["pathFrom"] == "--path", str(raw["spec"]),
                      dict(raw["aicrGen"]), dict(raw["inputs"]), dict(raw["policies"]), str(raw["tree"]), objects,
                      [{str(key): str(value) for key, value in item.items()} for item in raw.get("findings", [])])
    except (ValueError, KeyError, TypeError, AttributeError):
        return None
