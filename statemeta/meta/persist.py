"""How a meta reads task.db: the codec it uses, the compatibility check at open, and the plan
of a load (what load_all adds, removes, clears and skips), computed from the stored rows.

Writing and committing stay in the core (core.py ``_durably``): their outcome decides whether
memory changes. Everything here is a function of the rows read, so a load can be planned,
checked and then applied in one commit.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterable

import attrs

from statemeta.codec import (
    NO_RELATED_TASK,
    SSTREAM_TASK_INCOMPATIBLE_VER,
    SSTREAM_TASK_VER,
    StreamTask,
    TaskId,
    cached,
    checkpoint_info_read_past_end,
    decode_checkpoint_info,
    decode_task_key,
    decode_task_record,
    encode_task,
    encode_task_key,
    task_read_past_end,
)
from statemeta.errors import (
    DecodeError,
    IncompatibleVersionError,
    KeyLengthError,
    StatemetaError,
    UndefinedBehaviour,
)
from statemeta.lifecycle import TaskStatus
from statemeta.meta.entry import ExpandHook
from statemeta.semantics import Profile, Switch
from statemeta.store.protocol import Store, Table, check_value


@attrs.frozen
class Codec:
    """The codec functions a meta calls to persist and load its records."""

    task_key: Callable[[int, int], bytes]
    encode: Callable[[StreamTask], bytes]
    decode_record: Callable[[bytes, bytes], StreamTask]
    checkpoint_info: Callable[[bytes], tuple[int, int, int]]

    def record(self, task: StreamTask) -> tuple[bytes, bytes]:
        """The task's key and value in task.db."""
        return self.task_key(task.stream_id, task.task_id), self.encode(task)


PLAIN_CODEC = Codec(encode_task_key, encode_task, decode_task_record, decode_checkpoint_info)
"""A meta's codec outside check mode: the plain functions."""
CHECK_CODEC = Codec(cached.task_key, cached.encode, cached.decode_record, cached.checkpoint_info)
"""The codec in check mode: memoised (statemeta/codec/cached.py says why that is safe)."""


def codec_for(check_invariants: bool) -> Codec:
    return CHECK_CODEC if check_invariants else PLAIN_CODEC


def over_read(key: bytes, at: str) -> UndefinedBehaviour:
    """U1 seed: the seed's decoder reads the record under ``key`` past its end at ``at``."""
    try:
        what = f"the record of task {TaskId(*decode_task_key(key))}"
    except StatemetaError:
        what = f"the record under key {key.hex()}"
    return UndefinedBehaviour("heap over-read", what, at, divergence="U1")


def check_reads_at_open(tasks: Table) -> None:
    """U1 seed: the records streamMetaOpen decodes with their length header trusted, which
    raise UndefinedBehaviour where one is read past its end. streamMetaCheckBackendCompatible
    reads the checkpoint-info prefix of each record up to the first that decodes; at the seed
    SSTREAM_TASK_NEED_CONVERT_VER is SSTREAM_TASK_VER (2), so a version-2 first record makes
    streamMetaCvtDbFormat read every record's prefix (streamMetaGetLatestCheckpointId)."""
    rows = list(tasks.items())
    msg_ver = None
    for key, value in rows:
        if checkpoint_info_read_past_end(value):
            raise over_read(key, "open")
        try:
            msg_ver = decode_checkpoint_info(value)[0]
        except DecodeError:
            continue  # the seed goes on to the next record
        break
    if msg_ver == SSTREAM_TASK_VER:
        for key, value in rows:
            if checkpoint_info_read_past_end(value):
                raise over_read(key, "open")


def check_compatible(store: Store, tasks: Table, codec: Codec, profile: Profile) -> None:
    """streamMetaCheckBackendCompatible, over every record: version <= 1 cannot be opened.

    The seed (M6) reads the first record only; one that does not decode counts as compatible.
    The seed's decoder trusts a record's length header (U1: ``check_reads_at_open``).
    """
    if profile.seed(Switch.LENGTH_HEADER_TRUSTED):  # U1
        check_reads_at_open(tasks)
    first_only = profile.seed(Switch.COMPAT_CHECKS_FIRST_RECORD)  # M6
    for _key, value in tasks.items():
        msg_ver: int | None
        try:
            msg_ver, _checkpoint_id, _checkpoint_ver = codec.checkpoint_info(value)
        except DecodeError:
            msg_ver = None  # load_all reports it
        if msg_ver is not None and msg_ver <= SSTREAM_TASK_INCOMPATIBLE_VER:
            raise IncompatibleVersionError(msg_ver, path=store.path)
        if first_only:
            return


