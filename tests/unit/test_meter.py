"""Progress: with an estimate of time left (statemeta.harness.meter) in ``check --concurrent``;
verify's campaign phase."""

from __future__ import annotations

import functools
import io
import re
import sys

import pytest

from statemeta.cli import main
from statemeta.harness.check import Progress
from statemeta.harness.meter import Meter

SERVE = f"{sys.executable} -m statemeta.serve --concurrent"
LINE = re.compile(r"  \.\.\. (\d+)/(\d+) histories in \d+ s, about \d+ s left")


def test_a_meter_prints_plain_lines_with_the_time_left_but_not_after_the_last() -> None:
    out = io.StringIO()
    meter = Meter(out, 3, "histories", interval=0.0)
    for _ in range(3):
        meter.tick()
    lines = out.getvalue().splitlines()
    assert [LINE.fullmatch(line) is not None for line in lines] == [True, True]
    assert "\r" not in out.getvalue()
    assert [line.split()[1] for line in lines] == ["1/3", "2/3"]


def test_a_silent_meter_prints_nothing() -> None:
    meter = Meter(None, 2, "histories", interval=0.0)
    meter.tick()
    assert meter.done == 1


def test_check_concurrent_reports_progress_on_stderr(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """64 s of silence before (issue 32): now a line per interval, on stderr (a log)."""
    monkeypatch.setattr("statemeta.harness.cli_check.Meter", functools.partial(
        Meter, interval=0.0))
    code = main(["check", "--sut", SERVE, "--concurrent", "2", "--examples", "3", "--steps",
                 "5", "--seed", "0"])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    matches = [LINE.fullmatch(line) for line in captured.err.splitlines()]
    assert [m.group(1, 2) for m in matches if m] == [("1", "3"), ("2", "3")]
    assert "linearizable: 3 histories" in captured.out


VERIFY = ["verify", "--stream-tasks", "0", "--max-depth", "2", "--no-deep", "--workers", "1",
          "--examples", "3", "--steps", "5"]
CAMPAIGN_LINE = re.compile(r"  \.\.\. (\d+) examples, (\d+) steps \(\d+ steps/s\)")


@pytest.mark.parametrize("quiet", [False, True])
def test_verify_reports_its_campaigns_progress_on_stderr(
    quiet: bool, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """verify's campaign phase was a minute of silence (issue 32): a line per interval on
    stderr, counting up, none with --quiet, and stdout keeps the summary alone."""
    monkeypatch.setattr(
        "statemeta.explore.cli_explore.Progress",
        lambda out, interval: Progress(out, interval=0.0),
    )
    code = main([*VERIFY, *(["--quiet"] if quiet else [])])
    captured = capsys.readouterr()
    assert code == 0, captured.out + captured.err
    counts = [
        (int(m[1]), int(m[2])) for m in map(CAMPAIGN_LINE.fullmatch, captured.err.splitlines())
        if m
    ]
    assert not any(map(CAMPAIGN_LINE.fullmatch, captured.out.splitlines()))
    if quiet:
        assert counts == []
        return
    assert len(counts) >= 3 and counts == sorted(counts)  # counting up, examples and steps
