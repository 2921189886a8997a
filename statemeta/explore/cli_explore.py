"""``statemeta explore`` and ``statemeta verify``: the subcommands of the explorer."""

from __future__ import annotations

import argparse
import contextlib
import multiprocessing
import os
import sys
import time
from pathlib import Path
from typing import Any

import attrs

from statemeta.cli_args import (
    MAX_WORKERS,
    add_callers,
    add_semantics,
    cluster_address,
    command_line,
    int_in,
    nonnegative_int,
    output_directory,
    output_file,
    positive_int,
)
from statemeta.errors import ClusterError
from statemeta.explore.bounds import Bounds
from statemeta.explore.cluster import DaskCluster, connect
from statemeta.explore.coverage import format_report, invariant_ids, report, rows_of
from statemeta.explore.search import Counterexample, Exploration, Stats, Violation, explore
from statemeta.harness.campaign import run_campaign
from statemeta.harness.check import Progress
from statemeta.harness.coverage_model import rows_lines
from statemeta.harness.variants import VARIANTS
from statemeta.json_output import json_text
from statemeta.semantics import Semantics

DEFAULT_BOUNDS = Bounds()
DEFAULT_WORKERS = (
    min(2, os.cpu_count() or 1) if "fork" in multiprocessing.get_all_start_methods() else 1
)
"""Processes expanding the large levels (the CI machine has 2 cores; workers are forked)."""
CAMPAIGN_EXAMPLES = 100
"""The property campaign of ``verify``: examples of the level-3 machine (the ``ci`` size)."""
CAMPAIGN_STEPS = 50
"""Steps per example (Hypothesis' default stateful_step_count)."""
DEFAULT_TRACE = Path("explore-counterexample.json")
DEEP_TRACE = Path("explore-counterexample-deep.json")
"""verify's second search's counterexample (``Bounds.deep``)."""
DEFAULT_TRACE_DIR = Path("explore-violations")


def add_bound_options(parser: argparse.ArgumentParser) -> None:
    d = DEFAULT_BOUNDS
    parser.add_argument("--stream-tasks", type=int_in(0, 2), default=d.stream_tasks,
                        choices=(0, 1, 2), help="plain stream tasks s1, s3 (default: %(default)s)")
    parser.add_argument("--no-fill-history", dest="fill_history", action="store_false",
                        help="leave out the pair f1 (stream task) / h1 (its fill-history task)")
    parser.add_argument("--trigger-timer", action="store_true",
                        help="add s2, a stream task with a trigger timer")
    parser.add_argument("--no-downstream", action="store_true",
                        help="add t1, a task with nothing downstream (INIT completes at once)")
    for name, help_text in (
        ("role_changes", "update_stage_role calls"),
        ("start_rounds", "start_all calls"),
        ("reopens", "close_reopen and crash_reopen calls"),
        ("faults", "fail_next and corrupt_record calls (injected store faults, torn "
                   "records)"),
        ("clock_advances", "advance_clock calls"),
        ("max_depth", "operations per path"),
    ):
        flag = "--" + name.replace("_", "-")
        parser.add_argument(flag, type=nonnegative_int, default=getattr(d, name),
                            help=f"at most this many {help_text} (default: %(default)s)")
    parser.add_argument("--no-symmetry", dest="symmetry", action="store_false",
                        help="no symmetry reduction (interchangeable tasks kept apart)")
    parser.add_argument("--no-subsumption", dest="subsume", action="store_false",
                        help="explore a state again wherever it is met with other budgets "
                        "left (by default a node with at most each budget of one explored in "
                        "its state is not: docs/formal-checking.md)")
    parser.add_argument("--workers", type=int_in(1, MAX_WORKERS), default=DEFAULT_WORKERS,
                        help="processes expanding each large level; the result is the same "
                        "for any number (default: %(default)s)")
    parser.add_argument("--cluster", metavar="ADDRESS", type=cluster_address,
                        help="expand them on the Dask cluster whose scheduler is at ADDRESS "
                        "(tcp://HOST:PORT; pip install 'statemeta[cluster]'); the result is "
                        "the same")
    add_semantics(parser, default=Semantics.INTENDED.value)
    add_callers(parser)
    parser.add_argument("--all-violations", action="store_true",
                        help="go on past a failure and report every distinct (invariant, "
                        "operation) violation, each with a shortest trace in --trace-dir "
                        "(the behaviour with --semantics seed)")
    parser.add_argument("--trace-dir", type=output_directory, default=DEFAULT_TRACE_DIR,
                        help="with every violation reported: where their traces are written "
                        "(made if missing; default: %(default)s)")


