"""``python -m statemeta.explore.defects_page REPORT``: docs/seed-defects.md's tables, from the
JSON of ``statemeta explore --semantics seed --json``.

The page lists what the explorer finds when it explores the seed: one row per distinct
violation (invariant, operation), with its shortest trace. Which divergence explains a row is
a reading of the trace, not something the search knows: that cell is written by hand and kept
when the table is regenerated (a row found again keeps it; a new row says it is not yet
attributed). The switches of the seed profile are listed from spec/divergences.toml at the same
time, so the page says what the seed explored was made of.
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

from statemeta.cli_args import Parser, input_file
from statemeta.errors import MisuseError
from statemeta.semantics import Semantics
from statemeta.tables import Switch

__all__ = ["PAGE", "main", "render"]

PAGE = Path(__file__).resolve().parents[2] / "docs" / "seed-defects.md"
_BEGIN = "<!-- generated:seed-defects -->"
_END = "<!-- end generated:seed-defects -->"
_BLOCK = re.compile(re.escape(_BEGIN) + r"\n(.*?)" + re.escape(_END), re.S)
_HEADER = "| # | invariant | operation | steps | shortest trace | divergence | detail |"
NOT_ATTRIBUTED = "not yet attributed"
OPENED = "(none: the meta as opened)"
"""The trace cell of a violation the empty meta shows already."""


def render(report: dict[str, Any], page: str) -> str:
    """``page`` with its generated block rewritten from the explorer's ``report``."""
    if report.get("semantics") != Semantics.SEED.value:
        raise MisuseError(
            f"the report explored the {report.get('semantics')!r} semantics, not the seed's: "
            "run statemeta explore --semantics seed --json"
        )
    found = _BLOCK.search(page)
    if found is None:
        raise MisuseError(f"the page has no {_BEGIN} ... {_END} block")
    block = _block(report, _attributions(found.group(1)))
    return page[: found.start(1)] + block + page[found.end(1) :]


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
    lines += [_HEADER, "|---|---|---|---|---|---|---|"]
    for number, v in enumerate(violations, start=1):
        key = (v["invariant"], v["operation"])
        lines.append(
            f"| {number} | {v['invariant']} | {v['operation']} | {v['length']} | "
            f"{_cell('; '.join(v['ops'])) if v['ops'] else OPENED} | "
            f"{attributed.get(key, NOT_ATTRIBUTED)} | "
            f"{_cell(v['detail'])} |"
        )
    return "\n".join(lines) + "\n"


def _attributions(block: str) -> dict[tuple[str, str], str]:
    """The divergence cell of each row of the block as committed (written by hand)."""
    cells: dict[tuple[str, str], str] = {}
    for line in block.splitlines():
        parts = [p.strip() for p in line.strip().strip("|").split(" | ")]
        if len(parts) == 7 and parts[0].isdigit():
            cells[parts[1], parts[2]] = parts[5]
    return cells


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
    if new == page:
        print(f"up to date: {args.page}")
        return 0
    if args.check:
        print(f"stale: {args.page} (run without --check to rewrite it)")
        return 1
    args.page.write_text(new, encoding="utf-8")
    print(f"rewrote: {args.page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
