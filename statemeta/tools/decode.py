"""``statemeta decode hb|task|key [FILE|-]``: the fields of one heartbeat, task value or key.

Input is hex (whitespace allowed anywhere) or raw bytes. Decision: input made only of ASCII
hex digits and whitespace is read as hex, anything else as raw bytes. Raw bytes that happen
to be all hex-digit characters would be misread; pass such bytes as hex.
"""

from __future__ import annotations

import argparse
import json
import string
import sys
from collections.abc import Callable
from typing import Any

from statemeta.codec import decode_hb, decode_task, decode_task_key
from statemeta.codec.vectors import to_jsonable
from statemeta.errors import DecodeError, IncompatibleVersionError, KeyLengthError

__all__ = ["COMMANDS", "LAYOUTS", "decode_fields", "read_input"]


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


def _flatten(value: Any, prefix: str) -> list[str]:
    if isinstance(value, dict):
        return [line for k, v in value.items() for line in _flatten(v, f"{prefix}.{k}")]
    if isinstance(value, list):
        if not value:
            return [f"{prefix.lstrip('.')} = []"]
        return [line for i, v in enumerate(value) for line in _flatten(v, f"{prefix}[{i}]")]
    return [f"{prefix.lstrip('.')} = {value!r}"]


def configure_decode(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("layout", choices=sorted(LAYOUTS), help="hb, task (value) or key")
    parser.add_argument("file", nargs="?", default="-", help="hex or raw bytes; - or absent: stdin")
    parser.add_argument("--json", action="store_true", help="print the fields as JSON")


def _read(file: str) -> bytes:
    if file == "-":
        return sys.stdin.buffer.read()
    with open(file, "rb") as f:
        return f.read()


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
        print(json.dumps(fields, indent=2))
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
