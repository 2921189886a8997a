"""Which TDengine files are compiled, and the proof that they are the seed commit's.

A file is the seed's when its git blob id (what ``git hash-object FILE`` prints: the sha1 of
``b"blob <size>\\0" + content``) is the one TDengine's history gives it at 63494de7; the ids
below are that history's, and a tree's own MANIFEST, when it has one, must agree with them.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from statemeta.errors import TDengineBuildError

__all__ = [
    "COMPILED",
    "INCLUDE_DIRS",
    "SEED_BLOBS",
    "SEED_COMMIT",
    "blob_id",
    "check_tree",
]

SEED_COMMIT = "63494de7f92fbf55dfa5d7f7f952f776242872b2"

SEED_BLOBS: dict[str, str] = {
    "source/libs/stream/src/streamMeta.c": "1f45e9b94c176f2ef5dd7518d51b50523acfa497",
    "source/libs/stream/src/streamTaskSm.c": "f0dcc75c4cee9d1b269fdb76dcf5cd111b9e809c",
    "source/libs/stream/src/streamTask.c": "2497e8dd8ec3bce88035f4d600e695d702f9bd7a",
    "source/libs/stream/src/streamStart.c": "5e1566c1e1eedc2844039f8aaa4580c7d9cd0971",
    "source/util/src/tencode.c": "7f8a0edfdd8882e2eb472221b588dc6457339885",
    "include/libs/stream/tstream.h": "a0cff356233d34b70757a1ed549f557353eab3bc",
    "source/libs/stream/inc/streamInt.h": "1e4b8996b6336b1d63adfdc4cd43717ffe2a2cec",
    "source/libs/stream/inc/streamsm.h": "abdafc0240cd431621eeae3c9f904d7ec502e4f0",
    "include/util/tencode.h": "d05d4914e37aa25777a30cbbd89545a14a9779d6",
    "include/util/tcoding.h": "b1bd09e1238d55aa0505f9d496dca4a66f191962",
    "include/util/tlist.h": "0924c133b9c77b5717ff30386f49fe63c9e506dd",
}
"""Each upstream file the build reads, by its path in a TDengine tree -> its blob id."""

COMPILED: tuple[str, ...] = tuple(path for path in SEED_BLOBS if path.endswith(".c"))
"""The upstream files compiled (the headers are read through INCLUDE_DIRS)."""

INCLUDE_DIRS: tuple[str, ...] = ("include/libs/stream", "include/util", "source/libs/stream/inc")


def blob_id(content: bytes) -> str:
    """The git blob id of ``content``, as ``git hash-object`` computes it."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


def _manifest(tree: Path) -> dict[str, str]:
    """The tree's MANIFEST (``PATH BLOB`` lines, ``#`` comments), or nothing without one."""
    path = tree / "MANIFEST"
    if not path.is_file():
        return {}
    rows = {}
    for line in path.read_text().splitlines():
        fields = line.split()
        if len(fields) == 2 and not line.startswith("#"):
            rows[fields[0]] = fields[1]
    return rows


def check_tree(tree: Path) -> dict[str, str]:
    """The blob id of every upstream file of ``tree``, each checked to be the seed's; a
    TDengineBuildError names the first file missing or changed (or a MANIFEST that disagrees)."""
    if not tree.is_dir():
        raise TDengineBuildError(str(tree), "no such TDengine tree (a directory)")
    manifest = _manifest(tree)
    for path, blob in manifest.items():
        if SEED_BLOBS.get(path, blob) != blob:
            seed = SEED_BLOBS[path]
            raise TDengineBuildError(
                str(tree / "MANIFEST"), f"gives {path} blob {blob}, not the seed's {seed}"
            )
    found = {}
    for path, expected in SEED_BLOBS.items():
        file = tree / path
        if not file.is_file():
            raise TDengineBuildError(str(file), "missing from the TDengine tree")
        got = blob_id(file.read_bytes())
        if got != expected:
            raise TDengineBuildError(
                str(file),
                f"changed: blob {got}, not {expected} of TDengine {SEED_COMMIT[:8]} (refused: "
                "statemeta compiles upstream files unmodified)",
            )
        found[path] = got
    return found
