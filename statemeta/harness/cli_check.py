"""``statemeta check`` and ``statemeta replay``: conformance of any implementation to the reference.

``run_check`` is the one way a conformance run happens (the CLI and the pytest plugin call it):
the differential machine of statemeta.harness.machine drives the reference and the
implementation side by side under Hypothesis, which searches for a divergence; its trace is
then shrunk by deleting operations (statemeta.harness.minimize says why not by Hypothesis).
An implementation that breaks the protocol stops the run at once (no shrinking: each replay
of a hung one would cost a timeout) with the steps so far.

Exit codes of both commands: 0 conformant (replay: the trace passes now), 1 a divergence, an
invariant violation or a broken implementation (trace written, path printed), 2 could not run
(a command that does not start, a failed handshake, a level it does not support, a bad trace),
128 + N interrupted by signal N (SIGTERM, SIGINT, SIGHUP: the implementation's process tree is
ended first, and one line says so).
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import random
import shlex
import signal
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

import attrs
from hypothesis import HealthCheck, Verbosity, settings
from hypothesis.errors import FlakyFailure

from statemeta.cli_args import (
    add_semantics,
    command_line,
    output_file,
    positive_int,
    seconds,
)
from statemeta.errors import MisuseError, SutAborted, SutError
from statemeta.harness.adapter import Adapter
from statemeta.harness.concurrent_run import Hunt, OverProtocol, failure_trace, hunt, recheck
from statemeta.harness.linearizability import Outcome as LinOutcome
from statemeta.harness.linearizability import format_verdict
from statemeta.harness.machine import Divergence, build_machine, run_machine
from statemeta.harness.minimize import minimize, without_shrinking
from statemeta.harness.operations import LEVELS, Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import (
    RecordingAdapter,
    Trace,
    divergence_trace,
    format_trace,
    read_trace,
    replay,
    sut_error_trace,
    write_trace,
)
from statemeta.semantics import Semantics

__all__ = [
    "COMMANDS",
    "EXIT_CONFORMANT",
    "EXIT_COULD_NOT_RUN",
    "EXIT_FAILED",
    "CheckReport",
    "Progress",
    "check_settings",
    "configure_check",
    "configure_replay",
    "run_check",
    "run_check_command",
    "run_replay_command",
]

EXIT_CONFORMANT = 0
EXIT_FAILED = 1
EXIT_COULD_NOT_RUN = 2


@attrs.frozen
class CheckReport:
    """What a conformance run found: ``trace`` is None when the implementation conforms."""

    trace: Trace | None
    examples: int
    steps: int
    seconds: float
    seed_violations: dict[str, int] = attrs.field(factory=dict)
    """Steps at which the reference itself broke each view invariant (the seed's own)."""


class Progress:
    """Counts examples and steps; on long runs prints a line every ``interval`` seconds."""

    def __init__(self, out: TextIO | None, *, interval: float = 2.0) -> None:
        self.out = out
        self.interval = interval
        self.examples = 0
        self.steps = 0
        self.example_steps = 0
        """Steps of the example running (the one running included)."""
        self.began = time.monotonic()
        self._next = self.began + interval

    def example(self) -> None:
        self.examples += 1
        self.example_steps = 0
        self._tick()

    def step(self) -> None:
        self.steps += 1
        self.example_steps += 1
        self._tick()

    @property
    def seconds(self) -> float:
        return time.monotonic() - self.began

    def _tick(self) -> None:
        now = time.monotonic()
        if self.out is not None and now >= self._next:
            self._next = now + self.interval
            rate = self.steps / max(now - self.began, 1e-9)
            print(
                f"  ... {self.examples} examples, {self.steps} steps ({rate:.0f} steps/s)",
                file=self.out,
                flush=True,
            )


class _CountingAdapter(RecordingAdapter):
    """The run's view of the implementation: records, aborts on SutError, counts progress."""

    def __init__(self, inner: Adapter, progress: Progress) -> None:
        super().__init__(inner)
        self.progress = progress

    def start(self, level: int) -> None:
        self.progress.example()
        super().start(level)

    def call(self, op: Op) -> dict[str, Any]:
        self.progress.step()
        return super().call(op)


def run_check(
    sut: Adapter,
    *,
    level: int,
    hypothesis_settings: settings,
    sut_label: str,
    seed_value: int | None = None,
    progress: Progress | None = None,
    semantics: Semantics | str = Semantics.INTENDED,
) -> CheckReport:
    """Runs the differential machine at ``level`` against ``sut`` (started, not closed here),
    with the reference in ``semantics``."""
    progress = progress or Progress(None)
    counting = _CountingAdapter(sut, progress)
    semantics = Semantics.of(semantics)
    reference = unchecked_reference(semantics)
    machine = build_machine(
        level,
        sut=counting,
        reference=reference,
        name=f"Conformance{level}",
        max_ops=hypothesis_settings.stateful_step_count,  # --steps: operations per example
    )

    def report(trace: Trace | None) -> CheckReport:
        seeds = dict(sorted(machine.seed_violations.items()))  # type: ignore[attr-defined]
        return CheckReport(trace, progress.examples, progress.steps, progress.seconds, seeds)

    try:
        run_machine(machine, without_shrinking(hypothesis_settings), seed_value=seed_value)
    except SutAborted as aborted:
        done = machine.last_steps  # type: ignore[attr-defined]
        trace = sut_error_trace(
            aborted.error,
            done,
            counting.ops,
            level=level,
            sut=sut_label,
            seed=seed_value,
            semantics=semantics,
        )
        return report(trace)
    except Divergence as divergence:
        found = [divergence]
    except FlakyFailure as flaky:
        found = [e for e in flaky.exceptions if isinstance(e, Divergence)]
        if not found:
            raise
    else:
        return report(None)
    trace = divergence_trace(
        found[0], level=level, sut=sut_label, seed=seed_value, semantics=semantics
    )
    return report(minimize(trace, sut=sut, reference=reference))


def unchecked_reference(semantics: Semantics) -> Callable[[], ReferenceAdapter]:
    """Makes the reference without its own check mode: the property suite vouches for it, and
    the machine checks the invariants on the implementation's view (3x faster at levels 2-3)."""
    return functools.partial(ReferenceAdapter, check_invariants=False, semantics=semantics)


def check_settings(examples: int, steps: int) -> settings:
    """Hypothesis settings of a command-line run: bounded, quiet, no example database."""
    return settings(
        max_examples=examples,
        stateful_step_count=steps,
        deadline=None,
        database=None,
        derandomize=False,
        print_blob=False,
        report_multiple_bugs=False,
        verbosity=Verbosity.quiet,
        suppress_health_check=list(HealthCheck),
    )


# -- the commands ---------------------------------------------------------------------------------


def _add_sut(parser: argparse.ArgumentParser, *, required: bool) -> None:
    parser.add_argument(
        "--sut",
        required=required,
        type=command_line,
        metavar="CMD",
        help="the implementation's command line (split like a shell, run without one)",
    )
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=5.0,
        metavar="S",
        help="seconds to wait for each response (default: %(default)s)",
    )


