"""``aicr_gen/report/plan.py``: the Markdown of ``plan`` fits a pull-request comment however many clusters change."""

from __future__ import annotations

import re


def test_the_markdown_plan_of_a_bump_of_two_thousand_clusters_names_every_one() -> None:
    from aicr_gen.gitops.review.plan import plan
    from aicr_gen.report.plan import BUDGET, markdown
    from tests.gitops.test_plan import _cluster

    clusters = [_cluster(index) for index in range(2000)]
    text = markdown(plan("main", "a" * 40, clusters))
    assert len(text) <= BUDGET
    shown = text.count("<details")
    assert 0 < shown < 2000
    last = text.rstrip().splitlines()[-1]
    assert last.startswith(f"\u2026 and {2000 - shown} more clusters with changes not shown")
    in_sections = re.findall(r"^<details><summary><b>([^<]+)</b>", text, flags=re.MULTILINE)
    assert in_sections + re.findall(r"`(cluster-[^`]+)`", last) == [cluster.name for cluster in clusters]
