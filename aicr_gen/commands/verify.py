"""``aicr-gen verify DIR...``: closed-world check of bundle folders against their checksums.txt."""

from __future__ import annotations

import argparse
import sys

from aicr_gen.errors import INVALID, OK, AicrGenError, InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from aicr_gen.report.findings import FileResult

RESULTS_JSON = """\
--format json prints one object (a stable shape; exit codes as for text):
  {"ok": BOOL, "files": [{"file": PATH, "ok": BOOL,
     "errors":   [{"file": PATH, "line": INT|null, "path": FIELD|null, "message": TEXT, "policy": NAME|null}],
     "warnings": [... the same ...]}]}
"""
"""The epilog of the commands whose ``--format json`` prints ``report.findings.to_json`` (verify, lint)."""

_WHY = {"missing": "listed in checksums.txt, not in the folder", "unlisted": "in the folder, not in checksums.txt",
        "changed": "its sha256 differs from checksums.txt", "symlink": "a bundle holds no symlinks"}


def arguments(parser: argparse.ArgumentParser) -> None:
    """``verify DIR...``."""
    parser.epilog = RESULTS_JSON
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.add_argument("folders", metavar="DIR", nargs="+", help="bundle folder holding a checksums.txt")
    parser.add_argument("--format", dest="verify_format", choices=("text", "json"), default="text",
                        help="text (default) or json (the shape below; file is DIR/checksums.txt, path the "
                             "bundle file)")


def check_folder(folder: str) -> tuple[FileResult, int, int]:
    """``folder``'s problems (each naming checksums.txt, the line listing the file if any, and the bundle path,
    with a message starting ``missing:``, ``unlisted:``, ``changed:`` or ``symlink:``), the exit code (2: not a
    bundle folder) and how many files it lists."""
    import hashlib
    import os
    from pathlib import Path

    from aicr_gen.bundle import CHECKSUMS, parse_checksums
    from aicr_gen.report.findings import FileResult, Problem, from_error

    root = Path(folder)
    sums = root / CHECKSUMS
    result = FileResult(folder)
    try:
        if not sums.is_file():
            raise InvalidInputError(f"{folder}: no {CHECKSUMS}; this is not an aicr-gen bundle folder")
        text = sums.read_text(encoding="utf-8")
        listed = parse_checksums(text, str(sums))
    except (AicrGenError, OSError, UnicodeDecodeError) as err:
        result.errors += from_error(err, str(sums))
        return result, err.exit_code if isinstance(err, AicrGenError) else INVALID, 0
    line = {entry.partition("  ")[2]: number for number, entry in enumerate(text.splitlines(), start=1)}
    present: dict[str, Path] = {}
    found: list[tuple[str, str]] = []
    for parent, dirs, names in os.walk(root):
        for name in sorted([*dirs, *names]):
            full = Path(parent) / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                found.append((rel, "symlink"))
            elif name in names and rel != CHECKSUMS:
                present[rel] = full
    for rel in sorted(set(listed) | set(present)):
        if rel not in present:
            found.append((rel, "missing"))
        elif rel not in listed:
            found.append((rel, "unlisted"))
        elif hashlib.sha256(present[rel].read_bytes()).hexdigest() != listed[rel]:
            found.append((rel, "changed"))
    result.errors += [Problem(str(sums), line.get(rel), rel, f"{kind}: {_WHY[kind]}")
                      for rel, kind in sorted(found, key=lambda item: (item[1], item[0]))]
    return result, 1 if found else OK, len(listed)


def run(args: argparse.Namespace) -> int:
    """Exit 0 when every folder's files are listed and unchanged; 1 listing missing, changed or unlisted files;
    2 for a folder that is no bundle."""
    from aicr_gen.report.findings import to_json

    results = [check_folder(folder) for folder in args.folders]
    worst = max(code for _, code, _ in results)
    if args.verify_format == "json":
        sys.stdout.write(to_json([result for result, _, _ in results]))
        return worst
    problems: list[str] = []
    for result, code, count in results:
        if code == INVALID:
            sys.stderr.write(f"aicr-gen: error: {result.errors[0].text()}\n")
        elif result.errors:
            problems.append(f"{result.file}: {len(result.errors)} finding(s):\n  " + "\n  ".join(
                f"{p.message.split(':')[0]}: {p.path}" for p in result.errors))
        else:
            sys.stdout.write(f"{result.file}: {count} files verified\n")
    if problems:
        sys.stderr.write("".join(f"aicr-gen: error: {text}\n" for text in problems))
    return worst
