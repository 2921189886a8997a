"""The generated block of docs/seed-defects.md, and rewriting generated files when stale.

Two generators write that page: statemeta.explore.defects_page (the table, from an
exploration) and statemeta.tdengine.defects (its TDengine column, from replays against the
compiled C). Both find the block here and write through ``refresh``."""

from __future__ import annotations

import re
from pathlib import Path

from statemeta.errors import MisuseError

OPENED = "(none: the meta as opened)"
"""The trace cell of a violation the empty meta shows already."""

__all__ = ["BEGIN", "BLOCK", "END", "OPENED", "PAGE", "block_of", "refresh", "replace_block"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "seed-defects.md"
BEGIN = "<!-- generated:seed-defects -->"
END = "<!-- end generated:seed-defects -->"
BLOCK = re.compile(re.escape(BEGIN) + r"\n(.*?)" + re.escape(END), re.S)


def _found(page: str) -> re.Match[str]:
    found = BLOCK.search(page)
    if found is None:
        raise MisuseError(f"the page has no {BEGIN} ... {END} block")
    return found


def block_of(page: str) -> str:
    """The generated block of ``page`` (MisuseError if it has none)."""
    return _found(page).group(1)


def replace_block(page: str, block: str) -> str:
    """``page`` with its generated block replaced by ``block``."""
    found = _found(page)
    return page[: found.start(1)] + block + page[found.end(1) :]


def refresh(files: dict[Path, str], *, check: bool) -> int:
    """Writes each file whose text is not yet the one given (``check``: writes nothing, exit 1
    if one is stale); 0 when all are up to date or rewritten. Prints what it did."""
    names = ", ".join(str(path) for path in files)
    stale = [p for p, text in files.items() if not p.is_file() or p.read_text("utf-8") != text]
    if not stale:
        print(f"up to date: {names}")
        return 0
    if check:
        print(f"stale: {', '.join(map(str, stale))} (run without --check to rewrite)")
        return 1
    for path in stale:
        path.write_text(files[path], encoding="utf-8")
    print(f"rewrote: {', '.join(map(str, stale))}")
    return 0
