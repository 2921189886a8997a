"""Undefined behaviour as a typed outcome of the seed reference (spec/divergences.md, U1-U3).

Each path where the seed's code reads or writes memory it does not own is shown three ways:
the seed reference raises UndefinedBehaviour there (and the intended one does not); the trace
replays against TDengine's compiled code, under AddressSanitizer, to the same finding at the
same step, which the harness counts as agreement; and the harness tells a one-sided undefined
behaviour (the reference with the switch off against the C, the seed against an implementation
that goes on) as a failure.

The compiled C's tree is ../shared/tdengine/63494de7 beside the repository, or
STATEMETA_TDENGINE_SRC; in CI (CI set) a missing tree or gcc fails the tests that need it,
elsewhere they skip, saying why.
"""

from __future__ import annotations

import functools
import sys
from pathlib import Path

import attrs
import pytest
from meta_support import open_meta, task
from tdengine_support import tdengine_tree

from statemeta.codec import STREAM_TASK_KEY_LEN, encode_task, encode_task_key
from statemeta.errors import ReleaseError, UndefinedBehaviour
from statemeta.explore.bounds import Bounds
from statemeta.explore.search import explore
from statemeta.harness.catalogue import START, Mask
from statemeta.harness.failure import same_finding
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter, pool_json
from statemeta.harness.trace import Trace, replay
from statemeta.meta.core import TASK_TABLE
from statemeta.semantics import Semantics, Switch
from statemeta.tdengine.build import build, default_out
from statemeta.tdengine.server import TDengineServer

ARMED = frozenset(Mask(START, at) for at in ("invariant:heartbeat-chain", "view.heartbeat.armed"))
"""The heartbeat timer the C arms at open (docs/tdengine.md): a divergence at start that is
not these tests' (a masked difference at start does not end the example)."""


@attrs.frozen
class Path_:
    """One undefined-behaviour path: its switch, its operations, the seed reference's text at
    the last one, and the compiled C's finding there."""

    switch: Switch
    ops: tuple[Op, ...]
    undefined: str
    finding: str


def _ops(*steps: tuple[str, str]) -> tuple[Op, ...]:
    return tuple(Op.of(name, task=slot) for name, slot in steps)


PATHS = (
    # U1: the only record torn: streamMetaCheckBackendCompatible reads it past its end.
    Path_(Switch.LENGTH_HEADER_TRUSTED, _ops(("register", "s1"), ("corrupt_record", "s1")),
          "heap over-read of the record of task 0x10-0x1 at open",
          "AddressSanitizer: heap-buffer-overflow in tDecodeI64"),
    # U1: s3's record sorts first and decodes (version 2): the format conversion then reads
    # every record's prefix (streamMetaGetLatestCheckpointId), s1's torn one past its end.
    Path_(Switch.LENGTH_HEADER_TRUSTED, _ops(("register", "s3"), ("corrupt_record", "s1")),
          "heap over-read of the record of task 0x10-0x1 at open",
          "AddressSanitizer: heap-buffer-overflow in tDecodeI64"),
    # U2: the second release frees the mapped task; the C's next read of it (the view) is
    # the use after free.
    Path_(Switch.RELEASE_FREES_MAPPED,
          _ops(("register", "s1"), ("acquire", "s1"), ("release", "s1"), ("release", "s1")),
          "use after free of task 0x10-0x1 at release",
          "AddressSanitizer: heap-use-after-free in printTask"),
    # U3: unregistered while acquired, freed at its release; the next release writes it.
    Path_(Switch.RELEASE_OF_FREED,
          _ops(("register", "s1"), ("acquire", "s1"), ("unregister", "s1"), ("release", "s1"),
               ("release", "s1")),
          "use after free of task 0x10-0x1 at release",
          "AddressSanitizer: heap-use-after-free in streamMetaReleaseTask"),
)
IDS = [f"{p.switch.value}-{len(p.ops)}" for p in PATHS]


def _run(path: Path_, semantics: Semantics | str, flipped: frozenset[Switch] = frozenset()
         ) -> UndefinedBehaviour | None:
    """The reference alone over the path's operations: the undefined behaviour it raises."""
    adapter = ReferenceAdapter(semantics=semantics, flipped=flipped)
    adapter.start(3)
    try:
        for op in path.ops:
            adapter.call(op)
    except UndefinedBehaviour as undefined:
        return undefined
    finally:
        adapter.stop()
    return None


