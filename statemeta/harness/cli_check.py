"""``statemeta check`` and ``statemeta replay``: conformance of any implementation to the reference.

The commands parse their arguments, start the implementation and print; the run itself is
statemeta.harness.check's ``run_check`` (re-exported here, with its report, settings and
progress, for their importers).

Exit codes of both commands: 0 conformant (replay: the trace passes now), 1 a divergence, an
invariant violation or a broken implementation (trace written, path printed), 2 could not run
(a command that does not start, a failed handshake, a level it does not support, a bad trace,
replay without ``--sut``: a trace is untrusted, its own command is shown, never run),
128 + N interrupted by signal N (SIGTERM, SIGINT, SIGHUP: the implementation's process tree is
ended first, and one line says so).
"""

from __future__ import annotations

import argparse
import functools
import random
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

from statemeta.cli_args import (
    add_callers,
    add_semantics,
    command_line,
    int_in,
    output_file,
    positive_int,
    seconds,
    seed,
)
from statemeta.errors import MisuseError, SutError
from statemeta.harness.check import (
    CheckReport,
    KeepGoing,
    Progress,
    check_settings,
    run_check,
    unchecked_reference,
)
from statemeta.harness.concurrent_run import (
    MAX_CLIENTS,
    Hunt,
    OverProtocol,
    failure_trace,
    hunt,
    recheck,
)
from statemeta.harness.linearizability import Outcome as LinOutcome
from statemeta.harness.linearizability import format_verdict
from statemeta.harness.meter import Meter
from statemeta.harness.observation import Observation
from statemeta.harness.operations import LEVELS
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import (
    Trace,
    format_trace,
    read_trace,
    replay,
    replay_command,
    write_trace,
)
from statemeta.interrupts import exit_code, interruptible
from statemeta.invariants import VIEW_INVARIANTS
from statemeta.json_output import json_text
from statemeta.semantics import Semantics

__all__ = [
    "COMMANDS",
    "EXIT_CONFORMANT",
    "EXIT_COULD_NOT_RUN",
    "EXIT_FAILED",
    "CheckReport",
    "KeepGoing",
    "Progress",
    "check_settings",
    "configure_check",
    "configure_replay",
    "run_check",
    "run_check_command",
    "run_replay_command",
    "unchecked_reference",
]

