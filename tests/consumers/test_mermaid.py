"""Every chart our Markdown reports draw, rendered for real: Mermaid's own renderer (npm ``mermaid``) in Debian's
chromium, headless, driven by npm ``playwright-core`` (``render_mermaid.mjs``), as GitHub renders a ```mermaid
block. Each chart comes from a real report of a real input (nccl-tests logs of ``../shared/reference``, fleet
drift matrices, plans, rollout status documents of the rollout tests' fixtures), hostile and oversized ones
among them, and is found in the Markdown the way GitHub finds it (a fenced block whose info string is
``mermaid``). Each must parse, draw what it says (as many lines, bars, slices or nodes as its source has) on a
canvas of a real size, and leave a PNG of it (``--basetemp`` keeps them to look at).

Needs node, chromium (``/usr/bin/chromium``, or ``$AICR_GEN_CHROMIUM``) and the npm packages ``scripts/tools.sh``
installs in ``$AICR_GEN_TOOLS/mermaid`` (default ``<repo>/.tools``); without them the tests skip naming what is
missing, or fail under ``AICR_GEN_REQUIRE_CHARTS`` (``.ci/run`` sets it and installs chromium).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import REFERENCE, ROOT

NCCL = REFERENCE / "nccl"
NCCL_LOGS = {
    "nccl-one-run": "togethercomputer-together-nccl-tests/benchmarks/H100/results/20260305_220043/all_reduce_ring.out",
    "nccl-five-tests": "xxrjun-nccl-tests-cluster/benchmarks/example-cluster01/nccl-benchmark-results/single-node/"
                       "runs/20260128-145017/without-debug/logs/nccl_N1_G8_cnode3-002.log",
    "nccl-ten-nodes": "xxrjun-nccl-tests-cluster/benchmarks/example-cluster01/nccl-benchmark-results/multi-node/"
                      "runs/20260129-180219/without-debug/logs/nccl_N10_G8.log",
    "nccl-pairwise": "xxrjun-nccl-tests-cluster/benchmarks/example-cluster00/nccl-benchmark-results/pairwise/runs/"
                     "2511/without-debug/logs/nccl_N2_G1_cnode2-001_cnode2-004.log",
}
HOSTILE = '"]; %%{init: {}}%% <img src=x> #quot; `a` @octocat #1 \\n & ] --> x["y'
"""What a test name, cluster, component or wave may hold to break out of a chart's label."""


def _markdown_of_nccl(name: str, *, rename: str | None = None) -> str:
    from aicr_gen.certify.nccl import parse_nccl
    from aicr_gen.report import results

    path = NCCL / NCCL_LOGS[name]
    if not path.is_file():
        pytest.skip(f"{path} not found: the nccl-tests logs of ../shared/reference (AICR_GEN_REFERENCE)")
    raw = path.read_bytes()
    if rename is not None:  # one run's test and one node as a hostile log would name them
        raw = raw.replace(b"Collective test starting: all_reduce_perf", f"Collective test starting: {rename}".encode())
        raw = re.sub(rb"(# +Rank +0 .*? on )(\S+)", lambda m: m.group(1) + rename.replace(" ", "_").encode(), raw)
    return results.render(parse_nccl(raw, path.name), "markdown")


def _pair_runs() -> str:
    """Two runs on two node groups over the same sizes and a third over other sizes: two charts."""
    text = (NCCL / NCCL_LOGS["nccl-ten-nodes"]).read_text() if (NCCL / NCCL_LOGS["nccl-ten-nodes"]).is_file() else ""
    if not text:
        pytest.skip("the nccl-tests logs of ../shared/reference are not here (AICR_GEN_REFERENCE)")
    from aicr_gen.certify.nccl import parse_nccl
    from aicr_gen.report import results

    pairwise = (NCCL / NCCL_LOGS["nccl-pairwise"]).read_text()
    return results.render(parse_nccl((text + "\n" + pairwise).encode(), "two-groups.log"), "markdown")


