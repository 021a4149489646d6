"""``aicr-gen report``: real nccl-tests logs, DCGM diagnostics and NVCRE Certification status read back
offline, with the numbers a user would check by hand, thresholds as NVCRE words them, and hostile input.

The nccl-tests logs are the real ones copied under ``shared/reference/nccl`` (one 8xH100 node, ten nodes,
a failed pair and a degraded pair). DCGM and Certification fixtures are written here; the DCGM 4.x ones
are checked against DCGM's own JSON schema, so they have the shape ``dcgmi diag -j`` writes.
"""

from __future__ import annotations

import base64
import csv
import gzip
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from aicr_gen.certify import nvcre_status, report_model
from aicr_gen.certify.dcgm import parse_dcgm
from aicr_gen.certify.nccl import parse_nccl
from aicr_gen.errors import InvalidInputError
from aicr_gen.report import results as report_format
from tests.conftest import REFERENCE, assert_refused, needs, use_reference

NCCL = REFERENCE / "nccl"
TOGETHER = NCCL / "togethercomputer-together-nccl-tests/benchmarks/H100/results/20260305_220043/all_reduce_ring.out"
CLUSTER = NCCL / "xxrjun-nccl-tests-cluster/benchmarks"
TEN_NODES = (CLUSTER / "example-cluster01/nccl-benchmark-results/multi-node/runs/20260129-180219/without-debug/logs"
             / "nccl_N10_G8.log")
ONE_NODE = (CLUSTER / "example-cluster01/nccl-benchmark-results/single-node/runs/20260128-145017/without-debug/logs"
            / "nccl_N1_G8_cnode3-002.log")
PAIRWISE = CLUSTER / "example-cluster00/nccl-benchmark-results/pairwise/runs/2511/without-debug"
FAILED_PAIR = PAIRWISE / "logs/nccl_N2_G8_cnode2-008_cnode2-009.log"
DEGRADED_PAIR = PAIRWISE / "logs/nccl_N2_G1_cnode2-001_cnode2-004.log"
DCGM_SCHEMA = REFERENCE / "dcgm/NVIDIA-DCGM/testing/python3/dcgm_diag_schema.json"

needs_nccl = needs(TOGETHER, CLUSTER)


class MarkdownSnapshot(SingleFileSnapshotExtension):
    """Markdown reports stored as the literal comment text, reviewable in pull requests."""

    _write_mode = WriteMode.TEXT
    file_extension = "md"


def nccl(path: Path) -> report_model.Report:
    return parse_nccl(path.read_bytes(), path.name)


def busbw_mean(run: report_model.NcclRun) -> float:
    values = [bw.busbw for row in run.rows for _, bw in row.halves()]
    return sum(values) / len(values)


# ------------------------------------------------------------------------------------------------ nccl-tests


@needs_nccl
def test_together_8xh100_all_reduce() -> None:
    report = nccl(TOGETHER)
    assert (report.result, report.exit_code, report.reasons) == ("PASSED", 0, ())
    (run,) = report.nccl
    assert (run.test, run.version, run.ranks, run.hosts) == ("all_reduce_perf", "2.17.9", 8, ("gpu-dp-2jvzl-pqq7p",))
    assert run.gpus == ("NVIDIA H100 80GB HBM3",)
    assert len(run.rows) == 31
    assert run.max_busbw == report_model.Peak(368.62, 8589934592, "in-place")
    assert run.max_algbw == report_model.Peak(210.64, 8589934592, "in-place")
    assert (run.avg_busbw, run.out_of_bounds) == (122.955, 0)
    # The footer is the mean of all 62 busbw values (out-of-place and in-place), not the peak NVCRE uses.
    assert busbw_mean(run) == pytest.approx(122.955, abs=5e-4)
    first, two_gib = run.rows[0], run.rows[28]
    assert (first.size, first.count, first.type, first.redop, first.root) == (8, 2, "float", "sum", -1)
    assert first.out_of_place == report_model.Bandwidth(34.98, 0.0, 0.0, 0)
    assert (two_gib.size, two_gib.out_of_place and two_gib.out_of_place.time_us) == (2147483648, 10329.0)
    assert run.measurements() == {"busBandwidthGBps": 368.62, "algBandwidthGBps": 210.64}


TEN_NODE_RUNS = [  # test, first line, max busbw (size, place), max algbw, footer average
    ("all_reduce_perf", 1, 364.07, 2147483648, "in-place", 184.34, 265.631),
    ("all_gather_perf", 108, 324.29, 17179868160, "out-of-place", 328.40, 218.677),
    ("reduce_scatter_perf", 215, 323.40, 17179868160, "out-of-place", 327.49, 216.683),
    ("alltoall_perf", 322, 50.66, 8589934080, "in-place", 51.31, 47.1472),
    ("sendrecv_perf", 429, 15.26, 134217728, "in-place", 15.26, 15.1671),
]


@needs_nccl
def test_ten_node_log_has_five_collectives_on_80_ranks() -> None:
    report = nccl(TEN_NODES)
    assert report.result == "PASSED"
    hosts = tuple(f"cnode3-{i:03d}" for i in range(2, 12))
    got = [(run.test, run.line, *_peak(run.max_busbw), run.max_algbw and run.max_algbw.value, run.avg_busbw)
           for run in report.nccl]
    assert got == TEN_NODE_RUNS
    for run in report.nccl:
        assert (run.ranks, run.hosts, len(run.rows), run.version) == (80, hosts, 10, "2.17.8")
        assert run.notes == ("Reducing maxBytes to 26549638485 due to memory limitation",)
        assert busbw_mean(run) == pytest.approx(run.avg_busbw, abs=2e-3)
    all_reduce, all_gather, *_, alltoall, _ = report.nccl
    assert all_reduce.rows[-1].out_of_place == report_model.Bandwidth(105854.0, 162.30, 320.54, 0)
    assert (all_gather.rows[0].size, all_gather.rows[0].count, all_gather.rows[0].redop) == (33553920, 52428, "none")
    # alltoall does not check in-place results: nccl-tests prints N/A.
    assert {row.in_place.wrong for row in alltoall.rows if row.in_place} == {None}


