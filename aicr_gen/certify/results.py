"""Offline results: nccl-tests output, ``dcgmi diag -j`` JSON and NVCRE Certification status, each parsed
into one report model (:class:`Report`) whose ``result`` is NVCRE's PASSED, FAILED, INCOMPLETE or RUNNING.

Pure: every parser takes the file's bytes and a source name for messages; nothing here reads files,
the clock or the environment. Bad input raises :class:`InvalidInputError` (exit 2) naming the file and
the line (text and YAML) or the key path (JSON). A result that ran and failed is not an error: it is a
report whose ``result`` is FAILED (exit 1).

- nccl-tests: the stdout table (one run per ``# Collective test starting``; several runs per log) or
  ``-J`` JSON. ``busBandwidthGBps`` is the max busbw over every row, out-of-place and in-place, as NVCRE
  measures it; the footer's "Avg bus bandwidth" (mean of every busbw) is kept beside it.
- DCGM: the 4.x root ``DCGM Diagnostic`` (entity results) and the 3.x root ``DCGM GPU Diagnostic``
  (``gpu_ids`` results). ``runtime_error`` means the diagnostic did not run: no GPU is blamed, and the
  report is INCOMPLETE without a verdict (exit 1, a gate cannot pass on it).
- Certification: conditions and categoryStatuses, plus the failed-nodes ConfigMaps its categories
  reference (``failed-nodes.json.gz``: gzip JSON ``[{name, reason, message}]``; ``succeeded-nodes.csv.gz``:
  gzip CSV), in ``binaryData`` (base64) or ``data`` (base64 or plain text), decompressed with a bound.
"""

from __future__ import annotations

import base64
import binascii
import json
import math
import re
import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from aicr_gen.errors import InvalidInputError
from aicr_gen.yamlio import Document, Path, decode, format_path, load_bytes, shorten

PASSED = "PASSED"
FAILED = "FAILED"
INCOMPLETE = "INCOMPLETE"
RUNNING = "RUNNING"

MAX_GUNZIP = 32 * 1024 * 1024
"""Bound on a decompressed node list: 10,000 failed nodes with long messages stay far below it."""

MAX_BANDWIDTH = 1e7
"""GB/s; ten petabytes a second is no link we know, so a larger value is a corrupt file."""

MAX_VALUE = 1e15
MAX_SIZE = 2**63 - 1
MAX_TOKEN = 40

NCCL_MEASURED = ("algBandwidthGBps", "busBandwidthGBps")
"""The threshold keys an nccl-tests run measures (NVCRE's names)."""

NODE_NAME = re.compile(r"^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$")
"""A Kubernetes node name (DNS-1123 subdomain)."""


# ------------------------------------------------------------------------------------------------ model


@dataclass(frozen=True, slots=True)
class Bandwidth:
    """One half (out-of-place or in-place) of an nccl-tests result row."""

    time_us: float
    algbw: float
    busbw: float
    wrong: int | None
    """Wrong elements; None when the run did not check (``N/A``)."""


@dataclass(frozen=True, slots=True)
class NcclRow:
    """One message size of an nccl-tests run."""

    size: int
    count: int
    type: str
    redop: str
    root: int
    out_of_place: Bandwidth | None
    in_place: Bandwidth | None
    line: int = 0
    """Line in the log (0 for ``-J`` JSON)."""

    def halves(self) -> Iterable[tuple[str, Bandwidth]]:
        """``("out-of-place", bw)`` and ``("in-place", bw)`` for the halves present."""
        if self.out_of_place is not None:
            yield "out-of-place", self.out_of_place
        if self.in_place is not None:
            yield "in-place", self.in_place


@dataclass(frozen=True, slots=True)
class Peak:
    """Where a maximum was measured."""

    value: float
    size: int
    place: str


@dataclass(frozen=True, slots=True)
class NcclRun:
    """One collective test (``all_reduce_perf`` ...) as nccl-tests reported it."""

    test: str
    line: int
    version: str | None
    ranks: int
    hosts: tuple[str, ...]
    gpus: tuple[str, ...]
    rows: tuple[NcclRow, ...]
    avg_busbw: float | None
    out_of_bounds: int | None
    failures: tuple[str, ...]
    notes: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return not self.failures

    def _peak(self, pick: Callable[[Bandwidth], float]) -> Peak | None:
        best: Peak | None = None
        for row in self.rows:
            for place, bw in row.halves():
                if best is None or pick(bw) > best.value:
                    best = Peak(pick(bw), row.size, place)
        return best

    @property
    def max_busbw(self) -> Peak | None:
        """NVCRE's ``busBandwidthGBps``: the largest busbw over every size, out-of-place and in-place."""
        return self._peak(lambda bw: bw.busbw)

    @property
    def max_algbw(self) -> Peak | None:
        """NVCRE's ``algBandwidthGBps``."""
        return self._peak(lambda bw: bw.algbw)

    def measurements(self) -> dict[str, float]:
        """Threshold inputs, NVCRE names; empty when the run printed no results."""
        bus, alg = self.max_busbw, self.max_algbw
        if bus is None or alg is None:
            return {}
        return {"algBandwidthGBps": alg.value, "busBandwidthGBps": bus.value}


