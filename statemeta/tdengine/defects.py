"""``python -m statemeta.tdengine.defects --src TREE [--check]``: does TDengine's compiled code
show each defect of docs/seed-defects.md?

Each row of the page's generated tables has a shortest trace (its ``shortest trace`` cell,
whatever else the row says: the column is generic over rows and tables). Each trace is replayed
against the compiled C (``statemeta tdengine serve``) with the seed reference on the other side,
and its verdict is one of ``VERDICTS``. The verdicts are recorded in ``RECORDED``
(spec/seed-defects-tdengine.json, checked in), from which the page's ``TDengine's C`` column is
written (``with_column``, also run by the page's own generator); ``--check`` replays and exits
1 if the recorded verdicts or the page are stale. The replay needs the tree and gcc, so the
page is generated from the recorded file and CI re-replays it (tests/unit/test_tdengine.py).
"""

from __future__ import annotations

import json
import re
import sys
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

from statemeta.cli_args import Parser
from statemeta.errors import StatemetaError
from statemeta.explore.page_block import OPENED, PAGE, block_of, refresh, replace_block
from statemeta.explore.reachability import parse_op
from statemeta.harness.catalogue import Mask
from statemeta.harness.operations import Op
from statemeta.harness.reference import ReferenceAdapter
from statemeta.harness.subprocess_adapter import SubprocessAdapter
from statemeta.harness.trace import replay
from statemeta.invariants import VIEW_INVARIANTS
from statemeta.tdengine.sources import SEED_COMMIT

__all__ = [
    "COLUMN", "RECORDED", "VERDICTS", "main", "record", "recorded_verdicts", "traces_of",
    "verdict", "with_column",
]

ROOT = Path(__file__).resolve().parents[2]
RECORDED = ROOT / "spec" / "seed-defects-tdengine.json"
COLUMN = "TDengine's C"
_TRACE_COLUMN = "shortest trace"
NOT_REPLAYED = "not replayed"

VERDICTS: Mapping[str, str] = {
    "shows it": "the C conforms to the seed's trace and its own view breaks the invariant",
    "conforms": "the C conforms to the seed's trace, but the invariant is not checked on its "
    "view (it reads the store, or keys the C does not keep)",
    "differs": "the C diverges from the seed's trace before or at its last step (where: after "
    "the colon)",
    "fault": "a call of the trace hits undefined behaviour or a failed assertion in the C (the "
    "finding: after the colon)",
}
"""What a replay of a row's trace against the compiled C can say (the cell starts so)."""

_LEVEL = 3
MAX_MASKS = 3
"""How many places a row's replay masks before it says the C differs."""
_VIEW_INVARIANT_IDS = frozenset(row[0] for row in VIEW_INVARIANTS)


def parse_ops(text: str) -> list[Op]:
    """The operations of a ``shortest trace`` cell: ``register(task='s1'); commit()``, or none
    for the meta as opened."""
    if text == OPENED:
        return []
    return [parse_op(call) for call in (c.strip() for c in text.strip("`").split(";"))
            if call]


def _tables(block: str) -> list[tuple[list[str], list[list[str]], int]]:
    """Each table of ``block`` with a ``shortest trace`` column: its header cells, its rows'
    cells, and the index of its first line in ``block.splitlines()``."""
    lines = block.splitlines()
    found = []
    for index, line in enumerate(lines):
        header = _cells(line)
        if _TRACE_COLUMN in header and index + 1 < len(lines) and lines[index + 1].startswith("|-"):
            rows = []
            for row in lines[index + 2 :]:
                if not row.startswith("| "):
                    break
                rows.append(_cells(row))
            found.append((header, rows, index))
    return found


def _cells(line: str) -> list[str]:
    if not line.startswith("|"):
        return []
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]


def traces_of(block: str) -> list[str]:
    """The ``shortest trace`` cell of every row of ``block``'s tables, in page order."""
    return [row[h.index(_TRACE_COLUMN)] for h, rows, _ in _tables(block) for row in rows]


