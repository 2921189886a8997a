"""The rules every command-line value follows, each written once, and the parser that applies them.

Every command (``statemeta`` and its subcommands, ``python -m statemeta.serve``, ``python -m
benchmarks``) parses with ``Parser`` and types its options with the functions below, so a value
that cannot mean anything (a timeout of nan, a negative depth, an empty command, a file that
is not there) stops the command before it starts: exit 2 and one line on stderr,
``PROG: error: argument --timeout: 'nan' is not a number of seconds in (0, 86400]``, never a
traceback and never a run that fails late (docs/cli.md).
"""

from __future__ import annotations

import argparse
import functools
import math
import re
import shlex
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, NoReturn, TypeVar

from statemeta.errors import MisuseError
from statemeta.harness.callers import Callers
from statemeta.harness.observation import declared
from statemeta.semantics import Semantics

__all__ = [
    "MAX_COUNT",
    "MAX_SECONDS",
    "MAX_SEED",
    "MAX_WORKERS",
    "Parser",
    "add_callers",
    "add_semantics",
    "cluster_address",
    "command_line",
    "existing_directory",
    "input_file",
    "int_in",
    "minutes",
    "nonnegative_int",
    "output_directory",
    "output_file",
    "positive_int",
    "seconds",
    "seed",
    "view_keys",
]

EXIT_USAGE = 2
"""argparse's exit code for a command line it refuses."""

MAX_SECONDS = 86_400.0
"""The longest wait an option accepts (a day): longer is a typo, and past ~1e15 s the
platform's time_t overflows inside select()."""

MAX_WORKERS = 64
"""The most worker processes an option accepts: each is a forked copy of the explorer."""


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose refusal is one line, ``PROG: error: MESSAGE``, exit 2.

    argparse prints the usage and then the error; the usage is ``--help``'s first line, and a
    caller reading stderr (a script, a CI log) wants the one line that says what is wrong.
    With ``intermixed=True`` options may also follow the positionals (``decode hb --json
    FILE``): argparse alone gives an optional positional (``FILE``) no second chance after an
    option, so such parsers parse in argparse's two intermixed passes."""

    def __init__(self, *args: Any, intermixed: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.intermixed = intermixed
        self._in_pass = False

    def error(self, message: str) -> NoReturn:
        one_line = " ".join(message.split())
        self.exit(EXIT_USAGE, f"{self.prog}: error: {one_line} (see --help)\n")

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        for arg in () if self._subparsers else args or ():  # a subcommand's parser says it
            option, equals, value = arg.partition("=")
            if option.startswith("-") and equals and value == "--":  # argparse drops it: []
                self.error(f"argument {option}: '--' is not a value")
        if not self.intermixed or self._in_pass:
            return super().parse_known_args(args, namespace)
        self._in_pass = True  # the intermixed parse calls back here for each of its passes
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._in_pass = False


def _refuse(text: str, what: str) -> NoReturn:
    raise argparse.ArgumentTypeError(f"{text!r} is not {what}")


MAX_COUNT = 1_000_000_000
"""The largest count, budget or depth an option accepts: more is a typo, and an explorer's
budgets are packed in 64 bits."""

MAX_SEED = 2**64 - 1
"""The largest seed: a run's seed is a 64-bit number (its default is drawn below 2**32)."""

_WHOLE = re.compile(r"-?[0-9]{1,20}")
"""A whole number as the options take it: ASCII decimal digits, no sign but minus, no blanks
or underscores (Python's ``int()`` takes ``+5``, `` 5``, ``1_000`` and other scripts' digits)."""


def int_in(low: int, high: int = MAX_COUNT) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high], written in ASCII decimal digits."""
    what = f"a whole number from {low} to {high}"

    def parse(text: str) -> int:
        if _WHOLE.fullmatch(text) is None:
            _refuse(text, what)
        value = int(text)
        if not low <= value <= high:
            _refuse(text, what)
        return value

    return parse


positive_int = int_in(1)
"""An argparse type: a count from 1 to MAX_COUNT (examples, steps)."""
nonnegative_int = int_in(0)
"""An argparse type: a budget or a depth, 0 to MAX_COUNT."""
seed = int_in(0, MAX_SEED)
"""An argparse type: a run's seed, 0 to MAX_SEED."""

_DECIMAL = re.compile(r"(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][-+]?[0-9]{1,4})?")
"""A number of seconds as the options take it: ASCII decimal digits with an optional point and
exponent (Python's ``float()`` also takes blanks, ``1_0``, ``nan`` and other scripts' digits)."""


def seconds(text: str) -> float:
    """An argparse type: a finite number of seconds in (0, MAX_SECONDS]."""
    return _duration(text, "seconds", MAX_SECONDS)