def _peak(peak: report_model.Peak | None) -> tuple[float, int, str]:
    assert peak is not None
    return peak.value, peak.size, peak.place


@needs_nccl
def test_single_node_log() -> None:
    report = nccl(ONE_NODE)
    assert [run.test for run in report.nccl] == ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf",
                                                 "alltoall_perf", "sendrecv_perf"]
    all_reduce = report.nccl[0]
    assert (all_reduce.ranks, all_reduce.hosts) == (8, ("cnode3-002",))
    assert _peak(all_reduce.max_busbw) == (482.27, 17179869184, "out-of-place")
    assert all_reduce.avg_busbw == 437.957


@needs_nccl
def test_failed_pair_is_a_failed_run_naming_the_node(cli: Any) -> None:
    report = nccl(FAILED_PAIR)
    assert (report.result, report.exit_code) == ("FAILED", 1)
    assert [(run.test, run.ranks, run.hosts, run.rows) for run in report.nccl] == [
        ("alltoall_perf", 16, ("cnode2-008", "cnode2-009"), ()),
        ("sendrecv_perf", 16, ("cnode2-008", "cnode2-009"), ())]
    alltoall = report.nccl[0]
    assert alltoall.failures[0] == ("cnode2-009: Test NCCL failure common.cu:1279 'remote process exited or there "
                                    "was a network error / ' (x6)")
    assert alltoall.failures[-1] == "no result table: the run failed before printing results"
    assert report.nccl[1].failures[0].endswith("(x5)")
    result = cli("report", "nccl", str(FAILED_PAIR))
    assert result.code == 1, result.err
    assert "Result: FAILED" in result.out
    assert "remote process exited or there was a network error" in result.out


@needs_nccl
def test_degraded_pair_passes_alone_and_fails_a_threshold_as_nvcre_words_it(cli: Any) -> None:
    report = nccl(DEGRADED_PAIR)
    assert report.result == "PASSED"
    alltoall, sendrecv = report.nccl
    assert (alltoall.ranks, alltoall.hosts) == (2, ("cnode2-001", "cnode2-004"))
    assert (_peak(alltoall.max_busbw), alltoall.avg_busbw) == ((9.30, 134217728, "in-place"), 5.76435)
    assert (_peak(sendrecv.max_busbw), sendrecv.avg_busbw) == ((8.43, 536870912, "in-place"), 5.05954)
    # nccl-tests fell back to exponent form for the 16 GiB in-place time.
    assert alltoall.rows[-1].in_place == report_model.Bandwidth(1.0e7, 1.69, 0.84, None)
    result = cli("report", "nccl", str(DEGRADED_PAIR), "--threshold", "busBandwidthGBps=value >= 10")
    assert result.code == 1, result.err
    assert ('alltoall_perf (line 1): Threshold "busBandwidthGBps" violated: measured 9.3000, expression: '
            "value >= 10") in result.out
    assert "sendrecv_perf (line 27): FAILED (threshold)" in result.out
    healthy = cli("report", "nccl", str(DEGRADED_PAIR), "--threshold", "busBandwidthGBps=value >= 8")
    assert healthy.code == 0, healthy.out
    assert 'Threshold "busBandwidthGBps" met: measured 9.3000' in healthy.out


@needs_nccl
def test_pairwise_summary_csv_agrees_with_the_parsed_logs() -> None:
    """The upstream summary.csv holds each log's footer average and peak busbw (empty when the run failed)."""
    with (PAIRWISE / "summary.csv").open(newline="") as handle:
        rows = {(row["file"], row["test"]): row for row in csv.DictReader(handle)}
    for log in (FAILED_PAIR, DEGRADED_PAIR):
        for run in nccl(log).nccl:
            row = rows[(log.name, run.test)]
            if not run.passed:
                assert (row["avg_bus_bw_GBs"], row["peak_busbw_GBs"]) == ("", "")
                continue
            assert run.avg_busbw == pytest.approx(float(row["avg_bus_bw_GBs"]))
            assert run.max_busbw is not None
            assert run.max_busbw.value == pytest.approx(float(row["peak_busbw_GBs"]))


@needs_nccl
def test_thresholds_on_the_together_log(cli: Any) -> None:
    failed = cli("report", "nccl", str(TOGETHER), "--threshold", "busBandwidthGBps=value >= 900",
                 "--threshold", "algBandwidthGBps=value > 200", "--format", "json")
    assert failed.code == 1, failed.err
    data = json.loads(failed.out)
    assert data["result"] == "FAILED"
    assert [(t["key"], t["measured"], t["passed"]) for t in data["thresholds"]] == [
        ("algBandwidthGBps", 210.64, True), ("busBandwidthGBps", 368.62, False)]
    assert data["reasons"] == ['all_reduce_perf: Threshold "busBandwidthGBps" violated: measured 368.6200, '
                               "expression: value >= 900"]
    assert cli("report", "nccl", str(TOGETHER), "--threshold", "busBandwidthGBps=value >= 300").code == 0


@needs_nccl
@pytest.mark.parametrize(("flags", "fragment"), [
    (["--threshold", "busBandwidth=value > 1"], "unknown threshold key(s) [busBandwidth]"),
    (["--threshold", "goodputRatio=value >= 0.9"], "nccl-tests does not measure it"),
    (["--threshold", "busBandwidthGBps"], "expected KEY=EXPR"),
    (["--threshold", "busBandwidthGBps=value > 1", "--threshold", "busBandwidthGBps=value > 2"], "given twice"),
    (["--failed-nodes", "x.yaml"], "--failed-nodes applies to `report certification`"),
])
def test_bad_report_flags_are_refused(cli: Any, flags: list[str], fragment: str) -> None:
    assert_refused(cli("report", "nccl", str(TOGETHER), *flags), fragment)


