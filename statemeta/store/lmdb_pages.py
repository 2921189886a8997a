"""Every page of ``data.mdb`` the newest meta page uses, read and checked in Python.

LMDB trusts its file: a node whose size or offset points past its page, a branch that points
at a leaf, a cycle, are assertions (SIGABRT) or faults (SIGBUS, SIGSEGV) inside LMDB, never
errors. So statemeta never lets LMDB map a file it has not walked whole: ``read_image`` reads
the file with ordinary reads (no map: a file cut under a map is a SIGBUS in Python too), walks
the free list, the main database and every named database from the newest meta page down,
checks each page against LMDB's documented layout and returns the named databases' rows. A
writer runs it once at open (the file cannot change under it then: it holds the one writer
lock); read-only stores read through it alone and never call LMDB (spec/store.md, Damaged
files).

Layout (64-bit builds): a page header (``PAGEHDRSZ`` bytes: page number u64, [txn id u64 in
LMDB 1.0,] pad u16, flags u16, lower u16, upper u16 or, for an overflow page, a page count
u32), then node offsets (u16) from the header to ``lower``; nodes sit from ``upper`` to the
page end. A node is lo u16, hi u16, flags u16, key size u16, the key, then the data (a leaf)
or nothing (a branch: lo | hi << 16 | flags << 32 is the child page number).
"""

from __future__ import annotations

import itertools
import os
import struct

import attrs

from statemeta.errors import StoreError
from statemeta.store.lmdb_file import DataFormat, MetaPage, damaged, parse_meta_pages

P_BRANCH, P_LEAF, P_OVERFLOW = 0x01, 0x02, 0x04  # page-type flags
F_BIGDATA, F_SUBDATA = 0x01, 0x02  # leaf node flags: value on overflow pages; a named database
P_INVALID = (1 << 64) - 1  # md_root of an empty database
NODE = struct.Struct("<HHHH")  # mn_lo, mn_hi, mn_flags, mn_ksize
DB = struct.Struct("<IHHQQQQQ")  # MDB_db: pad, flags, depth, branch, leaf, overflow, entries, root
U16, U64 = struct.Struct("<H"), struct.Struct("<Q")
FIRST_DATA_PAGE = 2  # pages 0 and 1 are the meta pages
MAX_DEPTH = 64  # far beyond any B-tree of a file LMDB can map
MM_DBS_AT = 24  # mm_dbs[FREE_DBI, MAIN_DBI] in MDB_meta
FREE_LIST = "(free list)"

Rows = tuple[tuple[bytes, bytes], ...]


@attrs.frozen
class FileImage:
    """What the newest meta page of a checked file holds."""

    meta: MetaPage
    tables: dict[str, Rows]  # named databases, by name, rows in key order


@attrs.frozen
class _Tree:
    """One database record (MDB_db) and where it was found, for messages."""

    name: str
    flags: int
    depth: int
    branch_pages: int
    leaf_pages: int
    overflow_pages: int
    entries: int
    root: int

    @classmethod
    def parse(cls, name: str, raw: bytes) -> _Tree:
        _pad, flags, depth, branch, leaf, overflow, entries, root = DB.unpack(raw)
        return cls(name, flags, depth, branch, leaf, overflow, entries, root)


def read_image(fd: int, data_path: str) -> FileImage:
    """Walks the whole file behind ``fd``; StoreError naming ``data_path`` at the first fault."""
    try:
        data = _read_all(fd)
    except OSError as e:
        raise StoreError(f"read {data_path}: {e}") from e
    data_format, meta = parse_meta_pages(data_path, lambda at, n: data[at : at + n], len(data))
    walk = _Walk(data_path, data, data_format, meta)
    at = meta.number * meta.page_size + data_format.meta_at + MM_DBS_AT
    free_raw, main_raw = data[at : at + DB.size], data[at + DB.size : at + 2 * DB.size]
    for _key, value, _flags in walk.rows(_Tree.parse(FREE_LIST, free_raw), keep=True):
        walk.free_ids(value)
    tables: dict[str, Rows] = {}
    for key, value, flags in walk.rows(_Tree.parse("(main)", main_raw), keep=True):
        name = key.removesuffix(data_format.name_end).decode("utf-8", "replace")
        if not flags & F_SUBDATA or len(value) != DB.size:
            raise walk.fault(f"main database entry {name!r} is not a named database")
        tree = _Tree.parse(name, value)
        if tree.flags:
            raise walk.fault(f"table {name!r} has LMDB flags {tree.flags:#x} statemeta never sets")
        tables[name] = tuple((k, v) for k, v, _flags in walk.rows(tree, keep=True))
    walk.check_free_list()
    return FileImage(meta, tables)


