"""The two semantics: each switch of spec/divergences.toml shown by a short trace on which the
intended and the seed profiles differ exactly as spec/divergences.md says, and on which the
switch alone (intended otherwise) makes the whole difference."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import attrs
import pytest

from statemeta.errors import MisuseError, SpecError
from statemeta.lifecycle import Outcome, TaskEvent, TaskLifecycle, TaskStatus
from statemeta.semantics import Profile, Semantics, as_profile
from statemeta.tables import DIVERGENCES, Switch, load_divergences, read_spec, spec_dir

S, E = TaskStatus, TaskEvent
Step = Callable[[TaskLifecycle], object]


def event(e: TaskEvent) -> Step:
    return lambda lc: lc.handle(e)


def complete(e: TaskEvent) -> Step:
    return lambda lc: lc.complete(e)


def resume(lc: TaskLifecycle) -> object:
    return lc.resume()


def reset(lc: TaskLifecycle) -> object:
    lc.reset()
    return None


READY_STEPS: tuple[Step, ...] = (event(E.INIT), complete(E.INIT))
CK_STEPS: tuple[Step, ...] = (*READY_STEPS, event(E.GEN_CHECKPOINT))


@attrs.frozen
class Shown:
    """A trace, what it observes at its end, and what each profile observes there."""

    steps: tuple[Step, ...]
    observe: Callable[[TaskLifecycle], object]
    intended: object
    seed: object


def status_and_saved(lc: TaskLifecycle) -> object:
    return lc.status, lc.saved


def waiting(lc: TaskLifecycle) -> object:
    return lc.status, lc.waiting


def prev(lc: TaskLifecycle) -> object:
    return lc.prev_status, lc.prev_event


SHOWN: dict[Switch, Shown] = {
    # L1: READY -pause-> PAUSE -pause-> PAUSE, resume: the seed stays paused.
    Switch.REPEAT_OVERWRITES_SAVED: Shown(
        (*READY_STEPS, event(E.PAUSE), event(E.PAUSE), resume),
        lambda lc: lc.status,
        intended=S.READY,
        seed=S.PAUSE,
    ),
    # L2: READY -pause-> PAUSE -halt-> HALT, resume -> PAUSE, resume: READY is lost in the seed.
    Switch.RESUME_SWAPS_PREV: Shown(
        (*READY_STEPS, event(E.PAUSE), event(E.HALT), resume, resume),
        status_and_saved,
        intended=(S.READY, ()),
        seed=(S.HALT, (S.PAUSE,)),
    ),
    # L3: HALT and PAUSE queued in CK, CHECKPOINT_DONE: the seed fires HALT and drops PAUSE,
    # so HALT is still queued, and fires a second time after a resume.
    Switch.WAITING_POPS_LAST: Shown(
        (*CK_STEPS, event(E.HALT), event(E.PAUSE), event(E.CHECKPOINT_DONE)),
        waiting,
        intended=(S.HALT, ((S.READY, E.PAUSE),)),
        seed=(S.HALT, ((S.READY, E.HALT),)),
    ),
    # L4: PAUSE queued in CK, then STOP: the seed keeps the rejected event in the queue.
    Switch.WAITING_KEPT_ON_STOP: Shown(
        (*CK_STEPS, event(E.PAUSE), event(E.STOP)),
        waiting,
        intended=(S.STOP, ()),
        seed=(S.STOP, ((S.READY, E.PAUSE),)),
    ),
    # L6: READY -pause-> PAUSE, reset: the seed's prev still tells of the pause.
    Switch.RESET_KEEPS_PREV: Shown(
        (*READY_STEPS, event(E.PAUSE), reset),
        prev,
        intended=(S.PAUSE, None),
        seed=(S.READY, E.PAUSE),
    ),
    # L8: a new lifecycle's prev.
    Switch.PREV_STARTS_READY: Shown((), prev, intended=(None, None), seed=(S.READY, None)),
}


def run(shown: Shown, semantics: Semantics | str | Profile) -> object:
    lc = TaskLifecycle(semantics=semantics)
    for step in shown.steps:
        step(lc)
    return shown.observe(lc)


def test_every_switch_is_shown() -> None:
    assert set(SHOWN) == set(Switch)


@pytest.mark.parametrize("switch", list(Switch), ids=lambda s: s.value)
def test_the_profiles_differ_as_the_page_says(switch: Switch) -> None:
    shown = SHOWN[switch]
    assert shown.intended != shown.seed
    assert run(shown, Semantics.INTENDED) == shown.intended
    assert run(shown, "seed") == shown.seed
    assert run(shown, Profile.only(switch)) == shown.seed  # the switch alone makes it
    assert run(shown, Profile(frozenset(Switch) - {switch})) == shown.intended


def test_the_seed_fires_a_stale_waiting_event_twice() -> None:
    lc = TaskLifecycle(semantics="seed")
    for step in (*CK_STEPS, event(E.HALT), event(E.PAUSE), event(E.CHECKPOINT_DONE)):
        step(lc)
    assert lc.resume() is Outcome.APPLIED  # back to READY, where the stale HALT fires again
    assert (lc.status, lc.prev_status, lc.prev_event, lc.waiting) == (S.HALT, S.READY, E.HALT, ())


def test_semantics_by_name() -> None:
    assert Semantics.of("seed") is Semantics.SEED
    assert Semantics.of(Semantics.INTENDED) is Semantics.INTENDED
    assert as_profile("intended") == Semantics.INTENDED.profile
    assert Semantics.SEED.profile.semantics is Semantics.SEED
    assert Profile.only(Switch.RESUME_SWAPS_PREV).semantics is None
    assert TaskLifecycle().profile == Semantics.INTENDED.profile
    with pytest.raises(MisuseError, match="no semantics 'tdengine'; semantics are"):
        TaskLifecycle(semantics="tdengine")


# -- the table and the page ----------------------------------------------------------------

PAGE = (Path(__file__).resolve().parents[2] / "spec" / "divergences.md").read_text("utf-8")


def test_every_row_of_the_table_is_on_the_page() -> None:
    """Each row's id and title head a row of the page, which names its switch (or says that it
    stays outside the model)."""
    for row in DIVERGENCES.rows:
        line = next(
            (x for x in PAGE.splitlines() if x.startswith(f"| {row.id} {row.title} |")), None
        )
        assert line is not None, f"{row.id} {row.title!r} has no row in spec/divergences.md"
        if row.switch is None:
            assert "not modelled" in line
        else:
            assert f"`{row.switch.value}`" in line


def test_every_lifecycle_row_of_the_page_is_in_the_table() -> None:
    section = PAGE.split("## Task lifecycle", 1)[1].split("\n## ", 1)[0]
    ids = re.findall(r"^\| (L\d+) ", section, flags=re.MULTILINE)
    assert ids == [r.id for r in DIVERGENCES.rows if r.scope == "lifecycle"]


def test_the_table_is_checked() -> None:
    doc = read_spec(spec_dir() / "divergences.toml")
    rows = doc["divergence"]
    with pytest.raises(SpecError, match="no row for switch"):
        load_divergences({"divergence": [r for r in rows if r.get("id") != "L3"]})
    with pytest.raises(SpecError, match="unknown switch 'nope'"):
        load_divergences({"divergence": [*rows, {"id": "X", "title": "x", "scope": "meta",
                                                 "switch": "nope"}]})
    with pytest.raises(SpecError, match="names no switch"):
        load_divergences({"divergence": [*rows, {"id": "X", "title": "x", "scope": "meta",
                                                 "modelled": False, "why": "w",
                                                 "switch": "reset_keeps_prev"}]})
    with pytest.raises(SpecError, match="duplicate id 'L1'"):
        load_divergences({"divergence": [*rows, rows[0]]})