@needs_nccl
def test_nccl_json_output_has_rows_and_both_maxima(cli: Any) -> None:
    result = cli("report", "nccl", str(TEN_NODES), "--format", "json")
    data = json.loads(result.out)
    assert (result.code, data["kind"], len(data["runs"])) == (0, "nccl", 5)
    run = data["runs"][0]
    assert (run["busBandwidthGBps"], run["algBandwidthGBps"], run["avgBusBandwidthGBps"]) == (364.07, 184.34, 265.631)
    assert run["busBandwidthPeak"] == {"value": 364.07, "size": 2147483648, "place": "in-place"}
    assert run["rows"][0] == {"size": 33554432, "count": 4194304, "type": "double", "redop": "sum", "root": -1,
                              "outOfPlace": {"timeUs": 798.52, "algBW": 42.02, "busBW": 82.99, "wrong": 0},
                              "inPlace": {"timeUs": 857.09, "algBW": 39.15, "busBW": 77.32, "wrong": 0}}


@needs_nccl
def test_markdown_report_fits_a_pull_request_comment(cli: Any, snapshot: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(TOGETHER.parent)
    result = cli("report", "nccl", TOGETHER.name, "--format", "markdown", "--threshold",
                 "busBandwidthGBps=value >= 400")
    assert result.code == 1
    assert result.out == snapshot(extension_class=MarkdownSnapshot)


# nccl-tests -J writes this shape (src/util.cu, JSON_FILE_VERSION 2): booleans as strings, root as a padded
# string, nwrong null when unchecked, and the whole environment, which a report must never echo.
def _json_log(rows: list[report_model.NcclRow], **extra: Any) -> dict[str, Any]:
    def half(bw: report_model.Bandwidth) -> dict[str, Any]:
        return {"time": bw.time_us, "alg_bw": bw.algbw, "bus_bw": bw.busbw,
                "nwrong": None if bw.wrong is None else float(bw.wrong)}

    doc: dict[str, Any] = {
        "version": 2, "start_time": "2026-03-05 22:00:43", "args": ["./build/all_reduce_perf", "-b", "8", "-e", "8G"],
        "env": ["AWS_SECRET_ACCESS_KEY=do-not-print"], "nccl_version": 22602,
        "config": {"nthreads": 1, "ngpus": 8, "minimum_bytes": 8, "maximum_bytes": 8589934592, "step_factor": 2,
                   "warmup_iters": 5, "iterations": 20, "aggregated_iterations": 1, "validation": 1, "graph": 0,
                   "blocking_collectives": "false", "per_iter_timing": "false", "parallel_init": "false",
                   "devices": [{"rank": i, "group": 0, "pid": 1583223, "hostname": "gpu-dp-2jvzl-pqq7p", "device": i,
                                "device_hex": "0000:29:00", "device_info": "NVIDIA H100 80GB HBM3"} for i in range(8)]},
        "results": [{"size": r.size, "count": r.count, "type": r.type, "redop": r.redop, "root": f"{r.root:6d}",
                     "out_of_place": half(r.out_of_place) if r.out_of_place else None,
                     "in_place": half(r.in_place) if r.in_place else None,
                     "actual_iterations": 20, "experiment_name": "all_reduce"} for r in rows],
        "out_of_bounds": {"count": 0, "okay": "true"},
        "average_bus_bandwidth": {"bandwidth": 122.955, "okay": "unchecked"},
        "errors": [], "end_time": "2026-03-05 22:01:12"}
    doc.update(extra)
    return doc


@needs_nccl
def test_nccl_json_output_parses_like_the_text_log(tmp_path: Path, cli: Any) -> None:
    rows = list(nccl(TOGETHER).nccl[0].rows)
    file = tmp_path / "all_reduce.json"
    file.write_text(json.dumps(_json_log(rows)))
    result = cli("report", "nccl", str(file), "--format", "json")
    assert result.code == 0, result.err
    assert "do-not-print" not in result.out
    (run,) = json.loads(result.out)["runs"]
    assert (run["test"], run["ranks"], run["nodes"], run["busBandwidthGBps"], run["algBandwidthGBps"]) == (
        "all_reduce_perf", 8, ["gpu-dp-2jvzl-pqq7p"], 368.62, 210.64)
    assert (run["avgBusBandwidthGBps"], len(run["rows"]), run["rows"][0]["root"]) == (122.955, 31, -1)


@needs_nccl
@pytest.mark.parametrize(("change", "failure"), [
    ({"errors": ["remote process exited or there was a network error"]},
     "error: remote process exited or there was a network error"),
    ({"out_of_bounds": {"count": 108, "okay": "false"}}, "Out of bounds values: 108 FAILED"),
    ({"average_bus_bandwidth": {"bandwidth": 122.955, "okay": "false"}}, "Avg bus bandwidth 122.955 FAILED"),
    ({"results": []}, "no results: the run failed before measuring"),
])
def test_nccl_json_failures(change: dict[str, Any], failure: str) -> None:
    doc = _json_log(list(nccl(TOGETHER).nccl[0].rows), **change)
    report = parse_nccl(json.dumps(doc).encode(), "r.json")
    assert report.result == "FAILED"
    assert any(f.startswith(failure) for f in report.nccl[0].failures), report.nccl[0].failures


@needs_nccl
def test_nccl_json_wrong_elements_and_bad_values() -> None:
    doc = _json_log(list(nccl(TOGETHER).nccl[0].rows))
    doc["results"][3]["in_place"]["nwrong"] = 3.0
    assert parse_nccl(json.dumps(doc).encode(), "r.json").nccl[0].failures == (
        "3 wrong element(s) at size 64 B (in-place)",)
    doc["results"][3]["in_place"]["bus_bw"] = "nan"
    with pytest.raises(InvalidInputError, match=r"r\.json: results\[3\]\.in_place\.bus_bw: expected a number, found"):
        parse_nccl(json.dumps(doc).encode(), "r.json")
    with pytest.raises(InvalidInputError, match=r"r\.json:1: invalid JSON"):
        parse_nccl(b'{"results": [1e999', "r.json")


HEADER = """\
# nccl-tests version 2.17.9 nccl-headers=22602 nccl-library=22602
# Collective test starting: all_reduce_perf
# nThread 1 nGpus 8 minBytes 8 maxBytes 16 step: 2(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid 1583223 on node-a device  0 [0000:29:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw  #wrong     time   algbw   busbw  #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)             (us)  (GB/s)  (GB/s)
"""
ROW_8 = ("           8             2     float     sum      -1    34.98    0.00    0.00       0"
         "    34.52    0.00    0.00       0\n")
FOOTER = "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n#\n# Collective test concluded: all_reduce_perf\n"


@pytest.mark.parametrize(("log", "failure"), [
    (HEADER + ROW_8.replace("0.00       0\n", "0.00       5\n") + FOOTER, "5 wrong element(s) at size 8 B (in-place)"),
    (HEADER + ROW_8 + FOOTER.replace("0 OK", "108 FAILED"), "Out of bounds values: 108 FAILED (data corruption)"),
    (HEADER + ROW_8 + FOOTER.replace(": 0 \n", ": 0.5 FAILED\n"), "Avg bus bandwidth 0.5 FAILED"),
    (HEADER + ROW_8, "the log ends before the run's footer"),
    (HEADER + "# error: unhandled cuda error\n", "error: unhandled cuda error"),
    (HEADER + "node-a:1234:1234 [0] NCCL INFO noise\n--------------------\nmpirun noticed that process rank 0 "
     "with PID 0 on node node-a exited on signal 9 (Killed).\n", "mpirun noticed that process rank 0"),
])
def test_nccl_text_failures(log: str, failure: str) -> None:
    report = parse_nccl(log.encode(), "log")
    assert (report.result, report.exit_code) == ("FAILED", 1)
    assert any(f.startswith(failure) for f in report.nccl[0].failures), report.nccl[0].failures


def test_other_nccl_tests_layouts() -> None:
    """Old versions (no version line, no root column, ``error`` not ``#wrong``), per-iteration (-I 1),
    timestamps (-S 1) and CPU time (-C) lay the table out differently; the header decides."""
    old = ("# nThread 1 nGpus 2 minBytes 8 maxBytes 8 step: 2(factor) warmup iters: 5 iters: 20 validation: 1\n"
           "#   Rank  0 Pid  1234 on     host-1 device  0 [0x1b] Tesla V100-SXM2-32GB\n"
           "#       size         count      type   redop     time   algbw   busbw  error"
           "     time   algbw   busbw  error\n"
           "           8             2     float     sum    28.53    0.00    0.00  0e+00"
           "    28.10    0.00    0.00  0e+00\n"
           "# Out of bounds values : 0 OK\n# Avg bus bandwidth    : 0 \n")
    (run,) = parse_nccl(old.encode(), "old.log").nccl
    assert (run.test, run.hosts, run.gpus, run.rows[0].root, run.passed) == (
        "nccl-tests", ("host-1",), ("Tesla V100-SXM2-32GB",), -1, True)
    per_iter = (HEADER.replace("#wrong     time", "#wrong    i_min    i_max    i_p99    i_cv%     cputime")
                .replace("busbw  #wrong\n", "busbw  #wrong    i_min    i_max    i_p99    i_cv%   timestamp\n")
                .replace("       time", "    cputime", 1)
                + "           8             2     float     sum      -1    34.98    0.00    0.00       0"
                  "    30.1    40.2    39.9     3.1    34.52    0.00    1.50       0"
                  "    30.0    40.0    39.0     3.0  2026-03-05 22:00:43\n"
                + FOOTER)
    (run,) = parse_nccl(per_iter.encode(), "iter.log").nccl
    assert run.rows[0].in_place == report_model.Bandwidth(34.52, 0.0, 1.5, 0)
    assert run.max_busbw == report_model.Peak(1.5, 8, "in-place")


@pytest.mark.parametrize(("raw", "fragment"), [
    ((HEADER + ROW_8)[:-40].encode(), "log:11: result row has 8 fields, 13 expected"),
    (HEADER.encode() + b"           8             2     float     sum      -1    34.98    0.\xff0\n",
     "log:11: not valid UTF-8"),
    ((HEADER + ROW_8.replace("34.52    0.00    0.00", "34.52    0.00    1e999")).encode(), "log:11: in-place busbw"),
    ((HEADER + ROW_8.replace("           8 ", "9" * 60 + " ")).encode(), "log:11: size: "),
    ((HEADER + ROW_8.replace("0.00       0\n", "0.00    -1e9\n")).encode(), "log:11: in-place #wrong"),
    ((HEADER + ROW_8.replace("34.98    0.00", "34.98    99999999")).encode(), "out of range"),
    (b"", "log: the file is empty"),
    (b"hello\nworld\n", "log: no nccl-tests output found"),
    (b"#  size  count  busbw\n", "log:1: result header lacks the 'type' column"),
])
def test_hostile_nccl_logs_are_refused(tmp_path: Path, cli: Any, raw: bytes, fragment: str) -> None:
    (tmp_path / "log").write_bytes(raw)
    result = cli("report", "nccl", str(tmp_path / "log"))
    assert_refused(result, fragment.replace("log", str(tmp_path / "log"), 1))


def test_terminal_control_characters_in_a_log_are_escaped(cli: Any, tmp_path: Path) -> None:
    log = HEADER.replace("on node-a", "on node-\x1b[31ma") + ROW_8 + FOOTER
    (tmp_path / "log").write_text(log)
    result = cli("report", "nccl", str(tmp_path / "log"))
    assert result.code == 0
    assert "\x1b" not in result.out
    assert "node-\\x1b[31ma" in result.out


# ------------------------------------------------------------------------------------------------ DCGM


def _gpu(entity: int, status: str, *warnings: tuple[str, int]) -> dict[str, Any]:
    out: dict[str, Any] = {"entity_group": "GPU", "entity_group_id": 1, "entity_id": entity, "status": status}
    if warnings:
        out["warnings"] = [{"warning": text, "error_id": code, "error_category": 4, "error_severity": 2}
                           for text, code in warnings]
    return out


def _test(name: str, *gpus: dict[str, Any], summary: str | None = None) -> dict[str, Any]:
    worst = summary or ("Fail" if any(g["status"] == "Fail" for g in gpus) else "Pass")
    return {"name": name, "results": list(gpus), "test_summary": {"status": worst}}


def dcgm4(fail: bool = True) -> dict[str, Any]:
    """``dcgmi diag -r 4 -j`` from DCGM 4.x on two GPUs; GPU 1's memory test fails when ``fail``."""
    memory = _gpu(1, "Fail", ("Pending page retirements on GPU 1.", 83)) if fail else _gpu(1, "Pass")
    return {
        "DCGM Diagnostic": {"test_categories": [
            {"category": "Deployment", "tests": [_test("software", _gpu(0, "Pass"), _gpu(1, "Pass"))]},
            {"category": "Hardware", "tests": [_test("memory", _gpu(0, "Pass"), memory),
                                               _test("pcie", _gpu(0, "Pass"), _gpu(1, "Pass"))]},
            {"category": "Stress", "tests": [
                _test("targeted_stress", _gpu(0, "Warn", ("Clock throttling: power cap.", 45)), _gpu(1, "Pass"),
                      summary="Warn"),
                _test("eud", _gpu(0, "Skip"), _gpu(1, "Skip"), summary="Skip")]}]},
        "entity_groups": [{"entity_group": "GPU", "entity_group_id": 1, "entities": [
            {"entity_id": 0, "serial_num": "1650923000001", "device_id": "2330"},
            {"entity_id": 1, "serial_num": "1650923000002", "device_id": "2330"}]}],
        "metadata": {"version": "4.2.3", "Driver Version Detected": "580.82.09"}}


DCGM4_RUNTIME_ERROR = {"DCGM Diagnostic": {"runtime_error": "Error: unable to start diagnostic: DCGM_ST_IN_USE",
                                           "version": "4.2.3"},
                       "metadata": {"version": "4.2.3"}}

# DCGM 3.x (nvvs JsonOutput): tabs, null entries between tests, gpu_ids as a CSV string or an int,
# upper-case statuses, plain-string warnings, and a warning printed before the JSON.
DCGM3 = """WARNING: diag level 3 takes a long time
{
\t"DCGM GPU Diagnostic" : {
\t\t"test_categories" : [
\t\t\t{ "category" : "Deployment", "tests" : [
\t\t\t\t{ "name" : "Denylist", "results" : [ { "gpu_ids" : "0,1", "status" : "PASS" } ] },
\t\t\t\tnull,
\t\t\t\t{ "name" : "Persistence Mode", "results" : [ { "gpu_ids" : "0,1", "status" : "PASS" } ] } ] },
\t\t\t{ "category" : "Hardware", "tests" : [
\t\t\t\t{ "name" : "GPU Memory", "results" : [
\t\t\t\t\t{ "gpu_ids" : 0, "status" : "PASS" },
\t\t\t\t\t{ "gpu_ids" : "1", "status" : "FAIL", "warnings" : [ "GPU 1: double-bit ECC error" ],
\t\t\t\t\t  "info" : [ "Allocated 95% of memory" ] } ] } ] },
\t\t\t{ "category" : "Stress", "tests" : [
\t\t\t\t{ "name" : "Targeted Power", "results" : [ { "gpu_ids" : "0", "status" : "SKIPPED" },
\t\t\t\t\t{ "gpu_ids" : "1", "status" : "SKIPPED" } ] } ] }
\t\t],
\t\t"version" : "3.3.5"
\t},
\t"Driver Version Detected" : "535.104.05",
\t"GPU Device Serials" : { "0" : "1320121000001", "1" : "1320121000002" }
}
"""


@pytest.fixture(scope="module")
def dcgm_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(use_reference(DCGM_SCHEMA).read_text())
    return schema


def test_dcgm_fixtures_match_dcgms_own_schema(dcgm_schema: dict[str, Any]) -> None:
    """The copied schema (DCGM 4.6.0) describes the 4.x root only: the 4.x fixtures, runtime_error
    included, validate; the 3.x document does not, which is why the parser handles both roots."""
    validator = jsonschema.Draft7Validator(dcgm_schema)
    for doc in (dcgm4(), dcgm4(fail=False), DCGM4_RUNTIME_ERROR):
        validator.validate(doc)
    errors = list(validator.iter_errors(json.loads(DCGM3.split("\n", 1)[1])))
    assert [e.message for e in errors] == ["'DCGM Diagnostic' is a required property"]


def test_dcgm4_failure_names_the_gpu_and_test(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "diag.json").write_text(json.dumps(dcgm4()))
    report = parse_dcgm((tmp_path / "diag.json").read_bytes(), "diag.json")
    assert (report.result, report.exit_code) == ("FAILED", 1)
    assert report.reasons == ("memory: GPU 1 failed: Pending page retirements on GPU 1. (DCGM error 83)",)
    assert report.dcgm is not None
    assert [(t.category, t.name, t.status) for t in report.dcgm.tests] == [
        ("Deployment", "software", "pass"), ("Hardware", "memory", "fail"), ("Hardware", "pcie", "pass"),
        ("Stress", "targeted_stress", "warn"), ("Stress", "eud", "skip")]
    assert report.dcgm.entities() == [("GPU 0", "warn", []), ("GPU 1", "fail", ["memory"])]
    result = cli("report", "dcgm", str(tmp_path / "diag.json"), "--format", "json")
    data = json.loads(result.out)
    assert (result.code, data["layout"], data["version"], data["driver"], data["ran"]) == (
        1, "4.x", "4.2.3", "580.82.09", True)
    assert data["gpus"][1] == {"entity": "GPU 1", "serial": "1650923000002", "status": "fail",
                               "failedTests": ["memory"]}


def test_dcgm4_pass_with_warning_and_skip(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "diag.json").write_text(json.dumps(dcgm4(fail=False)))
    result = cli("report", "dcgm", str(tmp_path / "diag.json"))
    assert result.code == 0, result.out
    assert "Result: PASSED" in result.out
    assert "GPU 0 warn: Clock throttling: power cap. (DCGM error 45)" in result.out


def test_dcgm_runtime_error_did_not_run_and_blames_no_gpu(tmp_path: Path, cli: Any) -> None:
    (tmp_path / "diag.json").write_text(json.dumps(DCGM4_RUNTIME_ERROR))
    result = cli("report", "dcgm", str(tmp_path / "diag.json"), "--format", "json")
    data = json.loads(result.out)
    assert (result.code, data["result"], data["ran"], data["gpus"], data["tests"]) == (1, "INCOMPLETE", False, [], [])
    assert data["reasons"] == ["the diagnostic did not run (runtime_error): Error: unable to start diagnostic: "
                               "DCGM_ST_IN_USE"]


def test_dcgm3_layout(tmp_path: Path, cli: Any) -> None:
    report = parse_dcgm(DCGM3.encode(), "diag3.json")
    assert report.dcgm is not None
    assert (report.result, report.dcgm.layout, report.dcgm.version, report.dcgm.driver) == (
        "FAILED", "3.x", "3.3.5", "535.104.05")
    assert [(t.name, [(r.entity, r.status) for r in t.results]) for t in report.dcgm.tests] == [
        ("Denylist", [("GPU 0", "pass"), ("GPU 1", "pass")]),
        ("Persistence Mode", [("GPU 0", "pass"), ("GPU 1", "pass")]),
        ("GPU Memory", [("GPU 0", "pass"), ("GPU 1", "fail")]),
        ("Targeted Power", [("GPU 0", "skip"), ("GPU 1", "skip")])]
    assert report.reasons == ("GPU Memory: GPU 1 failed: GPU 1: double-bit ECC error",)
    assert dict(report.dcgm.serials) == {"GPU 0": "1320121000001", "GPU 1": "1320121000002"}
    (tmp_path / "diag3.json").write_text(DCGM3)
    markdown = cli("report", "dcgm", str(tmp_path / "diag3.json"), "--format", "markdown")
    assert markdown.code == 1
    assert "| Hardware | GPU Memory | **fail** | GPU 1 fail: GPU 1: double-bit ECC error |" in markdown.out


def test_dcgm4_test_failed_as_a_whole() -> None:
    """A summary that fails with no failing entity (a test that could not complete) still fails the report."""
    doc = dcgm4(fail=False)
    doc["DCGM Diagnostic"]["test_categories"][1]["tests"][1]["test_summary"] = {
        "status": "Fail", "warnings": [{"warning": "PCIe test timed out", "error_id": 12, "error_category": 1,
                                        "error_severity": 2}]}
    report = parse_dcgm(json.dumps(doc).encode(), "d.json")
    assert (report.result, report.reasons) == ("FAILED", ("pcie: failed: PCIe test timed out (DCGM error 12)",))


def test_dcgm3_runtime_error() -> None:
    doc = {"DCGM GPU Diagnostic": {"runtime_error": "The GPU is in use", "version": "3.3.5"}}
    report = parse_dcgm(json.dumps(doc).encode(), "d.json")
    assert (report.result, report.exit_code, report.reasons) == (
        "INCOMPLETE", 1, ("the diagnostic did not run (runtime_error): The GPU is in use",))


@pytest.mark.parametrize(("text", "fragment"), [
    ("no json here", "d.json: no JSON object found"),
    ('{"DCGM Diagnostic": {"test_categories": [\n  {"category": "x", "tests": [}', "d.json:2: invalid JSON"),
    ('{"diag": {}}', "neither 'DCGM Diagnostic' (DCGM 4.x) nor 'DCGM GPU Diagnostic'"),
    (json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "c", "tests": [_test("m", _gpu(0, "Maybe"))]}]}}),
     "DCGM Diagnostic.test_categories[0].tests[0].results[0].status: unknown status 'Maybe'"),
    (json.dumps({"DCGM Diagnostic": {"test_categories": [{"category": "c", "tests": [{"results": []}]}]}}),
     "DCGM Diagnostic.test_categories[0].tests[0].name: missing"),
    ('{"a":' * 100_000 + "1" + "}" * 100_000, "d.json: invalid JSON: nested too deeply"),
])
def test_hostile_dcgm_documents_are_refused(tmp_path: Path, cli: Any, text: str, fragment: str) -> None:
    (tmp_path / "d.json").write_text(text)
    file = str(tmp_path / "d.json")
    assert_refused(cli("report", "dcgm", file), fragment.replace("d.json", file))


