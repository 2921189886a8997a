"""``python -m statemeta.explore.defects_page REPORT``: docs/seed-defects.md's tables, from the
JSON of ``statemeta explore --semantics seed --json``.

The page lists what the explorer finds when it explores the seed: one row per distinct
violation (invariant, operation), with its shortest trace. Which divergence explains a row is
a reading of the trace, not something the search knows: that cell is written by hand and kept
when the table is regenerated (a row found again keeps it; a new row says it is not yet
attributed). The switches of the seed profile are listed from spec/divergences.toml at the same
time, so the page says what the seed explored was made of. The last column, whether TDengine's
compiled code shows the row, is written from the verdicts recorded in
spec/seed-defects-tdengine.json (statemeta.tdengine.defects replays them), for every row that
has a trace.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from statemeta.cli_args import Parser, input_file
from statemeta.errors import MisuseError
from statemeta.explore.page_block import OPENED, PAGE, block_of, refresh, replace_block
from statemeta.explore.reachability import parse_op, vnode_reachability
from statemeta.semantics import Semantics
from statemeta.tables import Switch
from statemeta.tdengine.defects import recorded_verdicts, with_column

__all__ = ["PAGE", "main", "render"]

_HEADER = ("| # | invariant | operation | steps | shortest trace | divergence | detail "
           "| vnode callers |")
NOT_ATTRIBUTED = "not yet attributed"


def render(report: dict[str, Any], page: str) -> str:
    """``page`` with its generated block rewritten from the explorer's ``report``."""
    if report.get("semantics") != Semantics.SEED.value:
        raise MisuseError(
            f"the report explored the {report.get('semantics')!r} semantics, not the seed's: "
            "run statemeta explore --semantics seed --json"
        )
    block = _block(report, _attributions(block_of(page)))
    return replace_block(page, with_column(block, recorded_verdicts()))

def _block(report: dict[str, Any], attributed: dict[tuple[str, str], str]) -> str:
    switches = ", ".join(
        f"{Semantics.SEED.profile.divergence(s).id} `{s.value}`"
        for s in Switch
        if Semantics.SEED.profile.seed(s)
    )
    bounds = ", ".join(f"{k} {v}" for k, v in report["bounds"].items())
    violations = report["violations"]
    lines = [
        f"Explored: the seed profile (switches: {switches}); bounds: {bounds}; "
        f"{'complete' if report['complete'] else 'INCOMPLETE'}.",
        "",
    ]
    if not violations:
        lines.append("The explorer finds no violation of the invariant catalogue in the seed.")
        return "\n".join(lines) + "\n"
    lines += [_HEADER, "|---|---|---|---|---|---|---|---|"]
    for number, v in enumerate(violations, start=1):
        key = (v["invariant"], v["operation"])
        lines.append(
            f"| {number} | {v['invariant']} | {v['operation']} | {v['length']} | "
            f"{_cell('; '.join(v['ops'])) if v['ops'] else OPENED} | "
            f"{attributed.get(key, NOT_ATTRIBUTED)} | "
            f"{_cell(v['detail'])} | {_vnode_cell(report, v)} |"
        )
    return "\n".join(lines) + "\n"


def _attributions(block: str) -> dict[tuple[str, str], str]:
    """The divergence cell of each row of the block as committed (written by hand)."""
    cells: dict[tuple[str, str], str] = {}
    for line in block.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split(" | ")]
        if len(parts) >= 7 and parts[0].isdigit():
            cells[parts[1], parts[2]] = parts[5]
    return cells


def _vnode_cell(report: dict[str, Any], violation: dict[str, Any]) -> str:
    """Whether the row's trace is a path of the vnode's callers (statemeta.explore.
    reachability): measured by replaying it, each event in an acquire and a release."""
    bounds = report["bounds"]
    level = 3 if bounds["reopens"] or bounds["faults"] else 2
    ops = [parse_op(text) for text in violation["ops"]]
    found = vnode_reachability(ops, violation["invariant"], level=level,
                               semantics=Semantics.SEED)
    return found.cell().replace("|", "\\|")


def _cell(text: str) -> str:
    return "`" + text.replace("|", "\\|").replace("`", "'") + "`"


def main(argv: list[str] | None = None) -> int:
    parser = Parser(
        prog="python -m statemeta.explore.defects_page",
        description="Rewrite docs/seed-defects.md's table from the JSON of "
        "'statemeta explore --semantics seed --json' (- reads it from stdin).",
    )
    parser.add_argument("report", type=input_file, metavar="REPORT")
    parser.add_argument("--page", type=Path, default=PAGE, help="default: docs/seed-defects.md")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 if the page is stale, without writing it")
    args = parser.parse_args(argv)
    text = sys.stdin.read() if args.report == "-" else Path(args.report).read_text()
    try:
        page = args.page.read_text(encoding="utf-8")
        new = render(json.loads(text), page)
    except (MisuseError, OSError, ValueError, KeyError) as error:
        print(f"could not run: {error}", file=sys.stderr)
        return 2
    return refresh({args.page: new}, check=args.check)


if __name__ == "__main__":
    sys.exit(main())
