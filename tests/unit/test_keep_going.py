"""statemeta check --keep-going: the catalogue of every distinct divergence.

The must-show: the seed served at level 1, checked against the intended semantics, maps every
lifecycle divergence of spec/divergences.md that level 1 can show, each place once, each with a
trace that replays. Which divergence an entry shows is not read off a run: its trace is replayed
against implementations that take the seed's side of one switch only (``OneSwitch``), and the
expected switches are the table's modelled lifecycle rows.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import re
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from statemeta.cli import main
from statemeta.harness.catalogue import NO_MASKS, Mask, numbered_path
from statemeta.harness.check import KeepGoing, check_settings, run_check, unchecked_reference
from statemeta.harness.differences import differences
from statemeta.harness.machine import Divergence, compare_step
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.trace import read_trace, replay
from statemeta.lifecycle import TaskLifecycle
from statemeta.semantics import Profile, Semantics, Switch
from statemeta.tables import DIVERGENCES

SERVE = f"{sys.executable} -m statemeta.serve"
SEED_SERVED = f"{SERVE} --semantics seed"
RUN = ["--level", "1", "--examples", "100", "--steps", "50", "--seed", "0"]

LIFECYCLE_ROWS = [row for row in DIVERGENCES.rows if row.scope == "lifecycle"]
SHOWABLE = {row.switch for row in LIFECYCLE_ROWS if row.switch is not None}
"""Level 1 is one lifecycle per pool slot, its whole state in the view (status, saved,
active, waiting, prev): every modelled lifecycle row changes what it shows."""
NOT_SHOWABLE = {row.id: row.why for row in LIFECYCLE_ROWS if row.switch is None}
"""Rows outside the model (L5 blocking, L7 threads): neither semantics has them, so no run
can show them; the table says why."""


class OneSwitch(ReferenceAdapter):
    """The reference at level 1 taking the seed's side of ``switch`` alone, declaring what
    ``observe`` and ``outcomes`` say (as ``serve --observe`` does; default: everything)."""

    def __init__(
        self, switch: Switch, observe: list[str] | None = None, outcomes: str = "full"
    ) -> None:
        super().__init__(check_invariants=False, observe=observe, outcomes=outcomes)
        self.profile = Profile.only(switch)

    def start(self, level: int) -> None:
        assert level == 1
        super().start(level)
        self._lifecycles = {
            name: TaskLifecycle(semantics=self.profile) for name in self._lifecycles
        }


def _cli(*args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(args))
    return code, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[int, dict[str, Any], Path]:
    out = tmp_path_factory.mktemp("seed") / "t.json"
    code, stdout, _ = _cli(
        "check", "--keep-going", "--semantics", "intended", "--sut", SEED_SERVED, *RUN,
        "--trace-out", str(out), "--json",
    )
    return code, json.loads(stdout), out


def _place(entry: dict[str, Any]) -> Mask:
    return Mask(entry["op"], entry["at"])


def _shown_by(entry: dict[str, Any]) -> set[Switch]:
    """The switches whose seed side alone makes the entry's trace fail at the entry's place."""
    trace = read_trace(Path(entry["trace"]))
    found = set()
    for switch in SHOWABLE:
        again = replay(trace.ops, level=1, sut=OneSwitch(switch), sut_command="one switch",
                       reference=unchecked_reference(Semantics.INTENDED), masks=trace.masks)
        if again is not None and again.mask == _place(entry):
            found.add(switch)
    return found


def _first_place(switch: Switch, trace_out: Path) -> Mask:
    """Where the seed side of ``switch`` alone first shows (a keep-going run stopped at one)."""
    report = run_check(
        OneSwitch(switch), level=1, hypothesis_settings=check_settings(100, 50),
        sut_label="one switch", seed_value=0, keep_going=KeepGoing(trace_out, 1),
    )
    assert report.catalogue is not None and len(report.catalogue.entries) == 1, switch
    return report.catalogue.entries[0].mask


def test_the_catalogue_shows_each_lifecycle_divergence_level_1_can_show(
    seed_run: tuple[int, dict[str, Any], Path], tmp_path: Path
) -> None:
    code, document, _ = seed_run
    catalogue = document["catalogue"]
    assert code == 1 and document["conformant"] is False
    places = [_place(e) for e in catalogue]
    assert len(set(places)) == len(places)  # each place once
    shown = {_place(e): _shown_by(e) for e in catalogue}
    assert all(shown.values()), shown  # nothing but the table's divergences
    for switch in SHOWABLE:
        # shown by an entry of its own, or at a place another divergence shows first (L2's
        # second saved status shows in `saved` at the handle that saves it, as L1's does)
        if not any(switch in switches for switches in shown.values()):
            assert _first_place(switch, tmp_path / f"{switch.value}.json") in shown, switch
    assert set(NOT_SHOWABLE) == {"L5", "L7"} and all(NOT_SHOWABLE.values())


def test_every_entry_names_the_switches_that_explain_it(
    seed_run: tuple[int, dict[str, Any], Path],
) -> None:
    """The seed served, checked as intended: each entry is explained by switches of the
    table's lifecycle rows (level 1 runs no meta), and flipping them makes its trace pass."""
    _, document, _ = seed_run
    lifecycle = {switch.value for switch in SHOWABLE}
    for entry in document["catalogue"]:
        assert entry["explained_by"] and set(entry["explained_by"]) <= lifecycle, entry
        trace = read_trace(Path(entry["trace"]))
        flipped = frozenset(Switch(name) for name in entry["explained_by"])
        reference = functools.partial(ReferenceAdapter, check_invariants=False,
                                      semantics=Semantics.INTENDED, flipped=flipped)
        seed = ReferenceAdapter(semantics=Semantics.SEED, check_invariants=False)
        assert replay(trace.ops, level=1, sut=seed, sut_command="seed", masks=trace.masks,
                      reference=reference) is None


