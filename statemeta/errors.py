"""Every exception statemeta raises, in one place.

Protocol results (a rejected event, a duplicate register) are *outcomes*, not exceptions.
Exceptions are for misuse of the API and for data and I/O errors; each message names the
object (task id, key, path, offset, table row) and what was expected.
"""

from __future__ import annotations


class StatemetaError(Exception):
    """Base class of every error statemeta raises on purpose."""


# -- the normative tables ----------------------------------------------------------------


class SpecError(StatemetaError):
    """A normative table in spec/ is malformed; the message names the file and the row."""


# -- bytes ---------------------------------------------------------------------------------


class DecodeError(StatemetaError):
    """Bytes do not decode: truncated, corrupt or oversized.

    ``field`` names what was being read and ``offset`` where (from the start of the buffer).
    """

    def __init__(self, reason: str, *, field: str = "", offset: int | None = None) -> None:
        self.reason = reason
        self.field = field
        self.offset = offset
        where = ""
        if field:
            where += f" in field {field!r}"
        if offset is not None:
            where += f" at offset {offset}"
        super().__init__(f"cannot decode{where}: {reason}")


class IncompatibleVersionError(StatemetaError):
    """A stored task value has a version this reader cannot handle."""

    def __init__(self, version: int, *, expected: str = "2", path: str | None = None) -> None:
        self.version = version
        self.path = path
        where = f" in {path}" if path else ""
        hint = (
            f"; remove {path} and rebuild the streams (as TDengine asks)"
            if path and version <= 1
            else ""
        )
        super().__init__(
            f"incompatible task value version {version}{where} (expected {expected}){hint}"
        )


class KeyLengthError(StatemetaError, ValueError):
    """A key of the wrong length was offered to a table with a fixed key length."""

    def __init__(self, table: str, expected: int, got: int) -> None:
        self.table = table
        self.expected = expected
        self.got = got
        super().__init__(f"table {table!r} takes {expected}-byte keys, got {got} bytes")


# -- the store -----------------------------------------------------------------------------


class StoreError(StatemetaError):
    """The key-value store failed (I/O, a full map, a corrupt environment)."""


class StoreFault(StoreError):
    """A failure injected on purpose by the fault-injecting store."""


class MissingKeyError(StoreError, KeyError):
    """Delete of a key that is not in the table (an error, as in tdb)."""

    def __init__(self, table: str, key: bytes) -> None:
        self.table = table
        self.key = key
        super().__init__(f"key {key.hex()} is not in table {table!r}")

    def __str__(self) -> str:  # KeyError would repr() the message
        return str(self.args[0])


class TransactionError(StoreError):
    """The store was used against its transaction protocol (write with none open, ...)."""


class StoreClosedError(StoreError):
    """The store (or a crashed fault-injecting store) was used after it was closed."""


# -- the meta ------------------------------------------------------------------------------


class MisuseError(StatemetaError):
    """The API was used against its contract (the message says which rule)."""


class UndefinedBehaviour(StatemetaError):
    """The seed's code would read or write memory it does not own at this point (a use after
    free, a read past a buffer): in TDengine the process's behaviour is undefined from here on,
    and the sanitizers stop it. Raised only where the seed profile takes the seed's side of an
    undefined-behaviour switch (spec/divergences.md, U1-U3); the intended semantics has none.

    Nothing after it is modelled: the operation that raises it changed nothing, and the meta
    should only be closed. ``kind`` is what the memory error is ("use after free", "heap
    over-read"), ``what`` the object (a task, a record), ``at`` the operation, and
    ``divergence`` the id of the row that names the switch."""

    def __init__(self, kind: str, what: str, at: str, *, divergence: str) -> None:
        self.kind = kind
        self.what = what
        self.at = at
        self.divergence = divergence
        super().__init__(f"undefined behaviour: {kind} of {what} at {at}")


class ReleaseError(MisuseError):
    """A task was released more often than it was acquired (refcount would go below 0)."""


class MetaClosedError(MisuseError):
    """An operation on a meta that is closed."""


class PreconditionError(MisuseError):
    """An operation broke a precondition the seed asserts (reference section 8.1; an ASSERT
    aborts TDengine's process): HALT reaching a task with no fill-history task, a second phase
    with nothing active in SCAN_HISTORY / HALT / CK, start_one of a downstream-ready task.
    Raised before anything changes, in both semantics; the message names the task and the rule.
    The harness, the property suite and the explorer never send such an operation (each
    operation's precondition is the ``precondition`` column of its OpSpec)."""


class UnknownTaskError(StatemetaError, KeyError):
    """An operation that needs a task named one that is not in the meta."""

    def __init__(self, stream_id: int, task_id: int) -> None:
        self.stream_id = stream_id
        self.task_id = task_id
        super().__init__(f"no task 0x{stream_id:x}-0x{task_id:x} in the meta")

    def __str__(self) -> str:
        return str(self.args[0])