def _read_all(fd: int) -> bytes:
    size = os.fstat(fd).st_size
    chunks, offset = [], 0
    while offset < size:
        chunk = os.pread(fd, size - offset, offset)
        if not chunk:
            break  # cut while being read: the page checks say what is missing
        chunks.append(chunk)
        offset += len(chunk)
    return b"".join(chunks)


class _Walk:
    """One walk of a file: the pages seen so far and the page numbers on the free list."""

    def __init__(self, path: str, data: bytes, data_format: DataFormat, meta: MetaPage) -> None:
        self.path, self.data, self.meta = path, data, meta
        self.page_size = meta.page_size
        self.header = data_format.meta_at  # PAGEHDRSZ
        self.flags_at = data_format.flags_at
        self.base = data_format.page_base
        self.align = data_format.data_align
        self.seen: set[int] = set()
        self.free: list[int] = []

    def fault(self, reason: str) -> StoreError:
        return damaged(self.path, reason)

    def rows(self, tree: _Tree, *, keep: bool) -> list[tuple[bytes, bytes, int]]:
        """The (key, value, node flags) of ``tree`` in key order, every page of it checked."""
        counts = [0, 0, 0]  # branch, leaf, overflow pages
        out: list[tuple[bytes, bytes, int]] = []
        if tree.root == P_INVALID:
            if tree.depth or tree.entries:
                raise self.fault(f"{tree.name}: empty, yet depth {tree.depth}")
        elif not 0 < tree.depth <= MAX_DEPTH:
            raise self.fault(f"{tree.name}: depth {tree.depth}")
        else:
            self._visit(tree, tree.root, 1, None, None, counts, out, keep)
        found = (counts[0], counts[1], counts[2], len(out))
        stated = (tree.branch_pages, tree.leaf_pages, tree.overflow_pages, tree.entries)
        if found != stated:
            raise self.fault(
                f"{tree.name}: its record says {stated} (branch, leaf, overflow pages, entries), "
                f"its pages hold {found}"
            )
        return out

    def _visit(
        self, tree: _Tree, pgno: int, level: int, low: bytes | None, high: bytes | None,
        counts: list[int], out: list[tuple[bytes, bytes, int]], keep: bool,
    ) -> None:
        page = self._page(tree, pgno)
        flags = U16.unpack_from(page, self.flags_at)[0]
        leaf = level == tree.depth
        want = P_LEAF if leaf else P_BRANCH
        if flags & (P_BRANCH | P_LEAF | P_OVERFLOW) != want:
            kind = "leaf" if leaf else "branch"
            raise self.fault(f"{tree.name}: page {pgno} at level {level} is not a {kind} page "
                             f"(flags {flags:#x})")
        counts[0 if not leaf else 1] += 1
        nodes = self._nodes(tree, pgno, page)
        if not nodes:
            raise self.fault(f"{tree.name}: page {pgno} has no nodes")
        integer = tree.name == FREE_LIST  # native u64 keys: compared as big-endian bytes
        keys: list[bytes] = []
        for at in nodes:
            lo, hi, node_flags, ksize = NODE.unpack_from(page, at)
            key_end = at + NODE.size + ksize
            if key_end > self.page_size:
                raise self.fault(f"{tree.name}: page {pgno} node at {at}: key past the page")
            key = page[at + NODE.size : key_end]
            if integer and len(key) not in ((U64.size,) if leaf or keys else (0, U64.size)):
                raise self.fault(f"{tree.name}: page {pgno}: a key of {len(key)} bytes")
            keys.append(key[::-1] if integer else key)
            if leaf:
                data_at = -(-key_end // self.align) * self.align
                value = self._value(tree, pgno, page, data_at, lo | hi << 16, node_flags, counts)
                out.append((key, value if keep else b"", node_flags))
        self._check_order(tree, pgno, keys if leaf else keys[1:], low, high)
        if leaf:
            return
        for i, at in enumerate(nodes):
            lo, hi, node_flags, _ksize = NODE.unpack_from(page, at)
            child = lo | hi << 16 | node_flags << 32
            child_low = keys[i] if i else low
            child_high = keys[i + 1] if i + 1 < len(keys) else high
            self._visit(tree, child, level + 1, child_low, child_high, counts, out, keep)

    def _page(self, tree: _Tree, pgno: int) -> bytes:
        if not FIRST_DATA_PAGE <= pgno <= self.meta.last_page:
            raise self.fault(f"{tree.name}: page number {pgno} is outside 2..{self.meta.last_page}")
        if pgno in self.seen:
            raise self.fault(f"{tree.name}: page {pgno} is used twice")
        self.seen.add(pgno)
        start = pgno * self.page_size
        page = self.data[start : start + self.page_size]
        if len(page) < self.page_size:
            raise self.fault(f"{tree.name}: page {pgno} lies past the end of the file")
        if U64.unpack_from(page, 0)[0] != pgno:
            raise self.fault(f"{tree.name}: page {pgno} carries the number "
                             f"{U64.unpack_from(page, 0)[0]}")
        return page

    def _nodes(self, tree: _Tree, pgno: int, page: bytes) -> list[int]:
        lower, upper = (self.base + n for n in struct.unpack_from("<HH", page, self.header - 4))
        if not self.header <= lower <= upper <= self.page_size or (lower - self.header) % 2:
            raise self.fault(f"{tree.name}: page {pgno} bounds lower {lower}, upper {upper}")
        nodes = [self.base + U16.unpack_from(page, at)[0] for at in range(self.header, lower, 2)]
        for at in nodes:
            if not upper <= at <= self.page_size - NODE.size:
                raise self.fault(f"{tree.name}: page {pgno} has a node at {at}, outside "
                                 f"{upper}..{self.page_size}")
        return nodes

    def _value(
        self, tree: _Tree, pgno: int, page: bytes, at: int, size: int, node_flags: int,
        counts: list[int],
    ) -> bytes:
        if node_flags & ~(F_BIGDATA | F_SUBDATA):
            raise self.fault(f"{tree.name}: page {pgno}: node flags {node_flags:#x}")
        if not node_flags & F_BIGDATA:
            if at + size > self.page_size:
                raise self.fault(f"{tree.name}: page {pgno}: a value of {size} bytes at {at} "
                                 "runs past the page")
            return page[at : at + size]
        if at + U64.size > self.page_size:
            raise self.fault(f"{tree.name}: page {pgno}: an overflow pointer past the page")
        first = U64.unpack_from(page, at)[0]
        head = self._page(tree, first)
        flags = U16.unpack_from(head, self.flags_at)[0]
        pages = struct.unpack_from("<I", head, self.header - 4)[0]
        if not flags & P_OVERFLOW or pages * self.page_size - self.header < size:
            raise self.fault(f"{tree.name}: overflow page {first} (flags {flags:#x}, {pages} "
                             f"pages) cannot hold a value of {size} bytes")
        for extra in range(first + 1, first + pages):
            if extra > self.meta.last_page or extra in self.seen:
                raise self.fault(f"{tree.name}: overflow pages {first}+{pages} overlap or "
                                 "leave the file")
            self.seen.add(extra)
        counts[2] += pages
        start = first * self.page_size + self.header
        value = self.data[start : start + size]
        if len(value) < size:
            raise self.fault(f"{tree.name}: overflow page {first} lies past the end of the file")
        return value

    def _check_order(
        self, tree: _Tree, pgno: int, keys: list[bytes], low: bytes | None, high: bytes | None
    ) -> None:
        bounded = [*([low] if low is not None else []), *keys]
        bounded += [high] if high is not None else []
        if any(a > b for a, b in itertools.pairwise(bounded)) or len(set(keys)) < len(keys):
            raise self.fault(f"{tree.name}: the keys of page {pgno} are out of order")

    def free_ids(self, value: bytes) -> None:
        """Notes the page numbers of one free-list record (an MDB_IDL: count, then ids)."""
        if len(value) < U64.size or len(value) % U64.size:
            raise self.fault(f"{FREE_LIST}: a record of {len(value)} bytes")
        count = U64.unpack_from(value, 0)[0]
        if count != len(value) // U64.size - 1:
            raise self.fault(f"{FREE_LIST}: a record of {len(value)} bytes says {count} pages")
        self.free.extend(struct.unpack_from(f"<{count}Q", value, U64.size))

    def check_free_list(self) -> None:
        """Free pages are in the file and in no tree (LMDB would hand them out again)."""
        for pgno in self.free:
            if not FIRST_DATA_PAGE <= pgno <= self.meta.last_page or pgno in self.seen:
                raise self.fault(f"the free list names page {pgno}, which is in use or outside "
                                 f"2..{self.meta.last_page}")
