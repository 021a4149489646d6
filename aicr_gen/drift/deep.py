"""Drift as DeepDiff reports it (``diff --format deepdiff``) and DeepDiff's Delta of two snapshots
(``diff --delta FILE``). Pure: values in, text out; deepdiff is imported here only, so ``diff`` in its other formats
never pays for it (~60 ms with the pydantic it imports).

The report is DeepDiff's text view (``verbose_level=2``) of the same comparison aicr-gen's change list makes,
serialised with DeepDiff's own JSON helper (``to_json``): DeepDiff compares the readings aicr-gen compares, flat and
with its ignore rules applied (``drift.diff.readings`` of each snapshot; ``recipe_readings`` of a recipe and the
live releases), so its ``dictionary_item_added`` / ``dictionary_item_removed`` are the change list's ``added`` /
``removed`` and its ``values_changed`` with ``type_changes`` its ``modified``, path by path
(``root['K8s.helm.gpu-operator.version']`` is ``K8s.helm.gpu-operator.version``). A pooled spec's report has one per
part (``shared`` and each pool), each over the readings of that part's changes. ``--fleet``'s has one per cluster.

The Delta turns the baseline snapshot, as read, into the target: ``baseline + Delta(...) == target`` (DeepDiff's
own ``Delta``, over the whole documents: metadata, timestamps and every reading, so a golden baseline moved forward
with it is the target). It is serialised as JSON (``deepdiff.serialization.json_dumps``), never pickle: load it
with ``Delta(text, deserializer=json_loads)``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

OPTIONS: dict[str, Any] = {"verbose_level": 2, "threshold_to_diff_deeper": 0, "ignore_private_variables": False}
"""DeepDiff as the change list compares: every key (DeepDiff skips those starting with ``__`` by default), each
reading on its own (by default DeepDiff reports a whole mapping as replaced when most of it differs)."""


def report(left: Mapping[str, Any], right: Mapping[str, Any]) -> dict[str, Any]:
    """DeepDiff's text view of ``left`` (the baseline's readings) against ``right`` (the target's), as JSON data."""
    from deepdiff import DeepDiff

    found: dict[str, Any] = json.loads(DeepDiff(dict(left), dict(right), **OPTIONS).to_json())
    return found


def render(reports: Any) -> str:
    """A report (or a mapping of reports) as JSON text, with DeepDiff's serialiser."""
    from deepdiff.serialization import json_dumps

    return str(json_dumps(reports, indent=2, sort_keys=True)) + "\n"


def from_changes(changes: Iterable[Mapping[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The readings a list of changes names: each change's baseline value on the left, its target on the right."""
    left: dict[str, Any] = {}
    right: dict[str, Any] = {}
    for entry in changes:
        if "baseline" in entry:
            left[str(entry["path"])] = entry["baseline"]
        if "target" in entry:
            right[str(entry["path"])] = entry["target"]
    return left, right


def delta(baseline: Mapping[str, Any], target: Mapping[str, Any]) -> str:
    """DeepDiff's Delta from ``baseline`` to ``target`` (whole documents), as JSON text."""
    from deepdiff import DeepDiff, Delta
    from deepdiff.serialization import json_dumps

    made = Delta(DeepDiff(dict(baseline), dict(target), **OPTIONS), serializer=json_dumps)
    return str(made.dumps())  # type: ignore[no-untyped-call]
