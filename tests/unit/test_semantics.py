"""The two semantics: each switch of spec/divergences.toml shown by a short trace on which the
intended and the seed profiles differ exactly as spec/divergences.md says, and on which the
switch alone (intended otherwise) makes the whole difference."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import pytest
from meta_support import committed, faulty_factory, fill_history_pair, open_meta, task

from statemeta.codec import NO_RELATED_TASK, TableOutput, TaskId, encode_task_key
from statemeta.errors import MisuseError, SpecError, StatemetaError, UndefinedBehaviour
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.lifecycle import Outcome, TaskEvent, TaskLifecycle, TaskStatus
from statemeta.meta import StreamMeta, VirtualClock
from statemeta.semantics import Profile, Semantics, as_profile
from statemeta.store import FaultyStore, LmdbStore
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


# -- the meta's switches: each trace opens metas (check mode) on one LMDB directory ----------

Open = Callable[..., StreamMeta]
"""Opens a meta on the trace's directory (keyword arguments: open_meta's)."""


@attrs.frozen
class MetaShown:
    """A trace over metas of one directory, what it observes, and what each profile observes."""

    trace: Callable[[Open, Path], object]
    intended: object
    seed: object
    needs: frozenset[Switch] = frozenset()
    """Other switches the trace needs on to show its switch's difference (the seed's state
    it starts from)."""


T1, T2, T3 = task(1), task(2), task(3)  # keys sort 1, 2, 3 (little-endian task ids)


def error_of(call: Callable[[], object]) -> str | None:
    try:
        call()
    except StatemetaError as e:
        return type(e).__name__
    return None


def pause_twice(open_: Open, _path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    meta.handle_event(0x10, 1, E.PAUSE)  # UNINIT -> PAUSE
    meta.handle_event(0x10, 1, E.PAUSE)  # PAUSE -> PAUSE: streamTaskPause adds 1 again
    return meta.status(0x10, 1), meta.paused_count


def register_with_a_failing_commit(open_: Open, _path: Path) -> object:
    meta = open_(store_factory=faulty_factory)
    store = meta.store
    assert isinstance(store, FaultyStore)
    store.fail_next("commit")
    error = error_of(lambda: meta.register(T1, 5))
    meta.register(T2, 5)
    return error, meta.task_ids(), meta.view().map_ids == {T2.id}


def register_with_a_failing_begin(open_: Open, path: Path) -> object:
    """A planned begin fault, two registers and a close: who fails, and what is durable."""
    meta = open_(store_factory=faulty_factory)
    store = meta.store
    assert isinstance(store, FaultyStore)
    store.fail_next("begin")
    errors = (error_of(lambda: meta.register(T1, 5)), error_of(lambda: meta.register(T2, 5)))
    meta.close()
    return errors, sorted(committed(path))


def unregister_then_close(open_: Open, path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    meta.unregister(0x10, 1)
    meta.close()  # aborts the seed's uncommitted delete
    return len(committed(path))


def write_raw(path: Path, key: bytes, value: bytes) -> None:
    store = LmdbStore.open(path, durable=False)
    table = store.table("task.db", 16)
    store.begin()
    table.upsert(key, value)
    store.commit()
    store.close()


def load_past_a_corrupt_record(open_: Open, path: Path) -> object:
    meta = open_()
    for t in (T1, T2, T3):
        meta.register(t, 5)
    meta.close()
    write_raw(path, encode_task_key(0x10, 2), b"\x05\x00\x00\x00\x02")
    meta = open_()
    return error_of(meta.load_all), meta.task_ids()


def load_a_mapped_dropping_record(open_: Open, _path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    meta.start_task_timer(0x10, 1)
    meta.unregister(0x10, 1)  # DEFERRED: DROPPING while its timer runs
    meta.save_task(attrs.evolve(meta.task(0x10, 1), task_status=int(S.DROPPING)))
    meta.commit()
    report = meta.load_all()
    return report.duplicates, report.removed, len(meta.stored_tasks()), meta.task_ids()


def open_over_an_old_second_record(open_: Open, path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    meta.register(T2, 5)
    meta.close()
    old = bytearray(committed(path)[encode_task_key(0x10, 2)])
    old[4:12] = (1).to_bytes(8, "little")  # msgVer 1: incompatible
    write_raw(path, encode_task_key(0x10, 2), bytes(old))
    return error_of(open_)


def round_with_a_late_registration(open_: Open, _path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    meta.start_all()
    meta.register(T2, 5)  # mapped, not a member: the seed's count now needs 2 results
    meta.report_launch(0x10, 1, True)
    return meta.start_round().completed


def release_three_times(open_: Open, _path: Path) -> object:
    """A task with a trigger timer (whose reference keeps the seed's task alive: U2 stays out)."""
    meta = open_()
    meta.register(attrs.evolve(T1, trigger_param=100), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    errors = tuple(error_of(lambda: meta.release(handle)) for _ in range(2))
    return errors, meta.refcount(0x10, 1)


def release_the_meta_reference(open_: Open, _path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    errors = tuple(error_of(lambda: meta.release(handle)) for _ in range(2))
    return errors, meta.refcount(0x10, 1)


def release_a_freed_task(open_: Open, _path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    meta.unregister(0x10, 1)  # detached until its last release, which frees it
    return tuple(error_of(lambda: meta.release(handle)) for _ in range(2))


def open_over_a_torn_record(open_: Open, path: Path) -> object:
    meta = open_()
    meta.register(T1, 5)
    meta.register(T2, 5)
    meta.close()
    write_raw(path, encode_task_key(0x10, 2), committed(path)[encode_task_key(0x10, 2)][:12])
    try:
        open_().load_all()
    except UndefinedBehaviour as undefined:
        return str(undefined)
    except StatemetaError:
        pass  # M4's seed load aborting on the torn record: that switch's, not this one's
    return None


def unregister_a_relinked_fill_history_task(open_: Open, _path: Path) -> object:
    stream, history = fill_history_pair()
    meta = open_()
    meta.register(stream, 5)
    meta.register(history, 5)
    other = TaskId(stream.stream_id, 3)
    meta.save_task(attrs.evolve(meta.task(stream.stream_id, 1), h_task_id=other))
    meta.unregister(history.stream_id, history.task_id)
    return meta.task(stream.stream_id, 1).h_task_id == NO_RELATED_TASK


def save_an_unmapped_task(open_: Open, _path: Path) -> object:
    meta = open_()
    return error_of(lambda: meta.save_task(T1)), len(meta.stored_tasks())


def give_up_a_fill_history_launch(open_: Open, _path: Path) -> object:
    """The fill-history task is never registered: the retry gives up and clears the link."""
    stream, _history = fill_history_pair()
    clock = VirtualClock()
    meta = open_(clock=clock)
    meta.register(stream, 5)
    meta.start_all()
    meta.complete_event(stream.stream_id, stream.task_id, E.INIT)
    while clock.run_next():
        pass
    (stored,) = (t for _key, t in meta.stored_tasks())
    assert stored is not None and meta.task(stream.stream_id, 1).h_task_id == NO_RELATED_TASK
    return stored.h_task_id == NO_RELATED_TASK


def round_left_by_an_unregister(open_: Open, _path: Path) -> object:
    rounds: list[object] = []
    meta = open_(on_start_complete=rounds.append)
    meta.register(T1, 5)
    meta.register(T2, 5)
    meta.start_all()
    meta.complete_event(0x10, 1, E.INIT)  # T1 ready, T2 pending
    meta.unregister(0x10, 2)  # the seed's count (1) is the map's size now, but no result came
    open_after_unregister = meta.start_round().open
    meta.report_launch(0x10, 1, True)  # refused (T1 has its result), yet the seed counts here
    return open_after_unregister, len(rounds)


def round_that_completes_inside_start_all(open_: Open, _path: Path) -> object:
    rounds: list[Any] = []
    meta = open_(store_factory=faulty_factory, on_start_complete=rounds.append)
    store = meta.store
    assert isinstance(store, FaultyStore)
    store.fail_next("commit")
    error_of(lambda: meta.register(T2, 5))  # the seed lists T2 (M2), the reference does not
    meta.register(T1, 5)
    meta.handle_event(0x10, 1, E.STOP)  # not acquirable: start_all records it failed
    meta.start_all()
    return [r.failed for r in rounds]


def follower_after_leader(open_: Open, _path: Path) -> object:
    """A vnode's meta (UNINIT) at open, after LEADER -> FOLLOWER, and 200 ms later."""
    clock = VirtualClock()
    meta = open_(clock=clock)
    armed = [meta.view().heartbeat.armed]
    meta.update_stage_role(1, True)
    meta.update_stage_role(2, False)
    armed.append(meta.view().heartbeat.armed)
    clock.advance(200)  # the seed's tick as a follower: it ends the chain
    armed.append(meta.view().heartbeat.armed)
    return tuple(armed), meta.view().heartbeat.sent


def heartbeat_while_closing(open_: Open, _path: Path) -> object:
    """A leader with a task is notified of its close; 5 s pass, then a re-election (which
    re-arms an ended chain): is the chain armed, and how many heartbeats went out?"""
    clock = VirtualClock()
    meta = open_(clock=clock)
    meta.update_stage_role(1, True)
    meta.register(T1, 5)
    meta.notify_close()
    before = meta.view().heartbeat.sent
    armed = [meta.view().heartbeat.armed]
    clock.advance(5000)  # 25 ticks: a leader's chain sends
    meta.update_stage_role(2, True)
    armed.append(meta.view().heartbeat.armed)
    return tuple(armed), meta.view().heartbeat.sent - before


def save_a_paused_task(open_: Open, _path: Path) -> object:
    """The harness's save_task (the reference adapter, in the trace's profile) of a paused
    task: the status byte it stores."""
    meta = open_()
    profile = meta.profile
    meta.close()
    adapter = ReferenceAdapter(semantics="seed", flipped=frozenset(Switch) - profile.seed_switches)
    adapter.start(2)
    try:
        for op in (Op.of("register", task="s1"), Op.of("handle_event", task="s1", event="pause"),
                   Op.of("save_task", task="s1")):  # fmt: skip
            adapter.call(op)
        return adapter.view()["tasks"][0]["persisted_status"]
    finally:
        adapter.stop()


def scan_history_of_a_stream_task(open_: Open, _path: Path) -> object:
    """INIT_SCANHIST given to a stream task with nothing downstream: the downstream-ready step
    runs inside the call."""
    meta = open_()
    meta.register(task(1, output=TableOutput()), 5)
    meta.handle_event(0x10, 1, E.INIT_SCANHIST)
    seen = meta.view().task(T1.id)
    assert seen is not None
    return seen.status, seen.downstream_ready


META_SHOWN: dict[Switch, MetaShown] = {
    # M1: PAUSE, PAUSE: the seed counts two paused tasks for one.
    Switch.PAUSED_COUNT_DRIFTS: MetaShown(pause_twice, (S.PAUSE, 1), (S.PAUSE, 2)),
    # M2: the seed's failed register leaves its id listed (not mapped).
    Switch.REGISTER_LISTS_FIRST: MetaShown(
        register_with_a_failing_commit,
        ("StoreFault", (T2.id,), True),
        ("StoreFault", (T1.id, T2.id), True),
    ),
    # M3: the seed's unregister is not committed: close loses it, the record is back.
    Switch.REMOVAL_NOT_COMMITTED: MetaShown(unregister_then_close, 0, 1),
    # M15: the seed's begin fault fires after register's commit (T1 durable) and leaves the
    # handle stale (T2's commit fails); the reference's fires at the first write (T1 lost).
    Switch.TRANSACTION_KEPT_OPEN: MetaShown(
        register_with_a_failing_begin,
        (("StoreFault", None), [encode_task_key(T2.id.stream_id, T2.id.task_id)]),
        (("StoreFault", "StoreFault"), [encode_task_key(T1.id.stream_id, T1.id.task_id)]),
    ),
    # M4: the seed's load stops at the corrupt record (and fails); the intended one skips it.
    Switch.LOAD_ABORTS_ON_UNDECODABLE: MetaShown(
        load_past_a_corrupt_record, (None, (T1.id, T3.id)), ("DecodeError", (T1.id,))
    ),
    # M5: a mapped task's DROPPING record: a duplicate, or (seed) deleted under the live task.
    Switch.DROPPING_BEFORE_DUPLICATE: MetaShown(
        load_a_mapped_dropping_record, ((T1.id,), (), 1, (T1.id,)), ((), (T1.id,), 0, (T1.id,))
    ),
    # M6: the incompatible record is the second one: the seed opens the store.
    Switch.COMPAT_CHECKS_FIRST_RECORD: MetaShown(
        open_over_an_old_second_record, "IncompatibleVersionError", None
    ),
    # M7: a task registered during the round: the seed's count never reaches the map's size.
    Switch.ROUND_COMPLETES_BY_COUNT: MetaShown(round_with_a_late_registration, 1, 0),
    # M8: one acquire, two releases: the seed's release takes the trigger timer's reference.
    Switch.RELEASE_BELOW_ZERO: MetaShown(
        release_three_times, ((None, "ReleaseError"), 2), ((None, None), 1)
    ),
    # M9: the stream task names another fill-history task: the seed clears it anyway.
    Switch.UNREGISTER_CLEARS_ANY_LINK: MetaShown(unregister_a_relinked_fill_history_task, False,
                                                 True),
    # M10: the seed writes the record of a task it does not map.
    Switch.SAVE_TASK_UNMAPPED: MetaShown(save_an_unmapped_task, ("UnknownTaskError", 0), (None, 1)),
    # M11: the retry gives up: the seed clears the link in memory only, the store keeps it.
    Switch.LAUNCH_GIVE_UP_NOT_SAVED: MetaShown(give_up_a_fill_history_launch, True, False),
    # M14: the seed completes INIT (a stream task's), refused: INIT_SCANHIST stays in progress.
    Switch.READY_STEP_BY_KIND: MetaShown(
        scan_history_of_a_stream_task, (S.SCAN_HISTORY, True), (S.UNINIT, False)
    ),
    # M13: the seed's record keeps the status byte it was made with (READY), not PAUSE.
    Switch.SAVE_TASK_KEEPS_RECORD: MetaShown(save_a_paused_task, "pause", "ready"),
    # M12: the seed arms a vnode's chain at open and a follower's stays armed until its tick.
    Switch.HEARTBEAT_ENDS_AT_TICK: MetaShown(
        follower_after_leader, ((False, False, False), 0), ((True, True, False), 0)
    ),
    # M16: the seed's chain goes on after notify_close, and sends; the reference's ends there.
    Switch.HEARTBEAT_AFTER_NOTIFY_CLOSE: MetaShown(
        heartbeat_while_closing, ((False, True), 0), ((True, True), 1)
    ),
    # U1: T2's record torn after 12 bytes: the seed's open reads it past its end.
    Switch.LENGTH_HEADER_TRUSTED: MetaShown(
        open_over_a_torn_record, None,
        "undefined behaviour: heap over-read of the record of task 0x10-0x2 at open",
    ),
    # U2: the second release frees the task the meta maps (with M8: no ReleaseError first).
    Switch.RELEASE_FREES_MAPPED: MetaShown(
        release_the_meta_reference, ((None, "ReleaseError"), 1),
        ((None, "UndefinedBehaviour"), 1), needs=frozenset({Switch.RELEASE_BELOW_ZERO}),
    ),
    # U3: the first release frees the unregistered task, the second writes freed memory.
    Switch.RELEASE_OF_FREED: MetaShown(
        release_a_freed_task, (None, "ReleaseError"), (None, "UndefinedBehaviour"),
        needs=frozenset({Switch.RELEASE_BELOW_ZERO}),
    ),
}


# More traces of a switch, each with its reason: the generic test runs them as META_SHOWN's.
META_MORE: tuple[tuple[Switch, MetaShown], ...] = (
    # M7: the seed compares its count of results with the map's size in AddTaskLaunchResult,
    # as each result is recorded, and nowhere else: an unregister that makes the two equal
    # completes nothing until a result comes.
    (Switch.ROUND_COMPLETES_BY_COUNT,
     MetaShown(round_left_by_an_unregister, (False, 1), (True, 1))),
    # M7: T2's failure (1 result, 1 task mapped) completes the seed's round before T1 is
    # started; T1's failure comes after it and is not recorded.
    (Switch.ROUND_COMPLETES_BY_COUNT,
     MetaShown(round_that_completes_inside_start_all, [(T1.id,)], [(T2.id,)],
               needs=frozenset({Switch.REGISTER_LISTS_FIRST}))),
)


def run_meta(shown: MetaShown, semantics: Semantics | str | Profile, path: Path) -> object:
    """The trace in a fresh directory; every meta it opens runs in check mode and is closed."""
    path.mkdir()
    opened: list[StreamMeta] = []

    def open_(**options: Any) -> StreamMeta:
        opened.append(open_meta(path, semantics=semantics, **options))
        return opened[-1]

    try:
        return shown.trace(open_, path)
    finally:
        for meta in opened:
            if not meta.closed:
                meta.close()


def test_every_switch_is_shown() -> None:
    assert set(SHOWN) | set(META_SHOWN) == set(Switch)
    assert not set(SHOWN) & set(META_SHOWN)
    assert {DIVERGENCES.row(s).scope for s in META_SHOWN} == {"meta"}


@pytest.mark.parametrize("switch", list(SHOWN), ids=lambda s: s.value)
def test_the_profiles_differ_as_the_page_says(switch: Switch) -> None:
    shown = SHOWN[switch]
    assert shown.intended != shown.seed
    assert run(shown, Semantics.INTENDED) == shown.intended
    assert run(shown, "seed") == shown.seed
    assert run(shown, Profile.only(switch)) == shown.seed  # the switch alone makes it
    assert run(shown, Profile(frozenset(Switch) - {switch})) == shown.intended


META_ROWS = (*META_SHOWN.items(), *META_MORE)


@pytest.mark.parametrize(
    ("switch", "shown"),
    META_ROWS,
    ids=[f"{switch.value}-{shown.trace.__name__}" for switch, shown in META_ROWS],
)
def test_the_meta_profiles_differ_as_the_page_says(
    switch: Switch, shown: MetaShown, tmp_path: Path
) -> None:
    assert shown.intended != shown.seed
    assert run_meta(shown, Semantics.INTENDED, tmp_path / "intended") == shown.intended
    assert run_meta(shown, "seed", tmp_path / "seed") == shown.seed
    only = Profile.only(switch, *shown.needs)
    assert run_meta(shown, only, tmp_path / "only") == shown.seed  # the switch alone makes it
    others = run_meta(shown, Profile(frozenset(Switch) - {switch}), tmp_path / "others")
    if shown.needs:  # they stay on, and show their own difference: the switch's is gone
        assert others != shown.seed
    else:
        assert others == shown.intended


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
    """Each row's id and title head a row of the page's tables, which names its switch (or says
    that it stays outside the model); meta rows are lines of the meta section (below)."""
    for row in DIVERGENCES.rows:
        if row.scope == "meta":
            continue
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


META_SECTION = PAGE.split("## The meta (streamMeta.c)", 1)[1]


def test_every_meta_row_of_the_table_is_on_the_page() -> None:
    """Each meta row heads a line of the meta section naming its switch."""
    for row in DIVERGENCES.rows:
        if row.scope != "meta":
            continue
        assert row.switch is not None
        line = f"- **{row.id} {row.title}:** switch `{row.switch.value}`"
        assert line in META_SECTION, f"{row.id} {row.title!r}: no line {line!r} in the page"


def test_every_meta_switch_of_the_page_is_in_the_table() -> None:
    found = re.findall(r"^- \*\*([MU]\d+) (.+?):\*\* switch `(\w+)`", META_SECTION, re.MULTILINE)
    rows = [r for r in DIVERGENCES.rows if r.scope == "meta"]
    assert found == [(r.id, r.title, r.switch.value if r.switch else None) for r in rows]


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


def test_the_seed_start_all_over_no_tasks_opens_no_round(tmp_path: Path) -> None:
    rounds: dict[str, list[object]] = {}
    for name in ("intended", "seed"):
        calls = rounds.setdefault(name, [])
        meta = open_meta(tmp_path / name, semantics=name, on_start_complete=calls.append)
        assert meta.start_all() == ()
        assert meta.start_round().completed == len(calls)
        meta.close()
    assert (len(rounds["intended"]), len(rounds["seed"])) == (1, 0)


def test_check_mode_skips_the_state_invariants_a_meta_switch_breaks(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The seed's drifted paused count passes check mode (it is the seed's finding); the
    lifecycle switches alone break no invariant of the meta: the whole catalogue runs."""
    import statemeta.meta.stream_meta as edge

    checked: list[str] = []
    whole = edge.check_invariants
    monkeypatch.setattr(edge, "check_invariants", lambda m: (checked.append("all"), whole(m)))
    seed = open_meta(tmp_path / "seed", semantics="seed")
    seed.register(T1, 5)
    seed.handle_event(0x10, 1, E.PAUSE)
    seed.handle_event(0x10, 1, E.PAUSE)
    assert seed.paused_count == 2 and checked == []
    seed.close()
    lifecycle_only = Profile(frozenset(s for s in Switch if s not in META_SHOWN))
    meta = open_meta(tmp_path / "lifecycle", semantics=lifecycle_only)
    meta.register(T1, 5)
    assert checked == ["all"]
    meta.close()
