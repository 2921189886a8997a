"""Concurrent runs: K clients call one implementation at once; the history is recorded, then
checked against the reference (statemeta.harness.linearizability.reference).

A run is ``rounds`` rounds; in each, every client (one thread each) makes ``ops`` random calls
of the operation table, back to back, and records when it invoked each (monotonic ns, from the
run's start), when it got the response, and the response. Between rounds no call runs: that is
a quiescent point, where the target checks the invariant catalogue. The operations are drawn
from a seeded generator (each client's from its own), so a seed fixes what is called but not
how the calls interleave. Close/crash and reopen are left out: they replace the meta under the
other clients' feet (spec/README.md).
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Sequence
from typing import Protocol

import attrs

from statemeta.errors import InvariantViolation, MisuseError, SutError, UndefinedBehaviour
from statemeta.harness.failure import UNDEFINED
from statemeta.harness.linearizability import DEFAULT_BUDGET, History, Operation, Verdict, check
from statemeta.harness.linearizability.checker import Outcome
from statemeta.harness.linearizability.reference import (
    CONCURRENT_LEVELS,
    Call,
    reference_spec,
    undefined,
)
from statemeta.harness.linearizability.timeline import format_verdict
from statemeta.harness.normalize import Json, check_view_invariants
from statemeta.harness.operations import OP_SPECS, REOPENS, Op, OpSpec, ops_at
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import Failure, Trace
from statemeta.semantics import Semantics

__all__ = [
    "CONTENDED",
    "DEFAULT_CLIENTS",
    "DEFAULT_HISTORIES",
    "DEFAULT_OPS",
    "DEFAULT_ROUNDS",
    "DEFAULT_TASKS",
    "MAX_CLIENTS",
    "NOT_CONCURRENT",
    "ConcurrentTarget",
    "Hunt",
    "InProcess",
    "InProcessClient",
    "OverProtocol",
    "Run",
    "check_run",
    "concurrent_ops",
    "failure_trace",
    "hunt",
    "random_op",
    "recheck",
    "run_concurrent",
]

NOT_CONCURRENT = REOPENS
"""Operations a concurrent run never calls (they replace the meta)."""

DEFAULT_CLIENTS = 3
MAX_CLIENTS = 256
"""The most clients a run has: past a few hundred, one history's linearizability check (a
state per client's call) takes minutes, and the requests in flight at once are K."""
DEFAULT_OPS = 20
"""Calls per client per round."""
DEFAULT_ROUNDS = 2
DEFAULT_HISTORIES = 100
"""How many runs a hunt records before it calls an implementation linearizable."""

DEFAULT_TASKS = ("s1", "s2", "s3")
"""The slots a run's calls name: few, so that the clients contend for them."""


class ConcurrentTarget(Protocol):
    """What a concurrent run drives: an implementation many clients may call at once."""

    def start(self, level: int) -> None: ...

    def play(
        self, plans: Sequence[Sequence[Op]], origin: int
    ) -> tuple[list[Operation[Call, Json]], list[str]]:
        """Client i makes the calls ``plans[i]`` in order, all clients at once; each call as
        recorded (times in ns since ``origin``, on ``time.monotonic_ns``), and what failed (a
        call that failed instead of responding is pending, and its client stops)."""
        ...

    def quiescent(self) -> str | None:
        """No call runs: what invariant is broken, or None."""
        ...

    def stop(self) -> None: ...


class InProcessClient(Protocol):
    """An in-process adapter many threads may call, each for one client (FacadeAdapter)."""

    def start(self, level: int) -> None: ...

    def call_as(self, client: int, op: Op) -> dict[str, Json]: ...

    def quiescent(self) -> str | None: ...

    def stop(self) -> None: ...