@dataclass(frozen=True, slots=True)
class DcgmResult:
    """One entity's (GPU's) outcome of one DCGM test."""

    entity: str
    status: str
    """pass, fail, warn, skip or not-run."""
    warnings: tuple[str, ...] = ()
    info: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class DcgmTest:
    """One DCGM test (``memory``, ``pcie``, ``targeted_stress`` ...)."""

    category: str
    name: str
    status: str
    results: tuple[DcgmResult, ...]
    warnings: tuple[str, ...] = ()
    """The test summary's own warnings (DCGM 4.x), for failures no single entity carries."""


@dataclass(frozen=True, slots=True)
class DcgmDiag:
    """A ``dcgmi diag -j`` document."""

    layout: str
    """``4.x`` (root "DCGM Diagnostic") or ``3.x`` (root "DCGM GPU Diagnostic")."""
    version: str | None
    driver: str | None
    runtime_error: str | None
    tests: tuple[DcgmTest, ...]
    serials: tuple[tuple[str, str], ...] = ()

    @property
    def ran(self) -> bool:
        return self.runtime_error is None and bool(self.tests)

    def entities(self) -> list[tuple[str, str, list[str]]]:
        """``(entity, worst status, failed test names)`` per entity, in first-seen order."""
        worst: dict[str, str] = {}
        failed: dict[str, list[str]] = {}
        for test in self.tests:
            for res in test.results:
                worst[res.entity] = _worst(worst.get(res.entity, "not-run"), res.status)
                bad = failed.setdefault(res.entity, [])
                if res.status == "fail" and test.name not in bad:
                    bad.append(test.name)
        return [(entity, status, failed[entity]) for entity, status in worst.items()]


@dataclass(frozen=True, slots=True)
class FailedNode:
    """A row of NVCRE's failed-nodes list."""

    name: str
    reason: str
    message: str
    category: str = ""
    """``domain/variant`` the row came from, when known."""


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class CategoryStatus:
    """One ``status.categoryStatuses[]`` entry, with the failed nodes its ConfigMap lists."""

    domain: str
    variant: str
    status: str
    """Pending, InProgress, Succeeded or Failed."""
    failed_nodes_ref: str | None
    succeeded_nodes_ref: str | None
    failed_nodes: tuple[FailedNode, ...] | None
    """None when unknown (the ConfigMap was not given)."""
    succeeded_nodes: tuple[str, ...] | None = None

    @property
    def key(self) -> str:
        return f"{self.domain}/{self.variant}"


@dataclass(frozen=True)
class Certification:
    """An NVCRE Certification as read back from the cluster (spec and status)."""

    source: str
    name: str
    namespace: str
    api_version: str
    labels: Mapping[str, str]
    annotations: Mapping[str, str]
    spec: Mapping[str, Any]
    target_nodes: tuple[str, ...] | None
    """``spec.target.nodeNames``; None when the target is a selector."""
    conditions: tuple[Condition, ...]
    categories: tuple[CategoryStatus, ...]
    line: int = 1

    def condition(self, kind: str) -> Condition | None:
        return next((c for c in self.conditions if c.type == kind), None)

    def is_true(self, kind: str) -> bool:
        cond = self.condition(kind)
        return cond is not None and cond.status == "True"

    @property
    def failed_nodes(self) -> tuple[FailedNode, ...]:
        """Every failed-node row of every category, first row per node, sorted by node name."""
        rows: dict[str, FailedNode] = {}
        for cat in self.categories:
            for row in cat.failed_nodes or ():
                rows.setdefault(row.name, row)
        return tuple(rows[name] for name in sorted(rows))

    @property
    def succeeded_nodes(self) -> tuple[str, ...] | None:
        """Nodes every category with a known list passed; None when no list was given."""
        lists = [set(cat.succeeded_nodes) for cat in self.categories if cat.succeeded_nodes is not None]
        return tuple(sorted(set.intersection(*lists))) if lists else None

    def result(self) -> tuple[str, tuple[str, ...]]:
        """NVCRE's report result and the reasons it is not PASSED.

        As NVCRE: Failed=True is FAILED (it wins over Succeeded), Succeeded=True is PASSED, anything else
        RUNNING. Stricter than NVCRE offline: ValidationFailed=True (a threshold violated) is FAILED too, and
        a Succeeded run with a category not Succeeded, or a target node that no succeeded-nodes list names,
        is INCOMPLETE (NVCRE says INCOMPLETE when it excluded nodes)."""
        reasons: list[str] = []
        for kind in ("Failed", "ValidationFailed"):
            cond = self.condition(kind)
            if cond is not None and cond.status == "True":
                reasons.append(_condition_text(cond))
        for cat in self.categories:
            if cat.status == "Failed":
                reasons.append(f"category {cat.key} failed" + _nodes_note(cat))
        if self.is_true("Failed") or self.is_true("ValidationFailed"):
            return FAILED, tuple(reasons)
        if not self.is_true("Succeeded"):
            cond = self.condition("InProgress")
            return RUNNING, (_condition_text(cond),) if cond is not None and cond.status == "True" else ()
        unfinished = [f"category {cat.key} is {cat.status}" for cat in self.categories if cat.status != "Succeeded"]
        if any(cat.status == "Failed" for cat in self.categories):
            return FAILED, tuple(reasons)
        untested = self._untested()
        if untested:
            unfinished.append(f"{len(untested)} target node(s) in no succeeded-nodes list: "
                              + ", ".join(untested[:10]) + (" ..." if len(untested) > 10 else ""))
        return (INCOMPLETE, tuple(unfinished)) if unfinished else (PASSED, ())

    def _untested(self) -> list[str]:
        passed = self.succeeded_nodes
        if passed is None or self.target_nodes is None:
            return []
        failed = {row.name for row in self.failed_nodes}
        return [n for n in self.target_nodes if n not in passed and n not in failed]