# ------------------------------------------------------------------------------------------------ Certification

FAILED_NODES = [{"name": "gpu-node-03", "reason": "WorkloadFailed",
                 "message": "job nccl-all-reduce-g0 failed: BackoffLimitExceeded"},
                {"name": "gpu-node-01", "reason": "WorkloadFailed",
                 "message": "job nccl-all-reduce-g0 failed: BackoffLimitExceeded"},
                {"name": "gpu-node-07", "reason": "HardwareFailureDetected", "message": "node cordoned mid-run"}]


def certification(condition: str = "Failed", categories: list[dict[str, Any]] | None = None,
                  **extra_status: Any) -> dict[str, Any]:
    """A Certification as ``kubectl get certification -o yaml`` prints it after NVCRE ran it."""
    cats = categories if categories is not None else [
        {"domain": "diagnostics", "variant": "dcgm-level4", "status": "Succeeded",
         "workflowRef": {"name": "gpu-cert-dcgm", "namespace": "nvcre-system"}},
        {"domain": "communication", "variant": "nccl-all-reduce", "status": "Failed",
         "workflowRef": {"name": "gpu-cert-nccl", "namespace": "nvcre-system"},
         "failedNodesRef": {"kind": "ConfigMap", "name": "gpu-cert-nccl-failed-nodes"},
         "succeededNodesRef": {"kind": "ConfigMap", "name": "gpu-cert-nccl-succeeded-nodes"}}]
    conditions = [{"type": t, "status": "True" if t == condition else "False", "reason": f"Certification{t}",
                   "message": f"{t} message", "lastTransitionTime": "2026-09-01T10:00:00Z"}
                  for t in ("InProgress", "Succeeded", "Failed")]
    return {"apiVersion": "nvcre.nvidia.com/v1alpha1", "kind": "Certification",
            "metadata": {"name": "gpu-cert", "namespace": "nvcre-system"},
            "spec": {"target": {"nodeSelector": {"nvidia.com/gpu.present": "true"}},
                     "categories": [{"domain": "diagnostics", "variant": "dcgm-level4"},
                                    {"domain": "communication", "variant": "nccl-all-reduce",
                                     "options": {"thresholds": {"busBandwidthGBps": "value >= 300"}}}]},
            "status": {"conditions": conditions, "categoryStatuses": cats, **extra_status}}