def _fleet(hostile: bool = False, components: int = 0) -> str:
    from aicr_gen.drift import fleet
    from aicr_gen.report import fleet_drift
    from tests.drift.test_fleet import _document

    if not hostile and not components:
        return fleet_drift.markdown(_document())
    names = [f"component-{index:02}{HOSTILE if hostile else ''}" for index in range(components or 3)]
    refs = [{"name": name, "version": "1.0.0", "namespace": "ns"} for name in names]
    releases = {name: {"version": "1.0.0", "namespace": "ns"} for name in names}
    clusters = [fleet.Cluster(f"cluster-{index:03}{HOSTILE if hostile else ''}", "s.yaml", "f.json", refs,
                              None if index % 7 == 3 else
                              {**releases, **{name: {"version": "0.9", "namespace": "ns"}
                                              for name in names[:index % len(names)]}})
                for index in range(60)]
    return fleet_drift.markdown(fleet.matrix(clusters))


def _plan(hostile: bool = False) -> str:
    from aicr_gen.gitops.review.plan import plan
    from aicr_gen.report.plan import markdown
    from tests.gitops.test_plan import _cluster
    from tests.hostile.test_output import _cluster_plan

    clusters = [_cluster(index, risky=index < 3) for index in range(12)]
    unchanged = [cluster.model_copy(update={"name": f"quiet-{index}", "changed": False})
                 for index, cluster in enumerate(clusters[5:10])]
    refused = [_cluster_plan(f"refused{HOSTILE if hostile else ''}", "x").model_copy(update={"highRisk": []})]
    return markdown(plan("main", "a" * 40, [*clusters, *unchanged, *refused]))


def _rollout(case: str) -> str:
    from aicr_gen.report import rollout
    from aicr_gen.rollout import gates
    from tests.rollout.test_gates import WAVES, _observed, _status, expected, read
    from tests.rollout.test_gates import _row as drift_row

    good = _observed("2026-12-01T11:00:00Z", "2026-12-01T09:00:00Z")
    if case == "soaking":
        members = [(expected("a"), good), (expected("b"), _observed("2026-12-01T14:00:00Z", "2026-12-01T13:30:00Z")),
                   (expected("p", "prod"), good)]
        return rollout.markdown(_status("2026-12-02T10:00:00Z", members))
    if case == "halted":
        from tests.rollout import exported

        bad = gates.Observed(read(*exported.certification("c", "sha256:" + "ab" * 32, outcome="Failed", bus_bw=1.0),
                                  exported.application("1" * 40), *exported.nodes(1)), "", {"1" * 40: True},
                             drift_row("ok"))
        waves = [WAVES[0], {**WAVES[0], "name": "ring1"}, WAVES[1]]
        return rollout.markdown(_status("2026-12-09T00:00:00Z", [
            (expected("a"), bad), (expected("b"), good), (expected("r", "ring1"), good),
            (expected("p", "prod"), good)], waves))
    # twenty waves with hostile names: the chain is capped and the labels stay labels
    waves = [{**WAVES[0], "name": f"w{index}{HOSTILE}"} for index in range(19)] + [{**WAVES[1], "name": "last"}]
    return rollout.markdown(_status("2026-12-09T00:00:00Z", [(expected(f"c{index}", wave["name"]), good)
                                                           for index, wave in enumerate(waves)], waves))


REPORTS: dict[str, Callable[[], str]] = {
    **{name: partial(_markdown_of_nccl, name) for name in NCCL_LOGS},
    "nccl-hostile-names": lambda: _markdown_of_nccl("nccl-five-tests", rename=HOSTILE),
    "nccl-two-groups": _pair_runs,
    "fleet": _fleet,
    "fleet-hostile": lambda: _fleet(hostile=True),
    "fleet-fifty-components": lambda: _fleet(components=50),
    "plan": _plan,
    "plan-hostile": lambda: _plan(hostile=True),
    "rollout-soaking": lambda: _rollout("soaking"),
    "rollout-halted": lambda: _rollout("halted"),
    "rollout-twenty-hostile-waves": lambda: _rollout("many"),
}
EXPECTED = {"nccl": ("xychart",), "fleet": ("pie", "xychart"), "plan": ("pie",), "rollout": ("flowchart-v2",)}
"""The diagrams each report draws, in order (a report may draw several of one, e.g. a chart per set of sizes)."""


