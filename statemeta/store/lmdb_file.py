"""What ``data.mdb`` must hold before LMDB maps it: two sound meta pages and every page they use.

LMDB maps the data file into memory and reads its pages through the map, so a page that lies
past the end of the file (a file cut short) is a SIGBUS that kills the process, not an error.
LMDB's own open only reads the two meta pages and checks their type, magic and version.
So before any map is made, ``check_data_file`` reads both meta pages with ordinary reads and
checks what LMDB checks plus the one thing it does not: that the file holds every page the
newest meta page says is in use (``mm_last_pg``). LMDB refuses any page number past
``mm_last_pg`` itself (MDB_PAGE_NOTFOUND), so after this check no page lookup can leave the
file. spec/store.md ("Damaged files") says what is still not guaranteed.

The layout below is LMDB's ``MDB_page`` header followed by ``MDB_meta`` on 64-bit builds, in
both data formats the ``lmdb`` package reads (it picks the engine from the file).
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable

import attrs

from statemeta.errors import StoreError

MAGIC = 0xBEEFC0DE  # MDB_MAGIC
P_META = 0x08  # the page-type flag of a meta page
NUM_METAS = 2  # pages 0 and 1; a commit writes the older of the two
PAGE_SIZES = tuple(1 << n for n in range(9, 17))  # 512 B .. 64 KiB, powers of two

# Offsets inside MDB_meta, from its first byte: magic u32, version u32, address u64, map size
# u64, then mm_dbs[2] (48 bytes each) whose first field, mm_dbs[FREE_DBI].md_pad, holds the
# page size; then the last used page number and the id of the transaction that wrote it.
_MAGIC_VERSION = struct.Struct("<II")
_PAGE_SIZE_AT = 24
_LAST_PAGE_TXNID = struct.Struct("<QQ")
_LAST_PAGE_AT = 120
_META_READ = 136  # bytes of MDB_meta read: up to and including the txn id


@attrs.frozen
class DataFormat:
    """One LMDB data format: where the meta sits in a page, where the page-type flags are."""

    version: int  # mm_version
    engine: str
    flags_at: int  # mp_flags (u16) in the page header
    meta_at: int  # PAGEHDRSZ: MDB_meta follows the page header
    page_base: int  # PAGEBASE: what mp_lower, mp_upper and node offsets count from
    data_align: int  # a leaf node's data starts at the key's end rounded up to this
    name_end: bytes  # what ends a named database's name in the main database


FORMATS = (
    DataFormat(1, "LMDB 0.9", flags_at=10, meta_at=16, page_base=0,
               data_align=1, name_end=b""),
    DataFormat(3, "LMDB 1.0", flags_at=18, meta_at=24, page_base=24,
               data_align=2, name_end=b"\0"),
)
"""The data formats checked (statemeta creates format 1, py-lmdb's default)."""


@attrs.frozen
class MetaPage:
    """What one meta page says about the file."""

    number: int  # 0 or 1
    page_size: int
    last_page: int  # mm_last_pg: the highest page number in use
    txnid: int  # the transaction that wrote this meta page; LMDB uses the higher one

    @property
    def needed_bytes(self) -> int:
        return (self.last_page + 1) * self.page_size


def check_data_file(data_path: str) -> MetaPage:
    """Raises StoreError naming ``data_path`` unless LMDB can map it without reading past EOF.

    Returns the meta page LMDB will use (the higher txn id). An empty file is refused too:
    LMDB would take it for a new environment, and a store cut to 0 bytes would then open as
    an empty one, silently.
    """
    try:
        with open(data_path, "rb") as f:
            fd = f.fileno()
            return parse_meta_pages(
                data_path, lambda at, n: os.pread(fd, n, at), os.fstat(fd).st_size
            )[1]
    except OSError as e:
        raise StoreError(f"read the meta pages of {data_path}: {e}") from e


def parse_meta_pages(
    data_path: str, read: Callable[[int, int], bytes], size: int
) -> tuple[DataFormat, MetaPage]:
    """The file's format and newest meta page, from ``read(offset, length)`` of a file of
    ``size`` bytes (StoreError naming ``data_path`` as check_data_file says)."""
    if size == 0:
        raise damaged(
            data_path, "it is empty (cut to 0 bytes, or its creation was interrupted "
            "before LMDB wrote its meta pages: then remove it)"
        )
    first = read(0, _META_READ + FORMATS[-1].meta_at)
    data_format = _data_format(data_path, first)
    page_size = _page_size(data_path, data_format, first)
    second = read(page_size, len(first))
    metas = (
        _meta_page(data_path, data_format, 0, first),
        _meta_page(data_path, data_format, 1, second),
    )
    if metas[1].page_size != page_size:
        raise damaged(
            data_path, f"its meta pages disagree on the page size ({page_size}, "
            f"{metas[1].page_size})"
        )
    newest = max(metas, key=lambda m: m.txnid)
    if size < newest.needed_bytes:
        raise damaged(
            data_path,
            f"it has {size} bytes, but its newest meta page (page {newest.number}, txn "
            f"{newest.txnid}) uses pages 0..{newest.last_page} of {page_size} bytes "
            f"({newest.needed_bytes} bytes): the file was cut short",
        )
    return data_format, newest


def damaged(data_path: str, reason: str) -> StoreError:
    return StoreError(
        f"damaged LMDB data file {data_path}: {reason}; the store was not opened "
        f"(restore the directory from a copy)"
    )


def _data_format(data_path: str, page: bytes) -> DataFormat:
    """The format whose meta page 0 carries LMDB's magic where that format puts it."""
    if len(page) < FORMATS[0].meta_at + _META_READ:
        raise damaged(data_path, f"it has {len(page)} bytes, too few for a meta page")
    for data_format in FORMATS:
        magic, version = _MAGIC_VERSION.unpack_from(page, data_format.meta_at)
        if magic == MAGIC:
            if version != data_format.version:
                known = ", ".join(f"{f.version} ({f.engine})" for f in FORMATS)
                raise StoreError(
                    f"{data_path}: LMDB data format version {version}; this reader knows {known}"
                )
            return data_format
    raise damaged(data_path, f"page 0 has no LMDB magic {MAGIC:#x}: not an LMDB data file")


def _page_size(data_path: str, data_format: DataFormat, page: bytes) -> int:
    page_size: int = struct.unpack_from("<I", page, data_format.meta_at + _PAGE_SIZE_AT)[0]
    if page_size not in PAGE_SIZES:
        raise damaged(data_path, f"meta page 0 gives the page size {page_size}")
    return page_size


def _meta_page(data_path: str, data_format: DataFormat, number: int, page: bytes) -> MetaPage:
    if len(page) < data_format.meta_at + _META_READ:
        raise damaged(data_path, f"meta page {number} is cut short")
    (flags,) = struct.unpack_from("<H", page, data_format.flags_at)
    magic, version = _MAGIC_VERSION.unpack_from(page, data_format.meta_at)
    if not flags & P_META or magic != MAGIC or version != data_format.version:
        raise damaged(
            data_path,
            f"page {number} is not a {data_format.engine} meta page (flags {flags:#x}, "
            f"magic {magic:#x}, version {version})",
        )
    (page_size,) = struct.unpack_from("<I", page, data_format.meta_at + _PAGE_SIZE_AT)
    last_page, txnid = _LAST_PAGE_TXNID.unpack_from(page, data_format.meta_at + _LAST_PAGE_AT)
    return MetaPage(number, page_size, last_page, txnid)
