"""The pytest plugin's entry point (pytest11 ``statemeta``): ``pytest --statemeta-sut "CMD"``.

pytest loads every installed plugin in every run, so this module is tiny and imports nothing
of statemeta: it registers the options, each typed by a rule of statemeta.cli_args that is
imported only when the option is given, and adds the conformance test
(statemeta.harness.pytest_plugin) only when ``--statemeta-sut`` is. A run without the options
costs a few option definitions, not the import of the package.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

__all__ = ["LEVELS", "NODE_ID", "SEMANTICS", "pytest_addoption", "pytest_collection_modifyitems"]

LEVELS = (1, 2, 3)
"""The harness's levels (statemeta.harness.operations.LEVELS; a test keeps them equal)."""

SEMANTICS = ("intended", "seed")
"""The reference's semantics (statemeta.semantics.Semantics; a test keeps them equal)."""

NODE_ID = "statemeta::conformance[level {level}]"
"""The conformance test's node id (what ``-v`` and ``-k`` read)."""


def _rule(name: str, *args: Any) -> Callable[[str], Any]:
    """statemeta.cli_args's ``name`` (made with ``args``, for a factory), imported when
    argparse first converts a value with it: only when the option is given."""

    def convert(text: str) -> Any:
        rule = getattr(importlib.import_module("statemeta.cli_args"), name)
        return (rule(*args) if args else rule)(text)

    convert.__name__ = name
    return convert


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("statemeta", "conformance of an implementation to statemeta")
    group.addoption(
        "--statemeta-sut", type=_rule("command_line"), metavar="CMD",
        help="check this implementation's command",
    )
    group.addoption(
        "--statemeta-level", type=_rule("int_in", min(LEVELS), max(LEVELS)), default=2,
        choices=LEVELS, help="default: 2",
    )
    group.addoption(
        "--statemeta-semantics", default=SEMANTICS[0], choices=SEMANTICS,
        help="the reference's semantics (default: %(default)s)",
    )
    group.addoption(
        "--statemeta-timeout", type=_rule("seconds"), default=5.0, help="seconds per response"
    )
    group.addoption(
        "--statemeta-examples", type=_rule("positive_int"),
        help="default: the profile's max_examples",
    )
    group.addoption(
        "--statemeta-steps", type=_rule("positive_int"), help="default: the profile's step count"
    )
    group.addoption(
        "--statemeta-trace-out", type=_rule("output_file"), default=Path("statemeta-trace.json"),
        help="where a failure's trace goes (default: %(default)s)",
    )


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    command = config.getoption("statemeta_sut")
    if not command:
        return
    from statemeta.harness.pytest_plugin import ConformanceItem

    level = config.getoption("statemeta_level")
    items.append(ConformanceItem.from_parent(
        session, name=f"conformance[level {level}]", nodeid=NODE_ID.format(level=level),
        command=command, level=level,
    ))
