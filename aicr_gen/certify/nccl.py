"""nccl-tests output as a report: the stdout table (one run per ``# Collective test starting``; several runs
per log) or ``-J`` JSON. ``busBandwidthGBps`` is the max busbw over every row, out-of-place and in-place, as
NVCRE measures it; the footer's "Avg bus bandwidth" (mean of every busbw) is kept beside it.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any

from aicr_gen.certify.input_checks import MAX_VALUE, JsonReader, bounded, input_error, json_loads, printable
from aicr_gen.certify.report_model import FAILED, PASSED, Bandwidth, NcclRow, NcclRun, Report
from aicr_gen.errors import InvalidInputError
from aicr_gen.located import Located
from aicr_gen.yaml import FieldPath, decode, shorten

MAX_BANDWIDTH = 1e7
"""GB/s; ten petabytes a second is no link we know, so a larger value is a corrupt file."""

MAX_SIZE = 2**63 - 1
MAX_TOKEN = 40


def parse_nccl(raw: bytes, source: str) -> Report:
    """An nccl-tests log (stdout, one or more runs) or ``-J`` JSON file, as a report."""
    text = decode(raw, source)
    if not text.strip():
        raise input_error(source, "the file is empty; give nccl-tests output (stdout or -J JSON)")
    runs = (_nccl_json(json_loads(text, source), source),) if text.lstrip().startswith("{") else (
        _NcclText(source).parse(text))
    reasons = tuple(f"{run.test}: {failure}" for run in runs for failure in run.failures)
    return Report(kind="nccl", source=source, result=FAILED if reasons else PASSED, reasons=reasons, nccl=runs)


_RANK = re.compile(r"^#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)\Z")
_FAILURE = re.compile(r"Test (?:NCCL |CUDA )?failure|exited on signal|returned a non-zero exit code")
_FAILURE_HOST = re.compile(r"^(?:\.\.\s+)?([^\s:]+)(?::| pid \d+:)\s+Test ")
_TIME_COLUMNS = ("time", "cputime")


@dataclass
class _RunBuilder:
    line: int
    test: str = ""
    version: str | None = None
    config: bool = False
    ranks: int = 0
    hosts: dict[str, None] = field(default_factory=dict)
    gpus: dict[str, None] = field(default_factory=dict)
    columns: list[str] | None = None
    rows: list[NcclRow] = field(default_factory=list)
    footer: bool = False
    avg: float | None = None
    avg_failed: bool = False
    oob: int | None = None
    oob_failed: bool = False
    errors: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def started(self) -> bool:
        return bool(self.test or self.config or self.rows or self.footer or self.columns)

    def build(self) -> NcclRun:
        failures: list[str] = []
        for message, count in self.errors.items():
            failures.append(message + (f" (x{count})" if count > 1 else ""))
        if not self.rows:
            failures.append("no result table: the run failed before printing results")
        elif not self.footer:
            failures.append("the log ends before the run's footer ('# Out of bounds values'): the run did not finish")
        for row in self.rows:
            for place, bw in row.halves():
                if bw.wrong:
                    failures.append(f"{bw.wrong} wrong element(s) at size {row.size} B ({place}), line {row.line}")
        if self.oob_failed or self.oob:
            failures.append(f"Out of bounds values: {self.oob} FAILED (data corruption)")
        if self.avg_failed:
            failures.append(f"Avg bus bandwidth {self.avg:g} FAILED (below 0.9 x NCCL_TESTS_MIN_BW)")
        return NcclRun(test=self.test or "nccl-tests", line=self.line, version=self.version, ranks=self.ranks,
                       hosts=tuple(self.hosts), gpus=tuple(self.gpus), rows=tuple(self.rows),
                       avg_busbw=self.avg, out_of_bounds=self.oob, failures=tuple(failures), notes=tuple(self.notes))


class _NcclText:
    """The nccl-tests stdout parser: header-driven columns, several runs per log, noise lines ignored."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.runs: list[_RunBuilder] = []
        self.cur: _RunBuilder | None = None

    def fail(self, line: int, message: str) -> InvalidInputError:
        return InvalidInputError.at(Located(self.source, line, message))

    def new(self, line: int) -> _RunBuilder:
        self.cur = _RunBuilder(line)
        self.runs.append(self.cur)
        return self.cur

    def run(self, line: int) -> _RunBuilder:
        return self.cur if self.cur is not None else self.new(line)

    def parse(self, text: str) -> tuple[NcclRun, ...]:
        for number, line in enumerate(text.splitlines(), start=1):
            stripped = line.strip()
            if stripped.startswith("#"):
                self.comment(number, stripped, stripped[1:].strip())
            elif stripped[:1].isdigit() and stripped.split(None, 1)[0].isdigit() and self.in_table():
                self.row(number, stripped.split())
            elif _FAILURE.search(stripped):
                self.failure(number, stripped)
        if not self.runs:
            raise input_error(self.source, "no nccl-tests output found (no '# nccl-tests version', "
                        "'# Collective test starting' or '#  size  count  type ...' header); "
                        "give the stdout of an *_perf run or its -J JSON file")
        return tuple(run.build() for run in self.runs)

    def in_table(self) -> bool:
        return self.cur is not None and self.cur.columns is not None and not self.cur.footer

    def comment(self, number: int, line: str, body: str) -> None:
        cur = self.cur
        if body.startswith("nccl-tests version"):
            run = self.new(number) if cur is None or cur.started or cur.version else cur
            run.version = body.split()[2] if len(body.split()) > 2 else None
        elif body.startswith("Collective test starting:"):
            run = self.new(number) if cur is None or cur.test or cur.config or cur.rows or cur.footer else cur
            run.test = printable(body.partition(":")[2].strip(), 80)
        elif body.startswith("nThread"):
            run = self.new(number) if cur is None or cur.config or cur.rows or cur.footer else cur
            run.config = True
        elif match := _RANK.match(line):
            run = self.run(number)
            run.ranks += 1
            run.hosts.setdefault(printable(match.group(1), 253), None)
            if match.group(2).strip():
                run.gpus.setdefault(printable(match.group(2).strip(), 120), None)
        elif body.split()[:2] == ["size", "count"] or ("size" in body.split() and "busbw" in body.split()):
            run = self.new(number) if cur is None or cur.rows or cur.footer else cur
            run.columns = body.split()
            self.check_columns(number, run.columns)
        elif body.startswith("Out of bounds values"):
            run = self.run(number)
            run.footer = True
            words = body.partition(":")[2].split()
            run.oob = self.integer(number, words[0], "Out of bounds values") if words else None
            run.oob_failed = "FAILED" in words
        elif body.startswith("Avg bus bandwidth"):
            run = self.run(number)
            run.footer = True
            words = body.partition(":")[2].split()
            run.avg = self.decimal(number, words[0], "Avg bus bandwidth", MAX_BANDWIDTH) if words else None
            run.avg_failed = "FAILED" in words
        elif body.startswith("error:"):
            self.failure(number, line)
        elif "Reducing maxBytes" in body:
            self.run(number).notes.append(printable(body.strip("[]"), 200))

    def check_columns(self, number: int, columns: list[str]) -> None:
        times = [i for i, name in enumerate(columns) if name in _TIME_COLUMNS]
        for name in ("size", "count", "type", "redop"):
            if name not in columns:
                raise self.fail(number, f"result header lacks the {name!r} column; is this nccl-tests output?")
        if len(times) != 2 or any(columns[i + 1:i + 3] != ["algbw", "busbw"] for i in times):
            raise self.fail(number, "result header is not 'time algbw busbw #wrong' for out-of-place then in-place; "
                            "is this nccl-tests output?")

    def integer(self, number: int, token: str, what: str, minimum: int = 0) -> int:
        if len(token) > MAX_TOKEN:
            raise self.fail(number, f"{what}: {shorten(token, 30)!r} is too long for a number; the log is corrupt")
        try:
            value = float(token) if any(ch in token for ch in ".eE") else int(token)
        except ValueError:
            raise self.fail(number, f"{what}: {shorten(token, 30)!r} is not a number; the log is corrupt") from None
        if not math.isfinite(value) or value < minimum or value > MAX_SIZE or value != int(value):
            raise self.fail(number, f"{what}: {shorten(token, 30)} is out of range; the log is corrupt")
        return int(value)

    def decimal(self, number: int, token: str, what: str, limit: float = MAX_VALUE) -> float:
        if len(token) > MAX_TOKEN:
            raise self.fail(number, f"{what}: {shorten(token, 30)!r} is too long for a number; the log is corrupt")
        try:
            value = float(token)
        except ValueError:
            raise self.fail(number, f"{what}: {shorten(token, 30)!r} is not a number; the log is corrupt") from None
        return bounded(value, limit, lambda msg: self.fail(number, f"{what}: {msg}"))

    def half(self, number: int, tokens: list[str], start: int, place: str) -> Bandwidth:
        wrong = tokens[start + 3]
        return Bandwidth(time_us=self.decimal(number, tokens[start], f"{place} time"),
                         algbw=self.decimal(number, tokens[start + 1], f"{place} algbw", MAX_BANDWIDTH),
                         busbw=self.decimal(number, tokens[start + 2], f"{place} busbw", MAX_BANDWIDTH),
                         wrong=None if wrong == "N/A" else self.integer(number, wrong, f"{place} #wrong"))

    def row(self, number: int, tokens: list[str]) -> None:
        run = self.cur
        assert run is not None and run.columns is not None
        columns = run.columns
        oop, inp = (i for i, name in enumerate(columns) if name in _TIME_COLUMNS)
        width = inp - oop
        need = inp + 4
        if len(tokens) >= need:
            shift = 0
        elif len(tokens) == need - width:
            shift = width
        else:
            raise self.fail(number, f"result row has {len(tokens)} fields, {need} expected by the header on the "
                            "columns above; the log is truncated or corrupt")

        def at(name: str) -> str | None:
            return tokens[columns.index(name)] if name in columns else None

        root = at("root")
        type_, redop = at("type") or "", at("redop") or ""
        run.rows.append(NcclRow(
            size=self.integer(number, tokens[0], "size"), count=self.integer(number, tokens[1], "count"),
            type=printable(type_, 20), redop=printable(redop, 20),
            root=self.integer(number, root, "root", minimum=-1) if root is not None else -1,
            out_of_place=None if shift else self.half(number, tokens, oop, "out-of-place"),
            in_place=self.half(number, tokens, inp - shift, "in-place"), line=number))

    def failure(self, number: int, line: str) -> None:
        run = self.run(number)
        message = printable(line.lstrip("# ").strip(), 300)
        host = _FAILURE_HOST.match(line.strip())
        if host and line.strip().startswith(".."):
            message = f"{host.group(1)}: {printable(line.strip().split(': ', 1)[-1], 300)}"
        run.errors[message] = run.errors.get(message, 0) + 1


