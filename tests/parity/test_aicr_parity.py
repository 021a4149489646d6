"""aicr-gen bundles deploy what AICR's own ``aicr bundle`` deploys, for every leaf of AICR's catalog and every
deployer, compared as deployments (``normalize.py``) rather than files.

Every difference must be accepted by a rule of ``allowed.py``: deliberate (``ALLOWED``) or a known gap
(``KNOWN_GAPS``, the list of what is left to fix). Rules are strict both ways: a new difference fails its
leaf x deployer, and a rule that matches nothing anymore fails ``test_every_rule_still_matches``.
``python -m tests.parity.report`` prints the same comparison as a table.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from tests.conftest import AICR_CATALOG, needs
from tests.parity.allowed import ALLOWED, KNOWN_GAPS
from tests.parity.bundles import Pair, leaves, run_all
from tests.parity.compare import CATEGORIES, Rule, triage
from tests.parity.normalize import DEPLOYERS

pytestmark = needs(AICR_CATALOG)


def _leaf_names() -> list[str]:
    return [leaf.name for leaf in leaves()] if AICR_CATALOG.is_dir() else ["(AICR catalog absent)"]


@pytest.fixture(scope="session")
def pairs(aicr: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[tuple[str, str], Pair]:
    """Both tools on every leaf x deployer, once per session (in parallel)."""
    return {(p.leaf, p.deployer): p for p in run_all(tmp_path_factory.mktemp("parity"), aicr)}


def _explain(pair: Pair, unexplained: list[object]) -> str:
    lines = [f"{pair.leaf} x {pair.deployer}: {len(unexplained)} difference(s) no rule of "
             f"tests/parity/allowed.py accepts (fix aicr-gen, or add a rule with its reason):"]
    for category in CATEGORIES:
        found = [str(d) for d in unexplained if getattr(d, "category", "") == category]
        lines += [f"  {category} ({len(found)}):", *(f"    {d}" for d in found[:25])]
        if len(found) > 25:
            lines.append(f"    ... and {len(found) - 25} more (python -m tests.parity.report --leaf {pair.leaf} "
                         f"--deployer {pair.deployer} --details)")
    return "\n".join(line for line in lines if not line.endswith("(0):"))


@pytest.mark.parametrize("deployer", DEPLOYERS)
@pytest.mark.parametrize("leaf", _leaf_names())
def test_bundle_deploys_what_aicr_deploys(pairs: dict[tuple[str, str], Pair], leaf: str, deployer: str) -> None:
    pair = pairs[(leaf, deployer)]
    if pair.skip:
        pytest.skip(pair.skip)
    unexplained, _ = triage(leaf, deployer, pair.diffs, ALLOWED, KNOWN_GAPS)
    assert not unexplained, _explain(pair, list(unexplained))


def test_every_rule_still_matches(pairs: dict[tuple[str, str], Pair]) -> None:
    """A deliberate difference or a known gap that occurs nowhere anymore is deleted from allowed.py, so the
    gap list only ever shrinks to what is really left."""
    used: Counter[Rule] = Counter()
    for pair in pairs.values():
        used.update(triage(pair.leaf, pair.deployer, pair.diffs, ALLOWED, KNOWN_GAPS)[1])
    stale = [rule for rule in (*ALLOWED, *KNOWN_GAPS) if not used[rule]]
    assert not stale, "rules of tests/parity/allowed.py that match no difference anymore (delete them):\n" + \
        "\n".join(f"  {rule}" for rule in stale)
