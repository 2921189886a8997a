"""docs/seed-defects.md: its table is what exploring the seed finds today, and the generator
keeps the hand-written attributions."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from statemeta.errors import MisuseError
from statemeta.explore import defects_page
from statemeta.explore.bounds import Bounds
from statemeta.explore.coverage import report
from statemeta.explore.defects_page import NOT_ATTRIBUTED, PAGE, render
from statemeta.explore.search import explore

ONE_TASK = Bounds(
    stream_tasks=1, fill_history=False, role_changes=0, start_rounds=0, reopens=0, faults=0,
    clock_advances=0, max_depth=3,
)
EMPTY_PAGE = "# page\n<!-- generated:seed-defects -->\n<!-- end generated:seed-defects -->\n"


def _seed_report(bounds: Bounds, variant: str | None = None) -> dict[str, Any]:
    result = explore(bounds, variant=variant, semantics="seed", all_violations=True)
    return json.loads(json.dumps(report(result)))  # as the command prints it


def test_the_committed_page_lists_what_exploring_the_seed_finds() -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert render(_seed_report(Bounds()), page) == page, (
        "run: statemeta explore --semantics seed --json > seed.json && "
        "python -m statemeta.explore.defects_page seed.json"
    )


def test_rows_are_the_violations_and_a_written_attribution_is_kept() -> None:
    """The seed's own defects on one task: one row each, in the order found."""
    found = _seed_report(ONE_TASK)
    page = render(found, EMPTY_PAGE)
    rows = [line for line in page.splitlines() if line.startswith("| ") and "|---" not in line]
    assert rows[0].startswith("| # | invariant | operation | steps |")
    assert len(found["violations"]) >= 2 and len(rows) == 1 + len(found["violations"])
    for number, (row, violation) in enumerate(zip(rows[1:], found["violations"], strict=True), 1):
        assert row.startswith(
            f"| {number} | {violation['invariant']} | {violation['operation']} | "
            f"{violation['length']} |"
        )
    assert all(NOT_ATTRIBUTED in row for row in rows[1:])
    written = page.replace(f"| {NOT_ATTRIBUTED} |", "| L9 by hand |", 1)
    assert render(found, written) == written  # regenerating keeps what was written
    fewer = dict(found, violations=found["violations"][1:])
    assert "L9 by hand" not in render(fewer, written)  # a row no longer found goes


def test_an_empty_finding_says_so() -> None:
    """At depth 1 the seed's one finding is the empty meta's (its vnode's heartbeat chain
    armed at open, M12): reported once, with no operation; without it the page says so."""
    found = _seed_report(attrs.evolve(ONE_TASK, max_depth=1))
    assert [(v["invariant"], v["ops"]) for v in found["violations"]] == [("heartbeat-chain", [])]
    assert "| (none: the meta as opened) |" in render(found, EMPTY_PAGE)
    page = render(dict(found, violations=[]), EMPTY_PAGE)
    assert "no violation of the invariant catalogue" in page
    assert "L1 `repeat_overwrites_saved`" in page  # the switches the seed explored was made of


def test_only_a_seed_report_into_a_page_with_the_block() -> None:
    intended = json.loads(json.dumps(report(explore(attrs.evolve(ONE_TASK, max_depth=1)))))
    with pytest.raises(MisuseError, match="not the seed's"):
        render(intended, EMPTY_PAGE)
    with pytest.raises(MisuseError, match="no <!-- generated:seed-defects -->"):
        render(_seed_report(attrs.evolve(ONE_TASK, max_depth=1)), "# no block\n")


def test_the_command_checks_then_rewrites(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    report_file, page = tmp_path / "seed.json", tmp_path / "page.md"
    report_file.write_text(json.dumps(_seed_report(ONE_TASK, "paused_count_self_pause")))
    page.write_text(EMPTY_PAGE)
    argv = [str(report_file), "--page", str(page)]
    assert defects_page.main([*argv, "--check"]) == 1 and page.read_text() == EMPTY_PAGE
    assert defects_page.main(argv) == 0 and "rewrote" in capsys.readouterr().out
    assert defects_page.main([*argv, "--check"]) == 0
    assert "| 2 | paused-count | handle_event | 3 |" in page.read_text()  # 1: the empty meta's
    page.write_text("# no block\n")
    assert defects_page.main(argv) == 2
    assert "could not run" in capsys.readouterr().err


def test_the_tdengine_column_is_the_recorded_verdicts_for_every_row() -> None:
    """The page's TDengine's C column is spec/seed-defects-tdengine.json's verdict of each
    row's trace, and every row has one (a new row: run python -m statemeta.tdengine.defects)."""
    from statemeta.explore.page_block import block_of
    from statemeta.tdengine.defects import VERDICTS, recorded_verdicts, traces_of, with_column

    page = PAGE.read_text(encoding="utf-8")
    recorded = recorded_verdicts()
    assert with_column(block_of(page), recorded) == block_of(page)
    traces = traces_of(block_of(page))
    assert traces and set(traces) == set(recorded), "run: python -m statemeta.tdengine.defects"
    assert all(v.split(":")[0].split(" (")[0] in VERDICTS for v in recorded.values())


def test_the_column_is_generic_over_tables_and_rows() -> None:
    """Every table with a shortest-trace column gains the column, whatever its other columns;
    rewriting it replaces it in place; a trace with no verdict says so."""
    from statemeta.tdengine.defects import COLUMN, NOT_REPLAYED, traces_of, with_column

    block = (
        "| # | shortest trace | note |\n|---|---|---|\n| 1 | `commit()` | a \\| b |\n"
        "| 2 | `clear()` | c |\n\ntext\n\n| id | kind |\n|---|---|\n| u1 | ub |\n"
        "| x | shortest trace |\n|---|---|\n| u2 | `commit(); clear()` |\n"
    )
    assert traces_of(block) == ["`commit()`", "`clear()`", "`commit(); clear()`"]
    once = with_column(block, {"`commit()`": "shows it", "`commit(); clear()`": "conforms"})
    assert f"| # | shortest trace | note | {COLUMN} |" in once
    assert "| 1 | `commit()` | a \\| b | shows it |" in once
    assert f"| 2 | `clear()` | c | {NOT_REPLAYED} |" in once
    assert "| id | kind |\n|---|---|\n| u1 | ub |" in once  # no trace column: untouched
    assert "| u2 | `commit(); clear()` | conforms |" in once
    again = with_column(once, {"`clear()`": "differs: start at result"})
    assert "| 2 | `clear()` | c | differs: start at result |" in again
    assert again.count(COLUMN) == 2 and with_column(again, {"`clear()`": "differs: start at "
                                                              "result"}) == again
