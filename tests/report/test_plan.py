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


def test_rendered_objects_fit_the_comment_shared_changes_once_and_the_full_plan_has_every_diff() -> None:
    from aicr_gen.gitops.review.objects import ObjectChange
    from aicr_gen.gitops.review.plan import plan
    from aicr_gen.gitops.review.rendered import ApplicationChange
    from aicr_gen.gitops.review.upgrade import UpgradeReason, UpgradeVerdict
    from aicr_gen.report.plan import BUDGET, markdown
    from tests.gitops.test_plan import _cluster

    def unit(name: str, lines: int) -> ApplicationChange:
        diff = "".join(f"-  line{index}: old\n+  line{index}: new\n" for index in range(lines))
        objects = [ObjectChange(apiVersion="apps/v1", kind="Deployment", namespace="ns", name=f"{name}-{index}",
                                change="changed", was=None, diff=diff, lines=2 * lines) for index in range(30)]
        return ApplicationChange(kind="Application", name=name, deployer="argocd", component=name,
                                 source=f"{name} 1.0.0 -> 2.0.0 from https://charts.example.com", rendered=True,
                                 note="", objects=objects, lines=60 * lines)

    shared = unit("gpu-operator", 80)
    blocked = UpgradeVerdict(component="gpu-operator", verdict="blocked", reasons=[UpgradeReason(
        verdict="blocked", code="immutable-field", object="Deployment ns/gpu-operator-0",
        text="spec.selector changes but is immutable")])
    clusters = [_cluster(index).model_copy(update={"applications": [shared, unit(f"own-{index}", 40)],
                                                   "upgrades": [blocked]}) for index in range(300)]
    result = plan("main", "a" * 40, clusters)
    text = markdown(result, full="/runner/temp/aicr-gen-plan-full.md")
    assert len(text) <= BUDGET and (result.blocked, result.unacknowledged) == (300, 300)
    assert text.count("<summary>Application gpu-operator") == 1 and "300 clusters" in text  # once, not 300 times
    assert "**blocked** `gpu-operator` on 300 clusters" in text
    assert "in `aicr-gen-plan-full.md` (the job summary or the run's artifact)" in text
    whole = markdown(result, None)
    assert whole.count("<summary>Application own-") == 300 and whole.count("```diff") == 301 * 30  # every object
    assert "more lines in the full plan" in text and "more lines in the full plan" not in whole  # cut at 60
    acknowledged = plan("main", "a" * 40, clusters, allow_blocked=["gpu-operator"])
    assert acknowledged.unacknowledged == 0 and "**blocked** (acknowledged)" in markdown(acknowledged)


def test_the_same_change_under_each_clusters_own_names_is_shown_once() -> None:
    """A shared Argo CD hub names every Application and release after its cluster: the change is still one."""
    from aicr_gen.gitops.review.objects import ObjectChange
    from aicr_gen.gitops.review.plan import plan
    from aicr_gen.gitops.review.rendered import ApplicationChange
    from aicr_gen.report.plan import BUDGET, markdown
    from tests.gitops.test_plan import _cluster

    def unit(cluster: str) -> ApplicationChange:
        change = ObjectChange(apiVersion="apps/v1", kind="DaemonSet", namespace="gpu-operator",
                              name=f"{cluster}-gpu-operator-driver", change="changed", was=None,
                              diff=f"-  image: driver:580 # {cluster}\n+  image: driver:590 # {cluster}\n", lines=2)
        return ApplicationChange(kind="Application", name=f"{cluster}-gpu-operator", deployer="argocd",
                                 component="gpu-operator", source="gpu-operator 26.3.3 -> 26.4.0 from https://x",
                                 rendered=True, note="", objects=[change], lines=2)

    clusters = [(base := _cluster(index)).model_copy(update={"applications": [unit(base.name)]})
                for index in range(1000)]
    text = markdown(plan("main", "a" * 40, clusters))
    assert len(text) <= BUDGET and text.count("<summary>Application ") == 1
    assert f"1000 clusters (shown for {clusters[0].name}; names differ by cluster)" in text
