"""CronJob schedules: our verdict is the API server's, case by case from robfig/cron v3's grammar (what
Kubernetes' CronJob validation runs) and the time-zone rule Kubernetes adds; the real kube-apiserver judges the
same table."""

from __future__ import annotations

import http.client
import json
import ssl
from pathlib import Path
from typing import Any

import pytest

from aicr_gen.errors import InvalidInputError
from aicr_gen.spec.load import load_spec
from aicr_gen.text.cron import check_schedule
from tests.cluster.envtest import ADMIN_TOKEN, ControlPlane

VALID = [
    ("0 3 * * 0", "minute hour day-of-month month day-of-week"),
    ("* * * * *", "every minute"),
    ("? ? ? ? ?", "? means * in any field, not only the day ones"),
    ("0 0 ? * MON", "? in day-of-month"),
    ("*/15 * * * *", "a step over the whole range"),
    ("*/100 * * * *", "a step larger than the range: only the lowest value"),
    ("0 */24 * * *", "a step as large as the range"),
    ("5/15 * * * *", "a/n means a-max/n"),
    ("1-59/2 * * * *", "a range with a step"),
    ("0-59 0-23 1-31 1-12 0-6", "every field's whole range"),
    ("59 23 31 12 6", "every field's maximum"),
    ("0 0 1 1 0", "every field's minimum"),
    ("0 0 1 jan-MAR MON-FRI", "names in ranges, any case"),
    ("0 0 * jan,feb *", "month names in a list"),
    ("0 0 * * MON-FRI", "a range of day names"),
    ("0 0 * * sun,Sat", "day names in a list"),
    ("0 0 * DEC *", "the last month name"),
    ("0 0 * * mon/2", "a name with a step: mon-sat/2"),
    ("5,35 1-5/2 * * 6", "lists, ranges and steps together"),
    ("0 0 1,15 * *", "a list of days"),
    ("  0   3 * *  0 ", "white space around and between the fields"),
    ("0\t3\t*\t*\t0", "tabs separate fields"),
    ("0 3 * * 0\n", "a trailing newline is white space"),
    ("0\u00a03 * * 0", "a no-break space is Go white space"),
    ("1,,2 * * * *", "empty list items are skipped"),
    (", * * * *", "a field of only commas parses (and never matches)"),
    ("*-5 * * * *", "after * the parser ignores a range"),
    ("?-x * * * *", "after ? the parser ignores anything up to the step"),
    ("+5 * * * *", "Go's Atoi takes a leading +"),
    ("007 * * * *", "leading zeros"),
    ("1-+5 * * * *", "a + in the range's end"),
    ("*/9223372036854775807 * * * *", "the largest 64-bit step"),
    ("0 0 31 2 *", "31 February parses (the controller never runs it)"),
    ("0 0 * * FR\u0130", "Go lower-cases the dotted capital I to i"),
    ("@yearly", "descriptor"), ("@annually", "descriptor"), ("@monthly", "descriptor"), ("@weekly", "descriptor"),
    ("@daily", "descriptor"), ("@midnight", "descriptor"), ("@hourly", "descriptor"),
    ("@every 1h", "@every and a Go duration"),
    ("@every 1h30m", "a duration of two units"),
    ("@every 1.5h", "a decimal duration"),
    ("@every 90s", "seconds"),
    ("@every 500ms", "below a second: runs every second"),
    ("@every 0", "Go's bare 0 needs no unit"),
    ("@every -1h", "negative: no minimum, runs every second"),
    ("@every +5m", "a leading + in the duration"),
    ("@every 1us", "microseconds"), ("@every 1\u00b5s", "micro sign"), ("@every 1\u03bcs", "Greek mu"),
    ("@every .5h", "a fraction without an integer part"),
    ("@every 1.h", "an integer part with an empty fraction"),
    ("@every 2562047h", "just under the largest Go duration"),
]