@dataclass(frozen=True, slots=True)
class ThresholdCheck:
    """One threshold evaluated against one run's measurements."""

    scope: str
    key: str
    expression: str
    measured: float | None
    passed: bool
    message: str


@dataclass(frozen=True)
class Report:
    """What ``aicr-gen report`` shows: one of nccl runs, a DCGM diagnostic or a Certification."""

    kind: str
    source: str
    result: str
    reasons: tuple[str, ...]
    nccl: tuple[NcclRun, ...] = ()
    dcgm: DcgmDiag | None = None
    certification: Certification | None = None
    thresholds: tuple[ThresholdCheck, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def exit_code(self) -> int:
        """1 when the report fails a gate: FAILED, or a diagnostic that produced no verdict; else 0."""
        if self.result == FAILED:
            return 1
        return 1 if self.dcgm is not None and not self.dcgm.ran else 0


# ------------------------------------------------------------------------------------------------ helpers


def _fail(where: str, message: str) -> InvalidInputError:
    return InvalidInputError(f"{where}: {message}")


def _printable(text: str, limit: int = 500) -> str:
    """Control characters escaped and length bounded, so a hostile log cannot drive the terminal."""
    cleaned = "".join(ch if ch.isprintable() else f"\\x{ord(ch):02x}" if ord(ch) < 256 else f"\\u{ord(ch):04x}"
                      for ch in text)
    return shorten(cleaned, limit)


def _condition_text(cond: Condition) -> str:
    detail = ": ".join(part for part in (cond.reason, cond.message) if part)
    return f"{cond.type}={cond.status}" + (f" ({_printable(detail, 300)})" if detail else "")


def _nodes_note(cat: CategoryStatus) -> str:
    if cat.failed_nodes is not None:
        return f" on {len(cat.failed_nodes)} node(s)"
    if cat.failed_nodes_ref:
        return f"; its failed nodes are in ConfigMap {cat.failed_nodes_ref} (pass it with --failed-nodes)"
    return ""


_ORDER = {"not-run": 0, "skip": 1, "pass": 2, "warn": 3, "fail": 4}


def _worst(a: str, b: str) -> str:
    return a if _ORDER[a] >= _ORDER[b] else b


def _json_loads(text: str, where: str) -> Any:
    def no_constants(name: str) -> Any:
        raise ValueError(f"{name} is not a JSON number")

    try:
        return json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as err:
        raise _fail(f"{where}:{err.lineno}", f"invalid JSON: {err.msg} (column {err.colno})") from None
    except (ValueError, RecursionError) as err:
        detail = "nested too deeply" if isinstance(err, RecursionError) else str(err)
        raise _fail(where, f"invalid JSON: {shorten(detail, 120)}") from None


class _Json:
    """Typed access into parsed JSON with key-path messages: ``file: results[3].in_place.bus_bw: ...``."""

    def __init__(self, source: str) -> None:
        self.source = source

    def fail(self, path: Path, message: str) -> InvalidInputError:
        return _fail(f"{self.source}: {format_path(path)}", message)

    def get(self, obj: Mapping[str, Any], path: Path, key: str, kind: type | tuple[type, ...],
            required: bool = True) -> Any:
        if key not in obj or obj[key] is None:
            if required:
                raise self.fail((*path, key), "missing")
            return None
        value = obj[key]
        if not isinstance(value, kind) or (isinstance(value, bool) and bool not in _types(kind)):
            raise self.fail((*path, key), f"expected {_kind_name(kind)}, found {type(value).__name__}")
        return value

    def number(self, obj: Mapping[str, Any], path: Path, key: str, limit: float = MAX_VALUE) -> float:
        value = self.get(obj, path, key, (int, float))
        return _bounded(float(value), limit, lambda msg: self.fail((*path, key), msg))


def _types(kind: type | tuple[type, ...]) -> tuple[type, ...]:
    return kind if isinstance(kind, tuple) else (kind,)


def _kind_name(kind: type | tuple[type, ...]) -> str:
    names = {dict: "a mapping", list: "a list", str: "a string", int: "an integer", float: "a number",
             bool: "true or false"}
    kinds = [k for k in _types(kind) if not (k is int and float in _types(kind))]
    return " or ".join(names.get(k, k.__name__) for k in kinds)


def _bounded(value: float, limit: float, fail: Callable[[str], InvalidInputError]) -> float:
    if not math.isfinite(value) or value < 0 or value > limit:
        raise fail(f"{value!r} is out of range (0 to {limit:g}); the file is corrupt")
    return value


# ------------------------------------------------------------------------------------------------ nccl-tests


def parse_nccl(raw: bytes, source: str) -> Report:
    """An nccl-tests log (stdout, one or more runs) or ``-J`` JSON file, as a report."""
    text = decode(raw, source)
    if not text.strip():
        raise _fail(source, "the file is empty; give nccl-tests output (stdout or -J JSON)")
    runs = (_nccl_json(_json_loads(text, source), source),) if text.lstrip().startswith("{") else (
        _NcclText(source).parse(text))
    reasons = tuple(f"{run.test}: {failure}" for run in runs for failure in run.failures)
    return Report(kind="nccl", source=source, result=FAILED if reasons else PASSED, reasons=reasons, nccl=runs)


_RANK = re.compile(r"^#\s*Rank\s+\d+\s+(?:Group\s+\d+\s+)?Pid\s+\d+\s+on\s+(\S+)\s+device\s+\d+\s+\[[^\]]*\]\s*(.*)$")
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
        return _fail(f"{self.source}:{line}", message)

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
            raise _fail(self.source, "no nccl-tests output found (no '# nccl-tests version', "
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
            run.test = _printable(body.partition(":")[2].strip(), 80)
        elif body.startswith("nThread"):
            run = self.new(number) if cur is None or cur.config or cur.rows or cur.footer else cur
            run.config = True
        elif match := _RANK.match(line):
            run = self.run(number)
            run.ranks += 1
            run.hosts.setdefault(_printable(match.group(1), 253), None)
            if match.group(2).strip():
                run.gpus.setdefault(_printable(match.group(2).strip(), 120), None)
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
            self.run(number).notes.append(_printable(body.strip("[]"), 200))

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
        return _bounded(value, limit, lambda msg: self.fail(number, f"{what}: {msg}"))

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
            type=_printable(type_, 20), redop=_printable(redop, 20),
            root=self.integer(number, root, "root", minimum=-1) if root is not None else -1,
            out_of_place=None if shift else self.half(number, tokens, oop, "out-of-place"),
            in_place=self.half(number, tokens, inp - shift, "in-place"), line=number))

    def failure(self, number: int, line: str) -> None:
        run = self.run(number)
        message = _printable(line.lstrip("# ").strip(), 300)
        host = _FAILURE_HOST.match(line.strip())
        if host and line.strip().startswith(".."):
            message = f"{host.group(1)}: {_printable(line.strip().split(': ', 1)[-1], 300)}"
        run.errors[message] = run.errors.get(message, 0) + 1