def gz64(data: bytes) -> str:
    return base64.b64encode(gzip.compress(data, mtime=0)).decode()


def configmap(name: str = "gpu-cert-nccl-failed-nodes", rows: Any = FAILED_NODES, *, section: str = "binaryData",
              value: str | None = None, key: str = nvcre_status.FAILED_KEY) -> dict[str, Any]:
    payload = value if value is not None else gz64(json.dumps(rows).encode())
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "nvcre-system"},
            section: {key: payload}}


def write(tmp_path: Path, name: str, data: Any) -> str:
    (tmp_path / name).write_text(yaml.safe_dump(data, sort_keys=False))
    return str(tmp_path / name)


def test_failed_certification_with_its_gzip_configmap(tmp_path: Path, cli: Any) -> None:
    cert = write(tmp_path, "cert.yaml", certification())
    nodes = write(tmp_path, "cm.yaml", {"apiVersion": "v1", "kind": "List", "items": [
        configmap(), configmap("gpu-cert-nccl-succeeded-nodes", value=gz64(b"gpu-node-02,gpu-node-04"),
                               key=nvcre_status.SUCCEEDED_KEY),
        configmap("unrelated", value=gz64(b"[]"))]})
    result = cli("report", "certification", cert, "--failed-nodes", nodes, "--format", "json")
    assert result.code == 1, result.err
    data = json.loads(result.out)
    assert (data["result"], data["name"], data["failedNodes"]) == (
        "FAILED", "gpu-cert", ["gpu-node-01", "gpu-node-03", "gpu-node-07"])
    assert data["reasons"] == ["Failed=True (CertificationFailed: Failed message)",
                               "category communication/nccl-all-reduce failed on 3 node(s)"]
    assert data["failedNodeDetails"][2] == {"name": "gpu-node-07", "reason": "HardwareFailureDetected",
                                            "message": "node cordoned mid-run",
                                            "category": "communication/nccl-all-reduce"}
    text = cli("report", "certification", cert, "--failed-nodes", nodes).out
    assert "gpu-node-07  HardwareFailureDetected  communication/nccl-all-reduce  node cordoned mid-run" in text


