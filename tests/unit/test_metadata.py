"""The package's metadata is complete, and the README reads the same on a package index."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]


def test_the_licence_is_an_spdx_expression_with_its_file() -> None:
    assert PROJECT["license"] == "MIT"
    assert PROJECT["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Permission is hereby granted" in text
    assert not any(c.startswith("License ::") for c in PROJECT["classifiers"])  # PEP 639


def test_the_index_page_has_authors_classifiers_and_urls() -> None:
    assert PROJECT["authors"]
    assert "Typing :: Typed" in PROJECT["classifiers"]
    assert {"Homepage", "Documentation", "Repository", "Issues"} <= set(PROJECT["urls"])


def test_every_readme_link_is_absolute_and_names_a_file_of_the_checkout() -> None:
    """A package index shows the README without the checkout: a relative link is dead there."""
    base = PROJECT["urls"]["Repository"]
    links = re.findall(r"\]\(([^)#]+)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert len(links) >= 15
    assert [link for link in links if not link.startswith(base + "/")] == []
    paths = [re.sub(rf"^{re.escape(base)}/(blob|tree|raw)/main/", "", link) for link in links]
    assert [p for p in paths if not (ROOT / p).exists()] == []