def charts(markdown: str) -> list[str]:
    """The sources of the Mermaid blocks of ``markdown``, found as GitHub finds them (CommonMark fences)."""
    from markdown_it import MarkdownIt

    return [token.content for token in MarkdownIt("commonmark").parse(markdown)
            if token.type == "fence" and token.info.strip() == "mermaid"]


def _missing() -> str | None:
    """Why the renderer cannot run here, or None."""
    modules = Path(os.environ.get("AICR_GEN_TOOLS") or ROOT / ".tools") / "mermaid" / "node_modules"
    if shutil.which("node") is None:
        return "node is not installed (Node.js 20 and npm; .ci/run's machine has them)"
    if not shutil.which(os.environ.get("AICR_GEN_CHROMIUM", "chromium")):
        return "chromium is not installed (apt-get install chromium, as .ci/run does)"
    if not all((modules / name / "package.json").is_file() for name in ("mermaid", "playwright-core")):
        return f"mermaid and playwright-core are not in {modules}: run `bash scripts/tools.sh` (scripts/test.sh does)"
    return None


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, list[str]], dict[str, Any]]:
    """Every report's charts rendered in one browser: the folder of SVGs and PNGs, each report's chart names,
    and the renderer's results by chart name."""
    missing = _missing()
    if missing:
        if os.environ.get("AICR_GEN_REQUIRE_CHARTS"):
            pytest.fail(f"cannot render the charts: {missing}", pytrace=False)
        pytest.skip(f"cannot render the charts: {missing}")
    out = tmp_path_factory.mktemp("charts")
    sources: dict[str, str] = {}
    names: dict[str, list[str]] = {}
    for report, build in REPORTS.items():
        try:
            found = charts(build())
        except pytest.skip.Exception:
            continue
        names[report] = [f"{report}-{index}" for index in range(len(found))]
        sources.update(zip(names[report], found, strict=True))
    (out / "charts.json").write_text(json.dumps(sources))
    for name, source in sources.items():
        (out / f"{name}.mmd").write_text(source)
    modules = Path(os.environ.get("AICR_GEN_TOOLS") or ROOT / ".tools") / "mermaid" / "node_modules"
    chromium = shutil.which(os.environ.get("AICR_GEN_CHROMIUM", "chromium"))
    assert chromium is not None
    renderer = Path(__file__).with_name("render_mermaid.mjs")
    done = subprocess.run(["node", str(renderer), str(modules), chromium, str(out / "charts.json"), str(out)],
                          capture_output=True, text=True, timeout=600, check=False)
    assert done.returncode == 0, f"render_mermaid.mjs exited {done.returncode}:\n{done.stderr[-4000:]}"
    return out, names, json.loads((out / "results.json").read_text())


def _drawn(source: str) -> tuple[str, dict[str, Any]]:
    """What a chart's source asks to draw: its diagram type and, as the renderer counts them, its lines (points
    each), bars and legend entries (one per line when there are several), slices or nodes."""
    body = [line.strip() for line in source.rsplit("---\n", maxsplit=1)[-1].splitlines()]
    kind = body[0].split()[0]
    if kind == "xychart-beta":
        plots = [(line.split()[0], len(line.rsplit("[", 1)[1].split(","))) for line in body
                 if line.startswith(("line ", "bar "))]
        return "xychart", {"lines": [points for plot, points in plots if plot == "line"],
                           "bars": sum(points for plot, points in plots if plot == "bar"),
                           "legend": len(plots) if len(plots) > 1 else 0}
    if kind == "pie":
        return "pie", {"slices": sum(1 for line in body if re.match(r'^".*" : \d+$', line))}
    return "flowchart-v2", {"nodes": sum(1 for line in body if re.match(r"^n\d+\[", line))}


