"""docs/index.md: the tour's library snippet and inspect output are real; every link resolves."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import pytest

from statemeta.cli import main

DOC = Path(__file__).parents[2] / "docs" / "index.md"


def _block(name: str) -> str:
    (body,) = re.findall(
        rf"<!-- tour:{name} -->\n```\w*\n(.*?)```\n<!-- /tour:{name} -->", DOC.read_text(), re.S
    )
    return str(body)


def test_the_tour_snippet_prints_what_the_doc_shows_and_inspect_lists_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(tmp_path)
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(_block("library"), str(DOC), "exec"), {})
    assert printed.getvalue() == _block("library-output")

    command, *expected = _block("inspect-output").splitlines()
    assert command == "$ statemeta inspect tour-meta"
    assert main(["inspect", "tour-meta"]) == 0
    assert capsys.readouterr().out.splitlines() == expected


def test_every_relative_link_resolves() -> None:
    links = re.findall(r"\]\(([^)#]+)\)", DOC.read_text())
    relative = [link for link in links if "://" not in link]
    assert len(relative) >= 15
    assert [link for link in relative if not (DOC.parent / link).exists()] == []


def test_every_page_is_linked() -> None:
    linked = {
        (DOC.parent / link).resolve() for link in re.findall(r"\]\(([^)#]+)\)", DOC.read_text())
    }
    root = DOC.parents[1]
    pages = {*root.glob("docs/*.md"), *root.glob("spec/*.md"), *root.glob("spec/*.toml")}
    assert sorted(str(p) for p in pages - linked - {DOC}) == []