def with_column(block: str, verdicts: Mapping[str, str]) -> str:
    """``block`` with a ``TDengine's C`` column in each table with a trace column (added, or
    rewritten in place): each row's recorded verdict, ``not replayed`` for a trace not in
    ``verdicts``."""
    lines = block.splitlines()
    for header, rows, start in _tables(block):
        at = header.index(COLUMN) if COLUMN in header else None
        if at is None:
            header = [*header, COLUMN]
            lines[start + 1] = lines[start + 1] + "---|"
        lines[start] = "| " + " | ".join(header) + " |"
        trace_at = header.index(_TRACE_COLUMN)
        for offset, row in enumerate(rows):
            cell = verdicts.get(row[trace_at], NOT_REPLAYED).replace("|", "\\|")
            row = [*row, cell] if at is None else [*row[:at], cell, *row[at + 1 :]]
            lines[start + 2 + offset] = "| " + " | ".join(row) + " |"
    return "\n".join(lines) + ("\n" if block.endswith("\n") else "")


def verdict(trace: str, sut_command: str) -> str:
    """The verdict (``VERDICTS``) of replaying the row's ``trace`` against ``sut_command``.

    A divergence before the last step, at a place other than the row's (the C and the seed
    profile differ elsewhere, a matter of spec/divergences.toml), is masked and the trace
    replayed again, at most ``MAX_MASKS`` times, as ``check --keep-going`` masks a place; the
    verdict names what it masked, so a reader sees what was not compared."""
    ops = parse_ops(trace)
    masks: frozenset[Mask] = frozenset()
    while True:
        seen: Counter[str] = Counter()
        failed = replay(ops, level=_LEVEL, sut=SubprocessAdapter(sut_command),
                        sut_command=sut_command, seed_violations=seen, masks=masks,
                        reference=lambda: ReferenceAdapter(semantics="seed"))
        masked = "" if not masks else " (masked: " + ", ".join(
            f"{m.op} {m.at}" for m in sorted(masks)) + ")"
        if failed is None:
            shown = any(seen[i] for i in _VIEW_INVARIANT_IDS)
            return ("shows it" if shown else "conforms") + masked
        if failed.failure.kind == "fault":
            finding = failed.failure.detail.rpartition("TDengine's compiled code: ")[2]
            return f"fault: {finding}{masked}"
        place = failed.mask
        if place is None or place in masks or len(masks) == MAX_MASKS or (
            len(failed.steps) == len(ops) and len(ops) > 0
        ):
            step = (f"step {len(failed.steps)} ({failed.steps[-1].op!r})" if failed.steps
                    else "start")
            return f"differs: {step} at {failed.failure.at}{masked}"
        masks |= {place}


def record(page: str, sut_command: str) -> dict[str, object]:
    """Every row's verdict, as RECORDED holds them."""
    verdicts = {trace: verdict(trace, sut_command) for trace in traces_of(block_of(page))}
    return {"tdengine": SEED_COMMIT, "level": _LEVEL, "verdicts": verdicts}


def recorded_verdicts(path: Path = RECORDED) -> dict[str, str]:
    """The verdicts recorded in ``path`` (none when it does not exist)."""
    if not path.is_file():
        return {}
    verdicts = json.loads(path.read_text(encoding="utf-8"))["verdicts"]
    return {str(k): str(v) for k, v in verdicts.items()}


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m statemeta.tdengine.defects",
        description="Replay each trace of docs/seed-defects.md against TDengine's compiled "
        "code and record whether it shows the defect (spec/seed-defects-tdengine.json, and "
        "the page's column).",
    )
    parser.add_argument("--src", type=Path, required=True, metavar="TREE")
    parser.add_argument("--out", type=Path, default=None, metavar="DIR")
    parser.add_argument("--page", type=Path, default=PAGE)
    parser.add_argument("--recorded", type=Path, default=RECORDED)
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the recorded verdicts or the page are stale")
    args = parser.parse_args(argv)
    out = f" --out {args.out}" if args.out is not None else ""
    command = f"{sys.executable} -m statemeta tdengine serve --src {args.src}{out}"
    try:
        page = args.page.read_text(encoding="utf-8")
        fresh = record(page, command)
    except (StatemetaError, OSError, ValueError) as error:
        print(f"could not run: {error}", file=sys.stderr)
        return 2
    text = json.dumps(fresh, indent=2, sort_keys=True) + "\n"
    verdicts: dict[str, str] = fresh["verdicts"]  # type: ignore[assignment]
    new_page = replace_block(page, with_column(block_of(page), verdicts))
    return refresh({args.recorded: text, args.page: new_page}, check=args.check)

if __name__ == "__main__":
    sys.exit(main())
