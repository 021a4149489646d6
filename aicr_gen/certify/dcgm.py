"""``dcgmi diag -j`` JSON as a report: the 4.x root ``DCGM Diagnostic`` (entity results) and the 3.x root
``DCGM GPU Diagnostic`` (``gpu_ids`` results). ``runtime_error`` means the diagnostic did not run: no GPU is
blamed, and the report is INCOMPLETE without a verdict (exit 1, a gate cannot pass on it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from aicr_gen.certify.input_checks import JsonReader, input_error, json_loads, printable
from aicr_gen.certify.report_model import (
    FAILED,
    INCOMPLETE,
    PASSED,
    DcgmDiag,
    DcgmResult,
    DcgmTest,
    Report,
    worst_status,
)
from aicr_gen.yaml import FieldPath, decode, shorten

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
        raise input_error(source, "no JSON object found; give the output of `dcgmi diag -r N -j`")
    # dcgmi may print warnings before the JSON; blank them out so error lines stay right.
    body = "\n" * text.count("\n", 0, start) + text[start:]
    data = json_loads(body, source)
    js = JsonReader(source)
    if not isinstance(data, dict):
        raise input_error(source, "the document root is not a JSON object")
    layout, root_key = ("4.x", _ROOT4) if _ROOT4 in data else ("3.x", _ROOT3) if _ROOT3 in data else ("", "")
    if not layout:
        raise input_error(source, f"neither {_ROOT4!r} (DCGM 4.x) nor {_ROOT3!r} (DCGM 3.x) at the top; "
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
        cpath: FieldPath = (root_key, "test_categories", ci)
        if not isinstance(cat, dict):
            raise js.fail(cpath, "expected a mapping")
        category = printable(js.get(cat, cpath, "category", str, required=False) or "", 80)
        for ti, test in enumerate(js.get(cat, cpath, "tests", list, required=False) or []):
            if test is None:  # DCGM 3.x writes nulls between tests
                continue
            tests.append(_dcgm_test(js, test, (*cpath, "tests", ti), category, layout))
    serials = _dcgm_serials(js, data, root)
    diag = DcgmDiag(layout=layout, version=_opt(version), driver=_opt(driver),
                    runtime_error=printable(runtime_error, 500) if runtime_error else None,
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
    return printable(value, 80) if value else None


def _dcgm_status(js: JsonReader, obj: Mapping[str, Any], path: FieldPath) -> str:
    raw = js.get(obj, path, "status", str)
    status = _DCGM_STATUS.get(" ".join(raw.lower().split()))
    if status is None:
        raise js.fail((*path, "status"), f"unknown status {shorten(raw, 30)!r}; expected Pass, Fail, Warn, Skip "
                      "or Not Run")
    return status


def _dcgm_messages(js: JsonReader, obj: Mapping[str, Any], path: FieldPath, key: str) -> tuple[str, ...]:
    value = obj.get(key)
    if value is None:
        return ()
    items = value if isinstance(value, list) else [value]
    out: list[str] = []
    for i, item in enumerate(items):
        if isinstance(item, str):
            out.append(printable(item, 300))
        elif isinstance(item, dict):
            text = item.get("warning", item.get("message", ""))
            error_id = item.get("error_id")
            suffix = f" (DCGM error {error_id})" if isinstance(error_id, int) and not isinstance(error_id, bool) else ""
            out.append(printable(str(text), 300) + suffix)
        else:
            raise js.fail((*path, key, i), f"expected a string or a mapping, found {type(item).__name__}")
    return tuple(out)


def _dcgm_entities(js: JsonReader, res: Mapping[str, Any], path: FieldPath, layout: str) -> list[str]:
    """The entities one result is about: a 4.x entity, or each GPU of a 3.x ``gpu_ids`` list."""
    if layout == "4.x" and "entity_id" in res:
        group = js.get(res, path, "entity_group", str, required=False) or "GPU"
        return [f"{printable(group, 20)} {int(js.number(res, path, 'entity_id', 1e9))}"]
    ids = res.get("gpu_ids")
    if ids is None:
        return ["all"]
    if isinstance(ids, int) and not isinstance(ids, bool) and 0 <= ids < 1_000_000:
        return [f"GPU {ids}"]
    if isinstance(ids, str) and re.fullmatch(r"\s*\d{1,6}(\s*,\s*\d{1,6}){0,1023}\s*", ids):
        return [f"GPU {int(part)}" for part in ids.split(",")]
    raise js.fail((*path, "gpu_ids"), "expected a GPU id or a comma-separated list of ids")


def _dcgm_test(js: JsonReader, test: Any, path: FieldPath, category: str, layout: str) -> DcgmTest:
    if not isinstance(test, dict):
        raise js.fail(path, "expected a mapping")
    name = printable(js.get(test, path, "name", str), 80)
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
        overall = worst_status(overall, result.status)
    summary = js.get(test, path, "test_summary", dict, required=False)
    summary_warnings: tuple[str, ...] = ()
    if summary is not None:
        overall = worst_status(overall, _dcgm_status(js, summary, (*path, "test_summary")))
        summary_warnings = _dcgm_messages(js, summary, (*path, "test_summary"), "warnings")
    return DcgmTest(category=category, name=name, status=overall, results=tuple(results), warnings=summary_warnings)


def _dcgm_serials(js: JsonReader, data: Mapping[str, Any], root: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    serials: list[tuple[str, str]] = []
    for source in (data, root):  # DCGM 3.x: "GPU Device Serials": {"0": "<serial>", ...}
        legacy = source.get("GPU Device Serials")
        if isinstance(legacy, dict):
            serials += [(f"GPU {gpu}", printable(serial, 64)) for gpu, serial in legacy.items()
                        if isinstance(serial, str) and str(gpu).isdigit()]
    for gi, group in enumerate(js.get(data, (), "entity_groups", list, required=False) or []):
        if not isinstance(group, dict):
            raise js.fail(("entity_groups", gi), "expected a mapping")
        kind = printable(str(group.get("entity_group", "GPU")), 20)
        for ei, entity in enumerate(js.get(group, ("entity_groups", gi), "entities", list, required=False) or []):
            if isinstance(entity, dict) and isinstance(entity.get("serial_num"), str):
                ident = int(js.number(entity, ("entity_groups", gi, "entities", ei), "entity_id", 1e9))
                serials.append((f"{kind} {ident}", printable(entity["serial_num"], 64)))
    return tuple(serials)

