"""The explorer on a cluster (``--cluster``): a local Dask cluster of two worker processes,
started here, finds what the local search finds (states, per-depth counts, rows, the shortest
counterexample, every violation); an engine that is missing or a scheduler that cannot be
reached is one line and exit 2."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

import distributed  # the cluster extra, in the test extra: CI runs these tests
import pytest

from statemeta.cli import main
from statemeta.errors import ClusterError
from statemeta.explore import cluster as cluster_module
from statemeta.explore import search, shipped
from statemeta.explore.bounds import Bounds
from statemeta.explore.cluster import DaskCluster, connect
from statemeta.explore.coverage import report
from statemeta.explore.search import Exploration, ForkableReference, explore
from statemeta.explore.state import StateAbstraction
from statemeta.harness.operations import TASK_POOL, Op
from statemeta.tables import TaskStatus

SMALL = Bounds(stream_tasks=2, fill_history=False, role_changes=1, start_rounds=1, reopens=1,
               faults=0, clock_advances=0, max_depth=3)
SAME = ("states", "transitions", "mirrored_transitions", "states_per_depth", "depth",
        "complete", "lifecycle_rows", "role_rows", "counterexample", "violations")
"""The report's fields a cluster run shares with a local one (not seconds, workers)."""


@pytest.fixture(scope="module")
def address() -> Iterator[str]:
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None,
        host="127.0.0.1",  # loopback only: a test's cluster is no one else's
    ) as local:
        yield local.scheduler_address