def test_a_bug_no_switch_explains_is_unexplained(tmp_path: Path) -> None:
    """A broken variant whose bug is no divergence of the table (acquire hands out DROPPING
    tasks): its entries are explained by no switch, listed so in the text."""
    report = run_check(
        ReferenceAdapter("acquire_dropping", check_invariants=False), level=2,
        hypothesis_settings=check_settings(60, 30), sut_label="acquire_dropping",
        seed_value=0, keep_going=KeepGoing(tmp_path / "t.json"),
    )  # fmt: skip
    assert report.catalogue is not None and report.catalogue.entries
    assert all(entry.explained_by == () for entry in report.catalogue.entries)
    numbers = ", ".join(str(n) for n in range(1, len(report.catalogue.entries) + 1))
    assert report.catalogue.lines()[-2:] == ["by switch:", f"  unexplained: {numbers}"]


def test_each_trace_replays_at_its_place(seed_run: tuple[int, dict[str, Any], Path]) -> None:
    _, document, out = seed_run
    paths = [Path(e["trace"]) for e in document["catalogue"]]
    assert paths == [numbered_path(out, n) for n in range(1, len(paths) + 1)]
    assert not out.exists()  # the stopping run's name is not used
    for entry in document["catalogue"]:
        trace = read_trace(Path(entry["trace"]))
        assert trace.mask == _place(entry) and len(trace.steps) == entry["steps"]
        code, stdout, _ = _cli("replay", entry["trace"], "--sut", trace.sut)
        assert code == 1, stdout
        assert f"still fails at {entry['op']} {entry['at']}: " in stdout
        # the first divergence of its example: nothing differed before its last step but what
        # the start masks hide (what follows a masked divergence is its consequence, not listed)
        starts = frozenset(m for m in trace.masks if m.op == "start")
        seed = ReferenceAdapter(semantics=Semantics.SEED, check_invariants=False)
        assert not trace.steps or replay(
            trace.ops[:-1], level=1, sut=seed, sut_command="seed", masks=starts,
            reference=unchecked_reference(Semantics.INTENDED),
        ) is None
        if trace.failure.kind == "view" and trace.steps:  # made by its step, not left before
            before = _views_after(trace.ops[:-1])
            left = differences(*before, "view")
            assert not any(trace.failure.detail.endswith(f": {d}") for d in left)


