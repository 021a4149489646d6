"""The one kustomize adapter: pykustomize where installed (the ``pykustomize`` extra, Python >= 3.14), else
``kubectl kustomize``. Used to build Kustomize components into local charts for deployers that cannot
install a Kustomize source natively, and by ``aicr-gen bundle --build``."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from aicr_gen.errors import InvalidInputError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TIMEOUT = 300


def target(source: str, path: str, tag: str) -> str:
    """What to build: a local folder (``source`` is a directory) or kustomize's remote form
    ``URL//path?ref=tag``."""
    if Path(source).is_dir():
        return str(Path(source) / path)
    remote = f"{source}//{path}" if path else source
    return f"{remote}?ref={tag}" if tag else remote


def _kubectl() -> str | None:
    beside = Path(sys.executable).parent / "kubectl"
    return str(beside) if beside.exists() else shutil.which("kubectl")


def _with_pykustomize(what: str) -> bytes | None:
    try:
        import pykustomize  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    import asyncio

    result: Any = asyncio.run(pykustomize.build(what, pykustomize.BuildOptions()))
    text: str = result.yaml
    return text.encode()


def build(what: str, label: str) -> bytes:
    """``kustomize build`` of ``what``; ``label`` names it in errors."""
    try:
        output = _with_pykustomize(what)
    except Exception as err:  # pykustomize raises its own error types
        raise InvalidInputError(f"{label}: kustomize build of {what} failed: {err}") from None
    if output is not None:
        return output
    kubectl = _kubectl()
    if kubectl is None:
        raise InvalidInputError(
            f"{label}: building {what} needs kustomize: install kubectl (or the pykustomize extra on Python >= 3.14)")
    try:
        proc = subprocess.run([kubectl, "kustomize", what], capture_output=True, check=False, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise InvalidInputError(f"{label}: kubectl kustomize {what} took over {TIMEOUT}s") from None
    if proc.returncode != 0:
        reason = proc.stderr.decode(errors="replace").strip().splitlines()
        last = reason[-1] if reason else f"exit {proc.returncode}"
        raise InvalidInputError(f"{label}: kubectl kustomize {what} failed: {last}")
    return proc.stdout
