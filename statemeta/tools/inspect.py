"""``statemeta inspect PATH``: what a meta directory holds, read-only, like ``mdb_dump``.

It opens the store read-only: no file is created or written, lock.mdb included (no bytes, no
mtime), and it works beside a writer in another process or in this one (spec/store.md,
Read-only mode). It reports every record of task.db: the tasks that decode, in key order, and
every record that does not, with its key and the reason. A damaged or cut data file is a
StoreError naming it (the command: one line on stderr, exit 1).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import attrs

from statemeta.codec import (
    TaskLevel,
    decode_checkpoint_info,
    decode_task_record,
    latest_checkpoint_id,
)
from statemeta.errors import DecodeError, IncompatibleVersionError, KeyLengthError, StoreError
from statemeta.json_output import json_text
from statemeta.meta.core import TASK_TABLE
from statemeta.store import LmdbStore
from statemeta.store.protocol import DamagedValue, check_value
from statemeta.tables import TaskStatus
from statemeta.tools.ids import stream_id_text, task_id_text

__all__ = ["COMMANDS", "BadRecord", "Inspection", "StoredTask", "inspect_meta"]


@attrs.frozen
class StoredTask:
    """One task.db record that decodes: what a user asks of a stored task."""

    stream_id: int
    task_id: int
    level: int
    fill_history: int
    h_task_id: tuple[int, int]
    stream_task_id: tuple[int, int]
    status: int
    version: int
    checkpoint_id: int
    checkpoint_ver: int
    value_size: int


@attrs.frozen
class BadRecord:
    """One task.db record that does not decode."""

    key_hex: str
    reason: str


@attrs.frozen
class Inspection:
    """The whole of a meta directory's task.db."""

    path: str
    tasks: tuple[StoredTask, ...]
    latest_checkpoint_id: int
    bad_records: tuple[BadRecord, ...]


def _stored_task(key: bytes, value: bytes) -> StoredTask:
    """Decodes one record; raises the codec's errors, or DecodeError for a key/value mismatch."""
    check_value(value)  # a checksum mismatch: reported as a record that does not decode
    task = decode_task_record(key, value)
    version, checkpoint_id, checkpoint_ver = decode_checkpoint_info(value)
    return StoredTask(
        stream_id=task.stream_id,
        task_id=task.task_id,
        level=task.task_level,
        fill_history=task.fill_history,
        h_task_id=(task.h_task_id.stream_id, task.h_task_id.task_id),
        stream_task_id=(task.stream_task_id.stream_id, task.stream_task_id.task_id),
        status=task.task_status,
        version=version,
        checkpoint_id=checkpoint_id,
        checkpoint_ver=checkpoint_ver,
        value_size=len(value),
    )


def inspect_meta(path: str | Path) -> Inspection:
    """Reads task.db under ``path`` read-only; StoreError if there is no meta store there."""
    store = LmdbStore.open(path, readonly=True)
    try:
        # No key length: a record whose key is not 16 bytes is reported, not refused.
        rows = list(store.table(TASK_TABLE, None).items())
    finally:
        store.close()
    tasks: list[StoredTask] = []
    bad: list[BadRecord] = []
    for key, value in rows:
        try:
            tasks.append(_stored_task(key, value))
        except (DecodeError, IncompatibleVersionError, KeyLengthError) as e:
            bad.append(BadRecord(key.hex(), str(e)))
    # a value its checksum does not vouch for gives no checkpoint id
    latest = latest_checkpoint_id(v for _key, v in rows if not isinstance(v, DamagedValue))
    return Inspection(str(path), tuple(tasks), latest, tuple(bad))


# -- the command -----------------------------------------------------------------------------


def _name(enum_type: type[TaskLevel] | type[TaskStatus], value: int) -> str:
    try:
        return enum_type(value).name.lower()
    except ValueError:
        return f"unknown({value})"


def _id_text(task: tuple[int, int]) -> str:
    return f"{stream_id_text(task[0])}/{task_id_text(task[1])}"


def _line(t: StoredTask) -> str:
    return (
        f"stream={stream_id_text(t.stream_id)} task={task_id_text(t.task_id)}"
        f" level={_name(TaskLevel, t.level)} fill_history={t.fill_history}"
        f" h_task={_id_text(t.h_task_id)} stream_task={_id_text(t.stream_task_id)}"
        f" status={_name(TaskStatus, t.status)} ver={t.version}"
        f" checkpoint={t.checkpoint_id}@{t.checkpoint_ver} size={t.value_size}"
    )


def configure_inspect(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", type=Path, help="the meta directory (holding stream/data.mdb)")
    parser.add_argument("--json", action="store_true", help="print the inspection as JSON")


def run_inspect(args: argparse.Namespace) -> int:
    """Prints every task, the latest checkpoint id and every record that does not decode."""
    try:
        found = inspect_meta(args.path)
    except StoreError as e:
        print(f"statemeta inspect: cannot read {args.path}: {e}", file=sys.stderr)
        return 1
    if args.json:
        print(json_text(attrs.asdict(found)))
        return 0
    print(f"{found.path}: {len(found.tasks)} tasks, {len(found.bad_records)} undecodable records")
    for task in found.tasks:
        print(_line(task))
    print(f"latest checkpoint id: {found.latest_checkpoint_id}")
    for record in found.bad_records:
        print(f"undecodable key={record.key_hex}: {record.reason}")
    return 0


COMMANDS = {
    "inspect": (
        "list a meta directory's tasks and undecodable records, read-only",
        configure_inspect,
        run_inspect,
    ),
}
"""The inspector's entry of statemeta.cli.SUBCOMMANDS: name -> (help, configure, run)."""
