from __future__ import annotations

from pathlib import Path

from meta_support import open_meta, task

from statemeta.lifecycle import Outcome, TaskEvent, TaskStatus
from statemeta.roles import Role


def test_vnode_opens_uninit_and_follows_the_role_table(tmp_path: Path) -> None:
    meta = open_meta(tmp_path, vg_id=3)
    assert (meta.role, meta.stage) == (Role.UNINIT, -1)
    assert meta.update_stage_role(8, True) is Role.LEADER
    assert meta.stage == 8
    assert meta.update_stage_role(9, False) is Role.FOLLOWER
    assert meta.view().heartbeat.send_before_close
    assert meta.update_stage_role(10, False) is Role.FOLLOWER
    assert meta.stage == 10


def test_events_resume_and_paused_count(tmp_path: Path) -> None:
    meta = open_meta(tmp_path)
    meta.register(task(1), 5)
    assert meta.start_one(0x10, 1).value == "started"
    assert meta.complete_event(0x10, 1, TaskEvent.INIT) is Outcome.APPLIED
    assert meta.view().tasks[0].downstream_ready
    assert meta.begin_checkpoint(0x10, 1, 3, 1) is Outcome.APPLIED
    assert meta.handle_event(0x10, 1, TaskEvent.PAUSE) is Outcome.PENDING
    assert meta.paused_count == 0
    assert meta.handle_event(0x10, 1, TaskEvent.CHECKPOINT_DONE) is Outcome.APPLIED
    assert meta.status(0x10, 1) is TaskStatus.PAUSE
    assert meta.paused_count == 1
    assert meta.resume(0x10, 1) is Outcome.APPLIED
    assert meta.status(0x10, 1) is TaskStatus.READY
    assert meta.paused_count == 0
    assert meta.resume(0x10, 1) is Outcome.REJECTED