def _nccl_json(data: Any, source: str) -> NcclRun:
    js = _Json(source)
    if not isinstance(data, dict) or not ({"results", "config", "nccl_version"} & set(data)):
        raise _fail(source, "not nccl-tests -J output (expected an object with 'config' and 'results')")
    args = js.get(data, (), "args", list, required=False) or []
    test = "nccl-tests"
    if args and isinstance(args[0], str):
        test = _printable(args[0].replace("\\", "/").rsplit("/", 1)[-1], 80)
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
            hosts.setdefault(_printable(host, 253), None)
        if info:
            gpus.setdefault(_printable(info, 120), None)
    rows = [_json_row(js, item, ("results", i)) for i, item in
            enumerate(js.get(data, (), "results", list, required=False) or [])]
    failures = [f"error: {_printable(str(err), 300)}" for err in
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


def _json_row(js: _Json, item: Any, path: Path) -> NcclRow:
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
                         wrong=None if wrong is None else int(_bounded(float(wrong), MAX_SIZE,
                                                                       lambda m: js.fail((*where, "nwrong"), m))))

    out_of_place, in_place = half("out_of_place"), half("in_place")
    if out_of_place is None and in_place is None:
        raise js.fail(path, "neither out_of_place nor in_place results")
    return NcclRow(size=int(js.number(item, path, "size", MAX_SIZE)),
                   count=int(js.number(item, path, "count", MAX_SIZE)), type=_printable(str(item.get("type", "")), 20),
                   redop=_printable(str(item.get("redop", "")), 20),
                   root=root, out_of_place=out_of_place, in_place=in_place)


def run_scope(run: NcclRun, runs: int) -> str:
    """How thresholds name a run: its test, and its line when the log holds several runs."""
    return run.test if runs == 1 else f"{run.test} (line {run.line})"


def apply_thresholds(report: Report, evaluate: Callable[[dict[str, float]], Sequence[Any]]) -> Report:
    """``report`` with thresholds evaluated against each run that measured something.

    ``evaluate`` maps measurements to results with ``key, expression, measured, passed, message``
    (``aicr_gen.certify.thresholds.evaluate`` with the thresholds compiled). A violation fails the report."""
    checks: list[ThresholdCheck] = []
    notes = list(report.notes)
    for run in report.nccl:
        measured = run.measurements()
        if not measured:
            notes.append(f"{run.test}: no measurements, thresholds not evaluated")
            continue
        scope = run_scope(run, len(report.nccl))
        for res in evaluate(measured):
            value = getattr(res, "measured", None)
            checks.append(ThresholdCheck(scope=scope, key=str(res.key), expression=str(res.expression),
                                         measured=float(value) if isinstance(value, (int, float)) else None,
                                         passed=bool(res.passed), message=str(res.message)))
    violated = tuple(f"{check.scope}: {check.message}" for check in checks if not check.passed)
    result = FAILED if violated or report.result == FAILED else report.result
    return replace(report, thresholds=tuple(checks), result=result, reasons=report.reasons + violated,
                   notes=tuple(notes))


# ------------------------------------------------------------------------------------------------ DCGM

_DCGM_STATUS = {"pass": "pass", "passed": "pass", "fail": "fail", "failed": "fail", "warn": "warn",
                "warning": "warn", "skip": "skip", "skipped": "skip", "not run": "not-run", "notrun": "not-run",
                "not-run": "not-run"}
_ROOT4 = "DCGM Diagnostic"
_ROOT3 = "DCGM GPU Diagnostic"