def test_the_text_names_the_kind_the_object_and_the_operation() -> None:
    undefined = UndefinedBehaviour("use after free", "task 0x10-0x1", "release",
                                   divergence="U2")
    assert str(undefined) == "undefined behaviour: use after free of task 0x10-0x1 at release"
    assert (undefined.kind, undefined.what, undefined.at) == (
        "use after free", "task 0x10-0x1", "release")


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_the_seed_reference_stops_at_the_last_step_and_the_intended_does_not(
    path: Path_,
) -> None:
    undefined = _run(path, "seed")
    assert undefined is not None and str(undefined) == f"undefined behaviour: {path.undefined}"
    assert undefined.divergence == Semantics.SEED.profile.divergence(path.switch).id
    assert _run(path, "intended") is None
    assert _run(path, "seed", flipped=frozenset({path.switch})) is None  # the switch makes it
    seed = ReferenceAdapter(semantics="seed")
    seed.start(3)
    try:
        for op in path.ops[:-1]:  # nothing before the last step is undefined
            seed.call(op)
    finally:
        seed.stop()


def test_a_release_that_raises_changes_nothing(tmp_path: Path) -> None:
    meta = open_meta(tmp_path, semantics="seed")
    meta.register(task(1), 5)
    handle = meta.acquire(0x10, 1)
    assert handle is not None
    meta.release(handle)
    with pytest.raises(UndefinedBehaviour, match="use after free of task 0x10-0x1 at release"):
        meta.release(handle)
    assert meta.refcount(0x10, 1) == 1
    meta.close()
    intended = open_meta(tmp_path / "intended")
    intended.register(task(1), 5)
    handle = intended.acquire(0x10, 1)
    assert handle is not None
    intended.release(handle)
    with pytest.raises(ReleaseError):
        intended.release(handle)
    intended.close()


def test_a_record_torn_under_an_open_meta_is_over_read_by_load_and_by_the_checkpoint_id(
    tmp_path: Path,
) -> None:
    """U1 beyond open: a torn record written under an open meta (by another writer of the
    store) is read past its end by latest_checkpoint_id and by load_all."""
    for semantics, expected in (("seed", True), ("intended", False)):
        meta = open_meta(tmp_path / semantics, semantics=semantics)
        meta.register(task(1), 5)
        table = meta.store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
        torn = encode_task(task(2))[:12]
        if not meta.store.in_transaction:  # the seed's is open from open on (M15)
            meta.store.begin()
        table.upsert(encode_task_key(0x10, 2), torn)
        for call, at in ((meta.latest_checkpoint_id, "latest_checkpoint_id"),
                         (meta.load_all, "load")):
            if expected:
                with pytest.raises(UndefinedBehaviour,
                                   match=f"heap over-read of the record of task 0x10-0x2 at {at}"):
                    call()
            else:
                call()
        meta.close()


def test_a_record_whose_header_runs_short_of_a_field_is_no_over_read(tmp_path: Path) -> None:
    """tDecodeI64 checks its 8 bytes against the header's 5: the seed fails the decode (M4's
    DecodeError), it reads nothing past the record."""
    meta = open_meta(tmp_path, semantics="seed")
    meta.register(task(1), 5)
    table = meta.store.table(TASK_TABLE, STREAM_TASK_KEY_LEN)
    assert meta.store.in_transaction  # the seed's, open from open on (M15)
    table.upsert(encode_task_key(0x10, 2), b"\x05\x00\x00\x00\x02")
    assert meta.latest_checkpoint_id() == 0
    with pytest.raises(Exception, match="cannot decode"):
        meta.load_all()
    meta.close()


def test_the_findings_match_by_kind() -> None:
    assert same_finding("use after free", "AddressSanitizer: heap-use-after-free in f at a.c")
    assert same_finding("heap over-read", "AddressSanitizer: heap-buffer-overflow in tDecodeI64")
    assert not same_finding("use after free", "AddressSanitizer: heap-buffer-overflow in f")
    assert not same_finding("heap over-read", "statemeta-shim: ASSERT failed")


