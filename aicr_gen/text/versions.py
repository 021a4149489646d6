"""Versions, one home for each grammar a consumer reads them in; first, readiness constraint values (pure).

Rules (documented here because constraint results depend on them):

* A **version** is an optional leading ``v``/``V``, one or more dot-separated decimal components, and an
  optional suffix introduced by ``-``, ``+``, ``~`` or ``_``: ``v1.33.0``, ``1.32.4``, ``24.04``,
  ``6.8.0-1015-aws``, ``v1.33.5-eks-3025e55``, ``1.34.0-rc.1``. Anything else (``ubuntu``, ``Install``) is
  not a version.
* Numeric components compare numerically, left to right; a missing component is 0, so ``1.34`` equals
  ``v1.34.0`` and ``24.04`` equals ``24.4``.
* When the numeric components tie, the suffix decides:

  - a **pre-release** suffix (starts with ``alpha``, ``beta``, ``rc``, ``pre`` or ``dev``) ranks *below* the
    release: ``1.34.0-rc.1 < 1.34``; two pre-releases compare by their tokens;
  - any other suffix is a **build/distro tag** (``-1015-aws``, ``-eks-3025e55``, ``+k3s1``). When only one
    side has one it is ignored, so ``6.8.0-1015-aws >= 6.8`` and ``6.8.0-1015-aws == 6.8`` are true (the
    operand names the release, any build of it matches). When both sides have one, the tags compare token by
    token (numbers numerically, numbers before words): ``6.8.0-1015-aws < 6.8.0-1020-aws``.
* ``==``/``!=`` and bare values: equal when the trimmed strings are equal, or when both are versions that
  compare equal under the rules above. Non-version values therefore fall back to exact string equality.
* ``>``, ``>=``, ``<``, ``<=`` need versions on both sides; :func:`compare` returns None otherwise, and the
  caller decides (an operand that is not a version is a recipe error; an actual that is not one fails).

The other version grammars our consumers have, each here and named for its consumer:

* ``parse_semver``: a Helm chart version as a repository index pins it (SemVer 2, ``MAJOR.MINOR.PATCH`` without
  leading zeros, an optional pre-release and build, an optional leading ``v``), for ``--vendor-charts``;
* ``chart_version``: ``.Chart.Version`` as AICR writes it (``strings.TrimPrefix(version, "v")``, ``0.1.0``
  when nothing is left);
* ``version_key``: the numbers of a version alone, for ordering GPU Operator releases (``v26.3.3`` -> (26, 3,
  3)), a text without any lowest;
* ``same_driver``: an NVIDIA driver version against a node's GFD labels, which may carry only its leading
  components (``580`` matches ``580.173.02``).
"""

from __future__ import annotations

import re

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NamedTuple
else:
    from aicr_gen.records import NamedTuple

OPERATORS = (">=", "<=", "==", "!=", ">", "<")
_OPERATOR_CHARS = "<>=!~^"
_VERSION = re.compile(r"^[vV]?(\d+(?:\.\d+)*)(?:[-+~_](.*))?\Z")
_PRE_RELEASE = re.compile(r"^(alpha|beta|rc|pre|dev)", re.IGNORECASE)
_TOKEN_SPLIT = re.compile(r"[.\-+~_]")
_SEMVER = re.compile(r"^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?\Z")


class Version(NamedTuple):
    """A parsed version: numeric components and the (possibly empty) suffix after them."""

    numbers: tuple[int, ...]
    suffix: str = ""

    @property
    def pre_release(self) -> bool:
        """True when the suffix marks a pre-release (alpha, beta, rc, pre, dev)."""
        return bool(_PRE_RELEASE.match(self.suffix))


class Expectation(NamedTuple):
    """A parsed constraint value: the operator (``""`` for a bare value = exact match) and the operand."""

    operator: str
    operand: str


class ExpectationError(ValueError):
    """A constraint value that cannot be evaluated; the message says why."""


def parse_version(text: str) -> Version | None:
    """``text`` as a :class:`Version`, or None when it is not a version."""
    match = _VERSION.match(text.strip())
    if match is None:
        return None
    numbers = tuple(int(part) for part in match.group(1).split("."))
    return Version(numbers, match.group(2) or "")