def parse_dcgm(raw: bytes, source: str) -> Report:
    """A ``dcgmi diag -j`` document (DCGM 3.x or 4.x), as a report."""
    text = decode(raw, source)
    start = text.find("{")
    if start < 0:
        raise _fail(source, "no JSON object found; give the output of `dcgmi diag -r N -j`")
    # dcgmi may print warnings before the JSON; blank them out so error lines stay right.
    body = "\n" * text.count("\n", 0, start) + text[start:]
    data = _json_loads(body, source)
    js = _Json(source)
    if not isinstance(data, dict):
        raise _fail(source, "the document root is not a JSON object")
    layout, root_key = ("4.x", _ROOT4) if _ROOT4 in data else ("3.x", _ROOT3) if _ROOT3 in data else ("", "")
    if not layout:
        raise _fail(source, f"neither {_ROOT4!r} (DCGM 4.x) nor {_ROOT3!r} (DCGM 3.x) at the top; "
                    "give the output of `dcgmi diag -r N -j`")
    root = js.get(data, (), root_key, dict)
    meta = js.get(data, (), "metadata", dict, required=False) or {}
    version = (js.get(meta, ("metadata",), "version", str, required=False)
               or js.get(root, (root_key,), "version", str, required=False)
               or js.get(data, (), "version", str, required=False))
    driver = (js.get(meta, ("metadata",), "Driver Version Detected", str, required=False)
              or js.get(root, (root_key,), "Driver Version Detected", str, required=False)
              or js.get(data, (), "Driver Version Detected", str, required=False))
    runtime_error = js.get(root, (root_key,), "runtime_error", str, required=False)
    tests: list[DcgmTest] = []
    categories = js.get(root, (root_key,), "test_categories", list, required=False) or []
    for ci, cat in enumerate(categories):
        cpath: Path = (root_key, "test_categories", ci)
        if not isinstance(cat, dict):
            raise js.fail(cpath, "expected a mapping")
        category = _printable(js.get(cat, cpath, "category", str, required=False) or "", 80)
        for ti, test in enumerate(js.get(cat, cpath, "tests", list, required=False) or []):
            if test is None:  # DCGM 3.x writes nulls between tests
                continue
            tests.append(_dcgm_test(js, test, (*cpath, "tests", ti), category, layout))
    serials = _dcgm_serials(js, data, root)
    diag = DcgmDiag(layout=layout, version=_opt(version), driver=_opt(driver),
                    runtime_error=_printable(runtime_error, 500) if runtime_error else None,
                    tests=tuple(tests), serials=serials)
    if runtime_error:
        return Report(kind="dcgm", source=source, result=INCOMPLETE, dcgm=diag,
                      reasons=(f"the diagnostic did not run (runtime_error): {diag.runtime_error}",))
    if not tests:
        return Report(kind="dcgm", source=source, result=INCOMPLETE, dcgm=diag,
                      reasons=("the document holds no test results: the diagnostic did not run",))
    reasons = tuple(f"{test.name}: {res.entity} failed" + (f": {res.warnings[0]}" if res.warnings else "")
                    for test in tests for res in test.results if res.status == "fail")
    reasons += tuple(f"{test.name}: failed" + (f": {test.warnings[0]}" if test.warnings else "") for test in tests
                     if test.status == "fail" and not any(r.status == "fail" for r in test.results))
    return Report(kind="dcgm", source=source, result=FAILED if reasons else PASSED, reasons=reasons, dcgm=diag)


def _opt(value: str | None) -> str | None:
    return _printable(value, 80) if value else None


def _dcgm_status(js: _Json, obj: Mapping[str, Any], path: Path) -> str:
    raw = js.get(obj, path, "status", str)
    status = _DCGM_STATUS.get(" ".join(raw.lower().split()))
    if status is None:
        raise js.fail((*path, "status"), f"unknown status {shorten(raw, 30)!r}; expected Pass, Fail, Warn, Skip "
                      "or Not Run")
    return status


def _dcgm_messages(js: _Json, obj: Mapping[str, Any], path: Path, key: str) -> tuple[str, ...]:
    value = obj.get(key)
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(_printable(item, 300))
        elif isinstance(item, dict):
            text = item.get("warning", item.get("message", ""))
            error_id = item.get("error_id")
            suffix = f" (DCGM error {error_id})" if isinstance(error_id, int) and not isinstance(error_id, bool) else ""
            out.append(_printable(str(text), 300) + suffix)
        else:
            raise js.fail((*path, key, i), f"expected a string or a mapping, found {type(item).__name__}")
    return tuple(out)


def _dcgm_entities(js: _Json, res: Mapping[str, Any], path: Path, layout: str) -> list[str]:
    """The entities one result is about: a 4.x entity, or each GPU of a 3.x ``gpu_ids`` list."""
    if layout == "4.x" and "entity_id" in res:
        group = js.get(res, path, "entity_group", str, required=False) or "GPU"
        return [f"{_printable(group, 20)} {int(js.number(res, path, 'entity_id', 1e9))}"]
    ids = res.get("gpu_ids")
    if ids is None:
        return ["all"]
    if isinstance(ids, int) and not isinstance(ids, bool) and 0 <= ids < 1_000_000:
        return [f"GPU {ids}"]
    if isinstance(ids, str) and re.fullmatch(r"\s*\d{1,6}(\s*,\s*\d{1,6}){0,1023}\s*", ids):
        return [f"GPU {int(part)}" for part in ids.split(",")]
    raise js.fail((*path, "gpu_ids"), "expected a GPU id or a comma-separated list of ids")


