"""Shared inputs of the report tests: a failing check's --json, a passing explore's --json
(tiny bounds) and a failing concurrent history (a shipped trace)."""

from __future__ import annotations

import contextlib
import io
import shlex
import sys
from pathlib import Path

from statemeta.cli import main

TRACES = Path(__file__).resolve().parent / "traces"
CONCURRENT_TRACE = TRACES / "concurrent-acquire.json"
"""A history of the acquire_status_unlocked locking variant: not linearizable."""

BROKEN_VARIANT = "paused_count_self_pause"
SERVE = f"{shlex.quote(sys.executable)} -m statemeta.serve"
TINY_BOUNDS = ["--stream-tasks", "1", "--no-fill-history", "--role-changes", "1",
               "--start-rounds", "0", "--max-depth", "3"]


def _json_of(argv: list[str], out: Path) -> Path:
    """Runs ``statemeta ARGV --json``, its stdout (the document) into ``out``."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.redirect_stderr(io.StringIO()):
        main([*argv, "--json"])
    out.write_text(printed.getvalue(), encoding="utf-8")
    return out


def failing_check(directory: Path) -> Path:
    """A check of a shipped broken variant (found by the directed phase on any seed)."""
    return _json_of(["check", "--sut", f"{SERVE} --variant {BROKEN_VARIANT}", "--seed", "1",
                     "--examples", "2", "--trace-out", str(directory / "check-trace.json")],
                    directory / "check.json")


def passing_explore(directory: Path) -> Path:
    return _json_of(["explore", *TINY_BOUNDS], directory / "explore.json")
