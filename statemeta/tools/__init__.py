"""Tools a user reaches for on stored bytes: ``statemeta inspect`` and ``statemeta decode``."""

from statemeta.tools.decode import COMMANDS as DECODE_COMMANDS
from statemeta.tools.inspect import COMMANDS as INSPECT_COMMANDS

COMMANDS = INSPECT_COMMANDS | DECODE_COMMANDS
"""The tools' entries of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""

__all__ = ["COMMANDS"]
