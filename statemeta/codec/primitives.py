"""TDengine's encoder primitives (tencode.h at the seed) as construct pieces.

Theory of operation. Every layout is one construct definition built from these pieces, next
to its attrs record (``Record`` adapts a ``Struct`` to a record). The same definition is used
two ways:

- **checked** (``parse_checked``): interpreted construct over a ``TrackedStream`` that records
  where each read started, so any failure becomes a ``DecodeError`` naming the field (the
  construct path) and the absolute offset. Untrusted bytes are only ever parsed this way.
- **compiled** (``compiled_builder``): construct's compiler for encoding trusted records. The
  adapters here emit code for the compiler so whole layouts stay compiled.

Speed comes from ``FixedRun`` (consecutive fixed-width fields declared together, read and
written with one ``struct.Struct``) and from ``Record`` handling its fields itself: it builds a
construct context only when its fields need one, and on decode it skips the attrs validators
that the wire format already guarantees (an I32 field always fits ``IntRange(32)``).

The decoders are strict where TDengine's are lax, so that only canonical bytes decode and
``encode(decode(b)) == b``: varints must be minimal and fit their width, a block length must
fit in the buffer, strings must be NUL-terminated UTF-8 without inner NULs.
"""

from __future__ import annotations

import contextlib
import functools
import io
import struct
from collections.abc import Callable
from typing import Any

import attrs
import construct as c

from statemeta.codec.fields import IntRange, c_double
from statemeta.errors import DecodeError, InvalidRecordError

_CACHED_HASH = "_attrs_cached_hash"

# -- fixed-width little-endian scalars (tPut in host order: little-endian) -------------------

I8 = c.Int8sl
U8 = c.Int8ul
I16 = c.Int16sl
U16 = c.Int16ul
I32 = c.Int32sl
U32 = c.Int32ul
I64 = c.Int64sl
U64 = c.Int64ul
Float = c.Float32l
Double = c.Float64l


class LayoutError(c.ConstructError):  # type: ignore[misc]
    """Bytes that were read but break a rule of the layout (turned into a DecodeError)."""


