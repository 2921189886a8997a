"""Mutation analysis of the reference: the harness's power, measured without a bias of ours.

Every mutant of the reference's code that changes observable behaviour is a bug an
implementation could have; one ``run_check`` does not catch is a behaviour the harness cannot
see (issue 33). For each mutant (statemeta.harness.mutants) a worker process loads a copy of
the mutated module and of every module above it (statemeta.harness.shadow), serves that copy's
``ReferenceAdapter`` as the implementation, and checks it against the unmutated reference at
``run_check``'s defaults (100 examples of at most 50 steps): first the directed phase at each
of the module's levels (MODULES), lowest first; then, only if none diverged, the random phase
at the highest of them. The first divergence kills the mutant. One that survives and is listed
in spec/equivalent-mutants.toml (with why it cannot change what an implementation shows) is
equivalent; one whose module does not import, or that runs past the timeout, is an error.

``analyse`` runs the mutants on a pool of forked workers (ended with the command: a signal in
the parent kills them, and each dies with its parent); ``MutationReport`` is the result,
scored per module as killed / (killed + survived).
"""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from pathlib import Path
from types import CodeType, FrameType
from typing import Any, Literal

import attrs

from statemeta.errors import MisuseError, SpecError
from statemeta.harness.check import check_settings, run_check, unchecked_reference
from statemeta.harness.directed import counting_reference, load_corpus, run_directed
from statemeta.harness.keeper import die_with_parent
from statemeta.harness.mutants import Mutant, module_path, mutants_of, mutated_tree
from statemeta.harness.normalize import Json
from statemeta.harness.operations import Op
from statemeta.harness.shadow import ImportGraph, Shadow
from statemeta.interrupts import raise_if_interrupted
from statemeta.semantics import Semantics
from statemeta.tables import read_spec, spec_dir

__all__ = [
    "EQUIVALENTS_FILE",
    "MODULES",
    "NEEDS",
    "Listed",
    "MutantResult",
    "MutationReport",
    "analyse",
    "first_kill",
    "load_listed",
    "run_mutant",
    "select_mutants",
]

MODULES: dict[str, tuple[int, ...]] = {
    "statemeta.meta.core": (2, 3),
    "statemeta.meta.registry": (2, 3),
    "statemeta.meta.restart": (2, 3),
    "statemeta.meta.entry": (2, 3),
    "statemeta.meta.preconditions": (2, 3),
    "statemeta.meta.state": (2, 3),
    "statemeta.lifecycle": (1, 2, 3),
    "statemeta.meta.heartbeat": (2, 3),
    "statemeta.meta.clock": (2, 3),
    "statemeta.meta.stream_meta": (2, 3),
    "statemeta.meta.starting": (2, 3),
    "statemeta.meta.start_round": (2, 3),
    "statemeta.meta.launch": (2, 3),
    "statemeta.meta.persist": (2, 3),
    "statemeta.codec.task": (2, 3),
    "statemeta.codec.heartbeat": (2, 3),
    "statemeta.codec.key": (2, 3),
}
"""The modules of issue 33 item 1 (the meta core, the lifecycle, the heartbeat and the timers,
the start round and the launch, persistence, the codec's meta-facing parts), each with the
levels whose directed corpus runs against its mutants (the lifecycle alone is level 1; levels
2 and 3 hold the meta, 3 adds reopen, crashes and faults). The random phase runs at the last."""

EQUIVALENTS_FILE = "equivalent-mutants.toml"
"""In spec/ (statemeta.tables.spec_dir): the equivalent mutants, each with its reason."""
EXAMPLES = 100
STEPS = 50
"""run_check's defaults (``statemeta check``'s): what a mutant is checked with."""
DEFAULT_TIMEOUT = 600.0
"""Seconds one mutant may run (its import and both phases) before it is an error."""

Status = Literal["killed", "survived", "equivalent", "error"]
Phase = Literal["directed", "random"]


@attrs.frozen
class MutantResult:
    """What became of one mutant: ``phase`` and ``level`` say what killed it; ``detail`` the
    failure's kind (killed), the error (error) or the listed reason (equivalent)."""

    id: str
    module: str
    diff: str
    status: Status
    phase: Phase | None = None
    level: int | None = None
    detail: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Json]:
        return {
            "id": self.id, "module": self.module, "status": self.status, "phase": self.phase,
            "level": self.level, "detail": self.detail, "seconds": round(self.seconds, 3),
            "diff": self.diff,
        }


