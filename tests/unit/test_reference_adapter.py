"""The reference behind the Adapter protocol: results, views, crash and reopen, variants."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from statemeta.errors import InvariantViolation, MisuseError
from statemeta.harness.normalize import check_view_invariants, meta_view_from_json
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.variants import VARIANTS


@pytest.fixture
def ref() -> Iterator[ReferenceAdapter]:
    adapter = ReferenceAdapter()
    adapter.start(3)
    yield adapter
    adapter.stop()


def call(adapter: ReferenceAdapter, name: str, **args: object) -> object:
    return adapter.call(Op.of(name, **args))  # type: ignore[arg-type]


def test_hello_names_the_levels() -> None:
    assert ReferenceAdapter().hello() == {
        "protocol": 2,
        "name": "statemeta-reference",
        "levels": [1, 2, 3],
        "semantics": "intended",
    }
    assert ReferenceAdapter(semantics="seed").hello()["semantics"] == "seed"
    assert "paused_count_self_pause" in ReferenceAdapter("paused_count_self_pause").hello()["name"]
    with pytest.raises(MisuseError):
        ReferenceAdapter("no_such_variant")


def test_results_are_json(ref: ReferenceAdapter) -> None:
    assert call(ref, "register", task="s1") == {"ok": True}
    assert call(ref, "register", task="s1") == {"ok": False}
    assert call(ref, "handle_event", task="s1", event="pause") == {"ok": "applied"}
    assert call(ref, "update_stage_role", stage=1, is_leader=True) == {"ok": "leader"}
    assert call(ref, "unregister", task="s2") == {"ok": "not_found"}
    assert call(ref, "resume", task="s2") == {"error": "UnknownTaskError"}
    assert call(ref, "release", task="s1") == {"error": "ReleaseError"}
    assert call(ref, "start_all") == {"ok": [[[0x10, 1], "failed"]]}
    result = call(ref, "advance_clock", ms=5000)
    assert isinstance(result, dict) and len(result["heartbeats"]) == 1


def test_view_round_trips_into_a_meta_view(ref: ReferenceAdapter) -> None:
    for name in ("s3", "s1", "f1", "h1", "s2"):
        call(ref, "register", task=name)
    call(ref, "acquire", task="s2")
    view = ref.view()
    assert view["ids"] == [[0x10, 256], [0x10, 1], [0x20, 1], [0x20, 2], [0x10, 2]]
    assert meta_view_from_json(view).num_tasks == 5
    check_view_invariants(view)
    view["paused_count"] = 1
    with pytest.raises(InvariantViolation, match="paused-count"):
        check_view_invariants(view)


def test_crash_loses_uncommitted_saves_and_reloads_in_key_order(ref: ReferenceAdapter) -> None:
    call(ref, "register", task="s1")
    call(ref, "register", task="s3")
    call(ref, "handle_event", task="s1", event="dropping")
    call(ref, "save_task", task="s1")
    assert call(ref, "crash_reopen") == {
        "ok": {
            "loaded": [[0x10, 256], [0x10, 1]],
            "removed": [],
            "duplicates": [],
            "undecodable": [],
            "cleared": [],
        }
    }
    call(ref, "handle_event", task="s1", event="dropping")
    call(ref, "save_task", task="s1")
    call(ref, "commit")
    report = call(ref, "close_reopen")
    assert isinstance(report, dict) and report["ok"]["removed"] == [[0x10, 1]]
    assert ref.view()["ids"] == [[0x10, 256]]


def test_store_fault_is_a_result(ref: ReferenceAdapter) -> None:
    call(ref, "fail_next", op="put")
    assert call(ref, "register", task="s1") == {"error": "StoreFault"}
    assert ref.view()["ids"] == []


def test_level_checks() -> None:
    adapter = ReferenceAdapter()
    adapter.start(2)
    with pytest.raises(MisuseError):
        adapter.call(Op.of("crash_reopen"))
    adapter.start(1)
    assert adapter.call(Op.of("handle", task="s1", event="init")) == {"ok": "started"}
    assert adapter.call(Op.of("restore", task="s1")) == {"ok": "rejected"}
    assert adapter.view()["tasks"][0]["active"] == "init"
    adapter.stop()
    adapter.stop()


def test_a_variant_breaks_its_invariant() -> None:
    adapter = ReferenceAdapter("paused_count_self_pause")
    adapter.start(2)
    adapter.call(Op.of("register", task="s1"))
    adapter.call(Op.of("handle_event", task="s1", event="pause"))
    with pytest.raises(InvariantViolation, match="paused-count"):
        adapter.call(Op.of("handle_event", task="s1", event="pause"))
    adapter.stop()
    assert len(VARIANTS) >= 10