def all_violations(args: argparse.Namespace) -> bool:
    """Whether the search goes on past a failure: asked for, or the seed explored (its
    defects are expected and catalogued; in the intended semantics a failure is a bug, and
    the first one, a shortest, stops the search)."""
    return bool(args.all_violations) or Semantics.of(args.semantics) is Semantics.SEED


def bounds_from(args: argparse.Namespace) -> Bounds:
    return Bounds(
        stream_tasks=args.stream_tasks,
        fill_history=args.fill_history,
        trigger_timer=args.trigger_timer,
        no_downstream=args.no_downstream,
        role_changes=args.role_changes,
        start_rounds=args.start_rounds,
        reopens=args.reopens,
        faults=args.faults,
        clock_advances=args.clock_advances,
        max_depth=args.max_depth,
    )


def cluster_of(args: argparse.Namespace) -> contextlib.AbstractContextManager[DaskCluster | None]:
    """The cluster ``--cluster`` names, connected (ClusterError if it cannot be used)."""
    return contextlib.nullcontext() if args.cluster is None else connect(args.cluster)


def could_not_run(args: argparse.Namespace, error: ClusterError) -> int:
    """A cluster that cannot be used: one line on stderr, exit 2 (docs/cli.md)."""
    print(f"statemeta {args.command}: error: {error}", file=sys.stderr)
    return 2


def _progress(stats: Stats) -> None:
    """The depth done so far (the summary's depth at the end): one line redrawn with ``\r`` on
    a terminal, a plain line each in a log, where a ``\r`` reads as garbage."""
    line = (
        f"depth {stats.depth}: {stats.states} states, {stats.transitions} transitions, "
        f"{stats.states_per_second:.0f} states/s"
    )
    if sys.stderr.isatty():
        print(f"\r{line}", end="", file=sys.stderr, flush=True)
    else:
        print(line, file=sys.stderr, flush=True)


def configure_explore(parser: argparse.ArgumentParser) -> None:
    add_bound_options(parser)
    parser.add_argument("--variant", choices=sorted(VARIANTS), metavar="NAME",
                        help="explore a broken variant against the reference: "
                        + ", ".join(sorted(VARIANTS)))
    parser.add_argument("--sut", metavar="CMD", type=command_line,
                        help="replay a path to every state found against this implementation")
    parser.add_argument("--depth", type=nonnegative_int, dest="sut_depth", default=None,
                        help="with --sut: paths up to this depth (default: --max-depth)")
    parser.add_argument("--trace", type=output_file, default=DEFAULT_TRACE,
                        help="where a counterexample is written when the first failure stops "
                        "the search (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")


def _search(
    args: argparse.Namespace, bounds: Bounds, variant: str | None = None, keep_paths: bool = False
) -> Exploration | int:
    """The exploration explore and verify run (locally, or on ``--cluster``), with the
    progress display unless ``--quiet`` or ``--json``; an int: the exit code of a cluster that
    could not run it."""
    progress = None if args.quiet or args.json else _progress
    try:
        with cluster_of(args) as cluster:
            result = explore(
                bounds,
                variant=variant,
                symmetry=args.symmetry,
                subsume=args.subsume,
                keep_paths=keep_paths,
                progress=progress,
                workers=args.workers,
                semantics=args.semantics,
                callers=args.callers,
                all_violations=all_violations(args),
                cluster=cluster,
            )
    except ClusterError as error:
        return could_not_run(args, error)
    if progress is not None and sys.stderr.isatty():
        print(file=sys.stderr)  # ends the redrawn line
    return result


def run_explore(args: argparse.Namespace) -> int:
    bounds = bounds_from(args)
    if args.sut is not None and args.sut_depth is not None:
        bounds = attrs.evolve(bounds, max_depth=args.sut_depth)
    result = _search(args, bounds, variant=args.variant, keep_paths=args.sut is not None)
    if isinstance(result, int):
        return result
    doc = report(result)
    write_findings(result, doc, args.trace, args.trace_dir)
    if args.sut is not None and result.counterexample is None:
        doc["sut"] = run_sut(args.sut, result)
    print(json_text(doc) if args.json else _text(doc))
    ok = result.counterexample is None and (args.sut is None or doc["sut"]["failure"] is None)
    return 0 if ok else 1


