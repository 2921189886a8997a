"""Progress with an estimate of time left (statemeta.harness.meter): ``check --concurrent``."""

from __future__ import annotations

import functools
import io
import re
import sys

import pytest

from statemeta.cli import main
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
