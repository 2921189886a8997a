"""The TDengine adapter (statemeta/tdengine/, docs/tdengine.md): TDengine's upstream files,
their blob ids checked, compiled unmodified with the shim and sanitizers, and served over
protocol 2 as the seed.

The tree is ../shared/tdengine/63494de7 beside the repository, or STATEMETA_TDENGINE_SRC. In
CI (CI set) a missing tree or gcc fails the test that needs it; elsewhere it skips, saying why.
The driver is built once per session into a cache directory (builds are keyed by content)."""

from __future__ import annotations

import functools
import json
import os
import shutil
import sys
from pathlib import Path

import pytest
from tdengine_support import tdengine_tree

from statemeta.cli import main
from statemeta.errors import CompiledCodeFault, TDengineBuildError
from statemeta.harness.catalogue import START, Mask
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter, pool_json
from statemeta.harness.trace import read_trace, replay, write_trace
from statemeta.semantics import Switch
from statemeta.tdengine.build import build, default_out
from statemeta.tdengine.driver import Driver
from statemeta.tdengine.server import TDengineServer
from statemeta.tdengine.sources import COMPILED, SEED_BLOBS, blob_id, check_tree


@pytest.fixture(scope="session")
def tree() -> Path:
    return tdengine_tree()


@pytest.fixture(scope="session")
def driver(tree: Path) -> Path:
    return build(tree, default_out()).driver


def _sut(tree: Path) -> str:
    return f"{sys.executable} -m statemeta tdengine serve --src {tree} --out {default_out()}"


def test_blob_ids_are_git_hash_object() -> None:
    assert blob_id(b"") == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"
    assert blob_id(b"hello\n") == "ce013625030ba8dba906f756967f9e9ca394464a"


def test_the_seed_tree_checks_and_builds(tree: Path, driver: Path) -> None:
    assert check_tree(tree) == SEED_BLOBS
    assert len(COMPILED) == 5
    assert driver.is_file() and os.access(driver, os.X_OK)
    assert not any(tree.rglob("*.o")), "the build writes nothing into the tree"