def test_failed_certification_without_its_configmap_says_where_the_nodes_are(tmp_path: Path, cli: Any) -> None:
    result = cli("report", "certification", write(tmp_path, "cert.yaml", certification()))
    assert result.code == 1
    assert ("category communication/nccl-all-reduce failed; its failed nodes are in ConfigMap "
            "gpu-cert-nccl-failed-nodes (pass it with --failed-nodes)") in result.out


@pytest.mark.parametrize(("section", "value"), [
    ("data", gz64(json.dumps(FAILED_NODES).encode())),
    ("data", json.dumps(FAILED_NODES)),
])
def test_node_lists_in_data_or_binary_data(section: str, value: str) -> None:
    (lists,) = nvcre_status.parse_node_lists(yaml.safe_dump(configmap(section=section, value=value)).encode(),
                                             "cm.yaml")
    assert [row.name for row in lists.failed or ()] == ["gpu-node-03", "gpu-node-01", "gpu-node-07"]


def test_multi_member_gzip_is_read_whole() -> None:
    """Go's gzip reader reads concatenated members; so do we (a list appended in two writes)."""
    raw = gzip.compress(b"gpu-node-01,", mtime=0) + gzip.compress(b"gpu-node-02", mtime=0)
    cm = configmap(value=base64.b64encode(raw).decode(), key=nvcre_status.SUCCEEDED_KEY)
    (lists,) = nvcre_status.parse_node_lists(yaml.safe_dump(cm).encode(), "cm.yaml")
    assert lists.succeeded == ("gpu-node-01", "gpu-node-02")


