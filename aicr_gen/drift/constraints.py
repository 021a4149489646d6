"""Readiness: evaluate a recipe's top-level ``constraints`` against a snapshot (pure, no I/O).

A constraint is ``{name, value, severity?, remediation?, unit?}``. ``name`` is a measurement path
``{Type}.{subtype}.{key}`` split at the first two dots only, so the key may hold dots and slashes
(``OS.sysctl./proc/sys/kernel/osrelease``). ``value`` is ``>=``, ``<=``, ``>``, ``<``, ``==`` or ``!=``
followed by an operand, or a bare value meaning exact match; comparison is version-aware
(:mod:`aicr_gen.text.versions`).

Results, per constraint:

* ``passed``: the measured value satisfies the value;
* ``failed``: it does not (the message shows the actual value), or the measured value is not a version where
  an ordering operator needs one, or the measurement is **not in the snapshot** and the severity is
  ``error`` (the default): readiness cannot be shown, so it is not granted;
* ``skipped``: the measurement is not in the snapshot and the severity is ``warning``.

Only failures of severity ``error`` block (:func:`blocking`); a ``warning`` never fails the run.
A constraint that cannot be evaluated at all (path without two dots, empty value, unknown operator, an
ordering operator with a non-version operand) raises :class:`InvalidInputError` naming the constraint.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from aicr_gen.errors import InvalidInputError
from aicr_gen.text import versions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Literal, NamedTuple

    Status = Literal["passed", "failed", "skipped"]
else:
    from aicr_gen.records import NamedTuple

NOT_FOUND = "not found in snapshot"


class ConstraintResult(NamedTuple):
    """The outcome of one constraint."""

    name: str
    expected: str
    status: Status
    severity: str
    actual: str | None = None
    message: str = ""
    remediation: str | None = None
    unit: str | None = None

    @property
    def blocking(self) -> bool:
        """A failed constraint of severity error: it fails the run."""
        return self.status == "failed" and self.severity == "error"


def split_path(name: str) -> tuple[str, str, str]:
    """``Type.subtype.key`` split at the first two dots; InvalidInputError when a part is missing."""
    parts = name.split(".", 2)
    if len(parts) != 3 or not all(part.strip() for part in parts):
        raise InvalidInputError(f"constraint {name!r}: the name must be a measurement path Type.subtype.key, "
                                f"e.g. K8s.server.version or OS.sysctl./proc/sys/kernel/osrelease")
    return parts[0], parts[1], parts[2]


def _scalar(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, (int, float)):
        return str(value)
    import json  # here: a reading is nearly always a string

    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


def _measurements(snapshot: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    measurements = snapshot.get("measurements") if isinstance(snapshot, Mapping) else None
    if not isinstance(measurements, list) or not all(isinstance(m, Mapping) for m in measurements):
        raise InvalidInputError("snapshot: 'measurements' must be a list of {type, subtypes}; "
                                "write one with 'aicr snapshot'")
    return measurements


def lookup(snapshot: Mapping[str, Any], kind: str, subtype: str, key: str) -> str | None:
    """The measured value at ``kind.subtype.key`` as a string, or None when the snapshot lacks it."""
    for measurement in _measurements(snapshot):
        if measurement.get("type") != kind or not isinstance(measurement.get("subtypes"), list):
            continue
        for entry in measurement["subtypes"]:
            if not isinstance(entry, Mapping) or entry.get("subtype") != subtype:
                continue
            data = entry.get("data")
            if isinstance(data, Mapping) and key in data and data[key] is not None:
                return _scalar(data[key])
    return None


def _checked(constraint: Mapping[str, Any]) -> tuple[str, versions.Expectation, str]:
    name = constraint.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidInputError("constraint without a name; give each constraint a Type.subtype.key name")
    split_path(name)
    value = constraint.get("value")
    if not isinstance(value, str):
        raise InvalidInputError(f"constraint {name!r}: value must be a string, e.g. '>= 1.30'")
    try:
        expectation = versions.parse_expectation(value)
    except versions.ExpectationError as err:
        raise InvalidInputError(f"constraint {name!r}: {err}") from None
    if expectation.operator in (">=", "<=", ">", "<") and versions.parse_version(expectation.operand) is None:
        raise InvalidInputError(f"constraint {name!r}: {expectation.operator} needs a version operand, "
                                f"got {expectation.operand!r}")
    severity = constraint.get("severity") or "error"
    if severity not in ("error", "warning"):
        raise InvalidInputError(f"constraint {name!r}: severity {severity!r} is not error or warning")
    return name, expectation, str(severity)


def _expected_text(expectation: versions.Expectation) -> str:
    return f"{expectation.operator} {expectation.operand}" if expectation.operator else expectation.operand


def evaluate_one(constraint: Mapping[str, Any], snapshot: Mapping[str, Any]) -> ConstraintResult:
    """Evaluate one constraint against ``snapshot``."""
    name, expectation, severity = _checked(constraint)
    extra: dict[str, Any] = {"remediation": constraint.get("remediation"), "unit": constraint.get("unit")}
    expected = _expected_text(expectation)
    actual = lookup(snapshot, *split_path(name))
    if actual is None:
        status: Status = "skipped" if severity == "warning" else "failed"
        return ConstraintResult(name, expected, status, severity, None, f"{name}: {NOT_FOUND}", **extra)
    verdict = versions.satisfies(actual, expectation)
    if verdict is None:
        return ConstraintResult(name, expected, "failed", severity, actual,
                                f"{name}: actual {actual!r} is not a version, expected {expected}", **extra)
    if verdict:
        return ConstraintResult(name, expected, "passed", severity, actual, "", **extra)
    return ConstraintResult(name, expected, "failed", severity, actual,
                            f"{name}: expected {expected}, actual {actual}", **extra)


def evaluate(constraints: Sequence[Mapping[str, Any]] | None, snapshot: Mapping[str, Any]) -> list[ConstraintResult]:
    """Every constraint's result, in recipe order; all constraints are checked before any is evaluated."""
    items = list(constraints or [])
    _measurements(snapshot)
    for constraint in items:
        if not isinstance(constraint, Mapping):
            raise InvalidInputError("constraints: each entry must be a mapping {name, value}")
        _checked(constraint)
    return [evaluate_one(constraint, snapshot) for constraint in items]


def blocking(results: Sequence[ConstraintResult]) -> list[ConstraintResult]:
    """The results that fail the run (failed, severity error)."""
    return [result for result in results if result.blocking]
