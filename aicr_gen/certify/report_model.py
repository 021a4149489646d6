"""The report model: nccl-tests runs, a DCGM diagnostic or an NVCRE Certification, each parsed into one
:class:`Report` whose ``result`` is NVCRE's PASSED, FAILED, INCOMPLETE or RUNNING, and thresholds evaluated
against it.

Pure: every parser (:mod:`~aicr_gen.certify.nccl`, :mod:`~aicr_gen.certify.dcgm`,
:mod:`~aicr_gen.certify.nvcre_status`) takes the file's bytes and a source name for messages; none reads
files, the clock or the environment. Bad input raises :class:`InvalidInputError` (exit 2) naming the file and
the line (text and YAML) or the key path (JSON). A result that ran and failed is not an error: it is a
report whose ``result`` is FAILED (exit 1).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aicr_gen.certify.input_checks import printable

PASSED = "PASSED"
FAILED = "FAILED"
INCOMPLETE = "INCOMPLETE"
RUNNING = "RUNNING"

NCCL_MEASURED = ("algBandwidthGBps", "busBandwidthGBps")
"""The threshold keys an nccl-tests run measures (NVCRE's names)."""


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
                worst[res.entity] = worst_status(worst.get(res.entity, "not-run"), res.status)
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
    changed: str = ""
    """``lastTransitionTime`` (RFC 3339), when given."""


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
    created: str = ""
    """``metadata.creationTimestamp`` (RFC 3339), when given."""

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


def _condition_text(cond: Condition) -> str:
    detail = ": ".join(part for part in (cond.reason, cond.message) if part)
    return f"{cond.type}={cond.status}" + (f" ({printable(detail, 300)})" if detail else "")


def _nodes_note(cat: CategoryStatus) -> str:
    if cat.failed_nodes is not None:
        return f" on {len(cat.failed_nodes)} node(s)"
    if cat.failed_nodes_ref:
        return f"; its failed nodes are in ConfigMap {cat.failed_nodes_ref} (pass it with --failed-nodes)"
    return ""


_ORDER = {"not-run": 0, "skip": 1, "pass": 2, "warn": 3, "fail": 4}


def worst_status(a: str, b: str) -> str:
    return a if _ORDER[a] >= _ORDER[b] else b


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

