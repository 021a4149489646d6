"""What a reviewer sees of two ``sync`` trees (pure): the changes (``changes.py``) and, on top, the high-risk ones
(``risks.py``), as one ``Changes`` value."""

from __future__ import annotations

from collections.abc import Mapping

from aicr_gen.gitops.review.changes import (
    certification_changes,
    component_changes,
    constraint_changes,
    driver_changes,
    sentinel_changes,
    source_changes,
    value_changes,
)
from aicr_gen.gitops.review.model import Changes, FileChanges
from aicr_gen.gitops.review.risks import high_risk


def compare(old: Mapping[str, bytes], new: Mapping[str, bytes]) -> Changes:
    """How ``new`` differs from ``old`` (both trees of the managed folder), with its high-risk changes."""
    components = component_changes(old, new) + driver_changes(old, new)
    listed = {item.name for item in components}
    charts, images = source_changes(old, new)
    found = Changes(components=components + [item for item in charts if item.name not in listed],
                    values=value_changes(old, new), constraints=constraint_changes(old, new),
                    sentinel=sentinel_changes(old, new), certification=certification_changes(old, new),
                    sources=images, files=FileChanges(
                        added=sorted(set(new) - set(old)), removed=sorted(set(old) - set(new)),
                        changed=sorted(name for name in set(old) & set(new) if old[name] != new[name])))
    return found.model_copy(update={"highRisk": high_risk(found, old, new)})