class Reject(c.Construct):  # type: ignore[misc]
    """A branch that cannot be parsed or built (e.g. an unknown output type)."""

    def __init__(self, reason: str) -> None:
        super().__init__()
        self.reason = reason

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        raise LayoutError(self.reason, path=path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        raise LayoutError(self.reason, path=path)


# -- varints ------------------------------------------------------------------------------


class Leb128(c.Construct):  # type: ignore[misc]
    """U16v/U32v/U64v (unsigned LEB128) and, with ``signed``, I16v/I32v/I64v (zigzag first).

    Unlike tDecodeU32v, the decoder rejects non-minimal encodings and values past the width.
    """

    def __init__(self, bits: int, *, signed: bool) -> None:
        super().__init__()
        self.bits = bits
        self.signed = signed
        self.max_len = (bits + 6) // 7

    def _parse(self, stream: Any, context: Any, path: str) -> int:
        value = 0
        for i in range(self.max_len):
            byte: int = c.stream_read(stream, 1, path)[0]
            value |= (byte & 0x7F) << (7 * i)
            if not byte & 0x80:
                if byte == 0 and i > 0:
                    raise LayoutError("overlong varint (a trailing zero group)", path=path)
                break
        else:
            raise LayoutError(f"varint longer than {self.max_len} bytes", path=path)
        if value >> self.bits:
            raise LayoutError(f"varint overflows {self.bits} bits", path=path)
        if self.signed:
            return (value >> 1) ^ -(value & 1)
        return value

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> int:
        half = 1 << (self.bits - 1)
        low, high = (-half, half - 1) if self.signed else (0, (1 << self.bits) - 1)
        if not isinstance(obj, int) or not low <= obj <= high:
            raise c.IntegerError(f"{obj!r} does not fit in {self.bits} bits", path=path)
        x = ((obj << 1) ^ (obj >> (self.bits - 1))) & ((1 << self.bits) - 1) if self.signed else obj
        out = bytearray()
        while x > 0x7F:
            out.append(0x80 | (x & 0x7F))
            x >>= 7
        out.append(x)
        c.stream_write(stream, bytes(out), len(out), path)
        return obj


U16v = Leb128(16, signed=False)
U32v = Leb128(32, signed=False)
U64v = Leb128(64, signed=False)
I16v = Leb128(16, signed=True)
I32v = Leb128(32, signed=True)
I64v = Leb128(64, signed=True)


# -- adapters that the compiler keeps compiled ------------------------------------------------


class Adapter(c.Adapter):  # type: ignore[misc]
    """An adapter whose compiled build calls ``_encode`` then the compiled subcon."""

    def _emitbuild(self, code: Any) -> str:
        self._compileinstance(code)
        sub = self.subcon._compilebuild(code)
        return f"reuse(linkedinstances[{id(self)}]._encode(obj, this, None), lambda obj: ({sub}))"


class TupleOf(Adapter):
    """An array decoded as a tuple (records hold tuples, so they stay hashable)."""

    def _decode(self, obj: Any, context: Any, path: str) -> tuple[Any, ...]:
        return tuple(obj)

    def _encode(self, obj: Any, context: Any, path: str) -> Any:
        return obj


def _context(parent: Any, stream: Any, *, building: bool) -> c.Container:
    """A construct context for the fields of one record (what a Struct would make)."""
    context = c.Container(
        _=parent,
        _params=parent["_params"],
        _root=None,
        _parsing=not building,
        _building=building,
        _sizing=False,
        _subcons=None,
        _io=stream,
        _index=parent.get("_index", None),
    )
    context._root = parent.get("_root", context)
    return context


_INT_FORMATS = {
    "b": IntRange(8),
    "B": IntRange(8, False),
    "h": IntRange(16),
    "H": IntRange(16, False),
    "l": IntRange(32),
    "L": IntRange(32, False),
    "q": IntRange(64),
    "Q": IntRange(64, False),
}
"""The validator that a struct integer format guarantees for the value it decodes."""

Decode = Callable[[Any, Any, str], Any]
Encode = Callable[[Any, Any, str], Any]


def _run_member(sc: c.Construct) -> tuple[str, Decode | None, Encode | None]:
    """(struct format, decode, encode) of a FixedRun member; None where the value is as packed."""
    if isinstance(sc, c.Renamed):
        return _run_member(sc.subcon)
    if isinstance(sc, c.FormatField):
        return sc.fmtstr.lstrip("<"), None, None
    if isinstance(sc, CStrWithLen):
        prefix = sc.prefix

        def unprefix(raw: bytes, context: Any, path: str) -> bytes:
            if not raw.startswith(prefix):
                raise LayoutError("bad binary length", path=path)
            return raw[len(prefix) :]

        return f"{len(prefix) + sc.length}s", unprefix, lambda obj, context, path: prefix + obj
    if isinstance(sc, c.Adapter):
        fmt, inner_decode, inner_encode = _run_member(sc.subcon)

        def decode(raw: Any, context: Any, path: str) -> Any:
            value = inner_decode(raw, context, path) if inner_decode else raw
            return sc._decode(value, context, path)

        def encode(obj: Any, context: Any, path: str) -> Any:
            value = sc._encode(obj, context, path)
            return inner_encode(value, context, path) if inner_encode else value

        return fmt, decode, encode
    raise TypeError(f"{sc} is not a fixed-width field")


class FixedRun(c.Construct):  # type: ignore[misc]
    """Consecutive fixed-width fields, read and written with one ``struct.Struct``.

    Members are named integer/float fields, ``CStrWithLen`` and adapters over either. A run
    sits nameless in a Record's Struct: its members are fields of the record. The parse reads
    the whole run at once; if anything in it is wrong (too short, a bad binary length, an
    adapter's rule) it re-reads the run field by field, so the error names the exact field and
    offset as the field-by-field layout would.
    """

    def __init__(self, *members: c.Construct) -> None:
        super().__init__()
        self.members = members
        self.names: tuple[str, ...] = tuple(sc.name for sc in members)
        parts = [_run_member(sc) for sc in members]
        self.packer = struct.Struct("<" + "".join(fmt for fmt, _, _ in parts))
        self.converted = tuple(
            (i, sc.name, decode, encode)
            for i, (sc, (_, decode, encode)) in enumerate(zip(members, parts, strict=True))
            if decode is not None and encode is not None
        )
        self.guaranteed = {
            sc.name: fmt for sc, (fmt, decode, _) in zip(members, parts, strict=True) if not decode
        }

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        start = stream.tell()
        data = stream.read(self.packer.size)
        if len(data) == self.packer.size:
            values = dict(zip(self.names, self.packer.unpack(data), strict=True))
            if not self.converted:
                return values
            local = c.Container(values)
            try:
                for _, name, decode, _ in self.converted:
                    local[name] = decode(local[name], local, path)
            except c.ConstructError:
                pass
            else:
                return local
        stream.seek(start)
        local = c.Container()
        for sc in self.members:
            local[sc.name] = sc._parsereport(stream, local, path)
        return local

    def pack(self, source: Any) -> bytes:
        """The run's bytes from an object with the members as attributes (None if missing)."""
        values = [getattr(source, name, None) for name in self.names]
        for i, _, _, encode in self.converted:
            values[i] = encode(values[i], source, "")
        return self.packer.pack(*values)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        data = self.pack(obj)
        c.stream_write(stream, data, len(data), path)
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        return self.packer.size

    def _emitbuild(self, code: Any) -> str:
        """Build from ``obj``, a record: one pack call, converted members through their encode."""
        packer = f"run_packer_{code.allocateId()}"
        code.append(f"{packer} = struct.Struct({self.packer.format!r})")
        args = [f"obj.{name}" for name in self.names]
        if self.converted:
            self._compileinstance(code)
        for k, (i, name, _, _) in enumerate(self.converted):
            encode = f"linkedinstances[{id(self)}].converted[{k}][3]"
            args[i] = f"{encode}(getattr(obj, {name!r}, None), obj, '')"
        return f"io.write({packer}.pack({', '.join(args)}))"


class Record(c.Subconstruct):  # type: ignore[misc]
    """A ``Struct`` whose value is an attrs record of the same field names.

    Struct fields that are not attributes of the record (a version, a count) build from their
    own rule (``Const``, ``Rebuild``); record properties (a derived type) are encoded too.
    A context (``this``) is made only when a field is not a FixedRun, a Record or a piece that
    reads no context (``reads_context = False``). Decoding sets the fields directly and runs
    only the validators that the field's struct format does not already guarantee.
    """

    reads_context = False

    def __init__(self, record: type, struct: c.Struct) -> None:
        super().__init__(struct)
        self.record = record
        self.fields = struct.subcons
        self.runs = {id(sc) for sc in struct.subcons if isinstance(sc, FixedRun)}
        self.init_names = tuple(a.name for a in attrs.fields(record))
        self.caches_hash = _CACHED_HASH in getattr(record, "__slots__", ())
        """attrs' ``cache_hash``: the slot its ``__init__`` would have emptied."""
        names = [n for sc in self.fields for n in (sc.names if id(sc) in self.runs else [sc.name])]
        self.build_names = tuple(n for n in names if n and hasattr(record, n))
        self.needs_context = not all(
            id(sc) in self.runs or not getattr(c.extractfield(sc), "reads_context", True)
            for sc in struct.subcons
        )
        guaranteed = {
            name: fmt
            for sc in self.fields
            if isinstance(sc, FixedRun)
            for name, fmt in sc.guaranteed.items()
        }
        self.checks = tuple(
            a
            for a in attrs.fields(record)
            if a.validator is not None and not _implied(a.validator, guaranteed.get(a.name))
        )

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        values = _context(context, stream, building=False) if self.needs_context else {}
        for sc in self.fields:
            if id(sc) in self.runs:
                values.update(sc._parse(stream, values, path))
            else:
                value = sc._parsereport(stream, values if self.needs_context else context, path)
                if sc.name:
                    values[sc.name] = value
        return self._make(values, path)

    def _make(self, values: Any, path: str) -> Any:
        """The record from decoded values, without re-checking what the wire guarantees."""
        record: Any = object.__new__(self.record)
        for name in self.init_names:
            object.__setattr__(record, name, values[name])
        if self.caches_hash:
            object.__setattr__(record, _CACHED_HASH, None)
        try:
            for a in self.checks:
                a.validator(record, a, values[a.name])
        except InvalidRecordError as e:
            raise LayoutError(str(e), path=path) from e
        return record

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        this = _context(context, stream, building=True)
        for name in self.build_names:
            this[name] = getattr(obj, name)
        for sc in self.fields:
            if id(sc) in self.runs:
                sc._build(this, stream, this, path)
            else:
                built = sc._build(this.get(sc.name) if sc.name else None, stream, this, path)
                if sc.name:
                    this[sc.name] = built
        return obj

    def _sizeof(self, context: Any, path: str) -> int:
        return sum(sc._sizeof(context, path) for sc in self.fields)

    def _emitbuild(self, code: Any) -> str:
        fname = f"build_record_{code.allocateId()}"
        lines = [f"def {fname}(obj, io, this):", "    record = obj"]
        if self.needs_context:
            lines += [
                "    this = Container(_ = this, _params = this['_params'], _root = None,"
                " _parsing = False, _building = True, _sizing = False, _subcons = None,"
                " _io = io, _index = this.get('_index', None))",
                "    this['_root'] = this['_'].get('_root', this)",
            ]
            lines += [f"    this[{n!r}] = record.{n}" for n in self.build_names]
        for sc in self.fields:
            if id(sc) in self.runs:
                lines.append(f"    obj = record; {sc._compilebuild(code)}")
            elif sc.name:
                source = f"record.{sc.name}" if sc.name in self.build_names else "None"
                store = f"this[{sc.name!r}] = " if self.needs_context else ""
                lines.append(f"    obj = {source}; {store}{sc._compilebuild(code)}")
            else:
                lines.append(f"    obj = None; {sc._compilebuild(code)}")
        lines.append("    return record")
        code.append("\n".join(lines) + "\n")
        return f"{fname}(obj, io, this)"


def _implied(validator: Any, fmt: str | None) -> bool:
    """Whether every value of struct format ``fmt`` passes ``validator``."""
    if fmt in ("d", "f"):
        return validator is c_double
    return fmt is not None and _INT_FORMATS.get(fmt) == validator


class Counted(c.Subconstruct):  # type: ignore[misc]
    """An I32 count, then that many elements (taosArray loops); decoded as a tuple.

    The decoder rejects a negative count, or one whose elements cannot fit in the bytes left.
    It reads no context itself (its elements are records or plain integers).
    """

    reads_context = False

    def __init__(self, subcon: c.Construct) -> None:
        super().__init__(subcon)
        try:
            self.min_size: int = subcon.sizeof()
        except c.SizeofError:
            self.min_size = 1

    def _parse(self, stream: Any, context: Any, path: str) -> tuple[Any, ...]:
        count = I32._parsereport(stream, context, path)
        left = c.stream_size(stream) - c.stream_tell(stream, path)
        if count < 0 or count * self.min_size > left:
            raise LayoutError(f"count {count} does not fit in the {left} bytes left", path=path)
        return tuple(self.subcon._parsereport(stream, context, path) for _ in range(count))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        I32._build(len(obj), stream, context, path)
        for item in obj:
            self.subcon._build(item, stream, context, path)
        return obj

    def _emitbuild(self, code: Any) -> str:
        count = I32._compilebuild(code)
        item = self.subcon._compilebuild(code)
        return f"(reuse(len(obj), lambda obj: {count}), [{item} for obj in obj], obj)[2]"


# -- strings and binaries ------------------------------------------------------------------

Binary = c.Prefixed(U32v, c.GreedyBytes)
"""tEncodeBinary: U32v length, then the raw bytes."""


class _CStr(Adapter):
    """tEncodeCStr: a Binary of the UTF-8 text plus its NUL (counted in the length)."""

    def _decode(self, obj: bytes, context: Any, path: str) -> str:
        if not obj or obj[-1] != 0:
            raise LayoutError("string is not NUL-terminated", path=path)
        if 0 in obj[:-1]:
            raise LayoutError("NUL inside a string", path=path)
        try:
            return obj[:-1].decode()
        except UnicodeDecodeError as e:
            raise LayoutError(f"string is not UTF-8: {e}", path=path) from e

    def _encode(self, obj: str, context: Any, path: str) -> bytes:
        return obj.encode() + b"\0"


CStr = _CStr(Binary)


class CStrWithLen(c.Construct):  # type: ignore[misc]
    """tEncodeCStrWithLen(s, n): a Binary of exactly n + 1 raw bytes (a fixed size)."""

    def __init__(self, n: int) -> None:
        super().__init__()
        self.length = n + 1
        self.prefix = U32v.build(self.length)

    def _parse(self, stream: Any, context: Any, path: str) -> bytes:
        length = U32v._parsereport(stream, context, path)
        if length != self.length:
            raise LayoutError(f"expected a {self.length}-byte binary, got {length}", path=path)
        return bytes(c.stream_read(stream, self.length, path))

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> bytes:
        data = self.prefix + obj
        c.stream_write(stream, data, len(self.prefix) + self.length, path)
        return obj  # type: ignore[no-any-return]

    def _sizeof(self, context: Any, path: str) -> int:
        return len(self.prefix) + self.length


# -- the tStartEncode/tEndEncode block and the checked parse -----------------------------------


class TrackedStream(io.BytesIO):
    """A read stream that records the absolute offset where the last read started."""

    def __init__(self, data: bytes, *, base: int = 0, probe: list[int] | None = None) -> None:
        super().__init__(data)
        self.base = base
        self.probe = probe if probe is not None else [0]

    def read(self, size: int | None = -1, /) -> bytes:
        self.probe[0] = self.base + self.tell()
        return super().read(size)


class Block(c.Subconstruct):  # type: ignore[misc]
    """tStartEncode/tEndEncode: an int32 LE body length (not counting itself), then the body.

    Parsing skips whatever the body did not read (as tEndDecode); unlike tStartDecode it
    rejects a length that is negative or runs past the end of the buffer.
    """

    def _parse(self, stream: Any, context: Any, path: str) -> Any:
        length = I32._parsereport(stream, context, path)
        start = c.stream_tell(stream, path)
        left = c.stream_size(stream) - start
        if not 0 <= length <= left:
            raise LayoutError(f"block length {length} but {left} bytes follow", path=path)
        body = c.stream_read(stream, length, path)
        base = getattr(stream, "base", 0) + start
        sub = TrackedStream(body, base=base, probe=getattr(stream, "probe", None))
        return self.subcon._parsereport(sub, context, path)

    def _build(self, obj: Any, stream: Any, context: Any, path: str) -> Any:
        body = io.BytesIO()
        self.subcon._build(obj, body, context, path)
        data = body.getvalue()
        I32._build(len(data), stream, context, path)
        c.stream_write(stream, data, len(data), path)
        return obj

    def _emitbuild(self, code: Any) -> str:
        fname = f"build_block_{code.allocateId()}"
        code.append(f"""
            def {fname}(obj, io, this):
                outer = io
                io = BytesIO()
                {self.subcon._compilebuild(code)}
                data = io.getvalue()
                outer.write(struct.pack({I32.fmtstr!r}, len(data)))
                outer.write(data)
                return obj
        """)
        return f"{fname}(obj, io, this)"


def _field_of(path: str | None) -> str:
    """'(parsing) -> ep_set -> slots -> fqdn' -> 'ep_set.slots.fqdn'."""
    return ".".join(p for p in (path or "").split(" -> ") if p and not p.startswith("("))


def parse_checked(layout: c.Construct, data: bytes) -> Any:
    """Parse untrusted bytes: the layout must cover ``data`` exactly.

    Raises DecodeError (field, offset) for anything construct or a layout rule rejects;
    IncompatibleVersionError passes through from the version fields.
    """
    stream = TrackedStream(data)
    try:
        value = layout.parse_stream(stream)
    except c.ConstructError as e:
        reason = str(e).removeprefix(f"Error in path {e.path}\n")
        raise DecodeError(reason, field=_field_of(e.path), offset=stream.probe[0]) from e
    end = stream.tell()
    if end != len(data):
        raise DecodeError(f"{len(data) - end} trailing bytes after the value", offset=end)
    return value


class _TrustedBlock(io.RawIOBase):
    """A block's body as tStartDecode sees it: ``size`` bytes (the length header), of which
    only ``body`` exist. A read ending past the body but within ``size`` passes the seed's
    capacity check and reads past the buffer: it is noted (``past``) and the parse stopped
    (construct turns what a read raises into its own error). A read past ``size`` comes back
    short, as the seed's capacity check refuses it."""

    def __init__(self, body: bytes, size: int) -> None:
        super().__init__()
        self.body = body
        self.size = size
        self.pos = 0
        self.past = False

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def read(self, size: int | None = -1, /) -> bytes:
        n = self.size - self.pos if size is None or size < 0 else size
        end = self.pos + n
        if len(self.body) < end <= self.size:
            self.past = True
            raise EOFError("read past the buffer")
        chunk = self.body[self.pos : min(end, self.size)]
        self.pos += len(chunk)
        return chunk

    def tell(self) -> int:
        return self.pos

    def seek(self, offset: int, whence: int = io.SEEK_SET, /) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self.pos, io.SEEK_END: self.size}[whence]
        self.pos = base + offset
        return self.pos


def read_past_end(layout: Block, data: bytes) -> bool:
    """Whether the seed's decoder reads past ``data`` decoding ``layout`` (undefined
    behaviour: a heap over-read). tStartDecode takes the block's length header as the body's
    size unchecked, and each field is checked against that size only: a value whose header
    claims more bytes than follow is read past its end when the decode reaches the end of
    the bytes within the claimed size before anything stops it (a capacity check, a version
    check, a layout rule), as far as the layout's runs of fixed fields tell (a run is read
    at once)."""
    if len(data) < 4:
        return False  # the header itself fails its capacity check
    claimed = int.from_bytes(data[:4], "little", signed=True)
    if claimed <= len(data) - 4:
        return False
    stream = _TrustedBlock(data[4:], claimed)
    # the seed's decoder stops where the parse stops, having read past the end or not (``past``)
    with contextlib.suppress(c.ConstructError, DecodeError, InvalidRecordError, ValueError,
                             EOFError):
        layout.subcon.parse_stream(stream)
    return stream.past


@functools.cache
def compiled_builder(layout: c.Construct) -> Any:
    """The compiled form of a layout, for encoding trusted records (compiled once)."""
    return layout.compile()
