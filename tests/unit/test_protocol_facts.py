"""The rules of docs/harness-protocol.md ("Rules the tables above do not show"), each shown on
the reference through the protocol's operations: an implementation written from the docs alone
needs them, and these tests keep the sentences true."""

from __future__ import annotations

from typing import Any

from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter

S1, S2, S3, F1, H1 = [16, 1], [16, 2], [16, 256], [32, 1], [32, 2]


def run(level: int, *ops: tuple[str, dict[str, Any]]) -> tuple[ReferenceAdapter, list[Any]]:
    adapter = ReferenceAdapter()
    adapter.start(level)
    return adapter, [adapter.call(Op.of(name, **args)) for name, args in ops]


def leader(stage: int = 1) -> tuple[str, dict[str, Any]]:
    return "update_stage_role", {"stage": stage, "is_leader": True}


def follower(stage: int = 1) -> tuple[str, dict[str, Any]]:
    return "update_stage_role", {"stage": stage, "is_leader": False}


def test_1_the_tick_counter_keeps_its_value_when_the_chain_stops() -> None:
    adapter, _ = run(2, ("register", {"task": "s1"}), leader(), ("advance_clock", {"ms": 1000}))
    ticks = adapter.view()["heartbeat"]["tick_counter"]
    assert ticks > 0
    name, args = follower()
    adapter.call(Op.of(name, **args))
    assert adapter.view()["heartbeat"] | {"sent": 0} == {
        "armed": False, "tick_counter": ticks, "sent": 0, "send_before_close": True
    }


def test_1_an_election_ticks_once_at_once_counting_on() -> None:
    adapter, _ = run(2, ("register", {"task": "s1"}), leader(), ("advance_clock", {"ms": 1000}),
                     follower())
    ticks = adapter.view()["heartbeat"]["tick_counter"]
    name, args = leader()
    adapter.call(Op.of(name, **args))
    assert adapter.view()["heartbeat"]["tick_counter"] == ticks + 1
    _, results = run(2, ("register", {"task": "s1"}), leader(), ("advance_clock", {"ms": 1000}),
                     ("advance_clock", {"ms": 1000}), ("advance_clock", {"ms": 1000}),
                     ("advance_clock", {"ms": 1000}), ("advance_clock", {"ms": 100}),
                     ("advance_clock", {"ms": 100}), ("advance_clock", {"ms": 100}),
                     ("advance_clock", {"ms": 100}), ("advance_clock", {"ms": 100}),
                     ("advance_clock", {"ms": 100}), ("advance_clock", {"ms": 100}), leader())
    assert "heartbeats" not in results[-2] and len(results[-1]["heartbeats"]) == 1


def test_2_start_all_steps_in_list_order_by_these_rules() -> None:
    adapter, results = run(
        2,
        ("register", {"task": "s1"}),  # stopped: failed
        ("register", {"task": "h1"}),  # fill-history: skipped
        ("register", {"task": "s2"}),  # downstream-ready: ready
        ("register", {"task": "s3"}),  # init: started
        ("handle_event", {"task": "s1", "event": "stop"}),
        ("handle_event", {"task": "s2", "event": "init"}),
        ("complete_event", {"task": "s2", "event": "init"}),
        ("start_all", {}),
    )
    assert results[-1] == {
        "ok": [[S1, "failed"], [H1, "skipped"], [S2, "ready"], [S3, "started"]]
    }
    round_ = adapter.view()["start_round"]
    assert (round_["ready"], round_["failed"]) == ([S2], [S1])


def test_2_a_rejected_init_is_a_failed_step() -> None:
    _, results = run(
        2,
        ("register", {"task": "s1"}),
        ("handle_event", {"task": "s1", "event": "pause"}),  # PAUSE rejects INIT
        ("start_all", {}),
    )
    assert results[-1] == {"ok": [[S1, "failed"]]}


def test_3_removed_forgets_an_id_registered_again() -> None:
    adapter, _ = run(2, ("register", {"task": "s1"}), ("unregister", {"task": "s1"}))
    assert adapter.view()["removed"] == [S1]
    adapter.call(Op.of("register", task="s1"))
    assert adapter.view()["removed"] == []


def test_4_a_fill_history_task_fails_with_its_stream_tasks_rejected_init() -> None:
    adapter, results = run(
        2,
        ("register", {"task": "f1"}),
        ("register", {"task": "h1"}),
        ("handle_event", {"task": "f1", "event": "pause"}),
        ("start_all", {}),
    )
    assert results[-1] == {"ok": [[F1, "failed"], [H1, "skipped"]]}
    round_ = adapter.view()["start_round"]
    assert (round_["open"], round_["completed"]) == (False, 1)  # both members have a result


def test_5_ready_and_failed_are_in_member_order() -> None:
    adapter, _ = run(
        2,
        ("register", {"task": "s1"}),
        ("register", {"task": "s2"}),
        ("register", {"task": "s3"}),
        ("start_all", {}),
        ("report_launch", {"task": "s3", "ready": True}),
        ("report_launch", {"task": "s1", "ready": True}),
    )
    assert adapter.view()["start_round"]["ready"] == [S1, S3]


def test_6_planned_faults_do_not_survive_a_reopen() -> None:
    for reopen in ("close_reopen", "crash_reopen"):
        _, results = run(
            3, ("fail_next", {"op": "commit"}), (reopen, {}), ("register", {"task": "s1"})
        )
        assert results[-1] == {"ok": True}, reopen


def test_7_commit_with_no_transaction_begins_one() -> None:
    _, results = run(3, ("fail_next", {"op": "begin"}), ("commit", {}))
    assert results[-1] == {"error": "StoreFault"}


def test_8_stop_all_clears_send_before_close_when_a_task_is_mapped() -> None:
    adapter, results = run(2, leader(), follower(), ("stop_all", {}))
    assert results[-1] == {"ok": []}
    assert adapter.view()["heartbeat"]["send_before_close"] is True  # nothing mapped: kept
    adapter, results = run(2, ("register", {"task": "h1"}), leader(), follower(), ("stop_all", {}))
    assert "heartbeats" not in results[-1]  # a fill-history task is not reported
    assert adapter.view()["heartbeat"]["send_before_close"] is False


def test_9_a_failed_removal_in_a_timer_stops_the_clock_there() -> None:
    adapter, results = run(
        3,
        ("register", {"task": "s1"}),
        ("start_task_timer", {"task": "s1"}),
        ("unregister", {"task": "s1"}),
        ("fail_next", {"op": "commit"}),
        ("advance_clock", {"ms": 1000}),
    )
    assert results[2] == {"ok": "deferred"}
    assert results[-1] == {"error": "StoreFault"}
    view = adapter.view()
    assert view["now_ms"] == 100  # the task timer's due time, not 1000
    assert view["ids"] == [S1] and view["tasks"][0]["status"] == "dropping"


def test_10_detached_tasks_are_in_registration_order() -> None:
    adapter, _ = run(
        2,
        ("register", {"task": "s3"}),
        ("register", {"task": "s1"}),
        ("acquire", {"task": "s1"}),
        ("acquire", {"task": "s3"}),
        ("unregister", {"task": "s1"}),
        ("unregister", {"task": "s3"}),
    )
    assert [d["id"] for d in adapter.view()["detached"]] == [S3, S1]
