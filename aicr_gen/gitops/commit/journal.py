"""A sync's journal: what it is about to do to the checked-out branch, written in the repository's git folder
before the branch moves and removed once the index and work tree follow it, so that an interruption nothing can
catch (SIGKILL, a power cut, a full disk) is finished by the next sync, as git's own sequencer and ``ORIG_HEAD``
let ``git rebase --continue`` and ``git am --continue`` pick up where they stopped.

Around it, the critical section (``critical``): an exclusive ``flock`` on ``aicr-gen-sync.lock`` beside the
journal keeps two syncs of one work tree out of each other's way (the kernel drops the lock when its holder dies,
so a killed sync never leaves it held; a live holder is waited for, at most ``WAIT`` seconds); SIGINT, SIGTERM and
SIGHUP are blocked meanwhile (the git commands started there inherit the mask, so a terminal's ^C to the whole
process group cannot kill them half-way) and delivered when the section is over, after a note saying what was
done.

``pause`` is a test-only hook: with ``AICR_GEN_TEST_PAUSE_AT=STEP`` and ``AICR_GEN_TEST_PAUSE_FILE=FILE`` in
the environment, a sync reaching STEP creates FILE and waits until FILE is removed or a signal arrives (at most
``WAIT`` seconds), so tests can send real signals at every step. Unset (production), it is one dictionary look-up.
The steps, in order: ``committed`` (the commit object exists, nothing moved), ``waiting`` (for another sync's
lock), ``locked``, ``recorded`` (journal written), ``moved`` (the branch moved), ``indexed`` (the index moved),
``temporary`` (a file written beside its target, not yet renamed), ``writing`` (one file moved), ``written``
(all files moved), and ``rolling-back`` (after a failure, before anything is moved back).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from aicr_gen.errors import InvalidInputError, UnreachableError

NAME = "aicr-gen-sync"
"""The journal's file name in the git folder."""
WAIT = 60.0
"""Seconds a sync waits for another one's critical section (and a paused test step waits at most)."""
SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

Entry = tuple[str, str]
"""An index or tree entry: (mode, blob name)."""


class Record(NamedTuple):
    """A sync moving ``ref`` (the checked-out branch) from ``base`` to ``commit``; ``inputs`` are the paths whose
    index entry alone it sets (the specs and their files) with their entry before (None: not in the index)."""

    ref: str
    base: str
    commit: str
    inputs: Mapping[str, Entry | None]


def write(git_dir: Path, record: Record) -> None:
    """Write the journal: to a temporary file renamed over it, so it is whole or absent."""
    data = {"ref": record.ref, "base": record.base, "commit": record.commit,
            "inputs": {name: list(entry) if entry else None for name, entry in sorted(record.inputs.items())}}
    temp = git_dir / f"{NAME}.tmp"
    try:
        temp.write_text(json.dumps(data, indent=1) + "\n")
        temp.replace(git_dir / NAME)
    except OSError:
        temp.unlink(missing_ok=True)
        raise


def read(git_dir: Path) -> Record | None:
    """The journal, None when there is none; one that does not parse names the file and the way out."""
    path = git_dir / NAME
    try:
        data = json.loads(path.read_text())
        inputs = {str(name): (str(entry[0]), str(entry[1])) if entry else None
                  for name, entry in data["inputs"].items()}
        return Record(str(data["ref"]), str(data["base"]), str(data["commit"]), inputs)
    except FileNotFoundError:
        return None
    except (ValueError, KeyError, TypeError, IndexError, AttributeError):
        raise InvalidInputError(f"{path}: an interrupted sync's journal that does not parse (not written by this "
                                "aicr-gen?); check 'git status', then remove the file") from None


def exists(git_dir: Path) -> bool:
    """Whether a journal is there (a sync is committing, or one was interrupted)."""
    return (git_dir / NAME).exists()


def remove(git_dir: Path) -> None:
    (git_dir / NAME).unlink(missing_ok=True)


class Section:
    """The critical section under way: ``note`` says what it did, for the message shown when a deferred signal
    stops the process at its end."""

    def __init__(self) -> None:
        self.note = "nothing was changed"


@contextmanager
def critical(git_dir: Path) -> Iterator[Section]:
    """Hold the sync lock of ``git_dir`` with SIGINT, SIGTERM and SIGHUP deferred (see the module's docstring)."""
    with _locked(git_dir / f"{NAME}.lock"), _deferred() as section:
        yield section


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    import fcntl

    with path.open("a") as handle:
        deadline = time.monotonic() + WAIT
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                pause("waiting")
                if time.monotonic() > deadline:
                    raise UnreachableError(f"another aicr-gen sync has been committing in {path.parent} for "
                                           f"{WAIT:.0f} s (it holds {path.name}); rerun when it is done") from None
                time.sleep(0.05)
        yield  # closing the file releases the lock


@contextmanager
def _deferred() -> Iterator[Section]:
    section = Section()
    if threading.current_thread() is not threading.main_thread():  # only the main thread may handle signals
        yield section
        return
    caught: list[int] = []
    previous = {number: signal.getsignal(number) for number in SIGNALS}
    for number in SIGNALS:
        signal.signal(number, lambda got, _frame: caught.append(got))
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, SIGNALS)
    try:
        yield section
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # a pending signal reaches the handler above now
        for number, handler in previous.items():  # None: a handler set outside Python, taken as the default
            signal.signal(number, signal.SIG_DFL if handler is None else handler)
        stopping = [number for number in caught if previous[signal.Signals(number)] != signal.SIG_IGN]  # nohup
        if stopping:
            sys.stderr.write(f"aicr-gen: {signal.Signals(stopping[0]).name} arrived while committing; waited until "
                             f"the repository was consistent ({section.note}); stopping\n")
            sys.stderr.flush()
            signal.raise_signal(stopping[0])


_PAUSED: set[str] = set()


def pause(step: str) -> None:
    """The test-only pause at ``step``, the first time it is reached (see the module's docstring)."""
    if os.environ.get("AICR_GEN_TEST_PAUSE_AT") != step or step in _PAUSED:
        return
    _PAUSED.add(step)
    marker = Path(os.environ["AICR_GEN_TEST_PAUSE_FILE"])
    marker.write_text(f"{os.getpid()}\n")
    deadline = time.monotonic() + WAIT
    while marker.exists() and not signal.sigpending() & set(SIGNALS) and time.monotonic() < deadline:
        time.sleep(0.01)