def configure_check(parser: argparse.ArgumentParser) -> None:
    _add_sut(parser, required=True)
    add_semantics(parser, default=Semantics.INTENDED.value)
    parser.add_argument("--level", type=int, choices=LEVELS, default=2, help="default: 2")
    parser.add_argument("--examples", type=positive_int, default=100, help="default: 100")
    parser.add_argument(
        "--steps", type=positive_int, default=50, help="operations per example, at most (50)"
    )
    parser.add_argument("--seed", type=int, help="the run's seed (default: random, printed)")
    parser.add_argument(
        "--concurrent",
        type=positive_int,
        metavar="K",
        help="K clients at once (the implementation must declare concurrent): --examples "
        "histories of 2 rounds of --steps calls per client, each checked for linearizability",
    )
    parser.add_argument(
        "--trace-out",
        type=output_file,
        default=Path("statemeta-trace.json"),
        metavar="FILE",
        help="where a failure's trace goes (default: %(default)s)",
    )


def configure_replay(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("trace", type=Path, metavar="TRACE", help="a trace written by check")
    _add_sut(parser, required=False)
    add_semantics(parser, default=None)
    parser.add_argument(
        "--concurrent",
        action="store_true",
        help="check the trace's concurrent history against the reference again (no "
        "implementation runs: an interleaving cannot be replayed)",
    )


def _handshake(sut: SubprocessAdapter, level: int) -> str | None:
    """Why the implementation cannot be checked at ``level`` (None: it can)."""
    try:
        hello = sut.hello()
    except SutError as error:
        return f"could not run: {error}"
    if level not in hello["levels"]:
        return f"could not run: {hello['name']} supports levels {hello['levels']}, not {level}"
    return None


class Interrupted(BaseException):
    """The run got SIGTERM, SIGINT or SIGHUP. Not an Exception, so that Hypothesis passes it on
    at once (as SutAborted); on the way out the implementation's process tree is ended."""

    def __init__(self, signum: int) -> None:
        self.signum = signum
        super().__init__(signal.Signals(signum).name)


_ENDING_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)


