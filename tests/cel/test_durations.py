"""Go durations: one reader (``text/durations``), two grammars, each pinned against what its former home did.

``go_nanoseconds`` was ``text/cron.go_duration`` (robfig/cron's ``@every``) and ``cel/conversions._go_duration``
(cel-go's ``duration()``); ``seconds`` was ``sentinel/values.duration_seconds`` (NVSentinel's breaker window, also
read by ``spec/cluster``, ``resolve/pools`` and ``gitops/risks``)."""

from __future__ import annotations

import pytest

from aicr_gen.cel import CelError, Environment
from aicr_gen.cel.durations import go_nanoseconds, seconds
from aicr_gen.errors import InvalidInputError
from aicr_gen.sentinel.values import Breaker, values
from aicr_gen.text.cron import check_schedule

_S = 10**9

GO = [
    ("0", 0), ("+0", 0), ("-0", 0), ("1h30m", 5400 * _S), ("1.5h", 5400 * _S), ("-1h", -3600 * _S),
    ("+90s", 90 * _S), (".5s", _S // 2), ("1.s", _S), ("1.000000001s", _S + 1), ("1µs", 1000), ("1μs", 1000),
    ("1h1h", 7200 * _S), ("0.1ns", 0), ("9223372036854775807ns", (1 << 63) - 1),
    ("-9223372036854775808ns", -(1 << 63)), ("9223372036854775808ns", None), ("2562048h", None),
    ("1." + "1" * 30 + "s", 1111111111), ("9" * 30 + "s", None), ("", None), ("-", None), ("+", None),
    ("1", None), ("0s1", None), (".s", None), ("s", None), ("1hh", None), ("1e3s", None), ("1 s", None),
    ("1.5.3s", None), ("--1s", None),
]

SECONDS = [
    ("1h30m", 5400.0), ("1.5h", 5400.0), ("90s", 90.0), ("5m", 300.0), ("24h", 86400.0), ("1ms", 0.001),
    ("1us", 1e-06), ("1µs", 1e-06), ("1ns", 1e-09), ("0.1s", 0.1), ("1h1h", 7200.0), ("0s", 0.0),
    ("1" * 63 + "s", 1.1111111111111112e62), ("1" * 64 + "s", None), ("", None), ("0", None), ("-1s", None),
    ("+1s", None), (".5s", None), ("1.s", None), ("1μs", None), ("1", None), ("1hh", None), ("1h ", None),
    ("1.5.3s", None),
]


@pytest.mark.parametrize(("text", "nanoseconds"), GO)
def test_go_grammar_is_time_parse_duration(text: str, nanoseconds: int | None) -> None:
    assert go_nanoseconds(text) == nanoseconds


@pytest.mark.parametrize(("text", "expected"), SECONDS)
def test_breaker_grammar_is_the_narrow_one(text: str, expected: float | None) -> None:
    got = seconds(text)
    assert repr(got) == repr(expected)


@pytest.mark.parametrize(("text", "nanoseconds"), GO)
def test_cron_every_takes_what_go_takes(text: str, nanoseconds: int | None) -> None:
    if nanoseconds is None:
        with pytest.raises(InvalidInputError, match="@every"):
            check_schedule(f"@every {text}")
    else:
        assert check_schedule(f"@every {text}") == f"@every {text}"


def test_cel_duration_reads_go_durations_and_names_a_bad_one() -> None:
    env = Environment()
    assert env.compile("duration('1.5h') == duration('90m')").evaluate({}) is True
    with pytest.raises(CelError, match=r"^invalid duration '1x' \(a Go duration, e.g. 30m, 1h30m, 1.5s\)$"):
        env.compile("duration('1x')").evaluate({})


def test_breaker_flag_messages_are_unchanged() -> None:
    assert values("quarantine", breaker=Breaker(duration="1h30m"))["fault-quarantine"]["circuitBreaker"][
        "duration"] == "1h30m"
    with pytest.raises(InvalidInputError, match=r"^--breaker-duration '1x': not a Go duration; write e.g. 5m, "
                                                r"90s or 1h30m$"):
        values("quarantine", breaker=Breaker(duration="1x"))
    with pytest.raises(InvalidInputError, match=r"^--breaker-duration 25h: give a window from 1s to 24h"):
        values("quarantine", breaker=Breaker(duration="25h"))