def version_key(text: str) -> tuple[int, ...]:
    """The numbers of a version (``v26.3.3`` -> (26, 3, 3)); a text without any compares lowest."""
    found = parse_version(text)
    return found.numbers if found is not None else ()


def parse_semver(text: str) -> tuple[int, int, int, str] | None:
    """A chart version's (major, minor, patch, pre-release or ""), or None when it is not SemVer 2."""
    found = _SEMVER.match(text.removeprefix("v"))
    return None if found is None else (int(found[1]), int(found[2]), int(found[3]), found[4] or "")


def chart_version(version: str) -> str:
    """``.Chart.Version`` as AICR writes it: the version without a leading ``v``; ``0.1.0`` when it has none."""
    return version.removeprefix("v") or "0.1.0"


def same_driver(want: str, have: str) -> bool:
    """Whether a node runs the desired driver, as far as its labels tell (a major-only label: the major)."""
    wanted, found = want.lstrip("vV").split("."), have.lstrip("vV").split(".")
    return wanted[:len(found)] == found


def parse_expectation(value: str) -> Expectation:
    """Split ``'>= 1.34'`` into operator and operand; a bare value means exact match.

    Raises :class:`ExpectationError` for an empty value, an operator without an operand, or an operator that
    is not one of ``>= <= > < == !=`` (e.g. ``=>``, ``~=``, ``=``). A bare value may start with ``!``
    (AICR uses ``!label`` for label absence); it is then matched exactly.
    """
    text = value.strip()
    if not text:
        raise ExpectationError("the value is empty; give an exact value or an operator and a value, e.g. '>= 1.30'")
    for operator in OPERATORS:
        if text.startswith(operator):
            operand = text[len(operator):].strip()
            if not operand:
                raise ExpectationError(f"operator {operator!r} has no operand, e.g. '{operator} 1.30'")
            if operand[0] in _OPERATOR_CHARS:
                raise ExpectationError(f"unknown operator in {text!r}; use one of {', '.join(OPERATORS)}")
            return Expectation(operator, operand)
    if text[0] in _OPERATOR_CHARS.replace("!", ""):
        raise ExpectationError(f"unknown operator in {text!r}; use one of {', '.join(OPERATORS)}")
    return Expectation("", text)


def _token_key(token: str) -> tuple[int, int, str]:
    return (0, int(token), "") if token.isdigit() else (1, 0, token.lower())


def _compare_suffix(left: str, right: str) -> int:
    left_keys = [_token_key(t) for t in _TOKEN_SPLIT.split(left) if t]
    right_keys = [_token_key(t) for t in _TOKEN_SPLIT.split(right) if t]
    return (left_keys > right_keys) - (left_keys < right_keys)


def compare_versions(left: Version, right: Version) -> int:
    """-1, 0 or 1 as ``left`` is below, equal to or above ``right`` (see the module rules)."""
    width = max(len(left.numbers), len(right.numbers))
    a = left.numbers + (0,) * (width - len(left.numbers))
    b = right.numbers + (0,) * (width - len(right.numbers))
    if a != b:
        return -1 if a < b else 1
    if left.pre_release != right.pre_release:
        return -1 if left.pre_release else 1
    if left.suffix and right.suffix:
        return _compare_suffix(left.suffix, right.suffix)
    return 0


def compare(actual: str, operand: str) -> int | None:
    """Version-compare two strings: -1/0/1, or None when either is not a version."""
    left, right = parse_version(actual), parse_version(operand)
    if left is None or right is None:
        return None
    return compare_versions(left, right)


def equal(actual: str, operand: str) -> bool:
    """Exact string equality, or version equality when both sides are versions."""
    if actual.strip() == operand.strip():
        return True
    return compare(actual, operand) == 0


def satisfies(actual: str, expectation: Expectation) -> bool | None:
    """Whether ``actual`` meets ``expectation``; None when an ordering operator meets a non-version."""
    operator, operand = expectation.operator, expectation.operand
    if operator in ("", "=="):
        return equal(actual, operand)
    if operator == "!=":
        return not equal(actual, operand)
    order = compare(actual, operand)
    if order is None:
        return None
    return {">=": order >= 0, "<=": order <= 0, ">": order > 0, "<": order < 0}[operator]