class InProcess:
    """An in-process adapter driven by one thread per client."""

    def __init__(self, adapter: InProcessClient) -> None:
        self.adapter = adapter

    def start(self, level: int) -> None:
        self.adapter.start(level)

    def quiescent(self) -> str | None:
        return self.adapter.quiescent()

    def stop(self) -> None:
        self.adapter.stop()

    def play(
        self, plans: Sequence[Sequence[Op]], origin: int
    ) -> tuple[list[Operation[Call, Json]], list[str]]:
        start = threading.Barrier(len(plans))
        gone = threading.Event()
        outs: list[list[Operation[Call, Json]]] = [[] for _ in plans]
        errors: list[str] = []
        threads = [
            threading.Thread(
                target=self._client, args=(client, plan, origin, start, gone, out, errors)
            )
            for client, (plan, out) in enumerate(zip(plans, outs, strict=True))
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return [operation for out in outs for operation in out], errors

    def _client(
        self,
        client: int,
        plan: Sequence[Op],
        origin: int,
        start: threading.Barrier,
        gone: threading.Event,
        out: list[Operation[Call, Json]],
        errors: list[str],
    ) -> None:
        """Play ``plan`` as ``client``. Once a call hits the seed's undefined behaviour the
        process is gone: its result says so, and no client invokes a call after it returned
        (one invoked before is concurrent with it and recorded as it answered)."""
        start.wait()
        for op in plan:
            invoked = time.monotonic_ns() - origin
            if gone.is_set():
                return
            try:
                result = self.adapter.call_as(client, op)
            except UndefinedBehaviour as behaviour:
                gone.set()
                returned = time.monotonic_ns() - origin
                answer: Json = {UNDEFINED: str(behaviour)}
                out.append(Operation(client, invoked, returned, Call(client, op), answer))
                return
            except Exception as error:  # the run goes on; the call never responded
                errors.append(f"client {client}: {op!r} raised {type(error).__name__}: {error}")
                out.append(Operation(client, invoked, None, Call(client, op)))
                return
            returned = time.monotonic_ns() - origin
            out.append(Operation(client, invoked, returned, Call(client, op), result))


class OverProtocol:
    """An implementation that declared ``concurrent``, over the harness protocol: each client
    has one request in flight, sent as soon as its previous one is answered."""

    def __init__(self, sut: SubprocessAdapter) -> None:
        self.sut = sut

    def start(self, level: int) -> None:
        self.sut.start(level)

    def stop(self) -> None:
        self.sut.stop()

    def quiescent(self) -> str | None:
        try:
            check_view_invariants(self.sut.view())
        except (InvariantViolation, MisuseError) as violation:  # broken, or not a view
            return str(violation)
        return None

    def play(
        self, plans: Sequence[Sequence[Op]], origin: int
    ) -> tuple[list[Operation[Call, Json]], list[str]]:
        out: list[Operation[Call, Json]] = []
        in_flight: dict[int, tuple[int, int, Op]] = {}
        done = [0] * len(plans)

        def send(client: int) -> None:
            op = plans[client][done[client]]
            invoked = time.monotonic_ns() - origin
            in_flight[self.sut.send(op, client)] = (client, invoked, op)

        try:
            for client, plan in enumerate(plans):
                if plan:
                    send(client)
            while in_flight:
                request_id, result = self.sut.receive()
                returned = time.monotonic_ns() - origin
                client, invoked, op = in_flight.pop(request_id)
                out.append(Operation(client, invoked, returned, Call(client, op), result))
                done[client] += 1
                if done[client] < len(plans[client]):
                    send(client)
        except SutError as error:
            out.extend(
                Operation(client, invoked, None, Call(client, op))
                for client, invoked, op in in_flight.values()
            )
            return out, [str(error)]
        return out, []


def concurrent_ops(level: int) -> tuple[OpSpec, ...]:
    """The operations a concurrent run at ``level`` draws from."""
    if level not in CONCURRENT_LEVELS:
        raise MisuseError(f"concurrent runs are at levels {CONCURRENT_LEVELS}, not {level}")
    return tuple(s for s in ops_at(level) if s.name not in NOT_CONCURRENT)


CONTENDED: dict[str, int] = {
    s.name: s.concurrent_weight for s in OP_SPECS.values() if s.concurrent_weight > 1
}
"""The operations a run calls more often than the others, by how much (the
``concurrent_weight`` column): those that change the list, the map and the references, and
the ones that start heartbeats; races are between them."""


def random_op(rng: random.Random, specs: Sequence[OpSpec], tasks: Sequence[str]) -> Op:
    """One operation (``CONTENDED`` ones more often), with arguments drawn from their domains
    (tasks from ``tasks``)."""
    spec = rng.choices(specs, [s.concurrent_weight for s in specs])[0]
    return Op.of(
        spec.name,
        **{
            p.name: rng.choice(tasks if p.kind == "task" else p.domain)
            for p in spec.params
        },
    )


@attrs.frozen
class Run:
    """A recorded concurrent run."""

    history: History[Call, Json]
    level: int
    violations: tuple[str, ...] = ()
    """What the invariant check found broken at a quiescent point (one line per finding)."""
    errors: tuple[str, ...] = ()
    """Calls that raised instead of responding (the call is pending in the history)."""


def run_concurrent(
    target: ConcurrentTarget,
    *,
    level: int = 2,
    clients: int = DEFAULT_CLIENTS,
    ops: int = DEFAULT_OPS,
    rounds: int = DEFAULT_ROUNDS,
    seed: int = 0,
    tasks: Sequence[str] = DEFAULT_TASKS,
) -> Run:
    """Start ``target`` at ``level`` and record ``rounds`` rounds of ``clients`` x ``ops`` calls."""
    if not 1 <= clients <= MAX_CLIENTS or ops < 0 or rounds < 1:
        raise MisuseError(
            f"a concurrent run needs 1 <= clients <= {MAX_CLIENTS}, ops >= 0, rounds >= 1; "
            f"got {clients}, {ops}, {rounds}"
        )
    specs = concurrent_ops(level)
    rngs = [random.Random(f"{seed}/{client}") for client in range(clients)]
    target.start(level)
    operations: list[Operation[Call, Json]] = []
    violations: list[str] = []
    errors: list[str] = []
    origin = time.monotonic_ns()
    try:
        for round_ in range(rounds):
            plans = [[random_op(rng, specs, tasks) for _ in range(ops)] for rng in rngs]
            played, failed = target.play(plans, origin)
            operations.extend(played)
            errors.extend(failed)
            if failed or any(undefined(operation) for operation in played):
                break  # no process to check or to go on with
            broken = target.quiescent()
            if broken is not None:
                violations.append(f"after round {round_}: {broken}")
    finally:
        target.stop()
    return Run(History(tuple(operations)), level, tuple(violations), tuple(errors))


def check_run(
    run: Run,
    *,
    semantics: Semantics | str = Semantics.INTENDED,
    budget: int = DEFAULT_BUDGET,
    shrink: bool = True,
) -> Verdict:
    """Is the run's history linearizable with respect to the reference in ``semantics``?"""
    return check(reference_spec(run.level, semantics), run.history, budget=budget, shrink=shrink)


@attrs.frozen
class Hunt:
    """The outcome of running histories until one fails."""

    runs: int
    """Histories recorded (the last is the failing one, if any)."""
    run: Run | None = None
    verdict: Verdict | None = None
    """The failing run's verdict (None when the failure is an invariant or an error alone)."""

    @property
    def failed(self) -> bool:
        return self.run is not None


def hunt(
    target: Callable[[], ConcurrentTarget],
    *,
    histories: int = DEFAULT_HISTORIES,
    seed: int = 0,
    semantics: Semantics | str = Semantics.INTENDED,
    budget: int = DEFAULT_BUDGET,
    level: int = 2,
    clients: int = DEFAULT_CLIENTS,
    ops: int = DEFAULT_OPS,
    rounds: int = DEFAULT_ROUNDS,
    tasks: Sequence[str] = DEFAULT_TASKS,
    checked: Callable[[], None] | None = None,
) -> Hunt:
    """Record and check up to ``histories`` runs (seeds ``seed``, ``seed + 1``, ...) on fresh
    targets (the run's options as ``run_concurrent``'s; ``checked`` is called after each run's
    check, a progress meter's tick); stop at the first that is not
    linearizable, breaks an invariant (intended semantics only: the seed breaks some on purpose,
    spec/divergences.md) or raises. A run whose check runs out of budget (UNKNOWN) does not
    count as a failure."""
    keeps_invariants = Semantics.of(semantics) is Semantics.INTENDED  # the seed breaks some
    for index in range(histories):
        run = run_concurrent(
            target(), level=level, clients=clients, ops=ops, rounds=rounds, seed=seed + index,
            tasks=tasks,
        )
        verdict = check_run(run, semantics=semantics, budget=budget)
        if checked is not None:
            checked()
        if verdict.outcome is Outcome.NOT_LINEARIZABLE:
            return Hunt(index + 1, run, verdict)
        if run.errors or (run.violations and keeps_invariants):
            return Hunt(index + 1, run, None)
    return Hunt(histories, None, None)


def failure_trace(
    run: Run,
    verdict: Verdict | None,
    *,
    sut: str,
    seed: int | None,
    semantics: Semantics | str = Semantics.INTENDED,
) -> Trace:
    """The trace of a failed run: for a linearizability failure, the counterexample as seen at
    the time it fails (what ``recheck`` checks again); for a broken invariant or a call that
    raised, the whole history and what was found."""
    semantics = Semantics.of(semantics)
    if verdict is not None and verdict.outcome is Outcome.NOT_LINEARIZABLE:
        shown = run.history.select(verdict.counterexample, verdict.failed_at)
        again = check(reference_spec(run.level, semantics), shown)
        failure = Failure("linearizability", format_verdict(again, shown))
        return Trace(run.level, sut, (), failure, seed, semantics, history=shown)
    kind = "invariant" if run.violations else "sut"
    failure = Failure(kind, "\n".join(run.violations + run.errors))
    return Trace(run.level, sut, (), failure, seed, semantics, history=run.history)


def recheck(
    trace: Trace, *, semantics: Semantics | str | None = None, budget: int = DEFAULT_BUDGET
) -> Verdict:
    """The trace's history checked again against the reference (in the trace's semantics
    unless ``semantics`` says otherwise)."""
    if trace.history is None:
        raise MisuseError("the trace has no concurrent history (it was not written by a "
                          "concurrent run): replay it without --concurrent")
    spec = reference_spec(trace.level, semantics or trace.semantics)
    return check(spec, trace.history, budget=budget)