@contextlib.contextmanager
def _interruptible() -> Iterator[list[int]]:
    """While the body runs, the first SIGTERM, SIGINT or SIGHUP raises Interrupted (later ones
    are ignored: the tree is being ended); yields the list that then holds the signal."""
    received: list[int] = []

    def interrupt(signum: int, frame: FrameType | None) -> None:
        if not received:
            received.append(signum)
            raise Interrupted(signum)

    previous = {number: signal.signal(number, interrupt) for number in _ENDING_SIGNALS}
    try:
        yield received
    except Interrupted:
        pass
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _interrupted(received: list[int], command: str) -> int:
    """Says the run was interrupted (its implementation's tree is ended by now)."""
    name = signal.Signals(received[0]).name
    print(f"interrupted by {name}: ended {command!r} and every process it started", file=sys.stderr)
    return 128 + received[0]


def run_check_command(args: argparse.Namespace) -> int:
    """``statemeta check``."""
    seed_value = args.seed if args.seed is not None else random.randrange(2**32)
    if args.concurrent is not None:
        return _check_concurrent(args, seed_value)
    report: CheckReport | None = None
    with _interruptible() as received, SubprocessAdapter(args.sut, timeout=args.timeout) as sut:
        problem = _handshake(sut, args.level)
        if problem:
            print(problem, file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        hello = sut.hello()
        declared = hello.get("semantics", Semantics.INTENDED.value)
        print(
            f"checking {hello['name']} ({args.sut}, declares {declared} semantics) at level "
            f"{args.level} against the {args.semantics} semantics: {args.examples} examples of "
            f"up to {args.steps} steps, seed {seed_value}",
            flush=True,
        )
        report = run_check(
            sut,
            level=args.level,
            hypothesis_settings=check_settings(args.examples, args.steps),
            sut_label=args.sut,
            seed_value=seed_value,
            progress=Progress(sys.stdout),
            semantics=args.semantics,
        )
    if received:
        return _interrupted(received, args.sut)
    assert report is not None
    rate = report.steps / max(report.seconds, 1e-9)
    summary = f"{report.examples} examples, {report.steps} steps in {report.seconds:.1f} s "
    summary += f"({rate:.0f} steps/s)"
    summary += _own_violations(report.seed_violations, args.semantics)
    if report.trace is None:
        print(f"conformant: {summary}")
        return EXIT_CONFORMANT
    write_trace(report.trace, args.trace_out)
    print(format_trace(report.trace))
    print(f"\nNOT conformant ({summary}); trace written to {args.trace_out}")
    print(f"replay it: statemeta replay {args.trace_out} --sut {shlex.quote(args.sut)}"
          f" --semantics {args.semantics}")
    return EXIT_FAILED


def _check_concurrent(args: argparse.Namespace, seed_value: int) -> int:
    """``statemeta check --concurrent K``."""
    found: Hunt | None = None
    with _interruptible() as received, SubprocessAdapter(args.sut, timeout=args.timeout) as sut:
        problem = _handshake(sut, args.level)
        if problem is None and not sut.concurrent:
            problem = f"could not run: {sut.hello()['name']} does not declare concurrent in hello"
        if problem:
            print(problem, file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        print(
            f"checking {sut.hello()['name']} ({args.sut}) at level {args.level} for "
            f"linearizability against the {args.semantics} semantics: {args.examples} histories "
            f"of {args.concurrent} clients x 2 rounds x {args.steps} calls, seeds from "
            f"{seed_value}",
            flush=True,
        )
        began = time.monotonic()
        found = hunt(
            lambda: OverProtocol(sut),
            histories=args.examples,
            seed=seed_value,
            semantics=args.semantics,
            level=args.level,
            clients=args.concurrent,
            ops=args.steps,
        )
    if received:
        return _interrupted(received, args.sut)
    assert found is not None
    summary = f"{found.runs} histories in {time.monotonic() - began:.1f} s"
    if found.run is None:
        print(f"linearizable: {summary}")
        return EXIT_CONFORMANT
    trace = failure_trace(
        found.run,
        found.verdict,
        sut=args.sut,
        seed=seed_value + found.runs - 1,
        semantics=args.semantics,
    )
    write_trace(trace, args.trace_out)
    print(format_trace(trace))
    print(f"\nNOT linearizable ({summary}); trace written to {args.trace_out}")
    print(f"check it again: statemeta replay {args.trace_out} --concurrent")
    return EXIT_FAILED


def _own_violations(counts: dict[str, int], semantics: str) -> str:
    """The summary's note of the invariants the reference itself broke (the seed's defects)."""
    if not counts:
        return ""
    listed = ", ".join(f"{i} {n}" for i, n in counts.items())
    return f"; invariant violations of the {semantics} reference itself: {listed}"


def run_replay_command(args: argparse.Namespace) -> int:
    """``statemeta replay``."""
    try:
        recorded = read_trace(args.trace)
    except MisuseError as error:
        print(f"could not run: {error}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    if args.concurrent:
        return _recheck(recorded, args)
    command = args.sut or recorded.sut
    trace: Trace | None = None
    with _interruptible() as received, SubprocessAdapter(command, timeout=args.timeout) as sut:
        problem = _handshake(sut, recorded.level)
        if problem:
            print(problem, file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        semantics = Semantics.of(args.semantics or recorded.semantics)
        reference = functools.partial(ReferenceAdapter, semantics=semantics)
        own: Counter[str] = Counter()
        trace = replay(
            recorded.ops,
            level=recorded.level,
            sut=sut,
            sut_command=command,
            reference=reference,
            seed_violations=own,
        )
    if received:
        return _interrupted(received, command)
    if trace is None:
        note = _own_violations(dict(sorted(own.items())), semantics.value)
        print(
            f"passes: all {len(recorded.steps)} steps of {args.trace} agree ({command}, "
            f"{semantics.value} semantics){note}"
        )
        return EXIT_CONFORMANT
    print(format_trace(trace))
    print(f"\nstill fails: {args.trace} ({command})")
    return EXIT_FAILED


def _recheck(recorded: Trace, args: argparse.Namespace) -> int:
    """``statemeta replay --concurrent``: the history's verdict now."""
    try:
        verdict = recheck(recorded, semantics=args.semantics)
    except MisuseError as error:
        print(f"could not run: {error}", file=sys.stderr)
        return EXIT_COULD_NOT_RUN
    assert recorded.history is not None
    semantics = Semantics.of(args.semantics or recorded.semantics)
    print(format_verdict(verdict, recorded.history))
    if verdict.outcome is LinOutcome.NOT_LINEARIZABLE:
        print(f"\nstill fails: {args.trace} ({semantics.value} semantics)")
        return EXIT_FAILED
    if verdict.outcome is LinOutcome.UNKNOWN:
        return EXIT_COULD_NOT_RUN
    print(f"\npasses: the history of {args.trace} is linearizable ({semantics.value} semantics)")
    return EXIT_CONFORMANT


COMMANDS = {
    "check": (
        "check an implementation against the reference over the harness protocol",
        configure_check,
        run_check_command,
    ),
    "replay": (
        "replay a trace written by check against an implementation (exit 1: still fails)",
        configure_replay,
        run_replay_command,
    ),
}
"""The harness's entries of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