def _dcgm_test(js: _Json, test: Any, path: Path, category: str, layout: str) -> DcgmTest:
    if not isinstance(test, dict):
        raise js.fail(path, "expected a mapping")
    name = _printable(js.get(test, path, "name", str), 80)
    results: list[DcgmResult] = []
    for ri, res in enumerate(js.get(test, path, "results", list, required=False) or []):
        rpath = (*path, "results", ri)
        if not isinstance(res, dict):
            raise js.fail(rpath, "expected a mapping")
        status = _dcgm_status(js, res, rpath)
        warnings, info = _dcgm_messages(js, res, rpath, "warnings"), _dcgm_messages(js, res, rpath, "info")
        results += [DcgmResult(entity, status, warnings, info) for entity in _dcgm_entities(js, res, rpath, layout)]
    overall = "not-run"
    for result in results:
        overall = _worst(overall, result.status)
    summary = js.get(test, path, "test_summary", dict, required=False)
    summary_warnings: tuple[str, ...] = ()
    if summary is not None:
        overall = _worst(overall, _dcgm_status(js, summary, (*path, "test_summary")))
        summary_warnings = _dcgm_messages(js, summary, (*path, "test_summary"), "warnings")
    return DcgmTest(category=category, name=name, status=overall, results=tuple(results), warnings=summary_warnings)


