"""The ``statemeta`` command. Each subcommand is one entry of SUBCOMMANDS (help, options, run)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
from hypothesis.configuration import set_hypothesis_home_dir

from statemeta import __version__
from statemeta.cli_args import EXIT_USAGE, Parser, existing_directory
from statemeta.cli_bench import COMMANDS as BENCH_COMMANDS
from statemeta.diagrams import (
    lifecycle_dot,
    lifecycle_mermaid,
    lifecycle_rows_markdown,
    refresh_docs,
    roles_dot,
    roles_mermaid,
    roles_rows_markdown,
)
from statemeta.explore.cli_explore import COMMANDS as EXPLORE_COMMANDS
from statemeta.harness.campaign import COMMANDS as CAMPAIGN_COMMANDS
from statemeta.harness.cli_check import COMMANDS as CHECK_COMMANDS
from statemeta.harness.cli_mutate import COMMANDS as MUTATE_COMMANDS
from statemeta.interrupts import exit_code, interruptible
from statemeta.json_output import json_text
from statemeta.lifecycle import (
    LIFECYCLE_ROWS,
    Outcome,
    StatusChange,
    TaskEvent,
    TaskLifecycle,
    TaskStatus,
)
from statemeta.roles import ROLE_ROWS, Role, RoleEvent
from statemeta.tdengine.cli_tdengine import COMMANDS as TDENGINE_COMMANDS
from statemeta.tools import COMMANDS as TOOL_COMMANDS

__all__ = ["SUBCOMMANDS", "Subcommand", "hypothesis_cache", "main", "spec_document"]

_REPO_DOCS = Path(__file__).resolve().parent.parent / "docs"
"""docs/ of a source checkout; an installed wheel has none, so ``--docs`` must name one."""


@attrs.frozen
class Subcommand:
    """One subcommand: its help line, how it adds its options, and what it runs."""

    help: str
    configure: Callable[[argparse.ArgumentParser], None]
    run: Callable[[argparse.Namespace], int]


def _name(value: TaskStatus | TaskEvent | Role | RoleEvent | None) -> str | None:
    return None if value is None else value.name.lower()


# -- demo ------------------------------------------------------------------------------------


def _configure_demo(parser: argparse.ArgumentParser) -> None:
    """The demo has no options."""


def _describe(task: TaskLifecycle, outcome: Outcome | None) -> str:
    parts = [f"{outcome.value if outcome else 'done':<8}", f"status={_name(task.status)}"]
    if outcome is not None and outcome.code:
        parts.append(f"code=0x{outcome.code:08x}")
    if task.active is not None:
        parts.append(f"active={_name(task.active)}")
    if task.waiting:
        parts.append("waiting=" + ",".join(f"{_name(e)}@{_name(s)}" for s, e in task.waiting))
    if task.saved:
        parts.append("saved=" + ",".join(f"{_name(s)}" for s in task.saved))
    return " ".join(parts)


def _run_demo(_: argparse.Namespace) -> int:
    """Drives one task through its lifecycle, printing each call and each change it caused."""
    changes: list[StatusChange] = []
    task = TaskLifecycle(listener=lambda _, change: changes.append(change))
    steps: list[tuple[str, Callable[[], Outcome | None]]] = [
        ("handle(init)", lambda: task.handle(TaskEvent.INIT)),
        ("complete(init)", lambda: task.complete(TaskEvent.INIT)),
        ("handle(gen_checkpoint)", lambda: task.handle(TaskEvent.GEN_CHECKPOINT)),
        ("handle(pause)", lambda: task.handle(TaskEvent.PAUSE)),
        ("handle(checkpoint_done)", lambda: task.handle(TaskEvent.CHECKPOINT_DONE)),
        ("handle(pause)", lambda: task.handle(TaskEvent.PAUSE)),
        ("handle(halt)", lambda: task.handle(TaskEvent.HALT)),
        ("resume()", task.resume),
        ("resume()", task.resume),
        ("handle(stop)", lambda: task.handle(TaskEvent.STOP)),
        ("handle(init)", lambda: task.handle(TaskEvent.INIT)),
        ("handle(dropping)", lambda: task.handle(TaskEvent.DROPPING)),
        ("set_ready()", task.set_ready),
        ("reset()", task.reset),
    ]
    print("one stream task, new in uninit; indented: each change its listener hears")
    for label, call in steps:
        outcome = call()
        print(f"{label:<24} {_describe(task, outcome)}")
        for change in changes:
            via = change.cause if change.event is None else f"{change.cause} {_name(change.event)}"
            print(f"    {_name(change.old)} -> {_name(change.new)}  ({via})")
        changes.clear()
    return 0


# -- spec ------------------------------------------------------------------------------------


def spec_document() -> dict[str, Any]:
    """Both tables as plain data, enum names in lower case (the ``spec --json`` output)."""
    return {
        "statuses": [{"name": _name(s), "value": s.value} for s in TaskStatus],
        "events": [{"name": _name(e), "value": e.value} for e in TaskEvent],
        "transitions": [
            {
                "from": _name(r.from_status),
                "event": _name(r.event),
                "to": _name(r.to_status),
                "attach": _name(r.attach),
                "two_phase": r.two_phase,
            }
            for r in LIFECYCLE_ROWS
        ],
        "roles": [{"name": _name(r), "value": r.value} for r in Role],
        "role_events": [{"name": _name(e), "value": e.value} for e in RoleEvent],
        "role_transitions": [
            {
                "from": _name(r.from_role),
                "event": _name(r.event),
                "to": _name(r.to_role),
                "start_heartbeat": r.start_heartbeat,
                "stop_heartbeat": r.stop_heartbeat,
                "send_before_close": r.send_before_close,
            }
            for r in ROLE_ROWS
        ],
    }


def _configure_spec(parser: argparse.ArgumentParser) -> None:
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--json", action="store_true", help="print both tables as JSON")
    mode.add_argument(
        "--mermaid", action="store_true",
        help="print both machines as Mermaid state diagrams (markdown code blocks)",
    )
    mode.add_argument(
        "--dot", action="store_true", help="print both machines as Graphviz digraphs"
    )
    mode.add_argument(
        "--write-docs", action="store_true", help="regenerate the diagrams and tables in docs/"
    )
    mode.add_argument(
        "--check-docs", action="store_true", help="exit 1 if the generated docs are stale"
    )
    parser.add_argument(
        "--docs",
        type=existing_directory,
        default=_REPO_DOCS,
        help="the docs directory (default: %(default)s)",
    )


def _run_spec(args: argparse.Namespace) -> int:
    """Prints the normative tables, or keeps docs/ in step with them."""
    if args.json:
        print(json_text(spec_document()))
        return 0
    if args.mermaid or args.dot:
        drawn = (lifecycle_mermaid, roles_mermaid) if args.mermaid else (lifecycle_dot, roles_dot)
        print("\n\n".join(draw() for draw in drawn))
        return 0
    if args.write_docs or args.check_docs:
        if not args.docs.is_dir():
            print(
                f"statemeta spec: error: no docs directory at {args.docs} (an installed "
                "statemeta has none): pass --docs DIR",
                file=sys.stderr,
            )
            return EXIT_USAGE
        stale = refresh_docs(args.docs, write=args.write_docs)
        for path in stale:
            print(f"{'rewrote' if args.write_docs else 'stale'}: {path}")
        return 1 if stale and args.check_docs else 0
    print("task lifecycle (spec/lifecycle.toml); every other (status, event) pair is rejected\n")
    print(lifecycle_rows_markdown())
    print("\nmeta roles (spec/roles.toml)\n")
    print(roles_rows_markdown())
    return 0


SUBCOMMANDS: dict[str, Subcommand] = {
    "demo": Subcommand(
        "drive one task through its lifecycle, printing each step", _configure_demo, _run_demo
    ),
    "spec": Subcommand("print the normative tables (or refresh docs/)", _configure_spec, _run_spec),
}

SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in EXPLORE_COMMANDS.items()})
SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in CHECK_COMMANDS.items()})
SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in MUTATE_COMMANDS.items()})
SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in CAMPAIGN_COMMANDS.items()})
SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in TOOL_COMMANDS.items()})
SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in BENCH_COMMANDS.items()})
SUBCOMMANDS.update({name: Subcommand(*entry) for name, entry in TDENGINE_COMMANDS.items()})

EXIT_BROKEN_PIPE = 141
"""The exit code when the reader of stdout went away (``statemeta inspect --json | head -1``):
128 + SIGPIPE (13), a shell's code for a process that SIGPIPE ended."""


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``statemeta`` console script and of ``python -m statemeta``.

    A reader of stdout that goes away ends the command quietly: no traceback, EXIT_BROKEN_PIPE.
    (The pipes to an implementation under check are the harness's: it handles their errors.)
    SIGTERM, SIGINT or SIGHUP ends any command through its cleanup (its workers ended), one line
    and 128 + N."""
    parser = Parser(
        prog="statemeta", description="Executable reference model of TDengine's stream meta."
    )
    parser.add_argument("--version", action="version", version=f"statemeta {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, command in SUBCOMMANDS.items():
        sub = commands.add_parser(
            name, help=command.help, description=command.help, intermixed=True
        )
        command.configure(sub)
    args = parser.parse_args(argv)
    code: int | None = None
    try:
        with interruptible() as received, _hypothesis_files():
            code = SUBCOMMANDS[args.command].run(args)
            sys.stdout.flush()  # a reader gone shows here, not in the flush at exit
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_BROKEN_PIPE
    if code is None:  # an ending signal the command left to this block
        name = signal.Signals(received[0]).name
        print(f"statemeta {args.command}: interrupted by {name}", file=sys.stderr)
        return exit_code(received)
    return code


def hypothesis_cache() -> Path:
    """Where the commands keep Hypothesis's files: the user's cache (XDG), not the directory the
    command runs in, which Hypothesis would fill with a ``.hypothesis/`` the user never asked for
    (``check`` and ``campaign`` keep no example database: only Hypothesis's own caches)."""
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache) / "statemeta" / "hypothesis"


@contextlib.contextmanager
def _hypothesis_files() -> Iterator[None]:
    """A command's Hypothesis files in hypothesis_cache(), unless HYPOTHESIS_STORAGE_DIRECTORY
    asks for a place; afterwards Hypothesis looks up its default again (an in-process caller)."""
    if os.environ.get("HYPOTHESIS_STORAGE_DIRECTORY"):
        yield
        return
    set_hypothesis_home_dir(hypothesis_cache())
    try:
        yield
    finally:
        set_hypothesis_home_dir(None)


def _discard_stdout() -> None:
    """Points stdout at /dev/null, so that the interpreter's flush at exit of what is still
    buffered raises no second BrokenPipeError (the recipe of Python's signal docs)."""
    try:
        fd = sys.stdout.fileno()
    except (AttributeError, OSError, ValueError):  # not a file (a test's capture)
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
