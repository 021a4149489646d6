"""Check a release's distributions before they are published: ``python scripts/check_dist.py DIST [TAG]``.

- one wheel and one sdist of this project, at the version ``aicr_gen/__init__.py`` says (and, given ``TAG``, the
  release tag is ``v`` + that version: a tag never publishes another version);
- the wheel holds the package with the embedded catalog and the shipped policies (``aicr_gen/_catalog``,
  ``aicr_gen/_policies``), the ``aicr-gen`` console script, the ``cluster`` extra, and nothing else (no tests, no
  caches); the sdist holds what the suite needs (tests, bench, overlays, policies, README);
- ``twine check --strict`` passes on both (the metadata and README a package index renders).

Exit 0, or 1 listing every problem. The release workflow runs it; ``tests/project/test_release.py`` runs it on a
build of the checkout.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def version() -> str:
    found = re.search(r'^__version__ = "([^"]+)"', (ROOT / "aicr_gen" / "__init__.py").read_text(), re.M)
    assert found is not None
    return found.group(1)


def check(dist: Path, tag: str | None = None) -> list[str]:
    """The problems of the distributions in ``dist``."""
    problems: list[str] = []
    release = version()
    if tag is not None and tag != f"v{release}":
        problems.append(f"tag {tag} is not v{release}, the version aicr_gen/__init__.py says")
    wheels = sorted(dist.glob("*.whl"))
    sdists = sorted(dist.glob("*.tar.gz"))
    if [path.name for path in wheels] != [f"aicr_gen-{release}-py3-none-any.whl"]:
        problems.append(f"expected one wheel aicr_gen-{release}-py3-none-any.whl, found {[p.name for p in wheels]}")
    if [path.name for path in sdists] != [f"aicr_gen-{release}.tar.gz"]:
        problems.append(f"expected one sdist aicr_gen-{release}.tar.gz, found {[p.name for p in sdists]}")
    if problems:
        return problems
    with zipfile.ZipFile(wheels[0]) as wheel:
        names = wheel.namelist()
        meta = wheel.read(f"aicr_gen-{release}.dist-info/METADATA").decode()
        entry = wheel.read(f"aicr_gen-{release}.dist-info/entry_points.txt").decode()
    tops = {name.split("/")[0] for name in names}
    if tops != {"aicr_gen", f"aicr_gen-{release}.dist-info"}:
        problems.append(f"the wheel holds more than the package: {sorted(tops)}")
    for needed in ("aicr_gen/__init__.py", "aicr_gen/_catalog/", "aicr_gen/_policies/"):
        if not any(name.startswith(needed) for name in names):
            problems.append(f"the wheel lacks {needed}")
    if any("__pycache__" in name or name.endswith(".pyc") for name in names):
        problems.append("the wheel carries compiled caches")
    if "aicr-gen = aicr_gen.cli.main:main" not in entry:
        problems.append("the wheel has no aicr-gen console script")
    if "Provides-Extra: cluster" not in meta or "kubernetes" not in meta:
        problems.append("the wheel's metadata lacks the cluster extra (the official Kubernetes client)")
    with tarfile.open(sdists[0]) as sdist:
        members = {name.split("/", 1)[1] for name in sdist.getnames() if "/" in name}
    for needed in ("README.md", "pyproject.toml", "tests/conftest.py", "bench/run_all.py", "overlays", "policies"):
        if not any(name == needed or name.startswith(f"{needed}/") for name in members):
            problems.append(f"the sdist lacks {needed}")
    twine = subprocess.run([sys.executable, "-m", "twine", "check", "--strict", *map(str, wheels + sdists)],
                           capture_output=True, text=True, check=False)
    if twine.returncode != 0:
        problems.append(f"twine check --strict failed:\n{twine.stdout}{twine.stderr}")
    return problems


def main(argv: list[str]) -> int:
    if not 1 <= len(argv) <= 2:
        sys.stderr.write("usage: python scripts/check_dist.py DIST [TAG]\n")
        return 2
    problems = check(Path(argv[0]), argv[1] if len(argv) == 2 else None)
    for problem in problems:
        sys.stderr.write(f"check_dist: {problem}\n")
    if not problems:
        sys.stdout.write(f"check_dist: {argv[0]} holds a good release of aicr-gen {version()}\n")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
