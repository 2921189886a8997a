"""``statemeta decode hb|task|key [FILE|-]``: the fields of one heartbeat, task value or key.

Input is hex (whitespace allowed anywhere) or raw bytes. Decision: input made only of ASCII
hex digits and whitespace is read as hex, anything else as raw bytes. Raw bytes that happen
to be all hex-digit characters would be misread; pass such bytes as hex. At most MAX_INPUT
bytes are read (``decode task /dev/zero`` ends at once): larger input is an error, not a decode.
"""

from __future__ import annotations

import argparse
import string
import sys
from collections.abc import Callable
from typing import Any

from statemeta.cli_args import input_file
from statemeta.codec import decode_hb, decode_task, decode_task_key
from statemeta.codec.vectors import to_jsonable
from statemeta.errors import DecodeError, IncompatibleVersionError, KeyLengthError
from statemeta.json_output import json_text
from statemeta.tools.ids import ID_FORMATS

__all__ = ["COMMANDS", "LAYOUTS", "MAX_INPUT", "decode_fields", "read_input"]

MAX_INPUT = 64 * 1024 * 1024
"""The most bytes decode reads (64 MiB): hex of a 32 MiB value, whitespace included. A task
value or heartbeat is kilobytes; a query plan (qmsg) of megabytes still fits."""


def _key_fields(b: bytes) -> dict[str, int]:
    stream_id, task_id = decode_task_key(b)
    return {"stream_id": stream_id, "task_id": task_id}


LAYOUTS: dict[str, Callable[[bytes], Any]] = {
    "hb": lambda b: to_jsonable(decode_hb(b)),
    "task": lambda b: to_jsonable(decode_task(b)),
    "key": _key_fields,
}
"""Layout name -> its checked decoder, giving the fields as JSON data (spec/layouts.md §8)."""

_HEX_TEXT = frozenset((string.hexdigits + string.whitespace).encode())


def read_input(data: bytes) -> bytes:
    """The bytes ``data`` stands for: hex text decoded, anything else as it is."""
    if data and frozenset(data) <= _HEX_TEXT:
        digits = bytes(b for b in data if chr(b) not in string.whitespace)
        if len(digits) % 2:
            raise DecodeError(f"odd number of hex digits ({len(digits)})", field="input")
        return bytes.fromhex(digits.decode())
    return data


def decode_fields(layout: str, data: bytes) -> Any:
    """The decoded fields of ``data`` (hex or raw) as ``layout``; raises the codec's errors."""
    return LAYOUTS[layout](read_input(data))


def _flatten(value: Any, prefix: str, name: str = "") -> list[str]:
    """One ``path = value`` line per field; ``name``: the field's own name (ids by ID_FORMATS)."""
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flatten(v, f"{prefix}.{k}", k)]
    if isinstance(value, list):
        if not value:
            return [f"{prefix.lstrip('.')} = []"]
        return [line for i, v in enumerate(value) for line in _flatten(v, f"{prefix}[{i}]")]
    shown = ID_FORMATS[name](value) if name in ID_FORMATS and type(value) is int else repr(value)
    return [f"{prefix.lstrip('.')} = {shown}"]


def configure_decode(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("layout", choices=sorted(LAYOUTS), help="hb, task (value) or key")
    parser.add_argument(
        "file",
        nargs="?",
        default="-",
        type=input_file,
        help=f"hex or raw bytes, at most {MAX_INPUT // 2**20} MiB; - or absent: stdin",
    )
    parser.add_argument("--json", action="store_true", help="print the fields as JSON")


def _read(file: str) -> bytes:
    """The input's bytes; raises DecodeError past MAX_INPUT (reading no further)."""
    if file == "-":
        data = sys.stdin.buffer.read(MAX_INPUT + 1)
    else:
        with open(file, "rb") as f:
            data = f.read(MAX_INPUT + 1)
    if len(data) > MAX_INPUT:
        raise DecodeError(
            f"larger than {MAX_INPUT} bytes, the most decode reads", field="input"
        )
    return data


def run_decode(args: argparse.Namespace) -> int:
    """Prints the fields, one ``path = value`` a line, or exits 1 naming the field and offset."""
    try:
        fields = decode_fields(args.layout, _read(args.file))
    except OSError as e:
        print(f"statemeta decode: {e}", file=sys.stderr)
        return 1
    except (DecodeError, IncompatibleVersionError, KeyLengthError) as e:
        print(f"statemeta decode {args.layout}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json_text(fields))
    else:
        print("\n".join(_flatten(fields, "")))
    return 0


COMMANDS = {
    "decode": (
        "decode a heartbeat, task value or task key from hex or raw bytes",
        configure_decode,
        run_decode,
    ),
}
"""The decoder's entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