@attrs.frozen
class SkippedRecord:
    """A task.db record load_all could not use (left in the store)."""

    key_hex: str
    reason: str


def dropped_at_load(task: StreamTask) -> bool:
    """Persisted as DROPPING: load deletes it (and commits the deletion) instead of loading it.
    The one reading of that status in a stored record (the explorer and the coverage classes
    ask it too)."""
    return task.task_status == TaskStatus.DROPPING


@attrs.frozen
class LoadReport:
    """What load_all did with each record of task.db, in key byte order."""

    loaded: tuple[TaskId, ...]
    removed: tuple[TaskId, ...]
    """Persisted as DROPPING: deleted, and the deletion committed."""
    duplicates: tuple[TaskId, ...]
    """Already in the map: the in-memory task was kept."""
    undecodable: tuple[SkippedRecord, ...]
    """Did not decode: skipped, reported, never deleted."""
    cleared: tuple[TaskId, ...]
    """Stream tasks whose fill-history task was removed: their related id cleared, saved."""


@attrs.frozen
class LoadPlan:
    """What a load does: the records to add (expanded, links cleared), the keys to delete, the
    records to rewrite with their link cleared, and the report."""

    add: tuple[StreamTask, ...]
    deletes: tuple[bytes, ...]
    cleared: dict[TaskId, StreamTask]
    report: LoadReport
    aborted: Exception | None = None
    """M4 seed: the error of the record the walk stopped at (what was planned before stays)."""

    @property
    def writes(self) -> bool:
        return bool(self.deletes or self.cleared)


def plan_load(
    rows: Iterable[tuple[bytes, bytes]],
    mapped: dict[TaskId, StreamTask],
    codec: Codec,
    expand: ExpandHook,
    profile: Profile,
    removed_before: Collection[TaskId] = (),
    is_dropping: Callable[[StreamTask], bool] = dropped_at_load,
) -> LoadPlan:
    """The plan of load_all over ``rows`` (key byte order), ``mapped`` being the map's records.

    DROPPING records are deleted and a stream task pointing at a deleted fill-history task (or
    at one ``removed_before``: removed since the meta opened) gets its related id cleared; a
    mapped id keeps its in-memory task; an undecodable record is skipped and reported. The
    expand hook may raise: nothing is planned then.

    The seed stops the walk at an undecodable record (M4: ``aborted``) and recycles a DROPPING
    record whose id is mapped (M5); a record its decoder reads past the end of raises
    UndefinedBehaviour (U1). ``is_dropping`` reads a record as DROPPING (a broken variant
    reads none so)."""
    aborts = profile.seed(Switch.LOAD_ABORTS_ON_UNDECODABLE)  # M4
    dropping_first = profile.seed(Switch.DROPPING_BEFORE_DUPLICATE)  # M5
    aborted: Exception | None = None
    loaded: list[StreamTask] = []
    removed: list[TaskId] = []
    duplicates: list[TaskId] = []
    undecodable: list[SkippedRecord] = []
    deletes: list[bytes] = []
    trusted = profile.seed(Switch.LENGTH_HEADER_TRUSTED)  # U1
    for key, value in rows:
        try:
            check_value(value)  # a checksum mismatch is reported as a record that does not decode
            if trusted and task_read_past_end(value):
                raise over_read(key, "load")
            task = codec.decode_record(key, value)
        except (DecodeError, IncompatibleVersionError, KeyLengthError) as e:
            undecodable.append(SkippedRecord(key.hex(), str(e)))
            if aborts:
                aborted = e
                break
            continue
        dropping = is_dropping(task)
        if task.id in mapped and not (dropping and dropping_first):
            duplicates.append(task.id)
        elif dropping:
            removed.append(task.id)
            deletes.append(key)
        else:
            loaded.append(expand(task, task.checkpoint_ver + 1))
    if aborted is not None:  # the seed returns before its recycle loop: nothing deleted
        removed.clear()
        deletes.clear()
    dropped = {*removed, *removed_before}
    cleared = {
        task.id: attrs.evolve(task, h_task_id=NO_RELATED_TASK)
        for task in itertools.chain(mapped.values(), loaded)
        if not task.fill_history and task.h_task_id in dropped
    }
    report = LoadReport(
        tuple(t.id for t in loaded),
        tuple(removed),
        tuple(duplicates),
        tuple(undecodable),
        tuple(cleared),
    )
    return LoadPlan(tuple(loaded), tuple(deletes), cleared, report, aborted)
