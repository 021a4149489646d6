"""Print how aicr-gen's bundles differ from AICR's, per leaf x deployer, with counts per category.

    python -m tests.parity.report [--leaf GLOB]... [--deployer NAME]... [--details] [--new-only]

Columns are the categories of ``tests/parity/compare.py``; a cell is ``total`` or ``total/new`` where
``new`` differences are accepted by no rule of ``allowed.py`` (the test fails on them). ``=`` marks an
equal pair. ``--details`` lists every difference under its pair (``--new-only``: only the new ones).
Needs the AICR binary (``AICR_BIN`` or ../shared/tools/aicr/install) and helm in .tools (scripts/tools.sh).
"""

from __future__ import annotations

import argparse
import fnmatch
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from tests.conftest import aicr_binary
from tests.parity.allowed import ALLOWED, KNOWN_GAPS
from tests.parity.bundles import Harness, leaves
from tests.parity.compare import CATEGORIES, Rule, counts, triage
from tests.parity.normalize import DEPLOYERS


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.parity.report", description=__doc__.split("\n")[0])
    parser.add_argument("--leaf", action="append", default=[], help="leaf name or glob (repeatable)")
    parser.add_argument("--deployer", action="append", default=[], choices=DEPLOYERS, help="(repeatable)")
    parser.add_argument("--details", action="store_true", help="list every difference")
    parser.add_argument("--new-only", action="store_true", help="with --details: only differences no rule accepts")
    args = parser.parse_args(argv)
    aicr = aicr_binary()
    if aicr is None:
        print("report: the AICR binary was not found (set AICR_BIN)", file=sys.stderr)
        return 2
    chosen = [leaf for leaf in leaves() if not args.leaf or any(fnmatch.fnmatchcase(leaf.name, g) for g in args.leaf)]
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="aicr-parity-") as work:
        pairs = Harness(Path(work), aicr).run(chosen, args.deployer or DEPLOYERS)
    elapsed = time.monotonic() - started
    width = max([len(f"{p.leaf} {p.deployer}") for p in pairs] + [20])
    print(f"{'leaf deployer':<{width}}  " + " ".join(f"{c:>11}" for c in CATEGORIES))
    totals: Counter[str] = Counter()
    pairs_with: Counter[str] = Counter()
    used: Counter[Rule] = Counter()
    equal = differing = skipped = failing = 0
    for pair in pairs:
        name = f"{pair.leaf} {pair.deployer}"
        if pair.skip:
            skipped += 1
            print(f"{name:<{width}}  skipped: {pair.skip[:100]}")
            continue
        new, matched = triage(pair.leaf, pair.deployer, pair.diffs, ALLOWED, KNOWN_GAPS)
        used.update(matched)
        all_counts, new_counts = counts(pair.diffs), counts(new)
        totals.update(all_counts)
        pairs_with.update(all_counts.keys())
        equal += not pair.diffs
        differing += bool(pair.diffs)
        failing += bool(new)
        cells = [(f"{all_counts[c]}/{new_counts[c]}" if new_counts.get(c) else str(all_counts[c]))
                 if c in all_counts else "." for c in CATEGORIES]
        print(f"{name:<{width}}  " + (" ".join(f"{cell:>11}" for cell in cells) if pair.diffs else "="))
        if args.details:
            for diff in new if args.new_only else pair.diffs:
                print(f"    {'NEW ' if diff in new else ''}{diff}")
    print(f"{'differences':<{width}}  " + " ".join(f"{totals.get(c, 0):>11}" for c in CATEGORIES))
    print(f"{'pairs differing':<{width}}  " + " ".join(f"{pairs_with.get(c, 0):>11}" for c in CATEGORIES))
    print(f"\n{len(pairs)} pairs: {equal} equal, {differing} differing ({failing} with new differences), "
          f"{skipped} skipped; {elapsed:.0f}s")
    print("\nrules (differences accepted):")
    for rule in (*ALLOWED, *KNOWN_GAPS):
        kind = "allowed" if rule in ALLOWED else "gap"
        print(f"  {used[rule]:>6}  {kind:<7} {rule.category:<10} {rule.reason}")
    return 1 if failing else 0


if __name__ == "__main__":
    sys.exit(main())
