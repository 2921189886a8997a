from __future__ import annotations

from pathlib import Path

from meta_support import fill_history_pair, open_meta, task

from statemeta.lifecycle import Outcome, TaskEvent, TaskStatus
from statemeta.meta import StartRoundResult, StartStep


def collecting_meta(tmp_path: Path) -> tuple[list[StartRoundResult], object]:
    results: list[StartRoundResult] = []
    return results, open_meta(tmp_path, on_start_complete=results.append)


def test_round_over_zero_tasks_completes_at_once(tmp_path: Path) -> None:
    results: list[StartRoundResult] = []
    meta = open_meta(tmp_path, on_start_complete=results.append)
    assert meta.start_all() == ()
    assert len(results) == 1
    assert results[0].members == ()
    assert meta.start_round().completed == 1


def test_round_with_failures_duplicates_and_unknown_ids(tmp_path: Path) -> None:
    results: list[StartRoundResult] = []
    meta = open_meta(tmp_path, on_start_complete=results.append)
    for i in (1, 2, 3):
        meta.register(task(i), 5)
    meta.handle_event(0x10, 3, TaskEvent.STOP)  # cannot be acquired: fails at once
    steps = dict(meta.start_all())
    assert steps == {
        task(1).id: StartStep.STARTED,
        task(2).id: StartStep.STARTED,
        task(3).id: StartStep.FAILED,
    }
    assert meta.report_launch(0x10, 99, True) is False  # unknown: ignored
    assert meta.complete_event(0x10, 1, TaskEvent.INIT) is Outcome.APPLIED  # records ready
    assert meta.start_round().ready == (task(1).id,)
    assert meta.report_launch(0x10, 1, False) is False  # the first result is kept
    assert results == []
    assert meta.report_launch(0x10, 2, False) is True
    (result,) = results
    assert result.ready == (task(1).id,)
    assert result.failed == (task(2).id, task(3).id)
    assert meta.start_round().open is False
    assert meta.report_launch(0x10, 2, True) is False  # no round open
    assert len(results) == 1


def test_fill_history_task_is_skipped_and_failed_with_its_stream_task(tmp_path: Path) -> None:
    results: list[StartRoundResult] = []
    meta = open_meta(tmp_path, on_start_complete=results.append)
    stream, history = fill_history_pair()
    meta.register(stream, 5)
    meta.register(history, 5)
    meta.handle_event(stream.stream_id, stream.task_id, TaskEvent.PAUSE)  # INIT is rejected
    steps = dict(meta.start_all())
    assert steps == {stream.id: StartStep.FAILED, history.id: StartStep.SKIPPED}
    (result,) = results
    assert result.failed == (stream.id, history.id)


def test_downstream_ready_task_is_ready_at_once(tmp_path: Path) -> None:
    results: list[StartRoundResult] = []
    meta = open_meta(tmp_path, on_start_complete=results.append)
    meta.register(task(1), 5)
    assert meta.start_one(0x10, 1) is StartStep.STARTED
    meta.complete_event(0x10, 1, TaskEvent.INIT)
    assert meta.status(0x10, 1) is TaskStatus.READY
    assert meta.all_tasks_ready()
    assert dict(meta.start_all()) == {task(1).id: StartStep.READY}
    assert len(results) == 1


def test_unregistering_the_last_member_completes_the_round(tmp_path: Path) -> None:
    results: list[StartRoundResult] = []
    meta = open_meta(tmp_path, on_start_complete=results.append)
    meta.register(task(1), 5)
    meta.register(task(2), 5)
    meta.start_all()
    meta.report_launch(0x10, 1, True)
    meta.unregister(0x10, 2)
    (result,) = results
    assert result.ready == (task(1).id,)


def test_new_start_all_supersedes_an_open_round(tmp_path: Path) -> None:
    results: list[StartRoundResult] = []
    meta = open_meta(tmp_path, on_start_complete=results.append)
    meta.register(task(1), 5)
    meta.start_all()
    meta.start_all()
    assert meta.start_round().superseded == 1
    meta.report_launch(0x10, 1, True)
    assert len(results) == 1
