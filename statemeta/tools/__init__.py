"""Tools a user reaches for on stored bytes and on a run's results: ``statemeta inspect``,
``statemeta decode`` and ``statemeta report``."""

from statemeta.tools.decode import COMMANDS as DECODE_COMMANDS
from statemeta.tools.inspect import COMMANDS as INSPECT_COMMANDS
from statemeta.tools.report import COMMANDS as REPORT_COMMANDS

COMMANDS = INSPECT_COMMANDS | DECODE_COMMANDS | REPORT_COMMANDS
"""The tools' entries of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""

__all__ = ["COMMANDS"]