@pytest.mark.parametrize(("condition", "category_status", "expected"), [
    ("Succeeded", "Succeeded", (0, "PASSED")),
    ("InProgress", "InProgress", (0, "RUNNING")),
    ("Succeeded", "Pending", (0, "INCOMPLETE")),
    ("Failed", None, (1, "FAILED")),
])
def test_certification_results(tmp_path: Path, cli: Any, condition: str, category_status: str | None,
                               expected: tuple[int, str]) -> None:
    categories = [{"domain": "communication", "variant": "nccl-all-reduce", "status": category_status}]
    doc = certification(condition, categories if category_status else [])
    result = cli("report", "certification", write(tmp_path, "c.yaml", doc))
    assert (result.code, result.out.splitlines()[1]) == (expected[0], f"Result: {expected[1]}"), result.out


def test_validation_failed_condition_fails_a_succeeded_certification(tmp_path: Path, cli: Any) -> None:
    doc = certification("Succeeded", [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded"}])
    doc["status"]["conditions"].append({"type": "ValidationFailed", "status": "True", "reason": "ThresholdViolated",
                                        "message": 'Threshold "busBandwidthGBps" violated: measured 250.0000, '
                                                   "expression: value >= 300"})
    result = cli("report", "certification", write(tmp_path, "c.yaml", doc), "--format", "markdown")
    assert result.code == 1
    assert result.out.startswith("### Certification report: **FAILED**\n")
    assert 'ValidationFailed=True (ThresholdViolated: Threshold "busBandwidthGBps" violated' in result.out.replace(
        "\\", "")


def test_untested_target_nodes_make_a_pass_incomplete(tmp_path: Path, cli: Any) -> None:
    doc = certification("Succeeded", [{"domain": "communication", "variant": "nccl-all-reduce", "status": "Succeeded",
                                       "succeededNodesRef": {"kind": "ConfigMap", "name": "ok-nodes"}}])
    doc["spec"]["target"] = {"nodeNames": ["gpu-node-01", "gpu-node-02", "gpu-node-03"]}
    cm = configmap("ok-nodes", value=gz64(b"gpu-node-01,gpu-node-02"), key=nvcre_status.SUCCEEDED_KEY)
    result = cli("report", "certification", write(tmp_path, "c.yaml", doc), "--failed-nodes",
                 write(tmp_path, "cm.yaml", cm))
    assert result.code == 0
    assert "INCOMPLETE" in result.out
    assert "1 target node(s) in no succeeded-nodes list: gpu-node-03" in result.out


def test_certification_markdown_snapshot(tmp_path: Path, cli: Any, snapshot: Any,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    write(tmp_path, "cert.yaml", certification())
    write(tmp_path, "cm.yaml", configmap())
    result = cli("report", "certification", "cert.yaml", "--failed-nodes", "cm.yaml", "--format", "markdown")
    assert result.code == 1
    assert result.out == snapshot(extension_class=MarkdownSnapshot)


def _bomb() -> str:
    return base64.b64encode(gzip.compress(b" " * (nvcre_status.MAX_GUNZIP + 1024), compresslevel=9, mtime=0)).decode()


@pytest.mark.parametrize(("cm", "fragment"), [
    (configmap(value=_bomb()), "cm.yaml:7: binaryData.failed-nodes.json.gz: decompresses to more than 33554432 bytes"),
    (configmap(value="not base64!"), "cm.yaml:7: binaryData.failed-nodes.json.gz: binaryData is not valid base64"),
    (configmap(value=base64.b64encode(b"\x1f\x8b\x08garbage").decode()), "not valid gzip"),
    (configmap(value=base64.b64encode(gzip.compress(b"[]")[:-6]).decode()), "gzip data is truncated"),
    (configmap(rows=[{"name": "Bad Node!", "reason": "x"}]), "'Bad Node!' is not a Kubernetes node name"),
    (configmap(rows={"name": "x"}), "expected a JSON array of {name, reason, message}"),
    (configmap(value=gz64(b"\xff\xfe")), "not valid UTF-8"),
    (configmap("someone-else"), "refers to ConfigMap(s) gpu-cert-nccl-failed-nodes, gpu-cert-nccl-succeeded-nodes; "
                                "--failed-nodes holds someone-else"),
    ({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}}, "cm.yaml:2: kind: kind 'Secret' is not"),
])
def test_hostile_configmaps_are_refused(tmp_path: Path, cli: Any, cm: dict[str, Any], fragment: str) -> None:
    cert = write(tmp_path, "cert.yaml", certification())
    result = cli("report", "certification", cert, "--failed-nodes", write(tmp_path, "cm.yaml", cm))
    assert_refused(result, fragment.replace("cm.yaml", str(tmp_path / "cm.yaml"), 1))


@pytest.mark.parametrize(("change", "fragment"), [
    (lambda d: d.update(apiVersion="example.com/v1"), "'example.com/v1' is not an NVCRE Certification"),
    (lambda d: d.update(kind="Workflow"), "kind 'Workflow' is not Certification"),
    (lambda d: d["status"]["categoryStatuses"][0].update(status="Done"), "'Done' is not one of Pending, InProgress"),
    (lambda d: d["status"].update(conditions="yes"), "status.conditions: expected a list"),
    (lambda d: d["spec"]["target"].update(nodeNames=["ok", "NOT OK"]), "spec.target.nodeNames[1]: 'NOT OK' is not"),
    (lambda d: d["metadata"].pop("name"), "metadata.name: missing"),
])
def test_hostile_certifications_are_refused(tmp_path: Path, cli: Any, change: Any, fragment: str) -> None:
    doc = certification()
    change(doc)
    assert_refused(cli("report", "certification", write(tmp_path, "c.yaml", doc)), fragment)


def test_report_of_a_missing_file_and_stdin(cli: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert_refused(cli("report", "nccl", str(tmp_path / "nope.log")), "cannot read")
    assert_refused(cli("report", "dcgm", str(tmp_path)), "is a folder")
    assert_refused(cli("report", "dcgm", "x.json", "--threshold", "busBandwidthGBps=value > 1"),
                   "--threshold applies to `report nccl`")
    import io
    import sys

    stdin = io.TextIOWrapper(io.BytesIO(json.dumps(dcgm4(fail=False)).encode()))
    monkeypatch.setattr(sys, "stdin", stdin)
    result = cli("report", "dcgm", "-")
    assert (result.code, result.out.splitlines()[:2]) == (0, ["DCGM diagnostic report: -", "Result: PASSED"])


def test_every_format_renders_every_kind() -> None:
    reports = [parse_dcgm(json.dumps(dcgm4()).encode(), "d"), parse_dcgm(DCGM3.encode(), "d3"),
               nvcre_status.certification_report(nvcre_status.parse_certifications(
                   yaml.safe_dump(certification()).encode(), "c")[0])]
    for report in reports:
        for fmt in ("text", "json", "markdown"):
            out = report_format.render(report, fmt)
            assert out.endswith("\n") and report.result in out