@attrs.frozen
class MutationReport:
    """Every mutant's result, in the order run."""

    results: tuple[MutantResult, ...]
    seconds: float
    workers: int
    interrupted: bool = False

    def counts(self, module: str | None = None) -> dict[str, int]:
        """How many mutants ended in each status (of ``module``; None: of all)."""
        counts = dict.fromkeys(("mutants", "killed", "survived", "equivalent", "error"), 0)
        for result in self.results:
            if module is None or result.module == module:
                counts["mutants"] += 1
                counts[result.status] += 1
        return counts

    def score(self, module: str | None = None) -> float | None:
        """killed / (killed + survived): the share of the non-equivalent mutants caught."""
        counts = self.counts(module)
        judged = counts["killed"] + counts["survived"]
        return None if judged == 0 else counts["killed"] / judged

    @property
    def modules(self) -> list[str]:
        return sorted({r.module for r in self.results})

    def survivors(self) -> list[MutantResult]:
        return [r for r in self.results if r.status == "survived"]

    def to_json(self) -> dict[str, Json]:
        per_module: dict[str, Json] = {
            m: {**self.counts(m), "score": self.score(m)} for m in self.modules
        }
        return {
            "counts": {**self.counts(), "score": self.score()},
            "modules": per_module,
            "seconds": round(self.seconds, 3),
            "workers": self.workers,
            "interrupted": self.interrupted,
            "mutants": [r.to_json() for r in self.results],
        }


NEEDS = ("clock", "heartbeat", "reopen", "other")
"""What an open survivor needs the harness to see (issue 33 item 2): deadlines and tick
boundaries, heartbeat contents beyond entries, state across load and reopen, anything else."""


@attrs.frozen
class Listed:
    """spec/equivalent-mutants.toml: the equivalent mutants, each with why no implementation
    could tell it from the reference, and the open survivors (real gaps of the harness, each
    with what it needs), kept until the harness kills them."""

    equivalent: dict[str, str]
    open: dict[str, tuple[str, str]]
    """id -> (one of NEEDS, why)."""


def load_listed(path: Path | None = None) -> Listed:
    """spec/equivalent-mutants.toml, or ``path`` (SpecError naming the file if malformed)."""
    path = spec_dir() / EQUIVALENTS_FILE if path is None else path
    doc = read_spec(path)
    seen: set[str] = set()

    def rows(table: str, keys: set[str]) -> list[dict[str, str]]:
        found = doc.get(table, [])
        for row in found:
            if not isinstance(row, dict) or set(row) != keys:
                raise SpecError(f"{path}: each [[{table}]] has exactly {sorted(keys)}: {row}")
            if row["id"] in seen:
                raise SpecError(f"{path}: mutant {row['id']} is listed twice")
            seen.add(row["id"])
            if table == "open" and row["needs"] not in NEEDS:
                raise SpecError(f"{path}: {row['id']}: needs is one of {NEEDS}")
        return list(found)

    return Listed(
        {r["id"]: r["reason"] for r in rows("equivalent", {"id", "reason"})},
        {r["id"]: (r["needs"], r["reason"]) for r in rows("open", {"id", "needs", "reason"})},
    )


def select_mutants(
    modules: Sequence[str] | None = None, *, sample: int | None = None, seed: int = 0
) -> list[Mutant]:
    """The mutants of ``modules`` (None: all of MODULES), or a sample of ``sample`` of them
    drawn with ``seed``, in module order."""
    chosen = list(MODULES) if modules is None else list(modules)
    for module in chosen:
        if module not in MODULES:
            raise MisuseError(f"no module {module!r} under mutation; they are {sorted(MODULES)}")
    everything = [m for module in chosen for m in mutants_of(module)]
    if sample is not None and sample < len(everything):
        picked = set(random.Random(seed).sample(range(len(everything)), sample))
        everything = [m for i, m in enumerate(everything) if i in picked]
    return everything


class MutantAdapter:
    """A copy's ReferenceAdapter as the implementation: the harness's Op rebuilt as the
    copy's own (its enums may be the copy's), and a crash of the mutant an error result (a
    behaviour the reference never shows), never an exception out of the harness."""

    def __init__(self, reference_module: Any, operations_module: Any, name: str) -> None:
        self.inner = reference_module.ReferenceAdapter(check_invariants=False)
        self.op_class = operations_module.Op
        self.name = name

    def hello(self) -> dict[str, Json]:
        hello: dict[str, Json] = self.inner.hello()
        return {**hello, "name": self.name}

    def start(self, level: int) -> None:
        self.inner.start(level)

    def call(self, op: Op) -> dict[str, Json]:
        try:
            result: dict[str, Json] = self.inner.call(self.op_class(op.name, op.args))
        except Exception as e:  # the mutant's crash is one of its behaviours
            return {"error": f"crash:{type(e).__name__}"}
        return result

    def view(self) -> dict[str, Json]:
        try:
            view: dict[str, Json] = self.inner.view()
        except Exception as e:
            return {"crash": type(e).__name__}
        return view

    def stop(self) -> None:
        self.inner.stop()


class _Timeout(BaseException):
    """The mutant ran past its time (a BaseException: no ``except Exception`` takes it)."""


_GRAPH: list[ImportGraph] = []
_CODE_CACHE: dict[tuple[str, frozenset[str]], CodeType] = {}