SMALL = Bounds(stream_tasks=1, fill_history=False, role_changes=0, start_rounds=0, reopens=1,
               faults=1, clock_advances=0, max_depth=4)
"""One task, a fault, four operations: enough for U1 and U2 (the default bounds are
docs/seed-defects.md's, checked by tests/unit/test_defects_page.py)."""


def test_the_explorer_reports_each_path_within_its_bounds_as_a_seed_defect() -> None:
    """U3 needs five operations, one more than the bounds' depth."""
    found = explore(SMALL, semantics=Semantics.SEED, all_violations=True)
    undefined = {v.invariant: v for v in found.violations
                 if v.counterexample.kind == "undefined-behaviour"}
    assert set(undefined) == {"undefined-behaviour-U1", "undefined-behaviour-U2"}
    assert [op.name for op in undefined["undefined-behaviour-U2"].counterexample.ops] == [
        "register", "acquire", "release", "release"]
    assert undefined["undefined-behaviour-U1"].operation == "corrupt_record"
    assert "undefined behaviour: heap over-read" in (
        undefined["undefined-behaviour-U1"].counterexample.detail)
    intended = explore(SMALL, semantics=Semantics.INTENDED, all_violations=True)
    assert not intended.violations


# -- against TDengine's compiled code ----------------------------------------------------------


@pytest.fixture(scope="module")
def compiled() -> str:
    """The command that serves TDengine's compiled code (built on first use)."""
    tree = tdengine_tree()
    return f"{sys.executable} -m statemeta tdengine serve --src {tree} --out {default_out()}"


def _replay(path: Path_, sut: str, flipped: frozenset[Switch] = frozenset()) -> Trace | None:
    seed = functools.partial(ReferenceAdapter, semantics="seed", flipped=flipped)
    with SubprocessAdapter(sut) as adapter:
        return replay(list(path.ops), level=3, sut=adapter, sut_command=sut, reference=seed,
                      masks=ARMED)


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_each_path_replays_against_the_compiled_c_to_the_same_finding_at_the_same_step(
    path: Path_, compiled: str
) -> None:
    """The seed reference's undefined behaviour and the C's sanitizer finding at the same
    step are agreement: the replay passes. With the switch off the reference goes on where
    the C stops: the same replay fails at that step with the C's finding (kind fault)."""
    assert _replay(path, compiled) is None
    alone = _replay(path, compiled, flipped=frozenset({path.switch}))
    assert alone is not None and alone.failure.kind == "fault", alone
    assert [step.op for step in alone.steps] == list(path.ops)
    assert path.finding in alone.failure.detail


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_undefined_behaviour_on_the_reference_side_only_is_a_divergence(path: Path_) -> None:
    """The intended reference, served, goes on where the seed reference stops."""
    sut = f"{sys.executable} -m statemeta.serve --semantics intended"
    found = _replay(path, sut)
    assert found is not None and found.failure.kind == "undefined-behaviour", found
    assert [step.op for step in found.steps] == list(path.ops)
    assert path.undefined in found.failure.detail


@pytest.mark.parametrize("path", PATHS, ids=IDS)
def test_the_served_seed_reference_answers_a_fault_that_agrees(path: Path_) -> None:
    """The seed reference behind the protocol answers its undefined behaviour as a fault
    (the instance gone), which the seed reference on the harness side agrees with."""
    sut = f"{sys.executable} -m statemeta.serve --semantics seed"
    assert _replay(path, sut) is None


def test_a_release_after_a_reopen_is_no_use_after_free_of_the_harness(compiled: str) -> None:
    """The driver forgets its handles at a reopen, as the reference does (before it did, the
    release below reused the pointer to the task the closed meta freed: heap-use-after-free in
    streamMetaReleaseTask, the harness's own, not TDengine's)."""
    ops = [("register", "s1"), ("acquire", "s1"), ("release", "s1"), ("close_reopen", None),
           ("release", "s1")]
    server = TDengineServer(build(tdengine_tree(), default_out()).driver)
    try:
        server.start(3, pool_json())
        for name, slot in ops:
            server.call(name, {} if slot is None else {"task": slot})
        assert server.view()["ids"] == [[0x10, 1]]
    finally:
        server.stop()