def _text(doc: dict[str, Any]) -> str:
    text = format_report(doc)
    if "trace" in doc:
        text += f"\ncounterexample trace written to {doc['trace']} (statemeta replay runs it)"
    if "trace_dir" in doc:
        text += (
            f"\n{len(doc['violations'])} traces written to {doc['trace_dir']} (statemeta "
            f"replay runs each: {doc['violations'][0]['trace']})"
        )
    sut = doc.get("sut")
    if sut is not None:
        text += (
            f"\nimplementation under test: {sut['paths']} paths, {sut['steps']} steps replayed"
        )
        if sut["failure"] is not None:
            text += f"; FAILED: {sut['failure']} (trace: {sut['trace']})"
    return text


def serve_command(variant: str | None, semantics: Semantics = Semantics.INTENDED) -> str:
    """The command that serves ``variant`` (or the reference) in ``semantics`` over the
    harness protocol."""
    command = f"{sys.executable} -m statemeta.serve"
    if variant is not None:
        command += f" --variant {variant}"
    if semantics is not Semantics.INTENDED:
        command += f" --semantics {semantics.value}"
    return command


def write_findings(
    result: Exploration, doc: dict[str, Any], trace: Path, trace_dir: Path
) -> None:
    """Writes what the search found as replayable traces and names them in ``doc``: the one
    counterexample to ``trace``, or with every violation reported, one file per violation
    in ``trace_dir``."""
    if not result.violations:
        return
    if not result.all_violations:
        write_counterexample(result, trace)
        doc["trace"] = str(trace)
        doc["violations"][0]["trace"] = str(trace)
        return
    trace_dir.mkdir(parents=True, exist_ok=True)
    for number, (violation, entry) in enumerate(
        zip(result.violations, doc["violations"], strict=True), start=1
    ):
        path = trace_dir / violation_file(number, violation)
        write_counterexample(result, path, violation.counterexample)
        entry["trace"] = str(path)
    doc["trace_dir"] = str(trace_dir)


def violation_file(number: int, violation: Violation) -> str:
    """A violation's trace file name: its number in the order found, invariant, operation."""
    return f"{number:02d}-{violation.invariant}-{violation.operation}.json"


def write_counterexample(
    result: Exploration, path: Path, cex: Counterexample | None = None
) -> None:
    """A counterexample (by default the first one) in the harness trace format, naming the
    command that serves what was explored (``statemeta replay`` runs it)."""
    from statemeta.harness.trace import Trace, write_trace

    cex = cex or result.counterexample
    assert cex is not None
    served = result.variant is not None or result.semantics is not Semantics.INTENDED
    sut = serve_command(result.variant, result.semantics) if served else "reference"
    trace = Trace(
        level=result.bounds.level,
        sut=sut,
        steps=cex.steps,
        failure=attrs.evolve(cex.failure, kind=_trace_kind(cex)),
        semantics=result.semantics,
    )
    write_trace(trace, path)


def _trace_kind(cex: Counterexample) -> str:
    """The trace format's failure kinds: a broken invariant or crash of either side is an
    invariant failure there (the reference's own ones included)."""
    return cex.kind if cex.kind in ("result", "view", "undefined-behaviour") else "invariant"


def run_sut(command: str, result: Exploration) -> dict[str, Any]:
    """Conformance by exhaustion: every path of the covering set, replayed differentially."""
    from statemeta.harness.subprocess_adapter import SubprocessAdapter
    from statemeta.harness.trace import replay, write_trace

    sut = SubprocessAdapter(command)
    steps = 0
    try:
        for ops in sorted(result.leaves, key=len):
            failed = replay(
                ops,
                level=result.bounds.level,
                sut=sut,
                sut_command=command,
            )
            steps += len(ops)
            if failed is not None:
                path = Path("explore-sut-failure.json")
                write_trace(failed, path)
                return {"paths": len(result.leaves), "steps": steps,
                        "failure": failed.failure.detail, "trace": str(path)}
    finally:
        sut.close()
    return {"paths": len(result.leaves), "steps": steps, "failure": None}


