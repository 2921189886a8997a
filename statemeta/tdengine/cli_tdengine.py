"""``statemeta tdengine build|serve --src TREE``: TDengine's own code, built and served.

Every failure to build (a missing tree, file or compiler, a changed upstream file, gcc's
refusal) is one line on stderr and exit 2, as every command's refusal (docs/cli.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from statemeta.cli_args import EXIT_USAGE
from statemeta.errors import TDengineBuildError
from statemeta.tdengine.build import build, default_out
from statemeta.tdengine.server import serve

__all__ = ["COMMANDS"]


def _configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "action",
        choices=("build", "serve"),
        help="build: check the tree's upstream files and compile them with the shim; serve: "
        "serve the compiled code over the harness protocol (building first when needed)",
    )
    parser.add_argument(
        "--src",
        type=Path,
        required=True,
        metavar="TREE",
        help="a TDengine checkout, or a folder laid out like one",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        metavar="DIR",
        help=f"where builds go (default {default_out()})",
    )
    parser.add_argument(
        "--no-sanitize", action="store_true", help="build without AddressSanitizer and UBSan"
    )


def _run(args: argparse.Namespace) -> int:
    prog = f"statemeta tdengine {args.action}"
    try:
        made = build(args.src, args.out, sanitize=not args.no_sanitize)
    except TDengineBuildError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return EXIT_USAGE
    if args.action == "build":
        state = "up to date" if made.cached else f"built in {made.seconds:.1f} s"
        print(f"{made.driver} ({state})")
        return 0
    return serve(made.driver, sys.stdin, sys.stdout)


COMMANDS = {
    "tdengine": (
        "TDengine's own stream-meta code: build it from a tree, serve it to the harness",
        _configure,
        _run,
    ),
}
"""The adapter's entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