def _dcgm_serials(js: _Json, data: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    serials: list[tuple[str, str]] = []
    for source in (data, root):  # DCGM 3.x: "GPU Device Serials": {"0": "<serial>", ...}
        legacy = source.get("GPU Device Serials")
        if isinstance(legacy, dict):
            serials += [(f"GPU {gpu}", _printable(serial, 64)) for gpu, serial in legacy.items()
                        if isinstance(serial, str) and str(gpu).isdigit()]
    for gi, group in enumerate(js.get(data, (), "entity_groups", list, required=False) or []):
        if not isinstance(group, dict):
            raise js.fail(("entity_groups", gi), "expected a mapping")
        kind = _printable(str(group.get("entity_group", "GPU")), 20)
        for ei, entity in enumerate(js.get(group, ("entity_groups", gi), "entities", list, required=False) or []):
            if isinstance(entity, dict) and isinstance(entity.get("serial_num"), str):
                ident = int(js.number(entity, ("entity_groups", gi, "entities", ei), "entity_id", 1e9))
                serials.append((f"{kind} {ident}", _printable(entity["serial_num"], 64)))
    return tuple(serials)


# ------------------------------------------------------------------------------------------------ NVCRE


_GROUPS = ("nvcre.nvidia.com/", "cre.nvidia.com/")
_CATEGORY_STATUSES = ("Pending", "InProgress", "Succeeded", "Failed")
FAILED_KEY = "failed-nodes.json.gz"
SUCCEEDED_KEY = "succeeded-nodes.csv.gz"


@dataclass(frozen=True, slots=True)
class NodeLists:
    """The node lists one results ConfigMap holds."""

    name: str
    namespace: str
    failed: tuple[FailedNode, ...] | None
    succeeded: tuple[str, ...] | None


def _items(doc: Document, kinds: tuple[str, ...], what: str) -> list[tuple[Path, dict[str, Any]]]:
    """The objects of ``doc``: itself, or the items of a ``List``; each must be one of ``kinds``."""
    data = doc.data
    kind = data.get("kind")
    found: list[tuple[Path, Any]] = [((), data)]
    if isinstance(kind, str) and kind.endswith("List") and isinstance(data.get("items"), list):
        found = [(("items", i), item) for i, item in enumerate(data["items"])]
    for path, item in found:
        if not isinstance(item, dict) or item.get("kind") not in kinds:
            got = item.get("kind") if isinstance(item, dict) else type(item).__name__
            raise _fail(doc.where((*path, "kind")), f"kind {got!r} is not {what}; give "
                        f"`kubectl get {what.lower()} NAME -o yaml` output")
    return found


def _str(doc: Document, obj: Mapping[str, Any], path: Path, key: str, required: bool = False) -> str:
    value = obj.get(key)
    if value is None:
        if required:
            raise _fail(doc.where((*path, key)), "missing")
        return ""
    if not isinstance(value, str):
        raise _fail(doc.where((*path, key)), f"expected a string, found {type(value).__name__}")
    return value


def _map(doc: Document, obj: Mapping[str, Any], path: Path, key: str) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _fail(doc.where((*path, key)), f"expected a mapping, found {type(value).__name__}")
    return value


def _list(doc: Document, obj: Mapping[str, Any], path: Path, key: str) -> list[Any]:
    value = obj.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise _fail(doc.where((*path, key)), f"expected a list, found {type(value).__name__}")
    return value


def _node_name(name: Any, where: str) -> str:
    if not isinstance(name, str) or not NODE_NAME.match(name):
        shown = shorten(repr(name), 60)
        raise _fail(where, f"{shown} is not a Kubernetes node name (lowercase letters, digits, '-' and '.')")
    return name


def _string_map(doc: Document, obj: Mapping[str, Any], path: Path, key: str) -> dict[str, str]:
    out = _map(doc, obj, path, key)
    for name, value in out.items():
        if not isinstance(value, str):
            raise _fail(doc.where((*path, key, name)), "expected a string")
    return out


def parse_certifications(raw: bytes, source: str) -> list[Certification]:
    """Every Certification (with status) in ``raw``: one object or a ``List`` (``kubectl get -o yaml``)."""
    doc = load_bytes(raw, source)
    return [_certification(doc, path, item) for path, item in _items(doc, ("Certification",), "Certification")]


def _certification(doc: Document, path: Path, obj: dict[str, Any]) -> Certification:
    api = _str(doc, obj, path, "apiVersion", required=True)
    if not api.startswith(_GROUPS):
        raise _fail(doc.where((*path, "apiVersion")), f"{api!r} is not an NVCRE Certification "
                    "(nvcre.nvidia.com/v1alpha1, or the older cre.nvidia.com/v1alpha1)")
    meta_path = (*path, "metadata")
    meta = _map(doc, obj, path, "metadata")
    name = _str(doc, meta, meta_path, "name", required=True)
    spec = _map(doc, obj, path, "spec")
    target = _map(doc, spec, (*path, "spec"), "target")
    target_path = (*path, "spec", "target", "nodeNames")
    names = target.get("nodeNames")
    target_nodes = None
    if names is not None:
        if not isinstance(names, list):
            raise _fail(doc.where(target_path), "expected a list of node names")
        target_nodes = tuple(_node_name(n, doc.where((*target_path, i))) for i, n in enumerate(names))
    status_path = (*path, "status")
    status = _map(doc, obj, path, "status")
    conditions = []
    for i, cond in enumerate(_list(doc, status, status_path, "conditions")):
        cpath = (*status_path, "conditions", i)
        if not isinstance(cond, dict):
            raise _fail(doc.where(cpath), "expected a mapping")
        conditions.append(Condition(type=_str(doc, cond, cpath, "type", required=True),
                                    status=_str(doc, cond, cpath, "status", required=True),
                                    reason=_str(doc, cond, cpath, "reason"), message=_str(doc, cond, cpath, "message")))
    categories = []
    for i, cat in enumerate(_list(doc, status, status_path, "categoryStatuses")):
        cpath = (*status_path, "categoryStatuses", i)
        if not isinstance(cat, dict):
            raise _fail(doc.where(cpath), "expected a mapping")
        state = _str(doc, cat, cpath, "status", required=True)
        if state not in _CATEGORY_STATUSES:
            raise _fail(doc.where((*cpath, "status")), f"{shorten(state, 30)!r} is not one of "
                        + ", ".join(_CATEGORY_STATUSES))
        domain, variant = _str(doc, cat, cpath, "domain", True), _str(doc, cat, cpath, "variant", True)
        inline = cat.get("failedNodes")
        failed = None
        if inline is not None:
            if not isinstance(inline, list):
                raise _fail(doc.where((*cpath, "failedNodes")), "expected a list")
            failed = tuple(_failed_row(row, doc.where((*cpath, "failedNodes", j)), f"{domain}/{variant}")
                           for j, row in enumerate(inline))
        categories.append(CategoryStatus(
            domain=domain, variant=variant, status=state,
            failed_nodes_ref=_str(doc, _map(doc, cat, cpath, "failedNodesRef"), (*cpath, "failedNodesRef"), "name")
            or None,
            succeeded_nodes_ref=_str(doc, _map(doc, cat, cpath, "succeededNodesRef"), (*cpath, "succeededNodesRef"),
                                     "name") or None,
            failed_nodes=failed))
    return Certification(source=doc.source, name=name, namespace=_str(doc, meta, meta_path, "namespace"),
                         api_version=api, labels=_string_map(doc, meta, meta_path, "labels"),
                         annotations=_string_map(doc, meta, meta_path, "annotations"), spec=spec,
                         target_nodes=target_nodes, conditions=tuple(conditions), categories=tuple(categories),
                         line=doc.line_of(path))


def _failed_row(row: Any, where: str, category: str) -> FailedNode:
    if not isinstance(row, dict):
        raise _fail(where, f"expected {{name, reason, message}}, found {type(row).__name__}")
    name = _node_name(row.get("name"), f"{where}.name")
    texts = []
    for key in ("reason", "message"):
        value = row.get(key, "")
        if not isinstance(value, str):
            raise _fail(f"{where}.{key}", "expected a string")
        texts.append(_printable(value, 500))
    return FailedNode(name=name, reason=texts[0], message=texts[1], category=category)


def parse_node_lists(raw: bytes, source: str, required: bool = True) -> list[NodeLists]:
    """The results ConfigMaps in ``raw`` (one ConfigMap or a ``List``) that hold NVCRE node lists; with
    ``required``, a file holding none is refused."""
    doc = load_bytes(raw, source)
    found = []
    for path, obj in _items(doc, ("ConfigMap",), "ConfigMap"):
        meta = _map(doc, obj, path, "metadata")
        name = _str(doc, meta, (*path, "metadata"), "name", required=True)
        failed: tuple[FailedNode, ...] | None = None
        succeeded: tuple[str, ...] | None = None
        for section in ("binaryData", "data"):
            for key, value in _map(doc, obj, path, section).items():
                where = doc.where((*path, section, key))
                kind = _node_list_kind(key)
                if kind is None:
                    continue
                payload = _payload(value, where, binary=section == "binaryData")
                if kind == "failed":
                    failed = (failed or ()) + _failed_list(payload, where)
                else:
                    succeeded = (succeeded or ()) + _succeeded_list(payload, where)
        if failed is not None or succeeded is not None:
            found.append(NodeLists(name=name, namespace=_str(doc, meta, (*path, "metadata"), "namespace"),
                                   failed=failed, succeeded=succeeded))
    if not found and required:
        raise _fail(source, f"no ConfigMap here holds {FAILED_KEY} or {SUCCEEDED_KEY}; give the ConfigMap a "
                    "Certification's status.categoryStatuses[].failedNodesRef names")
    return found


def _node_list_kind(key: str) -> str | None:
    if key in (FAILED_KEY, "failed-nodes.json"):
        return "failed"
    if key in (SUCCEEDED_KEY, "succeeded-nodes.csv"):
        return "succeeded"
    return None


def _payload(value: Any, where: str, binary: bool) -> bytes:
    """The bytes of a ConfigMap value: base64 (always in binaryData; in data unless it is plain JSON/CSV),
    gunzipped when it is gzip."""
    if not isinstance(value, str):
        raise _fail(where, f"expected a string, found {type(value).__name__}")
    text = value.strip()
    if binary or not (text[:1] in "[{" or text == "null"):
        try:
            data = base64.b64decode("".join(text.split()), validate=True)
        except (binascii.Error, ValueError):
            if binary:
                raise _fail(where, "binaryData is not valid base64") from None
            data = text.encode()
    else:
        data = text.encode()
    return _gunzip(data, where) if data[:2] == b"\x1f\x8b" else data


def _gunzip(data: bytes, where: str, limit: int = MAX_GUNZIP) -> bytes:
    """Decompress every gzip member of ``data`` (Go writes one, readers accept several), never beyond ``limit``."""
    out = bytearray()
    while data:
        inflater = zlib.decompressobj(wbits=31)
        try:
            out += inflater.decompress(data, limit + 1 - len(out))
        except zlib.error as err:
            raise _fail(where, f"not valid gzip ({err})") from None
        if len(out) > limit:
            raise _fail(where, f"decompresses to more than {limit} bytes (a gzip bomb?); refusing it")
        if not inflater.eof:
            raise _fail(where, "gzip data is truncated")
        data = inflater.unused_data.lstrip(b"\0")
    return bytes(out)


def _failed_list(payload: bytes, where: str) -> tuple[FailedNode, ...]:
    text = decode(payload, where)
    data = _json_loads(text, where) if text.strip() else None
    if data is None:
        return ()
    if not isinstance(data, list):
        raise _fail(where, "expected a JSON array of {name, reason, message}")
    return tuple(_failed_row(row, f"{where}: [{i}]", "") for i, row in enumerate(data))


def _succeeded_list(payload: bytes, where: str) -> tuple[str, ...]:
    names = [part.strip() for part in decode(payload, where).replace("\n", ",").split(",")]
    return tuple(_node_name(name, f"{where}: entry {i + 1}") for i, name in enumerate(n for n in names if n))


def attach_node_lists(cert: Certification, lists: Sequence[NodeLists], require_match: bool = True) -> Certification:
    """``cert`` with each category's failed and succeeded nodes from the ConfigMaps its refs name.

    A certification without refs (inline lists, or a status written by hand) takes a lone failed-nodes
    ConfigMap as its own. ConfigMaps nothing refers to are ignored; with ``require_match``, lists none of
    which the Certification refers to are refused: they are the wrong file."""
    by_name = {nl.name: nl for nl in lists if not nl.namespace or not cert.namespace or nl.namespace == cert.namespace}
    refs = {ref for cat in cert.categories for ref in (cat.failed_nodes_ref, cat.succeeded_nodes_ref) if ref}
    if not refs:
        lone = [nl for nl in lists if nl.failed is not None]
        if len(lone) > 1:
            raise InvalidInputError(f"{cert.source}: Certification {cert.name} names no failed-nodes ConfigMap "
                                    f"(no categoryStatuses[].failedNodesRef) and --failed-nodes holds {len(lone)}; "
                                    "give the one that belongs to it")
        if not lone:
            return cert
        failed_at = [i for i, cat in enumerate(cert.categories) if cat.status == "Failed"]
        label = cert.categories[failed_at[0]].key if len(failed_at) == 1 else ""
        rows = tuple(replace(row, category=label) for row in lone[0].failed or ())
        if not cert.categories:
            return replace(cert, categories=(CategoryStatus("", "", "Failed", None, None, rows),))
        at = failed_at[0] if failed_at else 0
        return replace(cert, categories=tuple(replace(cat, failed_nodes=rows) if i == at else cat
                                              for i, cat in enumerate(cert.categories)))
    if require_match and lists and not refs & set(by_name):
        given = ", ".join(sorted(nl.name for nl in lists))
        raise InvalidInputError(f"{cert.source}: Certification {cert.name} refers to ConfigMap(s) "
                                f"{', '.join(sorted(refs))}; --failed-nodes holds {given}; give the right file")
    cats = []
    for cat in cert.categories:
        failed, succeeded = cat.failed_nodes, cat.succeeded_nodes
        if cat.failed_nodes_ref in by_name and by_name[cat.failed_nodes_ref].failed is not None:
            failed = tuple(replace(row, category=cat.key) for row in by_name[cat.failed_nodes_ref].failed or ())
        if cat.succeeded_nodes_ref in by_name:
            succeeded = by_name[cat.succeeded_nodes_ref].succeeded
        cats.append(replace(cat, failed_nodes=failed, succeeded_nodes=succeeded))
    return replace(cert, categories=tuple(cats))


def certification_report(cert: Certification) -> Report:
    """The report of one Certification (node lists attached or not)."""
    result, reasons = cert.result()
    return Report(kind="certification", source=cert.source, result=result, reasons=reasons, certification=cert)
