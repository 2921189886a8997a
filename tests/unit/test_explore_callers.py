"""The explorer under ``--callers vnode``: every call it runs keeps every rule of the vnode's
call discipline (statemeta.harness.callers), and with one rule dropped from what it consults
it runs calls that break that rule (so the first test can fail)."""

from __future__ import annotations

import json
from pathlib import Path

import attrs
import pytest

from statemeta.cli import main
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import explore
from statemeta.harness import callers as callers_module
from statemeta.harness.callers import CALLER_RULES, Callers, caller_broken
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter

ONE_TASK = Bounds(stream_tasks=1, fill_history=False, role_changes=0, start_rounds=0,
                  reopens=0, faults=0, clock_advances=0, max_depth=4)
SMALL = Bounds(stream_tasks=1, fill_history=True, role_changes=1, start_rounds=1, reopens=1,
               faults=1, clock_advances=1, max_depth=4)
_BOUNDS = {
    # a handle is held on a task in STOP or DROPPING only after an unregister an active timer
    # defers (STOP, stop_all and notify_close wait for the release): register, start_task_timer,
    # acquire, unregister, then the event, five calls
    "acquired-not-stopping": attrs.evolve(ONE_TASK, max_depth=5),
    "start-one-stream-task": attrs.evolve(ONE_TASK, stream_tasks=0, fill_history=True,
                                          max_depth=2),
    "stage-forward": attrs.evolve(ONE_TASK, role_changes=2, max_depth=2),
}
"""Where each rule can be broken within few states (the others: ONE_TASK)."""


def _recording(
    monkeypatch: pytest.MonkeyPatch, callers: Callers = Callers.VNODE
) -> list[str]:
    """Every rule broken by a call a reference with ``callers`` is given, from now on."""
    broken: list[str] = []
    original = ReferenceAdapter.call

    def call(self: ReferenceAdapter, op: Op) -> object:
        if self.callers is callers and self.level > 1:
            why = caller_broken(self, op, CALLER_RULES)
            if why is not None:
                broken.append(why)
        return original(self, op)

    monkeypatch.setattr(ReferenceAdapter, "call", call)
    return broken


@pytest.mark.parametrize("semantics", ["intended", "seed"])
def test_every_call_the_explorer_runs_keeps_every_rule(
    semantics: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    broken = _recording(monkeypatch)
    vnode = explore(SMALL, semantics=semantics, callers="vnode", all_violations=True)
    assert vnode.complete and vnode.callers is Callers.VNODE
    assert broken == []
    monkeypatch.undo()
    direct_broken = _recording(monkeypatch, Callers.DIRECT)
    direct = explore(SMALL, semantics=semantics, all_violations=True)
    assert direct_broken, "the direct search makes calls the vnode does not"
    assert vnode.stats.states < direct.stats.states


@pytest.mark.parametrize("dropped", [rule.id for rule in CALLER_RULES])
def test_a_rule_the_explorer_forgets_is_broken(
    dropped: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    governing = {name: tuple(r for r in rules if r.id != dropped)
                 for name, rules in callers_module._GOVERNING.items()}
    monkeypatch.setattr(callers_module, "_GOVERNING", governing)
    broken = _recording(monkeypatch)
    explore(_BOUNDS.get(dropped, ONE_TASK), semantics="seed", callers="vnode",
            all_violations=True)
    assert broken and {why.split(":")[0] for why in broken} == {dropped}


def test_the_command_takes_callers_and_reports_them(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bounds = ["--stream-tasks", "1", "--no-fill-history", "--role-changes", "0",
              "--start-rounds", "0", "--reopens", "0", "--faults", "0", "--clock-advances", "0",
              "--max-depth", "2", "--quiet", "--json", "--trace", str(tmp_path / "t.json")]
    states = {}
    for callers in ("direct", "vnode"):
        assert main(["explore", *bounds, "--callers", callers]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["callers"] == callers
        states[callers] = doc["states"]
    assert states["vnode"] < states["direct"]  # register; pause: no acquire before it


@pytest.mark.parametrize("argv", [
    ["explore", "--callers", "bogus"],
    ["check", "--sut", "true", "--concurrent", "2", "--callers", "vnode"],
])
def test_bad_callers_are_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    try:
        code: object = main(argv)
    except SystemExit as refused:  # argparse's refusal
        code = refused.code
    assert code == 2 and "--callers" in capsys.readouterr().err
