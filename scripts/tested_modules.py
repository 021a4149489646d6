"""Which modules of aicr_gen a test imports directly, and which it reaches only through the CLI or other modules.

Reads every ``import`` of the files under tests/ (also those inside functions) and prints, per module of aicr_gen,
``imported`` or ``indirect``, then the count. ``from aicr_gen.pkg import name`` imports the module ``pkg.name``
when there is one, else the package ``pkg`` itself. A package's ``__init__.py`` counts as a module only when it
holds more than a docstring. Usage: ``python scripts/tested_modules.py [--indirect]``: only those no test imports.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "aicr_gen"


def module_name(path: Path) -> str:
    """``aicr_gen/render/helm.py`` -> ``aicr_gen.render.helm``; a package's ``__init__.py`` -> the package."""
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def has_code(path: Path) -> bool:
    """Whether a file holds more than a docstring (an empty ``__init__.py`` is no module to test)."""
    body = ast.parse(path.read_text(encoding="utf-8")).body
    return any(not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)) for node in body)


def modules() -> set[str]:
    """Every module of aicr_gen that holds code."""
    return {module_name(path) for path in PACKAGE.rglob("*.py") if path.name != "__init__.py" or has_code(path)}


def imported(tests: Path, known: set[str]) -> set[str]:
    """The modules of aicr_gen that some file under ``tests`` imports directly."""
    found: set[str] = set()
    for path in tests.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found |= {alias.name for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for alias in node.names:
                    child = f"{node.module}.{alias.name}"
                    found.add(child if child in known else node.module)
    return found & known


def main(argv: list[str]) -> int:
    known = modules()
    direct = imported(ROOT / "tests", known)
    indirect = sorted(known - direct)
    if "--indirect" not in argv:
        for name in sorted(known):
            print(f"{'imported' if name in direct else 'indirect'}  {name}")
    else:
        print("\n".join(indirect))
    print(f"{len(indirect)} of {len(known)} modules no test imports (reached only through the CLI or other modules)",
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
