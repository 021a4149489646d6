"""Version grammars: one home (``text/versions``), one reader per consumer's grammar, each pinned against what
its former home answered at 3d48356: ``resolve/pools.version_key``, ``mirror/pull._semver``,
``render/manifests.chart_version`` and ``render/vendor.chart_version`` (one rule written twice), and
``drift/pools.same_driver``. Constraint versions (``parse_version``, ``compare``) keep their own tests."""

from __future__ import annotations

import pytest

from aicr_gen.text.versions import chart_version, parse_semver, same_driver, version_key

# text, version_key (GPU Operator ordering), parse_semver (Helm index pins), chart_version (AICR's .Chart.Version)
TABLE = [
    ("v26.3.3", (26, 3, 3), (26, 3, 3, ""), "26.3.3"),
    ("26.3", (26, 3), None, "26.3"),
    ("V1.2.3", (1, 2, 3), None, "V1.2.3"),
    ("1.2.3-rc.1+b", (1, 2, 3), (1, 2, 3, "rc.1"), "1.2.3-rc.1+b"),
    ("1.2.3+build", (1, 2, 3), (1, 2, 3, ""), "1.2.3+build"),
    ("01.2.3", (1, 2, 3), None, "01.2.3"),
    ("1.2", (1, 2), None, "1.2"),
    ("", (), None, "0.1.0"),
    ("v", (), None, "0.1.0"),
    ("vv1.2", (), None, "v1.2"),
    ("abc", (), None, "abc"),
    (" 1.2 ", (1, 2), None, " 1.2 "),
]


@pytest.mark.parametrize(("text", "key", "semver", "chart"), TABLE)
def test_each_grammar_answers_as_its_former_home(text: str, key: tuple[int, ...],
                                                 semver: tuple[int, int, int, str] | None, chart: str) -> None:
    assert version_key(text) == key
    assert parse_semver(text) == semver
    assert chart_version(text) == chart


@pytest.mark.parametrize(("want", "have", "same"), [
    ("580.173.02", "580", True), ("580.173.02", "570", False), ("v580.173.02", "580.173", True),
    ("vv580", "580", True), ("580", "580.173.02", False), ("580.17", "580.1", False),
])
def test_a_driver_matches_the_components_its_labels_carry(want: str, have: str, same: bool) -> None:
    assert same_driver(want, have) is same
