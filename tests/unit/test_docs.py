"""The generated parts of docs/ are in step with the tables."""

from __future__ import annotations

from pathlib import Path

import pytest

from statemeta.diagrams import (
    GENERATED,
    lifecycle_mermaid,
    refresh_docs,
    regenerate,
    roles_mermaid,
)
from statemeta.errors import SpecError
from statemeta.lifecycle import LIFECYCLE_ROWS
from statemeta.roles import ROLE_ROWS

DOCS = Path(__file__).resolve().parents[2] / "docs"


def test_committed_docs_are_not_stale() -> None:
    stale = refresh_docs(DOCS, write=False)
    assert stale == [], "run: python -m statemeta spec --write-docs"


def test_one_edge_per_row() -> None:
    assert lifecycle_mermaid().count(" --> ") == len(LIFECYCLE_ROWS) + 1  # + the initial edge
    assert roles_mermaid().count(" --> ") == len(ROLE_ROWS) + 1
    assert "ck --> halt: halt (queued until ready)" in lifecycle_mermaid()
    assert "uninit --> ready: init (two-phase)" in lifecycle_mermaid()


def test_a_stale_section_is_found_and_rewritten(tmp_path: Path) -> None:
    for name in GENERATED:
        (tmp_path / name).write_text((DOCS / name).read_text(encoding="utf-8"), encoding="utf-8")
    path = tmp_path / "lifecycle.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace("ready --> ck", "ready --> pause"),
        encoding="utf-8",
    )
    assert refresh_docs(tmp_path, write=True) == [str(path)]
    assert refresh_docs(tmp_path, write=False) == []


def test_missing_markers_are_an_error() -> None:
    with pytest.raises(SpecError, match="no <!-- generated:lifecycle-diagram -->"):
        regenerate("# no markers\n", GENERATED["lifecycle.md"], "docs/lifecycle.md")