@pytest.mark.parametrize("report", list(REPORTS))
def test_every_chart_renders_in_a_browser(rendered: tuple[Path, dict[str, list[str]], dict[str, Any]],
                                          report: str) -> None:
    out, names, results = rendered
    if report not in names:
        pytest.skip(f"{report}: its input is not here (../shared/reference)")
    sources = {name: (out / f"{name}.mmd").read_text() for name in names[report]}
    kinds = [_drawn(source)[0] for source in sources.values()]
    expected = EXPECTED[report.split("-", maxsplit=1)[0]]
    assert kinds and set(kinds) == set(expected) and kinds == sorted(kinds, key=expected.index), kinds
    for name, source in sources.items():
        result = results[name]
        assert "error" not in result, f"{name}: Mermaid refused it: {result['error']}\n{source}"
        kind, wanted = _drawn(source)
        assert result["diagram"] == kind and not result["errorDrawn"], (name, result)
        assert result["width"] >= 200 and result["height"] >= 50, (name, result)
        drawn = {key: result[key] for key in wanted}
        assert drawn == wanted and any(wanted.values()), f"{name}: drew {drawn}, its source asks {wanted}\n{source}"
        png = out / f"{name}.png"
        assert png.is_file() and png.stat().st_size > 5_000, (name, png)
        assert "<img" not in (out / f"{name}.svg").read_text()


def test_hostile_labels_stay_labels() -> None:
    """A label is only text: what a value from a file holds never becomes syntax (see ``aicr_gen.text.mermaid``)."""
    from aicr_gen.text import mermaid

    quoted = mermaid.label(HOSTILE)
    assert quoted.count('"') == 2 and not set(quoted[1:-1]) & set('"%;<>&#`[]{}@\\')
    assert len(mermaid.label("x" * 500)) == mermaid.LABEL + 2
    assert mermaid.picked(31) == list(range(31)) and mermaid.picked(100, 5) == [0, 25, 50, 74, 99]


def test_each_picture_counts_what_its_report_says() -> None:
    """The pictures agree with the tables beside them (no browser needed)."""
    fleet = charts(_fleet())
    assert '    "drifted" : 3' in fleet[0] and '    "unreachable" : 1' in fleet[0] and '"ok"' not in fleet[0]
    assert '["cert-manager", "gpu-operator"]' in fleet[1] and "    bar [2, 1]" in fleet[1]
    (plan,) = charts(_plan())
    assert [line.strip() for line in plan.splitlines() if " : " in line] == [
        '"high-risk" : 3', '"policy error" : 1', '"changes" : 9', '"unchanged" : 5']
    (waves,) = charts(_rollout("halted"))
    assert '    n0["canary: 1 passed / 0 waiting / 1 failed"]:::fail' in waves.splitlines()
    assert '    n2["prod: 1 passed / 0 waiting / 0 failed (next: halt)"]:::idle' in waves.splitlines()
    assert waves.splitlines()[-1] == "    class n2 next"
    (many,) = charts(_rollout("many"))
    assert '    n11["... and 9 more"]:::idle' in many.splitlines() and "flowchart TD" in many


def test_the_nccl_chart_draws_a_line_per_run_named_under_it() -> None:
    """Mermaid before 11 draws no legend: the Markdown names each line by its colour."""
    text = _markdown_of_nccl("nccl-five-tests")
    (chart,) = charts(text)
    assert [line.split('"')[1] for line in chart.splitlines() if line.startswith("    line ")] == [
        "all_reduce_perf (line 1)", "all_gather_perf (line 36)", "reduce_scatter_perf (line 71)",
        "alltoall_perf (line 106)", "sendrecv_perf (line 141)"]
    assert ("Lines: blue all_reduce_perf (line 1), orange all_gather_perf (line 36), green reduce_scatter_perf "
            "(line 71), red alltoall_perf (line 106), purple sendrecv_perf (line 141).") in text