def test_a_changed_upstream_file_is_refused_in_one_line(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "tree"
    shutil.copytree(tree, copy)
    changed = copy / "source/libs/stream/src/streamMeta.c"
    changed.write_bytes(changed.read_bytes() + b"\n/* one more line */\n")
    code = main(["tdengine", "build", "--src", str(copy), "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.splitlines()) == 1
    assert "streamMeta.c: changed: blob" in err
    assert not (tmp_path / "out").exists()


def test_a_missing_tree_file_or_compiler_is_one_line(
    tree: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["tdengine", "build", "--src", str(tmp_path / "nowhere")]) == 2
    assert "no such TDengine tree" in capsys.readouterr().err
    copy = tmp_path / "tree"
    shutil.copytree(tree, copy)
    (copy / "include/util/tlist.h").unlink()
    assert main(["tdengine", "build", "--src", str(copy)]) == 2
    assert "tlist.h: missing from the TDengine tree" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(TDengineBuildError, match="gcc: not found on PATH"):
        build(tree, tmp_path / "out")


def test_level_1_conforms_to_the_seed(
    tree: Path, driver: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The directed corpus once, then random examples on three seeds: no divergence, and the
    report says the saved stack was not compared (the C keeps none)."""
    for seed, directed in (("0", []), ("1", ["--no-directed"]), ("2", ["--no-directed"])):
        code = main([
            "check", "--sut", _sut(tree), "--level", "1", "--semantics", "seed",
            "--examples", "40", "--steps", "30", "--seed", seed, "--json", *directed,
        ])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0, out
        report = json.loads(out)
        assert report["conformant"] and report["outcomes"] == "ok_rejected"
        assert report["unobserved"] == {"view": [], "tasks": ["saved"]}


def _pool() -> list[dict[str, object]]:
    return [
        {
            "slot": "s1",
            "id": [16, 1],
            "fill_history": False,
            "trigger_param": 0,
            "h_task_id": [0, 0],
            "stream_task_id": [0, 0],
            "dispatches": True,
        }
    ]


def test_a_failed_assert_in_the_c_is_a_typed_answer_naming_it_and_the_call(driver: Path) -> None:
    """complete(init) in ck with nothing active breaks an ASSERT of streamTaskSm.c (the
    harness never sends it: a precondition); served, it is the protocol's fault answer naming
    the assertion and the call, and the server goes on answering."""
    server = TDengineServer(driver)
    try:
        server.start(1, _pool())
        for op, args in (("set_ready", {}), ("handle", {"event": "gen_checkpoint"})):
            assert server.call(op, {"task": "s1", **args}) == {"ok": "ok"}
        request = {"id": 9, "op": "complete", "args": {"task": "s1", "event": "init"}}
        response = server.respond(json.dumps(request))
        assert response["id"] == 9 and response["error"]["code"] == "fault"
        message = response["error"]["message"]
        assert "ASSERT(" in message and "streamTaskSm.c" in message
        assert "complete(event=init, task=s1)" in message
        after = server.respond(json.dumps({"id": 10, "op": "view", "args": {}}))
        assert after["error"]["code"] == "not_started"
    finally:
        server.stop()


def test_a_use_after_free_in_the_c_is_a_fault_naming_the_finding_and_the_call(
    driver: Path,
) -> None:
    """Acquired once and released twice, a registered task is freed while still mapped (the
    seed's refcount has no guard); unregister then reads it: AddressSanitizer's
    heap-use-after-free, raised as a CompiledCodeFault naming where and in which call."""
    run = Driver(driver)
    try:
        run.ask(f"meta 2 {run.meta_dir}", "start")
        run.ask("task 0 16 1 0 0 0 0 0 1 0", "start")
        assert run.ask("mo 0 register", "register(task=s1)") == "1"
        assert run.ask("mo 0 acquire", "acquire(task=s1)") == "1"
        for _ in range(2):  # the second gives the same handle back again
            assert run.ask("mo 0 release", "release(task=s1)") == "0"
        with pytest.raises(CompiledCodeFault) as fault:
            run.ask("mo 0 unregister", "unregister(task=s1)")
        assert fault.value.finding.startswith("AddressSanitizer: heap-use-after-free in ")
        assert "streamTaskSm.c" in fault.value.finding
        assert fault.value.operation == "unregister(task=s1)"
    finally:
        run.close()


def test_a_use_after_free_served_is_a_failure_of_kind_fault_whose_trace_replays(
    tree: Path, tmp_path: Path
) -> None:
    """The double release above, through the harness: the view after the second release reads
    the task the C freed while still mapped, and the run fails there with a failure of kind
    fault naming the sanitizer's finding and the request; its trace replays to the same."""
    ops = [Op.of("register", task="s1"), Op.of("acquire", task="s1"),
           Op.of("release", task="s1"), Op.of("release", task="s1")]  # fmt: skip
    # U2 intended: the reference keeps the task, so the fault is the implementation's alone
    # (with U2 the seed reference agrees: tests/unit/test_seed_ub.py)
    seed = functools.partial(ReferenceAdapter, semantics="seed",
                             flipped=frozenset({Switch.RELEASE_FREES_MAPPED}))
    # the heartbeat timer the C arms at open (docs/tdengine.md): not this test's
    armed = frozenset(Mask(START, at) for at in ("invariant:heartbeat-chain",
                                                  "view.heartbeat.armed"))
    with SubprocessAdapter(_sut(tree)) as adapter:
        found = replay(ops, level=2, sut=adapter, sut_command=_sut(tree), reference=seed,
                       masks=armed)
        assert found is not None and found.failure.kind == "fault", found
        assert "AddressSanitizer: heap-use-after-free" in found.failure.detail
        assert "(during view)" in found.failure.detail
        assert [step.op for step in found.steps] == ops
        path = tmp_path / "fault.json"
        write_trace(found, path)
        again = replay(read_trace(path).ops, level=2, sut=adapter, sut_command=_sut(tree),
                       reference=seed, masks=armed)
    assert again is not None and again.failure.kind == "fault"


def test_level_2_runs_to_a_catalogue_of_named_divergences(
    tree: Path, driver: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Served at level 2, the compiled meta runs through a keep-going check to the end: what
    is left in its catalogue is a documented limit (docs/tdengine.md, ``LIMITS``); the rows the
    seed profile (M12) and the adapter once got wrong are gone."""
    code = main([
        "check", "--sut", _sut(tree), "--level", "2", "--semantics", "seed", "--examples", "30",
        "--steps", "20", "--seed", "0", "--no-directed", "--keep-going", "--json",
        "--trace-out", str(tmp_path / "t.json"),
    ])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == (0 if report["conformant"] else 1)
    for entry in report["catalogue"]:
        assert (entry["op"], entry["at"]) in LIMITS, entry
    assert report["trace"] is None or report["catalogue"], "a run stops only at a limit"


def test_level_3_serves_reopen_crash_faults_and_a_torn_record(driver: Path) -> None:
    """Level 3 on the compiled meta: a registered task survives a crash (the register
    committed) and a close; a planned put fault dies with its store; the torn record the C
    reads at open (streamMetaCheckBackendCompatible trusts its length prefix) is an over-read:
    AddressSanitizer's heap-buffer-overflow, answered as the protocol's internal error."""
    server = TDengineServer(driver)
    try:
        assert server.hello(2)["levels"] == [1, 2, 3]
        server.start(3, [{**_pool()[0], "dispatches": False}])
        assert server.call("register", {"task": "s1"}) == {"ok": True}
        for op in ("crash_reopen", "close_reopen"):
            assert server.call(op, {}) == {"ok": 0}
            assert server.view()["ids"] == [[16, 1]]
        assert server.call("fail_next", {"op": "put"}) == {"ok": None}
        request = {"id": 3, "op": "corrupt_record", "args": {"task": "s1"}}
        message = server.respond(json.dumps(request))["error"]["message"]
        assert "AddressSanitizer: heap-buffer-overflow in tDecodeI64" in message
        assert "(during corrupt_record(task=s1))" in message
    finally:
        server.stop()


def test_level_3_runs_to_a_catalogue_past_the_torn_record(
    tree: Path, driver: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The directed corpus at level 3, going on past divergences: what is catalogued is a
    documented limit only; the torn record's over-read is the seed reference's undefined
    behaviour too (U1), so it is agreement and no fault ends the run (tests/unit/
    test_seed_ub.py replays it)."""
    code = main([
        "check", "--sut", _sut(tree), "--level", "3", "--semantics", "seed", "--examples", "10",
        "--steps", "10", "--seed", "0", "--max-divergences", "4", "--json",
        "--trace-out", str(tmp_path / "t.json"),
    ])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and not report["conformant"]
    for entry in report["catalogue"]:
        assert (entry["op"], entry["at"]) in LIMITS, entry
    # the reopens answer streamMetaLoadAllTasks's code: declared outcome-only, not compared
    assert report["results"]["close_reopen"] == report["results"]["crash_reopen"] == "outcome"
    assert "heap-buffer-overflow" not in json.dumps(report)


LIMITS = {
    ("handle_event", "view.paused_count"): "a PAUSE that waits (attached): streamTaskPause "
    "counts it when its wait ends, the model when it is handled",
    ("handle_event", "invariant:paused-count"): "the same: a waiting PAUSE counted later",
    ("clear", "result"): "a blocking clear answers blocked, undeclared: the reference's clear "
    "result does not say whether the seed waits (docs/harness-protocol.md, 'Calls that block')",
    ("clear", "view.ids"): "a blocking clear: streamMetaClear waits for the task timers (on "
    "the shim's virtual clock); the reference clears at once",
    ("clear", "view.map_ids"): "the same: the blocking clear",
    ("clear", "view.tasks"): "the same: the blocking clear",
    ("clear", "view.num_tasks"): "the same: the blocking clear",
    ("clear", "view.stream_count"): "the same: the blocking clear",
}
"""The places a seed keep-going run at level 2 may still show, each a documented limit
(docs/tdengine.md)."""

UNEXPLAINED = {
    ("*", "result"): "the protocol: the C returns a code, a bool or nothing, not the result "
    "the reference builds (the adapter declares those results; a void call that waits in the "
    "C answers null)",
    **LIMITS,
}
"""The places (``*``: after any operation) a keep-going run against the compiled C shows that
no switch of spec/divergences.toml explains, each with the reason (docs/tdengine.md's table):
a gap of the seed profile, of the adapter or of the protocol, none a divergence of the
intended semantics."""

SWITCHES = {switch.value for switch in Switch}


@pytest.mark.parametrize("level", [1, 2, 3])
def test_intended_keep_going_names_every_entry(
    level: int, tree: Path, driver: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Checked against the intended semantics, every entry of the compiled C's catalogue is
    explained by switches of the table, or is a place listed above with its reason; at level 3
    the run ends at the torn record's over-read, named (the seed's load trusts the record's
    length prefix)."""
    code = main([
        "check", "--sut", _sut(tree), "--level", str(level), "--semantics", "intended",
        "--examples", "80", "--steps", "25", "--seed", "0", "--no-directed", "--keep-going",
        "--json", "--trace-out", str(tmp_path / "t.json"),
    ])  # fmt: skip
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["catalogue"]
    for entry in report["catalogue"]:
        place = (entry["op"], entry["at"])
        if entry["explained_by"]:
            assert set(entry["explained_by"]) <= SWITCHES, entry
        else:
            assert place in UNEXPLAINED or ("*", entry["at"]) in UNEXPLAINED, entry
    if level == 1:  # the lifecycle: all explained, by switches of the lifecycle's rows
        assert all(entry["explained_by"] for entry in report["catalogue"])
    if report["trace"] is not None:
        assert level == 3 and "heap-buffer-overflow in tDecodeI64" in json.dumps(report)


def test_unregister_and_notify_close_waiting_for_a_timer_answer_blocked_and_finish_later(
    driver: Path,
) -> None:
    """streamMetaUnregisterTask and streamMetaNotifyClose wait in a sleep loop while a task's
    timer is active: each is answered blocked (declared in hello), and the advance that ends
    the timer lets the waiting unregister finish before it answers, so the next view shows the
    task removed (the driver's settle; without it the removal raced the view)."""
    server = TDengineServer(driver)
    try:
        assert server.hello(2)["blocks"] == ["unregister", "notify_close"]
        server.start(2, pool_json()[:2])
        for slot in ("s1", "s2"):
            assert server.call("register", {"task": slot}) == {"ok": True}
            assert server.call("start_task_timer", {"task": slot}) == {"ok": None}
        assert server.call("unregister", {"task": "s1"}) == {"blocked": True}
        seen = server.view()
        assert seen["ids"] == [[16, 1], [16, 2]] and seen["tasks"][0]["status"] == "dropping"
        assert server.call("notify_close", {}) == {"blocked": True}
        assert server.call("advance_clock", {"ms": 1000}) == {"ok": None}
        seen = server.view()
        assert seen["ids"] == [[16, 2]] and seen["tasks"][0]["timer_active"] == 0
        assert server.call("unregister", {"task": "s2"}) == {"ok": None}  # no timer: returns
        assert server.view()["ids"] == []
    finally:
        server.stop()


def test_a_clear_waits_as_the_vnode_s_restart_does_and_its_views_read_live_tasks(
    driver: Path,
) -> None:
    """The driver calls streamMetaClear once no task is in a timer, as the vnode's restart
    does: a clear called while s3's timer runs answers blocked and frees nothing yet, so the
    views read live tasks (called at once, the C freed s1 and s2 while it waited for s3's
    timer, and the next view read freed memory: AddressSanitizer ended the run); the advance
    that ends the timer lets it clear."""
    server = TDengineServer(driver)
    try:
        server.start(2, pool_json())
        for slot in ("s1", "s2", "s3"):
            assert server.call("register", {"task": slot}) == {"ok": True}
        assert server.call("start_task_timer", {"task": "s3"}) == {"ok": None}
        assert server.call("clear", {}) == {"blocked": True}
        assert len(server.view()["tasks"]) == 3
        assert server.call("advance_clock", {"ms": 1000}) == {"ok": None}
        assert server.view()["ids"] == []
    finally:
        server.stop()


def test_a_planned_store_fault_fires_at_the_c_s_next_real_store_call(driver: Path) -> None:
    """fail_next is by the implementation's own store calls: tdb keeps a transaction open from
    open on, and streamMetaCommit begins the next one after its commit, so a planned begin
    fault fires at the tail of the next commit (register's record is then durable: a crash
    brings it back) and leaves the meta's transaction handle stale (the next register fails
    too); a planned put fault is not fired by a commit that writes nothing. A failed store call
    is answered StoreFault, as the reference's store raises it (before: {"ok": false})."""
    server = TDengineServer(driver)
    try:
        server.start(3, pool_json())
        assert server.call("fail_next", {"op": "begin"}) == {"ok": None}
        assert server.call("register", {"task": "t1"}) == {"error": "StoreFault"}
        assert server.view()["map_ids"] == []
        assert server.call("register", {"task": "s1"}) == {"error": "StoreFault"}
        assert server.call("crash_reopen", {}) == {"ok": 0}
        assert server.view()["map_ids"] == [[48, 1]]  # the faulted commit was durable
        assert server.call("fail_next", {"op": "put"}) == {"ok": None}
        assert server.call("commit", {}) == {"ok": None}  # no put: the fault waits
        assert server.call("register", {"task": "s1"}) == {"error": "StoreFault"}
        assert server.view()["map_ids"] == [[48, 1]]
    finally:
        server.stop()


def test_the_seed_defects_column_is_what_the_compiled_c_shows_today(tree: Path) -> None:
    """Each trace of docs/seed-defects.md replayed against the compiled C gives the verdict
    spec/seed-defects-tdengine.json records (and the page shows): the column is not stale."""
    from statemeta.explore.defects_page import PAGE
    from statemeta.tdengine.defects import RECORDED, record

    fresh = record(PAGE.read_text(encoding="utf-8"), _sut(tree))
    assert fresh == json.loads(RECORDED.read_text(encoding="utf-8")), (
        f"run: python -m statemeta.tdengine.defects --src {tree}"
    )