EXIT_CONFORMANT = 0
EXIT_FAILED = 1
EXIT_COULD_NOT_RUN = 2



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
    add_callers(parser)
    parser.add_argument(
        "--level", type=int_in(min(LEVELS), max(LEVELS)), choices=LEVELS, default=2,
        help="default: 2",
    )
    parser.add_argument("--examples", type=positive_int, default=100, help="default: 100")
    parser.add_argument(
        "--steps", type=positive_int, default=50, help="operations per example, at most (50)"
    )
    parser.add_argument("--seed", type=seed, help="the run's seed (default: random, printed)")
    parser.add_argument(
        "--no-directed",
        action="store_true",
        help="skip the directed phase (the shortest path to every class of behaviour "
        "reachable within the explorer's bounds, run before the random examples)",
    )
    parser.add_argument(
        "--json",
        action="store_true",
        help="print the report as one JSON object on stdout (the rest goes to stderr)",
    )
    parser.add_argument(
        "--concurrent",
        type=int_in(1, MAX_CLIENTS),
        metavar="K",
        help=f"K clients at once, at most {MAX_CLIENTS} (the implementation must declare "
        "concurrent): --examples "
        "histories of 2 rounds of --steps calls per client, each checked for linearizability",
    )
    parser.add_argument(
        "--trace-out",
        type=output_file,
        default=Path("statemeta-trace.json"),
        metavar="FILE",
        help="where a failure's trace goes (default: %(default)s; --keep-going: FILE's name "
        "numbered, t.json -> t-1.json, t-2.json, ...)",
    )
    parser.add_argument(
        "--keep-going",
        action="store_true",
        help="after each divergence (shrunk, its trace written) mask it and search on; "
        "end with the catalogue of every distinct divergence",
    )
    parser.add_argument(
        "--max-divergences",
        type=positive_int,
        metavar="N",
        help="stop after N distinct divergences (implies --keep-going; default: no limit "
        "but the examples)",
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


def _refuse(args: argparse.Namespace, problem: str) -> None:
    """A run that could not start: one line on stderr with the command's prefix (docs/cli.md)."""
    print(f"statemeta {args.command}: {problem}", file=sys.stderr)


def _handshake(sut: SubprocessAdapter, level: int) -> str | None:
    """Why the implementation cannot be checked at ``level`` (None: it can)."""
    try:
        hello = sut.hello()
    except SutError as error:
        return f"could not run: {error}"
    if level not in hello["levels"]:
        return f"could not run: {hello['name']} supports levels {hello['levels']}, not {level}"
    return None


def _interrupted(received: list[int], command: str) -> int:
    """Says the run was interrupted (its implementation's tree is ended by now)."""
    name = signal.Signals(received[0]).name
    print(f"interrupted by {name}: ended {command!r} and every process it started", file=sys.stderr)
    return exit_code(received)


def run_check_command(args: argparse.Namespace) -> int:
    """``statemeta check``."""
    seed_value = args.seed if args.seed is not None else random.randrange(2**32)
    if args.concurrent is not None:
        alone = [f for f, on in (("--keep-going", args.keep_going or args.max_divergences),
                                 ("--json", args.json),
                                 ("--callers vnode", args.callers != "direct")) if on]
        if alone:
            print(f"statemeta check: {' and '.join(alone)} not with --concurrent (a concurrent "
                  "run reports one history, of direct calls)", file=sys.stderr)
            return EXIT_COULD_NOT_RUN
        return _check_concurrent(args, seed_value)
    keep_going = None
    if args.keep_going or args.max_divergences is not None:
        keep_going = KeepGoing(args.trace_out, args.max_divergences)
    out = sys.stderr if args.json else sys.stdout  # --json: stdout holds the document alone
    report: CheckReport | None = None
    with interruptible() as received, SubprocessAdapter(args.sut, timeout=args.timeout) as sut:
        problem = _handshake(sut, args.level)
        if problem:
            _refuse(args, problem)
            return EXIT_COULD_NOT_RUN
        hello = sut.hello()
        declared = hello.get("semantics", Semantics.INTENDED.value)
        print(
            f"checking {hello['name']} ({args.sut}, declares {declared} semantics) at level "
            f"{args.level} against the {args.semantics} semantics"
            + ("" if args.callers == "direct" else f", {args.callers} callers") + ": "
            + ("" if args.no_directed else "the directed corpus, then ")
            + f"{args.examples} examples of up to {args.steps} steps, seed {seed_value}",
            file=out,
            flush=True,
        )
        report = run_check(
            sut,
            level=args.level,
            hypothesis_settings=check_settings(args.examples, args.steps),
            sut_label=args.sut,
            seed_value=seed_value,
            progress=Progress(out),
            semantics=args.semantics,
            keep_going=keep_going,
            directed=not args.no_directed,
            callers=args.callers,
        )
    if received:
        return _interrupted(received, args.sut)
    assert report is not None
    if report.trace is not None:
        write_trace(report.trace, args.trace_out)
    failed = report.trace is not None or bool(report.catalogue and report.catalogue.entries)
    rate = report.steps / max(report.seconds, 1e-9)
    summary = f"{report.examples} examples ({report.directed} directed), {report.steps} steps "
    summary += f"in {report.seconds:.1f} s "
    summary += f"({rate:.0f} steps/s)"
    summary += _own_violations(report.seed_violations, args.semantics)
    for line in _not_compared(report.observation):
        print(line, file=out)
    if report.coverage is not None:
        print("\n".join(report.coverage.lines()), file=out)
    if report.catalogue is not None:
        print("\n".join(report.catalogue.lines()), file=out)
        if report.catalogue.entries:
            first = report.catalogue.entries[0].trace
            print(f"replay one: {replay_command(first, args.sut, args.semantics)}", file=out)
    if report.trace is not None:
        print(format_trace(report.trace), file=out)
        print(f"\nNOT conformant ({summary}); trace written to {args.trace_out}", file=out)
        print(f"replay it: {replay_command(args.trace_out, args.sut, args.semantics)}", file=out)
    elif failed:
        print(f"NOT conformant ({summary})", file=out)
    else:
        print(f"conformant: {summary}", file=out)
    if args.json:
        print(json_text(check_document(report, args, hello, seed_value)))
    return EXIT_FAILED if failed else EXIT_CONFORMANT


_GIVEN = {"outcome": "its outcome only", "none": "only its heartbeats"}
"""What is compared of a result not given in full, per form (observation.RESULT_FORMS)."""


def _not_compared(observation: Observation | None) -> list[str]:
    """The report's lines on what the implementation does not observe (none: everything)."""
    if observation is None or observation.full:
        return []
    unobserved = observation.unobserved
    keys = [f"view key {k}" for k in unobserved["view"]]
    keys += [f"task key {k}" for k in unobserved["tasks"]]
    lines = [
        "not compared (the implementation does not observe them): "
        + (", ".join(keys) or "no view key")
        + ("; outcomes as ok/rejected only" if observation.outcomes == "ok_rejected" else "")
    ]
    forms = observation.results_not_given
    if forms:
        given = ", ".join(f"{op} ({_GIVEN[form]})" for op, form in forms.items())
        lines.append(f"results not compared in full (the implementation does not give them): "
                     f"{given}")
    if observation.sets:
        held = ", ".join(sorted(observation.sets))
        lines.append(f"compared as sets (their order is not compared): {held}")
    if observation.blocks:
        blocking = ", ".join(sorted(observation.blocks))
        lines.append(f"may answer blocked (compared with where the seed waits): {blocking}")
    unchecked = observation.unchecked(VIEW_INVARIANTS)
    if unchecked:
        listed = ", ".join(f"{i} (reads {', '.join(keys)})" for i, keys in unchecked.items())
        lines.append(f"invariants not run on its view: {listed}")
    return lines


def check_document(
    report: CheckReport, args: argparse.Namespace, hello: dict[str, Any], seed_value: int
) -> dict[str, Any]:
    """``statemeta check --json``: the run, what was compared, its verdict and where its
    traces went."""
    trace = report.trace
    failure = None
    if trace is not None:
        failure = {
            "kind": trace.failure.kind,
            "detail": trace.failure.detail,
            "steps": len(trace.steps),
            "trace": str(args.trace_out),
        }
    document: dict[str, Any] = {
        "conformant": trace is None and not (report.catalogue and report.catalogue.entries),
        "sut": args.sut,
        "name": hello["name"],
        "protocol": hello["protocol"],
        "level": args.level,
        "semantics": args.semantics,
        "callers": args.callers,
        "seed": seed_value,
        "examples": report.examples,
        "directed": report.directed,
        "steps": report.steps,
        "seconds": round(report.seconds, 3),
        "seed_violations": report.seed_violations,
        **report.observation_json(),
        "trace": None if trace is None else str(args.trace_out),
        "failure": failure,
    }
    if report.catalogue is not None:
        document["catalogue"] = report.catalogue.to_json()
    if report.coverage is not None:
        document["coverage"] = report.coverage.to_json()
    return document


def _check_concurrent(args: argparse.Namespace, seed_value: int) -> int:
    """``statemeta check --concurrent K``."""
    found: Hunt | None = None
    with interruptible() as received, SubprocessAdapter(args.sut, timeout=args.timeout) as sut:
        problem = _handshake(sut, args.level)
        if problem is None and not sut.concurrent:
            problem = f"could not run: {sut.hello()['name']} does not declare concurrent in hello"
        if problem:
            _refuse(args, problem)
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
            checked=Meter(sys.stderr, args.examples, "histories").tick,
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
        _refuse(args, f"could not run: {error}")
        return EXIT_COULD_NOT_RUN
    if args.concurrent:
        return _recheck(recorded, args)
    if args.sut is None:
        return _not_run(recorded, args)
    command = args.sut
    trace: Trace | None = None
    with interruptible() as received, SubprocessAdapter(command, timeout=args.timeout) as sut:
        problem = _handshake(sut, recorded.level)
        if problem:
            _refuse(args, problem)
            return EXIT_COULD_NOT_RUN
        semantics = Semantics.of(args.semantics or recorded.semantics)
        observation = Observation.of_hello(sut.hello(), recorded.level)
        reference = functools.partial(ReferenceAdapter, semantics=semantics)
        own: Counter[str] = Counter()
        trace = replay(
            recorded.ops,
            level=recorded.level,
            sut=sut,
            sut_command=command,
            reference=reference,
            seed_violations=own,
            masks=recorded.masks,
        )
    if received:
        return _interrupted(received, command)
    for line in _not_compared(observation):
        print(line)
    if trace is None:
        note = _own_violations(dict(sorted(own.items())), semantics.value)
        print(
            f"passes: all {len(recorded.steps)} steps of {args.trace} agree ({command}, "
            f"{semantics.value} semantics){note}"
        )
        return EXIT_CONFORMANT
    print(format_trace(trace))
    where = "" if trace.mask is None else f" at {trace.mask.op} {trace.mask.at}"
    if recorded.mask not in (None, trace.mask):
        where += f", not where it was written ({recorded.mask.op} {recorded.mask.at})"
    print(f"\nstill fails{where}: {args.trace} ({command})")
    return EXIT_FAILED


def _not_run(recorded: Trace, args: argparse.Namespace) -> int:
    """Replay without ``--sut``: a trace is untrusted input (it comes with bug reports), so the
    command it records is shown, with the line that runs it, and never run (control characters
    shown escaped, so the trace cannot drive the terminal)."""
    line = replay_command(args.trace, recorded.sut, args.semantics or None)
    print(
        f"not run: replay runs only a command given with --sut (a trace is untrusted input); "
        f"{_shown(str(args.trace))} records the command: {_shown(recorded.sut)}\n"
        f"if you trust it, run: {_shown(line)}",
        file=sys.stderr,
    )
    return EXIT_COULD_NOT_RUN


def _shown(text: str) -> str:
    return text if text.isprintable() else ascii(text)


def _recheck(recorded: Trace, args: argparse.Namespace) -> int:
    """``statemeta replay --concurrent``: the history's verdict now."""
    try:
        verdict = recheck(recorded, semantics=args.semantics)
    except MisuseError as error:
        _refuse(args, f"could not run: {error}")
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