INVALID = [
    ("", "empty"),
    (" ", "only white space: no fields"),
    ("* * * *", "four fields"),
    ("* * * * * *", "six fields (seconds or year)"),
    ("0 0 0 * * *", "six fields"),
    ("60 * * * *", "minute runs 0-59"),
    ("* 24 * * *", "hour runs 0-23"),
    ("0 0 0 * *", "day-of-month starts at 1"),
    ("0 0 32 * *", "day-of-month ends at 31"),
    ("0 0 * 0 *", "month starts at 1"),
    ("0 0 * 13 *", "month ends at 12"),
    ("0 0 * * 7", "7 is not Sunday: day-of-week runs 0-6"),
    ("0 0 * * 0-7", "a range past Saturday"),
    ("5-1 * * * *", "a range that runs backwards"),
    ("0 0 * * FRI-MON", "a backwards range of names"),
    ("*/0 * * * *", "step 0"),
    ("0 0 * * SUN-SAT/0", "step 0 after names"),
    ("*/ * * * *", "an empty step"),
    ("*/-1 * * * *", "a negative step"),
    ("*/9223372036854775808 * * * *", "a step past 64 bits"),
    ("1/2/3 * * * *", "two slashes"),
    ("1-2-3 * * * *", "two hyphens"),
    ("-1 * * * *", "a range without a start"),
    ("1- * * * *", "a range without an end"),
    ("/5 * * * *", "a step without a start"),
    ("60/5 * * * *", "a/n starting past the maximum"),
    ("0 0 0/5 * *", "a/n starting below the minimum"),
    ("0 0 L * *", "Quartz L (last day)"),
    ("0 0 * * 5L", "Quartz 5L (last Friday)"),
    ("0 0 15W * *", "Quartz W (nearest weekday)"),
    ("0 0 * * 1#2", "Quartz # (second Monday)"),
    ("0 0 * * MON#2", "Quartz # after a name"),
    ("a b c d e", "letters that are no names"),
    ("0 0 * * monday", "only three-letter names"),
    ("0 0 * january *", "only three-letter month names"),
    ("jan * * * *", "names only in their own field"),
    ("0 0 * * jan", "month names are not day names"),
    ("1_0 * * * *", "Atoi takes no underscores"),
    ("0x10 * * * *", "no hexadecimal"),
    ("\uff11 * * * *", "only ASCII digits"),
    ("0 3 * * 0\x1c", "\\x1c is not Go white space (Python's split would drop it)"),
    (" @daily", "a descriptor starts the schedule"),
    ("@daily ", "nothing after a descriptor"),
    ("@Daily", "descriptors are case-sensitive"),
    ("@reboot", "not a Kubernetes descriptor"),
    ("@every", "@every without a duration"),
    ("@every  1h", "@every takes one space"),
    ("@every 1h ", "a trailing space is part of the duration"),
    ("@every 1", "a duration needs a unit"),
    ("@every 1d", "Go durations have no days"),
    ("@every h", "a unit without a number"),
    ("@every .", "a point without digits"),
    ("@every 1h 30m", "no spaces inside a duration"),
    ("@every 9223372036854775808ns", "past the largest Go duration"),
    ("@every 2562048h", "past the largest Go duration in hours"),
    ("TZ=UTC 0 3 * * *", "Kubernetes wants spec.timeZone, not TZ="),
    ("CRON_TZ=Europe/Paris 0 3 * * *", "nor CRON_TZ="),
    ("TZ=UTC @daily", "a time zone before a descriptor"),
    ("TZ=UTC", "a time zone alone (the parser panics; the API server reports it as invalid)"),
]

CASES = [(text, True, why) for text, why in VALID] + [(text, False, why) for text, why in INVALID]


def _accepted(text: str) -> bool:
    try:
        check_schedule(text)
    except InvalidInputError:
        return False
    return True


@pytest.mark.parametrize(("text", "valid", "why"), CASES, ids=[f"{i}-{why}" for i, (_, _, why) in enumerate(CASES)])
def test_verdict(text: str, valid: bool, why: str) -> None:
    assert _accepted(text) is valid, (text, why)


def test_the_table_is_large_and_distinct() -> None:
    assert len(CASES) >= 100
    assert len({text for text, _, _ in CASES}) == len(CASES)


@pytest.mark.parametrize(("text", "normal"), [("  0   3 * *  0 ", "0 3 * * 0"), ("0\t3\n* *\u00a00", "0 3 * * 0"),
                                              ("@every 1h30m", "@every 1h30m"), ("@daily", "@daily")])