class InvariantViolation(StatemetaError, AssertionError):
    """An invariant of spec/invariants.md does not hold; names its id and the evidence."""

    def __init__(self, invariant_id: str, evidence: str) -> None:
        self.invariant_id = invariant_id
        self.evidence = evidence
        super().__init__(f"invariant {invariant_id!r} violated: {evidence}")


class InvalidRecordError(MisuseError, ValueError):
    """A record was given a value its binary layout cannot hold (names record, field, value)."""


# -- the conformance harness ----------------------------------------------------------------


class SutError(StatemetaError):
    """The implementation under test broke the harness protocol (docs/harness-protocol.md).

    It could not be started, exited, hung past the timeout, closed its output, or answered
    something that is not the JSON response to the request. Names the command, the request,
    what went wrong and the tail of the child's stderr.
    """

    def __init__(self, command: str, request: str, problem: str, *, stderr: str = "") -> None:
        self.command = command
        self.request = request
        self.problem = problem
        self.stderr = stderr
        tail = f"\n--- its stderr (last lines) ---\n{stderr}" if stderr else ""
        super().__init__(f"{command!r} on request {request}: {problem}{tail}")


class SutFault(SutError):
    """The implementation answered that a call hit undefined behaviour or a fatal internal
    error (a sanitizer's report, a failed assertion): the protocol's ``fault`` answer.
    ``request`` is the call, ``problem`` the finding (docs/harness-protocol.md)."""


class ClusterError(StatemetaError):
    """The explorer cannot use the cluster it was pointed at (``--cluster ADDRESS``): the
    engine (Dask distributed, the ``cluster`` extra) is not installed, the scheduler cannot be
    reached, it has no workers, or its workers cannot run this statemeta."""

    def __init__(self, address: str, problem: str) -> None:
        self.address = address
        self.problem = problem
        super().__init__(f"cluster {address}: {problem}")


class TraceFormatError(MisuseError):
    """A trace file cannot be read, or one of its fields is not what the trace format says.

    Names the file (``where``), the field (``field``, e.g. ``steps[2].args``; empty when the
    file as a whole is at fault) and what was expected.
    """

    def __init__(self, where: str, field: str, problem: str) -> None:
        self.where = where
        self.field = field
        self.problem = problem
        at = f", field {field!r}" if field else ""
        super().__init__(f"trace {where}{at}: {problem}")


class ReportInputError(StatemetaError, ValueError):
    """``statemeta report`` was given something it cannot draw: names the input and why."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class SutAborted(BaseException):
    """Stops a Hypothesis run at the first SutError, without shrinking.

    Not an Exception on purpose: Hypothesis shrinks every Exception, and each attempt on a hung
    implementation would cost a full timeout. ``error`` is the SutError.
    """

    def __init__(self, error: SutError) -> None:
        self.error = error
        super().__init__(str(error))


class TDengineBuildError(StatemetaError):
    """TDengine's code cannot be built as statemeta checks it: the tree, one of its files or
    the compiler is missing, a file differs from the seed commit's, or gcc refused.

    ``where`` names the tree, the file or the program; the message says what is wrong."""

    def __init__(self, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(f"{where}: {problem}")


class CompiledCodeFault(StatemetaError):
    """TDengine's compiled code stopped during a call: a sanitizer's report (use after free,
    over-read, undefined behaviour) or a failed ASSERT. ``finding`` is the report's first line,
    ``operation`` the call it happened in."""

    def __init__(self, finding: str, operation: str) -> None:
        self.finding = finding
        self.operation = operation
        super().__init__(f"{finding} (during {operation})")


# -- arguments of the public API (statemeta.arguments) ------------------------------------


class ArgumentError(MisuseError):
    """A public function was given an argument it refuses; raised before anything changes.
    Names the function, the parameter, the value and what was expected."""

    def __init__(self, function: str, parameter: str, value: object, expected: str) -> None:
        self.function = function
        self.parameter = parameter
        self.value = value
        self.expected = expected
        super().__init__(f"{function}: {parameter} = {value!r}: expected {expected}")


class ArgumentTypeError(ArgumentError, TypeError):
    """A public function was given a value of the wrong type (a str for an enum, a bool or a
    float for an int, ...); raised before anything changes. Names the function, the parameter,
    the value and what was expected."""


class ArgumentValueError(ArgumentError, ValueError):
    """A public function was given a value of the right type out of its range (an id past
    int32, a negative version, a non-finite float); raised before anything changes. Names the
    function, the parameter, the value and the range."""


class RecordTypeError(InvalidRecordError, TypeError):
    """A record field was given a value of the wrong type (a bool for an id, bytes for text)."""