@pytest.fixture
def cluster(address: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[DaskCluster]:
    """Connected; every level of at least one state is expanded on it, and each call to the
    cluster is counted in ``cluster.calls``."""
    monkeypatch.setattr(search, "PARALLEL_MIN_STATES", 1)
    with connect(address) as connected:
        calls: list[int] = []
        ship = connected.map

        def counted(function: Callable[[Any], Any], items: Iterable[Any]) -> list[Any]:
            calls.append(1)
            return ship(function, items)

        monkeypatch.setattr(connected, "map", counted)
        connected.calls = calls  # type: ignore[attr-defined]
        yield connected


def _same(local: Exploration, far: Exploration) -> None:
    one, two = report(local), report(far)
    for field in SAME:
        assert one[field] == two[field], field
    assert local.statuses == far.statuses
    assert local.coverage == far.coverage


def test_the_cluster_finds_the_states_the_local_search_finds(cluster: DaskCluster) -> None:
    local = explore(SMALL, keep_paths=True)
    far = explore(SMALL, keep_paths=True, cluster=cluster)
    assert far.complete and far.stats.states > 100
    assert far.leaves == local.leaves  # the paths --sut replays
    assert far.workers == 2 and far.cluster == cluster.address
    assert len(cluster.calls) == SMALL.max_depth  # type: ignore[attr-defined]
    _same(local, far)


def test_the_cluster_finds_the_shortest_counterexample(cluster: DaskCluster) -> None:
    for variant in ("register_without_commit", "release_below_zero"):
        local = explore(SMALL, variant=variant)
        far = explore(SMALL, variant=variant, cluster=cluster)
        assert local.counterexample is not None and far.counterexample is not None
        assert far.counterexample == local.counterexample
        assert far.stats == local.stats
        _same(local, far)


def test_the_cluster_finds_every_violation_of_the_seed(cluster: DaskCluster) -> None:
    local = explore(SMALL, semantics="seed", all_violations=True)
    far = explore(SMALL, semantics="seed", all_violations=True, cluster=cluster)
    assert len(local.violations) >= 2
    assert far.violations == local.violations
    _same(local, far)


def test_explore_and_verify_take_a_cluster_address(
    address: str, capsys: pytest.CaptureFixture[str], tmp_path: Any
) -> None:
    bounds = ["--stream-tasks", "1", "--no-fill-history", "--start-rounds", "0", "--faults",
              "0", "--clock-advances", "0", "--max-depth", "3", "--json"]
    trace = ["--trace", str(tmp_path / "cex.json")]
    variant = ["--variant", "register_without_commit", *trace]
    assert main(["explore", *bounds, *variant]) == 1
    local = json.loads(capsys.readouterr().out)
    assert main(["explore", *bounds, *variant, "--cluster", address]) == 1
    far = json.loads(capsys.readouterr().out)
    assert far["cluster"] == address and local["cluster"] is None
    assert {f: far[f] for f in SAME} == {f: local[f] for f in SAME}
    assert main(["verify", *bounds, "--examples", "1", "--steps", "1", "--cluster", address]) == 0
    assert json.loads(capsys.readouterr().out)["explore"]["cluster"] == address


def _adapter(*ops: Op) -> ForkableReference:
    adapter = ForkableReference()
    adapter.start(3)
    for op in ops:
        adapter.call(op)
    return adapter


def test_a_key_does_not_depend_on_what_its_process_keyed_before() -> None:
    """A cluster's workers key states in processes of their own: one that first saw a record
    decoded from the store (plain ints) and one that first saw it as the reference made it
    (enum members; equal) must name it alike."""
    register = Op.of("register", task="s1")
    reopened = _adapter(register, Op.of("crash_reopen"))
    registered = _adapter(register)
    warmed = StateAbstraction(TASK_POOL, symmetry=True)
    warmed.key(reopened)
    assert warmed.key(registered) == StateAbstraction(TASK_POOL, symmetry=True).key(registered)


def _refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    assert len(captured.err.splitlines()) == 1, captured.err
    return captured.err


def test_an_unreachable_scheduler_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(cluster_module, "CONNECT_SECONDS", 0.5)
    err = _refused(["explore", "--max-depth", "1", "--cluster", "127.0.0.1:9"], capsys)
    assert err.startswith("statemeta explore: error: cluster 127.0.0.1:9: cannot reach")


def test_a_missing_engine_is_one_line_and_exit_2(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setitem(sys.modules, "distributed", None)  # import distributed fails
    with pytest.raises(ClusterError, match=r"statemeta\[cluster\]"):
        connect("127.0.0.1:9")
    err = _refused(["verify", "--max-depth", "1", "--cluster", "127.0.0.1:9"], capsys)
    assert err.startswith("statemeta verify: error: cluster 127.0.0.1:9: needs Dask")


def test_workers_without_this_statemeta_are_refused(
    address: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cluster_module, "version", lambda _name: "0.0.0-elsewhere")  # here only
    with pytest.raises(ClusterError, match="another statemeta"):
        connect(address)


def test_the_tests_cluster_listens_on_loopback_only(address: str) -> None:
    with distributed.Client(address, set_as_default=False) as client:
        workers = list(client.scheduler_info()["workers"])
    assert address.startswith("tcp://127.0.0.1:")
    assert len(workers) == 2 and all(w.startswith("tcp://127.0.0.1:") for w in workers)


def _marker_pickle(marker: Path) -> bytes:
    """A pickle that, loaded, creates ``marker`` (``open(marker, "w")``): it would run code."""
    return b"cbuiltins\nopen\n(V" + str(marker).encode() + b"\nVw\ntR."


def test_a_worker_result_that_would_run_code_is_refused(
    cluster: DaskCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker sends a pickle where a result goes: a ClusterError, and nothing ran."""
    marker = tmp_path / "ran"
    blob = _marker_pickle(marker)
    monkeypatch.setattr(cluster_module, "_call", lambda _shipped: blob)  # shipped by value
    with pytest.raises(ClusterError, match="result 0 is not a result"):
        cluster.map(len, [(1, 2)])
    assert not marker.exists()


def test_a_worker_result_dask_would_unpickle_is_refused(
    cluster: DaskCluster, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A worker sends an object Dask pickles: the client does not unpickle it, and nothing ran."""
    marker = tmp_path / "ran"

    class Hostile:
        def __reduce__(self) -> tuple[Any, ...]:
            return (open, (str(marker), "w"))

    monkeypatch.setattr(cluster_module, "_call", lambda _shipped: Hostile())
    with pytest.raises(ClusterError, match="a worker's task failed"):
        cluster.map(len, [(1, 2)])
    assert not marker.exists()


def test_a_result_is_only_the_records_of_the_table() -> None:
    table = shipped.kinds(search.CLUSTER_RESULTS)
    op = Op.of("register", task="s1")
    value = (op, [frozenset({1}), {"a": None}], TaskStatus.READY)
    assert shipped.decode(shipped.encode(value), table) == value
    for hostile, why in (
        (b'{"r":["Popen",{"args":"id"}]}', "not a class a result may hold"),
        (b'{"x":[]}', "unknown tag"),
        (b'[NaN]', "NaN is not JSON"),
        (b'{"t":[1]', "not JSON"),
        (b"\x80\x04K\x01.", "not JSON"),
    ):
        with pytest.raises(ValueError, match=why):
            shipped.decode(hostile, table)