def minutes(text: str) -> float:
    """An argparse type: a finite number of minutes in (0, MAX_SECONDS / 60]."""
    return _duration(text, "minutes", MAX_SECONDS / 60)


def _duration(text: str, unit: str, most: float) -> float:
    value = float(text) if _DECIMAL.fullmatch(text) else math.nan
    if not (math.isfinite(value) and 0 < value <= most):
        _refuse(text, f"a number of {unit} in (0, {most:g}]")
    return value


def command_line(text: str) -> str:
    """An argparse type: a command line that splits (as a shell would) into at least a program."""
    try:
        words = shlex.split(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"{text!r} is not a command line: {e}") from e
    if not words:
        _refuse(text, "a command line (it names no program)")
    return text


_ADDRESS = re.compile(r"(?:(?:tcp|tls)://)?(?P<host>[^\s/:]+|\[[0-9a-fA-F:]+\]):(?P<port>\d+)")


def cluster_address(text: str) -> str:
    """An argparse type: a Dask scheduler's address, ``[tcp://|tls://]HOST:PORT`` with a port
    from 1 to 65535 (whether something listens there is found when connecting)."""
    match = _ADDRESS.fullmatch(text)
    if match is None or not 0 < int(match["port"]) < 65536:
        _refuse(text, "a scheduler address, [tcp://|tls://]HOST:PORT")
    return text


def view_keys(text: str) -> list[str]:
    """An argparse type: comma-separated view keys, each declarable at some level
    (``serve --observe``; statemeta.harness.observation), ``status`` among them."""
    keys = [key.strip() for key in text.split(",") if key.strip()]
    try:
        declared(keys)
    except MisuseError as e:
        raise argparse.ArgumentTypeError(f"{text!r}: {e}") from e
    return keys


_Path = TypeVar("_Path")


def _usable(parse: Callable[[str], _Path]) -> Callable[[str], _Path]:
    """A path type whose probe of the file system cannot end in a traceback: a path the
    system refuses to look at (a name too long, a loop of links) is the one-line refusal."""

    @functools.wraps(parse)
    def checked(text: str) -> _Path:
        try:
            return parse(text)
        except OSError as error:
            shown = text if len(text) <= 80 else text[:80] + "..."
            _refuse(shown, f"a usable path ({error.strerror})")

    return checked


@_usable
def input_file(text: str) -> str:
    """An argparse type: ``-`` (stdin) or a path that exists and is not a directory (a file, a
    device, a pipe such as ``<(cmd)``)."""
    if text != "-" and Path(text).is_dir():
        _refuse(text, "a file (it is a directory)")
    if text != "-" and not Path(text).exists():
        _refuse(text, "an existing file")
    return text


@_usable
def existing_directory(text: str) -> Path:
    """An argparse type: a directory that exists."""
    if not Path(text).is_dir():
        _refuse(text, "an existing directory")
    return Path(text)


@_usable
def output_file(text: str) -> Path:
    """An argparse type: a file path that can be written at the end of a long run: not a
    directory, in a directory that exists."""
    path = Path(text)
    if not text or path.is_dir():
        _refuse(text, "a file path (it is a directory)" if text else "a file path")
    if not path.absolute().parent.is_dir():
        _refuse(text, f"a file path in an existing directory ({path.parent} is not one)")
    return path


@_usable
def output_directory(text: str) -> Path:
    """An argparse type: a directory to write files into at the end of a long run: one that
    exists, or a path that can be made (its parent exists and it is not a file)."""
    path = Path(text)
    if not text or (path.exists() and not path.is_dir()):
        _refuse(text, "a directory path (it is a file)" if text else "a directory path")
    if not path.is_dir() and not path.absolute().parent.is_dir():
        _refuse(text, f"a directory path whose parent exists ({path.parent} is not one)")
    return path


def add_callers(parser: argparse.ArgumentParser) -> None:
    """``--callers direct|vnode``: every call the operation table allows, or only the call
    sequences TDengine's own callers make (statemeta.harness.callers, docs/cli.md)."""
    parser.add_argument(
        "--callers",
        choices=[c.value for c in Callers],
        default=Callers.DIRECT.value,
        help="who calls the meta: direct (every call the operations' preconditions allow) or "
        "vnode (only the call sequences TDengine's vnode makes: docs/harness-protocol.md; "
        "default: %(default)s)",
    )


def add_semantics(parser: argparse.ArgumentParser, *, default: str | None) -> None:
    """``--semantics seed|intended``, the one definition every command that runs the
    reference uses (spec/divergences.md); ``default=None``: another source decides (a
    replayed trace's own semantics)."""
    parser.add_argument(
        "--semantics",
        choices=[s.value for s in Semantics],
        default=default,
        help="the reference's semantics (spec/divergences.md; default: "
        + ("%(default)s)" if default else "the trace's)"),
    )