# -- verify ----------------------------------------------------------------------------------


def configure_verify(parser: argparse.ArgumentParser) -> None:
    add_bound_options(parser)
    parser.add_argument("--no-deep", dest="deep", action="store_false",
                        help="leave out the second search (the fill-history pair alone, the "
                        "same budgets, one operation deeper: docs/formal-checking.md)")
    parser.add_argument("--examples", type=positive_int, default=CAMPAIGN_EXAMPLES,
                        help="property campaign examples (default: %(default)s)")
    parser.add_argument("--steps", type=positive_int, default=CAMPAIGN_STEPS,
                        help="steps per example (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the summary as JSON")
    parser.add_argument("--quiet", action="store_true", help="no progress display")


def run_verify(args: argparse.Namespace) -> int:
    started = time.perf_counter()
    bounds = bounds_from(args)
    searches = [(bounds, DEFAULT_TRACE, args.trace_dir)]
    if args.deep:
        searches.append((bounds.deep(), DEEP_TRACE, args.trace_dir / "deep"))
    results: list[Exploration] = []
    docs: list[dict[str, Any]] = []
    for searched, trace, trace_dir in searches:
        if results and results[0].counterexample is not None and not results[0].all_violations:
            break  # the first failure stops verify as it stops a search
        result = _search(args, searched)
        if isinstance(result, int):
            return result
        doc = report(result)
        write_findings(result, doc, trace, trace_dir)
        results.append(result)
        docs.append(doc)
    # the campaign's progress on stderr (a minute or more of silence otherwise)
    campaign = run_campaign(args.examples, args.steps, semantics=args.semantics, progress=Progress(
        None if args.quiet or args.json else sys.stderr, interval=10.0))
    campaign_doc = campaign.to_json()
    steps, failure = campaign.steps, campaign.failure
    ok = all(r.counterexample is None for r in results) and failure is None
    rows = rows_of(*results)
    summary = {
        "ok": ok,
        "semantics": results[0].semantics.value,
        "callers": results[0].callers.value,
        "explore": docs[0],
        "deep": docs[1] if len(docs) > 1 else None,
        **rows,
        "campaign": campaign_doc,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json_text(summary))
    else:
        print(_text(docs[0]))
        if len(docs) > 1:
            print(f"\ndeep search: {_bounds_text(docs[1])}\n{_text(docs[1])}")
        print("\nthe searches together:\n" + "\n".join(rows_lines(rows)))
        lifecycle = rows["lifecycle_rows"]
        roles = rows["role_rows"]
        campaign_rows = campaign_doc["lifecycle_rows"]
        explored = " and ".join(
            f"{doc['states']} states {_bounds_text(doc)}" for doc in docs
        )
        print(
            f"\nverify ({docs[0]['semantics']} semantics"
            + ("" if summary["callers"] == "direct" else f", {summary['callers']} callers in the "
               "searches")
            + f"): {explored} "
            + ("explored exhaustively" if all(r.complete for r in results)
               else "explored up to a counterexample")
            + f", lifecycle rows {len(lifecycle['taken'])}/{lifecycle['total']}, role rows "
            f"{len(roles['taken'])}/{roles['total']}, {len(invariant_ids())} invariants checked "
            f"in every state; property campaign: {steps} steps in the directed corpus "
            f"({campaign_doc['directed']} paths) and {args.examples} examples, lifecycle rows "
            f"{len(campaign_rows['taken'])}/{campaign_rows['total']}, classes "
            f"{campaign_doc['coverage']['reached_reachable']}/"
            f"{campaign_doc['coverage']['reachable']}"
            + ("" if failure is None else f" FAILED: {failure}")
            + f"; {summary['seconds']} s: {'OK' if ok else 'FAILED'}"
        )
    return 0 if ok else 1


def _bounds_text(doc: dict[str, Any]) -> str:
    """Where a search went, for the summary: its slots and depth."""
    return f"({', '.join(doc['bounds']['slots'])}; depth {doc['depth']})"


COMMANDS = {
    "explore": (
        "explore every state within bounds, checking every invariant (--sut: conformance)",
        configure_explore,
        run_explore,
    ),
    "verify": (
        "the main check: exhaustive exploration of the default bounds plus a property campaign",
        configure_verify,
        run_verify,
    ),
}
"""The explorer's entries of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