def _nccl_json(data: Any, source: str) -> NcclRun:
    js = JsonReader(source)
    if not isinstance(data, dict) or not ({"results", "config", "nccl_version"} & set(data)):
        raise input_error(source, "not nccl-tests -J output (expected an object with 'config' and 'results')")
    args = js.get(data, (), "args", list, required=False) or []
    test = "nccl-tests"
    if args and isinstance(args[0], str):
        test = printable(args[0].replace("\\", "/").rsplit("/", 1)[-1], 80)
    config = js.get(data, (), "config", dict, required=False) or {}
    devices = js.get(config, ("config",), "devices", list, required=False) or []
    hosts: dict[str, None] = {}
    gpus: dict[str, None] = {}
    for i, device in enumerate(devices):
        if not isinstance(device, dict):
            raise js.fail(("config", "devices", i), "expected a mapping")
        host = js.get(device, ("config", "devices", i), "hostname", str, required=False)
        info = js.get(device, ("config", "devices", i), "device_info", str, required=False)
        if host:
            hosts.setdefault(printable(host, 253), None)
        if info:
            gpus.setdefault(printable(info, 120), None)
    rows = [_json_row(js, item, ("results", i)) for i, item in
            enumerate(js.get(data, (), "results", list, required=False) or [])]
    failures = [f"error: {printable(str(err), 300)}" for err in
                js.get(data, (), "errors", list, required=False) or [] if str(err).strip()]
    oob = js.get(data, (), "out_of_bounds", dict, required=False)
    oob_count = None
    if oob is not None:
        oob_count = int(js.number(oob, ("out_of_bounds",), "count", MAX_SIZE))
        if oob_count or _json_false(oob.get("okay")):
            failures.append(f"Out of bounds values: {oob_count} FAILED (data corruption)")
    average = js.get(data, (), "average_bus_bandwidth", dict, required=False)
    avg = None
    if average is not None:
        avg = js.number(average, ("average_bus_bandwidth",), "bandwidth", MAX_BANDWIDTH)
        if _json_false(average.get("okay")):
            failures.append(f"Avg bus bandwidth {avg:g} FAILED (below 0.9 x NCCL_TESTS_MIN_BW)")
    for row in rows:
        for place, bw in row.halves():
            if bw.wrong:
                failures.append(f"{bw.wrong} wrong element(s) at size {row.size} B ({place})")
    if not rows:
        failures.append("no results: the run failed before measuring")
    elif average is None:
        failures.append("no 'average_bus_bandwidth': the run did not finish")
    return NcclRun(test=test, line=1, version=None, ranks=len(devices), hosts=tuple(hosts), gpus=tuple(gpus),
                   rows=tuple(rows), avg_busbw=avg, out_of_bounds=oob_count, failures=tuple(failures))


