"""Shared fixtures: the reference data, an isolated parse cache, and CLI runners."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from aicr_gen.cli.main import main
from tests.cluster.envtest import control_plane  # noqa: F401  (the session's real API server)

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = Path(os.environ.get("AICR_GEN_REFERENCE", ROOT.parent / "shared" / "reference")).resolve()
AICR_CATALOG = REFERENCE / "aicr" / "recipes"
REQUIRE_REFERENCE = "AICR_GEN_REQUIRE_REFERENCE"
"""Set by CI (``.ci/run``): reference data that is missing fails the run instead of skipping tests."""


@dataclass(frozen=True)
class Result:
    """What a CLI run returned."""

    code: int
    out: str
    err: str


def use_reference(path: Path) -> Path:
    """``path`` (reference data under ``REFERENCE``) when it exists; otherwise the test skips naming it and
    how to provide it, or fails under ``AICR_GEN_REQUIRE_REFERENCE``, where every oracle must run."""
    if path.exists():
        return path
    reason = (f"reference data {path} not found: the tests read it from {REFERENCE} "
              f"(set AICR_GEN_REFERENCE to a copy of shared/reference; default ../shared/reference)")
    if os.environ.get(REQUIRE_REFERENCE):
        pytest.fail(f"{REQUIRE_REFERENCE} is set but {reason}", pytrace=False)
    pytest.skip(reason)


def needs(*paths: Path) -> pytest.MarkDecorator:
    """Mark a test (module, parameter) that reads these reference files or folders: ``use_reference`` checks
    each before the test runs."""
    return pytest.mark.reference(*paths)


needs_reference = needs(AICR_CATALOG)
AICR_INSTALL = REFERENCE.parent / "tools" / "aicr" / "install"
"""Unpacks the AICR binary built from the reference catalog's commit and prints its path."""


def aicr_binary() -> Path | None:
    """The AICR binary: ``$AICR_BIN``, else the one the reference tools unpack; None when neither exists."""
    if os.environ.get("AICR_BIN"):
        path = Path(os.environ["AICR_BIN"])
        return path if path.is_file() else None
    if not AICR_INSTALL.is_file():
        return None
    proc = subprocess.run(["bash", str(AICR_INSTALL)], capture_output=True, text=True, check=False, timeout=300)
    path = Path(proc.stdout.strip())
    return path if proc.returncode == 0 and path.is_file() else None



@pytest.fixture(scope="session")
def aicr() -> Path:
    """The AICR binary of the reference catalog's commit: skips without it, fails under CI's
    AICR_GEN_REQUIRE_REFERENCE (like the reference data)."""
    path = aicr_binary()
    if path is None:
        reason = ("the AICR binary was not found: set AICR_BIN, or provide ../shared/tools/aicr/install "
                  "(AICR_GEN_REFERENCE's sibling tools folder)")
        if os.environ.get(REQUIRE_REFERENCE):
            pytest.fail(f"{REQUIRE_REFERENCE} is set but {reason}", pytrace=False)
        pytest.skip(reason)
    return path


TEST_IDENTITY = {"GIT_AUTHOR_NAME": "aicr-gen tests", "GIT_AUTHOR_EMAIL": "tests@aicr-gen.invalid",
                 "GIT_COMMITTER_NAME": "aicr-gen tests", "GIT_COMMITTER_EMAIL": "tests@aicr-gen.invalid"}
"""Who the suite's commits are by: a new contributor's machine has no git identity, and the suite must not
depend on the one it happens to have (set before any fixture, module-scoped ones included)."""


def pytest_configure(config: pytest.Config) -> None:
    """CI sets AICR_GEN_REQUIRE_REFERENCE=1: there the AICR oracles must run, never skip. Every git command the
    suite runs commits as ``TEST_IDENTITY``. tests/markers.py gives every test its markers (cluster, consumers,
    conformance, network, slow)."""
    for key, value in TEST_IDENTITY.items():
        os.environ.setdefault(key, value)
    config.addinivalue_line("markers", "reference(*paths): the test reads these reference data paths "
                                       "(tests.conftest.needs)")
    config.pluginmanager.import_plugin("tests.markers")
    if os.environ.get(REQUIRE_REFERENCE) and not AICR_CATALOG.is_dir():
        raise pytest.UsageError(f"{REQUIRE_REFERENCE} is set but {AICR_CATALOG} does not exist")


@pytest.hookimpl(tryfirst=True)  # before the fixtures: a bundle is not rendered for a test that skips
def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("reference"):
        for path in mark.args:
            use_reference(path)


@pytest.fixture(autouse=True)
def _isolated_cache(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test session gets its own parse cache, so tests never read a developer's cache."""
    monkeypatch.setenv("AICR_GEN_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "cache"))


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run ``aicr-gen ARGS`` in-process; returns exit code, stdout and stderr."""

    def run(*args: str) -> Result:
        try:
            code = main(list(args))
        except SystemExit as exit_:  # argparse usage errors and --version
            code = int(exit_.code or 0)
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def tool(name: str) -> str:
    """A test tool installed into this virtualenv (scripts/test.sh installs them), else from PATH."""
    beside = Path(sys.executable).parent / name
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed; run scripts/test.sh, which installs the test tools")
    return found


def run_process(*args: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> Result:
    """Run ``aicr-gen ARGS`` as a real process (as users and hooks do)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([sys.executable, "-m", "aicr_gen", *args], capture_output=True, text=True,
                          env=full_env, cwd=cwd or ROOT, check=False)
    return Result(proc.returncode, proc.stdout, proc.stderr)


_LINT_INPUT_ERROR = re.compile(r"^(?P<where>.+?:\d+):\d+: error \[input\] (?P<rest>.*)$", re.MULTILINE)


def as_refusal(result: Result) -> Result:
    """``result`` with lint's input errors (``file:line:col: error [input] path: message`` lines on stdout) as
    every other command reports one, ``aicr-gen: error: file:line: path: message`` on stderr."""
    found = [f"{match['where']}: {match['rest']}" for match in _LINT_INPUT_ERROR.finditer(result.out)]
    if result.err or not found:
        return result
    return Result(result.code, "", "aicr-gen: error: " + "\n".join(found) + "\n")


def assert_refused(result: Result, *fragments: str) -> None:
    """Exit 2 with one clean message (no traceback, no internal error) holding every fragment (lint's: its
    input errors, ``as_refusal``)."""
    assert result.code == 2, result
    result = as_refusal(result)
    assert "Traceback" not in result.err
    assert "internal error" not in result.err, result.err
    assert result.err.startswith("aicr-gen: error: "), result.err
    for fragment in fragments:
        assert fragment in result.err, f"{fragment!r} not in {result.err!r}"