def run_mutant(
    mutant: Mutant,
    *,
    seed: int,
    equivalents: dict[str, str],
    timeout: float = DEFAULT_TIMEOUT,
    random_phase: bool = True,
) -> MutantResult:
    """Check one mutant (in this process; the caller's SIGALRM is borrowed for the timeout)."""
    if not _GRAPH:
        _GRAPH.append(ImportGraph())
    began = time.perf_counter()
    source = module_path(mutant.module).read_text()
    diff = mutant.diff(source)

    def result(status: Status, **fields: Any) -> MutantResult:
        return MutantResult(mutant.id, mutant.module, diff, status,
                            seconds=time.perf_counter() - began, **fields)

    def alarm(signum: int, frame: FrameType | None) -> None:
        raise _Timeout

    previous = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout)
    try:
        with Shadow(_GRAPH[0], mutant.module, mutated_tree(source, mutant), _CODE_CACHE) as copy:
            try:
                sut = MutantAdapter(copy.load("statemeta.harness.reference"),
                                    copy.load("statemeta.harness.operations"),
                                    f"statemeta-mutant[{mutant.id}]")
            except Exception as e:
                return result("error", detail=f"import: {type(e).__name__}: {e}")
            killed = first_kill(sut, MODULES[mutant.module], seed, random_phase)
    except _Timeout:
        return result("error", detail=f"timeout: past {timeout:g} s")
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    if killed is not None:
        phase, level, kind = killed
        return result("killed", phase=phase, level=level, detail=kind)
    if mutant.id in equivalents:
        return result("equivalent", detail=equivalents[mutant.id])
    return result("survived")


def first_kill(
    sut: MutantAdapter, levels: tuple[int, ...], seed: int, random_phase: bool
) -> tuple[Phase, int, str] | None:
    """The phase, level and failure kind of the first divergence (None: none). The directed
    phase is run_check's (its corpus, its reference) without the shrinking of what it finds:
    a mutant needs a verdict, not a shortest trace."""
    for level in levels:
        reference = counting_reference(unchecked_reference(Semantics.INTENDED), Counter())
        try:
            found = run_directed(load_corpus(level, Semantics.INTENDED), sut=sut,
                                 reference=reference).divergence
        except Exception as e:  # the harness met something it could not compare
            return "directed", level, f"crash: {type(e).__name__}"
        finally:
            sut.stop()
        if found is not None:
            return "directed", level, found.failure.kind
    if not random_phase:
        return None
    level = levels[-1]
    try:
        report = run_check(sut, level=level, hypothesis_settings=check_settings(EXAMPLES, STEPS),
                           sut_label=sut.name, seed_value=seed, directed=False)
    except Exception as e:
        return "random", level, f"crash: {type(e).__name__}"
    finally:
        sut.stop()
    return None if report.trace is None else ("random", level, report.trace.failure.kind)


def _worker_started(parent: int) -> None:
    """In a forked worker: it dies with its parent, and leaves SIGINT to it."""
    die_with_parent(parent)
    signal.signal(signal.SIGINT, signal.SIG_IGN)


_POLL = 0.5
"""Seconds between two looks at the signals while the pool works."""


def analyse(
    mutants: Iterable[Mutant],
    *,
    seed: int,
    workers: int = 1,
    timeout: float = DEFAULT_TIMEOUT,
    random_phase: bool = True,
    equivalents: dict[str, str] | None = None,
    done: Callable[[MutantResult, int, int], None] | None = None,
) -> MutationReport:
    """Check every mutant on ``workers`` forked processes; ``done(result, n, total)`` after
    each. An ending signal (Interrupted) kills the workers and propagates."""
    todo = list(mutants)
    listed = load_listed().equivalent if equivalents is None else equivalents
    began = time.perf_counter()
    results: list[MutantResult] = []
    others = set(multiprocessing.active_children())
    pool = ProcessPoolExecutor(
        workers, mp_context=multiprocessing.get_context("fork"),
        initializer=_worker_started, initargs=(os.getpid(),),
    )
    try:
        jobs: dict[Future[MutantResult], int] = {
            pool.submit(run_mutant, m, seed=seed, equivalents=listed, timeout=timeout,
                        random_phase=random_phase): i
            for i, m in enumerate(todo)
        }
        pending = set(jobs)
        while pending:
            finished, pending = wait(pending, _POLL, return_when=FIRST_COMPLETED)
            for job in sorted(finished, key=jobs.__getitem__):
                results.append(job.result())
                if done is not None:
                    done(results[-1], len(results), len(todo))
            raise_if_interrupted()
    except BaseException:
        for worker in set(multiprocessing.active_children()) - others:
            worker.kill()
        raise
    finally:
        pool.shutdown(cancel_futures=True)
    order = {m.id: i for i, m in enumerate(todo)}
    results.sort(key=lambda r: order[r.id])
    return MutationReport(tuple(results), time.perf_counter() - began, workers)