def _views_after(ops: tuple[Op, ...]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Both sides' views after ``ops`` at level 1: the intended reference, the seed."""
    views = {}
    for semantics in Semantics:
        side = ReferenceAdapter(semantics=semantics, check_invariants=False)
        side.start(1)
        for op in ops:
            side.call(op)
        views[semantics] = side.view()
    return views[Semantics.INTENDED], views[Semantics.SEED]


def test_the_text_catalogue_is_the_json_one(
    seed_run: tuple[int, dict[str, Any], Path], tmp_path: Path
) -> None:
    _, document, _ = seed_run
    code, stdout, _ = _cli(
        "check", "--keep-going", "--semantics", "intended", "--sut", SEED_SERVED, *RUN,
        "--trace-out", str(tmp_path / "t.json"),
    )
    assert code == 1
    listed = re.findall(r"^  \d+\. (\S+) (\S+): reference", stdout, re.MULTILINE)
    assert listed == [(e["op"], e["at"]) for e in document["catalogue"]]
    assert f"catalogue: {len(listed)} distinct divergence(s)" in stdout
    explained = re.findall(r"steps\); explained by: (.*)$", stdout, re.MULTILINE)
    assert explained == [", ".join(e["explained_by"]) for e in document["catalogue"]]
    groups = stdout[stdout.index("by switch:") :].splitlines()[1:]
    numbers = [g.split(": ")[1] for g in groups if g.startswith("  ")]
    grouped = sorted(int(n) for listed_here in numbers for n in listed_here.split(", "))
    assert grouped == list(range(1, len(listed) + 1))
    assert "NOT conformant" in stdout


def test_max_divergences_1_stops_after_the_first(
    seed_run: tuple[int, dict[str, Any], Path], tmp_path: Path
) -> None:
    _, document, _ = seed_run
    code, stdout, _ = _cli(
        "check", "--max-divergences", "1", "--semantics", "intended", "--sut", SEED_SERVED,
        *RUN, "--trace-out", str(tmp_path / "t.json"), "--json",
    )
    (entry,) = json.loads(stdout)["catalogue"]
    assert code == 1 and _place(entry) == _place(document["catalogue"][0])


@pytest.mark.parametrize("as_json", [False, True])
def test_a_conformant_implementation_has_an_empty_catalogue(tmp_path: Path, as_json: bool) -> None:
    code, stdout, _ = _cli(
        "check", "--keep-going", "--sut", SERVE, "--level", "1", "--examples", "30",
        "--seed", "0", "--trace-out", str(tmp_path / "t.json"), *(["--json"] if as_json else []),
    )
    assert code == 0, stdout
    if as_json:
        document = json.loads(stdout)
        assert document["catalogue"] == [] and document["conformant"] is True
    else:
        assert "catalogue: no divergence" in stdout and "conformant: " in stdout
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5"])
def test_a_bad_max_divergences_is_refused_in_one_line(value: str) -> None:
    with pytest.raises(SystemExit) as stopped, contextlib.redirect_stderr(io.StringIO()) as err:
        main(["check", "--sut", SERVE, "--max-divergences", value])
    assert stopped.value.code == 2
    line = err.getvalue()
    assert line.count("\n") == 1 and "argument --max-divergences" in line


# -- masks, one step at a time -------------------------------------------------------------------

OP = Op.of("handle", task="s1", event="pause")
VIEW = {"level": 1, "tasks": [{"slot": "s1", "status": "pause"}, {"slot": "s2", "status": "ready"}]}
OTHER = {"level": 1, "tasks": [{"slot": "s1", "status": "pause"}, {"slot": "s2", "status": "halt"}]}


def test_a_mask_hides_its_place_for_its_operation_only() -> None:
    ok, rejected = {"ok": "applied"}, {"ok": "rejected"}
    with pytest.raises(Divergence) as found:
        compare_step(OP, ok, rejected, VIEW, VIEW)
    assert found.value.at == "result" and (found.value.reference, found.value.sut) == (ok, rejected)
    assert compare_step(OP, ok, rejected, VIEW, VIEW, masks=frozenset({Mask("handle", "result")}))
    with pytest.raises(Divergence):
        compare_step(OP, ok, rejected, VIEW, VIEW, masks=frozenset({Mask("complete", "result")}))
    with pytest.raises(Divergence) as found:
        compare_step(OP, ok, ok, VIEW, OTHER)
    assert found.value.at == "view.tasks.status"  # every task's status: one place
    assert (found.value.reference, found.value.sut) == ("ready", "halt")
    status = frozenset({Mask("handle", found.value.at)})
    assert compare_step(OP, ok, ok, VIEW, OTHER, masks=status)  # True: a mask hid something
    assert not compare_step(OP, ok, ok, VIEW, VIEW, masks=status)


def test_a_difference_an_earlier_step_left_is_not_this_steps() -> None:
    ok = {"ok": "applied"}
    masks = frozenset({Mask("start", "view.tasks.status")})
    assert not compare_step(OP, ok, ok, VIEW, OTHER, masks=masks, before=(VIEW, OTHER))
    changed = {"level": 1, "tasks": [OTHER["tasks"][0], {"slot": "s2", "status": "stop"}]}
    with pytest.raises(Divergence):
        compare_step(OP, ok, ok, VIEW, changed, masks=masks, before=(VIEW, OTHER))
    with pytest.raises(Divergence):  # without masks a run stops at the first difference
        compare_step(OP, ok, ok, VIEW, OTHER, masks=NO_MASKS, before=(VIEW, OTHER))


def test_a_masked_invariant_is_not_counted_as_the_references_own() -> None:
    reference = ReferenceAdapter(check_invariants=False)
    reference.start(2)
    register = Op.of("register", task="s1")
    result = reference.call(register)
    view = reference.view()
    drifted = {**view, "paused_count": 1}  # breaks paused-count; the reference's view does not
    with pytest.raises(Divergence) as found:
        compare_step(register, result, result, view, drifted)
    assert found.value.at == "invariant:paused-count"
    masks = frozenset({Mask("register", found.value.at), Mask("register", "view.paused_count")})
    own: Counter[str] = Counter()
    assert compare_step(register, result, result, view, drifted, own, masks=masks)
    assert not own


def test_check_json_without_keep_going_has_the_verdict_and_no_catalogue(tmp_path: Path) -> None:
    out = tmp_path / "t.json"
    few = ["--level", "1", "--examples", "10", "--seed", "0", "--trace-out", str(out), "--json"]
    code, stdout, _ = _cli("check", "--sut", SERVE, *few)
    document = json.loads(stdout)  # stdout is the document alone
    assert code == 0 and document["conformant"] is True and document["trace"] is None
    assert "catalogue" not in document and not out.exists()
    code, stdout, _ = _cli("check", "--sut", SEED_SERVED, *few)
    document = json.loads(stdout)
    assert code == 1 and document["conformant"] is False
    assert document["trace"] == str(out)
    assert read_trace(out).failure.detail == document["failure"]["detail"]
