"""``statemeta report INPUT [-o OUT.html]``: one run's results as one self-contained page.

The input (statemeta.tools.report_model.INPUT_KINDS) is read into a Report, the page rendered
(statemeta.tools.report_html) and written; an input it cannot draw is refused in one line.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from statemeta.cli_args import input_file, output_file
from statemeta.errors import ReportInputError
from statemeta.tools.report_html import render
from statemeta.tools.report_model import INPUT_KINDS, read_report

__all__ = ["COMMANDS", "default_output", "write_report"]


def default_output(source: str) -> Path:
    """Where the page goes without ``-o``: beside the input, as ``.html`` (stdin: the
    current directory's ``statemeta-report.html``)."""
    return Path("statemeta-report.html") if source == "-" else Path(source).with_suffix(".html")


def write_report(source: Path, out: Path, text: str | None = None) -> None:
    """Reads ``source`` (``text``: its text, already read) and writes its page to ``out``."""
    page = render(read_report(source, text))
    out.write_text(page, encoding="utf-8")


def _configure(parser: argparse.ArgumentParser) -> None:
    kinds = "; ".join(INPUT_KINDS.values())
    parser.add_argument("input", type=input_file, metavar="INPUT",
                        help=f"what to draw, - for stdin: {kinds}")
    parser.add_argument("-o", "--output", type=output_file, metavar="OUT.html",
                        help="the page to write (default: INPUT with .html)")


def _run(args: argparse.Namespace) -> int:
    """Writes the page; a refused input is one line on stderr, exit 2."""
    out = args.output or default_output(args.input)
    if args.input != "-" and out.resolve() == Path(args.input).resolve():
        print(f"statemeta report: error: {out}: the page would overwrite its input",
              file=sys.stderr)
        return 2
    text = sys.stdin.read() if args.input == "-" else None
    try:
        write_report(Path(args.input), out, text)
    except ReportInputError as error:
        print(f"statemeta report: error: {error}", file=sys.stderr)
        return 2
    print(f"report written to {out}")
    return 0


COMMANDS = {
    "report": ("draw a check's or explore's --json, a trace or a concurrent history as one "
               "self-contained HTML page", _configure, _run),
}
"""The report's entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