def test_the_schedule_written_has_single_spaces(text: str, normal: str) -> None:
    assert check_schedule(text) == normal


@pytest.mark.parametrize(("text", "fragments"), [
    ("0 0 * * 7", ["--schedule '0 0 * * 7'", "day-of-week field '7'", "ends at 7, above 6",
                   "day-of-week takes 0-6 or SUN-SAT", "e.g. '0 3 * * 0'"]),
    ("0 0 * 13 *", ["month field '13'", "month takes 1-12 or JAN-DEC"]),
    ("0 0 0 * *", ["day-of-month field '0'", "starts at 0, below 1"]),
    ("5-1 * * * *", ["range '5-1' runs backwards"]),
    ("*/0 * * * *", ["step '0' in '*/0' must be at least 1"]),
    ("0 0 * * 1#2", ["'1#2' is not a number or a name (L, W and # are Quartz extensions"]),
    ("* * * * * *", ["found 6", "a schedule has 5 fields"]),
    (" @daily", ["found 1", "drop what comes before '@daily'"]),
    ("@every 1d", ["'1d' is not a Go duration", "units ns, us, ms, s, m, h"]),
    ("@Daily", ["not a descriptor", "@every DURATION"]),
    ("CRON_TZ=UTC 0 3 * * *", ["time zone", "kube-controller-manager's time zone"]),
])
def test_messages_name_the_field_and_the_fix(text: str, fragments: list[str]) -> None:
    with pytest.raises(InvalidInputError) as caught:
        check_schedule(text)
    for fragment in fragments:
        assert fragment in str(caught.value), str(caught.value)


def test_a_spec_names_the_schedule_field(tmp_path: Path) -> None:
    example = Path(__file__).parents[2] / "examples" / "eks-h100-inference-dynamo.yaml"
    spec = tmp_path / "cluster.yaml"
    spec.write_text(example.read_text().replace('schedule: "0 * * * *"', 'schedule: "0 0 * * 7"'))
    with pytest.raises(InvalidInputError) as caught:
        load_spec(spec)
    message = str(caught.value)
    assert "spec.snapshot.schedule: '0 0 * * 7': day-of-week field '7'" in message, message
    assert "--schedule" not in message


# ------------------------------------------------------------------------------------ the real consumer


def _cronjob(index: int, schedule: str) -> dict[str, Any]:
    pod = {"restartPolicy": "Never", "containers": [{"name": "run", "image": "registry.k8s.io/pause:3.10"}]}
    return {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": f"case-{index}"},
            "spec": {"schedule": schedule, "jobTemplate": {"spec": {"template": {"spec": pod}}}}}


def _server_verdicts(plane: ControlPlane, schedules: list[str]) -> list[tuple[bool, str]]:
    """Whether the API server creates each schedule's CronJob (server-side dry run), and its message."""
    host, port = plane.server.removeprefix("https://").rsplit(":", 1)
    context = ssl.create_default_context(cafile=str(plane.ca_file))
    connection = http.client.HTTPSConnection(host, int(port), context=context, timeout=30)
    headers = {"Authorization": f"Bearer {ADMIN_TOKEN}", "Content-Type": "application/json"}
    verdicts = []
    try:
        for index, schedule in enumerate(schedules):
            connection.request("POST", "/apis/batch/v1/namespaces/default/cronjobs?dryRun=All",
                               json.dumps(_cronjob(index, schedule)), headers)
            answer = connection.getresponse()
            body = json.loads(answer.read() or b"{}")
            if answer.status == 422:
                fields = {cause.get("field") for cause in body.get("details", {}).get("causes", [])}
                assert fields == {"spec.schedule"}, (schedule, body)  # the rest of the CronJob is valid
            else:
                assert answer.status in (201, 500), (schedule, answer.status, body)
            verdicts.append((answer.status == 201, str(body.get("message", ""))))
    finally:
        connection.close()
    return verdicts


def test_the_api_server_agrees(control_plane: ControlPlane) -> None:
    schedules = [text for text, _, _ in CASES]
    verdicts = _server_verdicts(control_plane, schedules)
    disagree = [(text, ours, message) for text, ours, (theirs, message) in
                zip(schedules, map(_accepted, schedules), verdicts, strict=True) if ours != theirs]
    assert not disagree, disagree