def _json_false(value: Any) -> bool:
    """nccl-tests writes booleans as the strings "true"/"false" (and "unchecked")."""
    return value is False or value == "false"


def _json_row(js: JsonReader, item: Any, path: FieldPath) -> NcclRow:
    if not isinstance(item, dict):
        raise js.fail(path, "expected a mapping")
    root_value = js.get(item, path, "root", (str, int), required=False)
    try:
        root = int(str(root_value).strip()) if root_value is not None else -1
    except ValueError:
        raise js.fail((*path, "root"), f"{shorten(str(root_value), 30)!r} is not an integer") from None

    def half(key: str) -> Bandwidth | None:
        obj = js.get(item, path, key, dict, required=False)
        if obj is None:
            return None
        where = (*path, key)
        time_key = "cpu_time" if "cpu_time" in obj else "time"
        wrong = obj.get("nwrong")
        if wrong is not None and (isinstance(wrong, bool) or not isinstance(wrong, (int, float))):
            raise js.fail((*where, "nwrong"), f"expected a number or null, found {type(wrong).__name__}")
        return Bandwidth(time_us=js.number(obj, where, time_key), algbw=js.number(obj, where, "alg_bw", MAX_BANDWIDTH),
                         busbw=js.number(obj, where, "bus_bw", MAX_BANDWIDTH),
                         wrong=None if wrong is None else int(bounded(float(wrong), MAX_SIZE,
                                                                       lambda m: js.fail((*where, "nwrong"), m))))

    out_of_place, in_place = half("out_of_place"), half("in_place")
    if out_of_place is None and in_place is None:
        raise js.fail(path, "neither out_of_place nor in_place results")
    return NcclRow(size=int(js.number(item, path, "size", MAX_SIZE)),
                   count=int(js.number(item, path, "count", MAX_SIZE)), type=printable(str(item.get("type", "")), 20),
                   redop=printable(str(item.get("redop", "")), 20),
                   root=root, out_of_place=out_of_place, in_place=in_place)

